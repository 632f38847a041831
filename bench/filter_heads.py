"""Filter heads at small scale: the paper's checks on a tiny transformer trained from scratch.

Runs ``filter_heads`` through ``models.runner`` (default: the ``full`` preset, the bench
configuration): trains the model, locates heads with the paper's sparse mask search, and
prints each measurement beside the paper's figure for Llama-3.3-70B (Sharma et al.,
arXiv:2510.26784, Sec. 3-5; the rows are ``models/filter_heads/experiment.py``'s ``ROWS``)
and the replication's threshold. Then the same search with stronger L1 weights on the
trained model, rebuilt from the run's trained state. Last line: ``RESULT {json}``.

    python bench/filter_heads.py            # full (several minutes on 2 shared cores)
    python bench/filter_heads.py --quick    # the CLI's quick preset
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch

from models import runner
from models.filter_heads import data, patching
from models.filter_heads.experiment import ROWS, check, checks
from models.filter_heads.model import from_trained
from sim import seeds

NAME = "filter_heads"


def _ok(value, rule):
    ok = check(value, rule)
    return "" if ok is None else f"{rule[0]} {rule[1]}: {'PASS' if ok else 'FAIL'}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the CLI's quick configuration")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", default="a100")
    ap.add_argument("--lambdas", type=float, nargs="*", default=[0.2, 0.5],
                    help="extra L1 weights for the sparsity/causality sweep")
    args = ap.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    preset = "quick" if args.quick else "full"
    t0 = time.perf_counter()

    def progress(step, total, rec):
        if step == total or step % max(1, total // 5) == 0:
            print(f"  train step {step}/{total}: loss {rec['loss']:.4f} "
                  f"acc {rec['accuracy']:.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)

    run = runner.run(NAME, profile=args.profile, preset=preset, seed=args.seed,
                     progress=progress)
    wall = time.perf_counter() - t0
    cfg = runner.config_from_dict(NAME, run.config)
    summary = checks(run.metrics)
    m = {**run.metrics, **summary["metrics"]}
    tr, det = run.traces, run.facts
    # sparsity vs causality: the same search with stronger L1 weights, on the trained model
    # rebuilt from the run's trained state (its own device and ledger)
    dev = runner.device_for(runner.method_of(NAME), args.profile)
    lm = from_trained(run.trained, dev)
    sweep = []
    rng = seeds.rng(args.seed, "sweep_pairs")
    pairs = patching.sample_pairs(rng, cfg.n_eval, cfg.search_fmt, cfg.search_fmt)
    for lam in args.lambdas:
        s_cfg = patching.MaskSearchConfig(**{**asdict(cfg.search), "lam": lam})
        heads, _, _ = patching.search_mask(lm, s_cfg, scope="locate_sweep")
        with dev.count("patch_sweep"):
            c = patching.evaluate_heads(lm, pairs, heads)["causality"] if heads else 0.0
        sweep.append({"lambda": lam, "n_heads": len(heads), "heads": heads,
                      "causality": round(c, 4)})
    print(f"\nmodel: {cfg.n_layer} layers x {cfg.n_head} heads, d={cfg.d_model}, "
          f"{int(m['parameters'])} parameters, {cfg.steps} steps x {cfg.batch_size} prompts; "
          f"device {det['torch_device']}; wall {wall:.0f} s")
    print("task accuracy: " + ", ".join(f"{k[9:]} {v:.3f}" for k, v in m.items()
                                        if k.startswith("accuracy_") and k.count("_") == 3))
    print(f"located heads (mask > 0.5): {det['heads']}; random sets drawn from "
          f"{det['random_heads_from']} heads")
    print("mask:\n" + np.array2string(tr["mask"].data, precision=2))
    print("single-head causality (layer x head):\n"
          + np.array2string(tr["single_head_causality"].data, precision=2))
    print("format transfer (rows: source format, cols: destination) "
          + str(data.FORMATS) + ":\n" + np.array2string(tr["format_transfer"].data,
                                                         precision=3))
    if "flag_rates_before" in tr:
        print("eager-flag patch, rate per block (question before): "
              + np.array2string(tr["flag_rates_before"].data, precision=3)
              + "; control (question after): "
              + np.array2string(tr["flag_rates_after"].data, precision=3))
        print(f"mask searched on question-before pairs: heads {det['heads_before']}")
    for row in sweep:
        print(f"mask search with lambda {row['lambda']}: {row['n_heads']} heads "
              f"{row['heads']}, causality {row['causality']:.3f}")
    print(f"\n{'metric':30s} {'ours':>9s} {'paper':>9s}  check")
    for name, paper, rule in ROWS:
        if name not in m:
            continue
        p = "" if paper is None else f"{paper:9.3f}"
        print(f"{name:30s} {m[name]:9.3f} {p:>9s}  {_ok(m[name], rule)}")
    macs = run.ledger.total_ops().get("mac_fp32", 0)
    sweep_macs = dev.ledger.total_ops().get("mac_fp32", 0)
    print(f"\nledger: {macs:.3e} fp32 MACs in the run (+ {sweep_macs:.3e} in the lambda "
          f"sweep); uncounted ops: {run.ledger.uncounted()}")
    result = {"benchmark": "filter_heads", "quick": args.quick, "seed": args.seed,
              "wall_s": round(wall, 1), "parameters": int(m["parameters"]),
              "heads": det["heads"], "heads_before": det.get("heads_before"),
              "metrics": {k: round(float(v), 4) for k, v in m.items()},
              "lambda_sweep": sweep, "checks": summary["checks"],
              "all_pass": summary["claim_met"], "mac_fp32": int(macs),
              "mac_fp32_sweep": int(sweep_macs)}
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
