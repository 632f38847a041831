"""Intrinsic-dimension estimators in torch: exact chunked kNN, MLE, TwoNN, FisherS, local maps.

Written in torch so that every step runs (and is counted) on a ``TorchDevice``; the callers
open the ``dev.count`` scopes. The readings follow the estimators the paper runs through
``scikit-dimension`` (Rao et al., "Measuring the intrinsic dimension of Earth
representations", ICLR 2026, arXiv:2511.02101, method: MLE, TwoNN, FisherS with the package's
defaults), so that they agree with that package on the same data:

* MLE (Levina & Bickel 2005; global combination of MacKay & Ghahramani): with the
  sorted distances ``T_1 <= ... <= T_k`` to the ``k`` nearest neighbours (self excluded),
  ``m(x) = (k - 1) / sum_{j=1..k} ln(T_k / T_j)``; the global ID is ``1 / mean_x(1/m(x))``.
  The pointwise ``m(x)`` at ``k = 100`` is the paper's local ID map.
* TwoNN (Facco et al. 2017, Sci. Rep. 7:12140): ``mu_i = r_2 / r_1``; sort, keep the
  smallest ``int(N (1 - 0.1))``, ``F_i = i / N``; the ID is the slope through the origin of
  ``-ln(1 - F_i)`` against ``ln mu_(i)``.
* FisherS (Albergante et al. 2019, Entropy 21:1173): centre, keep the
  principal components with ``lambda / lambda_max > 1 / 10``, whiten each to unit variance,
  project every row on the unit sphere; ``p_alpha(i)`` = fraction of the other ``N - 1`` points
  with ``<x_i, x_j> >= alpha <x_i, x_i>`` for ``alpha = 0.60, 0.62, ..., 0.98``;
  ``n(alpha) = W(-w / (2 pi pbar^2 alpha^2 (1 - alpha^2))) / (-w)``, ``w = ln(1 - alpha^2)``,
  ``W`` the principal branch of Lambert's W; the estimate is ``n`` at the grid alpha nearest
  ``0.9 max{alpha : pbar_alpha > 0}``. The fraction is over ``N - 1`` points (self
  excluded), as the package computes it, not over ``N``.

Where torch has no op for a step, the step is made of ops it has: Lambert's W is Halley's
iteration (Corless et al. 1996, Adv. Comput. Math. 5:329) on 20 scalars. The one exception
is the symmetric eigen-decomposition of the ``D x D`` covariance in FisherS
(``torch.linalg.eigh``, which the counter has no formula for): :func:`fisher_s` runs it
between two counted blocks and adds ``9 D^3`` fp64 operations (symmetric QR with
eigenvectors; Golub & Van Loan, Matrix Computations) to the ledger itself.
"""
from __future__ import annotations

import contextlib

import numpy as np
import torch

from sim.errors import ModelError

ALPHAS = np.arange(0.6, 1.0, 0.02)
"""FisherS's margin grid: ``np.arange(0.6, 1, 0.02)`` exactly as scikit-dimension builds it
(20 values, 0.60 ... 0.98, with the same floating-point rounding)."""


def _check_points(x: torch.Tensor, need: int, what: str) -> None:
    if x.dim() != 2 or x.shape[0] < need:
        raise ModelError(f"{what}: points have shape {tuple(x.shape)}; expected (N, D) with "
                         f"N >= {need}")


