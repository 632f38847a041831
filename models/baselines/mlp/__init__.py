"""Backprop MLP baseline: card in ``card.py``, the model in ``model.py``."""
