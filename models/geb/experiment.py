"""GEB's comparison: passive f-DPO, the prior-form bonus and GEB over seeds, per divergence.

``run_comparison`` is one card run: for each seed the three arms from the same pretrained
reference on the same task (``model.compare``); its metrics are seed means, the paired
differences GEB minus each other arm, and two-sided Wilcoxon signed-rank p-values of those
differences over seeds (scipy; with 5 seeds the smallest possible p is 2/32 = 0.0625, so a
claim at p < 0.05 needs >= 6 seeds: the bench runs 10). ``experiment`` runs the card over the
divergences (and, in ``full``, every GEB form and kappa) through the runner.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from models.registry import Outcome, Progress, Study
from sim.traces import Trace, bands

CURVES = {"reward": ("true_reward", "1"), "sampled_logp_ref": ("sampled_logp_ref", "nats"),
          "p_optimum": ("p_optimum", "1"), "entropy": ("policy_entropy", "nats")}
"""History key -> (trace name, unit) of the learning curves drawn with seed bands."""


def wilcoxon_p(diff) -> float:
    """Two-sided Wilcoxon signed-rank p of paired differences (1.0 when all are zero)."""
    from scipy.stats import wilcoxon
    d = np.asarray(diff, float)
    if not np.any(d != 0):
        return 1.0
    return float(wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)


def sign_p(diff) -> float:
    """Two-sided exact sign test p of paired differences (ties dropped; scipy binomtest)."""
    from scipy.stats import binomtest
    d = np.asarray(diff, float)
    d = d[d != 0]
    if not d.size:
        return 1.0
    return float(binomtest(int((d > 0).sum()), d.size, 0.5).pvalue)


def paired(rows: list[dict], metric: str, a: str, b: str) -> dict:
    """Seed-paired ``a - b`` of ``metric``: mean, std, wins, Wilcoxon and sign-test p."""
    d = np.array([r[a][metric] - r[b][metric] for r in rows])
    return {"mean": float(d.mean()), "std": float(d.std()), "wins": int((d > 0).sum()),
            "losses": int((d < 0).sum()), "n": int(d.size), "wilcoxon_p": wilcoxon_p(d),
            "sign_p": sign_p(d)}


def run_comparison(cfg, dev, tasks, progress: Progress | None = None) -> Outcome:
    """The card's run: ``model.compare`` per seed, seed means, paired tests, seed bands."""
    from models.geb.model import ARM_NAMES, compare, curves, summary_row
    rows, refs, hist = [], [], {k: {a: [] for a in ARM_NAMES} for k in CURVES}
    for k, task in enumerate(tasks):
        c = dataclasses.replace(cfg, seed=cfg.seed + k)
        res = compare(task, c, dev, cfg.count, progress, 3 * k, 3 * len(tasks))
        rows.append(summary_row(res))
        refs.append(res["reference"])
        for key in CURVES:
            for arm, values in curves(res, key).items():
                hist[key][arm].append(values)
    m = {f"{key}_{arm}": float(np.mean([r[arm][key] for r in rows]))
         for arm in ARM_NAMES for key in ("reward", "p_optimum", "expected_logp_ref",
                                          "explore_logp_ref", "entropy")}
    gains = {"reward_gain_geb_vs_passive": paired(rows, "reward", "geb", "passive"),
             "reward_gain_geb_vs_prior": paired(rows, "reward", "geb", "prior"),
             "explore_gain_geb_vs_passive": paired(rows, "explore_logp_ref", "passive", "geb")}
    m.update({k: v["mean"] for k, v in gains.items()})
    m["wilcoxon_p_explore"] = gains["explore_gain_geb_vs_passive"]["wilcoxon_p"]
    m["wilcoxon_p_reward"] = gains["reward_gain_geb_vs_passive"]["wilcoxon_p"]
    m["reference_reward"] = float(np.mean([r["reward"] for r in refs]))
    m["reference_logp_ref_optimum"] = float(np.mean([r["logp_ref_optimum"] for r in refs]))
    m["seeds"] = len(tasks)
    traces: dict[str, Trace] = {
        name: bands({a: np.array(hist[key][a]) for a in ARM_NAMES}, unit)
        for key, (name, unit) in CURVES.items()}
    cols = ("seed", *(f"{k}_{a}" for a in ARM_NAMES for k in ("reward", "explore_logp_ref")))
    traces["per_seed"] = Trace("table", np.array(
        [[cfg.seed + i, *(r[a][k] for a in ARM_NAMES for k in ("reward", "explore_logp_ref"))]
         for i, r in enumerate(rows)]), columns=cols)
    facts = {"torch_device": str(dev.torch_device), "data_source": tasks[0].source,
             "paired_tests": gains,
             "per_seed": [{a: r[a] for a in ARM_NAMES} for r in rows],
             "arms": {"passive": "f-DPO, no bonus", "prior": f"prior form, kappa {cfg.kappa}",
                      "geb": f"{cfg.bonus}, kappa {cfg.kappa}"}}
    return Outcome(m, traces, None, facts)


