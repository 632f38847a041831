"""FS-KAN on signal sets: against DSS of equal parameters and of equal width, at two task
sizes, and whether the paper's task size fits this machine (issue 34, item 3).

``bench/fs_kan.py`` finds FS-KAN (widths 8/8, invariant 8) losing to the parameter-matched
DSS (widths 26/26/26) on signal sets of 6 copies x 12 samples (S_6 x C_12). Ruled out
before: the spline grid's range, the noise level, training length. Open: (a) at equal
parameters DSS gets 3x FS-KAN's width; (b) the paper's task is 25 copies x 100 samples
(arXiv:2509.24472, Fig. 4), ours 6 x 12. Here:

1. Tasks ``6x12`` (the card's) and ``25x16`` (the paper's 25 copies; 16 samples so that
   S_25 x C_16, 32 pair orbits, trains in seconds), noise std 1 (``models/fs_kan/data.py``),
   the fixed test set of :data:`N_TEST` sets drawn with ``data.TEST_SEED``.
2. Per training-set size (:data:`SIZES`) and seed (:data:`SEEDS`): FS-KAN (the card's
   signal preset: widths 8/8, invariant 8, :data:`STEPS` AdamW steps, lr 3e-3) against
   two DSS baselines trained the same way on the same sets: ``params``, widths scaled to
   FS-KAN's parameter count (``model.matched_baseline``, what the card compares with), and
   ``width``, the same widths 8/8/8 (about a tenth of the parameters).
3. Verdict per size and baseline (rule fixed before the run): a model wins when it is
   ahead on >= ceil(2n/3) of the n seeds and by more than :data:`MARGIN` in mean accuracy;
   otherwise a tie (:func:`verdict`).
4. ``--feasibility``: the paper's size, 25 x 100 (S_25 x C_100: 2,500 points, 200 pair
   orbits), one seed: CPU seconds to build the layers and per training step of FS-KAN and
   of the equal-parameter DSS, from :data:`PROBE_STEPS` steps, and what a run of
   :data:`STEPS` steps and the item-2 protocol would take projected from them.

Uncounted (accuracy study); one torch thread. About 5 (6x12) and 15 (25x16) CPU-minutes.

    OMP_NUM_THREADS=1 nice -n 5 python bench/fs_kan_width.py [--tasks 6x12,25x16]
        [--feasibility] [--write] [--quick]

``--write`` stores the RESULT in ``bench/out/fs_kan_width.json``, replacing only the tasks
(and the feasibility probe) this run measured, so tasks may run as separate processes. The
tables in ``bench/RESULTS.md`` and ``models/fs_kan/README.md`` and the row of
``docs/claims.md`` are rendered from it (:func:`render`, :func:`claim_text`;
``tests/bench/test_fs_kan_width.py`` pins them). ``--quick``: 2 sizes, 1 seed, 20 steps,
200 test sets (smoke; never written). Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench._results import store  # noqa: E402
from models.fs_kan.card import FSConfig  # noqa: E402
from models.fs_kan.data import TEST_SEED, signal_sets  # noqa: E402
from models.fs_kan.groups import cyclic, natural, symmetric  # noqa: E402
from models.fs_kan.model import FSClassifier, matched_baseline  # noqa: E402
from models.shared.power import seeds_to_hold  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULT_FILE = ROOT / "bench" / "out" / "fs_kan_width.json"
TASKS = {"6x12": (6, 12), "25x16": (25, 16)}
PAPER_TASK = (25, 100)
SIZES = (30, 120, 480)
SEEDS = (0, 1, 2)
STEPS = 150                 # bench/fs_kan.py's length at every size
N_TEST = 1000
NOISE = 1.0                 # the card's signal task
MARGIN = 0.01               # accuracy (1 point) a mean lead must pass to count
PROBE_STEPS = 2
FSKAN = FSConfig(widths=(8, 8), inv_width=8, steps=STEPS, count=False)   # card's signal preset
BASELINES = ("params", "width")


def action_of(n: int, length: int):
    """S_n x C_T acting on the n x T grid of a set of signals."""
    return natural(symmetric(n) * cyclic(length))


def configs(action, cfg: FSConfig) -> dict[str, FSConfig]:
    """FS-KAN's config and its two DSS baselines: equal parameters and equal widths."""
    return {"fskan": cfg, "params": matched_baseline(action, 1, 3, cfg),
            "width": replace(cfg, phi="linear")}


