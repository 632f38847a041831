"""Filter heads at small scale: the paper's checks on a tiny transformer trained from scratch.

Trains the model of ``models/filter_heads`` (default: the bench configuration), locates
heads with the paper's sparse mask search, and prints each measurement beside the paper's
figure for Llama-3.3-70B (digest /work/shared/papers/filter_heads.md) and the issue's
threshold. Last line: ``RESULT {json}``.

    python bench/filter_heads.py            # full (several minutes on 2 shared cores)
    python bench/filter_heads.py --quick    # the CLI's quick configuration
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

from models.filter_heads import patching, tasks
from models.filter_heads import pipeline as exp
from sim.torch_engine import TorchDevice

# (metric, paper figure for Llama-3.3-70B or None, check as (op, threshold) or None)
ROWS = [
    ("n_heads", 79, None),
    ("head_fraction", 79 / 5120, ("<=", 0.25)),
    ("causality", 0.863, (">=", 0.7)),
    ("delta_logit", 9.03, None),
    ("causality_random_mean", 0.0, ("<=", 0.1)),
    ("causality_random_max", None, None),
    ("causality_best_single_head", None, None),
    ("causality_all_heads", None, None),
    ("causality_cross_format_mean", 0.842, (">=", 0.5)),
    ("causality_cross_format_min", None, None),
    ("attention_on_match", None, (">=", 0.5)),
    ("accuracy_clean", 1.0, None),
    ("accuracy_heads_ablated", 0.225, None),       # SelectOne, 79 heads ablated
    ("accuracy_random_ablated", 0.99, None),       # "random heads ~99-100%"
    ("ablation_drop_heads", 0.765, (">=", 0.5)),
    ("ablation_drop_random", 0.01, ("<=", 0.1)),
    ("before_causality_heads", 0.02, ("<", 0.3)),
    ("before_causality_all_heads", None, None),
    ("before_causality_searched", None, None),
    ("before_flag_patch_best", None, (">=", 0.7)),
    ("after_flag_patch_best", None, None),
]


def _ok(value, check):
    if check is None or not np.isfinite(value):
        return ""
    op, thr = check
    good = {"<=": value <= thr, ">=": value >= thr, "<": value < thr}[op]
    return f"{op} {thr}: {'PASS' if good else 'FAIL'}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the CLI's quick configuration")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", default="a100")
    ap.add_argument("--lambdas", type=float, nargs="*", default=[0.2, 0.5],
                    help="extra L1 weights for the sparsity/causality sweep")
    args = ap.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    cfg = exp.quick_config(args.seed) if args.quick else exp.ExperimentConfig(seed=args.seed)
    dev = TorchDevice(args.profile)
    t0 = time.perf_counter()

    def progress(step, total, rec):
        if step == total or step % max(1, total // 5) == 0:
            print(f"  train step {step}/{total}: loss {rec['loss']:.4f} "
                  f"acc {rec['accuracy']:.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)

    m, det, tr = exp.run(cfg, dev, progress=progress)
    wall = time.perf_counter() - t0
    # sparsity vs causality: the same search with stronger L1 weights
    sweep = []
    rng = np.random.default_rng(args.seed + 2000)
    pairs = patching.sample_pairs(rng, cfg.n_eval, cfg.search.fmt, cfg.search.fmt)
    for lam in args.lambdas:
        s_cfg = patching.MaskSearchConfig(**{**asdict(cfg.search), "lam": lam})
        heads, _, _ = patching.search_mask(tr, s_cfg, scope="locate_sweep")
        with dev.count("patch_sweep"):
            c = patching.evaluate_heads(tr, pairs, heads)["causality"] if heads else 0.0
        sweep.append({"lambda": lam, "n_heads": len(heads), "heads": heads,
                      "causality": round(c, 4)})
    m["ablation_drop_heads"] = m["accuracy_clean"] - m["accuracy_heads_ablated"]
    m["ablation_drop_random"] = m["accuracy_clean"] - m["accuracy_random_ablated"]
    n_params = sum(p.numel() for p in tr.model.parameters())
    mc = cfg.model
    print(f"\nmodel: {mc.n_layer} layers x {mc.n_head} heads, d={mc.d_model}, {n_params} "
          f"parameters, {mc.steps} steps x {mc.batch_size} prompts; device "
          f"{dev.torch_device}; wall {wall:.0f} s")
    print("task accuracy: " + ", ".join(f"{k[9:]} {v:.3f}" for k, v in m.items()
                                        if k.startswith("accuracy_") and k.count("_") == 3))
    print(f"located heads (mask > 0.5): {det['heads']}; random sets drawn from "
          f"{det['random_from']} heads")
    print("mask:\n" + np.array2string(det["mask"], precision=2))
    print("single-head causality (layer x head):\n"
          + np.array2string(det["single_head_causality"], precision=2))
    print("format transfer (rows: source format, cols: destination) "
          + str(tasks.FORMATS) + ":\n" + np.array2string(det["format_transfer"], precision=3))
    if "flag_rates_before" in det:
        print("eager-flag patch, rate per block (question before): "
              + np.array2string(det["flag_rates_before"], precision=3)
              + "; control (question after): "
              + np.array2string(det["flag_rates_after"], precision=3))
        print(f"mask searched on question-before pairs: heads {det['heads_before']}")
    for row in sweep:
        print(f"mask search with lambda {row['lambda']}: {row['n_heads']} heads "
              f"{row['heads']}, causality {row['causality']:.3f}")
    print(f"\n{'metric':30s} {'ours':>9s} {'paper':>9s}  check")
    for name, paper, check in ROWS:
        if name not in m:
            continue
        p = "" if paper is None else f"{paper:9.3f}"
        print(f"{name:30s} {m[name]:9.3f} {p:>9s}  {_ok(m[name], check)}")
    checks = {name: _ok(m[name], check).endswith("PASS") for name, _, check in ROWS
              if check is not None and name in m}
    macs = dev.ledger.total_ops().get("mac_fp32", 0)
    print(f"\nledger: {macs:.3e} fp32 MACs in all; uncounted ops: {dev.ledger.uncounted()}")
    result = {"benchmark": "filter_heads", "quick": args.quick, "seed": args.seed,
              "wall_s": round(wall, 1), "parameters": n_params,
              "heads": det["heads"], "heads_before": det.get("heads_before"),
              "metrics": {k: round(float(v), 4) for k, v in m.items()},
              "lambda_sweep": sweep, "checks": checks, "all_pass": all(checks.values()), "mac_fp32": int(macs)}
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
