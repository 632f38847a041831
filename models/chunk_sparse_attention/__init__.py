"""Chunk-based hierarchical sparse attention (HSA, arXiv:2510.17196): card in ``card.py``."""
