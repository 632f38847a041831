"""FS-KAN: orbit counts against the paper's formulas, exact equivariance, naive twins, counts."""

import numpy as np
import pytest
import torch

import models
from models.errors import DatasetError
from models.fs_kan import tasks
from models.fs_kan.groups import (
    cyclic,
    fixed,
    generated,
    natural,
    pair_orbits,
    point_orbits,
    symmetric,
    tuples,
)
from models.fs_kan.layers import FSLayer, bspline_basis
from models.fs_kan.model import (
    FSClassifier,
    FSConfig,
    FSNet,
    matched_baseline,
    n_parameters,
    simulate,
    task_action,
)
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

TOY = "tests/data/toy-gpu.toml"


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: one thread avoids OpenMP spin-waits on the shared 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def n_orbits(out, inp=None):
    return int(pair_orbits(out, inp or out).max()) + 1


def bell(k):  # Bell numbers by the Bell triangle
    row = [1]
    for _ in range(k):
        new = [row[-1]]
        for v in row:
            new.append(new[-1] + v)
        row = new
    return row[0]


# --- orbits ---------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 7, 12])
def test_orbit_counts_of_the_digest(n):
    assert n_orbits(natural(symmetric(n))) == 2                        # diagonal, off-diagonal
    assert n_orbits(natural(cyclic(n))) == n                           # offsets q - p mod n
    assert n_orbits(natural(symmetric(n) * symmetric(3))) == 4         # ratings matrices
    assert n_orbits(natural(symmetric(n) * cyclic(5))) == 2 * 5        # sets of signals: 2T
    assert n_orbits(natural(cyclic(n) * cyclic(4))) == n * 4           # images: C_H x C_W


def test_one_point_groups():
    assert n_orbits(natural(symmetric(1))) == 1 and n_orbits(natural(cyclic(1))) == 1


def test_invariant_orbits_and_trivial_group():
    for g in (symmetric(6), cyclic(6), symmetric(3) * cyclic(4), symmetric(2) * symmetric(5)):
        a = natural(g)
        assert n_orbits(fixed(g), a) == 1 and (point_orbits(a) == 0).all()  # transitive
    ident = generated(np.arange(5))                                    # trivial group: plain KAN
    assert n_orbits(natural(ident)) == 25
    assert (point_orbits(natural(ident)) == np.arange(5)).all()


@pytest.mark.parametrize("k,l,n", [(1, 1, 3), (2, 1, 4), (1, 2, 4), (2, 2, 4), (2, 2, 5)])
def test_tensor_orbits_are_bell_numbers(k, l, n):
    # S_n on [n]^k -> [n]^l: one orbit per partition of the k + l index slots (n >= k + l)
    a = natural(symmetric(n))
    assert n_orbits(tuples(a, l), tuples(a, k)) == bell(k + l)        # 2, 5, 5, 15, 15


def test_generated_group_dihedral():
    for n in (5, 6, 8):
        rot, ref = np.roll(np.arange(n), -1), (-np.arange(n)) % n
        assert n_orbits(natural(generated([rot, ref]))) == n // 2 + 1  # pair distances


def test_orbits_are_closed_under_every_generator():
    g = symmetric(3) * cyclic(4)
    a = natural(g)
    o = pair_orbits(a, a)
    for perm in a.generator_perms():
        assert np.array_equal(o[np.ix_(perm, perm)], o)                # O[g q, g p] = O[q, p]
    assert o[0, 0] == 0 and o.max() == 7                               # ids by first appearance


def test_group_errors():
    with pytest.raises(ModelError, match=r"generator 0 = \[0, 0, 1\] is not a permutation"):
        generated([[0, 0, 1]])
    with pytest.raises(ModelError, match="n = 0"):
        symmetric(0)
    with pytest.raises(ModelError, match="same Group object"):
        pair_orbits(natural(symmetric(3)), natural(symmetric(3)))


# --- layers ---------------------------------------------------------------------------
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


def test_network_is_invariant():
    rng = np.random.default_rng(5)
    for task in ("signal-sets", "fashion-points"):
        action, d_in, n_classes = task_action(task)
        for phi in ("kan", "linear"):
            torch.manual_seed(5)
            net = FSNet(action, d_in, n_classes, FSConfig(phi=phi, widths=(4, 4), inv_width=4))
            net = net.double()
            net.train()
            net(torch.randn(8, action.n_points, d_in, dtype=torch.float64))  # move BN stats
            net.eval()
            x = torch.randn(4, action.n_points, d_in, dtype=torch.float64)
            with torch.no_grad():
                y = net(x)
                for _ in range(2):
                    el = action.group.sample(rng)
                    assert float((net(action.act(el, x)) - y).abs().max()) < 1e-10


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


