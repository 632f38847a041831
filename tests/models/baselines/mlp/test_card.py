"""The mlp card through the runner: learns digits and counts exactly what it ran."""
import pytest

import models
from models import runner
from sim.errors import ModelError


@pytest.fixture(scope="module")
def digits_run():
    from conftest import TOY_GPU
    return runner.run("mlp", profile=TOY_GPU, dataset="digits", seed=0)


def test_registered():
    method = models.get("mlp")
    assert method.card.name == "mlp" and "gpu" in method.card.device_kinds
    assert method.card.engine == "torch"      # an MCU profile gets the torch engine
    with pytest.raises(ModelError, match="unknown model 'nope'.*mlp"):
        models.get("nope")


def test_learns_digits(digits_run):
    assert digits_run.metrics["test_accuracy"] >= 0.95
    loss = digits_run.traces["train_loss"]
    assert loss.kind == "curve" and len(loss.data) == 30      # one value per epoch
    assert loss.data[-1] < 0.25 * loss.data[0]


def test_ledger_counts_training_and_inference(digits_run):
    led = digits_run.ledger
    epochs = digits_run.config["epochs"]
    n_train, n_test = 1347, 450            # 1797 digits, 25% test
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


def test_run_records_config_facts_and_trained_state(digits_run):
    assert digits_run.config == {"hidden": (32,), "epochs": 30, "batch_size": 32, "lr": 1e-3,
                                 "weight_decay": 0.0, "lr_schedule": "constant", "seed": 0}
    assert digits_run.facts["n_inputs"] == 64 and digits_run.facts["n_classes"] == 10
    arrays = digits_run.trained.arrays
    assert arrays["param/0.weight"].shape == (32, 64) and arrays["example_x"].shape == (8, 64)
    # parameters 64*32 + 32 + 32*10 + 10 = 2410
    assert digits_run.metrics["parameters"] == 2410


def test_full_fashion_preset_is_the_diffpc_architecture():
    cfg = runner.make_config("mlp", "full", "fashion-mnist", seed=5)
    assert (cfg.hidden, cfg.epochs, cfg.batch_size, cfg.seed) == ((1000,), 20, 128, 5)
    assert runner.make_config("mlp", "quick", "fashion-mnist", seed=0).hidden == (32,)


def test_study_states_the_claim(monkeypatch):
    calls = []

    def fake_run(name, **kw):
        calls.append((name, kw["dataset"], kw["preset"]))
        return type("R", (), {"metrics": {"test_accuracy": 0.97}})()
    monkeypatch.setattr(runner, "run", fake_run)
    study = runner.study("mlp", preset="quick", seed=1)
    assert calls == [("mlp", "digits", "quick")]
    assert study.summary["claim_met"] is True and study.summary["test_accuracy"] == 0.97


def test_a_bitwise_profile_without_float_prices_is_refused_before_training():
    """fpga-bnn prices XNOR words, no float MAC: the float MLP trained, then failed to price
    ("no energy for op(s) mac_fp32 ..."); now refused when the run is prepared."""
    with pytest.raises(ModelError, match="'fpga-bnn' prices no float MAC"):
        runner.prepare("mlp", profile="fpga-bnn")
    runner.prepare("mlp", profile="cortex-m4")      # a microcontroller that prices them
