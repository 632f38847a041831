"""Joint against decoupled prototypes over 3 seeds (the paper's comparison, Sec. 4-5, at
Fashion-MNIST scale): unique-prototype fractions at three tolerances, usage entropy, k-NN.

Each seed is one card run (both variants from that seed). The claim's checks are the
digest's acceptance (c) and (d): the joint variant below 50% unique at eps = 0.025, the
decoupled one at or above 99% at every eps for every measurement, and the decoupled k-NN
accuracy no more than 1 point below the joint one.
"""
from __future__ import annotations

import numpy as np

from models.decoupled_prototypes.card import EPSILONS
from models.registry import Progress, Study

SEEDS = 3


def spread(values) -> dict:
    """Mean, sample std and the values themselves."""
    v = np.asarray(values, dtype=float)
    return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
            "values": [float(x) for x in v]}


def summarise(runs: dict) -> dict:
    """The seeds' metrics as mean / std and the claim checks."""
    names = sorted(next(iter(runs.values())).metrics)
    summary = {name: spread([r.metrics[name] for r in runs.values()]) for name in names}
    joint_collapses = summary["joint_min_unique_eps0.025"]["mean"] < 0.5
    decoupled_unique = all(summary[f"decoupled_min_unique_eps{e}"]["values"][i] >= 0.99
                           for e in EPSILONS for i in range(len(runs)))
    knn_ok = (summary["decoupled_knn_accuracy"]["mean"]
              >= summary["joint_knn_accuracy"]["mean"] - 0.01)
    summary.update({"seeds": len(runs), "joint_collapses": joint_collapses,
                    "decoupled_stays_unique": decoupled_unique, "knn_not_worse": knn_ok,
                    "claim": "joint prototypes collapse (< 50% unique at eps 0.025); decoupled "
                             "ones stay >= 99% unique at every eps; k-NN not worse by > 1 pp",
                    "claim_met": bool(joint_collapses and decoupled_unique and knn_ok)})
    return summary


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None,
               overrides: dict | None = None, seeds: int = SEEDS) -> Study:
    """``seeds`` card runs at ``preset`` (plus ``overrides``) from ``seed`` up."""
    from models import runner
    profile = (profiles or {}).get("gpu", "a100")
    runs = {f"seed{s}": runner.run("decoupled_prototypes", profile=profile, preset=preset,
                                   seed=s, overrides=overrides or {}, progress=progress)
            for s in range(seed, seed + seeds)}
    return Study(runs, summarise(runs))
