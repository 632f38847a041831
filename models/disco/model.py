"""DISCO: a density-based internal score for clusterings with noise, counted on TorchDevice.

Beer, Krieger, Weber, Ritzert, Assent, Plant, "Internal Evaluation of Density-Based
Clusterings with Noise", ICLR 2026 (arXiv 2503.00127). Inputs: points ``X`` (n, d), labels
(``-1`` = noise), ``min_pts`` = mu (5). The index is the plain mean of per-point scores:

* core distance ``kappa(x)`` = distance to the mu-th nearest neighbour counting ``x`` itself
  (the authors' code: ``KDTree.query(k=mu)``; the paper's text says "mu-th neighbour", the
  code is followed, digest step 1);
* mutual reachability ``d_m(x, y) = max(kappa(x), kappa(y), ||x - y||)``; the dc-distance
  ``d_dc(x, y)`` is the minimax path weight, the largest edge on the x-y path of a minimum
  spanning tree of the complete ``d_m`` graph over ALL points (noise included), Sec. 3;
* cluster point: the Silhouette ``(b - a) / max(a, b)`` on ``d_dc`` (Sec. 4.1), ``a`` the mean
  to its own cluster, ``b`` the smallest mean to another cluster; 0 in a singleton cluster
  and for 0/0 (sklearn's ``silhouette_samples`` conventions, which the code calls);
* noise point ``n`` (Sec. 4.2): with ``kappa(C) = max_{y in C} kappa(y)``,
  ``rho_sparse = min_C (kappa(n) - kappa(C)) / max(kappa(n), kappa(C))`` and
  ``rho_far = min_C (delta_C - kappa(C)) / max(delta_C, kappa(C))``,
  ``delta_C = min_{y in C} d_dc(n, y)``; a zero denominator gives 0;
  ``rho_noise = min(rho_sparse, rho_far)``.

Edge cases in the code's order (Sec. 4.3 and ``disco_samples``): all noise -> every point -1;
one cluster, no noise -> every point 0; one cluster + noise -> cluster points' Silhouette on
the FULL dc matrix with each noise point its own singleton cluster (so ``b`` = the smallest
dc-distance to a noise point); two or more clusters -> Silhouette on the non-noise rows and
columns only; every cluster a singleton -> 0. Only ``-1`` is noise; other labels (``-2``
too) are clusters.

How it is computed (memory O(n * chunk), never n x n):

1. ``core_distances`` (torch, scope ``dc/core``): row chunks of distances from coordinate
   differences (``cdist``, no GEMM trick: duplicates are exactly 0 apart), ``kthvalue`` per
   row.
2. ``kernels.prim_mst`` (numba, scope ``dc/mst``): Prim with distances recomputed from X on
   the fly; Prim's chain of dependent arg-mins is no tensor expression. Counted through
   ``kernels``' counts array, flushed into the ledger here.
3. ``kernels.leaf_order`` (numba, scope ``dc/order``) after a torch sort of the tree edges:
   the dendrogram leaf order ``pi`` and the link weights ``h`` between neighbours in it. In
   that order ``d_dc(pi_i, pi_j) = max(h_i .. h_{j-1})``, so a chunk of dc rows is two
   running maxima (``cummax``) of ``h``, masked at each row's position (``dc_rows``, torch).
4. ``pointwise`` (torch, scope ``index``): per chunk of rows, per-cluster sums with
   ``index_add_`` (a, b) and per-cluster minima with ``scatter_reduce_`` (delta).

Steps 1-3 depend only on X and mu: :func:`dc_structure` computes them once and any number of
labellings are scored on it (the bench scores ~13 clusterings per data set).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from models.disco import kernels
from models.registry import Outcome, Progress
from sim.errors import ModelError
from sim.traces import Trace

_COUNT_OPS = {kernels.MAC: "mac_fp64", kernels.FLOP: "flop_fp64", kernels.ICMP: "int_cmp",
              kernels.IADD: "int_add", kernels.LAUNCH: "kernel_launch"}


@dataclass(frozen=True)
class DCStructure:
    """What the dc-distance of a point set needs: core distances and the dendrogram order.

    ``core`` (n,) in input order; ``order`` (n,) the leaf order pi (input indices);
    ``link`` (n-1,) the dc-distance of neighbours in pi; tensors on the device.
    """

    core: torch.Tensor
    order: torch.Tensor
    link: torch.Tensor
    min_pts: int

    @property
    def n(self) -> int:
        return int(self.core.numel())


def _rows_per_chunk(n: int, chunk_bytes: int) -> int:
    """Rows whose (rows, n) float64 block fits in ``chunk_bytes`` (at least one)."""
    return max(1, int(chunk_bytes) // (8 * max(n, 1)))


def check_points(x, labels=None, min_pts: int | None = None, what: str = "disco") -> np.ndarray:
    """X as a finite (n, d) float64 array with n >= 1; labels (n,) integers; mu >= 1."""
    xa = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x)
    if xa.ndim != 2 or xa.shape[0] < 1 or xa.shape[1] < 1:
        raise ModelError(f"{what}: X has shape {xa.shape}; expected (n, d) with n, d >= 1")
    if xa.dtype.kind not in "fiu" or not np.isfinite(xa).all():
        raise ModelError(f"{what}: X must hold finite numbers (dtype {xa.dtype}, "
                         f"{int((~np.isfinite(xa.astype(float))).sum())} non-finite)")
    if labels is not None:
        la = np.asarray(labels)
        if la.shape != (xa.shape[0],) or (la.size and la.dtype.kind not in "iu"):
            raise ModelError(f"{what}: labels have shape {la.shape} and dtype {la.dtype}; "
                             f"expected ({xa.shape[0]},) integers (-1 = noise)")
    if min_pts is not None and (int(min_pts) != min_pts or min_pts < 1):
        raise ModelError(f"{what}: min_pts = {min_pts}; expected an integer >= 1 (paper: 5)")
    return xa.astype(np.float64)


def core_distances(x: torch.Tensor, min_pts: int, chunk_bytes: int) -> torch.Tensor:
    """kappa (n,): the mu-th smallest distance of each row, itself (0) counted first.

    Distances from the coordinate differences (``cdist`` without the matrix-product
    path): identical rows are exactly 0 apart, as the authors' ``KDTree`` has them, and a
    near-duplicate's distance is accurate whatever the offset of the data. The GEMM trick
    ``|a|^2 + |b|^2 - 2 a.b`` used before left round-off of ~eps |x|^2 (1.5e-5 after the root
    for duplicates at |x| ~ 300), which turned the noise score's 0/0 -> 0 into -1.
    """
    n = x.shape[0]
    step = _rows_per_chunk(n, chunk_bytes)
    out = []
    for s in range(0, n, step):
        d = torch.cdist(x[s:s + step], x,
                        compute_mode="donot_use_mm_for_euclid_dist")   # (b, n)
        out.append(torch.kthvalue(d, min_pts, dim=1).values)
    return torch.cat(out)


def dc_structure(x, min_pts: int, dev, chunk_bytes: int = 1 << 24) -> DCStructure:
    """Core distances, minimum spanning tree and leaf order of X (counted under ``dc``)."""
    xa = check_points(x, None, min_pts)
    n = xa.shape[0]
    if min_pts > n:
        raise ModelError(f"disco: min_pts = {min_pts} exceeds the {n} points; the core "
                         f"distance needs min_pts <= n")
    with dev.count("dc", samples=n):
        with dev.count("core"):
            xt = dev.tensor(xa, dtype=torch.float64)
            core = core_distances(xt, min_pts, chunk_bytes)
        counts = np.zeros(kernels.N_COUNTS, np.int64)
        with dev.count("mst"):
            src, dst, wgt = kernels.prim_mst(xa, core.cpu().numpy(), counts)
            _flush(dev, counts)
        counts[:] = 0
        with dev.count("order"):
            w = dev.tensor(wgt, dtype=torch.float64)
            edge_order = torch.sort(w, stable=True).indices.cpu().numpy()
            pi, link = kernels.leaf_order(n, src, dst, wgt, edge_order, counts)
            _flush(dev, counts)
    return DCStructure(core, dev.tensor(pi, dtype=torch.int64),
                       dev.tensor(link, dtype=torch.float64), int(min_pts))


def _flush(dev, counts: np.ndarray) -> None:
    """A numba kernel's counts into the open ledger scope (the count block's own)."""
    for i, op in _COUNT_OPS.items():
        dev.ledger.add(op, int(counts[i]))
    dev.ledger.add_bytes("offchip", read=int(counts[kernels.READ]),
                         write=int(counts[kernels.WRITE]))


class RowBlocks:
    """Work tensors for :func:`dc_rows`, allocated once for up to ``rows`` rows of n points
    and reused by every chunk (fresh (b, n) tensors per chunk cost page faults)."""

    def __init__(self, link: torch.Tensor, rows: int):
        m, dev = link.numel(), link.device
        self.link = link
        self.link_rev = link.flip(0)                             # (n-1,) link read backwards
        self.k = torch.arange(m, device=dev)[None, :]            # (1, n-1)
        self.rev = torch.arange(m - 1, -1, -1, device=dev)       # (n-1,) m-1 .. 0
        self.mask = torch.empty(rows, m, dtype=torch.bool, device=dev)
        self.masked = torch.empty(rows, m, dtype=link.dtype, device=dev)
        self.run = torch.empty(rows, m, dtype=link.dtype, device=dev)
        self.arg = torch.empty(rows, m, dtype=torch.int64, device=dev)
        self.out = torch.empty(rows, m + 1, dtype=link.dtype, device=dev)


def dc_rows(link: torch.Tensor, pos: torch.Tensor, work: RowBlocks | None = None):
    """dc-distances (b, n) of the points at leaf positions ``pos`` (b,) to all, leaf order.

    Right of p: the running max of link[p:]; left of p: the running max of link[:p] read
    backwards (a running max over the reversed links from position n-1-p on). Links are
    >= 0, so masking with 0 leaves each running max exact; each half is 0 where the other is
    defined, so their sum is the row (0 on the diagonal). The result is a view of ``work``'s
    buffer when one is given: valid until the next call.
    """
    w = work if work is not None else RowBlocks(link, pos.numel())
    b, m = pos.numel(), link.numel()
    mask, masked, run, arg = w.mask[:b], w.masked[:b], w.run[:b], w.arg[:b]
    out = w.out[:b]                                              # (b, n)
    torch.ge(w.k, pos[:, None], out=mask)                        # right of p
    torch.mul(mask, link, out=masked)
    torch.cummax(masked, 1, out=(run, arg))
    out[:, 0].zero_()
    out[:, 1:].copy_(run)                                        # d(p, j) = run[j-1], j > p
    torch.ge(w.k, (m - pos)[:, None], out=mask)                  # reversed: k' >= n-1-p
    torch.mul(mask, w.link_rev, out=masked)
    torch.cummax(masked, 1, out=(run, arg))
    torch.index_select(run, 1, w.rev, out=masked)
    out[:, :m].add_(masked)                                      # d(p, j) = run'[n-2-j], j < p
    return out


def _ratio(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """num / den with 0 where den == 0 (the code's ``np.divide(where=den != 0)``)."""
    return torch.where(den != 0, num / torch.where(den != 0, den, 1.0), 0.0)


def encode(labels) -> tuple[np.ndarray, int]:
    """Cluster ids 0..k-1 in order of first value (sorted), noise (-1) -> k; returns (ids, k)."""
    la = np.asarray(labels).astype(np.int64)
    noise = la == -1
    ids = np.empty(la.shape, np.int64)
    uniq, inv = np.unique(la[~noise], return_inverse=True)
    ids[~noise] = inv
    ids[noise] = len(uniq)
    return ids, len(uniq)


def disco_samples(x, labels, dev, min_pts: int = 5, dc: DCStructure | None = None,
                  chunk_bytes: int = 1 << 24, scope: str = "index",
                  parts: bool = False):
    """Per-point DISCO scores (n,) float64 in input order; ``dc`` reuses a structure.

    ``parts=True`` returns ``(scores, rho_sparse, rho_far)``, the two noise terms NaN at
    cluster points (and -1 everywhere for an all-noise labelling, as the code's ``p_noise``).
    """
    xa = check_points(x, labels, min_pts)
    n = xa.shape[0]
    ids, k = encode(labels)
    noise = ids == k
    nan = np.full(n, np.nan)
    if noise.all():
        out = np.full(n, -1.0)
        return (out, out.copy(), out.copy()) if parts else out
    if k == 1 and not noise.any():
        return (np.zeros(n), nan, nan.copy()) if parts else np.zeros(n)
    if dc is None:
        dc = dc_structure(xa, min_pts, dev, chunk_bytes)
    elif dc.n != n or dc.min_pts != min_pts:
        raise ModelError(f"disco: the dc structure is of {dc.n} points with min_pts = "
                         f"{dc.min_pts}; these labels need {n} points and min_pts = {min_pts}")
    with dev.count(scope, samples=n):
        score, sparse, far = pointwise(dc, ids, k, chunk_bytes)
    return (score, sparse, far) if parts else score


def pointwise(dc: DCStructure, ids: np.ndarray, k: int, chunk_bytes: int):
    """Scores (n,), rho_sparse and rho_far (n,), NaN off noise) in input order, given cluster
    ids (n,) in 0..k (k = noise), k >= 1 clusters. Bookkeeping of O(n) (which rows are
    noise, cluster sizes) is host numpy; every O(n^2) step is torch."""
    n, dev = dc.n, dc.core.device
    order = dc.order.cpu().numpy()
    lab_np = ids[order]                                          # (n,) ids in leaf order
    lab = torch.as_tensor(lab_np, device=dev)
    size = torch.as_tensor(np.bincount(lab_np, minlength=k + 1), dtype=torch.float64,
                           device=dev)                           # (k+1,) noise bin last
    is_noise = lab == k
    with_singletons = k == 1                                     # one cluster + noise
    step = _rows_per_chunk(n, chunk_bytes)
    score = torch.zeros(n, dtype=torch.float64, device=dev)      # leaf order
    sparse = torch.full((n,), float("nan"), dtype=torch.float64, device=dev)
    far = sparse.clone()
    inf = torch.tensor(float("inf"), dtype=torch.float64, device=dev)
    work = RowBlocks(dc.link, min(step, n))
    rows_c = torch.as_tensor(np.flatnonzero(lab_np != k), device=dev)
    for s in range(0, rows_c.numel(), step):
        pos = rows_c[s:s + step]
        d = dc_rows(dc.link, pos, work)                          # (b, n)
        sums = torch.zeros(pos.numel(), k + 1, dtype=torch.float64,
                           device=dev).index_add_(1, lab, d)     # (b, k+1)
        own = lab[pos]
        own_size = size[own]
        a = sums.gather(1, own[:, None])[:, 0] / (own_size - 1).clamp_min(1.0)
        if with_singletons:   # each noise point its own cluster: b = nearest noise point
            b = torch.where(is_noise[None, :], d, inf).amin(1)
        else:                 # noise columns excluded: mean over the other clusters only
            means = sums[:, :k] / size[:k]
            b = means.scatter(1, own[:, None], float("inf")).amin(1)
        sil = _ratio(b - a, torch.maximum(a, b))
        score[pos] = torch.where(own_size > 1, sil, 0.0)
    rows_n = torch.as_tensor(np.flatnonzero(lab_np == k), device=dev)
    if rows_n.numel():
        core = dc.core[dc.order]                                 # (n,) leaf order
        kc = torch.zeros(k + 1, dtype=torch.float64, device=dev).scatter_reduce_(
            0, lab, core, "amax", include_self=False)[:k]        # (k,) kappa(C)
        kn = core[rows_n][:, None]                               # (m, 1)
        sparse[rows_n] = _ratio(kn - kc, torch.maximum(kn, kc)).amin(1)
        for s in range(0, rows_n.numel(), step):
            pos = rows_n[s:s + step]
            d = dc_rows(dc.link, pos, work)                      # (b, n)
            delta = torch.full((pos.numel(), k + 1), float("inf"), dtype=torch.float64,
                               device=dev).scatter_reduce_(
                1, lab.expand(pos.numel(), n), d, "amin")[:, :k]  # (b, k) delta_C
            far[pos] = _ratio(delta - kc, torch.maximum(delta, kc)).amin(1)
        score[rows_n] = torch.minimum(sparse[rows_n], far[rows_n])
    back = np.empty(n, np.int64)
    back[order] = np.arange(n)                                   # input index -> leaf pos
    back_t = torch.as_tensor(back, device=dev)
    return tuple(t[back_t].cpu().numpy() for t in (score, sparse, far))


def disco_score(x, labels, dev, min_pts: int = 5, dc: DCStructure | None = None,
                chunk_bytes: int = 1 << 24) -> float:
    """DISCO(X, labels): the mean of :func:`disco_samples`."""
    return float(np.mean(disco_samples(x, labels, dev, min_pts, dc, chunk_bytes)))


# -- the card's run: the paper's protocol (Sec. 5) in miniature ------------------------------
# For one data set (``data.make``) every clustering of ``data.clusterings`` is scored by DISCO
# (counted on the device; the dc structure once per data set, the index once per clustering),
# by Silhouette (Euclidean, on the non-noise points only, sklearn; the digest's reading) and
# by ARI against the ground truth. An index is good when it correlates with ARI across the
# clusterings: the paper's table reports the Pearson correlation (PCC) x 100 per data set.
# An index undefined on a clustering (Silhouette with fewer than two clusters among the
# non-noise points) is left out of that index's PCC, and the count says so.
def silhouette(x: np.ndarray, labels: np.ndarray) -> float:
    """Euclidean Silhouette of the non-noise points; NaN when it is undefined there."""
    from sklearn.metrics import silhouette_score
    keep = labels != -1
    n_lab = len(np.unique(labels[keep]))
    if not 2 <= n_lab <= keep.sum() - 1:
        return float("nan")
    return float(silhouette_score(x[keep], labels[keep]))


def pcc(index, ari) -> tuple[float, int]:
    """Pearson correlation of an index with ARI over the clusterings where it is defined,
    and how many those are; NaN when fewer than 3 or either side is constant."""
    index, ari = np.asarray(index, float), np.asarray(ari, float)
    ok = np.isfinite(index) & np.isfinite(ari)
    if ok.sum() < 3 or np.ptp(index[ok]) == 0 or np.ptp(ari[ok]) == 0:
        return float("nan"), int(ok.sum())
    return float(np.corrcoef(index[ok], ari[ok])[0, 1]), int(ok.sum())


def protocol(ps, dev, cfg, extra=None, labelings=None) -> dict:
    """Score every clustering of ``ps`` (``labelings``, default ``data.clusterings``);
    ``extra`` maps an index name to ``f(x, labels)`` (the bench adds DBCV). Returns rows per
    clustering, the pointwise DISCO scores and each index's PCC with ARI."""
    from sklearn.metrics import adjusted_rand_score

    from models.disco import data
    chunk = int(cfg.chunk_mb * 2**20)
    labelings = labelings if labelings is not None else data.clusterings(ps, cfg.seed)
    dc = dc_structure(ps.x, cfg.min_pts, dev, chunk)
    rows, pointwise = {}, {}
    for name, lab in labelings.items():
        scores = disco_samples(ps.x, lab, dev, cfg.min_pts, dc, chunk, scope=f"index/{name}")
        pointwise[name] = scores
        row = {"ari": float(adjusted_rand_score(ps.y, lab)),
               "disco": float(scores.mean()),
               "silhouette": silhouette(ps.x, lab),
               "clusters": int(len(np.unique(lab[lab != -1]))),
               "noise": float((lab == -1).mean()),
               "disco_noise": float(scores[lab == -1].mean()) if (lab == -1).any()
               else float("nan")}
        for key, fn in (extra or {}).items():
            row[key] = fn(ps.x, lab)
        rows[name] = row
    out = {"rows": rows, "pointwise": pointwise, "labels": labelings}
    ari = [r["ari"] for r in rows.values()]
    for key in ("disco", "silhouette", *(extra or {})):
        out[f"pcc_{key}"], out[f"n_{key}"] = pcc([r[key] for r in rows.values()], ari)
        vals = np.array([r[key] for r in rows.values()], float)
        names = list(rows)
        best = names[int(np.nanargmax(vals))] if np.isfinite(vals).any() else None
        out[f"top_{key}"] = best
        out[f"top_ari_{key}"] = rows[best]["ari"] if best else float("nan")
    return out


def _scatter(x, scores) -> Trace:
    return Trace("scatter", np.column_stack([x[:, 0], x[:, 1], scores]), "1")


def run_protocol(cfg, device, data, progress: Progress | None = None) -> Outcome:
    """The card's run: score every clustering of the point set ``data`` with DISCO (counted
    on ``device``), Silhouette and ARI (:func:`protocol`); metrics are each index's
    correlation with ARI, traces the pointwise DISCO maps and the table of clusterings."""
    res = protocol(data, device, cfg)
    rows = res["rows"]
    m = {"pcc_disco_ari": res["pcc_disco"], "pcc_silhouette_ari": res["pcc_silhouette"],
         "n_disco": res["n_disco"], "n_silhouette": res["n_silhouette"],
         "top_ari_disco": res["top_ari_disco"], "top_ari_silhouette": res["top_ari_silhouette"],
         "best_ari": max(r["ari"] for r in rows.values()), "n_clusterings": len(rows),
         "n_points": len(data.x)}
    for name in ("gt", "gt_noise_merged", "kmeans", "hdbscan"):
        if name in rows:
            m[f"disco_{name}"] = rows[name]["disco"]
            m[f"ari_{name}"] = rows[name]["ari"]
            if np.isfinite(rows[name]["silhouette"]):
                m[f"silhouette_{name}"] = rows[name]["silhouette"]
    if np.isfinite(rows["gt"]["disco_noise"]):
        m["disco_noise_gt"] = rows["gt"]["disco_noise"]
    names = list(rows)
    table = np.array([[n, f"{rows[n]['ari']:.4f}", f"{rows[n]['disco']:.4f}",
                       f"{rows[n]['silhouette']:.4f}", str(rows[n]["clusters"]),
                       f"{rows[n]['noise']:.3f}"] for n in names], dtype=str)
    traces = {"pointwise_gt": _scatter(data.x, res["pointwise"]["gt"]),
              "pointwise_kmeans": _scatter(data.x, res["pointwise"]["kmeans"]),
              "pointwise_hdbscan": _scatter(data.x, res["pointwise"]["hdbscan"]),
              "clusterings": Trace("table", table, "", ("clustering", "ARI", "DISCO",
                                                         "Silhouette", "clusters",
                                                         "noise fraction"))}
    if progress:
        progress(1, 1, m)
    facts = {"torch_device": str(device.torch_device), "data_source": data.source,
             "top_disco": res["top_disco"], "top_silhouette": res["top_silhouette"],
             "true_clusters": data.k}
    return Outcome(m, traces, None, facts)
