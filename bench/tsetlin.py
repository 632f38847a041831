"""This Tsetlin machine vs pyTsetlinMachine, green-tsetlin and tmu: same booleans, same clauses /
T / s / epochs, one thread, CPU time: training samples/s, predictions/s, test accuracy, and the
epochs each implementation actually trained (asserted equal to the epochs it is timed for).

The reference packages are not runtime dependencies: they run in a separate venv
(``TM_BENCH_PYTHON``, default ``/tmp/tmvenv/bin/python``; make it with
``python3.11 -m venv /tmp/tmvenv && /tmp/tmvenv/bin/pip install numpy pyTsetlinMachine
green-tsetlin``), fed the same arrays through .npz files; tmu needs numpy < 2 and runs from
``TMU_BENCH_PYTHON`` (default ``/tmp/tmuvenv/bin/python``: ``pip install "numpy<2"
tmu==0.8.3``). Missing venvs print "not run" rows.

    python bench/tsetlin.py [--dataset digits|fashion-mnist] [--seeds 0,1,2]
    python bench/tsetlin.py --grid [--quick]

Dataset mode: ours runs through ``models.runner`` (the card's quick preset, whose digits and
Fashion-MNIST settings are ``SETTINGS``) on ``fpga-bnn`` (64-bit words, as the x86 host's
registers) as one sweep over ``--seeds`` (``deploy.sweep``, serially in this process after
the numba warm-up); its times are the runs' ``host_fit_cpu_s`` / ``host_infer_cpu_s`` facts
(CPU seconds of fit and of prediction, data loading left out). Each reference runs once per
seed in one process: pyTsetlinMachine has no seed (its generator is a fixed global), so its
"seeds" are consecutive machines of one process; green-tsetlin and tmu get named children
of k (:func:`library_seeds`; before issue 28, 42 + k and k + 1).

Grid mode (the issue's clause x input-bit grid): clauses per class {100, 400, 1600} x input
bits {256, 1024, 4096}, 2 classes, synthetic data from :func:`grid_data` (stated there),
T = max(10, clauses // 20), s = 10, 2 epochs, 8 state bits, no boost, all implementations on
the same arrays; fewer samples at the big sizes (:func:`grid_sizes`). Ours runs
:class:`models.tsetlin.model.TsetlinMachine` directly on ``fpga-bnn`` (ledger counting on).
The cost growth is fitted as log(CPU s per training sample) = a + b log(clauses) + c log(bits)
per implementation (least squares over the 9 cells): b and c are the slopes.

How each anchor is held to its epochs (every one asserted):

- pyTsetlinMachine: one ``fit(epochs=1, incremental=True)`` call per epoch (its C loop has
  no early exit; the calls are counted). Each call also re-encodes X and rebuilds its
  clause index: part of its timed training, as for every user of its incremental API.
- green-tsetlin: ``Trainer(early_exit_acc=2.0)`` (an accuracy it cannot reach; its default
  1.0 stopped the old bench after 2 of 10 epochs on a one-sample eval set) and
  ``load_best_state=False``; ``results["n_epochs"]`` and ``did_early_exit`` are read back.
  Its training time is the sum of its own per-epoch times with ``trainer.perf_counter``
  replaced by ``time.process_time`` (CPU seconds of ``train_epoch`` alone; its per-epoch
  evaluation on 100 test samples is not timed). It is a coalesced machine (clauses shared
  by the classes, integer weights): it gets ``clauses x classes`` clauses in total,
  ``feedback_type="uniform"`` (one random other class, as the others).
- tmu 0.8.3 (``TMClassifier``, CPU): one ``fit`` per epoch (one epoch each), counted.
- ours: the epochs its fit reported through its progress callback.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sim import seeds  # noqa: E402  (the repository root is on the path from here)

SETTINGS = {"digits": {"clauses": 100, "T": 10, "s": 5.0, "epochs": 10},
            "fashion-mnist": {"clauses": 200, "T": 15, "s": 10.0, "epochs": 2}}
GRID_CLAUSES = (100, 400, 1600)
GRID_BITS = (256, 1024, 4096)
GRID_EPOCHS = 2
IMPLS = ("pyTsetlinMachine", "green-tsetlin", "tmu")

OTHERS = r'''
import json, sys, time
import numpy as np
jobs = json.loads(open(sys.argv[1]).read()); which = sys.argv[2]
for job in jobs:
    d = np.load(job["npz"]); cfg = job["cfg"]; seed = job["seed"]
    xtr, ytr, xte, yte = d["xtr"], d["ytr"], d["xte"], d["yte"]
    n_cls = int(max(ytr.max(), yte.max())) + 1
    E = cfg["epochs"]
    if which == "pyTsetlinMachine":
        from pyTsetlinMachine.tm import MultiClassTsetlinMachine
        tm = MultiClassTsetlinMachine(cfg["clauses"], cfg["T"], cfg["s"],
                                      boost_true_positive_feedback=0, number_of_state_bits=8)
        xu, yu = xtr.astype(np.uint32), ytr.astype(np.uint32)
        ep = 0
        t = time.process_time()
        for _ in range(E):
            tm.fit(xu, yu, epochs=1, incremental=True)
            ep += 1
        tt = time.process_time() - t
        xe = xte.astype(np.uint32)
        t = time.process_time(); pred = tm.predict(xe); tp = time.process_time() - t
    elif which == "green-tsetlin":
        import green_tsetlin as gt
        import green_tsetlin.trainer as gtr
        gtr.perf_counter = time.process_time      # its per-epoch train times in CPU seconds
        tm = gt.TsetlinMachine(n_literals=xtr.shape[1], n_clauses=cfg["clauses"] * n_cls,
                               n_classes=n_cls, s=cfg["s"], threshold=cfg["T"])
        tr = gt.Trainer(tm, feedback_type="uniform", n_jobs=1, n_epochs=E, seed=job["green_seed"],
                        progress_bar=False, load_best_state=False, early_exit_acc=2.0)
        tr.set_train_data(xtr.astype(np.uint8), ytr.astype(np.uint32))
        tr.set_eval_data(xte[:100].astype(np.uint8), yte[:100].astype(np.uint32))
        tr.train()
        r = tr.results
        assert not r["did_early_exit"], r
        ep = int(r["n_epochs"])
        tt = float(sum(r["train_time_of_epochs"]))
        p = tm.get_predictor()
        xs = np.ascontiguousarray(xte.astype(np.uint8))
        t = time.process_time()
        pred = np.array([p.predict(x) for x in xs])
        tp = time.process_time() - t
    elif which == "tmu":
        from tmu.models.classification.vanilla_classifier import TMClassifier
        tm = TMClassifier(cfg["clauses"], cfg["T"], cfg["s"], platform="CPU",
                          boost_true_positive_feedback=0, number_of_state_bits_ta=8,
                          seed=job["tmu_seed"])
        xu, yu = xtr.astype(np.uint32), ytr.astype(np.uint32)
        ep = 0
        t = time.process_time()
        for _ in range(E):
            tm.fit(xu, yu)
            ep += 1
        tt = time.process_time() - t
        xe = xte.astype(np.uint32)
        t = time.process_time(); pred = tm.predict(xe); tp = time.process_time() - t
    out = {"key": job["key"], "train_s": tt, "predict_s": tp, "epochs_trained": ep,
           "accuracy": float(np.mean(np.asarray(pred) == yte))}
    print("JSON " + json.dumps(out), flush=True)
'''


def library_seeds(k: int) -> dict[str, int]:
    """The reference libraries' seeds for their ``k``-th machine: named children of ``k``,
    below 2**31 and nonzero (in case a library keeps a signed 32-bit seed; green-tsetlin's
    seed 0 fails)."""
    return {"green_seed": seeds.child(k, "green-tsetlin") % 2**31 or 1,
            "tmu_seed": seeds.child(k, "tmu") % 2**31 or 1}


def run_other(which, jobs, python):
    """Run ``jobs`` ([{key, npz, cfg, seed}]) in one process of ``python``: {key: result}."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(jobs, f)
    try:
        p = subprocess.run([python, "-c", OTHERS, f.name, which], capture_output=True,
                           text=True, timeout=1800, env=env)
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        return {j["key"]: {"error": f"{type(exc).__name__}: {exc}"} for j in jobs}
    finally:
        os.unlink(f.name)
    got = {}
    for line in p.stdout.splitlines():
        if line.startswith("JSON "):
            r = json.loads(line[5:])
            got[r.pop("key")] = r
    err = (p.stdout + p.stderr)[-400:]
    return {j["key"]: got.get(j["key"], {"error": err}) for j in jobs}


