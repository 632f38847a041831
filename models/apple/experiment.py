"""APPLE against random glimpses and a fixed scan, over seeds, with paired tests.

Per dataset the card's ``simulate`` trains APPLE-CrossQ, APPLE-RND (``random``) and
APPLE-GRID (``scan``) on the same seeds; optionally the ablation whose RL losses do not
train the shared backbone (``rl_into_backbone=False``). RL is noisy, so every comparison is
paired over seeds: per seed the difference of final-step accuracy, its mean and spread, the
number of seeds APPLE wins, and the Wilcoxon signed-rank test (scipy, one-sided "APPLE
greater" and two-sided) with the sign test beside it. With 5 seeds the smallest one-sided
p of either test is 1/32 = 0.031 (every seed one way); two-sided it is 0.0625, so no
two-sided claim can be made at p < 0.05 with 5 seeds.
"""
from __future__ import annotations

import numpy as np

from models.registry import Progress, Study

PLANS = {
    "quick": {"datasets": ("digits",), "ablation": False},
    "full": {"datasets": ("digits", "digits-locate"), "ablation": True},
}


def mean_std(values) -> dict:
    a = np.asarray(values, float)
    return {"mean": float(a.mean()), "std": float(a.std()), "min": float(a.min()),
            "max": float(a.max()), "n": int(a.size), "values": a.tolist()}


def paired(a, b) -> dict:
    """APPLE (``a``) against a baseline (``b``), per seed: difference, wins, tests."""
    from scipy.stats import binomtest, wilcoxon
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = a - b
    out = {"diff": mean_std(d), "wins": int((d > 0).sum()), "losses": int((d < 0).sum()),
           "n": int(d.size)}
    nz = d[d != 0]
    if nz.size:
        out["wilcoxon_p_greater"] = float(wilcoxon(nz, alternative="greater").pvalue)
        out["wilcoxon_p_two_sided"] = float(wilcoxon(nz).pvalue)
        out["sign_p_greater"] = float(binomtest(int((nz > 0).sum()), nz.size, 0.5,
                                                alternative="greater").pvalue)
    else:
        out["wilcoxon_p_greater"] = out["wilcoxon_p_two_sided"] = out["sign_p_greater"] = 1.0
    out["holds"] = bool(out["wins"] == d.size and out["wilcoxon_p_greater"] <= 0.05)
    return out


def summarize(dataset: str, run, ablation=None) -> dict:
    """The per-policy scores of one simulate run (and the ablation's) and the paired tests."""
    per = dict(run.facts["per_seed_final"])
    if ablation is not None:
        per["apple_rl_detached"] = ablation.facts["per_seed_final"]["apple"]
    out = {"task": run.facts["task"], "env_steps": run.metrics["env_steps"],
           "final": {p: mean_std(v) for p, v in per.items()},
           "glance": {p: run.traces[f"glance_{p}"].data.tolist()
                      for p in run.facts["per_seed_final"]}}
    if run.facts["task"] == "locate":
        out["final_error_px"] = {p: run.metrics[f"final_error_px_{p}"]
                                 for p in run.facts["per_seed_final"]}
    if "apple" in per:
        out["paired"] = {f"apple_vs_{p}": paired(per["apple"], v) for p, v in per.items()
                         if p != "apple"}
        if ablation is not None:
            out["paired"]["rl_detached_vs_random"] = paired(per["apple_rl_detached"],
                                                            per["random"])
    return out


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None,
               overrides=None) -> Study:
    """The plan of :data:`PLANS` ``[preset]``; the claim: APPLE's final-step accuracy
    above random glimpses' on every seed (paired, one-sided Wilcoxon p <= 0.05)."""
    from models import runner
    plan = PLANS[preset]
    runs, summary = {}, {}
    for ds in plan["datasets"]:
        extra = {"count": False, **(overrides or {})}
        run = runner.run("apple", profile=profiles.get("gpu"), dataset=ds, preset=preset,
                         seed=seed, overrides=extra, progress=progress)
        runs[ds] = run
        abl = None
        if plan["ablation"]:
            abl = runner.run("apple", profile=profiles.get("gpu"), dataset=ds,
                             preset=preset, seed=seed, progress=progress,
                             overrides={**extra, "policies": "apple",
                                        "rl_into_backbone": False})
            runs[f"{ds}/rl_detached"] = abl
        summary[ds] = summarize(ds, run, abl)
    summary["claim"] = ("APPLE's final-step accuracy beats random glimpses on every seed "
                        "(paired over seeds, one-sided Wilcoxon signed-rank p <= 0.05)")
    summary["claim_met"] = all(summary[ds]["paired"]["apple_vs_random"]["holds"]
                               for ds in plan["datasets"])
    return Study(runs, summary)
