"""The ID estimators: readings on spheres and a Gaussian (several seeds, k of n within the
band), agreement with scikit-dimension and with a naive numpy twin, Lambert's W, exact kNN,
the counts on a TorchDevice, and the errors."""
import numpy as np
import pytest
import torch
from conftest import TOY_GPU

import sim
from models.geo_inr_id import estimators as est
from sim.errors import ModelError

N = 2000        # points per sample (the digest's plan: 20k; 2000 keeps each fit < 1 s)
SEEDS = range(5)
NEED = 4        # at least 4 of the 5 seeds inside the band: no single lucky seed


def sphere(n, d, ambient, seed, noise=1e-4):
    """``n`` points uniform on the unit ``d``-sphere (in R^(d+1)), mapped into R^ambient by a
    random N(0, 1) linear map, plus N(0, noise^2) per coordinate (the digest's N(0, 1e-4)
    read as its scale)."""
    rng = np.random.default_rng([seed, d, ambient])
    p = rng.standard_normal((n, d + 1))
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    return p @ rng.standard_normal((d + 1, ambient)) + noise * rng.standard_normal((n, ambient))


def readings(d, ambient=256):
    out = []
    for s in SEEDS:
        ids, _ = est.global_ids(torch.as_tensor(sphere(N, d, ambient, s)), ks=(20,))
        out.append(ids)
    return out


@pytest.fixture(scope="module")
def s2():
    return readings(2)


@pytest.fixture(scope="module")
def s5():
    return readings(5)


@pytest.mark.parametrize("name", ["mle_k20", "twonn"])
def test_mle_and_twonn_read_two_on_a_2_sphere_in_256_dims(s2, name):
    vals = np.array([r[name] for r in s2])
    assert (np.abs(vals - 2.0) <= 0.3).sum() >= NEED, vals


@pytest.mark.parametrize("name", ["mle_k20", "twonn"])
def test_mle_and_twonn_read_five_on_a_5_sphere_in_256_dims(s5, name):
    vals = np.array([r[name] for r in s5])
    assert (np.abs(vals - 5.0) <= 0.6).sum() >= NEED, vals


def test_fishers_reads_ten_on_a_10d_gaussian():
    vals = [est.fisher_s(torch.as_tensor(np.random.default_rng([s, 10]).standard_normal(
        (N, 10))))["dimension"] for s in SEEDS]
    assert (np.abs(np.array(vals) - 10.0) <= 1.5).sum() >= NEED, vals


def test_fishers_reads_a_sphere_as_its_ambient_dimension(s2, s5):
    # FisherS models a uniform ball/sphere in R^n: whitened S^d spans d + 1 directions, so
    # it reads d + 1 (3 and 6 here), not the manifold dimension d the kNN estimators read
    for rows, want in ((s2, 3.0), (s5, 6.0)):
        vals = np.array([r["fishers"] for r in rows])
        assert (np.abs(vals - want) <= 0.3).sum() >= NEED, vals


def naive_ids(x, k):
    """The dense twin: full distance matrix, sorted rows, the formulas of the docstring."""
    n = len(x)
    d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    t = np.sort(d, 1)[:, :k]
    m = np.array([(k - 1) / sum(np.log(t[i, -1] / t[i, j]) for j in range(k))
                  for i in range(n)])
    mu = np.sort(t[:, 1] / t[:, 0])[: int(n * 0.9)]
    f = np.arange(1, len(mu) + 1) / n
    xs, ys = np.log(mu), -np.log(1 - f)
    return 1 / np.mean(1 / m), float(np.linalg.lstsq(xs[:, None], ys, rcond=None)[0][0]), m


def test_matches_a_naive_dense_twin_with_chunks_not_dividing_n():
    x = sphere(203, 3, 16, 7, noise=1e-3)
    want_mle, want_two, want_pw = naive_ids(x, 10)
    dists, _ = est.knn(torch.as_tensor(x), 10, chunk=64)       # 203 = 3 x 64 + 11
    assert float(est.mle(dists)) == pytest.approx(want_mle, rel=1e-10)
    assert float(est.twonn(dists)) == pytest.approx(want_two, rel=1e-10)
    np.testing.assert_allclose(est.mle_pointwise(dists).numpy(), want_pw, rtol=1e-10)


def test_knn_is_exact_and_excludes_self():
    x = np.random.default_rng(1).standard_normal((50, 5))
    dists, idx = est.knn(torch.as_tensor(x), 4, chunk=7)
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    np.testing.assert_array_equal(idx.numpy(), np.argsort(d, 1)[:, :4])
    np.testing.assert_allclose(dists.numpy(), np.sort(d, 1)[:, :4], rtol=1e-12)


def test_lambert_w_matches_scipy():
    from scipy.special import lambertw
    z = np.array([0.0, 1e-8, 0.5, 1.0, np.e, 10.0, 1e4, 1e12, 1e100])
    np.testing.assert_allclose(est.lambert_w(torch.as_tensor(z)).numpy(),
                               lambertw(z).real, rtol=1e-12, atol=1e-15)


def test_counts_on_a_torch_device():
    dev = sim.device(TOY_GPU)
    n, d = 300, 8
    x = torch.as_tensor(sphere(n, 2, d, 3, noise=1e-3))
    ids, _ = est.global_ids(x, ks=(10,), dev=dev, chunk=128)
    ops = dev.ledger.total_ops
    # the distance GEMMs: every row against all n rows, d multiply-adds each: 300 x 300 x 8
    assert ops("id/knn")["mac_fp64"] == n * n * d
    # FisherS: the covariance x^T x (n d^2 = 19,200 MACs) and the eigen-decomposition's
    # 9 d^3 = 4,608 fp64 operations; whitened S^2 keeps 3 components, so the separability
    # Grams are n x n x 3 = 270,000 MACs
    assert ops("id/fishers/pca")["mac_fp64"] == n * d * d
    assert ops("id/fishers/eigh") == {"flop_fp64": 9 * d ** 3}
    assert ops("id/fishers/separability")["mac_fp64"] == n * d * 3 + n * n * 3
    assert dev.ledger.uncounted() == {}


def test_errors_name_the_input():
    with pytest.raises(ModelError, match=r"knn: k = 5 with N = 5 points; need 1 <= k < N"):
        est.knn(torch.zeros(5, 3, dtype=torch.float64), 5)
    dup = torch.as_tensor(np.repeat(np.random.default_rng(0).standard_normal((20, 3)), 2, 0))
    dists, _ = est.knn(dup, 3)
    with pytest.raises(ModelError, match="twonn: 40 points have distance 0 to their nearest "
                                         "neighbour"):
        est.twonn(dists)
    with pytest.raises(ModelError, match="mle_pointwise: 40 points have distance 0"):
        est.mle(dists)
    with pytest.raises(ModelError, match=r"fisher_s: points have shape \(2, 3\)"):
        est.fisher_s(torch.zeros(2, 3))
