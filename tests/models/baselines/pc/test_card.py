"""Float PC's card: presets, a run through the runner counted by hand."""
import pytest

import models
from models import runner
from models.baselines.pc.card import PCConfig


def test_registered_with_its_presets():
    card = models.get("pc").card
    assert card.device_kinds == ("gpu", "cpu") and card.config is PCConfig
    assert (card.default_profile, card.default_dataset) == ("a100", "digits")
    assert runner.make_config("pc", "quick", "fashion-mnist", 1) == PCConfig(seed=1)
    full = runner.make_config("pc", "full", "fashion-mnist", 0)
    # the DiffPC comparison's protocol: 6 epochs, batch 100, AdamW 5e-4 annealed (cosine)
    assert (full.hidden, full.epochs, full.batch_size, full.lr, full.lr_schedule) == \
        ((1000,), 6, 100, 5e-4, "cosine")
    assert runner.make_config("pc", "full", "digits", 0) == PCConfig()


@pytest.fixture(scope="module")
def one_epoch():
    from tests.conftest import TOY_GPU
    return runner.run("pc", profile=TOY_GPU, overrides={"epochs": 1})


def test_one_epoch_run_by_hand(one_epoch):
    r = one_epoch
    # digits: 1347 training images (all of them: PC keeps the last partial batch), 450 test
    assert r.ledger.samples() == {"train": 1347, "infer": 450}
    assert r.metrics["bits_per_neuron_per_sample"] == 64 * 15        # 2 x 32 bits x steps
    assert r.traces["energy"].kind == "curve" and r.traces["energy"].data.shape == (1,)
    assert r.metrics["energy"] == r.traces["energy"].data[0]
    assert {k: v.shape for k, v in r.trained.arrays.items()} == \
        {"W1": (32, 64), "b1": (32,), "W2": (10, 32), "b2": (10,)}
    assert r.facts["sizes"] == [64, 32, 10]
    # inference is the feed-forward pass: 450 x (64 x 32 + 32 x 10) multiply-accumulates
    assert r.ledger.total_ops("infer")["mac_fp32"] == 450 * (64 * 32 + 32 * 10)


@pytest.mark.slow
def test_digits_quick_accuracy():
    assert runner.run("pc", overrides={"epochs": 20}).metrics["test_accuracy"] >= 0.9
