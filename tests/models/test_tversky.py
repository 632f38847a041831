"""Tversky projection: naive twin of every reduction, XOR in one layer, drop-in, counts, export."""
import itertools

import numpy as np
import pytest
import torch
from torch import nn

import models
from models.tversky import model as tv_model
from models.tversky.layer import (
    DIFFERENCES,
    INTERSECTIONS,
    SIMILARITIES,
    TverskyProjection,
    tversky_similarity,
)
from models.tversky.model import TverskyHeadConfig, simulate
from models.tversky.xor import fit_xor
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

TOY = "tests/data/toy-gpu.toml"


def naive_similarity(x, y, bank, theta, alpha, beta, sim, inter, diff):
    """Per pair and per feature, in float64 Python loops: the digest's definitions."""
    out = np.zeros((len(x), len(y)))
    for i, j in itertools.product(range(len(x)), range(len(y))):
        a, b = x[i], y[j]
        sa, sb = [float(a @ f) for f in bank], [float(b @ f) for f in bank]
        ma = [s if s > 0 else 0.0 for s in sa]
        mb = [s if s > 0 else 0.0 for s in sb]
        ba, bb = [float(s > 0) for s in sa], [float(s > 0) for s in sb]
        ia = sum(m * q for m, q in zip(ma, bb))   # a's salience on features b has too
        ib = sum(q * m for q, m in zip(ba, mb))
        common = {"product": sum(p * q for p, q in zip(ma, mb)), "min": min(ia, ib),
                  "max": max(ia, ib), "mean": (ia + ib) / 2, "gmean": np.sqrt(ia * ib),
                  "softmin": -np.logaddexp(-ia, -ib)}[inter]

        def minus(m1, b2, i1, i2):
            base = sum(m * (1 - q) for m, q in zip(m1, b2))
            return base + ((i1 - i2) if (diff == "substractmatch" and i1 > i2) else 0.0)
        a_only, b_only = minus(ma, bb, ia, ib), minus(mb, ba, ib, ia)
        if sim == "contrast":
            out[i, j] = theta * common - alpha * a_only - beta * b_only
        else:
            out[i, j] = common / (common + alpha * a_only + beta * b_only + 1)
    return out


@pytest.mark.parametrize("sim,inter,diff", list(itertools.product(SIMILARITIES, INTERSECTIONS,
                                                                   DIFFERENCES)))
def test_vectorised_equals_naive(sim, inter, diff):
    g = torch.Generator().manual_seed(1)
    x, y, bank = (torch.randn(5, 3, generator=g, dtype=torch.float64),
                  torch.randn(4, 3, generator=g, dtype=torch.float64),
                  torch.randn(6, 3, generator=g, dtype=torch.float64))
    got = tversky_similarity(x, y, bank, 1.3, 0.7, 0.2, similarity=sim,
                             intersection_reduction=inter, difference_reduction=diff)
    want = naive_similarity(x.numpy(), y.numpy(), bank.numpy(), 1.3, 0.7, 0.2, sim, inter, diff)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-9, atol=1e-12)


def test_symmetry_only_when_alpha_equals_beta():
    g = torch.Generator().manual_seed(2)
    x, bank = torch.randn(6, 4, generator=g), torch.randn(8, 4, generator=g)
    s = tversky_similarity(x, x, bank, 1.0, 0.5, 0.5)
    torch.testing.assert_close(s, s.T)
    a = tversky_similarity(x, x, bank, 1.0, 0.9, 0.1)
    assert (a - a.T).abs().max() > 1e-3


def test_one_tversky_layer_fits_xor_where_linear_cannot():
    # seed 8, K = 4: found by the sweep in bench/tversky.py (K in 1..16, 10 seeds)
    acc, loss = fit_xor(TverskyProjection(2, 2, 4, seed=8))
    assert acc == 1.0 and loss < 0.01
    for seed in range(3):  # XOR is not linearly separable: at most 3 of 4 points, any seed
        torch.manual_seed(seed)
        lin_acc, lin_loss = fit_xor(nn.Linear(2, 2), steps=500)  # converged by then
        assert lin_acc <= 0.75 and lin_loss > 0.4


