"""DISCO's study: the card's protocol (``model.run_protocol``) over 3 seeds and the four data
sets, and the digest's claim: PCC(DISCO, ARI) >= PCC(Silhouette, ARI) on moons and circles.
"""
from __future__ import annotations

import numpy as np

from models.registry import Progress, Study

PLANS = {"quick": {"seeds": 3, "overrides": {}}, "full": {"seeds": 3, "overrides": {}}}
"""Seeds per data set (from the study's seed up) and config overrides of the preset."""


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """PCC with ARI of DISCO and Silhouette, per data set over the seeds of :data:`PLANS`."""
    from models import runner
    from models.disco.card import DATASETS
    plan = PLANS[preset]
    seeds = plan["seeds"]
    runs, per = {}, {d: {"disco": [], "silhouette": []} for d in DATASETS}
    total, done = len(DATASETS) * seeds, 0
    for dataset in DATASETS:
        for s in range(seed, seed + seeds):
            run = runner.run("disco", profile=profiles.get("gpu"), dataset=dataset,
                             preset=preset, seed=s, overrides=plan["overrides"])
            runs[f"{dataset}/seed{s}"] = run
            per[dataset]["disco"].append(run.metrics["pcc_disco_ari"])
            per[dataset]["silhouette"].append(run.metrics["pcc_silhouette_ari"])
            done += 1
            if progress:
                progress(done, total, {"dataset": dataset, "seed": s})
    summary = {"seeds": seeds}
    for dataset, vals in per.items():
        for key, v in vals.items():
            summary[f"{dataset}_pcc_{key}_mean"] = float(np.nanmean(v))
            summary[f"{dataset}_pcc_{key}_std"] = float(np.nanstd(v))
    summary["claim"] = ("PCC(DISCO, ARI) >= PCC(Silhouette, ARI) on moons and circles "
                        "(mean over seeds)")
    summary["claim_met"] = bool(all(
        summary[f"{d}_pcc_disco_mean"] >= summary[f"{d}_pcc_silhouette_mean"]
        for d in ("moons", "circles")))
    return Study(runs, summary)
