"""TrainRef's comparison at the preset's scale: sym-80 %, 1 reference per class, 3 seeds.

The full grid (20/50/80 % symmetric, 40 % asymmetric, 1 and 5 references) is
``bench/trainref.py``.
"""
from __future__ import annotations

import numpy as np

from models.registry import Progress, Study

KEYS = ("ce_accuracy", "label_smoothing_accuracy", "ce_ts_ece", "trainref_accuracy",
        "trainref_ece", "trainref_ts_ece", "hard_accuracy", "hard_ece", "dstar_precision",
        "dstar_size")


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    from models import runner
    runs = {f"seed{s}": runner.run("trainref", profile=(profiles or {}).get("gpu"),
                                   preset=preset, seed=s, progress=progress)
            for s in range(seed, seed + 3)}
    summary = {}
    for k in KEYS:
        vals = np.array([r.metrics[k] for r in runs.values()])
        summary[k] = {"mean": float(vals.mean()), "std": float(vals.std(ddof=1))}
    mean = {k: v["mean"] for k, v in summary.items()}
    summary["claim"] = ("sym-80 %, 1 ref/class: D*_ref >= 90 % clean, TrainRef >= CE + 15 "
                        "points")
    summary["claim_met"] = bool(mean["dstar_precision"] >= 0.9
                                and mean["trainref_accuracy"] >= mean["ce_accuracy"] + 0.15)
    return Study(runs, summary)
