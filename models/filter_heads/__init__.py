"""Filter heads (arXiv:2510.26784) in a tiny transformer trained from scratch: card in ``card.py``."""
