"""BEP against QAT under the same tuning budget, chosen on a validation split (issue 33,
item 1).

The earlier comparison (``bench/bep.py``) gave QAT two Adam learning rates and BEP one
hand-set configuration. Here each method gets the same number of configurations over its
own hyperparameters, and each one's best is chosen on a validation split carved from the
training set; the test set is read only afterwards, by the seeds that settle the verdict:

1. Data: Random Prototypes, the card's claim set (10,000 train / 2,000 test; 12,000 x 1000
   bits, 10 classes, flip 0.44: ``models/bep/data.py``), MLP 1000-K-K-10 for K = 32, 64.
2. Split: :data:`VAL_FRACTION` of the training samples (a seeded permutation, stream
   ``bep-tuning/split``) are the validation split; the rest train the tuning runs. BEP
   carves its own 10% from whatever it trains on for its gamma schedule, in tuning and in
   the final runs alike (``BEPConfig.val_fraction``).
3. Budget: :data:`GRIDS` gives each method 4 x 2 settings; every setting is trained for
   ``max(CHECKPOINTS)`` epochs and scored on the validation split after each epoch count
   of :data:`CHECKPOINTS`, so epochs are the third axis: 4 x 2 x 3 = 24 configurations each,
   checked equal (:func:`budget`). A checkpoint is the same network a run of that many
   epochs would give: neither trainer's schedule depends on the total epoch count (BEP's
   gamma schedule reads the held-out error; QAT's Adam has no learning-rate schedule).
   Tuning runs use seed :data:`TUNE_SEED`.
4. Final: each method's chosen configuration is retrained on the whole training set with
   seeds :data:`FINAL_SEEDS` (not the tuning seed) and tested once per seed.
5. Verdict, the card's pass rule (``models/bep/experiment.beats``): one method beats the
   other when it is ahead on >= ceil(2n/3) of the n seeds (4 of 5) and by more than 0.5
   points in the mean; otherwise a tie.

BEP runs on ``sim.device("cortex-m4")`` built here (the tuning needs the network between
epochs, which a runner run does not hand out); QAT (``models/baselines/qat``, not a
registered method) on ``sim.device("x86-avx2")``, uncounted (accuracy only). Single
threaded; about 10 CPU-minutes on one core.

    PYTHONPATH=. OMP_NUM_THREADS=1 nice -n 10 python bench/bep_tuning.py [--write] [--quick]

``--write`` stores the RESULT in ``bench/out/bep_tuning.json``, from which the tables in
``bench/RESULTS.md`` and ``models/bep/README.md`` are rendered (:func:`render`;
``tests/bench/test_bep_tuning.py`` pins them). ``--quick``: K = 32 only, 2 settings per
method, 2 seeds (a smoke run; never written). Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sys
import time
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench import _checks  # noqa: E402
from bench._results import store  # noqa: E402
from models.bep.experiment import MARGIN_PTS, beats  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULT_FILE = ROOT / "bench" / "out" / "bep_tuning.json"
DATASET = "random-prototypes"
WIDTHS = (32, 64)
VAL_FRACTION = 0.2
TUNE_SEED = 0
FINAL_SEEDS = (1, 2, 3, 4, 5)
CHECKPOINTS = (5, 10, 15)
GRIDS = {
    # BEP: the trigger's robustness r (Eq. 1) and the mini-batch (the paper's RNN runs use
    # batch 20; the precursor's default r is 0.25); gamma_0 = 8, nu = 0.5, p_r = 0.5 fixed
    "bep": {"r": (0.25, 0.5, 0.75, 1.0), "batch_size": (10, 100)},
    # QAT: Adam's step (1e-3 is the default, 1e-2 what bench/bep.py found) and the batch
    "qat": {"lr": (1e-3, 3e-3, 1e-2, 3e-2), "batch_size": (10, 100)},
}


def settings(grid: dict) -> list[dict]:
    """Every combination of a method's grid, in a fixed order (the tie-break)."""
    return [dict(zip(grid, vals, strict=True)) for vals in itertools.product(*grid.values())]


def budget(grids: dict, checkpoints) -> int:
    """Configurations per method (settings x epoch checkpoints); raises unless all equal."""
    sizes = {m: len(settings(g)) * len(checkpoints) for m, g in grids.items()}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"bep_tuning: unequal tuning budgets {sizes}; give every method "
                         "the same number of configurations")
    return next(iter(sizes.values()))


