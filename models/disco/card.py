"""The DISCO card (density-based internal score for clusterings with noise): config, presets,
contract functions.

Light on purpose (no torch at import): ``neuroedge models`` imports every card. The index is
in ``model.py`` (torch) and ``kernels.py`` (numba MST and leaf order) with the card's run, the
PCC protocol (``model.run_protocol``); the point sets and clusterings are in ``data.py``, the
study over seeds in ``experiment.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, register
from sim.errors import ModelError

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice

DATASETS = ("moons", "circles", "blobs", "aniso")   # = data.DATASETS


@dataclass
class DiscoConfig:
    """One run of the protocol on one procedural data set; defaults say why."""

    n: int = 1000                   # points, background included (quick: ~1 s of DISCO)
    noise_frac: float = 0.1         # uniform background labelled -1 in the ground truth
    min_pts: int = 5                # mu: the paper's one hyperparameter (its default 5)
    chunk_mb: float = 16.0          # rows of a dc / distance block: memory O(n * chunk)
    seed: int = 0

    def __post_init__(self):
        if self.n < 20:
            raise ModelError(f"DiscoConfig.n = {self.n}: must be >= 20 (the protocol's "
                             "clusterings need a few points per cluster)")
        if not 0.0 <= self.noise_frac < 1.0:
            raise ModelError(f"DiscoConfig.noise_frac = {self.noise_frac}: must lie in [0, 1)")
        if self.min_pts < 1 or self.min_pts > self.n:
            raise ModelError(f"DiscoConfig.min_pts = {self.min_pts}: must lie in 1..n "
                             f"({self.n})")
        if not self.chunk_mb > 0:
            raise ModelError(f"DiscoConfig.chunk_mb = {self.chunk_mb}: must be > 0")


PRESETS = {
    "quick": {d: {} for d in DATASETS},
    # full: the digest's scaling point (n = 5000: 13 clusterings, ~25 s of DISCO here)
    "full": {d: {"n": 5000} for d in DATASETS},
}


def load_data(dataset: str, cfg: DiscoConfig):
    """The procedural point set ``dataset`` (``data.make``)."""
    from models.disco import data
    return data.make(dataset, cfg.n, cfg.noise_frac, cfg.seed)


def simulate(cfg: DiscoConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """Score every clustering of the point set with DISCO (counted on ``device``), Silhouette
    and ARI; report each index's correlation with ARI and the pointwise DISCO maps
    (``model.run_protocol``)."""
    from models.disco.model import run_protocol
    return run_protocol(cfg, device, data, progress)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """PCC(index, ARI) of DISCO and Silhouette over 3 seeds and the four data sets."""
    from models.disco.experiment import experiment as run_experiment
    return run_experiment(preset, seed, profiles, progress)


METRICS = {"pcc_disco_ari": "1", "pcc_silhouette_ari": "1", "n_disco": "count",
           "n_silhouette": "count", "top_ari_disco": "1", "top_ari_silhouette": "1",
           "best_ari": "1", "n_clusterings": "count", "n_points": "count",
           "disco_*": "1", "ari_*": "1", "silhouette_*": "1"}
"""Units: correlations, ARIs and the indices (in [-1, 1]) are dimensionless; ``n_<index>``
counts the clusterings an index was defined on."""

CARD = Card(
    name="disco",
    title="DISCO: internal evaluation of density-based clusterings with noise",
    reference="ICLR 2026 poster, OpenReview izbBFuHtAX, arXiv 2503.00127",
    claim="a Silhouette on the density-connectivity distance plus explicit noise scores "
          "correlates with ARI where Silhouette and DBCV do not (PCC x100 3-spiral: DISCO "
          "89.16, Silhouette -2.43)",
    device_kinds=("gpu", "cpu"),
    datasets=DATASETS,
    config=DiscoConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="moons",
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    main_metric="pcc_disco_ari",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, load_data=load_data)
