"""KLAS: LS stitching, KL probe scores, stitch identity, ledger FLOPs, selection, export, errors."""
import numpy as np
import pytest
import torch

import models
from models import klas
from models.klas import scores as sc
from models.klas.experiment import KLASConfig, run
from models.klas.stitch import StitchedViT, StitchLayer, least_squares
from models.klas.vit import TinyViT
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

TOY = "tests/data/toy-gpu.toml"


def _vit(dim, depth=3, heads=2, seed=0, patch=7):
    torch.manual_seed(seed)
    return TinyViT(dim, depth, heads, patch=patch).eval()


def test_registered_with_onnx_export():
    card = models.get("klas")
    assert card.simulate is klas.simulate and card.exports == ("onnx",)
    assert set(card.device_kinds) == {"gpu", "cpu"} and card.default_profile == "a100"


def test_ls_stitch_reproduces_an_exactly_linear_map():
    g = torch.Generator().manual_seed(1)
    src = torch.randn(40, 17, 8, generator=g)                    # 680 tokens of width 8
    w, b = torch.randn(12, 8, generator=g), torch.randn(12, generator=g)
    dst = src @ w.T + b                                           # exactly linear target
    layer = StitchLayer(8, 12).ls_init(src, dst)
    with torch.no_grad():
        assert torch.allclose(layer(src), dst, atol=1e-4)
    assert torch.allclose(layer.weight, w, atol=1e-4) and torch.allclose(layer.bias, b, atol=1e-4)
    # a non-linear target is not reproduced exactly: the residual is what LS leaves
    w2, b2 = least_squares(src, torch.tanh(dst))
    assert float((src @ w2.T + b2 - torch.tanh(dst)).abs().max()) > 1e-2


def test_kl_of_identical_probe_outputs_is_zero_and_matches_the_definition():
    g = torch.Generator().manual_seed(2)
    lp = torch.log_softmax(torch.randn(3, 50, 10, generator=g), -1)
    assert sc.mean_kl(lp[0], lp[0]) == 0.0
    th = sc.theta_matrix(lp, lp)
    assert np.allclose(np.diag(th), 0.0, atol=1e-12) and (th[~np.eye(3, dtype=bool)] > 0).all()
    p, q = lp[0].double().exp().numpy(), lp[1].double().exp().numpy()
    naive = np.mean([np.sum(p[n] * np.log(p[n] / q[n])) for n in range(50)])
    assert th[0, 1] == pytest.approx(naive, rel=1e-9)
    assert sc.mean_kl(lp[0], lp[1]) == pytest.approx(naive, rel=1e-5)


def test_stitch_score_divides_by_the_next_block_change():
    theta_fg = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])      # (n_f=2, n_g=3)
    theta_gg = np.array([[0.0, 0.5, 9.0], [9.0, 0.0, 0.25], [9.0, 9.0, 0.0]])
    gam = sc.stitch_scores(theta_fg, theta_gg)                     # j = 1, 2 only
    assert np.allclose(gam, [[1.0 / 0.5, 2.0 / 0.25], [4.0 / 0.5, 5.0 / 0.25]])


def test_identity_stitch_between_identical_anchors_is_the_anchor():
    f = _vit(16)
    x = torch.rand(5, 784)
    for i in (1, 2):
        eye = StitchLayer(16, 16)
        with torch.no_grad():
            eye.weight.copy_(torch.eye(16))
            eye.bias.zero_()
        with torch.no_grad():
            assert torch.allclose(StitchedViT(f, f, i, i, eye)(x), f(x), atol=1e-6)
    # and LS init between an anchor and itself finds that identity
    outs = f.block_outputs(torch.rand(30, 784))
    ls = StitchLayer(16, 16).ls_init(outs[0], outs[0])
    assert torch.allclose(ls.weight, torch.eye(16), atol=1e-3)


