"""COLA's ablation (the paper's component table) at small scale, over seeds and code lengths.

Per domain pair, code length and seed the card trains each variant (``full``; ``no_sc``,
``no_rc``, ``no_sr``: one component removed; ``none``: all removed) and retrieves target
queries from the source database; the full model's run also gives plain Hamming MAP on the
same codes (``map_hamming``: the UWHD comparison without retraining). The summary is the
mean and standard deviation over seeds of every variant's MAP, and the acceptance checks
of the digest that the runs can answer; per variant (``coverage``) the terms of the
coverage bound (Thm 3.1) and the per-epoch set sizes, which ``bench/conformal_hashing.py
--checks`` compares against the ``source_only`` variant.
"""
from __future__ import annotations

import numpy as np

from models.registry import Progress, Study

PLANS = {
    # quick: digits, 32 bits, full against none, 3 seeds (~1-2 min uncounted on one core)
    "quick": {"pairs": ("digits",), "bits": (32,), "ablate_bits": (),
              "variants": ("full", "none"), "seeds": 3},
    # full (the bench): both pairs; every variant at 32 bits, full and none at 16 and 64
    "full": {"pairs": ("fashion-mnist", "digits"), "bits": (16, 32, 64), "ablate_bits": (32,),
             "variants": ("full", "no_sc", "no_rc", "no_sr", "none"), "seeds": 3},
}


def cells(plan) -> list[tuple[str, int, str]]:
    """(pair, bits, variant) of every run of a plan, in order."""
    out = []
    for pair in plan["pairs"]:
        for bits in plan["bits"]:
            variants = plan["variants"] if bits in plan["ablate_bits"] or not plan[
                "ablate_bits"] else ("full", "none")
            out.extend((pair, bits, v) for v in variants)
    return out


def mean_std(values) -> dict:
    a = np.asarray(values, float)
    return {"mean": float(a.mean()), "std": float(a.std()), "min": float(a.min()),
            "max": float(a.max()), "n": int(a.size)}


def summarize(rows: list[dict]) -> dict:
    """Per ``pair/bits``: MAP mean/std per variant (and ``full_hamming``), and the gains."""
    out = {}
    for key in sorted({(r["pair"], r["bits"]) for r in rows}):
        sel = [r for r in rows if (r["pair"], r["bits"]) == key]
        entry = {}
        for v in sorted({r["variant"] for r in sel}):
            entry[v] = mean_std([r["map"] for r in sel if r["variant"] == v])
        full = [r for r in sel if r["variant"] == "full"]
        if full:
            entry["full_hamming"] = mean_std([r["map_hamming"] for r in full])
            entry["full_coverage"] = mean_std([r["target_coverage"] for r in full])
            entry["full_auroc_w_sem"] = mean_std([r["auroc_w_sem"] for r in full])
            entry["full_auroc_w_bit"] = mean_std([r["auroc_w_bit"] for r in full])
            entry["uwhd_minus_hamming"] = entry["full"]["mean"] - entry["full_hamming"]["mean"]
        if "none" in entry and "full" in entry:
            entry["full_minus_none"] = entry["full"]["mean"] - entry["none"]["mean"]
        entry["coverage"] = {v: coverage_summary([r for r in sel if r["variant"] == v])
                             for v in sorted({r["variant"] for r in sel})}
        out[f"{key[0]}/{key[1]}"] = entry
    return out


def coverage_summary(rows: list[dict]) -> dict:
    """The digest's checks 2 and 3 over the seeds of one variant: target coverage, its gap
    to ``1 - alpha`` and TV-hat of the final model, how many runs meet ``coverage >= 1 -
    alpha - TV-hat``, the same terms per epoch (the model before each epoch's updates;
    epoch 1 = the untrained network), the mean set size per epoch (``mean_set_size``: the
    training batches' sets, argmax labels without SC; ``conformal_set_size``: the conformal
    sets on the whole target set at each epoch's start) and MAP, seed means."""
    out = {k: mean_std([r[k] for r in rows])
           for k in ("target_coverage", "coverage_gap", "tv_hat", "alpha_final",
                     "coverage_bound_margin", "target_set_size", "map")}
    out["bound_met"] = sum(r["coverage_bound_margin"] >= 0 for r in rows)
    out["runs"] = len(rows)
    for k in ("mean_set_size", "conformal_set_size", "target_coverage", "coverage_gap",
              "tv_hat"):
        out[f"per_epoch_{k}"] = np.mean([r["traces"][k] for r in rows], 0).tolist()
    sizes = np.array([r["traces"]["mean_set_size"] for r in rows])
    out["set_size_last_below_first"] = int((sizes[:, -1] < sizes[:, 0]).sum())
    return out


ROW_METRICS = ("map", "map_uwhd", "map_hamming", "target_coverage", "target_set_size",
               "target_accuracy", "auroc_w_sem", "tv_hat", "alpha_final", "coverage_gap",
               "coverage_bound_margin")
ROW_TRACES = ("mean_set_size", "conformal_set_size", "target_coverage", "coverage_gap",
              "tv_hat", "alpha_t")


def sweep(plan, seed: int, profile=None, preset: str = "quick", count: bool = False,
          progress: Progress | None = None, overrides=None):
    """One card run per cell of ``plan`` and seed; (rows, runs)."""
    from models import runner
    rows, runs = [], {}
    todo = [(c, seed + k) for c in cells(plan) for k in range(plan["seeds"])]
    for (pair, bits, variant), s in todo:
        run = runner.run("conformal_hashing", profile=profile, dataset=pair, preset=preset,
                         seed=s, overrides={"bits": bits, "variant": variant, "count": count,
                                            **(overrides or {}).get(pair, {})})
        runs[f"{pair}/L{bits}/{variant}/seed{s}"] = run
        row = {"pair": pair, "bits": bits, "variant": variant, "seed": s,
               **{k: run.metrics[k] for k in ROW_METRICS},
               "auroc_w_bit": run.metrics.get("auroc_w_bit", float("nan")),
               "traces": {k: run.traces[k].data.tolist() for k in ROW_TRACES}}
        rows.append(row)
        if progress:
            progress(len(rows), len(todo), row)
    return rows, runs


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """The ablation of :data:`PLANS` ``[preset]``; the claim: full COLA's MAP above the
    none variant's (mean over seeds) at every pair and length, UWHD >= plain Hamming."""
    plan = PLANS[preset]
    rows, runs = sweep(plan, seed, profile=profiles.get("gpu"), preset=preset,
                       progress=progress)
    summary = summarize(rows)
    summary["claim"] = ("full COLA's mean MAP beats the variant without its components at "
                        "every pair and code length; UWHD MAP >= plain Hamming MAP")
    cellsum = [v for k, v in summary.items() if isinstance(v, dict) and "full_minus_none" in v]
    summary["claim_met"] = bool(cellsum) and all(
        v["full_minus_none"] > 0 and v["uwhd_minus_hamming"] >= 0 for v in cellsum)
    summary["rows"] = rows
    return Study(runs, summary)
