"""KLAS (KL-divergence-based anchor stitching, ICLR 2026) on a family of three tiny ViTs.

Modules: ``vit`` (anchors), ``stitch`` (SN-Net's LS-initialised linear stitching layer and
the stitched network), ``scores`` (probes, KL, stitch score, FLOPs-bucket selection, CKA and
SN-Net baselines), ``experiment`` (the pipeline). This module registers the card:
``simulate`` runs the quick experiment, ``export`` writes a KLAS-selected stitched ViT as ONNX.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from models.klas.experiment import KLASConfig, run
from models.klas.stitch import StitchedViT, StitchLayer, least_squares
from models.klas.vit import TinyViT
from models.registry import ModelCard, Progress, RunResult, register

__all__ = ["KLASConfig", "run", "simulate", "experiment", "StitchedViT", "StitchLayer",
           "TinyViT", "least_squares", "summarise", "export"]


def summarise(res: dict) -> tuple[dict, dict, dict]:
    """(metrics, config, traces) of a ``run`` result, plain values for a run file."""
    cfg, corr = res["config"], res["corr"]
    m: dict[str, float] = {}
    for a, (acc, fl) in enumerate(zip(res["anchor_acc"], res["anchor_flops"])):
        m[f"anchor{a}_accuracy"], m[f"anchor{a}_flops"] = acc, fl
    for target, by_score in corr.items():
        for score, cc in by_score.items():
            for stat, v in cc.items():
                m[f"{stat}_{score}_vs_{target}"] = v
    for name, o in res["oracle"].items():
        m[f"oracle_auc_{name}"], m[f"recovery_{name}"] = o["auc"], o["recovery"]
        m[f"n_selected_{name}"] = float(o["n"])
    for name, sn in res["supernets"].items():
        m[f"supernet_auc_{name}"] = sn["auc"]
    m["klas_direct_stitching"] = float(len(res["klas_pairs"]) == 1)
    config = {**asdict(cfg), "widths": list(cfg.widths), "heads": list(cfg.heads),
              "klas_pairs": [list(p) for p in res["klas_pairs"]],
              "last_block_kl": {f"{a}-{b}": v for (a, b), v in res["last_kl"].items()},
              "selected": {k: [s.name for s in v] for k, v in res["selected"].items()},
              "torch_device": str(res["device"].torch_device)}
    st, tab = res["stitches"], res["table"]
    traces = {c: np.array([tab[s][c] for s in st], dtype=np.float64)
              for c in ("flops", "gamma", "omega", "cka", "acc_ls", "acc_ft")}
    traces["stitch_front_back_i_j"] = np.array([[s.front, s.back, s.i, s.j] for s in st])
    return m, config, traces


def simulate(profile="a100", dataset="fashion-mnist", seed: int = 0, quick: bool = True,
             progress: Progress | None = None, **overrides) -> RunResult:
    """Run the KLAS experiment (quick: ~1 min on one CPU core) and return its counts and figures."""
    from sim.errors import ModelError
    if dataset.lower().replace("_", "-") != "fashion-mnist":
        raise ModelError(f"klas: dataset {dataset!r} is not supported; KLAS runs on "
                         "'fashion-mnist' (28x28 images for the ViT patch grid)")
    cfg = KLASConfig.quick(seed=seed, **overrides) if quick else KLASConfig(seed=seed, **overrides)
    res = run(cfg, profile, progress)
    metrics, config, traces = summarise(res)
    return RunResult("klas", res["device"].profile, "fashion-mnist", config, metrics,
                     res["device"].ledger, traces)


def experiment(quick: bool = True, profile="a100", seed: int = 0) -> RunResult:
    """KLAS's claim at small scale: the KL stitch score ranks stitches better than CKA, and
    the KLAS selection's accuracy-FLOPs frontier is at least SN-Net's heuristic's."""
    return simulate(profile=profile, seed=seed, quick=quick)


def export_stitched(model: StitchedViT, out, n_check: int = 8, seed: int = 0,
                    force: bool = False) -> Path:
    """Write a stitched ViT as ONNX (input (B, 784) pixels in [0, 1]) and check it in onnxruntime."""
    from deploy.onnx_export import export_onnx  # deploy imports models, not back
    x = torch.rand(n_check, model.n_inputs, generator=torch.Generator().manual_seed(seed))
    path = export_onnx(model, x, out, input_names=("pixels",), output_names=("logits",),
                       check_inputs=x, force=force)
    return path


def export(target: str, out, *, seed: int = 0, quick: bool = True, progress=None,
           force: bool = False) -> Path:
    """Train the family, select with KLAS, fine-tune the supernet, and export the KLAS-selected
    stitch closest to the middle of the family's FLOPs range as ONNX."""
    cfg = KLASConfig.quick(seed=seed) if quick else KLASConfig(seed=seed)
    res = run(cfg, progress=progress)
    mid = 0.5 * (res["anchor_flops"][0] + res["anchor_flops"][-1])
    chosen = min(res["selected"]["klas"], key=lambda s: abs(res["table"][s]["flops"] - mid))
    return export_stitched(res["supernets"]["klas"]["nets"][chosen.name], out, seed=seed,
                           force=force)


CARD = register(ModelCard(
    name="klas",
    title="KLAS: KL-divergence-based anchor stitching for accuracy-efficiency tradeoffs",
    reference="ICLR 2026, openreview.net/forum?id=iTaQmRWa7Y; SN-Net: arXiv:2302.06586",
    claim="the KL probe score ranks stitches better than CKA; KLAS's accuracy-FLOPs "
          "frontier is at least SN-Net's heuristic's",
    device_kinds=("gpu", "cpu"),
    datasets=("fashion-mnist",),
    default_dataset="fashion-mnist",
    default_profile="a100",
    simulate=simulate,
    exports=("onnx",),
    export=export,
    export_dataset="fashion-mnist",
))