def check_epochs(name, r, epochs):
    """Every implementation trains exactly the epochs its rate is computed over."""
    if "error" not in r:
        assert r["epochs_trained"] == epochs, \
            f"{name} trained {r['epochs_trained']} epochs, timed for {epochs}"


def grid_data(bits: int, n_train: int, n_test: int, seed: int = 0):
    """The grid's synthetic booleans: 2 classes, each the union of 4 random prototypes
    (i.i.d. fair bits); a sample is a uniformly drawn prototype of its class (classes
    balanced by a fair coin) with every bit flipped independently with probability 0.35.
    Returns ``(x_train, y_train, x_test, y_test)`` (uint8, int64)."""
    rs = seeds.rng(seed, "grid", bits)
    proto = (rs.random((2, 4, bits)) < 0.5).astype(np.uint8)
    n = n_train + n_test
    y = rs.integers(0, 2, n)
    x = proto[y, rs.integers(0, 4, n)] ^ (rs.random((n, bits)) < 0.35).astype(np.uint8)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def grid_sizes(clauses: int, bits: int, quick: bool = False):
    """(train, test) samples of a grid cell: ~constant work per cell (2.6e9 / (clauses x
    bits) training samples, clipped to 400..4000; test as many, at most 2000); ``quick``
    divides both by 4."""
    n = int(np.clip(2.6e9 / (clauses * bits), 400, 4000))
    n_te = min(n, 2000)
    return (n // 4, n_te // 4) if quick else (n, n_te)


def ours_direct(xtr, ytr, xte, yte, cfg, seed=0, profile="fpga-bnn"):
    """Train and test :class:`TsetlinMachine` here: CPU seconds, epochs run, accuracy."""
    import sim
    from models.tsetlin.card import TsetlinConfig
    from models.tsetlin.model import TsetlinMachine
    n_cls = int(max(ytr.max(), yte.max())) + 1
    tm = TsetlinMachine(xtr.shape[1], n_cls, TsetlinConfig(
        clauses=cfg["clauses"], T=cfg["T"], s=cfg["s"], epochs=cfg["epochs"], seed=seed),
        sim.device(profile))
    ep = []
    t = time.process_time()
    tm.fit(xtr, ytr, progress=lambda done, total, info: ep.append(done))
    tt = time.process_time() - t
    layer = tm.clause_layer()     # the include masks as the engine's layer (not timed, as
    t = time.process_time()       # green-tsetlin's get_predictor)
    pred = tm.predict(xte, layer=layer)
    tp = time.process_time() - t
    return {"train_s": tt, "predict_s": tp, "epochs_trained": len(ep),
            "accuracy": float(np.mean(pred == yte)),
            "ops_per_train_sample": sum(tm.device.ledger.total_ops("train").values())
            / (cfg["epochs"] * len(ytr))}


def _slopes(rows):
    """Least-squares a + b log(clauses) + c log(bits) of log(s per training sample)."""
    a = np.array([[1.0, np.log(r["clauses"]), np.log(r["bits"])] for r in rows])
    t = np.log([r["train_s"] / (r["epochs_trained"] * r["n_train"]) for r in rows])
    coef = np.linalg.lstsq(a, t, rcond=None)[0]
    return {"clauses": float(coef[1]), "bits": float(coef[2])}


def grid(quick: bool):
    ours_direct(*grid_data(64, 50, 10), {"clauses": 4, "T": 10, "s": 10.0, "epochs": 1})
    cells, jobs = [], []
    tmp = tempfile.TemporaryDirectory()
    for m in GRID_CLAUSES:
        for bits in GRID_BITS:
            n_tr, n_te = grid_sizes(m, bits, quick)
            cfg = {"clauses": m, "T": max(10, m // 20), "s": 10.0, "epochs": GRID_EPOCHS}
            data = grid_data(bits, n_tr, n_te)
            key = f"{m}x{bits}"
            npz = str(Path(tmp.name) / f"{key}.npz")
            np.savez(npz, xtr=data[0], ytr=data[1], xte=data[2], yte=data[3])
            jobs.append({"key": key, "npz": npz, "cfg": cfg, "seed": 0, **library_seeds(0)})
            r = ours_direct(*data, cfg)
            check_epochs("neuroedge", r, GRID_EPOCHS)
            cells.append({"key": key, "clauses": m, "bits": bits, "n_train": n_tr,
                          "n_test": n_te, "cfg": cfg, "neuroedge": r})
            print(f"  ours {key}: {r['train_s']:.2f} s train, {r['predict_s']:.3f} s predict",
                  flush=True)
    others = {}
    for which in IMPLS:
        py = os.environ.get("TMU_BENCH_PYTHON", "/tmp/tmuvenv/bin/python") if which == "tmu" \
            else os.environ.get("TM_BENCH_PYTHON", "/tmp/tmvenv/bin/python")
        others[which] = run_other(which, jobs, py)
        print(f"  {which} done", flush=True)
    tmp.cleanup()
    names = ("neuroedge",) + IMPLS
    print(f"grid: 2 classes, T = max(10, clauses // 20), s = 10, {GRID_EPOCHS} epochs, "
          "8 state bits, one thread, CPU time; ratio = ours time / other's (> 1: other faster)")
    print(f"{'clauses':>7s} {'bits':>5s} {'train':>5s} {'test':>5s} "
          + " ".join(f"{n[:12]:>12s}" for n in names) + "   train ratio (py/green/tmu)"
          + "   predict ratio (py/green/tmu)   epochs (ours/py/green/tmu)   acc %")
    for c in cells:
        for which in IMPLS:
            c[which] = others[which][c["key"]]
            check_epochs(which, c[which], GRID_EPOCHS)
        o = c["neuroedge"]
        rates = []
        for n in names:
            r = c[n]
            rates.append("n/a" if "error" in r else
                         f"{GRID_EPOCHS * c['n_train'] / r['train_s']:.0f}/s")
        tr = [("-" if "error" in c[n] else f"{o['train_s'] / c[n]['train_s']:.2f}x")
              for n in IMPLS]
        pr = [("-" if "error" in c[n] else f"{o['predict_s'] / c[n]['predict_s']:.2f}x")
              for n in IMPLS]
        ep = [str(c[n].get("epochs_trained", "-")) for n in names]
        acc = [("-" if "error" in c[n] else f"{100 * c[n]['accuracy']:.1f}") for n in names]
        print(f"{c['clauses']:7d} {c['bits']:5d} {c['n_train']:5d} {c['n_test']:5d} "
              + " ".join(f"{x:>12s}" for x in rates) + "   " + "/".join(tr) + "   "
              + "/".join(pr) + "   " + "/".join(ep) + "   " + "/".join(acc))
    slopes = {n: _slopes([{**c[n], "clauses": c["clauses"], "bits": c["bits"],
                           "n_train": c["n_train"]} for c in cells])
              for n in names if all("error" not in c[n] for c in cells)}
    for n, s in slopes.items():
        print(f"cost growth {n:17s}: time per training sample ~ clauses^{s['clauses']:.2f}"
              f" x bits^{s['bits']:.2f}")
    for n in IMPLS:
        errs = [c[n]["error"] for c in cells if "error" in c[n]]
        if errs:
            print(f"{n}: not run: {errs[0]}")
    print("RESULT " + json.dumps({"bench": "tsetlin-grid", "epochs": GRID_EPOCHS,
                                  "quick": quick, "cells": cells, "slopes": slopes}))


def dataset(name: str, seeds):
    from bench import _sweeps
    from models import runner
    cfg = SETTINGS[name]
    # warm the numba cache (compile) on a few samples, then time the quick preset
    runner.run("tsetlin", profile="fpga-bnn", dataset=name,
               overrides={"epochs": 1, "limit_train": 20, "limit_test": 5})
    result = _sweeps.sweep({"name": f"tsetlin-{name}", "models": ["tsetlin"],
                            "datasets": [name], "presets": ["quick"], "seeds": seeds,
                            "profiles": ["fpga-bnn"],
                            "grid": {k: [v] for k, v in cfg.items()}})
    rows = _sweeps.ok_rows(result)
    facts = [_sweeps.facts(result, r) for r in rows]
    for f in facts:
        check_epochs("neuroedge", {"epochs_trained": f["epochs_trained"]}, cfg["epochs"])
    data = runner.method_of("tsetlin").load_data(name, runner.make_config(
        "tsetlin", "quick", name, seeds[0], cfg))     # the arrays the first seed used
    xtr, ytr, xte, yte = data.x_train, data.y_train, data.x_test, data.y_test
    n_tr, n_te = len(ytr), len(yte)
    per = {"neuroedge": [{"train_s": f["host_fit_cpu_s"], "predict_s": f["host_infer_cpu_s"],
                          "epochs_trained": f["epochs_trained"],
                          "accuracy": r["test_accuracy"]}
                         for f, r in zip(facts, rows, strict=True)]}
    with tempfile.TemporaryDirectory() as d:
        npz = str(Path(d) / "data.npz")
        np.savez(npz, xtr=xtr, ytr=ytr, xte=xte, yte=yte)
        jobs = [{"key": str(s), "npz": npz, "cfg": cfg, "seed": k, **library_seeds(k)}
                for k, s in enumerate(seeds)]
        for which in IMPLS:
            py = os.environ.get("TMU_BENCH_PYTHON", "/tmp/tmuvenv/bin/python") \
                if which == "tmu" else os.environ.get("TM_BENCH_PYTHON", "/tmp/tmvenv/bin/python")
            got = run_other(which, jobs, py)
            per[which] = [got[j["key"]] for j in jobs]
    res = {}
    for n, runs in per.items():
        ok = [r for r in runs if "error" not in r]
        for r in ok:
            check_epochs(n, r, cfg["epochs"])
        if not ok:
            res[n] = {"error": runs[0]["error"]}
            continue
        acc = [r["accuracy"] for r in ok]
        res[n] = {"train_s": float(np.mean([r["train_s"] for r in ok])),
                  "predict_s": float(np.mean([r["predict_s"] for r in ok])),
                  "epochs_trained": [r["epochs_trained"] for r in ok],
                  "accuracy": float(np.mean(acc)), "accuracies": acc,
                  "accuracy_std": float(np.std(acc, ddof=1)) if len(acc) > 1 else float("nan")}
    print(f"{name}: {n_tr} train / {n_te} test, {xtr.shape[1]} booleans, "
          f"{cfg['clauses']} clauses per class, T = {cfg['T']}, s = {cfg['s']}, "
          f"{cfg['epochs']} epochs, 8 state bits, one thread, CPU time, seeds {seeds}")
    print(f"{'implementation':18s} {'train samples/s':>16s} {'predictions/s':>14s} "
          f"{'accuracy (mean, std, per seed)':>40s} {'train vs ours':>14s} "
          f"{'predict vs ours':>16s} epochs")
    ours = res["neuroedge"]
    for n, r in res.items():
        if "error" in r:
            print(f"{n:18s} not run: {r['error']}")
            continue
        r["train_samples_per_s"] = cfg["epochs"] * n_tr / r["train_s"]
        r["predictions_per_s"] = n_te / r["predict_s"]
        accs = " ".join(f"{100 * a:.1f}" for a in r["accuracies"])
        print(f"{n:18s} {r['train_samples_per_s']:16.0f} {r['predictions_per_s']:14.0f} "
              f"{100 * r['accuracy']:8.2f}% +/- {100 * r['accuracy_std']:.2f} ({accs})"
              f" {ours['train_s'] / r['train_s']:13.2f}x "
              f"{ours['predict_s'] / r['predict_s']:15.2f}x {r['epochs_trained']}")
    print("(ratios > 1: that implementation is faster than ours)")
    # no anchor run (their environments absent): max() of nothing raised here
    best = max(((r["accuracy"], n) for n, r in res.items() if "error" not in r and
                n != "neuroedge"), default=None)
    if best:
        print(f"ours vs the best anchor ({best[1]}): "
              f"{100 * (ours['accuracy'] - best[0]):+.2f} points (means over seeds)")
    print("RESULT " + json.dumps({"bench": "tsetlin", "dataset": name, **cfg,
                                  "seeds": seeds, "results": res}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="digits", choices=sorted(SETTINGS))
    ap.add_argument("--seeds", default="0,1,2",
                    help="comma-separated seeds (one run of every implementation each)")
    ap.add_argument("--grid", action="store_true",
                    help="the clauses x input-bits grid on synthetic data instead")
    ap.add_argument("--quick", action="store_true", help="grid with 4x fewer samples")
    args = ap.parse_args()
    if args.grid:
        grid(args.quick)
    else:
        dataset(args.dataset, [int(s) for s in args.seeds.split(",")])


if __name__ == "__main__":
    main()
