"""DISCO against its reference values, its edge cases and a dense twin written here.

The twin (``dense_disco``) shares nothing with ``models/disco``: all pairwise distances by
broadcasting, the minimax (dc) distance by a Floyd-Warshall closure over (max, min), the
cluster part by sklearn's ``silhouette_samples`` on the precomputed matrix, the noise part by
the code's loops (digest steps 1-6 and its edge-case order).

The card's run (``protocol``): the digest's semantic checks (DISCO ranks the density-based
ground truth above KMeans and above the ground truth with its background noise merged in,
where Silhouette prefers KMeans) and the PCC protocol in miniature (moons, circles).
"""
import numpy as np
import pytest
import torch
from conftest import TOY_GPU
from sklearn.metrics import silhouette_samples

from models.disco import data
from models.disco.card import DiscoConfig
from models.disco.kernels import leaf_order, prim_mst
from models.disco.model import (
    dc_rows,
    dc_structure,
    disco_samples,
    disco_score,
    pcc,
    protocol,
    silhouette,
)
from sim.errors import ModelError
from sim.torch_engine.engine import TorchDevice

SQUARES = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [9, 9], [9, 10], [10, 9], [10, 10]], float)
TWO = np.array([0, 0, 0, 0, 1, 1, 1, 1])


def dev():
    return TorchDevice(TOY_GPU)


def dense_dc(x, mu):
    d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    core = np.sort(d, axis=1)[:, mu - 1]            # the point itself is the first neighbour
    m = np.maximum(d, np.maximum(core[:, None], core[None, :]))
    np.fill_diagonal(m, 0.0)
    for k in range(len(x)):                         # minimax closure
        m = np.minimum(m, np.maximum(m[:, k:k + 1], m[k:k + 1, :]))
    return m, core


def _div(num, den):
    return np.divide(num, den, out=np.zeros_like(num), where=den != 0)


def dense_disco(x, labels, mu):
    labels = np.asarray(labels)
    n = len(x)
    noise = labels == -1
    if noise.all():
        return np.full(n, -1.0)
    clusters = sorted(set(labels[~noise]))
    if len(clusters) == 1 and not noise.any():
        return np.zeros(n)
    dc, core = dense_dc(x, mu)
    out = np.empty(n)

    def sil(dmat, lab):
        if len(set(lab)) in (1, len(lab)):
            return np.zeros(len(lab))
        return silhouette_samples(dmat, lab, metric="precomputed")
    if len(clusters) == 1:
        lab = labels.copy()
        lab[noise] = -np.arange(1, noise.sum() + 1)  # each noise point its own cluster
        out[~noise] = sil(dc, lab)[~noise]
    else:
        out[~noise] = sil(dc[np.ix_(~noise, ~noise)], labels[~noise])
    if noise.any():
        kc = np.array([core[labels == c].max() for c in clusters])
        kn = core[noise]
        sparse = np.min([_div(kn - k, np.maximum(kn, k)) for k in kc], axis=0)
        far = np.min([_div(dc[np.ix_(noise, labels == c)].min(1) - k,
                           np.maximum(dc[np.ix_(noise, labels == c)].min(1), k))
                      for c, k in zip(clusters, kc, strict=True)], axis=0)
        out[noise] = np.minimum(sparse, far)
    return out


def test_two_unit_squares_score_the_reference_value():
    # mu = 2: kappa = 1 everywhere; inside a square every dc = 1 (a = 1); across, the
    # closest pair (1,1)-(9,9) is sqrt(128) apart, so b = sqrt(128): 1 - 1/sqrt(128)
    got = disco_samples(SQUARES, TWO, dev(), min_pts=2)
    np.testing.assert_allclose(got, np.full(8, 1 - 1 / np.sqrt(128)), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got, 0.91161165, rtol=0, atol=5e-9)   # ClustPy's value


