"""FS-KAN networks: invariance, the matched baseline, the classifier, the rebuilt export."""
import dataclasses

import numpy as np
import pytest
import torch

import sim
from models.fs_kan import data as tasks
from models.fs_kan.card import FSConfig
from models.fs_kan.layers import FSLayer
from models.fs_kan.model import (
    FSClassifier,
    FSNet,
    matched_baseline,
    n_parameters,
    task_action,
)
from sim.errors import ModelError


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: one thread avoids OpenMP spin-waits on the shared 2-core machine (the
    conftest puts the thread count back after each test)."""
    torch.set_num_threads(1)


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


def test_matched_baseline_has_about_the_same_parameters():
    for task in ("signal-sets", "fashion-points"):
        action, d_in, n_classes = task_action(task)
        cfg = FSConfig(widths=(8, 8), inv_width=8)
        base = matched_baseline(action, d_in, n_classes, cfg)
        p_kan = n_parameters(FSNet(action, d_in, n_classes, cfg))
        p_base = n_parameters(FSNet(action, d_in, n_classes, base))
        assert base.phi == "linear" and base.widths[0] > 8
        assert abs(p_base - p_kan) / p_kan < 0.03


def test_classifier_learns_and_is_seeded(toy_gpu_path):
    action, d_in, n_classes = task_action("signal-sets")
    # the signal task with little noise: learnable in a few steps
    x, y = tasks.signal_sets(64, n=6, length=12, noise=0.2, seed=0)
    xt, yt = tasks.signal_sets(300, n=6, length=12, noise=0.2, seed=1)
    cfg = FSConfig(widths=(4,), inv_width=4, steps=30, lr=1e-2, seed=7)
    def make():
        return FSClassifier(action, d_in, n_classes, cfg, sim.device(toy_gpu_path))
    a, b, c = make().fit(x, y), make().fit(x, y, count=False), make().fit(x, y, count=False)
    for pa, pb, pc in zip(a.net.parameters(), b.net.parameters(), c.net.parameters(),
                          strict=True):
        assert torch.equal(pb, pc)                                     # same seed, same result
        assert torch.allclose(pa, pb, atol=1e-5)                       # counting changes ~nothing
    # k of n seeds (FSConfig.seed 7, 8, 9, 10, 11; seed 7 is ``a``, the others uncounted):
    # at least 4 of 5 above 60% test accuracy (chance: 1/3), measured 0.907, 0.917, 0.690,
    # 0.840, 0.787 (seeds 0-6 and 12-14: 0.793-0.940); and at least 4 of 5 whose last
    # training loss is under 0.6 x the first, measured 0.18, 0.32, 0.53, 0.29, 0.39
    others = [FSClassifier(action, d_in, n_classes, dataclasses.replace(cfg, seed=s),
                           sim.device(toy_gpu_path)).fit(x, y, count=False)
              for s in range(8, 12)]
    accs = [clf.evaluate(xt, yt, count=False)["accuracy"] for clf in others]
    accs.insert(0, a.evaluate(xt, yt)["accuracy"])
    ratios = [clf.history[-1]["train_loss"] / clf.history[0]["train_loss"]
              for clf in (a, *others)]
    assert sum(acc > 0.6 for acc in accs) >= 4, accs
    assert sum(r < 0.6 for r in ratios) >= 4, ratios
    led = a.device.ledger
    assert led.samples() == {"train": 64 * 15, "infer": 300}           # 30 steps = 15 epochs
    # forward MACs per set (72 points, H = 2 * 12 = 24 orbits, F = d_in (1 + G + k) features):
    # FS layer 1 -> 4: 72 * (1 * 9) * (24 * 4) = 62208; invariant pool 4 -> 4 (one orbit):
    # 72 * (4 * 9) * 4 = 10368; head 4 -> 3: 12. BatchNorm and the placement add no MACs.
    assert led.total_ops("infer")["mac_fp32"] == 300 * (62208 + 10368 + 12)
    # training: every forward plus at least the weight gradients (as many MACs again)
    assert led.total_ops("train")["mac_fp32"] >= 2 * 64 * 15 * (62208 + 10368 + 12)
    assert led.uncounted() == {}
    with pytest.raises(ModelError, match=r"x has shape \(3, 72\), expected \(N, 72, 1\)"):
        a.fit(np.zeros((3, 72), np.float32), np.zeros(3, np.int64))
    with pytest.raises(ModelError, match="labels span 0..5"):
        a.evaluate(x[:2], np.array([0, 5]))


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


def test_trained_arrays_rebuild_the_network_exactly(toy_gpu_path):
    from models.fs_kan.model import rebuild, trained
    action, d_in, n_classes = task_action("signal-sets")
    x, y = tasks.signal_sets(40, n=6, length=12, seed=2)
    cfg = FSConfig(widths=(4,), inv_width=4, steps=4, seed=3)
    clf = FSClassifier(action, d_in, n_classes, cfg, sim.device(toy_gpu_path)).fit(x, y)
    state = trained(clf, "signal-sets", x[:5])
    assert state.meta == {"task": "signal-sets", "d_in": 1, "n_classes": 3,
                          "architecture": {"phi": "kan", "widths": [4], "inv_width": 4,
                                           "efficient": False, "grid": 5}}
    net = rebuild(state)
    xt = torch.as_tensor(x[:5])
    with torch.no_grad():                     # the same weights and BatchNorm statistics
        assert torch.equal(net(xt), clf.net.cpu().eval()(xt))


def test_evaluate_refuses_a_diverged_network(toy_gpu_path):
    # lr = 1e6 left NaN weights: the test loss was NaN and the argmax of NaN logits (class 0
    # everywhere) was reported as an accuracy
    action, d_in, n_classes = task_action("signal-sets")
    x, y = tasks.signal_sets(20, n=6, length=12, seed=2)
    cfg = FSConfig(widths=(4,), inv_width=4, steps=2, seed=3)
    clf = FSClassifier(action, d_in, n_classes, cfg, sim.device(toy_gpu_path)).fit(x, y)
    assert 0.0 <= clf.evaluate(x, y)["accuracy"] <= 1.0
    with torch.no_grad():
        clf.net.head.bias.fill_(float("nan"))
    with pytest.raises(ModelError, match=r"class scores are not finite: training diverged "
                                         r"\(lr = 0.003\); lower lr"):
        clf.evaluate(x, y)
