"""The paper's clusterings: DPC (density peaks) and DBSCAN's eps from the dc-tree, on toys
whose answer is known, against loop twins written here and the room's own minimum spanning
tree."""
import numpy as np
import pytest
from sklearn.cluster import DBSCAN
from sklearn.metrics import adjusted_rand_score

from models.disco import clusterers, data
from models.disco.kernels import prim_mst
from sim.errors import ModelError


def blobs(centres, per, std, seed):
    rng = np.random.default_rng(seed)
    x = np.vstack([rng.normal(c, std, (per, 2)) for c in centres])
    return x, np.repeat(np.arange(len(centres)), per)


def test_decision_graph_matches_the_definition_by_loops():
    # Rodriguez and Laio: rho_i = sum_{j != i} exp(-(d_ij/d_c)^2); delta_i = min distance to
    # a denser point (ties: earlier index denser), the densest point gets the largest delta
    rng = np.random.default_rng(3)
    x = rng.normal(size=(25, 2))
    rho, delta, neigh, dc = clusterers.decision_graph(x, 0.05)
    n = len(x)
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    pairs = sorted(d[i, j] for i in range(n) for j in range(i + 1, n))
    assert dc == pytest.approx(np.quantile(pairs, 0.05))
    top = int(np.argmax(rho))
    for i in range(n):
        r = sum(np.exp(-(d[i, j] / dc) ** 2) for j in range(n) if j != i)
        assert rho[i] == pytest.approx(r, rel=1e-12)
        if i == top:
            continue
        denser = [j for j in range(n) if rho[j] > rho[i] or (rho[j] == rho[i] and j < i)]
        j = min(denser, key=lambda j: d[i, j])
        assert delta[i] == pytest.approx(d[i, j]) and neigh[i] == j
    assert delta[top] == pytest.approx(max(delta[i] for i in range(n) if i != top))


def test_dpc_finds_three_separated_blobs():
    # three blobs of 100 points (std 0.3) 10 apart: the decision graph has three points with
    # both rho and delta in the upper half of their ranges (the blob peaks, delta ~10 vs
    # ~0.05 elsewhere), every other point follows its nearest denser point into its blob; no
    # pair of different clusters lies within d_c (~0.4 << 10), so no halo
    x, y = blobs([(0, 0), (10, 0), (0, 10)], 100, 0.3, 0)
    lab = clusterers.density_peaks(x)
    assert (lab == -1).sum() == 0
    assert len(np.unique(lab)) == 3
    assert adjusted_rand_score(y, lab) == 1.0


def test_dpc_marks_the_halo_between_touching_clusters_as_noise():
    # two 10 x 10 grids (spacing 0.1) joined by a bridge of 11 points (spacing 0.1) from
    # x = 1.0 to 2.0: d_c, the 2% quantile of the distances, is the grid diagonal
    # 0.1 sqrt(2), so the bridge is connected; density falls towards its middle point
    # (x = 1.5), which goes to one side. The pair (1.5, its neighbour on the other side) is
    # the only cross-cluster pair within d_c: the border density is their mean, above the
    # middle point's own, so exactly that point is halo (-1); the grids and the rest of the
    # bridge keep their side's label
    grid = np.stack(np.meshgrid(np.arange(10) * 0.1, np.arange(10) * 0.1), -1).reshape(-1, 2)
    bridge = np.column_stack([1.0 + 0.1 * np.arange(11), np.full(11, 0.45)])
    x = np.vstack([grid, grid + [2.1, 0.0], bridge])
    lab = clusterers.density_peaks(x)
    a, b = lab[0], lab[100]
    assert a != b and a != -1 and b != -1
    assert (lab[:100] == a).all() and (lab[100:200] == b).all()
    np.testing.assert_array_equal(lab[200:], [a] * 5 + [-1] + [b] * 5)


def test_dc_tree_heights_are_the_room_mst_weights():
    # the dc-tree (scipy single linkage on mutual reachability) and the room's Prim over the
    # same reachability (kernels.prim_mst) hold the same multiset of merge heights
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 2))
    z = clusterers.single_linkage_mr(x, 5)
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    core = np.sort(d, 1)[:, 4]                         # 5th smallest, itself (0) first
    _, _, w = prim_mst(x, core, np.zeros(7, np.int64))
    np.testing.assert_allclose(np.sort(z[:, 2]), np.sort(w), rtol=1e-12)


def test_eps_for_k_cuts_the_dc_tree_at_the_k_largest_splits():
    # blobs A (0,0) and B (5,0) close, C (25,0) far; 50 points each, std 0.3: the highest
    # split of two >= 5-point parts is C from AB (~19-20), the next A from B (~3.5-4.5).
    # k = 2: eps just below the first, DBSCAN joins A and B; k = 3: just below the second
    x, y = blobs([(0, 0), (5, 0), (25, 0)], 50, 0.3, 2)
    eps2, eps3 = clusterers.eps_for_k(x, 2), clusterers.eps_for_k(x, 3)
    assert 15 < eps2 < 25 and 2 < eps3 < 5
    lab2 = DBSCAN(eps=eps2, min_samples=5).fit_predict(x)
    lab3 = DBSCAN(eps=eps3, min_samples=5).fit_predict(x)
    assert adjusted_rand_score(np.repeat([0, 0, 1], 50), lab2) == 1.0
    assert adjusted_rand_score(y, lab3) == 1.0
    # just above the height the two parts merge: one cluster fewer
    lab = DBSCAN(eps=eps3 + 1e-6, min_samples=5).fit_predict(x)
    assert len(np.unique(lab[lab != -1])) == 2
    with pytest.raises(ModelError, match="no eps gives k = 200 clusters"):
        clusterers.eps_for_k(x, 200)


def test_paper_clusterings_are_the_authors_list_and_seeded():
    ps = data.make("moons", 200, 0.1, 0)
    a = clusterers.paper_clusterings(ps.x, ps.y, ps.k, seed=4)
    b = clusterers.paper_clusterings(ps.x, ps.y, ps.k, seed=4)
    assert tuple(a) == clusterers.PAPER_CLUSTERINGS
    for name in a:
        assert a[name].shape == (200,) and np.array_equal(a[name], b[name])
    assert len(np.unique(a["random_100"])) > 50          # 200 draws of 100 values: ~87 seen
    assert len(np.unique(a["kmeans"])) == len(np.unique(a["spectral"])) == ps.k
