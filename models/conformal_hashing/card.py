"""The COLA card (conformal domain-adaptive hashing): config, presets, contract functions.

Light on purpose (no torch at import): ``neuroedge models`` imports every card. The method
and the card's run are in ``model.py`` (with ``conformal.py`` and ``retrieval.py``), the
shifted domain pairs in ``data.py``, the ablation over seeds in ``experiment.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hw_profiles import ProfileError, load
from models.registry import Card, Outcome, Study, register
from models.shared.checks import check_at_least
from sim.errors import ModelError

HAMMING_KINDS = ("bitwise", "cpu")
"""Profile kinds the plain-Hamming retrieval's ``BitwiseDevice`` takes (its ``kinds``; not
imported here: the engine loads numba, and this card stays light)."""

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice

DATASETS = ("fashion-mnist", "fashion-mild", "digits")   # = data.PAIRS: source data;
                                                          # target = its shifted copy
VARIANT_NAMES = ("full", "no_sc", "no_rc", "no_sr", "none", "source_only")   # model.VARIANTS
UWHD_KERNELS = ("matmul", "lut")


@dataclass
class ColaConfig:
    """One training run of COLA or one of its ablations; defaults say why."""

    variant: str = "full"           # full, a component removed (no_sc/no_rc/no_sr/none), or
                                    # source_only (no target term: the coverage reference)
    bits: int = 32                  # code length L (paper: 16-128, 64 main)
    width: int = 16                 # conv channels (16, 32): a small CNN for 2 CPU cores
    feat: int = 128                 # feature dimension of f (the digest's plan)
    n_source: int = 2000            # source images (part held out for calibration)
    n_target: int = 1000            # target images (unlabelled in training)
    holdout: float = 0.25           # source fraction never trained on (calibration pool)
    r_cal: float = 0.2              # D_cal: this fraction of it nearest the target centroid
    ema: float = 0.5                # momentum of the accuracy EMA behind alpha_t
    sigma_rel: float = 0.1          # feature-noise std / feature std for bit stability
    lam: float = 1.0                # lambda_0 of the self-regulated weights
    epochs: int = 6
    batch_size: int = 128           # the digest's plan
    lr: float = 3e-3                # Adam; the plan's 1e-3 is slow for these few steps
    n_database: int = 1000          # source training images in the retrieval database
    n_query: int = 500              # target queries
    hamming_profile: str = "x86-avx2"   # bitwise engine of the plain-Hamming retrieval
    uwhd_kernel: str = "matmul"     # UWHD as one matmul, or "lut": 256-entry tables per code
                                    # byte and query, lookups on the packed database
    count: bool = True              # count torch ops (False: the bench's repeated runs)
    seed: int = 0

    def __post_init__(self):
        if self.variant not in VARIANT_NAMES:
            raise ModelError(f"ColaConfig.variant = {self.variant!r}: must be one of "
                             f"{', '.join(VARIANT_NAMES)}")
        if self.uwhd_kernel not in UWHD_KERNELS:
            raise ModelError(f"ColaConfig.uwhd_kernel = {self.uwhd_kernel!r}: must be one of "
                             f"{', '.join(UWHD_KERNELS)}")
        for name in ("bits", "width", "feat", "n_source", "n_target", "epochs", "batch_size",
                     "n_database", "n_query"):
            if getattr(self, name) < 1:
                raise ModelError(f"ColaConfig.{name} = {getattr(self, name)}: must be >= 1")
        for name in ("holdout", "r_cal", "ema"):
            v = getattr(self, name)
            if not 0.0 < v < 1.0:
                raise ModelError(f"ColaConfig.{name} = {v}: must lie strictly between 0 and 1")
        if not self.lr > 0:
            raise ModelError(f"ColaConfig.lr = {self.lr}: must be > 0")
        check_at_least(self, sigma_rel=0, lam=0)
        # the retrieval's profile: a misspelled or non-bitwise one was found after training
        try:
            prof = load(self.hamming_profile)    # with a suggestion for a misspelled name
        except ProfileError as exc:   # named as the setting, not as --profile is
            raise ProfileError(f"ColaConfig.hamming_profile: {exc}") from None
        if prof.kind not in HAMMING_KINDS:
            raise ModelError(f"ColaConfig.hamming_profile = {self.hamming_profile!r} is a "
                             f"{prof.kind} profile; the plain-Hamming retrieval runs on the "
                             f"bitwise engine, which takes {' or '.join(HAMMING_KINDS)} "
                             "profiles (x86-avx2, cortex-m4, fpga-bnn, ...)")


PRESETS = {
    # quick: 2000/1000 Fashion images, 6 epochs; all 1257/540 digits, 10 epochs (each
    # ~15-30 s counted on one core)
    "quick": {"fashion-mnist": {}, "fashion-mild": {},
              "digits": {"n_source": 1257, "n_target": 540, "epochs": 10, "n_database": 940,
                         "n_query": 540}},
    "full": {"fashion-mnist": {"n_source": 20000, "n_target": 5000, "epochs": 10,
                               "n_database": 10000, "n_query": 1000, "bits": 64},
             "fashion-mild": {"n_source": 20000, "n_target": 5000, "epochs": 10,
                              "n_database": 10000, "n_query": 1000, "bits": 64},
             "digits": {"n_source": 1257, "n_target": 540, "epochs": 20, "n_database": 940,
                        "n_query": 540, "bits": 64}},
}


def load_data(dataset: str, cfg: ColaConfig):
    """Source and shifted target images of ``dataset`` (``data.load``)."""
    from models.conformal_hashing import data
    return data.load(dataset, cfg.n_source, cfg.n_target, cfg.seed)


def simulate(cfg: ColaConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """Train the variant on source + unlabelled target, then retrieve target queries from
    the source database with UWHD (counted on ``device``) and plain Hamming on packed codes
    (a ``BitwiseDevice`` of ``cfg.hamming_profile``; its counts are in the metrics):
    ``model.run``."""
    from models.conformal_hashing.model import run
    return run(cfg, device, data, progress)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """The paper's ablation: full COLA against each component removed and against plain
    Hamming retrieval, over seeds, bits and both domain pairs (``experiment.py``)."""
    from models.conformal_hashing.experiment import experiment as run_experiment
    return run_experiment(preset, seed, profiles, progress)


METRICS = {"map": "1", "map_uwhd": "1", "map_hamming": "1", "target_coverage": "1",
           "target_set_size": "count", "target_accuracy": "1", "auroc_w_sem": "1",
           "auroc_w_bit": "1", "bit_flip_rate": "1", "alpha_final": "1", "tv_hat": "1",
           "hamming_word_ops": "count", "hamming_popcount_words": "count",
           "uwhd_macs": "MACs", "uwhd_lookups": "count", "final_train_loss": "nats",
           "first_epoch_set_size": "count", "last_epoch_set_size": "count",
           "coverage_gap": "1", "coverage_bound_margin": "1"}
"""Metric units: MAP, coverage, accuracies, AUROCs and TV are fractions; set sizes are
labels per set (means); the training loss sums cross-entropies (nats) and squared terms."""

CARD = Card(
    name="conformal_hashing",
    title="COLA: conformalized hierarchical calibration for uncertainty-aware domain-"
          "adaptive hashing",
    reference="ICLR 2026 poster, OpenReview fBmRLVAw4T",
    claim="conformal set-size weights and bit-stability weights raise cross-domain MAP "
          "(Office-Home 64 bits: none 49.14 -> full 57.31); weighted Hamming beats plain",
    device_kinds=("gpu", "cpu"),
    datasets=DATASETS,
    config=ColaConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="fashion-mnist",
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    main_metric="map",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, load_data=load_data)
