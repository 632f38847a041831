"""Length generalisation of chunk sparse attention (HSA) against full attention and ablations.

Multi-key needle retrieval (models/chunk_sparse_attention/data.py), every model trained at
512 tokens (the ``full`` preset: after a warm-up on 128-token sequences, same budget for
all) through ``models.runner``, then tested without fine-tuning at 512 .. 32768 tokens
(1x .. 64x):

- ``hsa``: the full method (CLS chunk encoder, bypassing residual, top-4 of 32 chunks);
- ablations, one ingredient removed each: ``meanpool`` (no encoder, mean landmark),
  ``no_cls`` (encoder, mean landmark), ``standard_residual`` (x + u + MLP), ``dense``
  (K = 32: every chunk of a training sequence selected, no enforced sparsity);
- ``full``: the same SWA layer, then full causal attention with RoPE instead of HSA.

Accuracy is answer accuracy over all queries (chance 1/4); retention = accuracy at 16x
(8192) / accuracy at 1x (512). Then the cost of one full forward (every position) of the
HSA and the full-attention model at each length, each in a fresh subprocess: wall time,
peak memory (peak RSS growth during the forward: /proc/self/clear_refs resets VmHWM
before it, VmHWM - VmRSS after; includes allocator slack), and the ledger's MACs
(TorchDevice). Last line: ``RESULT {json}``.

    .venv/bin/python bench/chunk_sparse_attention.py [--steps 500] [--jobs 2]
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import time

import torch

from models import runner
from models.chunk_sparse_attention.card import VARIANTS, variant_overrides
from models.chunk_sparse_attention.experiment import compare
from models.chunk_sparse_attention.model import build

NAME = "chunk_sparse_attention"
PRESET = "full"   # d 32, 2 heads, S 16, K 4, window 4, 500 steps of 32 at 512 tokens
EVAL_N = {512: 128, 2048: 64, 4096: 32, 8192: 32, 16384: 16, 32768: 16}


def _train_eval(args):
    name, steps, lengths, seed = args
    torch.set_num_threads(1)
    base = runner.make_config(NAME, PRESET, "needle", seed)
    over = {**variant_overrides(name, base), "steps": steps, "eval_lengths": tuple(lengths),
            "eval_samples": tuple(EVAL_N.get(L, 16) for L in lengths)}
    t0 = time.perf_counter()
    run = runner.run(NAME, profile="a100", preset=PRESET, seed=seed, overrides=over)
    run_s = time.perf_counter() - t0
    res = {"run_s": run_s, "train_acc_last": float(run.traces["train_accuracy"].data[-1]),
           **run.metrics}
    print(f"  trained and tested {name}: {run_s:.0f} s, " +
          ", ".join(f"L{L} {res[f'accuracy_L{L}']:.2f}" for L in lengths), flush=True)
    return name, res


def _rss_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    raise RuntimeError(field)


def measure(arch: str, length: int) -> dict:
    """One full forward at ``length`` (every position): time, peak memory growth, MACs."""
    torch.set_num_threads(1)
    cfg = runner.make_config(NAME, PRESET, "needle", 0, {"arch": arch})
    net = build(cfg).eval()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        net(torch.randint(0, cfg.task.vocab, (1, 512), generator=g))    # warm-up
        tokens = torch.randint(0, cfg.task.vocab, (1, length), generator=g)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")                                                # reset VmHWM
        before = _rss_kb("VmRSS")
        t0 = time.perf_counter()
        net(tokens)
        wall = time.perf_counter() - t0
        peak_kb = _rss_kb("VmHWM") - before
        dev = runner.device_for(runner.method_of(NAME), "a100")
        net = dev.compile(net)
        with dev.count("infer"):
            net(tokens)
    macs = dev.ledger.total_ops("infer").get("mac_fp32", 0)
    return {"arch": arch, "length": length, "wall_s": wall, "peak_mb": peak_kb / 1024,
            "macs": macs, "uncounted": sum(dev.ledger.uncounted().values())}


def _measure_subprocess(arch, length):
    out = subprocess.run([sys.executable, __file__, "--measure", arch, str(length)],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def _slope(xs, ys):
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    cov = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    return cov / sum((a - mx) ** 2 for a in lx)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lengths", default="512,2048,4096,8192,16384,32768")
    ap.add_argument("--scaling", default="512,2048,8192,32768")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--measure", nargs=2, metavar=("ARCH", "LENGTH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], int(args.measure[1]))))
        return
    lengths = [int(x) for x in args.lengths.split(",")]
    names = args.variants.split(",")
    t_start = time.perf_counter()
    print(f"training {len(names)} models at 512 tokens ({args.steps} steps, "
          f"{args.jobs} processes), testing at {lengths}", flush=True)
    jobs = [(n, args.steps, lengths, args.seed) for n in names]
    if args.jobs > 1:
        with mp.get_context("spawn").Pool(args.jobs) as pool:
            results = dict(pool.map(_train_eval, jobs))
    else:
        results = dict(map(_train_eval, jobs))

    print("\naccuracy (chance 0.25) | retention = acc(16x) / acc(1x) | HSA recall = needle "
          "chunk in top-K")
    print(f"{'variant':>18} " + " ".join(f"{'L' + str(L):>7}" for L in lengths) +
          f" {'ret16x':>7} {'recall16x':>9}")
    for n in names:
        r = results[n]
        r.setdefault("retention_16x", float("nan"))
        print(f"{n:>18} " + " ".join(f"{r[f'accuracy_L{L}']:7.3f}" for L in lengths) +
              f" {r['retention_16x']:7.2f} {r.get('recall_L8192', float('nan')):9.3f}")
    checks = compare(results, 512)["checks"]
    print("\nchecks: " + ", ".join(f"{k}={v}" for k, v in checks.items()))

    scaling = [int(x) for x in args.scaling.split(",")]
    print("\ncost of one full forward (every position), fresh process per point:")
    print(f"{'arch':>5} {'L':>6} {'us/token':>9} {'peak MB':>8} {'KB/token':>9} "
          f"{'MACs/token':>11}")
    cost = []
    for arch in ("hsa", "full"):
        for L in scaling:
            m = _measure_subprocess(arch, L)
            cost.append(m)
            print(f"{arch:>5} {L:>6} {1e6 * m['wall_s'] / L:9.1f} {m['peak_mb']:8.1f} "
                  f"{1024 * m['peak_mb'] / L:9.2f} {m['macs'] / L:11.0f}", flush=True)
    slopes = {}
    for arch in ("hsa", "full"):
        pts = [m for m in cost if m["arch"] == arch]
        xs = [m["length"] for m in pts]
        for key in ("wall_s", "peak_mb", "macs"):
            slopes[f"{arch}_{key}"] = _slope(xs, [max(m[key], 1e-9) for m in pts])
    print("log-log slope vs length (1 = linear, 2 = quadratic): " +
          ", ".join(f"{k} {v:.2f}" for k, v in slopes.items()))
    total = time.perf_counter() - t_start
    print(f"total {total:.0f} s")
    print("RESULT " + json.dumps({
        "benchmark": "chunk_sparse_attention", "machine": platform.machine(),
        "torch": torch.__version__, "steps": args.steps, "preset": PRESET,
        "results": results, "checks": checks, "cost": cost, "slopes": slopes,
        "total_s": total}))


if __name__ == "__main__":
    main()