def test_dc_distances_match_the_reference_table():
    # ClustPy's test table (mu = 5 of 5 points: kappa = the farthest point)
    x = np.array([[0.0, 0.0], [1.0, 0.0], [9.0, 9.0], [10.0, 9.0], [50.0, 50.0]])
    want = np.array([[0.0, 70.71067812, 70.71067812, 70.71067812, 70.71067812],
                     [70.71067812, 0.0, 70.00714249, 70.00714249, 70.71067812],
                     [70.71067812, 70.00714249, 0.0, 57.98275606, 70.71067812],
                     [70.71067812, 70.00714249, 57.98275606, 0.0, 70.71067812],
                     [70.71067812] * 4 + [0.0]])
    dc = dc_structure(x, 5, dev())
    rows = dc_rows(dc.link, torch.arange(5)).numpy()           # leaf order
    got = np.empty((5, 5))
    order = dc.order.numpy()
    got[np.ix_(order, order)] = rows
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)


def test_all_noise_scores_minus_one_everywhere():
    # returned before any distance: also with fewer points than min_pts
    got = disco_samples(SQUARES[:3], np.array([-1, -1, -1]), dev(), min_pts=5)
    assert got.tolist() == [-1.0, -1.0, -1.0]


def test_one_cluster_without_noise_scores_zero_everywhere():
    assert disco_samples(SQUARES[:3], np.array([4, 4, 4]), dev()).tolist() == [0.0] * 3


def test_one_cluster_plus_noise_uses_the_noise_as_singletons():
    # mu = 1: kappa = 0, d_m = Euclidean; the cluster's points meet at (0.5, 0.5): a = 1/sqrt(2);
    # the noise point joins last at 99.5 sqrt(2) = b. Noise: rho_sparse = 0/0 -> 0,
    # rho_far = (99.5 sqrt(2) - 0) / (99.5 sqrt(2)) = 1; min = 0
    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.5], [100.0, 100.0]])
    got, sparse, far = disco_samples(x, np.array([0, 0, 0, -1]), dev(), min_pts=1, parts=True)
    s = 1 - (1 / np.sqrt(2)) / (99.5 * np.sqrt(2))
    np.testing.assert_allclose(got, [s, s, s, 0.0], rtol=0, atol=1e-12)
    assert (sparse[3], far[3]) == (0.0, 1.0) and np.isnan(sparse[:3]).all()


def test_a_singleton_cluster_plus_noise_scores_its_point_zero():
    got = disco_samples(SQUARES, np.array([0, -1, -1, -1, -1, -1, -1, -1]), dev(), min_pts=2)
    np.testing.assert_allclose(got, dense_disco(SQUARES, [0] + [-1] * 7, 2), atol=1e-12)
    assert got[0] == 0.0


def test_singletons_score_zero():
    every = disco_samples(SQUARES, np.arange(8), dev(), min_pts=2)
    assert every.tolist() == [0.0] * 8
    # two real clusters and two singletons: the singletons 0, the rest as the twin
    lab = np.array([0, 0, 0, 7, 1, 1, 1, 9])
    got = disco_samples(SQUARES, lab, dev(), min_pts=2)
    assert got[3] == 0.0 and got[7] == 0.0
    np.testing.assert_allclose(got, dense_disco(SQUARES, lab, 2), rtol=0, atol=1e-12)


def test_noise_far_away_scores_positive_and_inside_a_cluster_negative():
    far = disco_samples(np.vstack([SQUARES, [[50, 50]]]), np.r_[TWO, -1], dev())
    inside = disco_samples(np.vstack([SQUARES, [[0.5, 0.5]]]), np.r_[TWO, -1], dev())
    assert far[-1] > 0 > inside[-1]
    x = np.vstack([SQUARES, [[0.6, 0.6], [50, 50]]])
    _, _, rho_far = disco_samples(x, np.r_[TWO, -1, -1], dev(), parts=True)
    assert rho_far[-1] > rho_far[-2]


