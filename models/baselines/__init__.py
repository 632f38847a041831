"""Baselines the paper methods compare against, each a room of its own (mlp, pc, QAT)."""