PLANS = {
    # quick: the card's GEB form under each divergence, 5 seeds (~3 runs of the quick card)
    "quick": {"f_divs": ("rkl", "fkl", "hel"), "bonuses": ("geb_p",), "kappas": (0.1,),
              "seeds": 5},
    # full (the bench): every GEB form and kappa under each divergence, 10 seeds
    "full": {"f_divs": ("rkl", "fkl", "hel"), "bonuses": ("geb_p", "geb_f", "geb_tanh"),
             "kappas": (0.01, 0.1, 1.0), "seeds": 10},
}


def sweep(plan, seed: int, profile=None, dataset: str = "toy", preset: str = "quick",
          count: bool = False, progress: Progress | None = None, overrides=None):
    """One card run (``plan["seeds"]`` seeds, three arms) per divergence, form and kappa;
    (rows, runs)."""
    from models import runner
    rows, runs = [], {}
    cells = [(f, b, k) for f in plan["f_divs"] for b in plan["bonuses"] for k in plan["kappas"]]
    for f_div, bonus, kappa in cells:
        run = runner.run("geb", profile=profile, dataset=dataset, preset=preset, seed=seed,
                         overrides={"f_div": f_div, "bonus": bonus, "kappa": kappa,
                                    "seeds": plan["seeds"], "count": count,
                                    **(overrides or {})})
        runs[f"{dataset}/{f_div}/{bonus}/k{kappa}"] = run
        rows.append({"f_div": f_div, "bonus": bonus, "kappa": kappa, **run.metrics,
                     "paired_tests": run.facts["paired_tests"]})
        if progress:
            progress(len(rows), len(cells), rows[-1])
    return rows, runs


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """:data:`PLANS` ``[preset]`` on the toy task; the claim (digest checks 3 and 4): per
    divergence, GEB's samples have lower log pi_ref than passive f-DPO's (Wilcoxon p < 0.05
    over seeds) and its true reward is >= passive + 0.05 and >= the prior form's."""
    rows, runs = sweep(PLANS[preset], seed, profile=profiles.get("gpu"), preset=preset,
                       progress=progress)
    summary = {"rows": rows, "claim": "GEB explores lower-pi_ref responses than passive "
               "f-DPO (paired Wilcoxon p < 0.05) and reaches >= passive + 0.05 true reward "
               "and >= the prior form's"}
    summary.update(judge(rows, PLANS[preset]["f_divs"]))
    return Study(runs, summary)


def judge(rows: list[dict], f_divs) -> dict:
    """Per divergence: does some GEB cell explore (GEB's sampled log pi_ref below passive's,
    Wilcoxon p < 0.05), and the reward gains of its best cell (form and kappa selected on
    the same seeds: optimistic); ``claim_met`` when every divergence explores and gains
    >= 0.05 over passive and >= 0 over the prior form."""
    per_div = {}
    for f_div in f_divs:
        sel = [r for r in rows if r["f_div"] == f_div]
        best = max(sel, key=lambda r: r["reward_geb"])
        per_div[f_div] = {
            "explores": any(r["explore_gain_geb_vs_passive"] > 0
                            and r["wilcoxon_p_explore"] < 0.05 for r in sel),
            "best": f"{best['bonus']} kappa {best['kappa']}",
            "reward_gain_vs_passive": best["reward_gain_geb_vs_passive"],
            "reward_gain_vs_prior": best["reward_gain_geb_vs_prior"]}
    return {"per_divergence": per_div,
            "claim_met": all(v["explores"] and v["reward_gain_vs_passive"] >= 0.05
                             and v["reward_gain_vs_prior"] >= 0 for v in per_div.values())}