def validation_split(n_train: int, fraction: float, seed: int):
    """(tune-train indices, validation indices) of the training set: disjoint, together
    all of 0..n_train - 1."""
    from sim import seeds
    perm = seeds.rng(seed, "bep-tuning", "split").permutation(n_train)
    n_val = int(round(n_train * fraction))
    if not 0 < n_val < n_train:
        raise ValueError(f"bep_tuning: validation fraction {fraction} of {n_train} training "
                         "samples leaves an empty side; use 0 < fraction < 1")
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def train_eval(method: str, params: dict, x_tr, y_tr, x_ev, y_ev, *, hidden, n_classes,
               checkpoints, seed) -> dict[int, float]:
    """Train ``method`` with ``params`` on (x_tr, y_tr) for max(checkpoints) epochs and
    return the accuracy on (x_ev, y_ev) after each checkpoint's epoch count."""
    import sim
    epochs, accs = max(checkpoints), {}
    if method == "bep":
        from models.bep.card import BEPConfig
        from models.bep.model import BEP
        model = BEP(x_tr.shape[1], n_classes,
                    BEPConfig(hidden=hidden, epochs=epochs, seed=seed, **params),
                    sim.device("cortex-m4"))

        def at(epoch, total, record):
            if epoch in checkpoints:
                accs[epoch] = model.evaluate(x_ev, y_ev, scope="validate")["accuracy"]
        model.fit(x_tr, y_tr, progress=at)
        _checks.epochs_trained("BEP", len(model.history), epochs)
    elif method == "qat":
        from models.baselines.qat.model import QAT, QATConfig
        model = QAT(x_tr.shape[1], n_classes,
                    QATConfig(hidden=hidden, epochs=epochs, seed=seed, **params),
                    sim.device("x86-avx2"))
        done = _checks.EpochCounter()

        def at(epoch, total, record):
            done(epoch, total, record)
            if epoch in checkpoints:
                accs[epoch] = model.evaluate(x_ev, y_ev)["accuracy"]
                model.net.train()                  # evaluate switched it to eval mode
        model.fit(x_tr, y_tr, progress=at, count=False)
        _checks.epochs_trained("QAT", done.epochs, epochs)
    else:
        raise ValueError(f"bep_tuning: method {method!r}; expected 'bep' or 'qat'")
    return accs


def tune(method: str, grid: dict, x_train, y_train, *, hidden, n_classes, checkpoints,
         trainer=train_eval, val_fraction=VAL_FRACTION, seed=TUNE_SEED) -> dict:
    """Pick ``method``'s best configuration on a validation split of the training set.

    Takes the training set only (the test set is not an argument, so it cannot steer the
    choice). Returns every configuration's validation accuracy and the best one (the first
    in grid order, then fewest epochs, among equals).
    """
    tr, val = validation_split(len(x_train), val_fraction, seed)
    table = []
    for params in settings(grid):
        accs = trainer(method, params, x_train[tr], y_train[tr], x_train[val], y_train[val],
                       hidden=hidden, n_classes=n_classes, checkpoints=checkpoints, seed=seed)
        if sorted(accs) != sorted(checkpoints):
            raise RuntimeError(f"bep_tuning: {method} {params} scored epochs {sorted(accs)}, "
                               f"expected {sorted(checkpoints)}")
        table += [{**params, "epochs": e, "val_accuracy": float(accs[e])}
                  for e in sorted(checkpoints)]
    best = max(table, key=lambda row: row["val_accuracy"])   # max keeps the first of equals
    return {"table": table, "best": best, "n_val": len(val), "n_tune_train": len(tr)}


def final(method: str, best: dict, data, *, hidden, seeds, trainer=train_eval) -> list[float]:
    """Test accuracy of ``best`` retrained on the whole training set, one per seed."""
    params = {k: v for k, v in best.items() if k not in ("epochs", "val_accuracy")}
    return [float(trainer(method, params, data.x_train, data.y_train, data.x_test,
                          data.y_test, hidden=hidden, n_classes=data.n_classes,
                          checkpoints=(best["epochs"],), seed=s)[best["epochs"]])
            for s in seeds]


def verdict(bep: list[float], qat: list[float]) -> dict:
    """The card's pass rule both ways: 'bep', 'qat' or 'tie'."""
    b_vs_q, q_vs_b = beats(bep, qat), beats(qat, bep)
    who = "bep" if b_vs_q["holds"] else "qat" if q_vs_b["holds"] else "tie"
    return {"winner": who, "bep_minus_qat_pts": b_vs_q["minus_pts"],
            "bep_ahead_seeds": b_vs_q["ahead_seeds"], "qat_ahead_seeds": q_vs_b["ahead_seeds"],
            "needed": b_vs_q["needed"], "margin_pts": MARGIN_PTS}


