"""Numba kernels of DISCO: the two steps torch cannot express, each counting its own ops.

The minimum spanning tree of the mutual-reachability graph is Prim's algorithm, a chain of
``n - 1`` dependent arg-min steps; the dendrogram (leaf) order is a union-find walk over the
sorted tree edges. Neither is a tensor expression, so they run here on the host. Each kernel
adds what it executes into an int64 ``counts`` array (indices below); the caller
(``model.dc_structure``) flushes it into the device's ledger under the scope it ran in, priced
as the device port of the same loop would run: one fused update kernel plus one arg-min
reduction per Prim step.

Counts (index: meaning):
0 ``mac_fp64``   squared-difference accumulations of the on-the-fly distances
1 ``flop_fp64``  subtractions, square roots, maxima and comparisons on floats
2 ``int_cmp``    integer comparisons (visited flags, union-find parent chases)
3 ``int_add``    integer updates (component sizes, list links)
4 bytes read     5 bytes written
6 ``kernel_launch`` (the device port's launches)
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

MAC, FLOP, ICMP, IADD, READ, WRITE, LAUNCH = range(7)
N_COUNTS = 7


@njit(cache=True)
def prim_mst(x, core, counts):
    """Minimum spanning tree of the complete mutual-reachability graph over the rows of ``x``.

    ``d_m(u, v) = max(core[u], core[v], ||x_u - x_v||)``, computed on the fly from ``x``
    (n, d) float64 so memory stays O(n) (no n x n matrix). Returns (src, dst, weight) of the
    n - 1 tree edges in the order Prim added them.
    """
    n, d = x.shape
    src = np.empty(n - 1, np.int64)
    dst = np.empty(n - 1, np.int64)
    wgt = np.empty(n - 1, np.float64)
    if n < 2:
        return src, dst, wgt
    in_tree = np.zeros(n, np.bool_)
    best = np.full(n, np.inf)
    parent = np.zeros(n, np.int64)
    u = 0
    in_tree[0] = True
    pairs = 0
    updates = 0
    for step in range(n - 1):
        nxt = -1
        nbest = np.inf
        cu = core[u]
        for v in range(n):
            if in_tree[v]:
                continue
            s = 0.0
            for k in range(d):
                t = x[u, k] - x[v, k]
                s += t * t
            m = math.sqrt(s)
            if cu > m:
                m = cu
            if core[v] > m:
                m = core[v]
            if m < best[v]:
                best[v] = m
                parent[v] = u
                updates += 1
            if best[v] < nbest:
                nbest = best[v]
                nxt = v
        src[step] = parent[nxt]
        dst[step] = nxt
        wgt[step] = nbest
        in_tree[nxt] = True
        u = nxt
        pairs += n - 1 - step
    # per pair: d subtractions + d MACs, 1 sqrt, 2 maxima, 2 comparisons (update, arg-min)
    counts[MAC] += pairs * d
    counts[FLOP] += pairs * (d + 5)
    counts[ICMP] += (n - 1) * n                  # the visited test of every row, every step
    # per pair: x_v (8d B), core_v, best_v (8 B each); per update: best, parent (16 B)
    counts[READ] += pairs * (8 * d + 16) + (n - 1) * n
    counts[WRITE] += updates * 16 + (n - 1) * 25   # + the edge (8+8+8 B) and flag per step
    counts[LAUNCH] += 2 * (n - 1)
    return src, dst, wgt


@njit(cache=True)
def _find(parent, a, counts):
    while parent[a] != a:
        parent[a] = parent[parent[a]]            # path halving
        a = parent[a]
        counts[ICMP] += 1
        counts[READ] += 16
        counts[WRITE] += 8
    counts[ICMP] += 1
    counts[READ] += 8
    return a


@njit(cache=True)
def leaf_order(n, src, dst, wgt, edge_order, counts):
    """Dendrogram leaf order of the single-linkage tree given by the MST edges.

    Kruskal over the edges in ``edge_order`` (ascending weight): each component is a
    linked list of its points; merging A and B at weight w appends B's list to A's and
    stamps w on the link between them. In the final order ``pi`` every subtree of the
    dendrogram is a contiguous run, so the dc-distance of ``pi[i]`` and ``pi[j]`` (i < j) is
    the largest stamp among links i..j-1: the model reads dc-rows as running maxima.

    Returns (pi, link): ``pi`` (n,) int64 the order, ``link`` (n - 1,) float64 the weight
    of the link between ``pi[i]`` and ``pi[i + 1]``.
    """
    parent = np.arange(n)
    size = np.ones(n, np.int64)
    head = np.arange(n)
    tail = np.arange(n)
    nxt = np.full(n, -1, np.int64)
    stamp = np.zeros(n, np.float64)
    for i in range(len(edge_order)):
        e = edge_order[i]
        a = _find(parent, src[e], counts)
        b = _find(parent, dst[e], counts)
        nxt[tail[a]] = head[b]
        stamp[tail[a]] = wgt[e]
        h, t = head[a], tail[b]
        if size[a] < size[b]:                    # union by size; the list keeps A then B
            a, b = b, a
        parent[b] = a
        size[a] += size[b]
        head[a] = h
        tail[a] = t
        counts[ICMP] += 1
        counts[IADD] += 1
        counts[READ] += 56
        counts[WRITE] += 48
    pi = np.empty(n, np.int64)
    link = np.empty(max(n - 1, 0), np.float64)
    if n == 0:
        return pi, link
    p = head[_find(parent, 0, counts)]
    for i in range(n):
        pi[i] = p
        if i < n - 1:
            link[i] = stamp[p]
        p = nxt[p]
    counts[READ] += 24 * n
    counts[WRITE] += 16 * n
    counts[LAUNCH] += 2
    return pi, link
