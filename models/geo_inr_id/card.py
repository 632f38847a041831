"""The geographic-INR intrinsic-dimension card: config, presets, contract functions.

Light on purpose (no torch at import): ``neuroedge models`` imports every card. The
estimators are in ``estimators.py``, the encoders, probes and the run in ``model.py``, the
procedural Earth in ``data.py``, the resolution / probe / coverage study in
``experiment.py``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, register
from models.shared.checks import check_at_least
from sim.errors import ModelError

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice

DATASETS = ("procedural-earth",)
FAMILIES = ("sh", "rff", "grid", "siren")   # = model.FAMILIES


@dataclass
class GeoIdConfig:
    """One encoder: pre-train, embed land points, measure its ID, probe it; defaults say why."""

    family: str = "sh"              # sh (SatCLIP-like), rff (GeoCLIP), grid (CSP), siren (SINR)
    resolution: float = 10.0        # sh: degree L; rff: sigma; grid: frequencies S; siren: w0
    grid_base: int = 1              # grid: base frequency b (b > 1 repeats every b-th parallel)
    width: int = 256                # hidden units of the encoder MLP
    embed: int = 256                # D: the paper's encoders give 256-512
    n_pretrain: int = 4000          # pre-training locations (plan: 20k; quick: 4k)
    steps: int = 200                # Adam steps (plan: 2k)
    batch_size: int = 512
    lr: float = 1e-3
    n_eval: int = 2000              # land points for ID, local map and probes (plan: 20k)
    eval_region: str = "land"       # land (the paper's sampler) or sphere (whole globe)
    k_local: int = 100              # the paper's pointwise MLE k
    probe_hidden: int = 256
    probe_steps: int = 200          # full-batch Adam steps of the MLP probe
    ridge: float = 1e-3             # ridge penalty per training point, standardised features
    cap_boost: float = 1.0          # pre-training density inside the cap / outside (1: uniform)
    cap_inland: bool = True         # centre the cap on the Earth's most inland point ...
    cap_lon: float = 0.0            # ... else here (rad)
    cap_lat: float = 0.6
    cap_radius: float = 0.5         # angular radius (rad): 6 % of the sphere's area
    map_height: int = 36            # 5-degree cells for the globe map
    map_width: int = 72
    chunk: int = 1024               # rows per distance block (memory chunk x N x 8 B)
    count: bool = True              # count torch ops (False: the study's repeated runs)
    seed: int = 0

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ModelError(f"GeoIdConfig.family = {self.family!r}: must be one of "
                             f"{', '.join(FAMILIES)}")
        if not self.resolution > 0:
            raise ModelError(f"GeoIdConfig.resolution = {self.resolution}: must be > 0")
        if self.family in ("sh", "grid") and self.resolution != int(self.resolution):
            # sh's degree L and grid's frequency count S are integers (model.LocationEncoder)
            raise ModelError(f"GeoIdConfig.resolution = {self.resolution}: the {self.family} "
                             "family's resolution (sh: degree L, grid: frequencies S) must "
                             "be an integer >= 1")
        for name in ("width", "embed", "steps", "batch_size", "probe_hidden", "probe_steps",
                     "map_height", "map_width", "chunk", "grid_base"):
            if getattr(self, name) < 1:
                raise ModelError(f"GeoIdConfig.{name} = {getattr(self, name)}: must be >= 1")
        if self.eval_region not in ("land", "sphere"):
            raise ModelError(f"GeoIdConfig.eval_region = {self.eval_region!r}: must be 'land' "
                             "or 'sphere'")
        if self.n_eval <= max(20, self.k_local) + 1 or self.k_local < 2:
            # the global MLEs at k = 10 and 20 need as many neighbours as the local one
            raise ModelError(f"GeoIdConfig: n_eval = {self.n_eval}, k_local = {self.k_local}; "
                             "need 2 <= k_local < n_eval - 1 and n_eval >= 22 (the MLEs use "
                             "k_local, 10 and 20 neighbours of each evaluation point)")
        if not (self.lr > 0 and 0 < self.cap_radius < math.pi):
            raise ModelError(f"GeoIdConfig: lr = {self.lr}, cap_radius = {self.cap_radius}; "
                             "need lr > 0 and 0 < cap_radius < pi")
        check_at_least(self, ridge=0, cap_boost=1, n_pretrain=10)


PRESETS = {
    # quick: 4k pre-training points, 200 steps, 2k land points (~5-10 s on one core)
    "quick": {"procedural-earth": {}},
    # full: the digest's plan (20k points, 2k steps, 20k land points: ~10 min per encoder)
    "full": {"procedural-earth": {"n_pretrain": 20000, "steps": 2000, "n_eval": 20000,
                                  "probe_steps": 1000}},
}


def load_data(dataset: str, cfg: GeoIdConfig):
    """The procedural Earth of ``cfg.seed`` with its point sets (``data.load``)."""
    from models.geo_inr_id import data
    return data.load(cfg.n_pretrain, cfg.n_eval, cfg.seed, cfg.cap_boost,
                     None if cfg.cap_inland else (cfg.cap_lon, cfg.cap_lat), cfg.cap_radius,
                     cfg.eval_region)


def simulate(cfg: GeoIdConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """Pre-train the encoder, embed the land points, measure global IDs (MLE k = 10/20/100,
    TwoNN, FisherS) and the local MLE map, and probe the held-out fields; all on ``device``
    (``model.run``)."""
    from models.geo_inr_id.model import run
    res = run(cfg, device, data, progress)
    return Outcome(res["metrics"], res["traces"], None, res["facts"])


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """ID against resolution per encoder family, ID against probe R^2 across encoders, the
    coverage-bias and grid-artifact checks, over seeds (``experiment.py``)."""
    from models.geo_inr_id.experiment import experiment as run_experiment
    return run_experiment(preset, seed, profiles, progress)


METRICS = {"mle_k*": "ID (dimensions)", "twonn": "ID (dimensions)",
           "fishers": "ID (dimensions)", "local_id_mean": "ID (dimensions)",
           "local_id_std": "ID (dimensions)", "local_id_in_cap": "ID (dimensions)",
           "local_id_out_cap": "ID (dimensions)", "local_id_lon_peak": "cycles per circle",
           "local_id_lon_power_at_base": "1",
           "pretrain_r2": "1", "final_pretrain_mse": "a.u. (squared error, unit-variance "
                                                     "fields)",
           "ridge_r2": "1", "mlp_r2": "1", "probe_activation_twonn": "ID (dimensions)",
           "probe_dead_duplicates": "count"}
"""IDs are in dimensions; R^2 are fractions of variance; the longitude peak in cycles."""

CARD = Card(
    name="geo_inr_id",
    title="Measuring the intrinsic dimension of Earth representations (geographic INRs)",
    reference="ICLR 2026 poster, arXiv:2511.02101 (OpenReview gQPD83DrGp)",
    claim="location encoders' embeddings have low ID (2-10) that rises with encoder "
          "resolution and correlates with probe performance; local ID maps show artifacts "
          "and coverage bias",
    device_kinds=("gpu", "cpu"),
    datasets=DATASETS,
    config=GeoIdConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="procedural-earth",
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    # an intrinsic dimension is what the paper measures, not a score to push up or down
    main_metric="fishers",
    main_metric_better="neither",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, load_data=load_data)
