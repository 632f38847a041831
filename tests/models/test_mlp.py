"""The backprop MLP baseline: learns digits, counts its work, checks its inputs, is seeded."""
import numpy as np
import pytest

import models
from models.mlp import MLPClassifier, MLPConfig, simulate
from models.shared import datasets
from sim.errors import ModelError
from sim.torch_engine import TorchDevice


@pytest.fixture(scope="module")
def digits_run():
    return simulate(profile="tests/data/toy-gpu.toml", dataset="digits", seed=0)


def test_registered():
    card = models.get("mlp")
    assert card.simulate is simulate and "gpu" in card.device_kinds
    with pytest.raises(ModelError, match="unknown model 'nope'.*mlp"):
        models.get("nope")


def test_learns_digits(digits_run):
    assert digits_run.metrics["test_accuracy"] >= 0.95
    loss = digits_run.traces["train_loss"]
    assert loss[-1] < 0.25 * loss[0]


def test_ledger_counts_training_and_inference(digits_run):
    led = digits_run.ledger
    cfg = digits_run.config
    n_train, n_test = 1347, 450            # 1797 digits, 25% test
    epochs = cfg["epochs"]
    assert led.samples() == {"train": n_train * epochs, "infer": n_test}
    # inference forward MACs: n_test x (64 x 32 + 32 x 10)
    assert led.total_ops("infer")["mac_fp32"] == n_test * (64 * 32 + 32 * 10)
    # training forward MACs per epoch: n_train x (64 x 32 + 32 x 10)
    fwd = sum(led.total_ops(f"train/{i}/forward").get("mac_fp32", 0) for i in (0, 2))
    assert fwd == epochs * n_train * (64 * 32 + 32 * 10)
    # backward: weight grads of both layers + input grad of the last one
    bwd = sum(led.total_ops(f"train/{i}/backward").get("mac_fp32", 0) for i in (0, 2))
    assert bwd == epochs * n_train * (64 * 32 + 2 * 32 * 10)
    assert led.uncounted() == {}


def test_seeded_runs_are_identical():
    d = datasets.digits()
    a = MLPClassifier(64, 10, MLPConfig(epochs=2, seed=3), TorchDevice("tests/data/toy-gpu.toml"))
    b = MLPClassifier(64, 10, MLPConfig(epochs=2, seed=3), TorchDevice("tests/data/toy-gpu.toml"))
    a.fit(d.x_train, d.y_train)
    b.fit(d.x_train, d.y_train)
    for pa, pb in zip(a.net.parameters(), b.net.parameters()):
        assert np.array_equal(pa.detach().numpy(), pb.detach().numpy())
    c = MLPClassifier(64, 10, MLPConfig(epochs=2, seed=4), TorchDevice("tests/data/toy-gpu.toml"))
    assert not np.array_equal(next(c.net.parameters()).detach().numpy(),
                              next(a.net.parameters()).detach().numpy())


def test_bad_inputs():
    m = MLPClassifier(64, 10, MLPConfig(epochs=1), TorchDevice("tests/data/toy-gpu.toml"))
    with pytest.raises(ModelError, match=r"x has shape \(5, 63\), expected \(N, 64\)"):
        m.fit(np.zeros((5, 63), np.float32), np.zeros(5, np.int64))
    with pytest.raises(ModelError, match="labels span 0..10"):
        m.fit(np.zeros((2, 64), np.float32), np.array([0, 10]))
    with pytest.raises(ModelError, match="hidden"):
        MLPConfig(hidden=(0,))
