"""QAT baseline of BEP: the same binary networks trained with float latent weights (model.py)."""