def test_ledger_counts_of_one_layer():
    a = natural(symmetric(6))
    dev = TorchDevice(TOY)
    layer = dev.compile(FSLayer(a, a, 2, 4))
    x = dev.tensor(np.zeros((3, 6, 2), np.float32))
    dev.run(layer, x)
    ops = dev.ledger.total_ops("infer")
    # one GEMM: B*N rows x F = d_in (1 + G + k) = 2 * 9 features x H*d_out = 2*4 columns
    assert ops["mac_fp32"] == 3 * 6 * 18 * 8
    # placement: N_out x N_in gathered rows of B*d_out values, one add each
    assert ops["flop_fp32"] >= 6 * 6 * 3 * 4
    assert dev.ledger.uncounted() == {}


def test_matched_baseline_has_about_the_same_parameters():
    for task in ("signal-sets", "fashion-points"):
        action, d_in, n_classes = task_action(task)
        cfg = FSConfig(widths=(8, 8), inv_width=8)
        base = matched_baseline(action, d_in, n_classes, cfg)
        p_kan = n_parameters(FSNet(action, d_in, n_classes, cfg))
        p_base = n_parameters(FSNet(action, d_in, n_classes, base))
        assert base.phi == "linear" and base.widths[0] > 8
        assert abs(p_base - p_kan) / p_kan < 0.03


def test_layer_errors():
    a = natural(symmetric(4))
    with pytest.raises(ModelError, match="phi = 'relu'"):
        FSLayer(a, a, 2, 2, phi="relu")
    with pytest.raises(ModelError, match="d_out = 0"):
        FSLayer(a, a, 2, 0)
    with pytest.raises(ModelError, match=r"input has shape \(2, 5, 2\), expected \(B, 4, 2\)"):
        FSLayer(a, a, 2, 2)(torch.zeros(2, 5, 2))


# --- tasks ----------------------------------------------------------------------------
def test_signal_sets():
    x, y = tasks.signal_sets(30, n=4, length=10, noise=0.0, seed=1)
    assert x.shape == (30, 40, 1) and x.dtype == np.float32 and y.shape == (30,)
    sets = x.reshape(30, 4, 10)
    assert np.array_equal(sets, np.repeat(sets[:, :1], 4, axis=1))    # no noise: equal copies
    sq = sets[y == 1]
    assert np.allclose(np.abs(sq), np.abs(sq[:, :, :1]))              # square: +-amplitude
    x2, y2 = tasks.signal_sets(30, n=4, length=10, noise=0.5, seed=1)
    assert np.array_equal(y, y2) and not np.allclose(x, x2)            # same draw plus noise
    with pytest.raises(DatasetError, match="n = 0"):
        tasks.signal_sets(5, n=0)


def test_images_to_point_sets():
    img = np.zeros((2, 4, 5), np.float32)
    img[0, 1, 2], img[0, 3, 4] = 0.9, 0.5                              # two bright pixels
    img[1] = np.linspace(0, 1, 20).reshape(4, 5)
    pts = tasks.images_to_point_sets(img, n_points=6, threshold=0.3, seed=0)
    assert pts.shape == (2, 6, 3) and pts.min() >= -1 and pts.max() <= 1
    # image 0: only its two bright pixels, reused cyclically; (col, row) scaled to [-1, 1]
    # (row 1, col 2, 0.9) -> (2/4*2-1, 1/3*2-1, 0.9*2-1); (row 3, col 4, 0.5) -> (1, 1, 0)
    got = {tuple(round(float(v), 4) for v in p) for p in pts[0]}
    assert got == {(0.0, -0.3333, 0.8), (1.0, 1.0, 0.0)}
    # image 1: 6 distinct pixels, all brighter than the threshold
    assert len({tuple(p) for p in pts[1]}) == 6 and (pts[1][:, 2] > 2 * 0.3 - 1).all()
    with pytest.raises(DatasetError, match="expected \\(N, H, W\\)"):
        tasks.images_to_point_sets(np.zeros((3, 4)))


