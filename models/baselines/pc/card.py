"""Float predictive coding's card: its config, presets and the contract functions.

Light (no torch): the method is in ``model.py``. Presets: ``quick`` is the config's
defaults on either dataset (64-32-10 on digits, 15 inference steps, 30 epochs, batch 32,
AdamW 1e-3 at a constant step); ``full`` on Fashion-MNIST is DiffPC's training protocol
(784-1000-10, 6 epochs, batch 100, AdamW 5e-4 annealed by a cosine; why: DiffPC's
README, "How the settings were chosen"); on digits it is the quick setting.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, register
from models.shared.checks import check_at_least, check_field_types
from models.shared.schedules import check_schedule
from sim.errors import ModelError
from sim.traces import curve

if TYPE_CHECKING:   # the engine, imported only for the annotation (cards stay light)
    from sim.torch_engine.engine import TorchDevice

ACCURACY_GAP = 0.02
"""The study's reading of "backprop-like": PC's test accuracy within 2 points of BP's."""


@dataclass
class PCConfig:
    """Hyperparameters; defaults are the quick digits setting (64-32-10)."""

    hidden: tuple[int, ...] = (32,)
    steps: int = 15          # DiffPC's PC-SE baseline uses 15 inference steps
    eta: float = 0.1         # Torch2PC's default inference rate
    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-3         # AdamW step size (not reported in the paper)
    weight_decay: float = 1e-4
    lr_schedule: str = "constant"   # or "cosine" (models.shared.schedules.lr_factor)
    seed: int = 0

    def __post_init__(self):
        check_field_types(self)
        self.hidden = tuple(int(h) for h in self.hidden)
        if not self.hidden or any(h < 1 for h in self.hidden):
            raise ModelError(f"PCConfig.hidden = {self.hidden}: need >= 1 hidden layer, "
                             "each with >= 1 unit")
        for name in ("steps", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ModelError(f"PCConfig.{name} = {getattr(self, name)}: must be >= 1")
        if not (self.lr > 0 and self.eta > 0):
            raise ModelError(f"PCConfig lr = {self.lr}, eta = {self.eta}: both must be > 0")
        check_at_least(self, weight_decay=0)
        check_schedule("PCConfig", self.lr_schedule)


PRESETS = {   # DiffPC's card uses these too (its comparison trains both the same way)
    "quick": {"digits": {}, "fashion-mnist": {}},
    "full": {"digits": {},
             "fashion-mnist": {"hidden": (1000,), "epochs": 6, "batch_size": 100, "lr": 5e-4,
                               "lr_schedule": "cosine"}},
}


def simulate(cfg: PCConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """Train float PC on ``device`` (a TorchDevice) and test it."""
    from models.baselines.pc.model import PCClassifier, comm_bits_per_neuron
    model = PCClassifier(data.n_features, data.n_classes, cfg, device)
    model.fit(data.x_train, data.y_train, progress=progress)
    acc = model.evaluate(data.x_test, data.y_test)["accuracy"]
    metrics = {"test_accuracy": acc, "energy": model.history[-1]["energy"],
               "bits_per_neuron_per_sample": comm_bits_per_neuron(cfg.steps)}
    traces = {"energy": curve([h["energy"] for h in model.history])}
    facts = {"sizes": list(model.sizes), "torch_device": str(device.torch_device)}
    return Outcome(metrics, traces, model.trained(), facts)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """PC's claim: local PC learning reaches backprop-like accuracy (within
    ``ACCURACY_GAP``). Float PC and the BP baseline (``mlp``) train with PC's architecture,
    epochs, batch size and step schedule (BP with its own Adam step) on
    ``profiles["gpu"]``; ``quick`` on digits, ``full`` on Fashion-MNIST."""
    from models import runner
    dataset = "digits" if preset == "quick" else "fashion-mnist"
    gpu = profiles.get("gpu")
    plan = runner.prepare("pc", profile=gpu, dataset=dataset, preset=preset, seed=seed)
    pc = runner.execute(plan, progress)
    common = {k: getattr(plan.config, k)
              for k in ("hidden", "epochs", "batch_size", "lr_schedule")}
    bp = runner.run("mlp", profile=gpu, dataset=dataset, preset=preset, seed=seed,
                    overrides=common, progress=progress)
    a, b = pc.metrics["test_accuracy"], bp.metrics["test_accuracy"]
    return Study({"pc": pc, "mlp": bp},
                 {"pc_test_accuracy": a, "bp_test_accuracy": b, "gap": b - a,
                  "claim": f"PC test accuracy within {ACCURACY_GAP:.0%} of BP's",
                  "claim_met": bool(a >= b - ACCURACY_GAP)})


METRICS = {"test_accuracy": "1", "energy": "a.u. (squared prediction error)",
           "bits_per_neuron_per_sample": "bits"}
"""Metric units: ``energy`` is PC's energy function (half the summed squared prediction
errors per sample), not joules."""

CARD = Card(
    name="pc",
    title="Float predictive coding (Strict PC, DiffPC's PC-SE baseline)",
    reference="Whittington & Bogacz 2017, doi:10.1162/NECO_a_00949; Rosenbaum 2022, "
              "arXiv:2106.13082",
    claim="local PC learning reaches backprop-like accuracy with dense float messages",
    device_kinds=("gpu", "cpu"),
    datasets=("digits", "fashion-mnist"),
    config=PCConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="digits",
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    main_metric="test_accuracy",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment)
