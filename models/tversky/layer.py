"""The differentiable Tversky similarity and the Tversky projection layer (a drop-in for nn.Linear).

Doumbouya, Jurafsky & Manning, "Tversky Neural Networks: Psychologically Plausible Deep
Learning with Differentiable Tversky Similarity", ICLR 2026, arXiv:2506.11035.

Objects are vectors that are also feature sets: with a learned feature bank
``F = {f_k}`` (K x d), ``a`` has feature k iff ``a . f_k > 0`` (threshold 0). With
``s = a F^T`` (N, K):

- membership ``b_k(a) = 1[s_k > 0]``; masked salience ``m_k(a) = s_k * b_k(a)`` (= ReLU(s_k)
  at threshold 0; the gradient is the mask, no smoothing, as in the official code);
- common features ``f(A n B)``: ``product`` (default) = sum_k m_k(a) m_k(b); the other Psi
  (``min``, ``max``, ``mean``, ``gmean``, ``softmin``) combine the two set-level sums
  ``I_a = sum_k m_k(a) b_k(b)`` and ``I_b = sum_k b_k(a) m_k(b)``. This set-level reading
  follows the official library (mdoumbouya/tversky, ``differentiable_tversky_v2.py``) where
  the paper's notation suggests a per-feature Psi: we chose the code, for parity;
- distinctive features ``f(A - B)``: ``ignorematch`` (default) = sum_k m_k(a) (1 - b_k(b));
  ``substractmatch`` adds ``(I_a - I_b) 1[I_a > I_b]`` (official code);
- contrast model ``S = theta f(A n B) - alpha f(A - B) - beta f(B - A)``; ratio model
  ``S = f(A n B) / (f(A n B) + alpha f(A - B) + beta f(B - A) + 1)`` (the code's +1).

A Tversky projection ``y_i = S(x, pi_i)`` over P learned prototypes replaces ``Linear(d, P)``.
Initialisation follows the official ``TverskyProjection``: bank and prototypes
``U(0, 1)``, theta = 1, alpha = beta = 0.5 (all learnable), no input normalisation.
Everything is a handful of dense matrix products (the batched form of the digest), so
TorchDevice counts it op by op and it exports to ONNX as MatMul/Relu/Greater/Cast.
"""
from __future__ import annotations

import torch
from torch import nn

from models.tversky.card import DIFFERENCES, INTERSECTIONS, SIMILARITIES
from sim.errors import ModelError

__all__ = ["DIFFERENCES", "INTERSECTIONS", "SIMILARITIES", "TverskyProjection", "difference",
           "intersection", "tversky_similarity"]


def _project(x: torch.Tensor, bank: torch.Tensor):
    """Masked salience and membership of rows of ``x`` on the bank: two (N, K) tensors."""
    s = x @ bank.T                          # (N, K)
    member = (s > 0).to(s.dtype)            # b_k: 1 where the object has feature k
    return s * member, member               # m_k = s_k b_k: gradient flows where b_k = 1


def intersection(ma, ba, mb, bb, reduction: str = "product") -> torch.Tensor:
    """f(A n B) for every row pair: (N, K) x (M, K) -> (N, M)."""
    if reduction == "product":
        return ma @ mb.T
    ia, ib = ma @ bb.T, ba @ mb.T           # I_a, I_b: each side's salience on shared features
    if reduction == "min":
        return torch.minimum(ia, ib)
    if reduction == "max":
        return torch.maximum(ia, ib)
    if reduction == "mean":
        return 0.5 * (ia + ib)
    if reduction == "gmean":  # = the code's exp(mean log) for I >= 0; 0 when a side shares nothing
        # sqrt has an infinite slope at 0, and inf * 0 = NaN reached every weight after one
        # step wherever a pair shares no feature; the inner where keeps sqrt off 0 (same
        # values), so such pairs pass no gradient instead
        p = ia * ib
        shared = p > 0
        return torch.where(shared, torch.sqrt(torch.where(shared, p, 1.0)), 0.0)
    if reduction == "softmin":
        return -torch.logaddexp(-ia, -ib)
    raise ModelError(f"intersection reduction {reduction!r}: must be one of {INTERSECTIONS}")


def difference(ma, ba, mb, bb, reduction: str = "ignorematch") -> torch.Tensor:
    """f(A - B) for every row pair: (N, K) x (M, K) -> (N, M)."""
    out = ma @ (1.0 - bb).T                 # salience of a's features that b lacks
    if reduction == "ignorematch":
        return out
    if reduction == "substractmatch":       # plus the excess of a over b on shared features
        ia, ib = ma @ bb.T, ba @ mb.T
        return out + (ia - ib) * (ia > ib).to(ia.dtype)
    raise ModelError(f"difference reduction {reduction!r}: must be one of {DIFFERENCES}")


def tversky_similarity(x, y, bank, theta, alpha, beta, *, similarity="contrast",
                       intersection_reduction="product", difference_reduction="ignorematch"):
    """S(x_n, y_m) for all pairs: x (N, d), y (M, d), bank (K, d) -> (N, M)."""
    mx, bx = _project(x, bank)              # (N, K)
    my, by = _project(y, bank)              # (M, K)
    common = intersection(mx, bx, my, by, intersection_reduction)            # (N, M)
    x_only = difference(mx, bx, my, by, difference_reduction)                # (N, M)
    y_only = difference(my, by, mx, bx, difference_reduction).T              # (N, M)
    if similarity == "contrast":
        return theta * common - alpha * x_only - beta * y_only
    if similarity == "ratio":
        return common / (common + alpha * x_only + beta * y_only + 1.0)
    raise ModelError(f"similarity {similarity!r}: must be one of {SIMILARITIES}")


