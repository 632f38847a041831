"""The paper's clusterings (Sec. 5): what an internal index is asked to rank, per data set.

The authors' generator list (``src/utils/cluster_algorithms.py`` of pasiweber/DISCO):
ground truth; DBSCAN with eps read from the dc-tree for k = the number of classes; HDBSCAN
(sklearn defaults); DPC (density peaks); spectral clustering, agglomerative (Ward, sklearn's
default linkage), k-means, each with k; MeanShift (sklearn defaults); random labels with k
and with 100 values. Everything but DPC and the dc-tree eps is scikit-learn's own
implementation with the authors' arguments; those two are here:

* :func:`eps_for_k`: the dc-tree is the single-linkage tree of the mutual-reachability
  distances (core distance: the ``min_pts``-th neighbour, the point itself counted first, as
  ``models.disco.model``); a node with fewer than ``min_pts`` leaves is noise in it. The
  authors' ``DCTree.get_eps_for_k`` splits the tree top-down, only where both children have
  ``min_pts`` leaves or more, until k such nodes remain, and returns the lowest of their
  parents' heights minus 3e-12: the (k - 1)-th highest of the merges of two such nodes.
* :func:`density_peaks`: Rodriguez and Laio, "Clustering by fast search and find of density
  peaks", Science 344 (2014): cut-off ``d_c`` so a point has on average ~2% of the points as
  neighbours, Gaussian density ``rho_i = sum_j exp(-(d_ij / d_c)^2)``, ``delta_i`` = the
  distance to the nearest point of higher density (the largest ``delta`` for the densest
  point), centres where both ``rho`` and ``delta`` are at least the middle of their ranges
  (the authors' DPC's automatic thresholds; the Science paper picks them on the decision
  graph by eye), every other point takes the label of its nearest denser point, and the halo
  (points less dense than their cluster's border density) is noise (-1).

Our reading where the authors' code is silent or differs: k is the number of true clusters
(the code's ``len(set(l))`` would count the noise label as one more class on sets with
labelled background noise); random generators draw named seed streams of the run seed.
"""
from __future__ import annotations

import numpy as np

from sim import seeds
from sim.errors import ModelError

PAPER_CLUSTERINGS = ("gt", "dbscan_dctree", "hdbscan", "dpc", "spectral", "agglomerative",
                     "meanshift", "kmeans", "random_k", "random_100")
"""The authors' list (their ``CLUSTER_ALGORITHMS``), in their order."""


def _check(x, what: str) -> np.ndarray:
    xa = np.asarray(x, dtype=np.float64)
    if xa.ndim != 2 or xa.shape[0] < 2 or not np.isfinite(xa).all():
        raise ModelError(f"{what}: X has shape {xa.shape} (finite: {np.isfinite(xa).all()}); "
                         "expected finite (n, d) with n >= 2")
    return xa


def single_linkage_mr(x, min_pts: int = 5) -> np.ndarray:
    """scipy linkage matrix (n - 1, 4) of the mutual-reachability distances of X: the dc-tree
    (merge heights are dc-distances)."""
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import pdist, squareform
    xa = _check(x, "dc-tree")
    if not 1 <= min_pts <= len(xa):
        raise ModelError(f"dc-tree: min_pts = {min_pts} with {len(xa)} points; need "
                         "1 <= min_pts <= n")
    d = squareform(pdist(xa))                                   # (n, n)
    core = np.partition(d, min_pts - 1, axis=1)[:, min_pts - 1]  # self (0) counted first
    mr = np.maximum(d, np.maximum(core[:, None], core[None, :]))
    np.fill_diagonal(mr, 0.0)
    return linkage(squareform(mr, checks=False), method="single")


def eps_for_k(x, k: int, min_pts: int = 5) -> float:
    """DBSCAN's eps from the dc-tree for k clusters (module docstring): the (k - 1)-th
    highest merge of two subtrees of >= ``min_pts`` points, minus 3e-12. ``k = 1``: the
    root's height plus the same margin (everything one cluster)."""
    z = single_linkage_mr(x, min_pts)
    n = len(z) + 1
    sizes = np.concatenate([np.ones(n), z[:, 3]])               # node id -> leaves
    left, right = sizes[z[:, 0].astype(int)], sizes[z[:, 1].astype(int)]
    heights = np.sort(z[(left >= min_pts) & (right >= min_pts), 2])[::-1]
    if k < 1:
        raise ModelError(f"eps_for_k: k = {k}; expected k >= 1")
    if k == 1:
        return float(z[-1, 2] + 3e-12)
    if len(heights) < k - 1:
        raise ModelError(f"eps_for_k: the dc-tree has only {len(heights)} splits into two "
                         f"parts of >= {min_pts} points, so no eps gives k = {k} clusters; "
                         f"ask for k <= {len(heights) + 1}")
    return float(heights[k - 2] - 3e-12)


