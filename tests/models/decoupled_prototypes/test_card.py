"""The decoupled-prototypes card: registration, presets, settings refused, the seed summary."""
import pytest

import models
from models import runner
from models.decoupled_prototypes.card import DecoupledPrototypesConfig
from models.decoupled_prototypes.experiment import spread
from sim.errors import ModelError


def test_registered_card_and_presets():
    card = models.get("decoupled_prototypes").card
    assert card.config is DecoupledPrototypesConfig and card.main_metric == "knn_accuracy"
    full = runner.make_config("decoupled_prototypes", "full", "fashion-mnist", seed=2)
    assert (full.train, full.test, full.epochs, full.seed) == (60000, 10000, 10, 2)
    quick = runner.make_config("decoupled_prototypes", "quick", "fashion-mnist", 0)
    assert quick == DecoupledPrototypesConfig() and quick.prototypes == 256


def test_bad_settings_are_refused():
    with pytest.raises(ModelError, match=r"forgetting = 'none': must be one of"):
        DecoupledPrototypesConfig(forgetting="none")
    with pytest.raises(ModelError, match=r"beta0 = 1.5: must be <= 1"):
        DecoupledPrototypesConfig(beta0=1.5)
    with pytest.raises(ModelError, match=r"ema = 1.0: must be in \[0, 1\)"):
        DecoupledPrototypesConfig(ema=1.0)
    with pytest.raises(ModelError, match=r"freeze_last_layer = -1: must be >= 0"):
        DecoupledPrototypesConfig(freeze_last_layer=-1)
    # one image a batch: BatchNorm1d in training has no batch variance (torch raises)
    for name in ("train", "prototypes", "batch_size"):
        with pytest.raises(ModelError, match=rf"\.{name} = 1: must be >= 2 \(the head's batch"):
            DecoupledPrototypesConfig(**{name: 1})


def test_spread_is_mean_and_sample_std():
    s = spread([1.0, 2.0, 3.0])     # mean 2, sample std sqrt(((1)^2 + 0 + 1^2) / 2) = 1
    assert s["mean"] == 2.0 and s["std"] == 1.0 and s["values"] == [1.0, 2.0, 3.0]
