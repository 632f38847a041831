"""DiffPC (difference predictive coding with ternary spikes): card in ``card.py``."""
