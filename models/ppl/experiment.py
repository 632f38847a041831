"""PPL's comparison over seeds: the learned prior against a frozen random template (the
digest's check a, after the paper's Tab. 2), iterative inference against one pass under
occlusion (check d, after App. Figs. A4/A5), and the digest's checks b, c, e on the
learned runs."""
from __future__ import annotations

import numpy as np

from models import runner
from models.registry import Progress, Study

SEEDS = 3
PRIORS = ("learned", "frozen_random")


def _stat(values) -> dict:
    v = np.asarray(values, float)
    return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
            "min": float(v.min()), "max": float(v.max())}


def _check(measured: float, needs: str, per_seed: list[bool], holds: bool) -> dict:
    return {"measured": float(measured), "needs": needs, "holds": bool(holds),
            "seeds_holding": f"{sum(per_seed)}/{len(per_seed)}"}


def summarize(runs: dict) -> dict:
    """Mean +- std per prior and metric, and the digest's checks a-e from runs keyed
    ``"<prior>/seed<s>"``. A check holds on the mean over seeds; ``seeds_holding`` counts
    the seeds on which it holds alone (a-e are the digest's thresholds, unchanged)."""
    by = {p: {int(k.split("seed")[1]): r.metrics for k, r in runs.items()
              if k.startswith(p + "/")} for p in PRIORS}
    table = {}
    for p, seeds in by.items():
        if seeds:
            keys = set.intersection(*(set(m) for m in seeds.values()))
            table[p] = {k: _stat([m[k] for m in seeds.values()]) for k in sorted(keys)}
    lrn = by["learned"]
    checks = {}
    if by["frozen_random"]:
        both = sorted(set(lrn) & set(by["frozen_random"]))
        rel = 1 - (table["learned"]["keypoint_error"]["mean"]
                   / table["frozen_random"]["keypoint_error"]["mean"])
        checks["a_learned_prior_helps"] = _check(
            rel, ">= 0.10 rel. gain",
            [1 - lrn[s]["keypoint_error"] / by["frozen_random"][s]["keypoint_error"] >= 0.10
             for s in both], rel >= 0.10)
    ratio = [lrn[s]["template_procrustes"] / lrn[s]["template_procrustes_init"] for s in lrn]
    checks["b_prior_emerges"] = _check(np.mean(ratio), "< 0.5 end/start",
                                       [r < 0.5 for r in ratio], np.mean(ratio) < 0.5)
    rec = [lrn[s]["link_recall"] for s in lrn]
    checks["c_link_recall"] = _check(np.mean(rec), ">= 0.5", [r >= 0.5 for r in rec],
                                     np.mean(rec) >= 0.5)
    gain = [lrn[s]["iteration_gain"] for s in lrn]
    checks["d_iteration_helps"] = _check(np.mean(gain), "<= 0.95 iter/one",
                                         [g <= 0.95 for g in gain], np.mean(gain) <= 0.95)
    shrink = [lrn[s]["prototype_distance_shrinks"] for s in lrn]
    checks["d_toward_prototypes"] = _check(np.mean(shrink), "= 1 (every it.)",
                                           [v == 1 for v in shrink], min(shrink) == 1)
    ppx = [lrn[s]["min_bank_perplexity"] for s in lrn]
    checks["e_bank_perplexity"] = _check(np.mean(ppx), "> 2 codes", [v > 2 for v in ppx],
                                         np.mean(ppx) > 2)
    gap = [lrn[s]["memory_gap"] for s in lrn]
    checks["e_memory_gap"] = _check(np.mean(gap), "< 0.05 units", [v < 0.05 for v in gap],
                                    np.mean(gap) < 0.05)
    return {"table": table, "checks": checks,
            "claim": "learned prior >= 10% lower keypoint error than a frozen random "
                     "template; 4 iterations <= 0.95 x one-pass error under occlusion",
            "claim_met": bool(checks.get("a_learned_prior_helps", {}).get("holds", False)
                              and checks["d_iteration_helps"]["holds"]),
            "rows": [{"run": k, **r.metrics} for k, r in sorted(runs.items())]}


def run_pairs(preset: str, seed: int, seeds: int, profiles, overrides=None,
              progress: Progress | None = None) -> Study:
    """Learned prior and frozen random template for seeds ``seed .. seed + seeds - 1``, the
    same data and steps per seed."""
    runs = {}
    for s in range(seed, seed + seeds):
        for prior in PRIORS:
            runs[f"{prior}/seed{s}"] = runner.run(
                "ppl", profile=profiles.get("gpu"), preset=preset, seed=s,
                overrides={**(overrides or {}), "prior": prior}, progress=progress)
    return Study(runs, summarize(runs))


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """Three seeds of :func:`run_pairs` on the preset."""
    return run_pairs(preset, seed, SEEDS, profiles, None, progress)