def test_drop_in_shapes_gradients_and_parameters():
    layer = TverskyProjection(8, 5, 3, seed=0)
    assert layer(torch.randn(2, 7, 8)).shape == (2, 7, 5)          # like nn.Linear
    assert layer(torch.randn(8)).shape == (5,)
    wide = TverskyProjection(8, 5, 3, dtype=torch.float64)                # nn.Linear's kwargs
    assert wide(torch.randn(4, 8, dtype=torch.float64)).dtype == torch.float64
    # a signed bank: with the official U(0, 1) bank and prototypes every prototype has every
    # feature at the start, so the x-only term (alpha's gradient) is exactly zero there
    torch.manual_seed(0)
    bank = nn.Parameter(torch.randn(6, 8))
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), TverskyProjection(8, 3, feature_bank=bank))
    net(torch.randn(10, 4)).sum().backward()
    tl = net[2]
    for p in (tl.feature_bank, tl.prototypes, tl.theta, tl.alpha, tl.beta):
        assert p.grad is not None and p.grad.abs().sum() > 0
    # P d + K d + 3 = 5*8 + 3*8 + 3
    assert sum(p.numel() for p in layer.parameters()) == 67
    shared = TverskyProjection(8, 4, feature_bank=layer.feature_bank)  # one bank, two layers
    both = nn.ModuleList([layer, shared])
    assert sum(p.numel() for p in both.parameters()) == 67 + 4 * 8 + 3


def test_ledger_counts_exact():
    n, d, k, p = 7, 8, 3, 5
    dev = TorchDevice(TOY)
    layer = dev.compile(TverskyProjection(d, p, k, seed=0))
    dev.run(layer, torch.randn(n, d))
    # projections (n + p) K d, then intersection, x-only and prototype-only products: 3 n K P
    assert dev.ledger.total_ops("infer")["mac_fp32"] == (n + p) * k * d + 3 * n * k * p
    assert dev.ledger.uncounted() == {}


def test_bad_inputs():
    layer = TverskyProjection(4, 2, 3)
    with pytest.raises(ModelError, match=r"x has shape \(5, 3\), expected \(\*, 4\)"):
        layer(torch.zeros(5, 3))
    with pytest.raises(ModelError, match="intersection_reduction = 'median'"):
        TverskyProjection(4, 2, intersection_reduction="median")
    with pytest.raises(ModelError, match="difference_reduction"):
        TverskyProjection(4, 2, difference_reduction="xor")
    with pytest.raises(ModelError, match="bank_size = 0"):
        TverskyProjection(4, 2, 0)
    with pytest.raises(ModelError, match=r"feature_bank has shape \(3, 5\), expected \(K, 4\)"):
        TverskyProjection(4, 2, feature_bank=nn.Parameter(torch.zeros(3, 5)))
    with pytest.raises(ModelError, match=r"prototypes has shape \(3, 4\), expected \(2, 4\)"):
        TverskyProjection(4, 2, prototypes=nn.Parameter(torch.zeros(3, 4)))
    with pytest.raises(ModelError, match="encoder = 'resnet'"):
        TverskyHeadConfig(encoder="resnet")
    with pytest.raises(ModelError, match="dataset 'digits'"):
        simulate(TOY, dataset="digits")
    with pytest.raises(ModelError, match=r"x has shape \(3, 10\), expected \(N, 784\)"):
        tv_model._check_xy(np.zeros((3, 10)), None, "test")


SMALL = {"train": 2000, "test": 500, "epochs": 4, "width": 8, "lr": 1e-2}


@pytest.fixture(scope="module")
def small_run(fashion_mnist):
    return simulate(TOY, seed=0, **SMALL)


