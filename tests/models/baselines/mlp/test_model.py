"""The backprop MLP: learns digits, counts its work, checks its inputs, is seeded."""
import copy

import numpy as np
import pytest
import torch

import sim
from models.baselines.mlp.card import MLPConfig
from models.baselines.mlp.model import MLPClassifier, build, torch_artifact
from models.shared import datasets
from sim.errors import ModelError


def test_seeded_runs_are_identical(toy_gpu_path):
    d = datasets.digits()
    a = MLPClassifier(64, 10, MLPConfig(epochs=2, seed=3), sim.device(toy_gpu_path))
    b = MLPClassifier(64, 10, MLPConfig(epochs=2, seed=3), sim.device(toy_gpu_path))
    a.fit(d.x_train, d.y_train)
    b.fit(d.x_train, d.y_train)
    for pa, pb in zip(a.net.parameters(), b.net.parameters(), strict=True):
        assert np.array_equal(pa.detach().cpu().numpy(), pb.detach().cpu().numpy())
    c = MLPClassifier(64, 10, MLPConfig(epochs=2, seed=4), sim.device(toy_gpu_path))
    assert not np.array_equal(next(c.net.parameters()).detach().cpu().numpy(),
                              next(a.net.parameters()).detach().cpu().numpy())


def test_bad_inputs(toy_gpu_path):
    m = MLPClassifier(64, 10, MLPConfig(epochs=1), sim.device(toy_gpu_path))
    with pytest.raises(ModelError, match=r"x has shape \(5, 63\), expected \(N, 64\)$"):
        m.fit(np.zeros((5, 63), np.float32), np.zeros(5, np.int64))
    with pytest.raises(ModelError, match="labels span 0..10, expected 0..9$"):
        m.fit(np.zeros((2, 64), np.float32), np.array([0, 10]))
    with pytest.raises(ModelError, match="x holds 1 NaN or infinite value"):
        m.fit(np.array([[np.nan] + [0.0] * 63], np.float32), np.zeros(1, np.int64))
    with pytest.raises(ModelError, match="hidden"):
        MLPConfig(hidden=(0,))


def test_build_has_relu_between_layers_only():
    net = build((4, 3, 2))
    assert [type(m).__name__ for m in net] == ["Linear", "ReLU", "Linear"]
    assert sum(p.numel() for p in net.parameters()) == 4 * 3 + 3 + 3 * 2 + 2   # 23


def test_torch_artifact_rebuilds_the_trained_network(toy_gpu_path):
    """The export's network comes from the stored arrays alone and computes what the trained
    network computes, on the stored example inputs."""
    d = datasets.digits()
    m = MLPClassifier(64, 10, MLPConfig(epochs=1, hidden=(16,)), sim.device(toy_gpu_path))
    m.fit(d.x_train, d.y_train)
    art = torch_artifact(m.trained(d.x_test[:8]))
    assert art.example_inputs.shape == (2, 64) and art.check_inputs.shape == (8, 64)
    # the trained network as it is, on the CPU where the export runs (compile() put m.net on
    # the engine's device; a CUDA matmul need not round as the CPU's does: compared exactly)
    trained_net = copy.deepcopy(m.net).cpu()
    with torch.no_grad():
        want = trained_net(torch.as_tensor(d.x_test[:8]))
        got = art.module(torch.as_tensor(d.x_test[:8]))
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("lr, message", [
    # Adam's first step moves every weight by ~lr = 1e20: logits ~1e40 overflow float32
    # (3.4e38) and the losses and weights go NaN; the run reported test_loss = nan
    (1e20, r"MLPConfig.lr = 1e\+20: training diverged \(non-finite weights\)"),
    # 1e38 / (1 - 0.9) = 1e39 is Adam's first step size: not a float32 (torch RuntimeError)
    (1e38, r"MLPConfig.lr = 1e\+38: Adam's step overflows float32")])
def test_a_diverging_lr_is_a_one_line_error(toy_gpu_path, lr, message):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, (8, 64)), np.arange(8) % 4
    m = MLPClassifier(64, 4, MLPConfig(epochs=2, batch_size=4, hidden=(8,), lr=lr),
                      sim.device(toy_gpu_path))
    with pytest.raises(ModelError, match=message):
        m.fit(x, y)