def train_test(action, cfg: FSConfig, x_tr, y_tr, x_te, y_te) -> dict:
    """Accuracy on the test sets of ``cfg`` trained on (x_tr, y_tr); parameters, CPU s."""
    import sim
    t = time.process_time()
    model = FSClassifier(action, 1, 3, cfg, sim.device("a100"))
    model.fit(x_tr, y_tr, count=False)
    acc = model.evaluate(x_te, y_te, count=False, batch_size=100)["accuracy"]
    return {"accuracy": acc, "parameters": model.n_parameters,
            "cpu_s": time.process_time() - t}


def run_task(n: int, length: int, sizes, seeds, steps: int, n_test: int,
             progress=print, on_row=None) -> dict:
    """Every size x seed of one task: FS-KAN and both baselines on the same sets.
    ``on_row(task)`` gets the task so far after every size x seed (the partial RESULT that
    ``--write`` stores, so a run cut short keeps what it measured)."""
    action = action_of(n, length)
    cfgs = {k: replace(c, steps=steps) for k, c in configs(action, FSKAN).items()}
    x_te, y_te = signal_sets(n_test, n=n, length=length, noise=NOISE, seed=TEST_SEED)
    task = {"copies": n, "length": length, "noise": NOISE, "n_test": n_test, "steps": steps,
            "orbits": 2 * length, "sizes_planned": list(sizes), "seeds_planned": list(seeds),
            "machine": f"{platform.machine()} {os.cpu_count()} cores (shared)",
            "widths": {k: [*c.widths, c.inv_width] for k, c in cfgs.items()},
            "rows": []}
    for size in sizes:
        for seed in seeds:
            # the card's training draw (data.load): signal_sets(..., seed=seed)
            x_tr, y_tr = signal_sets(size, n=n, length=length, noise=NOISE, seed=seed)
            row = {"n_train": size, "seed": seed}
            for name, c in cfgs.items():
                row[name] = train_test(action, replace(c, seed=seed, n_train=size),
                                       x_tr, y_tr, x_te, y_te)
            task["rows"].append(row)
            task["parameters"] = {k: row[k]["parameters"] for k in cfgs}
            task["by_size"] = summarize(task["rows"], len(seeds))
            task["complete"] = len(task["rows"]) == len(sizes) * len(seeds)
            progress(f"{n}x{length} n={size} seed {seed}: "
                     + ", ".join(f"{k} {row[k]['accuracy']:.3f} ({row[k]['cpu_s']:.0f} CPU s)"
                                 for k in cfgs))
            if on_row:
                on_row(task)
    return task


def verdict(fskan: list[float], base: list[float], margin: float = MARGIN) -> dict:
    """'fskan', 'baseline' or 'tie': ahead on >= ceil(2n/3) of n seeds and by > margin in
    the mean."""
    fk, bl = np.asarray(fskan), np.asarray(base)
    need = seeds_to_hold(len(fk))
    ahead_f, ahead_b = int((fk > bl).sum()), int((bl > fk).sum())
    gain = float(fk.mean() - bl.mean())
    who = ("fskan" if ahead_f >= need and gain > margin else
           "baseline" if ahead_b >= need and -gain > margin else "tie")
    return {"winner": who, "gain": gain, "fskan_ahead": ahead_f, "baseline_ahead": ahead_b,
            "needed": need, "seeds": len(fk), "margin": margin}


def summarize(rows: list[dict], n_seeds: int) -> dict:
    """Accuracies and verdicts per size, for the sizes whose ``n_seeds`` seeds all ran."""
    out = {}
    for size in sorted({r["n_train"] for r in rows}):
        sel = [r for r in rows if r["n_train"] == size]
        if len(sel) < n_seeds:
            continue
        acc = {k: [r[k]["accuracy"] for r in sel] for k in ("fskan", *BASELINES)}
        out[str(size)] = {"accuracy": acc,
                          **{k: verdict(acc["fskan"], acc[k]) for k in BASELINES}}
    return out