class TverskyProjection(nn.Module):
    """``y = [S(x, pi_1), ..., S(x, pi_P)]``: a drop-in replacement for ``nn.Linear``.

    Called like ``nn.Linear(in_features, out_features)``: input ``(*, in_features)``,
    output ``(*, out_features)``. There is no bias (the paper's layer has none).

    Parameters
    ----------
    in_features : int
        d, the input width (and the width of prototypes and bank features).
    out_features : int
        P, the number of prototypes (one output each).
    bank_size : int
        K, features in the bank. Ignored when ``feature_bank`` is given.
    feature_bank : nn.Parameter (K, d), optional
        Share one bank between layers (the paper's parameter saving).
    prototypes : nn.Parameter (P, d) or nn.Module, optional
        Tie the prototypes to another tensor (e.g. token embeddings for an LM head), or a
        module whose ``forward()`` returns them (data-domain prototypes, see ``vision.py``).
    similarity, intersection_reduction, difference_reduction : str
        ``contrast``/``ratio``; one of ``INTERSECTIONS``; one of ``DIFFERENCES``.
    init_scale : float
        Bank and prototypes start ``U(0, init_scale)``; 1 is the official initialisation.
        Products of two projections grow like ``K d^2``, so wide inputs want ~ ``1/sqrt(d)``.
    seed : int, optional
        Seed of the uniform initialisation (else torch's global generator).
    device, dtype : as for ``nn.Linear``.
    """

    def __init__(self, in_features: int, out_features: int, bank_size: int = 16, *,
                 feature_bank: nn.Parameter | None = None,
                 prototypes: nn.Parameter | nn.Module | None = None,
                 similarity: str = "contrast", intersection_reduction: str = "product",
                 difference_reduction: str = "ignorematch", init_scale: float = 1.0,
                 seed: int | None = None, device=None, dtype=None):
        super().__init__()
        for name, val in (("in_features", in_features), ("out_features", out_features),
                          ("bank_size", bank_size)):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ModelError(f"TverskyProjection: {name} = {val!r}: must be an integer >= 1")
        for name, val, allowed in (
                ("similarity", similarity, SIMILARITIES),
                ("intersection_reduction", intersection_reduction, INTERSECTIONS),
                ("difference_reduction", difference_reduction, DIFFERENCES)):
            if val not in allowed:
                raise ModelError(f"TverskyProjection: {name} = {val!r}: must be one of {allowed}")
        if not init_scale > 0:
            raise ModelError(f"TverskyProjection: init_scale = {init_scale!r}: must be > 0")
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        def uniform(rows):  # drawn on the CPU generator, then moved: same values everywhere
            return nn.Parameter((init_scale * torch.rand(rows, in_features, generator=gen))
                                .to(device=device, dtype=dtype))
        if feature_bank is None:
            feature_bank = uniform(bank_size)
        if prototypes is None:
            prototypes = uniform(out_features)
        self.feature_bank, self.prototypes = feature_bank, prototypes
        with torch.no_grad():
            protos = self._prototypes()
        for name, t, want in (("feature_bank", feature_bank, (None, in_features)),
                              ("prototypes", protos, (out_features, in_features))):
            if t.dim() != 2 or t.shape[1] != want[1] or (want[0] and t.shape[0] != want[0]):
                shape = f"({want[0] or 'K'}, {want[1]})"
                raise ModelError(f"TverskyProjection: {name} has shape {tuple(t.shape)}, "
                                 f"expected {shape}")
        self.in_features, self.out_features = in_features, out_features
        self.theta = nn.Parameter(torch.tensor(1.0, device=device, dtype=dtype))
        self.alpha = nn.Parameter(torch.tensor(0.5, device=device, dtype=dtype))
        self.beta = nn.Parameter(torch.tensor(0.5, device=device, dtype=dtype))
        self.similarity = similarity
        self.intersection_reduction = intersection_reduction
        self.difference_reduction = difference_reduction

    def _prototypes(self) -> torch.Tensor:
        p = self.prototypes
        return p() if isinstance(p, nn.Module) else p  # (P, d)

    @property
    def bank_size(self) -> int:
        return self.feature_bank.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.jit.is_tracing() and (x.dim() < 1 or x.shape[-1] != self.in_features):
            raise ModelError(f"TverskyProjection.forward: x has shape {tuple(x.shape)}, "
                             f"expected (*, {self.in_features})")
        flat = x if x.dim() == 2 else x.reshape(-1, self.in_features)  # 2-D: no reshape, so
        y = tversky_similarity(flat, self._prototypes(),              # ONNX keeps N dynamic
                               self.feature_bank, self.theta, self.alpha, self.beta,
                               similarity=self.similarity,
                               intersection_reduction=self.intersection_reduction,
                               difference_reduction=self.difference_reduction)  # (N, P)
        return y if x.dim() == 2 else y.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bank_size={self.bank_size}, similarity={self.similarity}, "
                f"intersection={self.intersection_reduction}, "
                f"difference={self.difference_reduction}")
