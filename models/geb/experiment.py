"""GEB's study: the card's three-arm comparison per divergence, form and kappa.

One card run (``model.run_comparison``) is already a paired comparison over seeds; the study
runs it over the divergences (and, in ``full``, every GEB form and kappa) through the runner
and judges the claim per divergence.
"""
from __future__ import annotations

from models.registry import Progress, Study

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
