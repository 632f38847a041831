"""FS-KAN vs a parameter-matched parameter-sharing MLP (DeepSets / DSS) in the low-data regime.

The paper's claim (arXiv:2509.24472, Figs. 4-5): FS-KAN beats parameter-matched
parameter-sharing baselines when training sets are small; the gap closes with more data.
Two tasks, each over several training-set sizes and 3 seeds (same fixed test set):

- ``signal-sets``: sets of 6 noisy copies of a 12-sample sine/square/sawtooth, group
  S_6 x C_12 (the product group; 24 pair orbits);
- ``fashion-points``: Fashion-MNIST images as sets of 64 bright pixels (x, y, intensity),
  group S_64 (2 pair orbits).

Both models train for the same number of AdamW steps at every size; the baseline's widths
are scaled to match FS-KAN's parameter count. Per task, the sizes x seeds are one sweep
(``deploy.sweep``, run serially in this process: the train times stay single-threaded; run
files and table in ``bench/out/fs_kan-<task>-sweep``), so every accuracy comes with its
spread over seeds (mean +- std, min-max); ``models.fs_kan.experiment.sweep`` stays the
card's own study (``neuroedge experiment fs_kan``), with the same rows. The sweep's runs are not
op-counted (``count=False``: counting costs ~2x); one short counted run gives both models'
MACs per training sample.
Prints a table per task and ends with ``RESULT {json}``.

    python bench/fs_kan.py                      # full: both tasks, 3 seeds
    python bench/fs_kan.py --quick              # smoke run: smallest sizes, 1 seed
    python bench/fs_kan.py --quick --seeds 0,1  # the same with a spread over 2 seeds
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

# run from a checkout without installing: this checkout, not an installed copy, is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench import _sweeps  # noqa: E402
from models import runner  # noqa: E402
from models.fs_kan.experiment import PLANS, ROW_FACTS, ROW_METRICS, summarize  # noqa: E402
from models.fs_kan.model import task_action  # noqa: E402

SIZES = {task: plan["sizes"] for task, plan in PLANS["full"].items()}
TEST = {task: plan["n_test"] for task, plan in PLANS["full"].items()}


def _row(row: dict, result) -> dict:
    """A sweep row in the names ``summarize`` reads (``experiment.sweep``'s rows)."""
    facts = _sweeps.facts(result, row)
    out = {"task": row["dataset"], "n_train": int(_sweeps.field(row, "n_train")),
           "seed": int(row["seed"]), **{k: row[m] for k, m in ROW_METRICS.items()},
           **{k: facts[m] for k, m in ROW_FACTS.items()}}
    for k in ("fskan_parameters", "baseline_parameters"):   # counts, not measurements
        out[k] = int(out[k])
    return out


def macs_per_sample(task: str, steps: int = 4) -> dict[str, float]:
    """Training MACs per set (forward + backward) of both models, from one counted run of
    ``32 * steps`` sets (one epoch) through the runner."""
    n = 32 * steps
    run = runner.run("fs_kan", profile="a100", dataset=task,
                     overrides={"n_train": n, "steps": steps, "n_test": 10})
    return {"fskan": run.metrics["train_macs"] / n,
            "baseline": run.metrics["baseline_train_macs"] / n,
            "fskan_uncounted": run.ledger.uncounted(),
            "baseline_uncounted": run.facts["baseline_uncounted"]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", default="signal-sets,fashion-points")
    p.add_argument("--seeds", default=None, help="comma-separated (default 0,1,2; 0 with --quick)")
    p.add_argument("--steps", type=int, default=PLANS["full"]["signal-sets"]["steps"])
    p.add_argument("--quick", action="store_true", help="two smallest sizes, 60 steps")
    args = p.parse_args(argv)
    torch.set_num_threads(1)   # shared machine; tiny tensors gain nothing from threads
    seeds = tuple(int(s) for s in (args.seeds or ("0" if args.quick else "0,1,2")).split(","))
    steps = 60 if args.quick else args.steps
    print(f"FS-KAN low-data benchmark: torch {torch.__version__}, 1 thread, "
          f"{platform.processor() or platform.machine()}, seeds {seeds}, {steps} steps")
    result = {"steps": steps, "seeds": list(seeds), "tasks": {}}
    t_all = time.perf_counter()
    for task in args.tasks.split(","):
        sizes = SIZES[task][:2] if args.quick else SIZES[task]
        t0 = time.perf_counter()
        swept = _sweeps.sweep({
            "name": f"fs_kan-{task}", "models": ["fs_kan"], "datasets": [task],
            "presets": ["quick"], "seeds": list(seeds), "profiles": ["a100"],
            "grid": {"n_train": list(sizes), "steps": [steps], "n_test": [TEST[task]],
                     "count": [False]}})
        raw = _sweeps.ok_rows(swept)
        rows = [_row(r, swept) for r in raw]
        summary = summarize(rows)
        spreads = {n: {"fskan": _sweeps.spread(raw, "test_accuracy", n_train=n),
                       "baseline": _sweeps.spread(raw, "baseline_test_accuracy", n_train=n)}
                   for n in summary}
        fk_s = np.mean([r["fskan_train_s"] for r in rows])
        bl_s = np.mean([r["baseline_train_s"] for r in rows])
        macs = macs_per_sample(task)
        action = task_action(task)[0]
        print(f"\n{task}: group {action.name}, FS-KAN {rows[0]['fskan_parameters']} params vs "
              f"baseline {rows[0]['baseline_parameters']}, test sets {TEST[task]}")
        print(f"{'n_train':>8} {'FS-KAN acc':>16} {'baseline acc':>16} {'gain':>7} {'wins':>5}")
        for n, s in summary.items():
            sp = spreads[n]
            print(f"{n:>8} {s['fskan_mean']:>9.3f}+-{s['fskan_std']:.3f} "
                  f"{s['baseline_mean']:>9.3f}+-{s['baseline_std']:.3f} {s['gain']:>+7.3f} "
                  f"{s['wins']:>2}/{s['seeds']}   min-max FS-KAN "
                  f"{sp['fskan']['min']:.3f}-{sp['fskan']['max']:.3f}, baseline "
                  f"{sp['baseline']['min']:.3f}-{sp['baseline']['max']:.3f}")
        print(f"train time per run: FS-KAN {fk_s:.1f} s, baseline {bl_s:.1f} s "
              f"({fk_s / bl_s:.2f}x); training MACs per set: FS-KAN {macs['fskan']:.3g}, "
              f"baseline {macs['baseline']:.3g} ({macs['fskan'] / macs['baseline']:.2f}x); "
              f"task wall {time.perf_counter() - t0:.0f} s")
        smallest = min(summary)
        result["tasks"][task] = {
            "group": action.name, "fskan_parameters": rows[0]["fskan_parameters"],
            "baseline_parameters": rows[0]["baseline_parameters"],
            "by_size": {str(n): s | {"fskan_spread": spreads[n]["fskan"],
                                      "baseline_spread": spreads[n]["baseline"]}
                        for n, s in summary.items()},
            "sweep_table": str(swept.table_path),
            "fskan_wins_at_smallest": summary[smallest]["gain"] > 0,
            "train_time_ratio": fk_s / bl_s,
            "train_macs_per_set": {"fskan": macs["fskan"], "baseline": macs["baseline"]},
            "uncounted": {k: v for k, v in macs.items() if k.endswith("uncounted")},
            "runs": [{k: v for k, v in r.items()} for r in rows]}
    result["wall_s"] = time.perf_counter() - t_all
    print(f"\ntotal wall {result['wall_s']:.0f} s")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
