"""The backprop MLP baseline's card: its config, presets and the three contract functions.

This file stays light (no torch): ``neuroedge models`` imports every card. The method itself
is in ``model.py`` and is imported only when something runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, Trained, register
from models.shared.checks import check_at_least, check_field_types
from models.shared.schedules import check_schedule
from sim.errors import ModelError
from sim.traces import curve

if TYPE_CHECKING:   # the engine, imported only for the annotation (cards stay light)
    from sim.torch_engine.engine import TorchDevice


@dataclass
class MLPConfig:
    """Hyperparameters. Defaults are the quick digits setting (64-32-10, as DiffPC's issue)."""

    hidden: tuple[int, ...] = (32,)   # one hidden layer of 32: the paper-comparison size
    epochs: int = 30                  # digits converges in ~20 epochs with Adam at 1e-3
    batch_size: int = 32
    lr: float = 1e-3                  # Adam's default step size
    weight_decay: float = 0.0
    lr_schedule: str = "constant"     # or "cosine" (models.shared.schedules.lr_factor)
    seed: int = 0

    def __post_init__(self):
        check_field_types(self)
        self.hidden = tuple(int(h) for h in self.hidden)
        if any(h < 1 for h in self.hidden):
            raise ModelError(f"MLPConfig.hidden = {self.hidden}: every layer needs >= 1 unit")
        check_schedule("MLPConfig", self.lr_schedule)
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ModelError(f"MLPConfig.{name} = {getattr(self, name)}: must be >= 1")
        if not self.lr > 0:
            raise ModelError(f"MLPConfig.lr = {self.lr}: must be > 0")
        check_at_least(self, weight_decay=0)


PRESETS = {
    # quick: the digits defaults everywhere (seconds on digits; minutes on Fashion-MNIST's
    # 60,000 images); full: 784-1000-10 for 20 epochs with
    # batch 128 on Fashion-MNIST, the architecture of the DiffPC comparison
    "quick": {"digits": {}, "fashion-mnist": {}},
    "full": {"digits": {}, "fashion-mnist": {"hidden": (1000,), "epochs": 20,
                                             "batch_size": 128}},
}


def simulate(cfg: MLPConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """Train on ``data.x_train`` and test on ``data.x_test`` on ``device`` (a TorchDevice)."""
    from models.baselines.mlp.model import MLPClassifier
    model = MLPClassifier(data.n_features, data.n_classes, cfg, device)
    model.fit(data.x_train, data.y_train, progress=progress)
    test = model.evaluate(data.x_test, data.y_test, scope="infer")
    metrics = {"test_accuracy": test["accuracy"], "test_loss": test["loss"],
               "train_loss": model.history[-1]["train_loss"],
               "parameters": model.n_parameters,
               "footprint_bytes": device.footprint_bytes}
    traces = {"train_loss": curve([h["train_loss"] for h in model.history])}
    facts = {"n_inputs": data.n_features, "n_classes": data.n_classes,
             "torch_device": str(device.torch_device)}
    return Outcome(metrics, traces, model.trained(data.x_test[:8]), facts)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """The baseline's claim at small scale: backprop learns digits (>= 95% test accuracy);
    ``full`` runs the Fashion-MNIST architecture of the DiffPC comparison."""
    from models import runner
    dataset = "digits" if preset == "quick" else "fashion-mnist"
    run = runner.run("mlp", profile=profiles.get("gpu"), dataset=dataset, preset=preset,
                     seed=seed, progress=progress)
    acc = run.metrics["test_accuracy"]
    return Study({"mlp": run}, {"test_accuracy": acc, "claim": "test accuracy >= 0.95",
                                "claim_met": bool(acc >= 0.95)})


def artifact(trained: Trained, target: str):
    """The trained MLP as a torch module with example inputs (target ``onnx``)."""
    from models.baselines.mlp.model import torch_artifact
    return torch_artifact(trained)


METRICS = {"test_accuracy": "1", "test_loss": "nats", "train_loss": "nats",
           "parameters": "count", "footprint_bytes": "B"}
"""Metric units: accuracy is a fraction; losses are cross-entropies (natural log)."""

CARD = Card(
    name="mlp",
    title="Backprop multilayer perceptron (baseline)",
    reference="Rumelhart, Hinton & Williams 1986, doi:10.1038/323533a0; Adam: arXiv:1412.6980",
    claim="backprop baseline: the accuracy and cost every other method is compared with",
    device_kinds=("gpu", "cpu", "bitwise"),  # bitwise: float kernels on an MCU (sim/execution/mcu)
    datasets=("digits", "fashion-mnist"),
    config=MLPConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="digits",
    exports=("onnx",),
    study_profiles={"gpu": "a100"},
    engine="torch",   # on a bitwise (MCU) profile: torch counts, the MCU's memories price
    metrics=METRICS,
    main_metric="test_accuracy",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, artifact=artifact)
