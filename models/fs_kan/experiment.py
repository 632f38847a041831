"""FS-KAN's low-data comparison (arXiv:2509.24472, Figs. 4-5) at small scale.

The claim: with few training examples FS-KAN beats the parameter-sharing MLP (DeepSets for
``S_n``, DSS for ``S_n x C_T``) of the same parameter count; the gap closes as data grows.
:func:`sweep` runs the card (through the runner, one run per training-set size and seed,
each with the parameter-matched baseline beside it) and :func:`summarize` averages over
seeds. Every run trains for the same number of optimizer steps whatever its size, and all
runs of a task share one fixed test set.
"""
from __future__ import annotations

import math

import numpy as np

from models.registry import Progress, RunResult, Study

PLANS = {
    # quick: the task where the claim reproduces, two sizes, one seed
    "quick": {"fashion-points": {"sizes": (50, 200), "seeds": 1, "steps": 100, "n_test": 500}},
    # full: the benchmark's plan (bench/fs_kan.py), sized for ~15-20 min on a 2-core CPU
    "full": {"signal-sets": {"sizes": (30, 120, 480), "seeds": 3, "steps": 150,
                             "n_test": 1000},
             "fashion-points": {"sizes": (50, 200, 800), "seeds": 3, "steps": 150,
                                "n_test": 2000}},
}
"""Per preset and task: training-set sizes, number of seeds (from the study's seed up),
optimizer steps per run and the test-set size."""

ROW_METRICS = {"fskan_accuracy": "test_accuracy", "baseline_accuracy": "baseline_test_accuracy",
               "fskan_loss": "test_loss", "fskan_parameters": "parameters",
               "baseline_parameters": "baseline_parameters"}
ROW_FACTS = {"fskan_train_s": "host_train_s", "baseline_train_s": "host_baseline_train_s"}


def sweep(task: str, sizes, seeds, steps: int, n_test: int, profile=None,
          preset: str = "quick", count: bool = True,
          progress: Progress | None = None) -> tuple[list[dict], dict[str, RunResult]]:
    """One run of the card per training-set size and seed: (rows of plain values, runs).

    ``count=False`` skips op counting (the benchmark's repeated runs); each run's ledger
    then stays empty.
    """
    from models import runner
    rows, runs = [], {}
    total = len(sizes) * len(seeds)
    for n in sizes:
        for seed in seeds:
            run = runner.run("fs_kan", profile=profile, dataset=task, preset=preset, seed=seed,
                             overrides={"n_train": n, "steps": steps, "n_test": n_test,
                                        "count": count})
            runs[f"{task}/n{n}/seed{seed}"] = run
            row = {"task": task, "n_train": n, "seed": seed,
                   **{k: run.metrics[m] for k, m in ROW_METRICS.items()},
                   **{k: run.facts[m] for k, m in ROW_FACTS.items()}}
            for k in ("fskan_parameters", "baseline_parameters"):   # counts, not measurements
                row[k] = int(row[k])
            rows.append(row)
            if progress:
                progress(len(rows), total, rows[-1])
    return rows, runs


def summarize(rows: list[dict]) -> dict[int, dict[str, float]]:
    """Per training-set size: mean and std of both accuracies over seeds, and wins."""
    out = {}
    for n in sorted({r["n_train"] for r in rows}):
        fk = np.array([r["fskan_accuracy"] for r in rows if r["n_train"] == n])
        bl = np.array([r["baseline_accuracy"] for r in rows if r["n_train"] == n])
        out[n] = {"fskan_mean": float(fk.mean()), "fskan_std": float(fk.std()),
                  "baseline_mean": float(bl.mean()), "baseline_std": float(bl.std()),
                  "gain": float(fk.mean() - bl.mean()), "wins": int((fk > bl).sum()),
                  "seeds": len(fk)}
    return out


def wins_claim(size: dict) -> bool:
    """The pass rule at one training-set size (``summarize``'s entry), k of n seeds: FS-KAN
    ahead of the baseline on at least ceil(2n/3) of the n seeds and in the mean."""
    return bool(size["wins"] >= math.ceil(2 * size["seeds"] / 3) and size["gain"] > 0)


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """The sweep of :data:`PLANS` ``[preset]``; the summary has, per task, ``fskan_n<N>``,
    ``baseline_n<N>``, ``gain_n<N>`` (means over seeds), ``wins_n<N>`` and whether FS-KAN
    wins at the smallest size by :func:`wins_claim` (the claim)."""
    runs, summary = {}, {}
    for task, plan in PLANS[preset].items():
        seeds = tuple(seed + k for k in range(plan["seeds"]))
        rows, task_runs = sweep(task, plan["sizes"], seeds, plan["steps"], plan["n_test"],
                                profile=profiles.get("gpu"), preset=preset, progress=progress)
        runs.update(task_runs)
        by_size = summarize(rows)
        entry = {}
        for n, s in by_size.items():
            entry.update({f"fskan_n{n}": s["fskan_mean"], f"baseline_n{n}": s["baseline_mean"],
                          f"gain_n{n}": s["gain"], f"wins_n{n}": s["wins"]})
        entry["fskan_wins_at_smallest"] = wins_claim(by_size[min(by_size)])
        summary[task] = entry
    summary["claim"] = ("FS-KAN's test accuracy beats the parameter-matched baseline's at the "
                        "smallest training set on >= ceil(2n/3) of n seeds, and in the mean")
    summary["claim_met"] = all(summary[t]["fskan_wins_at_smallest"] for t in PLANS[preset])
    return Study(runs, summary)