def test_simulate_learns_and_counts(small_run):
    m, led = small_run.metrics, small_run.ledger
    assert models.get("tversky").simulate is simulate
    assert m["tversky_test_accuracy"] > 0.5 and m["linear_test_accuracy"] > 0.5  # chance: 0.1
    assert m["tversky_data_domain_test_accuracy"] > 0.3        # chance is 0.1
    # head parameters: P d + K d + 3 = 10*64 + 64*64 + 3; linear 64*10 + 10
    assert m["tversky_head_parameters"] == 10 * 64 + 64 * 64 + 3
    assert m["linear_head_parameters"] == 650
    assert led.samples()["encode"] == 2000 and led.samples()["infer"] == 500
    assert led.samples()["train/tversky"] == 4 * 2000
    assert led.uncounted() == {}
    assert small_run.traces["tversky_prototypes"].shape == (10, 28, 28)
    fig = tv_model.prototype_figure(small_run)
    assert len(fig.axes) == 20


def test_seeded_runs_identical(small_run):
    again = simulate(TOY, seed=0, **{**SMALL, "visualise": False})
    assert again.metrics["tversky_test_accuracy"] == small_run.metrics["tversky_test_accuracy"]
    np.testing.assert_array_equal(again.traces["tversky_train_loss"],
                                  small_run.traces["tversky_train_loss"])


def test_onnx_export_matches_torch(tmp_path, fashion_mnist):
    import onnxruntime as ort
    path = tv_model.export("onnx", tmp_path / "tv.onnx", train=800, epochs=1, width=8)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((3, 784), dtype=np.float32)
    (out,) = sess.run(None, {"pixels": x})
    assert out.shape == (3, 10) and np.isfinite(out).all()


def test_prototypes_reach_run_file_and_report(small_run, tmp_path):
    from deploy.report import html_report
    from deploy.runfile import read_run, write_result
    run = read_run(write_result(tmp_path / "tv.h5", small_run))   # the toy profile object
    assert run.profile.label == small_run.profile.label and run.profile.name == "toy-gpu"
    np.testing.assert_array_equal(run.traces["linear_prototypes"],
                                  small_run.traces["linear_prototypes"])
    html = html_report(run, [run.ledger.price(run.profile)], tmp_path / "tv.html").read_text()
    assert 'alt="tversky_prototypes"' in html and 'alt="linear_prototypes"' in html


def test_char_gpt_parameter_counts_exact():
    from models.tversky.gpt import CharGPT, CharGPTConfig
    v, t, d, k, layers = 50, 16, 32, 24, 2
    emb = v * d + t * d
    attn = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d      # LN, qkv, out, LN
    mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)
    linear = CharGPT(CharGPTConfig(vocab=v, block=t, width=d, bank_size=k))
    assert linear.n_parameters == emb + layers * (attn + mlp) + 2 * d   # tied head: 0 more
    # Tversky: each MLP stack -> d x d prototypes + 3 scalars; one shared bank K d; the head
    # adds only its 3 scalars (prototypes = token embeddings)
    tv = CharGPT(CharGPTConfig(vocab=v, block=t, width=d, bank_size=k, tversky="all"))
    assert tv.n_parameters == emb + layers * (attn + d * d + 3) + 2 * d + k * d + 3
    head = CharGPT(CharGPTConfig(vocab=v, block=t, width=d, bank_size=k, tversky="head"))
    assert head.n_parameters == linear.n_parameters + k * d + 3
    ids = torch.randint(0, v, (3, t))
    assert tv(ids).shape == (3, t, v) and linear(ids).shape == (3, t, v)
    with pytest.raises(ModelError, match="sequence length 17 exceeds the context 16"):
        tv(torch.zeros(1, 17, dtype=torch.int64))
    with pytest.raises(ModelError, match="tversky = 'mlp'"):
        CharGPTConfig(vocab=v, tversky="mlp")
