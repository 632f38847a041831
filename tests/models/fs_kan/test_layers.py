"""FS layers: naive twins of eqs. (12) and (13), exact equivariance, parameter and op counts."""
import numpy as np
import pytest
import torch

import sim
from models.fs_kan.groups import cyclic, fixed, generated, natural, symmetric, tuples
from models.fs_kan.layers import FSLayer, bspline_basis
from models.fs_kan.model import n_parameters
from sim.errors import ModelError


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: one thread avoids OpenMP spin-waits on the shared 2-core machine (the
    conftest puts the thread count back after each test)."""
    torch.set_num_threads(1)


def naive_standard(layer, x):
    """Eq. (12) by loops: out_q = sum_p Phi^(O[q,p])(x_p), each sub-layer applied on its own."""
    o, w = layer.orbits.numpy(), layer._weights()
    feats = [layer._features(x[:, p:p + 1])[:, 0] for p in range(layer.n_in)]  # (B, F) each
    out = torch.zeros(x.shape[0], layer.n_out, layer.d_out, dtype=x.dtype)
    for q in range(layer.n_out):
        for p in range(layer.n_in):
            out[:, q] += feats[p] @ w[o[q, p]].T
    if layer.phi == "linear":
        out = out + layer.bias[layer.bias_index]
    return out


GROUPS = {"S_5": lambda: symmetric(5), "C_6": lambda: cyclic(6),
          "S_3xS_4": lambda: symmetric(3) * symmetric(4),
          "S_3xC_4": lambda: symmetric(3) * cyclic(4)}


@pytest.mark.parametrize("name", GROUPS)
@pytest.mark.parametrize("phi", ["kan", "linear"])
def test_standard_layer_matches_naive_twin(name, phi):
    torch.manual_seed(0)
    g = GROUPS[name]()
    a = natural(g)
    for out in (a, fixed(g)):
        layer = FSLayer(out, a, 2, 3, phi=phi).double()
        x = torch.randn(4, a.n_points, 2, dtype=torch.float64)
        with torch.no_grad():
            assert torch.allclose(layer(x), naive_standard(layer, x), atol=1e-12)


def test_non_all_pairs_plan_matches_naive_twin():
    # 2-tuples -> 2-tuples: diagonal-only orbits do not meet every input, so the layer
    # evaluates only the (input, orbit) pairs that occur (per-row weights path)
    torch.manual_seed(1)
    t2 = tuples(natural(symmetric(4)), 2)
    layer = FSLayer(t2, t2, 2, 2).double()
    assert layer.n_orbits == 15 and not layer.all_pairs
    # input (i, i) meets the 5 orbits whose p-slots are equal, input (i, j) the other 10
    assert layer.n_evaluations == 4 * 5 + 12 * 10
    x = torch.randn(3, 16, 2, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(layer(x), naive_standard(layer, x), atol=1e-12)


def test_efficient_set_layer_is_phi1_of_x_plus_phi2_of_the_sum():
    # eq. (13) for S_n: Phi_1(x_q) + Phi_2(sum_p x_p), n + 1 sub-layer evaluations
    torch.manual_seed(2)
    a = natural(symmetric(5))
    layer = FSLayer(a, a, 2, 3, efficient=True).double()
    assert layer.n_evaluations == 6
    x = torch.randn(4, 5, 2, dtype=torch.float64) * 0.3
    w = layer._weights()

    def phi(h, z):  # (B, d_in) -> (B, d_out)
        return layer._features(z[:, None])[:, 0] @ w[h].T
    want = torch.stack([phi(0, x[:, q]) + phi(1, x.sum(1)) for q in range(5)], 1)
    with torch.no_grad():
        assert torch.allclose(layer(x), want, atol=1e-12)


def random_equivariance_error(layer, out, inp, rng, trials=3):
    x = torch.randn(3, inp.n_points, layer.d_in, dtype=torch.float64) * 0.6
    worst = 0.0
    with torch.no_grad():
        y = layer(x)
        for _ in range(trials):
            el = inp.group.sample(rng)
            worst = max(worst, float((layer(inp.act(el, x)) - out.act(el, y)).abs().max()))
    return worst


@pytest.mark.parametrize("name", [*GROUPS, "2-tuples of S_4"])
def test_exact_equivariance_and_invariance_under_random_elements(name):
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    if name in GROUPS:
        g = GROUPS[name]()
        a = natural(g)
    else:
        a = tuples(natural(symmetric(4)), 2)
        g = a.group
    for out in (a, fixed(g)):
        for efficient in (False, True):
            for phi in ("kan", "linear"):
                layer = FSLayer(out, a, 2, 3, phi=phi, efficient=efficient).double()
                assert random_equivariance_error(layer, out, a, rng) < 1e-12


def test_equivariance_check_detects_a_layer_without_sharing():
    # a KA layer with no sharing (trivial group: one function per pair) is not S_n-equivariant
    torch.manual_seed(4)
    plain = natural(generated(np.arange(5)))
    layer = FSLayer(plain, plain, 2, 3).double()
    s5 = natural(symmetric(5))
    assert random_equivariance_error(layer, s5, s5, np.random.default_rng(0)) > 1e-3


def test_parameter_counts():
    a = natural(symmetric(4) * cyclic(3))                            # H = 2 * 3 = 6 orbits
    kan = FSLayer(a, a, 5, 7, grid=5, order=3)
    assert n_parameters(kan) == 6 * 5 * 7 * (5 + 3 + 2)              # H d_in d_out (G + k + 2)
    lin = FSLayer(a, a, 5, 7, phi="linear")
    assert n_parameters(lin) == 6 * 5 * 7 + 1 * 7                    # one bias per output orbit
    pool = FSLayer(fixed(a.group), a, 5, 7, grid=4)
    assert n_parameters(pool) == 1 * 5 * 7 * (4 + 3 + 2)


def test_bspline_basis_partition_of_unity_and_scipy():
    from scipy.interpolate import BSpline
    knots = torch.arange(-3, 9, dtype=torch.float64) * 0.4 - 1.0     # G=5 on [-1, 1], k=3
    x = torch.linspace(-1, 0.999, 101, dtype=torch.float64)
    b = bspline_basis(x, knots, 3)                                   # (101, 8)
    assert b.shape == (101, 8)
    assert torch.allclose(b.sum(-1), torch.ones(101, dtype=torch.float64), atol=1e-12)
    for i in (0, 3, 7):
        ref = BSpline.basis_element(knots[i:i + 5].numpy(), extrapolate=False)(x.numpy())
        assert np.allclose(b[:, i].numpy(), np.nan_to_num(ref), atol=1e-12)


def test_embedding_bag_placement_equals_indexing():
    torch.manual_seed(6)
    t2 = tuples(natural(symmetric(3)), 2)
    for efficient in (False, True):
        layer = FSLayer(t2, t2, 2, 3, efficient=efficient)
        x = torch.randn(5, 9, 2)
        fast = layer(x)
        layer.plain_gather = True
        assert torch.allclose(fast, layer(x), atol=1e-6)


def test_ledger_counts_of_one_layer(toy_gpu_path):
    a = natural(symmetric(6))
    dev = sim.device(toy_gpu_path)
    layer = dev.compile(FSLayer(a, a, 2, 4))
    x = dev.tensor(np.zeros((3, 6, 2), np.float32))
    dev.run(layer, x)
    ops = dev.ledger.total_ops("infer")
    # one GEMM: B*N rows x F = d_in (1 + G + k) = 2 * 9 features x H*d_out = 2*4 columns
    assert ops["mac_fp32"] == 3 * 6 * 18 * 8
    # placement: N_out x N_in gathered rows of B*d_out values, one add each
    assert ops["flop_fp32"] >= 6 * 6 * 3 * 4
    assert dev.ledger.uncounted() == {}


def test_layer_errors():
    a = natural(symmetric(4))
    with pytest.raises(ModelError, match="phi = 'relu'"):
        FSLayer(a, a, 2, 2, phi="relu")
    with pytest.raises(ModelError, match="d_out = 0"):
        FSLayer(a, a, 2, 0)
    with pytest.raises(ModelError, match=r"input has shape \(2, 5, 2\), expected \(B, 4, 2\)"):
        FSLayer(a, a, 2, 2)(torch.zeros(2, 5, 2))


def test_cost_of_embedding_bag_and_batch_norm(toy_gpu_path):
    # the costs.py entries this module needed: exact counts on tiny inputs
    dev = sim.device(toy_gpu_path)
    table = torch.randn(10, 5, requires_grad=True)
    idx = torch.tensor([[0, 1, 2, 3], [4, 5, 6, 9], [9, 9, 9, 9]])
    with dev.count("bag"):
        torch.nn.functional.embedding_bag(idx, table, mode="sum").sum().backward()
    # forward: 3 bags x 4 indices x 5 wide = 60 adds; backward scatters the same 60;
    # the .sum() reduction reads 3 x 5 = 15 elements
    assert dev.ledger.total_ops("bag")["flop_fp32"] == 60 + 60 + 15
    bn, x = torch.nn.BatchNorm1d(3), torch.randn(4, 3)
    with dev.count("bn"), torch.no_grad():
        bn(x)
    assert dev.ledger.total_ops("bn")["flop_fp32"] == 7 * 12    # 7 per element of (4, 3)
    assert dev.ledger.uncounted() == {}