def feasibility(n: int, length: int, probe_steps: int, sizes, seeds, steps: int,
                n_test: int, progress=print) -> dict:
    """CPU seconds of the paper-size task: layer set-up, and per training step of FS-KAN
    and the equal-parameter DSS (``probe_steps`` steps of batch 32, 64 training sets,
    seed 0); projections for one run and for the whole protocol."""
    t = time.process_time()
    action = action_of(n, length)
    cfgs = configs(action, FSKAN)
    setup = time.process_time() - t
    x, y = signal_sets(64, n=n, length=length, noise=NOISE, seed=0)
    per_step, params = {}, {}
    for name in ("fskan", "params"):
        c = replace(cfgs[name], steps=probe_steps, n_train=64)
        r = train_test(action, c, x, y, x[:32], y[:32])
        # train_test's CPU time includes the evaluation of 32 sets (a forward of one batch)
        per_step[name], params[name] = r["cpu_s"] / probe_steps, r["parameters"]
        progress(f"{n}x{length}: {name} {r['parameters']} parameters, "
                 f"{per_step[name]:.1f} CPU s per step")
    one_run = {k: v * steps for k, v in per_step.items()}
    # protocol: every size x seed trains FS-KAN and both baselines (equal width is cheaper
    # than equal parameters; counted at the equal-parameter cost, an upper bound) and
    # evaluates n_test sets (about steps / 3 batches' forward cost, left out: a lower part)
    protocol = len(sizes) * len(seeds) * (one_run["fskan"] + 2 * one_run["params"])
    return {"copies": n, "length": length, "points": n * length, "orbits": 2 * length,
            "probe_steps": probe_steps, "setup_cpu_s": setup, "parameters": params,
            "cpu_s_per_step": per_step, "projected_cpu_s_one_run": one_run,
            "projected_cpu_s_protocol": protocol, "steps": steps,
            "protocol": {"sizes": list(sizes), "seeds": list(seeds), "n_test": n_test}}


WHO = {"fskan": "FS-KAN", "baseline": "DSS", "tie": "tie"}


def render(result: dict) -> str:
    """The tables of bench/RESULTS.md and the room README, from a RESULT."""
    lines = []
    for name, t in result["tasks"].items():
        w, p = t["widths"], t["parameters"]
        lines += [f"Task {name} (S_{t['copies']} x C_{t['length']}, {t['orbits']} pair "
                  f"orbits; noise {t['noise']:g}; {t['steps']} steps; {t['n_test']} test "
                  f"sets): FS-KAN widths {w['fskan']} ({p['fskan']:,} parameters); DSS equal "
                  f"parameters {w['params']} ({p['params']:,}); DSS equal width {w['width']} "
                  f"({p['width']:,}). Test accuracy %, mean +- std over "
                  f"{len(t['seeds_planned'])} seeds.", "",
                  "| n_train | FS-KAN | DSS equal params | verdict | DSS equal width | "
                  "verdict |", "|---|---|---|---|---|---|"]
        for size, s in t["by_size"].items():
            a = {k: 100 * np.asarray(v) for k, v in s["accuracy"].items()}
            cells = [f"{a['fskan'].mean():.1f} +- {a['fskan'].std():.1f}"]
            for b in BASELINES:
                v = s[b]
                cells += [f"{a[b].mean():.1f} +- {a[b].std():.1f}",
                          f"{WHO[v['winner']]} ({100 * v['gain']:+.1f} pts; FS-KAN ahead "
                          f"{v['fskan_ahead']}/{v['seeds']})"]
            lines.append(f"| {size} | " + " | ".join(cells) + " |")
        missing = [z for z in t["sizes_planned"] if str(z) not in t["by_size"]]
        if missing:
            done = len(t["rows"]) - len(t["by_size"]) * len(t["seeds_planned"])
            lines.append(f"\nNot measured: n_train {', '.join(map(str, missing))} (not "
                         f"finished in the time the run had; {done} of "
                         f"{len(t['seeds_planned'])} seeds of n_train {missing[0]} done, left "
                         "out).")
        lines.append("")
    f = result.get("feasibility")
    if f:
        h = f["projected_cpu_s_one_run"]
        lines.append(
            f"Paper size {f['copies']}x{f['length']} ({f['points']:,} points, {f['orbits']} "
            f"pair orbits), one seed: layer set-up {f['setup_cpu_s']:.0f} CPU s; per training "
            f"step (batch 32) FS-KAN {f['cpu_s_per_step']['fskan']:.1f} CPU s "
            f"({f['parameters']['fskan']:,} parameters), DSS equal parameters "
            f"{f['cpu_s_per_step']['params']:.1f} CPU s ({f['parameters']['params']:,}); "
            f"projected {f['steps']}-step runs {h['fskan'] / 60:.0f} and "
            f"{h['params'] / 60:.0f} CPU min, the {len(f['protocol']['sizes'])} sizes x "
            f"{len(f['protocol']['seeds'])} seeds protocol "
            f"{f['projected_cpu_s_protocol'] / 3600:.1f} CPU h.")
    return "\n".join(lines).rstrip()


