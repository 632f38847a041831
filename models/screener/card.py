"""The Screener card: config, presets and the three contract functions (no torch at import).

Goncharov et al., "Modeling the Density of Pixel-level Self-supervised Embeddings for
Unsupervised Pathology Segmentation in Medical CT" (Screener), ICLR 2026, arXiv:2502.08321.
The parts are in ``model.py``, the run in ``run.py``, the volumes in ``data.py``, the
pictures in ``pictures.py`` and the multi-seed study in ``experiment.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, Trained, register
from sim.errors import ModelError
from sim.traces import Trace, curve

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice

VARIANT_NAMES = ("gauss_none", "gauss_sincos", "gauss_mask", "flow_none", "flow_mask",
                 "gauss_mask_randf")


@dataclass
class ScreenerConfig:
    """Quick setting (the digest's small-scale plan, shrunk to fit the contract run)."""

    shape: tuple[int, ...] = (16, 24, 24)     # volume D, H, W (digest: 32 x 48 x 48)
    crop: tuple[int, ...] = (8, 12, 12)       # SSL crop (digest: 16 x 24 x 24)
    train: int = 24                 # unlabeled training volumes (15 % hold lesions)
    test: int = 6                   # test volumes, 1-3 lesions each
    contamination: float = 0.15     # the paper's premise: lesions rare, not absent
    d: int = 16                     # descriptor and condition dims (paper 32)
    width: int = 4                  # UNet base width 4 -> 8 -> 16 (digest 8)
    expander: int = 128             # VICReg expander width (digest 256; paper up to 8192)
    max_shift: int = 4              # crop-origin offset between the two views (overlap)
    pairs: int = 128                # voxel pairs per crop pair
    batch: int = 4                  # crop pairs (and density volumes) per step
    ssl_steps: int = 30
    density_steps: int = 100
    lr: float = 3e-3                # AdamW peak (one-cycle); paper 3e-4 at 300k steps
    density_lr: float = 3e-3
    noise: float = 0.1              # sigma on y and c while fitting the density (App. D)
    variants: tuple[str, ...] = VARIANT_NAMES
    deployed: str = "gauss_mask"    # the variant counted and reported as `auroc`
    count_steps: int = 2            # counted steps of each training loop (the rest run
                                    # uncounted: every step costs the same ops)
    seed: int = 0

    def __post_init__(self):
        self.shape, self.crop, self.variants = (tuple(self.shape), tuple(self.crop),
                                                tuple(self.variants))
        if len(self.shape) != 3 or any(s < 8 or s % 4 for s in self.shape):
            raise ModelError(f"ScreenerConfig.shape = {self.shape}: three sides, each >= 8 "
                             "and a multiple of 4")
        if len(self.crop) != 3 or any(c % 4 or c < 8 or c > s
                                      for c, s in zip(self.crop, self.shape, strict=True)):
            raise ModelError(f"ScreenerConfig.crop = {self.crop}: three sides, multiples of 4, "
                             f">= 8 and within shape {self.shape}")
        bad = [v for v in self.variants if v not in VARIANT_NAMES]
        if bad or not self.variants:
            raise ModelError(f"ScreenerConfig.variants = {self.variants}: each must be one of "
                             f"{VARIANT_NAMES}")
        twice = sorted({v for v in self.variants if self.variants.count(v) > 1})
        if twice:   # a variant's metrics and maps are keyed by its name: the second overwrote
            raise ModelError(f"ScreenerConfig.variants = {self.variants}: {', '.join(twice)} "
                             "given twice; give each variant once")
        if self.deployed not in self.variants:
            raise ModelError(f"ScreenerConfig.deployed = {self.deployed!r}: must be one of "
                             f"the variants run, {self.variants}")
        if self.count_steps < 0:
            raise ModelError(f"ScreenerConfig.count_steps = {self.count_steps}: must be >= 0")
        if not self.max_shift >= 0:   # the second crop's offset is drawn in [-s, s]
            raise ModelError(f"ScreenerConfig.max_shift = {self.max_shift}: must be >= 0 "
                             "(voxels between the two views' crop origins)")
        for name in ("train", "test", "d", "width", "expander", "pairs", "batch", "ssl_steps",
                     "density_steps"):
            if getattr(self, name) < 1:
                raise ModelError(f"ScreenerConfig.{name} = {getattr(self, name)}: must be >= 1")
        if self.d % 2:
            raise ModelError(f"ScreenerConfig.d = {self.d}: must be even (the flow's couplings "
                             "split it in halves)")
        if not 0 <= self.contamination <= 1:
            raise ModelError(f"ScreenerConfig.contamination = {self.contamination}: must be "
                             "in [0, 1]")
        if not (self.lr > 0 and self.density_lr > 0 and self.noise >= 0):
            raise ModelError(f"ScreenerConfig: lr = {self.lr}, density_lr = {self.density_lr} "
                             f"must be > 0 and noise = {self.noise} >= 0")


PRESETS = {
    # quick: 30 SSL and 100 density steps (a demo: the nets barely train; ~20 s)
    "quick": {"synthetic-ct": {}},
    # full: the smallest scale at which the paper's Gaussian-row effects show here (the
    # bench's): 48 train / 12 test volumes, 300 SSL and 1000 density steps (~2-3 min a run
    # on one CPU thread). The digest's 32 x 48 x 48, 2k-step plan was not run (~8x longer).
    "full": {"synthetic-ct": {"train": 48, "test": 12, "ssl_steps": 300,
                              "density_steps": 1000}},
}


def load_data(dataset: str, cfg: ScreenerConfig):
    """(train, test) ``data.Volumes``: procedural volumes from the named seed streams
    ``("data", "train")`` and ``("data", "test")`` of ``cfg.seed``."""
    from models.screener.data import make_volumes
    from sim import seeds
    if dataset != "synthetic-ct":
        raise ModelError(f"screener: dataset {dataset!r}; the only one is 'synthetic-ct'")
    train = make_volumes(cfg.train, cfg.shape, cfg.contamination,
                         seed=seeds.child(cfg.seed, "data", "train"))
    test = make_volumes(cfg.test, cfg.shape, 1.0, seed=seeds.child(cfg.seed, "data", "test"))
    return train, test


def simulate(cfg: ScreenerConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """Train f, g, every density variant; score the test volumes (``run.run``).

    Ledger scopes, each holding only what is counted (the first ``count_steps`` steps of
    a loop, one batch of training features; the deployed variant only): ``train/descriptor``,
    ``train/condition``, ``features/train``, ``infer/features``,
    ``train/density/<deployed>``, ``infer/density/<deployed>``. The ablation variants and
    the invariance probe run uncounted.
    """
    import numpy as np
    import torch

    from models.screener.pictures import pictures
    from models.screener.run import run
    threads = torch.get_num_threads()
    # one thread: these small 3D convs gain little from a second, and on the shared loaded
    # machine two threads per process thrash (a tiny run: 9 s on one thread, 43 s on two)
    torch.set_num_threads(1)
    try:
        res = run(cfg, device, data, progress)
    finally:
        torch.set_num_threads(threads)
    m = res["metrics"]
    m["auroc"] = m[f"auroc_{cfg.deployed}"]
    traces = {f"{k}_loss": curve(v) for k, v in res["losses"].items()}
    # anomaly_maps: the paper's Gaussian rows (deployed, marginal, sin-cos) in a 2 x 2 grid,
    # large enough to read in the report; anomaly_maps_all_variants: every variant, 4 a row
    shown = {cfg.deployed: res["maps"][cfg.deployed],
             **{k: v for k, v in res["maps"].items() if k != cfg.deployed}}
    main = {k: v for k, v in shown.items() if k in (cfg.deployed, "gauss_none", "gauss_sincos")}
    traces["anomaly_maps"] = Trace("pictures", pictures(data[1], main, cols=2))
    traces["anomaly_maps_all_variants"] = Trace("pictures", pictures(data[1], shown, cols=4))
    facts = {"anomaly_maps_panels": ["image + lesion outline (cyan)",
                                     *[f"{v} heat" for v in main]],
             "anomaly_maps_all_variants_panels": ["image + lesion outline (cyan)",
                                                  *[f"{v} heat" for v in shown]],
             "counted": f"first {cfg.count_steps} steps of each SSL loop and of the "
                        f"{cfg.deployed} density; f, g and {cfg.deployed} on the test volumes",
             "torch_device": str(device.torch_device), "data_source": "procedural (data.py)",
             "test_lesion_fraction": float(np.mean(data[1].lesion))}
    return Outcome(m, traces, None, facts)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """Three seeds: every variant at 15 % contamination, the deployed variant at 0 %; mean
    and std of each AUROC, the paired gaps and the digest's checks a-e, each judged on the
    mean and counted seed by seed (``experiment.py``)."""
    from models.screener.experiment import per_seed_metrics, seed_runs, summarize
    runs = seed_runs(preset, range(seed, seed + 3), (profiles or {}).get("gpu"),
                     progress=progress)
    summary = summarize(per_seed_metrics(runs))
    summary["claim"] = ("the masking-invariant condition lifts a Gaussian density's voxel "
                        "AUROC over no condition and over sin-cos positions; conditions move "
                        "less than descriptors where a lesion is inserted")
    summary["claim_met"] = all(summary["checks"][k]["holds_on_mean"]
                               for k in ("a_vs_none_ge_+0.05", "a_vs_sincos_ge_+0.03",
                                         "c_ratio_le_0.5"))
    return Study(runs, summary)


def artifact(trained: Trained, target: str):
    raise ModelError(f"screener: no export target {target!r}; the card exports nothing")


METRICS = {"auroc": "1", "auroc_*": "1", "pauroc30_*": "1", "invariance_ratio": "1",
           "delta_condition": "a.u. (standardised feature distance)",
           "delta_descriptor": "a.u. (standardised feature distance)"}
"""AUROCs are fractions, over body voxels (lesion voxels against the body's other voxels; air
outside the body is no negative: the paper's crop to > -500 HU); pauroc30 is sklearn's
McClish-standardised partial AUC to FPR 0.3; deltas are mean per-voxel distances of
channel-standardised features over lesion voxels."""

CARD = Card(
    name="screener",
    title="Screener: density of self-supervised voxel embeddings for unsupervised "
          "pathology segmentation in 3D CT",
    reference="Goncharov et al., ICLR 2026, arXiv:2502.08321",
    claim="dense-SSL descriptors scored by a density conditioned on masking-invariant "
          "SSL conditions segment lesions without labels (AUROC 0.96/0.84/0.87/0.90 with a "
          "Gaussian, vs 0.81/0.81/0.61/0.71 unconditioned, v1 Tab. 3)",
    device_kinds=("gpu", "cpu"),
    datasets=("synthetic-ct",),
    config=ScreenerConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="synthetic-ct",
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    main_metric="auroc",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, load_data=load_data)
