"""COLA's semantic calibration (the paper's Sec. 3.2): split-conformal prediction sets and
the weights and soft labels drawn from them.

``C(x_t) = {y : 1 - p(y|x_t) <= q}``, ``q`` the finite-sample ``ceil((n+1)(1-alpha_t))/n``
quantile of the calibration scores ``1 - p(y_i|x_i)``; ``w_sem = 1/|C|`` (0 for an empty
set). ``model.py`` calibrates each epoch with these and trains on them.
"""
from __future__ import annotations

import math

import torch

from sim.errors import ModelError


def conformal_threshold(scores: torch.Tensor, alpha: float) -> float:
    """The split-conformal threshold: the ``ceil((n+1)(1-alpha))``-th smallest score.

    ``inf`` when that rank exceeds ``n`` (too few calibration scores for ``alpha``): every
    label is then in every set, which keeps the coverage guarantee.
    """
    n = int(scores.numel())
    if n == 0 or not 0.0 < alpha < 1.0:
        raise ModelError(f"conformal_threshold: n = {n} scores, alpha = {alpha}; need n >= 1 "
                         "and 0 < alpha < 1")
    k = math.ceil((n + 1) * (1.0 - alpha))
    if k > n:
        return math.inf
    return float(torch.sort(scores.flatten()).values[k - 1])


def prediction_sets(probs: torch.Tensor, qhat: float) -> torch.Tensor:
    """``C(x) = {y : 1 - p(y|x) <= qhat}`` as a boolean (N, C) mask."""
    return (1.0 - probs) <= qhat


def set_weights(sets: torch.Tensor) -> torch.Tensor:
    """``w_sem = 1/|C(x)|``, 0 for an empty set."""
    size = sets.sum(1).to(torch.float32)
    return torch.where(size > 0, 1.0 / size.clamp(min=1.0), torch.zeros_like(size))


def soft_labels(probs: torch.Tensor, sets: torch.Tensor) -> torch.Tensor:
    """Probabilities renormalised over the prediction set (zeros for an empty set)."""
    masked = probs * sets
    return masked / masked.sum(1, keepdim=True).clamp(min=1e-12)
