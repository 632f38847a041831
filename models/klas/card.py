"""The KLAS card: its config, presets and the three contract functions.

Light on purpose (no torch at import): ``neuroedge models`` imports every card. The
pipeline (anchors, probes, scores, stitches, selections, supernets) is in ``model.py``, the
claim's summary in ``experiment.py``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, Trained, register
from sim.errors import ModelError

if TYPE_CHECKING:   # the engine, imported only for the annotation (cards stay light)
    from sim.torch_engine.engine import TorchDevice


@dataclass
class KLASConfig:
    """Full bench scale by default (fits ~15 min of one shared CPU core); the quick preset
    shrinks it."""

    widths: tuple[int, ...] = (24, 40, 64)   # "Ti/S/B": ~2.5x FLOPs steps (DeiT: ~4x)
    heads: tuple[int, ...] = (2, 2, 4)       # head width 12-20
    depth: int = 4                           # 4 x 3 = 12 stitches per anchor pair
    patch: int = 7                           # 16 patches + CLS = 17 tokens
    n_train: int = 6000                      # Fashion-MNIST training subset
    n_val: int = 1000                        # D_v: probes' KL, CKA and LS init
    n_test: int = 1500
    anchor_epochs: int = 4
    batch_size: int = 128
    lr: float = 3e-3                         # peak of the warm-up + cosine schedule
    probe_epochs: int = 20                   # cheap: linear layers on cached frozen features
    probe_lr: float = 1e-2
    ls_samples: int = 256                    # 256 x 17 tokens >> d_f + 1 unknowns
    stitch_steps: int = 60                   # per-stitch fine-tune (ground truth)
    stitch_lr: float = 1e-3
    n_buckets: int = 8
    tau: float = 0.05                        # the paper's default
    supernet_steps: int = 500
    supernet_lr: float = 5e-4
    seed: int = 0

    def __post_init__(self):
        self.widths, self.heads = tuple(self.widths), tuple(self.heads)
        if len(self.widths) != len(self.heads) or len(self.widths) < 2:
            raise ModelError(f"KLASConfig: widths {self.widths} and heads {self.heads} must "
                             "have the same length >= 2 (one entry per anchor)")
        if any(a >= b for a, b in zip(self.widths, self.widths[1:], strict=False)):
            raise ModelError(f"KLASConfig.widths = {self.widths}: list anchors from cheapest "
                             "to costliest (strictly increasing widths: equal anchors leave "
                             "no FLOPs range to bucket)")
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name not in ("tau", "seed", "widths", "heads") and not v > 0:
                raise ModelError(f"KLASConfig.{f.name} = {v}: must be > 0")
        if self.tau < 0:
            raise ModelError(f"KLASConfig.tau = {self.tau}: must be >= 0")
        if self.depth < 2:
            raise ModelError(f"KLASConfig.depth = {self.depth}: stitching needs >= 2 blocks")
        if self.batch_size < 2:   # stitch fine-tunes and the supernet take batch_size // 2
            raise ModelError(f"KLASConfig.batch_size = {self.batch_size}: must be >= 2 (the "
                             "stitch fine-tunes and the supernet train on batch_size // 2)")

    @classmethod
    def quick(cls, **overrides) -> KLASConfig:
        """The quick preset's config (:data:`PRESETS`), with ``overrides``."""
        return cls(**{**PRESETS["quick"]["fashion-mnist"], **overrides})


PRESETS = {
    # quick (3-5 minutes on a shared 2-core machine: three anchors, probes, stitch
    # fine-tunes and a supernet): narrower, shallower anchors on 2000 images; full: the
    # defaults
    "quick": {"fashion-mnist": dict(widths=(16, 24, 32), heads=(2, 2, 2), depth=3,
                                    n_train=2000, n_val=300, n_test=500, anchor_epochs=5,
                                    probe_epochs=10, ls_samples=128, stitch_steps=20,
                                    n_buckets=4, supernet_steps=120)},
    "full": {"fashion-mnist": {}},
}


def load_data(dataset: str, cfg: KLASConfig):
    """Fashion-MNIST: ``n_train + n_val`` training images (train, then D_v), ``n_test`` test."""
    from models.klas import data
    return data.load(dataset, cfg)


def simulate(cfg: KLASConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """The KLAS pipeline on ``device``: every stitch scored and measured, the selections
    compared; ``trained`` is the KLAS-selected stitch nearest the middle of the FLOPs range
    after the supernet's fine-tuning (what ``neuroedge export klas`` writes)."""
    from models.klas.model import run, summarise, trained
    res = run(cfg, device, data, progress)
    metrics, facts, traces = summarise(res)
    return Outcome(metrics, traces, trained(res, data.x_test[:8]), facts)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """KLAS's claim at small scale: the KL stitch score ranks stitches better than CKA, and
    KLAS's accuracy-FLOPs frontier is at least SN-Net's heuristic's (``experiment.py``)."""
    from models.klas.experiment import experiment as run_experiment
    return run_experiment(preset, seed, profiles, progress)


def artifact(trained: Trained, target: str):
    """The exported stitched ViT as a torch module with example images (``onnx``)."""
    from models.klas.model import torch_artifact
    return torch_artifact(trained)


METRICS = {"spearman_klas_gamma_vs_acc_ft": "1",   # the claim's figure (the headline)
           "anchor*_accuracy": "1", "anchor*_flops": "FLOPs", "spearman_*": "1",
           "kendall_*": "1", "oracle_auc_*": "1", "recovery_*": "1", "n_selected_*": "count",
           "supernet_auc_*": "1", "klas_direct_stitching": "1"}
"""Metric units (``*``: one metric per anchor, score or selection): accuracies, rank
correlations, normalised frontier areas and recovery are dimensionless;
``klas_direct_stitching`` is 1 or 0."""

CARD = Card(
    name="klas",
    title="KLAS: KL-divergence-based anchor stitching for accuracy-efficiency tradeoffs",
    reference="ICLR 2026, openreview.net/forum?id=iTaQmRWa7Y; SN-Net: arXiv:2302.06586",
    claim="the KL probe score ranks stitches better than CKA; KLAS's accuracy-FLOPs "
          "frontier is at least SN-Net's heuristic's",
    device_kinds=("gpu", "cpu"),
    datasets=("fashion-mnist",),
    config=KLASConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="fashion-mnist",
    exports=("onnx",),
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    main_metric="spearman_klas_gamma_vs_acc_ft",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, artifact=artifact,
                  load_data=load_data)
