"""FS-KAN's card: its config, presets and the three contract functions.

Light on purpose (no torch at import): ``neuroedge models`` imports every card. The
method is in ``model.py``, the tasks in ``data.py``, the low-data sweep in ``experiment.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, Trained, register
from models.shared.checks import check_at_least
from sim.errors import ModelError
from sim.traces import curve

if TYPE_CHECKING:   # the engine, imported only for the annotation (cards stay light)
    from sim.torch_engine.engine import TorchDevice

TASKS = ("signal-sets", "fashion-points")   # = data.TASKS (data.py imports numpy)


@dataclass
class FSConfig:
    """Network, training and data size of one run (the presets set widths and sizes per task)."""

    phi: str = "kan"                  # "kan" (FS-KAN) or "linear" (parameter-sharing MLP)
    widths: tuple[int, ...] = (8, 8)  # equivariant layers (paper: 16/16/8 signals, 36/36 points)
    inv_width: int = 8                # invariant layer width
    efficient: bool = False           # eq. (13) instead of eq. (12)
    grid: int = 5                     # Efficient-KAN default grid size G
    steps: int = 300                  # optimizer steps, whatever the training-set size
    batch_size: int = 32              # paper: 32 for point clouds, 64 for signals
    lr: float = 3e-3                  # between the paper's 1e-3 (signals) and 1e-2 (points)
    weight_decay: float = 1e-2        # AdamW's default
    eta: float = 1e-5                 # regulariser weight (paper: 1e-5 point clouds)
    n_train: int = 100                # training sets: the low-data regime of the claim
    n_test: int = 500                 # one fixed test set per task
    count: bool = True                # count ops (False: the benchmark's repeated runs skip
    #                                   the ~2x counting cost; one counted run gives the MACs)
    seed: int = 0

    def __post_init__(self):
        self.widths = tuple(int(w) for w in self.widths)
        if self.phi not in ("kan", "linear"):
            raise ModelError(f"FSConfig.phi = {self.phi!r}: expected 'kan' or 'linear'")
        if not self.widths or min(self.widths) < 1 or self.inv_width < 1:
            raise ModelError(f"FSConfig.widths = {self.widths}, inv_width = {self.inv_width}: "
                             "need at least one layer and widths >= 1")
        for name in ("steps", "grid", "n_test"):
            if getattr(self, name) < 1:
                raise ModelError(f"FSConfig.{name} = {getattr(self, name)}: must be >= 1")
        # BatchNorm needs two sets in a batch: training skips a batch of one, so batch_size
        # or n_train = 1 would train no step at all and report the untrained network
        for name in ("batch_size", "n_train"):
            if getattr(self, name) < 2:
                raise ModelError(f"FSConfig.{name} = {getattr(self, name)}: must be >= 2 "
                                 "(BatchNorm needs two sets in a batch)")
        if not self.lr > 0:
            raise ModelError(f"FSConfig.lr = {self.lr}: must be > 0")
        check_at_least(self, weight_decay=0, eta=0)


def _task(width: int, n_train: int, steps: int, n_test: int) -> dict:
    # width 8 for signals, 16 for Fashion point sets (every equivariant and invariant layer)
    return {"widths": (width, width), "inv_width": width, "n_train": n_train, "steps": steps,
            "n_test": n_test}


PRESETS = {
    # quick: one low-data training set per task, 150 steps (seconds on a CPU)
    "quick": {"signal-sets": _task(8, 60, 150, 500), "fashion-points": _task(16, 100, 150, 500)},
    "full": {"signal-sets": _task(8, 240, 300, 1000),
             "fashion-points": _task(16, 1000, 300, 2000)},
}


def load_data(dataset: str, cfg: FSConfig):
    """The task's train/test split at the config's sizes (``data.load``)."""
    from models.fs_kan import data
    return data.load(dataset, cfg.n_train, cfg.n_test, cfg.seed)


def simulate(cfg: FSConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """FS-KAN and its parameter-matched baseline on one low-data training set of ``data``.

    The ledger is FS-KAN's (scopes ``train`` and ``infer``) on ``device``; the baseline
    trains on a second engine of the same profile, and its accuracy, parameters and MACs
    are in the metrics for comparison.
    """
    from models import runner
    from models.fs_kan.model import compare, macs, task_action, trained
    base_dev = runner.device_for(METHOD, device.profile)
    r = compare(data, cfg, (device, base_dev), progress=progress, count=cfg.count)
    metrics = {"test_accuracy": r["fskan_accuracy"], "test_loss": r["fskan_loss"],
               "baseline_test_accuracy": r["baseline_accuracy"],
               "accuracy_gain": r["fskan_accuracy"] - r["baseline_accuracy"],
               "parameters": r["fskan_parameters"],
               "baseline_parameters": r["baseline_parameters"],
               "train_macs": macs(device, "train"), "infer_macs": macs(device, "infer"),
               "baseline_train_macs": macs(base_dev, "train"),
               "footprint_bytes": device.footprint_bytes}
    bcfg = r["baseline_config"]
    facts = {"group": task_action(data.name)[0].name, "baseline_widths": list(bcfg.widths),
             "baseline_inv_width": bcfg.inv_width,
             "baseline_uncounted": base_dev.ledger.uncounted(),
             "torch_device": str(device.torch_device), "data_source": data.source,
             # host wall times: facts about this machine, not figures of the method (and not
             # the same twice, so they stay out of the metrics a same-seed run reproduces)
             "host_train_s": r["fskan_train_s"], "host_baseline_train_s": r["baseline_train_s"]}
    model = r["fskan_model"]
    traces = {"train_loss": curve([h["train_loss"] for h in model.history])}
    return Outcome(metrics, traces, trained(model, data.name, data.x_test[:8]), facts)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """The paper's low-data claim: FS-KAN against the parameter-matched parameter-sharing
    MLP at several training-set sizes (``experiment.py``)."""
    from models.fs_kan.experiment import experiment as run_experiment
    return run_experiment(preset, seed, profiles, progress)


def artifact(trained: Trained, target: str):
    """The trained FS-KAN network as a torch module with example point sets (``onnx``)."""
    from models.fs_kan.model import torch_artifact
    return torch_artifact(trained)


METRICS = {"test_accuracy": "1", "test_loss": "nats", "baseline_test_accuracy": "1",
           "accuracy_gain": "1", "parameters": "count", "baseline_parameters": "count",
           "train_macs": "MACs", "infer_macs": "MACs", "baseline_train_macs": "MACs",
           "footprint_bytes": "B"}
"""Metric units: accuracies (and their difference) are fractions; the loss is a
cross-entropy (natural log)."""

CARD = Card(
    name="fs_kan",
    title="FS-KAN: permutation-equivariant Kolmogorov-Arnold networks via function sharing",
    reference="arXiv:2509.24472 (ICLR 2026)",
    claim="in the low-data regime FS-KAN beats a parameter-matched parameter-sharing MLP "
          "(DeepSets / DSS)",
    device_kinds=("gpu", "cpu"),
    datasets=TASKS,
    config=FSConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="fashion-points",   # where the claim reproduces (signal sets: it does not)
    exports=("onnx",),
    export_dataset="signal-sets",       # a small graph (72 points, 24 orbits)
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    main_metric="test_accuracy",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, artifact=artifact,
                  load_data=load_data)