def _random_case(seed, n=90):
    rng = np.random.default_rng(seed)
    x = np.vstack([rng.normal(c, 0.4, size=(n // 3, 2)) for c in ((0, 0), (3, 0), (0, 3))])
    x[:3] = x[3]                                    # duplicates: zero distances, 0/0 ratios
    lab = np.repeat([0, 1, 2], n // 3)
    lab[rng.random(n) < 0.15] = -1
    return x, lab


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_the_dense_twin(seed):
    x, lab = _random_case(seed)
    for mu in (1, 5):
        for labels in (lab, np.where(lab == 2, 0, lab), np.where(lab > 0, -1, lab)):
            # three clusters + noise, two + noise, one + noise
            np.testing.assert_allclose(disco_samples(x, labels, dev(), min_pts=mu),
                                       dense_disco(x, labels, mu), rtol=0, atol=1e-10)


def test_duplicate_points_are_exactly_zero_apart():
    # 6 + 6 copies of two points, 2 noise copies of the first (the GEMM trick made kappa
    # ~1e-5 here, unequal per row, and the noise scores -1). Every kappa is 0 (>= 5
    # copies). Cluster point: a = 0, b = |ca - cb| = sqrt(0.4^2 + 4.2^2) = sqrt(17.8)
    # -> (b - a) / b = 1. Noise: kappa(n) = kappa(C) = 0 -> rho_sparse = 0/0 -> 0;
    # delta_C0 = 0 -> 0/0 -> 0, delta_C1 = sqrt(17.8) -> 1; rho = min(0, 0, 1) = 0.
    # DISCO = (12 x 1 + 2 x 0) / 14 = 6/7.
    ca, cb = np.array([89.9, -82.8]), np.array([90.3, -78.6])
    x = np.r_[np.tile(ca, (6, 1)), np.tile(cb, (6, 1)), np.tile(ca, (2, 1))]
    lab = np.r_[np.zeros(6, int), np.ones(6, int), [-1, -1]]
    assert np.array_equal(dc_structure(x, 5, dev()).core.numpy(), np.zeros(14))
    scores, sparse, far = disco_samples(x, lab, dev(), parts=True)
    np.testing.assert_array_equal(scores, np.r_[np.ones(12), 0.0, 0.0])
    np.testing.assert_array_equal(sparse[-2:], [0.0, 0.0])
    np.testing.assert_array_equal(far[-2:], [0.0, 0.0])
    assert scores.mean() == pytest.approx(6 / 7, abs=1e-15)


def test_offset_data_with_duplicates_agrees_with_the_dense_twin():
    # moons shifted by +1000 (|x|^2 ~ 2e6: the GEMM trick's round-off was ~1e-8 in kappa),
    # 20 points copied 5 more times (kappa 0), 20 background points labelled -1, 5 of them
    # copied 5 more times
    from sklearn.datasets import make_moons
    rng = np.random.default_rng(0)
    x, y = make_moons(150, noise=0.05, random_state=0)
    x = x + 1000.0
    dup = rng.choice(150, 20, replace=False)
    bg = rng.uniform(x.min(0), x.max(0), (20, 2))
    x = np.r_[x, np.repeat(x[dup], 5, axis=0), bg, np.repeat(bg[:5], 5, axis=0)]
    y = np.r_[y, np.repeat(y[dup], 5), -np.ones(45, int)]
    d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(dc_structure(x, 5, dev()).core.numpy(),
                               np.sort(d, axis=1)[:, 4], rtol=0, atol=1e-10)
    for labels in (y, np.where(y == 1, 0, y)):                  # two clusters / one + noise
        np.testing.assert_allclose(disco_samples(x, labels, dev()),
                                   dense_disco(x, labels, 5), rtol=0, atol=1e-10)


def test_scores_do_not_depend_on_the_order_of_the_points():
    x, lab = _random_case(7, n=300)
    perm = np.random.default_rng(1).permutation(len(x))
    a = disco_samples(x, lab, dev())
    b = disco_samples(x[perm], lab[perm], dev())
    np.testing.assert_allclose(b, a[perm], rtol=0, atol=1e-12)


def test_small_chunks_give_the_same_scores():
    x, lab = _random_case(3)
    big = disco_samples(x, lab, dev(), chunk_bytes=1 << 24)
    one_row = disco_samples(x, lab, dev(), chunk_bytes=8)      # one (1, n) block at a time
    np.testing.assert_allclose(one_row, big, rtol=0, atol=1e-13)


def test_the_leaf_order_reads_back_the_mst_minimax():
    x, _ = _random_case(2, n=60)
    core = np.zeros(len(x))
    counts = np.zeros(7, np.int64)
    src, dst, w = prim_mst(x, core, counts)
    pi, link = leaf_order(len(x), src, dst, w, np.argsort(w, kind="stable"), counts)
    assert sorted(pi.tolist()) == list(range(len(x)))
    rows = dc_rows(torch.as_tensor(link), torch.arange(len(x))).numpy()
    want = dense_dc(x, 1)[0]
    np.testing.assert_allclose(rows, want[np.ix_(pi, pi)], rtol=0, atol=1e-12)


def test_every_step_is_counted_and_prim_counts_exactly():
    d = dev()
    disco_score(SQUARES, TWO, d, min_pts=2)
    mst = d.ledger.ops("dc/mst")
    # Prim visits n(n-1)/2 = 28 pairs; each accumulates d = 2 squared differences
    assert mst["mac_fp64"] == 28 * 2
    # per pair d subtractions + sqrt + 2 maxima + 2 comparisons = 2 + 5 = 7 flops
    assert mst["flop_fp64"] == 28 * 7
    # the device port launches an update and an arg-min per step: 2 x 7 steps
    assert mst["kernel_launch"] == 14
    assert d.ledger.uncounted() == {}
    for scope in ("dc/core", "dc/order", "index"):
        assert sum(d.ledger.ops(scope).values()) > 0
    assert d.ledger.samples()["index"] == 8


def test_bad_input_is_refused_with_the_fix():
    with pytest.raises(ModelError, match=r"min_pts = 9 exceeds the 8 points"):
        disco_samples(SQUARES, TWO, dev(), min_pts=9)
    with pytest.raises(ModelError, match=r"labels have shape \(7,\)"):
        disco_samples(SQUARES, TWO[:7], dev())
    with pytest.raises(ModelError, match=r"min_pts = 0; expected an integer >= 1"):
        disco_samples(SQUARES, TWO, dev(), min_pts=0)
    with pytest.raises(ModelError, match="finite"):
        disco_samples(np.where(SQUARES == 9, np.nan, SQUARES), TWO, dev())


# -- the card's run: the protocol ------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_disco_prefers_the_truth_where_silhouette_prefers_kmeans(seed):
    # make_moons(400, noise=0.06) + 40 uniform background points labelled -1
    from sklearn.cluster import KMeans
    ps = data.make("moons", 440, 40 / 440, seed)
    labs = data.clusterings(ps, seed)
    dev = TorchDevice(TOY_GPU)
    dc = dc_structure(ps.x, 5, dev)
    score = {k: disco_score(ps.x, labs[k], dev, dc=dc) for k in ("gt", "gt_noise_merged")}
    km = KMeans(2, n_init=4, random_state=seed).fit_predict(ps.x)
    score["kmeans"] = disco_score(ps.x, km, dev, dc=dc)
    assert score["gt"] > score["kmeans"]
    assert score["gt"] > score["gt_noise_merged"]
    assert silhouette(ps.x, km) > silhouette(ps.x, ps.y)


def test_pcc_leaves_out_undefined_clusterings():
    # (1, 2, 3) against (1, 2, 3): r = 1 over the three defined entries
    assert pcc([1.0, np.nan, 2.0, 3.0], [0.1, 0.5, 0.2, 0.3]) == (pytest.approx(1.0), 3)
    r, n = pcc([1.0, 1.0, 1.0], [0.1, 0.2, 0.3])     # constant index: no correlation
    assert np.isnan(r) and n == 3


@pytest.mark.slow   # 13-26 s per data set here (load 6-11)
@pytest.mark.parametrize("dataset", ["moons", "circles"])
def test_disco_correlates_with_ari_better_than_silhouette(dataset):
    # the digest's miniature protocol, mean over 3 seeds at n = 500 (10% background)
    got = {"disco": [], "silhouette": []}
    for seed in range(3):
        cfg = DiscoConfig(n=500, seed=seed)
        res = protocol(data.make(dataset, cfg.n, cfg.noise_frac, seed), TorchDevice(TOY_GPU),
                       cfg)
        got["disco"].append(res["pcc_disco"])
        got["silhouette"].append(res["pcc_silhouette"])
    assert np.mean(got["disco"]) >= np.mean(got["silhouette"])