def test_stitched_flops_in_the_ledger_are_front_plus_stitch_plus_back():
    f, g = _vit(16), _vit(24, seed=1)
    dev = TorchDevice(TOY)
    x = torch.rand(4, 784)
    net = StitchedViT(f, g, 2, 1, StitchLayer(16, 24))
    dev.run(net, x, scope="s")
    dev.run(f, x, scope="f")
    dev.run(g, x, scope="g")
    led = dev.ledger

    def mac(prefix):  # module scopes are dotted paths: "s/front.0.qkv/forward"
        return sum(led.ops(s).get("mac_fp32", 0) for s in led.scopes()
                   if s == prefix or s.startswith((prefix + ".", prefix + "/")))
    # stitch layer: 4 samples x 17 tokens x 16 x 24 MACs
    assert mac("s/stitch") == 4 * 17 * 16 * 24
    assert mac("s/embed") == 4 * 16 * 49 * 16                     # 16 patches of 49 px -> 16
    assert mac("s/embed") + mac("s/front") == mac("f/embed") + mac("f/blocks.0") + mac("f/blocks.1")
    assert mac("s/back") == mac("g/blocks.1") + mac("g/blocks.2")
    assert mac("s") == (mac("f/embed") + mac("f/blocks.0") + mac("f/blocks.1") + mac("s/stitch")
                        + mac("g/blocks.1") + mac("g/blocks.2") + mac("g/norm") + mac("g/head"))
    assert led.uncounted() == {}


def test_bucket_selection_keeps_each_argmin_and_the_tau_band():
    S = [sc.Stitch(0, 1, i, 1) for i in range(1, 6)]
    flops = dict(zip(S, [1.0, 1.5, 2.0, 3.2, 3.9]))
    gamma = dict(zip(S, [2.0, 2.08, 3.0, 5.0, 9.0]))
    edges = sc.bucket_edges(1.0, 4.0, 2)                          # [1, 2.5), [2.5, 4]
    chosen = sc.select_klas(S, gamma, flops, edges, tau=0.05)
    assert chosen == [S[0], S[1], S[3]]                           # 2.08 <= 1.05 * 2.0; 3.0 not
    assert sc.select_klas(S, gamma, flops, edges, tau=0.0) == [S[0], S[3]]
    assert sc.bucket_of(4.0, edges) == 1 and sc.bucket_of(4.01, edges) == -1


def test_anchor_selection_snnet_heuristic_and_frontier():
    assert sc.select_anchor_pairs({(0, 1): .1, (1, 2): .1, (0, 2): .05}, 3) == [(0, 2)]
    assert sc.select_anchor_pairs({(0, 1): .1, (1, 2): .2, (0, 2): .3}, 3) == [(0, 1), (1, 2)]
    sn = sc.snnet_stitches([4, 4, 4])
    # per nearest pair: i=1: j=1; i=2: 1,2; i=3: 1,2,3; i=4: 2,3 -> 8; pairs (0,1), (1,2)
    assert len(sn) == 16 and {(s.front, s.back) for s in sn} == {(0, 1), (1, 2)}
    assert all(s.i - 2 <= s.j <= s.i for s in sn)
    # best accuracy at budget F: 0.5 on [1, 2), 0.7 on [2, 3), 0.8 on [3, 4]
    auc = sc.frontier_auc([(1, .5), (2, .7), (2.5, .6), (3, .8), (5, .99)], 1, 4)
    assert auc == pytest.approx((0.5 + 0.7 + 0.8) / 3)


def test_linear_cka_is_one_for_identical_and_invariant_to_rotation():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(200, 6, generator=g)
    q, _ = torch.linalg.qr(torch.randn(6, 6, generator=g))
    assert sc.linear_cka(x, x) == pytest.approx(1.0)
    assert sc.linear_cka(x, 3 * x @ q) == pytest.approx(1.0)
    assert sc.linear_cka(x, torch.randn(200, 6, generator=g)) < 0.2


def test_stitched_model_exports_to_onnx(tmp_path):
    f, g = _vit(16), _vit(24, seed=1)
    net = StitchedViT(f, g, 2, 1, StitchLayer(16, 24)).eval()
    path = klas.export_stitched(net, tmp_path / "stitched.onnx")
    assert path.exists() and path.stat().st_size > 10_000


TINY = dict(widths=(8, 12, 16), heads=(2, 2, 2), depth=2, n_train=256, n_val=64, n_test=128,
            ls_samples=32, anchor_epochs=1, probe_epochs=1, stitch_steps=3, supernet_steps=6,
            n_buckets=2, batch_size=32)


@pytest.fixture(scope="module")
def tiny_run(fashion_mnist):
    return run(KLASConfig.quick(**TINY), TOY)


