"""Vogels-Abbott CUBA, the neuromorphic engine's reference network: card in ``card.py``."""
