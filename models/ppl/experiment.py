"""PPL's comparison over seeds: the learned prior against a frozen random template (the
digest's check a, after the paper's Tab. 2), and iterative inference against one pass under
occlusion (check d, after App. Figs. A4/A5)."""
from __future__ import annotations

import numpy as np

from models import runner
from models.registry import Progress, Study

SEEDS = 3


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """For seeds ``seed .. seed + 2``: PPL (learned prior) and the frozen random template,
    same data and steps. ``claim_met``: the learned prior's mean error is >= 10% below the
    frozen one's and the mean iteration gain is <= 0.95."""
    runs, rows = {}, []
    for s in range(seed, seed + SEEDS):
        for prior in ("learned", "frozen_random"):
            r = runner.run("ppl", profile=profiles.get("gpu"), preset=preset, seed=s,
                           overrides={"prior": prior}, progress=progress)
            runs[f"{prior}/seed{s}"] = r
            rows.append({"seed": s, "prior": prior, **r.metrics})

    def stat(prior, key):
        v = np.array([r[key] for r in rows if r["prior"] == prior and key in r])
        return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0}
    summary = {"learned_error": stat("learned", "keypoint_error"),
               "frozen_random_error": stat("frozen_random", "keypoint_error"),
               "iteration_gain": stat("learned", "iteration_gain")}
    rel = 1 - summary["learned_error"]["mean"] / summary["frozen_random_error"]["mean"]
    summary["relative_gain"] = float(rel)
    summary["checks"] = {"learned_prior_helps": bool(rel >= 0.10),
                         "iteration_helps": bool(summary["iteration_gain"]["mean"] <= 0.95)}
    summary["claim"] = ("learned prior >= 10% lower keypoint error than a frozen random "
                        "template; 4 iterations <= 0.95 x one-pass error under occlusion")
    summary["claim_met"] = bool(all(summary["checks"].values()))
    summary["rows"] = rows
    return Study(runs, summary)
