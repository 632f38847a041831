"""APPLE against random glimpses and a fixed scan, over seeds, with paired tests.

Per dataset the card's ``simulate`` trains APPLE-CrossQ, APPLE-RND (``random``) and
APPLE-GRID (``scan``) on the same seeds; the full plan adds APPLE with the paper's gradient
routing (``critic_backbone_lr = sac_backbone_grad = 1``: both RL losses train the shared
backbone at full strength) beside the card's default (neither does; README "Reading"). RL
is noisy, so every comparison is paired over seeds: per seed the difference of final-step
accuracy, its mean and spread, the number of seeds APPLE wins, and the Wilcoxon signed-rank
test (scipy, one-sided "APPLE greater" and two-sided) with the sign test beside it. With 5
seeds the smallest one-sided p of either test is 1/32 = 0.031 (every seed one way);
two-sided it is 0.0625, so no two-sided claim can be made at p < 0.05 with 5 seeds.

The readiness rule (issue 33): a learned policy is compared with random glimpses only once
its predictor has reached the random-glimpse level. APPLE's trained predictor is run on the
random-glimpse test episodes (the very episodes and moves RND is scored on); on a seed it is
at the level when its final-step accuracy there is at least RND's minus
:data:`READY_MARGIN` (5 points, about 1.5 x the binomial std of 256 test episodes at 0.5);
the predictor is ready when that holds on at least ``ceil(2n/3)`` of the n seeds (2 of 3,
4 of 5). A reading whose predictor is not ready gets the verdict "void", not "loses": its
policy was never given a predictor that could use what it looked at.
"""
from __future__ import annotations

import math

import numpy as np

from models.registry import Progress, Study

PAPER_ROUTING = {"critic_backbone_lr": 1.0, "sac_backbone_grad": 1.0}
"""The paper's reading: the critic's and the SAC term's gradients train the shared backbone."""
PLANS = {
    "quick": {"datasets": ("digits",), "variants": {}},
    "full": {"datasets": ("digits", "digits-locate"),
             "variants": {"apple_paper_routing": PAPER_ROUTING}},
}
READY_MARGIN = 0.05
"""A seed's predictor is at the random-glimpse level within this many accuracy points."""


def ready_seeds_needed(n: int) -> int:
    """Seeds (of ``n``) whose predictor must be at the random-glimpse level: ceil(2n/3)."""
    return math.ceil(2 * n / 3)


def predictor_ready(on_random, random_final) -> dict:
    """The readiness rule of the module docstring, per seed: APPLE's predictor on the
    random-glimpse test episodes (``on_random``) against RND's score on them."""
    d = np.asarray(on_random, float) - np.asarray(random_final, float)
    k, n = int((d >= -READY_MARGIN).sum()), int(d.size)
    return {"seeds_at_level": k, "n": n, "needed": ready_seeds_needed(n),
            "margin": READY_MARGIN, "diff": mean_std(d), "ready": k >= ready_seeds_needed(n)}


def verdict(ready: dict, vs_random: dict) -> str:
    """"void" (predictor not ready), else "beats random" when the paired claim holds,
    else "does not beat random"."""
    if not ready["ready"]:
        return "void: predictor below the random-glimpse level"
    return "beats random" if vs_random["holds"] else "does not beat random"


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


def summarize(runs) -> dict:
    """Scores, readiness and paired tests of one dataset's runs: ``{name: run}``, where a
    run's ``apple`` policy is reported under ``name`` (the card's default run under
    ``"apple"``, a variant's under its own name) and every other policy under its own."""
    per, on_random, glance, grads, px = {}, {}, {}, {}, {}
    for name, r in runs.items():
        for p, v in r.facts["per_seed_final"].items():
            key = name if p == "apple" else p
            per[key] = v
            glance[key] = r.traces[f"glance_{p}"].data.tolist()
            if r.facts["task"] == "locate":
                px[key] = r.metrics[f"final_error_px_{p}"]
            if p == "apple":
                on_random[key] = r.facts["per_seed_predictor_on_random"]
                grads[key] = {k: r.metrics[f"grad_norm_{k}_apple"]
                              for k in ("critic", "sac", "predictor")}
    first = next(iter(runs.values()))
    out = {"task": first.facts["task"], "env_steps": first.metrics["env_steps"],
           "final": {p: mean_std(v) for p, v in per.items()},
           "predictor_on_random": {p: mean_std(v) for p, v in on_random.items()},
           "glance": glance, "grad_norms": grads}
    if px:
        out["final_error_px"] = px
    if "random" in per:
        out["paired"], out["ready"], out["verdict"] = {}, {}, {}
        for name in on_random:
            out["ready"][name] = predictor_ready(on_random[name], per["random"])
            out["paired"][f"{name}_vs_random"] = paired(per[name], per["random"])
            out["verdict"][name] = verdict(out["ready"][name],
                                           out["paired"][f"{name}_vs_random"])
        if "apple" in per:
            for p in per:
                if p not in on_random and p != "random":
                    out["paired"][f"apple_vs_{p}"] = paired(per["apple"], per[p])
    return out


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None,
               overrides=None) -> Study:
    """The plan of :data:`PLANS` ``[preset]``; the claim: APPLE's predictor is ready and
    its final-step accuracy is above random glimpses' on every seed (paired, one-sided
    Wilcoxon p <= 0.05)."""
    from models import runner
    plan = PLANS[preset]
    runs, summary = {}, {}
    for ds in plan["datasets"]:
        extra = {"count": False, **(overrides or {})}
        run = runner.run("apple", profile=profiles.get("gpu"), dataset=ds, preset=preset,
                         seed=seed, overrides=extra, progress=progress)
        runs[ds] = run
        named = {"apple": run}
        for name, setting in plan["variants"].items():
            named[name] = runner.run("apple", profile=profiles.get("gpu"), dataset=ds,
                                     preset=preset, seed=seed, progress=progress,
                                     overrides={**extra, **setting, "policies": "apple"})
            runs[f"{ds}/{name}"] = named[name]
        summary[ds] = summarize(named)
    summary["claim"] = ("APPLE's predictor reaches the random-glimpse level (>= RND - "
                        f"{READY_MARGIN} on ceil(2n/3) of n seeds), then its final-step "
                        "accuracy beats random glimpses on every seed (paired over seeds, "
                        "one-sided Wilcoxon signed-rank p <= 0.05)")
    summary["claim_met"] = all(summary[ds]["verdict"]["apple"] == "beats random"
                               for ds in plan["datasets"])
    return Study(runs, summary)
