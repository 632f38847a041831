"""Filter heads (arXiv:2510.26784) in a tiny transformer: card in ``card.py``."""