# --- classifier, simulate, export ------------------------------------------------------
def test_classifier_learns_and_is_seeded():
    action, d_in, n_classes = task_action("signal-sets")
    # the signal task with little noise: learnable in a few steps
    x, y = tasks.signal_sets(64, n=6, length=12, noise=0.2, seed=0)
    xt, yt = tasks.signal_sets(300, n=6, length=12, noise=0.2, seed=1)
    cfg = FSConfig(widths=(4,), inv_width=4, steps=30, lr=1e-2, seed=7)
    a = FSClassifier(action, d_in, n_classes, cfg, TorchDevice(TOY)).fit(x, y)
    b = FSClassifier(action, d_in, n_classes, cfg, TorchDevice(TOY)).fit(x, y, count=False)
    c = FSClassifier(action, d_in, n_classes, cfg, TorchDevice(TOY)).fit(x, y, count=False)
    for pa, pb, pc in zip(a.net.parameters(), b.net.parameters(), c.net.parameters()):
        assert torch.equal(pb, pc)                                     # same seed, same result
        assert torch.allclose(pa, pb, atol=1e-5)                       # counting changes ~nothing
    assert a.history[-1]["train_loss"] < 0.8 * a.history[0]["train_loss"]
    acc = a.evaluate(xt, yt)["accuracy"]
    print("accuracy", acc)
    assert acc > 0.45                                                  # chance: 1/3
    led = a.device.ledger
    assert led.samples() == {"train": 64 * 15, "infer": 300}           # 30 steps = 15 epochs
    assert led.total_ops("train")["mac_fp32"] > 0 and led.uncounted() == {}
    with pytest.raises(ModelError, match=r"x has shape \(3, 72\), expected \(N, 72, 1\)"):
        a.fit(np.zeros((3, 72), np.float32), np.zeros(3, np.int64))
    with pytest.raises(ModelError, match="labels span 0..5"):
        a.evaluate(x[:2], np.array([0, 5]))


def test_config_and_task_errors():
    with pytest.raises(ModelError, match="phi = 'mlp'"):
        FSConfig(phi="mlp")
    with pytest.raises(ModelError, match="steps = 0"):
        FSConfig(steps=0)
    with pytest.raises(ModelError, match="unknown FS-KAN task 'cifar'"):
        simulate(profile=TOY, dataset="cifar")


def test_registered_card():
    card = models.get("fs-kan")
    assert card.simulate is simulate and card.exports == ("onnx",)
    assert set(card.datasets) == {"signal-sets", "fashion-points"}


def test_onnx_export_of_a_network(tmp_path):
    from deploy.onnx_export import check_onnx, export_onnx
    action, d_in, n_classes = task_action("signal-sets")
    torch.manual_seed(8)
    for efficient in (False, True):
        net = FSNet(action, d_in, n_classes, FSConfig(widths=(4,), inv_width=4,
                                                      efficient=efficient)).eval()
        for m in net.modules():
            if isinstance(m, FSLayer):
                m.plain_gather = True
        path = export_onnx(net, torch.randn(2, 72, 1), tmp_path / f"fs{efficient}.onnx",
                           input_names=["points"])
        assert check_onnx(path, net, torch.randn(5, 72, 1)) < 1e-4     # dynamic batch 5 != 2


@pytest.mark.slow
def test_simulate_quick_and_cli_export(tmp_path):
    from deploy.cli import main
    run = simulate(profile=TOY, dataset="signal-sets", seed=0)
    assert run.metrics["parameters"] > 0 and run.ledger.uncounted() == {}
    assert abs(run.metrics["parameters"] - run.metrics["baseline_parameters"]) < \
        0.03 * run.metrics["parameters"]
    assert main(["export", "fs-kan", "--target", "onnx", "--out",
                 str(tmp_path / "fs.onnx")]) == 0
    assert (tmp_path / "fs.onnx").stat().st_size > 0


def test_summarize_means_and_wins():
    from models.fs_kan.model import summarize
    rows = [{"n_train": 10, "fskan_accuracy": a, "baseline_accuracy": b}
            for a, b in ((0.5, 0.4), (0.3, 0.4), (0.7, 0.4))]
    rows.append({"n_train": 40, "fskan_accuracy": 0.9, "baseline_accuracy": 0.8})
    s = summarize(rows)
    assert list(s) == [10, 40]
    assert s[10]["fskan_mean"] == pytest.approx(0.5) and s[10]["wins"] == 2
    assert s[10]["gain"] == pytest.approx(0.1) and s[10]["seeds"] == 3
    assert s[40]["wins"] == 1 and s[40]["baseline_std"] == 0.0


def test_experiment_runs_the_sweep(monkeypatch):
    import models.fs_kan.model as fsm
    monkeypatch.setattr(fsm, "EXPERIMENT_QUICK",
                        {"sizes": (20, 40), "seeds": (0,), "steps": 3, "n_test": 30})
    run = fsm.experiment(quick=True, profile=TOY, task="signal-sets")
    assert set(run.metrics) >= {"fskan_n20", "baseline_n40", "gain_n40", "baseline_train_macs"}
    # 20 sets: 1 batch per epoch -> 3 epochs; 40 sets: 2 batches -> 2 epochs
    assert run.ledger.samples() == {"train": 20 * 3 + 40 * 2, "infer": 2 * 30}
    assert run.ledger.uncounted() == {}


def test_cost_of_embedding_bag_and_batch_norm():
    # the costs.py entries this module needed: exact counts on tiny inputs
    dev = TorchDevice(TOY)
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
