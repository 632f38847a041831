"""This Tsetlin machine vs pyTsetlinMachine, green-tsetlin and tmu: same booleanised data, same
clauses / T / s / epochs, single-threaded: training samples/s, predictions/s, test accuracy.

The reference packages are not runtime dependencies: they run in a separate venv
(``TM_BENCH_PYTHON``, default ``/tmp/tmvenv/bin/python``; make it with
``python -m venv /tmp/tmvenv && /tmp/tmvenv/bin/pip install numpy pyTsetlinMachine green-tsetlin``),
fed the same arrays through an .npz file; tmu needs numpy < 2 and runs from
``TMU_BENCH_PYTHON`` (default ``/tmp/tmuvenv/bin/python``: ``pip install "numpy<2" tmu``).

    python bench/tsetlin.py [--dataset digits|fashion-mnist] [--seeds 0,1,2]

Ours runs through ``models.runner`` (the card's quick preset, whose digits and Fashion-MNIST
settings are ``SETTINGS``) on ``fpga-bnn`` (64-bit words, as the x86 host's registers);
the wall seconds of training and prediction are the run's ``host_fit_s`` / ``host_infer_s``
facts, so they leave out data loading. Our runs are one sweep over ``--seeds``
(``deploy.sweep``, serially in this process after the numba warm-up, so the times stay
single-threaded and compile-free; run files and table in ``bench/out/tsetlin-<dataset>-sweep``):
our accuracy comes with its spread over seeds, our times are the means. The reference
packages are not registered methods: each runs once, with its own fixed seed, as before.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SETTINGS = {"digits": {"clauses": 100, "T": 10, "s": 5.0, "epochs": 10},
            "fashion-mnist": {"clauses": 200, "T": 15, "s": 10.0, "epochs": 2}}

OTHERS = r'''
import json, sys, time
import numpy as np
d = np.load(sys.argv[1]); cfg = json.loads(sys.argv[2]); which = sys.argv[3]
xtr, ytr, xte, yte = d["xtr"], d["ytr"], d["xte"], d["yte"]
n_cls = int(ytr.max()) + 1
out = {}
if which == "pyTsetlinMachine":
    from pyTsetlinMachine.tm import MultiClassTsetlinMachine
    tm = MultiClassTsetlinMachine(cfg["clauses"], cfg["T"], cfg["s"],
                                  boost_true_positive_feedback=0, number_of_state_bits=8)
    t = time.perf_counter(); tm.fit(xtr.astype(np.uint32), ytr.astype(np.uint32),
                                    epochs=cfg["epochs"]); tt = time.perf_counter() - t
    t = time.perf_counter(); pred = tm.predict(xte.astype(np.uint32)); tp = time.perf_counter() - t
elif which == "green-tsetlin":
    import green_tsetlin as gt
    tm = gt.TsetlinMachine(n_literals=xtr.shape[1], n_clauses=cfg["clauses"] * n_cls,
                           n_classes=n_cls, s=cfg["s"], threshold=cfg["T"])
    # seed 0 fails in green-tsetlin 1.1.0 ("All ClauseBlocks must be init() ...")
    tr = gt.Trainer(tm, feedback_type="uniform", n_jobs=1, n_epochs=cfg["epochs"], seed=42,
                    progress_bar=False, load_best_state=False)
    tr.set_train_data(xtr.astype(np.uint8), ytr.astype(np.uint32))
    tr.set_eval_data(xte[:1].astype(np.uint8), yte[:1].astype(np.uint32))
    t = time.perf_counter(); tr.train(); tt = time.perf_counter() - t
    p = tm.get_predictor()
    xs = xte.astype(np.uint8)
    t = time.perf_counter()
    pred = np.array([p.predict(x) for x in xs])
    tp = time.perf_counter() - t
elif which == "tmu":
    from tmu.models.classification.vanilla_classifier import TMClassifier
    tm = TMClassifier(cfg["clauses"], cfg["T"], cfg["s"], platform="CPU",
                      boost_true_positive_feedback=0, number_of_state_bits_ta=8, seed=42)
    xu, yu = xtr.astype(np.uint32), ytr.astype(np.uint32)
    t = time.perf_counter()
    for _ in range(cfg["epochs"]):
        tm.fit(xu, yu)
    tt = time.perf_counter() - t
    t = time.perf_counter(); pred = tm.predict(xte.astype(np.uint32)); tp = time.perf_counter() - t
out = {"train_s": tt, "predict_s": tp, "accuracy": float(np.mean(pred == yte))}
print("JSON " + json.dumps(out))
'''


def run_other(which, npz, cfg, python):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    try:
        p = subprocess.run([python, "-c", OTHERS, npz, json.dumps(cfg), which],
                           capture_output=True, text=True, timeout=900, env=env)
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    for line in p.stdout.splitlines():
        if line.startswith("JSON "):
            return json.loads(line[5:])
    return {"error": (p.stdout + p.stderr)[-400:]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="digits", choices=sorted(SETTINGS))
    ap.add_argument("--seeds", default="0",
                    help="comma-separated seeds of ours (one sweep; default 0)")
    args = ap.parse_args()
    from bench import _sweeps
    from models import runner
    cfg = SETTINGS[args.dataset]
    seeds = [int(s) for s in args.seeds.split(",")]
    # warm the numba cache (compile) on a few samples, then time the quick preset
    runner.run("tsetlin", profile="fpga-bnn", dataset=args.dataset,
               overrides={"epochs": 1, "limit_train": 20, "limit_test": 5})
    result = _sweeps.sweep({"name": f"tsetlin-{args.dataset}", "models": ["tsetlin"],
                            "datasets": [args.dataset], "presets": ["quick"], "seeds": seeds,
                            "profiles": ["fpga-bnn"],
                            "grid": {k: [v] for k, v in cfg.items()}})
    rows = _sweeps.ok_rows(result)
    facts = [_sweeps.facts(result, r) for r in rows]
    data = runner.method_of("tsetlin").load_data(args.dataset, runner.make_config(
        "tsetlin", "quick", args.dataset, seeds[0], cfg))     # the arrays the first seed used
    xtr, ytr, xte, yte = data.x_train, data.y_train, data.x_test, data.y_test
    n_tr, n_te = len(ytr), len(yte)
    acc = _sweeps.spread(rows, "test_accuracy")
    res = {"neuroedge": {"train_s": float(np.mean([f["host_fit_s"] for f in facts])),
                         "predict_s": float(np.mean([f["host_infer_s"] for f in facts])),
                         "accuracy": acc["mean"], "accuracy_spread": acc, "seeds": seeds}}

    python = os.environ.get("TM_BENCH_PYTHON", "/tmp/tmvenv/bin/python")
    with tempfile.TemporaryDirectory() as d:
        npz = str(Path(d) / "data.npz")
        np.savez(npz, xtr=xtr, ytr=ytr, xte=xte, yte=yte)
        for which in ("pyTsetlinMachine", "green-tsetlin"):
            res[which] = run_other(which, npz, cfg, python)
        # tmu needs numpy < 2: its own venv
        res["tmu"] = run_other("tmu", npz, cfg,
                               os.environ.get("TMU_BENCH_PYTHON", "/tmp/tmuvenv/bin/python"))

    print(f"{args.dataset}: {n_tr} train / {n_te} test, {xtr.shape[1]} booleans, "
          f"{cfg['clauses']} clauses per class, T = {cfg['T']}, s = {cfg['s']}, "
          f"{cfg['epochs']} epochs, 8 state bits, single thread")
    print(f"{'implementation':18s} {'train samples/s':>16s} {'predictions/s':>14s} "
          f"{'accuracy':>9s} {'train vs ours':>14s} {'predict vs ours':>16s}")
    ours = res["neuroedge"]
    for name, r in res.items():
        if "error" in r:
            print(f"{name:18s} not run: {r['error']}")
            continue
        r["train_samples_per_s"] = cfg["epochs"] * n_tr / r["train_s"]
        r["predictions_per_s"] = n_te / r["predict_s"]
        print(f"{name:18s} {r['train_samples_per_s']:16.0f} {r['predictions_per_s']:14.0f} "
              f"{100 * r['accuracy']:8.2f}% {ours['train_s'] / r['train_s']:13.2f}x "
              f"{ours['predict_s'] / r['predict_s']:15.2f}x")
    print("(ratios > 1: that implementation is faster than ours)")
    if len(seeds) > 1:
        print(f"ours over seeds {seeds}: accuracy {_sweeps.fmt(acc, digits=2)} % "
              "(mean +/- std [min, max]); its times above are the means over seeds")
    print("RESULT " + json.dumps({"bench": "tsetlin", "dataset": args.dataset, **cfg,
                                  "results": res}))


if __name__ == "__main__":
    main()
