"""The TrainRef card: its config, presets and the three contract functions.

Light on purpose (no torch at import): ``neuroedge models`` imports every card. The method
is in ``model.py`` (its docstring lists every reading chosen where the paper is silent), one
setting's run in ``run.py``, the noise and split in ``data.py``, the seeds study in
``experiment.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, register
from models.shared.checks import check_at_least
from sim.errors import ModelError
from sim.traces import curve

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice

NOISES = ("symmetric", "asymmetric")
POOLS = ("mmr", "farthest", "nearest")


@dataclass
class TrainRefConfig:
    """Quick Fashion-MNIST setting (sym-80 %, 1 reference per class); defaults say why.

    ``lr`` is the peak of the AdamW (weight decay 5e-4, cosine) of every fit after phase I
    (phase II's retraining, phase III's P-steps, the CE baselines): 1e-3, where the digest
    gives Adam at 1e-4 for phases II and III, a departure the README states."""

    noise: str = "symmetric"
    noise_rate: float = 0.8          # the paper's hardest synthetic setting
    refs_per_class: int = 1          # |D_ref| down to one sample per class
    train: int = 5000                # first N training images: D_ref + val + noisy pool
    test: int = 2000
    val: int = 500                   # clean validation images for temperature scaling
    hidden: int = 256                # encoder MLP 784 -> hidden -> dim
    dim: int = 64
    mask_ratio: float = 0.6          # masked 7x7 patches (digest plan: 60 %)
    mae_epochs: int = 4
    probe_epochs: int = 15           # paper: 15-epoch linear probe, checkpoints every 5
    probe_lr: float = 0.05           # full batch on |D_ref| samples: one step per epoch
    delta_if: float = 0.8            # paper's delta_IF
    aug_epochs: int = 5              # paper: 5 epochs on D*_ref
    rounds: int = 2                  # paper: N = 2 co-evolution rounds
    ft_epochs: int = 2               # P-step epochs per round (paper 5)
    k: int = 10                      # voting pool size (public code's top-10)
    quantile: float = 0.75           # tau: 75th percentile of x's similarities
    sharpen: float = 0.5             # t
    pool: str = "mmr"                # voting pool: diverse-k read as MMR; farthest, nearest
    relevance: float = 0.5           # MMR's weight on similarity to x (vs. redundancy)
    ce_epochs: int = 10              # CE / label-smoothing baselines, no early stopping
    lr: float = 1e-3
    batch_size: int = 128
    seed: int = 0

    def __post_init__(self):
        if self.noise not in NOISES:
            raise ModelError(f"TrainRefConfig.noise = {self.noise!r}: must be one of {NOISES}")
        if self.pool not in POOLS:
            raise ModelError(f"TrainRefConfig.pool = {self.pool!r}: must be one of {POOLS}")
        if not 0.0 <= self.noise_rate < 1.0:
            raise ModelError(f"TrainRefConfig.noise_rate = {self.noise_rate}: must be in [0, 1)")
        for name in ("mask_ratio", "delta_if", "quantile", "sharpen", "relevance"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ModelError(f"TrainRefConfig.{name} = {getattr(self, name)}: must be in "
                                 "(0, 1]")
        if self.mae_epochs and round(16 * self.mask_ratio) < 1:
            # no patch masked: the masked-pixel MSE is 0 / 0, every weight and metric nan
            raise ModelError(f"TrainRefConfig.mask_ratio = {self.mask_ratio} masks "
                             f"round(16 x {self.mask_ratio}) = 0 of the 16 patches; must be "
                             "> 1/32 (one patch) when mae_epochs > 0")
        check_at_least(self, refs_per_class=1, train=100, test=1, val=10, hidden=1, dim=1,
                       probe_epochs=3, rounds=1, k=1, batch_size=1, mae_epochs=0,
                       aug_epochs=0, ft_epochs=0, ce_epochs=1)
        if not self.lr > 0 or not self.probe_lr > 0:
            raise ModelError(f"TrainRefConfig.lr = {self.lr}, probe_lr = {self.probe_lr}: "
                             "both must be > 0")


PRESETS = {
    # quick: the defaults (5k images); full: 20k images, longer baselines and P-steps
    "quick": {"fashion-mnist": {}},
    "full": {"fashion-mnist": {"train": 20000, "test": 10000, "val": 1000, "hidden": 512,
                               "dim": 128, "mae_epochs": 10, "ft_epochs": 5,
                               "ce_epochs": 20}},
}


def load_data(dataset: str, cfg: TrainRefConfig):
    from models.trainref import data
    return data.load(dataset, cfg)


def simulate(cfg: TrainRefConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """One noise setting: pre-train, CE / LS / TS baselines, TrainRef soft and hard
    (``run.run_all``)."""
    from models.trainref.run import metrics_of, run_all
    r = run_all(data, cfg, device, progress=progress)
    device.deploy(r["soft"]["model"])   # NeuroBench's model: TrainRef's classifier, no other
    m = metrics_of(r)
    m["footprint_bytes"] = float(device.footprint_bytes)
    traces = {"relabel_accuracy": curve([m[f"relabel_accuracy_round{i}"]
                                         for i in range(1, cfg.rounds + 1)])}
    facts = {"torch_device": str(device.torch_device), "data_source": data.source,
             "pool_size": int(len(r["split"].y_noisy)),
             "temperature_trainref": r["soft"]["temperature"],
             "temperature_ce": r["base"]["ce_ts"]["temperature"]}
    return Outcome(m, traces, None, facts)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """sym-80 % with 1 reference per class over 3 seeds (``experiment.py``)."""
    from models.trainref.experiment import experiment as run_experiment
    return run_experiment(preset, seed, profiles, progress)


METRICS = {"test_accuracy": "1", "realised_noise": "1", "dstar_size": "count",
           "dstar_precision": "1", "footprint_bytes": "B", "relabel_accuracy_round*": "1",
           "*_accuracy": "1", "*_ece": "1"}
"""Accuracies, ECE (15 bins) and D*_ref precision are fractions."""

CARD = Card(
    name="trainref",
    title="TrainRef: curating noisy labels into label distributions with a minimal extrinsic "
          "reference set",
    reference="TrainRef, ICLR 2026 (OpenReview jSs8CDsF0A)",
    claim="with 1 reference per class, influence-selected D*_ref is ~98% clean at 80% "
          "symmetric noise and soft-label co-evolution beats CE by 70 points (CIFAR-100)",
    device_kinds=("gpu", "cpu"),
    datasets=("fashion-mnist",),
    config=TrainRefConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="fashion-mnist",
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    main_metric="test_accuracy",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, load_data=load_data)