def settle(data, widths, grids, checkpoints, seeds, trainer=train_eval, progress=print) -> dict:
    """Tune both methods at each width on the validation split, then test the picks."""
    n = budget(grids, checkpoints)
    out = {}
    for k in widths:
        hidden = (k, k)
        row = {"configurations_per_method": n}
        for method, grid in grids.items():
            t = time.process_time()
            tuned = tune(method, grid, data.x_train, data.y_train, hidden=hidden,
                         n_classes=data.n_classes, checkpoints=checkpoints, trainer=trainer)
            progress(f"K={k} {method}: best on validation {tuned['best']} "
                     f"({time.process_time() - t:.0f} CPU s)")
            t = time.process_time()
            test = final(method, tuned["best"], data, hidden=hidden, seeds=seeds,
                         trainer=trainer)
            progress(f"K={k} {method}: test {[round(100 * a, 2) for a in test]} "
                     f"({time.process_time() - t:.0f} CPU s)")
            row[method] = {**tuned, "test": test}
        row["verdict"] = verdict(row["bep"]["test"], row["qat"]["test"])
        out[str(k)] = row
    return out


def spread(accs) -> str:
    a = 100 * np.asarray(accs)
    return f"{a.mean():.1f} +/- {a.std(ddof=1):.1f} [{a.min():.1f}, {a.max():.1f}]"


def params_text(best: dict) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in best.items() if k != "val_accuracy")


def render(result: dict) -> str:
    """The table of bench/RESULTS.md and the room README, from a RESULT."""
    lines = ["| K | BEP pick (validation %) | QAT pick (validation %) | BEP test % | "
             "QAT test % | BEP - QAT | seeds ahead BEP / QAT | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for k, row in result["widths"].items():
        b, q, v = row["bep"], row["qat"], row["verdict"]
        lines.append(
            f"| {k} | {params_text(b['best'])} ({100 * b['best']['val_accuracy']:.2f}) | "
            f"{params_text(q['best'])} ({100 * q['best']['val_accuracy']:.2f}) | "
            f"{spread(b['test'])} | {spread(q['test'])} | {v['bep_minus_qat_pts']:+.2f} | "
            f"{v['bep_ahead_seeds']} / {v['qat_ahead_seeds']} of {len(b['test'])} | "
            f"{v['winner'].upper() if v['winner'] != 'tie' else 'tie'} |")
    lines.append("")
    for k, row in result["widths"].items():
        v, n = row["verdict"], len(row["bep"]["test"])
        lead = {"bep": f"BEP ahead on {v['bep_ahead_seeds']} of {n} seeds",
                "qat": f"QAT ahead on {v['qat_ahead_seeds']} of {n} seeds",
                "tie": f"a tie (BEP ahead on {v['bep_ahead_seeds']} of {n} seeds)"}[v["winner"]]
        lines.append(f"K = {k}: {lead}, BEP - QAT {v['bep_minus_qat_pts']:+.2f} points in "
                     f"the mean (rule: >= {v['needed']} of {n} seeds and > {v['margin_pts']} "
                     "points).")
    return "\n".join(lines)


def claim_text(result: dict) -> str:
    """The verdict as docs/claims.md states it (tests/bench pins the two together)."""
    parts = []
    for k, row in result["widths"].items():
        v, n = row["verdict"], len(row["bep"]["test"])
        who = {"bep": f"BEP ahead on {v['bep_ahead_seeds']} of {n} seeds",
               "qat": f"QAT ahead on {v['qat_ahead_seeds']} of {n} seeds",
               "tie": "a tie"}[v["winner"]]
        parts.append(f"K = {k}: {who} (BEP - QAT {v['bep_minus_qat_pts']:+.2f} points)")
    return "; ".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"store the RESULT in {RESULT_FILE}")
    ap.add_argument("--quick", action="store_true",
                    help="K = 32, 2 settings per method, 2 seeds (smoke run; not written)")
    args = ap.parse_args(argv)
    if args.quick and args.write:
        ap.error("--quick runs are not written (the stored RESULT is the full protocol)")
    import torch

    from models.bep import data as bep_data
    torch.set_num_threads(1)
    data = bep_data.cached(DATASET)
    widths, grids, checkpoints, seeds = WIDTHS, GRIDS, CHECKPOINTS, FINAL_SEEDS
    if args.quick:
        widths, seeds, checkpoints = (32,), FINAL_SEEDS[:2], (2, 4)
        grids = {"bep": {"r": (0.5, 1.0), "batch_size": (100,)},
                 "qat": {"lr": (1e-3, 1e-2), "batch_size": (100,)}}
    t0, c0 = time.perf_counter(), time.process_time()
    rows = settle(data, widths, grids, checkpoints, seeds)
    result = {"dataset": DATASET, "n_train": len(data.x_train), "n_test": len(data.x_test),
              "val_fraction": VAL_FRACTION, "tune_seed": TUNE_SEED, "final_seeds": list(seeds),
              "checkpoints": list(checkpoints), "grids": grids, "widths": rows,
              "machine": f"{platform.machine()} {os.cpu_count()} cores (shared)",
              "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
    print(render(result))
    if args.write:
        store(RESULT_FILE, result)
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