def test_tiny_pipeline_runs_end_to_end_and_counts_everything(tiny_run):
    cfg, res = tiny_run["config"], tiny_run
    assert len(res["stitches"]) == 3 * 2 * 1                      # 3 pairs x i in 1..2 x j = 1
    led = res["device"].ledger
    assert led.uncounted() == {}
    for scope in ("train/anchor0", "probe/anchor2", "score/anchor1", "finetune/s01-1-1",
                  "supernet/klas", "supernet/snnet", "infer/ls/s12-2-1"):
        assert led.total_ops(scope).get("mac_fp32", 0) > 0, scope
    fl = res["anchor_flops"]
    assert fl[0] < fl[1] < fl[2]
    for s, row in res["table"].items():                           # FLOPs the ledger recorded
        mac = led.total_ops(f"infer/ls/{s.name}")["mac_fp32"]
        assert row["flops"] >= 2 * mac / cfg.n_test and row["gamma"] >= 0
    assert res["selected"]["klas"] and all(0 <= r["auc"] <= 1 for r in res["supernets"].values())
    metrics, config, traces = klas.summarise(res)
    assert traces["gamma"].shape == (6,) and "spearman_klas_gamma_vs_acc_ft" in metrics


def test_same_seed_same_scores_and_accuracies(tiny_run):
    again = run(KLASConfig.quick(**TINY), TOY)
    for s, row in tiny_run["table"].items():
        for key in ("gamma", "cka", "flops", "acc_ls", "acc_ft"):
            assert again["table"][s][key] == row[key], (s.name, key)
    assert again["supernets"]["klas"]["acc"] == tiny_run["supernets"]["klas"]["acc"]


def test_bad_inputs_are_named():
    f, g = _vit(16), _vit(24, seed=1)
    with pytest.raises(ModelError, match=r"i = 0; expected an int in 1..3"):
        StitchedViT(f, g, 0, 1)
    with pytest.raises(ModelError, match=r"j = 3; expected an int in 1..2"):
        StitchedViT(f, g, 1, 3)
    with pytest.raises(ModelError, match=r"expected 16 -> 24"):
        StitchedViT(f, g, 1, 1, StitchLayer(16, 16))
    with pytest.raises(ModelError, match="share the patch layout"):
        StitchedViT(f, _vit(24, patch=4), 1, 1)
    with pytest.raises(ModelError, match="leading .* dims must match"):
        least_squares(torch.zeros(5, 17, 4), torch.zeros(6, 17, 4))
    with pytest.raises(ModelError, match="give >= 5 tokens"):
        least_squares(torch.zeros(3, 4), torch.zeros(3, 2))
    with pytest.raises(ModelError, match="src has width 8"):
        StitchLayer(16, 24).ls_init(torch.zeros(10, 17, 8), torch.zeros(10, 17, 24))
    lp = torch.log_softmax(torch.zeros(4, 10), -1)
    with pytest.raises(ModelError, match="expected the same"):
        sc.mean_kl(lp, lp[:, :5])
    with pytest.raises(ModelError, match="not log-distributions"):
        sc.mean_kl(lp, torch.zeros(4, 10))
    with pytest.raises(ModelError, match="increasing widths"):
        KLASConfig(widths=(64, 32, 16))
    with pytest.raises(ModelError, match="stitch_steps = 0"):
        KLASConfig(stitch_steps=0)
    with pytest.raises(ModelError, match="tau = -0.1"):
        KLASConfig(tau=-0.1)
    with pytest.raises(ModelError, match="dataset 'digits' is not supported"):
        klas.simulate(dataset="digits")
    with pytest.raises(ModelError, match="equal depths"):
        sc.snnet_stitches([3, 4])
    with pytest.raises(ModelError, match="not a multiple of patch 5"):
        TinyViT(8, 2, 2, patch=5)


@pytest.mark.slow
def test_cli_simulate_and_export_quick(tmp_path):
    """The quick experiment through the CLI: a run file, and an ONNX stitch onnxruntime agrees with."""
    from deploy.cli import main
    from deploy.runfile import read_run
    out = tmp_path / "klas.h5"
    assert main(["simulate", "klas", "--profile", "a100", "--out", str(out)]) == 0
    run_ = read_run(out)
    assert run_.metrics["anchor2_accuracy"] > run_.metrics["anchor0_accuracy"] - 0.05
    assert run_.metrics["supernet_auc_klas"] > 0.5 and run_.ledger.uncounted() == {}
    onnx_path = tmp_path / "klas.onnx"
    assert main(["export", "klas", "--target", "onnx", "--out", str(onnx_path)]) == 0
    assert onnx_path.stat().st_size > 10_000