def decision_graph(x, neighbour_frac: float = 0.02):
    """DPC's decision graph of X: ``(rho, delta, neigh, d_c)``, each (n,) but d_c: Gaussian
    density, distance to the nearest denser point and that point's index (ties in density
    broken by input order, earlier = denser; the densest point's ``neigh`` is itself and its
    ``delta`` the largest other delta). O(n^2) memory."""
    from scipy.spatial.distance import pdist, squareform
    xa = _check(x, "density_peaks")
    if not 0.0 < neighbour_frac < 1.0:
        raise ModelError(f"density_peaks: neighbour_frac = {neighbour_frac}; expected in "
                         "(0, 1) (Rodriguez and Laio: 0.01-0.02)")
    n = len(xa)
    pair = pdist(xa)
    dc = float(np.quantile(pair, neighbour_frac))
    if dc <= 0:   # more than neighbour_frac of the pairs coincide: the smallest positive one
        dc = float(pair[pair > 0].min()) if (pair > 0).any() else 1.0
    d = squareform(pair)                                        # (n, n)
    rho = np.exp(-(d / dc) ** 2).sum(1) - 1.0                   # the point itself left out
    order = np.argsort(-rho, kind="stable")                     # densest first
    masked = np.where(np.tril(np.ones((n, n), bool), -1),       # row r: ranks 0 .. r-1
                      d[np.ix_(order, order)], np.inf)
    nearest = masked.argmin(1)                                  # rank of the nearest denser
    delta_r = masked[np.arange(n), nearest]
    delta_r[0] = delta_r[1:].max() if n > 1 else 0.0            # the densest point
    nearest[0] = 0
    delta = np.empty(n)
    delta[order] = delta_r
    neigh = np.empty(n, np.int64)
    neigh[order] = order[nearest]
    return rho, delta, neigh, dc


def density_peaks(x, neighbour_frac: float = 0.02) -> np.ndarray:
    """DPC labels (n,), halo points -1 (module docstring)."""
    from scipy.spatial.distance import cdist
    xa = _check(x, "density_peaks")
    rho, delta, neigh, dc = decision_graph(xa, neighbour_frac)
    n = len(xa)
    d = cdist(xa, xa)
    centre = (rho >= (rho.min() + rho.max()) / 2) & (delta >= (delta.min() + delta.max()) / 2)
    centre[np.argmax(rho)] = True   # true by the rule above; explicit against round-off
    # every point takes its nearest denser point's label: pointer jumping up the tree of
    # "nearest denser" links, which ends at a centre (the densest point is one)
    parent = np.where(centre, np.arange(n), neigh)
    while True:
        nxt = parent[parent]
        if np.array_equal(nxt, parent):
            break
        parent = nxt
    labels = np.unique(parent, return_inverse=True)[1].astype(np.int64)
    # halo: a cluster's border density is the highest mean density of a pair of points of
    # different clusters within d_c; its points below that are noise
    k = labels.max() + 1
    cross = (d <= dc) & (labels[:, None] != labels[None, :])
    pair_rho = np.where(cross, (rho[:, None] + rho[None, :]) / 2, -np.inf).max(1)  # (n,)
    border = np.full(k, -np.inf)
    np.maximum.at(border, labels, pair_rho)
    out = labels.copy()
    out[rho < border[labels]] = -1
    return out


def paper_clusterings(x, y, k: int, seed: int, min_pts: int = 5) -> dict[str, np.ndarray]:
    """Name -> labels (n,) of :data:`PAPER_CLUSTERINGS` for points ``x`` with ground truth
    ``y`` (-1 = noise) and ``k`` true clusters; k-means, spectral and the random labels draw
    the named streams "kmeans", "spectral", "random_k", "random_100" of ``seed``."""
    from sklearn.cluster import (
        DBSCAN,
        HDBSCAN,
        AgglomerativeClustering,
        KMeans,
        MeanShift,
        SpectralClustering,
    )
    xa = _check(x, "paper_clusterings")
    n = len(xa)
    out = {
        "gt": np.asarray(y),
        "dbscan_dctree": DBSCAN(eps=eps_for_k(xa, k, min_pts),
                                min_samples=min_pts).fit_predict(xa),
        "hdbscan": HDBSCAN(copy=True).fit_predict(xa),
        "dpc": density_peaks(xa),
        "spectral": SpectralClustering(k, random_state=seeds.child(seed, "spectral"))
        .fit_predict(xa),
        "agglomerative": AgglomerativeClustering(k).fit_predict(xa),
        "meanshift": MeanShift().fit_predict(xa),
        "kmeans": KMeans(k, random_state=seeds.child(seed, "kmeans")).fit_predict(xa),
        "random_k": seeds.rng(seed, "random_k").integers(0, k, n),
        "random_100": seeds.rng(seed, "random_100").integers(0, 100, n),
    }
    return {name: np.asarray(lab, np.int64) for name, lab in out.items()}