def knn(x: torch.Tensor, k: int, chunk: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact ``k`` nearest neighbours of every row of ``x`` among the other rows.

    Streams row blocks of ``chunk`` x N squared distances ``|a|^2 + |b|^2 - 2 a.b`` (one GEMM
    per block, 2 chunk N D FLOPs), so memory stays at ``chunk * N`` elements.

    Parameters
    ----------
    x : (N, D) tensor (fp64 for agreement with scikit-learn to 1e-6)
    k : neighbours, 1 <= k < N
    chunk : rows per block

    Returns
    -------
    dists : (N, k) Euclidean distances, ascending along each row
    idx : (N, k) int64 indices of the neighbours
    """
    _check_points(x, 2, "knn")
    n = x.shape[0]
    if not 1 <= k < n:
        raise ModelError(f"knn: k = {k} with N = {n} points; need 1 <= k < N")
    sq = (x * x).sum(1)                                          # (N,)
    dists, idx = [], []
    for s in range(0, n, chunk):
        e = min(s + chunk, n)
        d2 = sq[s:e, None] + sq[None, :] - 2.0 * (x[s:e] @ x.T)   # (c, N)
        d2 = d2.clamp_min(0.0)
        d2[:, s:e].diagonal().fill_(float("inf"))                 # a point is not its neighbour
        v, i = torch.topk(d2, k, dim=1, largest=False)            # ascending (sorted=True)
        # |a|^2 + |b|^2 - 2 a.b leaves rounding of order eps (|a|^2 + |b|^2) where a = b:
        # below 1000 eps of that scale a distance is a duplicate's zero
        tol = 1e3 * torch.finfo(x.dtype).eps * (sq[s:e, None] + sq[i])
        v = torch.where(v <= tol, torch.zeros_like(v), v)
        dists.append(v.sqrt())
        idx.append(i)
    return torch.cat(dists), torch.cat(idx)


class DuplicatePoints(ModelError):
    """Some points coincide with another (nearest-neighbour distance 0): the MLE and TwoNN
    divide by that distance. ``count`` is how many; the card names the config behind it."""

    def __init__(self, message: str, count: int):
        super().__init__(message)
        self.count = count


def _no_duplicates(r1: torch.Tensor, what: str) -> None:
    zero = int((r1 <= 0).sum())
    if zero:
        raise DuplicatePoints(f"{what}: {zero} points have distance 0 to their nearest neighbour "
                         "(duplicate points); drop duplicates before estimating the ID", zero)


def mle_pointwise(dists: torch.Tensor) -> torch.Tensor:
    """Levina-Bickel ``m(x) = (k - 1) / sum_j ln(T_k / T_j)`` per row of sorted kNN
    distances ``dists`` (N, k); the local ID map at ``k = 100``."""
    if dists.dim() != 2 or dists.shape[1] < 2:
        raise ModelError(f"mle_pointwise: distances have shape {tuple(dists.shape)}; expected "
                         "(N, k) with k >= 2")
    _no_duplicates(dists[:, 0], "mle_pointwise")
    k = dists.shape[1]
    return (k - 1) / torch.log(dists[:, -1:] / dists).sum(1)     # (N,)


def mle(dists: torch.Tensor) -> torch.Tensor:
    """Global MLE ID: the harmonic mean of the pointwise estimates (``comb="mle"``)."""
    return 1.0 / (1.0 / mle_pointwise(dists)).mean()


def twonn(dists: torch.Tensor, discard_fraction: float = 0.1) -> torch.Tensor:
    """TwoNN ID from the two nearest-neighbour distances (columns 0 and 1 of ``dists``)."""
    if dists.dim() != 2 or dists.shape[1] < 2:
        raise ModelError(f"twonn: distances have shape {tuple(dists.shape)}; expected (N, k) "
                         "with k >= 2")
    if not 0.0 <= discard_fraction < 1.0:
        raise ModelError(f"twonn: discard_fraction = {discard_fraction}; expected 0 <= f < 1")
    _no_duplicates(dists[:, 0], "twonn")
    n = dists.shape[0]
    keep = int(n * (1 - discard_fraction))
    if keep < 2:
        raise ModelError(f"twonn: {n} points keep {keep} ratios after discarding "
                         f"{discard_fraction:.0%}; need at least 2")
    mu = torch.sort(dists[:, 1] / dists[:, 0]).values[:keep]      # (keep,)
    f = torch.arange(1, keep + 1, dtype=dists.dtype, device=dists.device) / n
    xs, ys = torch.log(mu), -torch.log1p(-f)
    return (xs * ys).sum() / (xs * xs).sum()                       # slope through the origin


def lambert_w(z: torch.Tensor, iters: int = 24) -> torch.Tensor:
    """Principal branch of Lambert's W for ``z >= 0`` by Halley's iteration from ``log1p z``
    (cubic convergence; 24 steps reach fp64 precision for z up to 1e300)."""
    w = torch.log1p(z)
    for _ in range(iters):
        ew = torch.exp(w)
        f = w * ew - z
        w = w - f / (ew * (w + 1) - (w + 2) * f / (2 * w + 2))
    return w


def _count(dev, scope: str):
    return dev.count(scope) if dev is not None else contextlib.nullcontext()


def fisher_s(x: torch.Tensor, dev=None, conditional_number: float = 10.0,
             chunk: int = 1024, scope: str = "fishers") -> dict:
    """FisherS ID of the rows of ``x`` (N, D); see the module docstring for the steps.

    With ``dev`` (a TorchDevice), the two counted parts run in ``dev.count(scope + "/pca")``
    and ``dev.count(scope + "/separability")`` and the eigen-decomposition's ``9 D^3``
    operations are added under ``scope + "/eigh"``.

    Returns
    -------
    dict with ``dimension`` (float; nan when every point is separable at every alpha, as
    scikit-dimension gives), ``alpha`` (the margin chosen), ``n_alpha`` (20,) the
    dimension profile (nan where every point is separable) and ``p_alpha`` (20,) the mean
    inseparable fraction, and ``components`` (principal components kept)
    """
    _check_points(x, 3, "fisher_s")
    n, d = x.shape
    with _count(dev, f"{scope}/pca"):
        xc = x - x.mean(0, keepdim=True)                          # (N, D)
        cov = (xc.T @ xc) / (n - 1)                                # (D, D), ddof 1 like PCA
    evals, evecs = torch.linalg.eigh(cov)                          # ascending
    if dev is not None:
        dev.ledger.add(f"flop_{'fp64' if x.dtype == torch.float64 else 'fp32'}", 9 * d ** 3,
                       scope=f"{scope}/eigh")
    with _count(dev, f"{scope}/separability"):
        evals, evecs = evals.flip(0), evecs.flip(1)                # descending
        keep = evals / evals[0] > 1.0 / conditional_number         # (D,) bool
        comps = int(keep.sum())
        w = evecs[:, :comps] / evals[:comps].sqrt()                # whiten: unit variance
        z = xc @ w                                                  # (N, D')
        z = z / z.norm(dim=1, keepdim=True)                         # onto the unit sphere
        alphas = torch.as_tensor(ALPHAS, dtype=x.dtype, device=x.device)
        counts = torch.zeros(n, len(ALPHAS), dtype=x.dtype, device=x.device)
        for s in range(0, n, chunk):
            e = min(s + chunk, n)
            g = z[s:e] @ z.T                                        # (c, N)
            g = g / g[:, s:e].diagonal()[:, None]                   # / <x_i, x_i>
            for a in range(len(ALPHAS)):
                # every row counts itself (<x_i,x_i>/<x_i,x_i> = 1 >= alpha): minus one
                counts[s:e, a] = (g >= alphas[a]).sum(1) - 1
        p = (counts / (n - 1)).mean(0)                              # (20,)
        a2 = alphas * alphas
        lw = torch.log(1 - a2)
        arg = -lw / (2 * torch.pi * p * p * a2 * (1 - a2))
        n_alpha = lambert_w(torch.where(p > 0, arg, torch.zeros_like(arg))) / (-lw)
        n_alpha = torch.where(p > 0, n_alpha, torch.full_like(n_alpha, float("nan")))
    prof = n_alpha.cpu().numpy()
    finite = np.flatnonzero(np.isfinite(prof))
    if finite.size == 0:
        # as scikit-dimension: nan when every point is separable at every alpha (the ID is
        # beyond what N points can show); the caller reports it, a sweep goes on
        return {"dimension": float("nan"), "alpha": float("nan"), "n_alpha": prof,
                "p_alpha": p.cpu().numpy(), "components": comps}
    ref = 0.9 * ALPHAS[finite].max()
    # the package's choice: the finite grid alpha whose distance to ref is the grid's least
    dist = np.abs(ALPHAS[finite] - ref)
    pick = finite[np.flatnonzero(dist == np.abs(ALPHAS - ref).min())]
    pick = int(pick[0]) if pick.size else int(finite[np.argmin(dist)])
    return {"dimension": float(prof[pick]), "alpha": float(ALPHAS[pick]),
            "n_alpha": prof, "p_alpha": p.cpu().numpy(), "components": comps}


def global_ids(x: torch.Tensor, ks=(20,), dev=None, scope: str = "id", chunk: int = 1024,
               fishers: bool = True) -> tuple[dict, torch.Tensor]:
    """MLE at each ``k`` of ``ks``, TwoNN and FisherS of ``x`` (N, D), and the sorted kNN
    distances at ``max(ks)`` (reused for the local map). kNN runs under ``scope + "/knn"``."""
    kmax = max(ks)
    with _count(dev, f"{scope}/knn"):
        dists, _ = knn(x, kmax, chunk)
    with _count(dev, f"{scope}/mle_twonn"):
        out = {f"mle_k{k}": float(mle(dists[:, :k])) for k in ks}
        out["twonn"] = float(twonn(dists))
    if fishers:
        out["fishers"] = fisher_s(x, dev, chunk=chunk, scope=f"{scope}/fishers")["dimension"]
    return out, dists
