"""KLAS scoring and selection (KL probes, stitch score, FLOPs buckets) and the baselines it beats.

Equations (KLAS, ICLR 2026, the method section, numbered in the order it states them):
- ProbeNet (1): a linear probe after every block of a frozen anchor; the last block uses
  the anchor's own head. Reading chosen: probe = Linear(LayerNorm(CLS token)), the same
  read-out as the ViT head (whose LayerNorm affine folds into its linear layer), with a
  LayerNorm without learned affine, so the probe stays linear. The first version pooled
  the mean token; against the CLS-token head that made Theta(P^g_{n-1}, P^g_n) a read-out
  mismatch rather than a change of block. All probes of an anchor train in one run, each
  step updating one randomly drawn probe.
- Block similarity (2): Theta(P, Q) = mean over D_v of KL(P(x) || Q(x)), P, Q probe softmaxes.
- Anchor selection (3): prefer anchor pairs with the smallest last-block KL. Reading chosen
  for k anchors ordered by FLOPs: the chain from the cheapest to the costliest anchor whose
  largest edge KL is smallest (ties: fewer edges). For three anchors this is "Ti->B when
  KL(Ti,B) < max(KL(Ti,S), KL(S,B)), else Ti->S and S->B", matching both paper cases.
- Stitch score (4): Gamma(i, j) = Theta(P^f_i, P^g_j) / Theta(P^g_j, P^g_{j+1}); lower is better.
- Selection (5): B buckets over the FLOPs interval of the family; in each, keep every stitch
  with Gamma <= (1 + tau) * min Gamma (the relative reading of the digest) and the argmin.
Baselines: linear CKA (Kornblith et al. 2019, arXiv:1905.00414) between the token
activations A^f_i and A^g_j, and SN-Net's heuristic (nearest anchors, paired window-2 stitching).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from sim.errors import ModelError


class ProbeSet(nn.Module):
    """One linear probe per block 1..n-1 of an anchor of width ``dim`` (block n uses the head)."""

    def __init__(self, dim: int, depth: int, n_classes: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)
        self.probes = nn.ModuleList(nn.Linear(dim, n_classes) for _ in range(depth - 1))

    def forward(self, k: int, cls: torch.Tensor) -> torch.Tensor:
        """Logits (B, C) of probe k (1-based block index) from the CLS token (B, D) of block k."""
        return self.probes[k - 1](self.norm(cls))


def _check_logp(name: str, logp: torch.Tensor) -> None:
    if logp.dim() < 2 or not torch.isfinite(logp).all():
        raise ModelError(f"{name}: expected finite log-probabilities of shape (..., N, C), "
                         f"got shape {tuple(logp.shape)}")
    err = float(torch.logsumexp(logp.double(), dim=-1).abs().max())
    if err > 1e-3:
        raise ModelError(f"{name}: rows are not log-distributions (|logsumexp| up to {err:.3g}, "
                         "expected 0); pass log_softmax outputs")


def mean_kl(logp: torch.Tensor, logq: torch.Tensor) -> float:
    """Theta(P, Q): mean over samples of KL(P || Q); ``logp``, ``logq`` are (N, C) log-softmaxes."""
    if logp.shape != logq.shape or logp.dim() != 2:
        raise ModelError(f"mean_kl: logp has shape {tuple(logp.shape)} and logq "
                         f"{tuple(logq.shape)}; expected the same (N, C)")
    _check_logp("mean_kl: logp", logp)
    _check_logp("mean_kl: logq", logq)
    return float((logp.exp() * (logp - logq)).sum(-1).mean())


def theta_matrix(logp_f: torch.Tensor, logp_g: torch.Tensor) -> np.ndarray:
    """Theta[a, b] = mean KL(P^f_{a+1} || P^g_{b+1}) for probe outputs (n_f, N, C), (n_g, N, C)."""
    if logp_f.dim() != 3 or logp_f.shape[1:] != logp_g.shape[1:] or logp_g.dim() != 3:
        raise ModelError(f"theta_matrix: probe outputs of shapes {tuple(logp_f.shape)} and "
                         f"{tuple(logp_g.shape)}; expected (n_f, N, C) and (n_g, N, C)")
    _check_logp("theta_matrix: logp_f", logp_f)
    _check_logp("theta_matrix: logp_g", logp_g)
    lf, lg = logp_f.double(), logp_g.double()
    pf = lf.exp()
    self_term = (pf * lf).sum(-1).mean(-1)                         # (n_f,)  E[sum p log p]
    cross = torch.einsum("anc,bnc->ab", pf, lg) / lf.shape[1]      # (n_f, n_g) E[sum p log q]
    return (self_term[:, None] - cross).clamp_min(0.0).cpu().numpy()


def stitch_scores(theta_fg: np.ndarray, theta_gg: np.ndarray) -> np.ndarray:
    """Gamma[i-1, j-1] = Theta(P^f_i, P^g_j) / Theta(P^g_j, P^g_{j+1}) for j = 1..n_g-1.

    ``theta_fg`` is (n_f, n_g), ``theta_gg`` is g against itself (n_g, n_g).
    """
    n_g = theta_gg.shape[0]
    if theta_fg.shape[1] != n_g or theta_gg.shape != (n_g, n_g):
        raise ModelError(f"stitch_scores: theta_fg {theta_fg.shape}, theta_gg {theta_gg.shape}; "
                         "expected (n_f, n_g) and (n_g, n_g)")
    sigma = np.array([theta_gg[j, j + 1] for j in range(n_g - 1)])  # capacity of block j+1
    return theta_fg[:, : n_g - 1] / np.maximum(sigma, 1e-12)[None, :]


def linear_cka(x: torch.Tensor, y: torch.Tensor) -> float:
    """Linear CKA between activations (rows = samples x tokens), Kornblith et al. eq. (5)."""
    x = x.reshape(-1, x.shape[-1]).double()
    y = y.reshape(-1, y.shape[-1]).double()
    if x.shape[0] != y.shape[0]:
        raise ModelError(f"linear_cka: {x.shape[0]} rows against {y.shape[0]}; expected equal")
    x, y = x - x.mean(0), y - y.mean(0)
    num = (y.T @ x).square().sum()
    den = (x.T @ x).square().sum().sqrt() * (y.T @ y).square().sum().sqrt()
    return float(num / den)


@dataclass(frozen=True)
class Stitch:
    """One candidate: anchors (front, back) by index in the family, blocks i of f, skip j of g."""

    front: int
    back: int
    i: int
    j: int

    @property
    def name(self) -> str:
        return f"s{self.front}{self.back}-{self.i}-{self.j}"


def all_stitches(depths: list[int], pairs) -> list[Stitch]:
    """Every (i, j) with 1 <= i <= n_f and 1 <= j <= n_g - 1 for each (front, back) pair."""
    return [Stitch(a, b, i, j) for a, b in pairs
            for i in range(1, depths[a] + 1) for j in range(1, depths[b])]


def select_anchor_pairs(last_kl: dict[tuple[int, int], float], k: int) -> list[tuple[int, int]]:
    """KLAS anchor selection: the chain 0 -> ... -> k-1 minimising its largest last-block KL."""
    best = None
    for r in range(k - 1):
        for mid in itertools.combinations(range(1, k - 1), r):
            chain = (0, *mid, k - 1)
            edges = list(zip(chain[:-1], chain[1:], strict=True))
            key = (max(last_kl[e] for e in edges), len(edges))
            if best is None or key < best[0]:
                best = (key, edges)
    return best[1]


def bucket_edges(flops_lo: float, flops_hi: float, n_buckets: int) -> np.ndarray:
    if not flops_hi > flops_lo or n_buckets < 1:
        raise ModelError(f"bucket_edges: interval [{flops_lo}, {flops_hi}] with {n_buckets} "
                         "buckets; expected lo < hi and >= 1 bucket")
    return np.linspace(flops_lo, flops_hi, n_buckets + 1)


def bucket_of(flops: float, edges: np.ndarray) -> int:
    """Index of the bucket holding ``flops`` (the top edge belongs to the last bucket).

    -1 when ``flops`` lies outside the edges.
    """
    if flops < edges[0] or flops > edges[-1]:
        return -1
    return min(int(np.searchsorted(edges, flops, side="right")) - 1, len(edges) - 2)


def select_klas(stitches: list[Stitch], gamma: dict[Stitch, float], flops: dict[Stitch, float],
                edges: np.ndarray, tau: float = 0.05) -> list[Stitch]:
    """Per FLOPs bucket keep the stitches with Gamma <= (1 + tau) * the bucket's minimum."""
    if tau < 0:
        raise ModelError(f"select_klas: tau = {tau}; expected >= 0")
    chosen = []
    for b in range(len(edges) - 1):
        members = [s for s in stitches if bucket_of(flops[s], edges) == b]
        if members:
            low = min(gamma[s] for s in members)
            chosen += [s for s in members if gamma[s] <= (1 + tau) * low]
    return chosen