def claim_text(result: dict) -> str:
    """The verdicts as docs/claims.md states them (tests/bench pins the two together)."""
    parts = []
    for name, t in result["tasks"].items():
        sizes = list(t["by_size"])
        for b, label in (("params", "equal parameters"), ("width", "equal width")):
            ws = [WHO[t["by_size"][s][b]["winner"]] for s in sizes]
            parts.append(f"{name} at {label}, n_train {'/'.join(sizes)}: {'/'.join(ws)}")
    first = next(iter(result["tasks"].values()))
    text = (f"signal sets, FS-KAN against DSS per training-set size "
            f"({len(first['seeds_planned'])} seeds): " + "; ".join(parts))
    f = result.get("feasibility")
    if f:
        text += (f"; the paper's {f['copies']}x{f['length']} task not run: projected "
                 f"{f['projected_cpu_s_one_run']['fskan'] / 60:.0f} CPU min per "
                 f"{f['steps']}-step FS-KAN run, {f['projected_cpu_s_protocol'] / 3600:.0f} "
                 "CPU h for the protocol")
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=",".join(TASKS),
                    help=f"comma-separated, of {', '.join(TASKS)}; '' for none")
    ap.add_argument("--feasibility", action="store_true",
                    help=f"time the paper's {PAPER_TASK[0]}x{PAPER_TASK[1]} task (one seed)")
    ap.add_argument("--write", action="store_true", help=f"store the RESULT in {RESULT_FILE}")
    ap.add_argument("--quick", action="store_true",
                    help="2 sizes, 1 seed, 20 steps, 200 test sets (smoke; not written)")
    args = ap.parse_args(argv)
    if args.quick and args.write:
        ap.error("--quick runs are not written (the stored RESULT is the full protocol)")
    tasks = [t for t in args.tasks.split(",") if t]
    bad = [t for t in tasks if t not in TASKS]
    if bad:
        ap.error(f"--tasks {','.join(bad)}: unknown; expected some of {', '.join(TASKS)}")
    torch.set_num_threads(1)
    sizes, seeds, steps, n_test = SIZES, SEEDS, STEPS, N_TEST
    if args.quick:
        sizes, seeds, steps, n_test = SIZES[:2], SEEDS[:1], 20, 200
    t0, c0 = time.perf_counter(), time.process_time()

    def update_stored(**parts):
        """Replace these parts of the stored RESULT (read, update, write)."""
        stored = json.loads(RESULT_FILE.read_text()) if RESULT_FILE.exists() else {}
        stored.setdefault("tasks", {}).update(parts.pop("tasks", {}))
        stored["tasks"] = {k: stored["tasks"][k] for k in TASKS if k in stored["tasks"]}
        stored.update(parts)
        store(RESULT_FILE, stored)

    result = {"tasks": {}}
    for t in tasks:
        on_row = (lambda task, t=t: update_stored(tasks={t: task})) if args.write else None
        result["tasks"][t] = run_task(*TASKS[t], sizes, seeds, steps, n_test, on_row=on_row)
    if args.feasibility:
        result["feasibility"] = feasibility(*PAPER_TASK, PROBE_STEPS, SIZES, SEEDS, STEPS,
                                            N_TEST)
        if args.write:
            update_stored(feasibility=result["feasibility"])
    result["runs"] = {"machine": f"{platform.machine()} {os.cpu_count()} cores (shared)",
                      "wall_s": time.perf_counter() - t0,
                      "cpu_s": time.process_time() - c0, "tasks": tasks}
    if result["tasks"] or "feasibility" in result:
        print(render(result))
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
