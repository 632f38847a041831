"""Float predictive coding (Strict PC), DiffPC's float baseline: card in ``card.py``."""