def snnet_stitches(depths: list[int]) -> list[Stitch]:
    """SN-Net's heuristic: nearest anchors (k, k+1), paired stitching with a window of 2.

    SN-Net's ``paired_stitching`` yields 0-based (a, b) with |a - b| <= 1: f runs blocks
    0..a, g resumes at block b; here i = a + 1 and j = b, so i - 2 <= j <= i. Its b = 0
    cases (whose LS target in SN-Net's code wraps to g's last block) are left out, as j >= 1.
    """
    if len(set(depths)) != 1:
        raise ModelError(f"snnet_stitches: depths {depths}; paired stitching needs equal depths "
                         "(SN-Net's unpaired mapping is not implemented)")
    n = depths[0]
    return [Stitch(a, a + 1, i, j) for a in range(len(depths) - 1)
            for i in range(1, n + 1) for j in range(max(1, i - 2), min(i, n - 1) + 1)]


def frontier_auc(points: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Normalised area under the accuracy-FLOPs frontier on [lo, hi].

    The frontier at budget F is the best accuracy among points with FLOPs <= F (a step
    function); below the cheapest point it is 0. Returns the mean of that function on [lo, hi].
    """
    pts = sorted((f, a) for f, a in points if f <= hi)
    if not pts:
        return 0.0
    area, best, prev = 0.0, 0.0, lo
    for f, a in pts:
        f = max(f, lo)
        area += best * (f - prev)
        best, prev = max(best, a), f
    area += best * (hi - prev)
    return area / (hi - lo)
