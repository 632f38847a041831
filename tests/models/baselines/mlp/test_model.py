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


# -- on a microcontroller (bitwise profile, torch engine) -----------------------------------
def _mcu():
    return sim.device("cortex-m4", engine="torch")


def test_training_state_too_large_for_sram_is_refused_before_training():
    # 784-32-10: 784*32 + 32 + 32*10 + 10 = 25,450 parameters x 16 B (weight, gradient, two
    # Adam moments) = 407,200 B > the Cortex-M4's 196,608 B of SRAM; it trained, then
    # pricing refused it (quick Fashion-MNIST on cortex-m4: 19 minutes, then an error)
    dev = _mcu()
    m = MLPClassifier(784, 10, MLPConfig(epochs=1), dev)
    x, y = np.zeros((64, 784), np.float32), np.zeros(64, np.int64)
    with pytest.raises(sim.errors.HardwareLimitError,
                       match=r"25,450 parameters with Adam needs 407,200 B of writable"):
        m.fit(x, y)
    assert "train" not in dev.ledger.samples()        # refused before any step


def test_a_training_set_larger_than_flash_is_refused_before_training():
    # 784-8-10: 6,370 parameters x 16 B = 101,920 B of SRAM, 94,688 B left; 500 samples are
    # 500 x 784 x 4 + 500 x 8 = 1,572,000 B > 94,688 + 1,048,576 B of flash
    dev = _mcu()
    m = MLPClassifier(784, 10, MLPConfig(epochs=1, hidden=(8,)), dev)
    x, y = np.zeros((500, 784), np.float32), np.zeros(500, np.int64)
    with pytest.raises(sim.errors.HardwareLimitError,
                       match=r"needs 1,572,000 B of read-only memory \(the training set\)"):
        m.fit(x, y)
    assert "train" not in dev.ledger.samples()


def test_evaluation_on_a_microcontroller_holds_one_batch_and_prices():
    # 2,000 test samples at once were 2,000 x 10 x 4 = 80 kB of logits and 6.3 MB of input
    # (more than flash): evaluated batch by batch (32), each block holds one batch, and the
    # logits equal one forward over the whole set
    d = datasets.digits()
    dev = _mcu()
    m = MLPClassifier(64, 10, MLPConfig(epochs=1), dev)
    m.fit(d.x_train[:256], d.y_train[:256])
    rng = np.random.default_rng(0)
    x = rng.random((2000, 64), dtype=np.float32)
    logits = m.predict_logits(x)
    with torch.no_grad():
        whole = m.net(torch.as_tensor(x, device=logits.device))
    assert torch.allclose(logits, whole, atol=1e-6)
    fp = dev.ledger.footprints()["infer"]
    # ceil(2000 / 32) = 63 blocks; one batch's input is 32 x 64 x 4 = 8,192 B, the whole
    # set's 512,000 B: the read-only bytes (batch + weights, 2,410 x 4) stay below 51,200
    assert fp["blocks"] == 63 and fp["read_only"] < 2000 * 64 * 4 // 10
    assert dev.ledger.samples()["infer"] == 2000
    assert dev.ledger.price("cortex-m4").total_j > 0


@pytest.mark.parametrize("setting, message", [
    ({"hidden": 32}, "MLPConfig.hidden = 32: expected a sequence of whole numbers"),
    ({"hidden": (2.7,)}, r"MLPConfig.hidden = \(2.7,\): expected a sequence of whole numbers"),
    ({"epochs": 1.5}, "MLPConfig.epochs = 1.5: expected a whole number"),
    ({"lr": "1e-3"}, "MLPConfig.lr = '1e-3': expected a number"),
])
def test_a_config_built_in_python_with_a_wrong_type_is_one_line(setting, message):
    """A config built in Python skips --set's type checks: hidden=32 was a TypeError
    traceback, hidden=(2.7,) silently became (2,), epochs=1.5 failed only in training."""
    from models.baselines.mlp.card import MLPConfig
    from models.baselines.pc.card import PCConfig
    with pytest.raises(ModelError, match=message):
        MLPConfig(**setting)
    with pytest.raises(ModelError, match=message.replace("MLPConfig", "PCConfig")):
        PCConfig(**setting)
