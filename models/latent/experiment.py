"""The PROBE comparison over seeds: LatEnt, observation entropy, a random policy (and the
state-entropy oracle and the no-regulariser ablation where asked), then the downstream
sparse task from LatEnt pre-training against scratch.

Reinforcement learning is noisy, so every claim is a paired comparison over seeds (seed
``s`` of LatEnt against seed ``s`` of the baseline: the same environment noise streams and
initial states), tested with the one-sided Wilcoxon signed-rank test
(``scipy.stats.wilcoxon(a, b, alternative="greater")``); with 5 seeds its smallest p-value
is 1/32 = 0.031, reached only when all five differences are positive, so a claim at
p < 0.05 needs every seed to agree. The sign test (``scipy.stats.binomtest``) is reported
beside it. Spreads are the standard deviation and min..max over seeds.

The measured outcome is in the room's README.
"""
from __future__ import annotations

import numpy as np

from models.registry import Progress, Study

PLANS = {"quick": {"seeds": 5, "iterations": 20},
         "full": {"seeds": 5, "iterations": 60}}
"""``experiment`` per preset: seeds (>= 5: every claim is over five seeds or more) and
pre-training iterations on each environment."""


def paired(a, b) -> dict:
    """One-sided paired tests that ``a`` > ``b`` over seeds: Wilcoxon signed-rank p, sign
    test p, wins, mean difference and its min..max."""
    from scipy.stats import binomtest, wilcoxon
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = a - b
    wins, ties = int((d > 0).sum()), int((d == 0).sum())
    nonzero = d[d != 0]
    p_w = float(wilcoxon(nonzero, alternative="greater").pvalue) if nonzero.size else 1.0
    p_s = float(binomtest(wins, d.size - ties, 0.5, alternative="greater").pvalue) \
        if d.size > ties else 1.0
    return {"mean_diff": float(d.mean()), "min_diff": float(d.min()),
            "max_diff": float(d.max()), "wins": wins, "n": int(d.size),
            "wilcoxon_p": p_w, "sign_p": p_s, "holds": bool(p_w < 0.05)}


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """Each environment with LatEnt, observation entropy and random over the plan's seeds,
    the no-regulariser ablation on the noisy puck and the masked pendulum, and the four-rooms
    downstream task; a paired test per claim."""
    from models import runner
    plan = PLANS[preset]
    base = {"seeds": plan["seeds"], "iterations": plan["iterations"]}
    specs = {
        "masked-pendulum": {"methods": ("latent", "observation", "random", "latent_noreg")},
        "noisy-puck": {"methods": ("latent", "observation", "random", "latent_noreg")},
        "four-rooms": {"methods": ("latent", "observation", "random"),
                       "finetune_iterations": plan["iterations"]},
    }
    runs = {env: runner.run("latent", profile=profiles.get("gpu"), dataset=env, preset=preset,
                            seed=seed, overrides={**base, **spec}, progress=progress)
            for env, spec in specs.items()}
    summary = summarise(runs)
    return Study(runs, summary)


def _per_seed(run, method: str, key: str = "state_entropy") -> np.ndarray:
    tr = run.traces[f"final_{key}_per_seed"]
    return tr.data[:, list(tr.columns).index(method)]


def summarise(runs) -> dict:
    """The claims of the digest's acceptance checks as paired tests over seeds."""
    out = {"test": "one-sided Wilcoxon signed-rank over paired seeds (scipy.stats.wilcoxon, "
                   "alternative='greater'); sign test beside it"}
    for env, run in runs.items():
        out[f"{env}/latent_gt_observation"] = paired(_per_seed(run, "latent"),
                                                     _per_seed(run, "observation"))
        out[f"{env}/observation_gt_random"] = paired(_per_seed(run, "observation"),
                                                     _per_seed(run, "random"))
        cols = run.traces["final_state_entropy_per_seed"].columns
        if "latent_noreg" in cols:
            out[f"{env}/latent_gt_noreg"] = paired(_per_seed(run, "latent"),
                                                   _per_seed(run, "latent_noreg"))
        if "final_puck_distance_per_seed" in run.traces and "observation" in cols:
            # the trap: more observed-puck entropy, less true-state entropy, farther away
            out[f"{env}/observation_gt_latent_observed_puck_entropy"] = paired(
                _per_seed(run, "observation", "observed_puck_entropy"),
                _per_seed(run, "latent", "observed_puck_entropy"))
            out[f"{env}/observation_gt_latent_puck_distance"] = paired(
                _per_seed(run, "observation", "puck_distance"),
                _per_seed(run, "latent", "puck_distance"))
        ft = run.traces.get("finetune_success_per_seed")
        if ft is not None:
            out[f"{env}/finetune_pretrained_gt_scratch"] = paired(ft.data[:, 1], ft.data[:, 2])
    return out
