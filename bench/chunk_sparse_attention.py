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

The training runs are sweeps (``deploy.sweep``): one per variant over ``--seeds``, on a
Dask ``LocalCluster`` of ``--jobs`` worker processes (``--jobs 1``: serially in this
process), run files and table in ``bench/out/chunk_sparse_attention-<variant>-sweep``; the
accuracies printed are means over the seeds, each with its spread (mean, std, min, max)
in the progress lines and the RESULT's ``spread``. One sweep per variant, not one grid: the
variants change different settings (``card.VARIANTS``), not a product of them. So the
variants run one after another and the workers share out a variant's seeds (at most one
worker per seed; one seed runs serially): with one seed this takes about twice the wall
time the script's old pool of 2 (two variants at once) took. The cost part is not a
sweep: it times bare forwards, each in a fresh process, not runner runs.

    .venv/bin/python bench/chunk_sparse_attention.py [--steps 500] [--jobs 2] [--seeds 0,1,2]
    .venv/bin/python bench/chunk_sparse_attention.py --quick --seeds 0,1 --jobs 1   # smoke run
    .venv/bin/python bench/chunk_sparse_attention.py --settle [--jobs 2]   # issue 34 (below)

``--settle`` (issue 34): every variant trained TO A TARGET on a task whose landmarks must be
non-linear, then compared at 16x. Task: 2 needles per needle chunk (``keys_per_chunk``), 4
needles, 256-token training sequences (16 chunks for K = 4; warm-up on 128 tokens for the
first 300 steps, 15% of the step cap). Each (variant, seed) trains until its validation
accuracy at 256 tokens (128 sequences of the ``"val"`` stream, checked every 50 steps) is
>= 0.95, or the step cap (``SETTLE["steps"]``); then it is tested at 256 (1x) and 4096
tokens (16x) on the ``"eval"`` stream. Rule (``verdict``): a variant that did not reach 0.95
on every seed "did not train" and its comparison is untested; otherwise an ablation is worse
than the method when its 16x accuracy is below the method's on >= 2 of 3 seeds AND its mean
is lower by >= MARGIN, the paper's 10 points (the rule stated before the run had 0.02: its
reading, RULE_MARGIN, is rendered beside it as a secondary one). Results are written to
``bench/out/chunk_sparse_attention_settle.json`` after every run (partial results
survive), and the last line is ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench import _sweeps  # noqa: E402
from bench._results import store  # noqa: E402
from models import runner  # noqa: E402
from models.chunk_sparse_attention.card import VARIANTS, variant_overrides  # noqa: E402
from models.chunk_sparse_attention.experiment import compare  # noqa: E402
from models.chunk_sparse_attention.model import build  # noqa: E402

NAME = "chunk_sparse_attention"
PRESET = "full"   # d 32, 2 heads, S 16, K 4, window 4, 500 steps of 32 at 512 tokens
EVAL_N = {512: 128, 2048: 64, 4096: 32, 8192: 32, 16384: 16, 32768: 16}


def variant_spec(name: str, steps: int, lengths, seeds) -> dict:
    """The sweep of one variant over ``seeds``: its overrides, each a one-value grid (the
    variants differ in different settings, so they are not one product grid)."""
    base = runner.make_config(NAME, PRESET, "needle", seeds[0])
    over = {**variant_overrides(name, base), "steps": steps, "eval_lengths": list(lengths),
            "eval_samples": [EVAL_N.get(L, 16) for L in lengths]}
    return {"name": f"{NAME}-{name}", "models": [NAME], "datasets": ["needle"],
            "presets": [PRESET], "seeds": list(seeds), "profiles": ["a100"],
            "grid": {k: [v] for k, v in over.items()}}


def train_eval(name: str, steps: int, lengths, seeds, jobs: int) -> tuple[dict, dict]:
    """Variant ``name`` trained and tested once per seed (one sweep): (means over seeds of
    every metric, plus ``train_acc_last`` and ``seeds``; each metric's spread)."""
    t0 = time.perf_counter()
    workers = min(jobs, len(seeds))   # a cluster of more workers than runs would idle
    result = _sweeps.sweep(variant_spec(name, steps, lengths, seeds), workers=workers,
                           serial=workers <= 1)
    rows = _sweeps.ok_rows(result)
    metrics = [k for k, v in rows[0].items() if k.startswith(("accuracy_L", "recall_L",
                                                              "retention_16x", "train_loss"))
               and isinstance(v, (int, float)) and v == v]
    spreads = {k: _sweeps.spread(rows, k) for k in metrics}
    last = [float(_sweeps.read(result, r).traces["train_accuracy"].data[-1]) for r in rows]
    res = {k: sp["mean"] for k, sp in spreads.items()} | {
        "train_acc_last": sum(last) / len(last), "seeds": len(rows),
        "sweep_s": time.perf_counter() - t0, "sweep_table": str(result.table_path)}
    print(f"  trained and tested {name} ({len(rows)} seeds): {res['sweep_s']:.0f} s, " +
          ", ".join(f"L{L} {_sweeps.fmt(spreads[f'accuracy_L{L}'], scale=1, digits=2)}"
                    for L in lengths), flush=True)
    return res, spreads


SETTLE = {"train_len": 256, "keys_per_chunk": 2, "steps": 2000, "warm_frac": 0.15,
          "warm_len": 128, "batch": 32, "warmup": 50}
"""Train-to-target settings (issue 34), found on seed 0 with the full method: it reached
0.955 validation accuracy at step 450 of a 1500 cap (warm-up 300 steps). The first full
run capped training at 1000 steps (warm-up 300) and the method missed the target on seed 2
(``bench/out/chunk_sparse_attention_settle_cap1000.json``); the cap is now 2000 for every
variant, the warm-up on short sequences still 300 steps (15% of the cap)."""
TARGET, LONG_N, ONE_N = 0.95, 64, 128
MARGIN = 0.10
"""The paper's acceptance, as the method's digest states it (``papers/chunk_sparse_attention.md``,
implementation plan, step 5): "each ablation is >= 10 points worse than the full model at
16x". The verdict uses it; with 64 test sequences per seed a mean over 3 seeds is a multiple
of 1/192, so ">=" and ">" never differ at 0.10 or 0.02."""
RULE_MARGIN = 0.02
"""The mean gap of the rule stated before the first settle run (the stored RESULT's
``"margin"``): a secondary reading ("worse by more than 2 points"), not the paper's claim."""
SETTLE_FILE = Path(__file__).resolve().parent / "out" / "chunk_sparse_attention_settle.json"
SETTLE_ORDER = ("hsa", "meanpool", "no_cls", "standard_residual", "dense", "full")


RESTARTS = 2
"""A run that misses TARGET at the step cap is restarted from a fresh initialisation and
data stream (seed ``seeds.child(seed, "restart", k)``), at most RESTARTS times, for every
variant alike (rule added after the cap-2000 run, in which the method and dense each stuck
on one seed, and before any restart ran). How many attempts a variant needed is reported
beside its accuracy: it is the variants' training reliability, apart from the
length-generalisation comparison, which needs trained models. The test sequences are the
original seed's ``"eval"`` stream for every attempt and variant."""


def settle_one(job: tuple[str, int]) -> dict:
    """Variant ``job[0]`` on seed ``job[1]``, trained to TARGET (or the cap; restarted up
    to RESTARTS times), tested at 1x and 16x the training length."""
    from models.chunk_sparse_attention.run import ChunkAttnLM
    from sim import seeds as sim_seeds
    torch.set_num_threads(1)
    name, seed = job
    t0 = time.perf_counter()
    tried = []
    for attempt in range(1 + RESTARTS):
        run_seed = seed if attempt == 0 else sim_seeds.child(seed, "restart", attempt)
        base = runner.make_config(NAME, PRESET, "needle", run_seed, SETTLE)
        cfg = runner.make_config(NAME, PRESET, "needle", run_seed,
                                 {**SETTLE, **variant_overrides(name, base)})
        dev = runner.device_for(runner.method_of(NAME), "a100")
        model = ChunkAttnLM(cfg, dev).fit(target=TARGET)
        val = model.val_history[-1]["accuracy"] if model.val_history else None
        tried.append({"seed": run_seed, "steps": model.steps_done, "val_accuracy": val})
        if val is not None and val >= TARGET:
            break
    out = {"variant": name, "seed": seed, "attempts": len(tried), "tried": tried,
           "steps": model.steps_done, "val_accuracy": val,
           "reached": bool(val is not None and val >= TARGET),
           "train_s": time.perf_counter() - t0}
    for tag, length, n in (("1x", cfg.train_len, ONE_N), ("16x", 16 * cfg.train_len, LONG_N)):
        r = model.evaluate(length, n=n, seed=sim_seeds.child(seed, "eval"))
        out[f"accuracy_{tag}"] = r["accuracy"]
        if "recall" in r:
            out[f"recall_{tag}"] = r["recall"]
    out["wall_s"] = time.perf_counter() - t0
    return out


def verdict(method: list[dict], variant: list[dict], n_seeds: int,
            margin: float = MARGIN) -> dict:
    """The comparison rule on per-seed runs (dicts of settle_one) of the method and one
    variant: "did not train" when the variant (or the method) missed TARGET on any seed or
    has fewer than ``n_seeds`` runs; "worse" when the variant's 16x accuracy is below the
    method's on >= 2 of 3 seeds (a majority) and its mean by >= ``margin`` (MARGIN, the
    paper's 10 points; RULE_MARGIN for the secondary reading); else "not worse"."""
    by_seed = {r["seed"]: r for r in variant}
    ref = {r["seed"]: r for r in method}
    reached = sum(r["reached"] for r in variant)
    out = {"reached_of": f"{reached} of {len(variant)}"}
    if len(variant) < n_seeds or len(method) < n_seeds:
        return out | {"verdict": "untested (runs missing)"}
    if reached < len(variant):
        return out | {"verdict": "did not train"}
    if not all(r["reached"] for r in method):
        return out | {"verdict": "untested (the method did not train)"}
    seeds = sorted(set(by_seed) & set(ref))
    below = sum(by_seed[s]["accuracy_16x"] < ref[s]["accuracy_16x"] for s in seeds)
    diff = (sum(ref[s]["accuracy_16x"] for s in seeds) -
            sum(by_seed[s]["accuracy_16x"] for s in seeds)) / len(seeds)
    worse = below * 2 > len(seeds) and diff >= margin
    return out | {"below_on": f"{below} of {len(seeds)}", "mean_gap": diff,
                  "verdict": "worse" if worse else "not worse"}


def summarise(runs: list[dict], n_seeds: int, margin: float = MARGIN) -> dict:
    """Per-variant means and the verdict of each variant against the method (by
    ``margin``)."""
    by = {}
    for r in runs:
        by.setdefault(r["variant"], []).append(r)
    table = {}
    for name in [n for n in SETTLE_ORDER if n in by]:
        rs = sorted(by[name], key=lambda r: r["seed"])
        row = {"seeds": [r["seed"] for r in rs]}
        for k in ("steps", "accuracy_1x", "accuracy_16x"):
            row[k] = [r[k] for r in rs]
        row["attempts"] = [r.get("attempts", 1) for r in rs]
        row["reached"] = [r["reached"] for r in rs]
        if name != "hsa":
            row |= verdict(by.get("hsa", []), rs, n_seeds, margin)
        table[name] = row
    return table


def _mean(xs):
    return sum(xs) / len(xs)


def judged(result: dict, margin: float = MARGIN) -> dict:
    """The table of a stored RESULT with its verdicts by ``margin``, summarised again from
    its runs (the stored ``"table"`` keeps the verdicts of the margin the run was written
    under, ``result["margin"]``); a RESULT without runs: its table as stored."""
    if "runs" not in result:
        return result["table"]
    return summarise(result["runs"], len(result["seeds"]), margin)


def _worse(table: dict) -> list[str]:
    return [n for n, row in table.items() if n not in ("hsa", "full")
            and row.get("verdict") == "worse"]


def render(result: dict) -> str:
    """The settle table (markdown) of a stored RESULT, verdicts by the paper's MARGIN, and
    the secondary reading by RULE_MARGIN below it (a RESULT with runs)."""
    lines = ["| variant | reached 0.95 | attempts | steps | acc 1x (mean) | acc 16x per seed | "
             "acc 16x (mean) | verdict vs hsa |", "|---|---|---|---|---|---|---|---|"]
    for name, row in judged(result).items():
        v = row.get("verdict", "(the method)")
        if "below_on" in row:
            v += f" (below on {row['below_on']}, mean gap {row['mean_gap']:+.3f})"
        lines.append(
            f"| {name} | {sum(row['reached'])} of {len(row['reached'])} | "
            f"{'/'.join(str(a) for a in row.get('attempts', [1] * len(row['steps'])))} | "
            f"{'/'.join(str(s) for s in row['steps'])} | {_mean(row['accuracy_1x']):.3f} | "
            f"{' / '.join(f'{a:.3f}' for a in row['accuracy_16x'])} | "
            f"{_mean(row['accuracy_16x']):.3f} | {v} |")
    if "runs" in result:
        ablations = [n for n in judged(result) if n not in ("hsa", "full")]
        worse = _worse(judged(result, RULE_MARGIN))
        lines += ["", "Verdict: worse when below the method on a majority of seeds and in "
                  f"the mean by >= {MARGIN:.2f} (the paper's acceptance, {MARGIN * 100:.0f} "
                  f"points). Secondary reading, with the {RULE_MARGIN:.2f} margin of the rule "
                  f"stated before the run: {len(worse)} of {len(ablations)} ablations worse"
                  + (f" ({', '.join(worse)})" if worse else "") + "."]
    return "\n".join(lines)


LABEL = {"hsa": "the method", "full": "full attention"}


def claim_text(result: dict) -> str:
    """The docs/claims.md row, from a stored RESULT."""
    t = judged(result)
    names = [n for n in t if n not in ("hsa", "full")]
    parts = [f"{name} {t[name].get('verdict', '?')}" for name in names]
    hsa = t.get("hsa")
    head = ("method trained to 0.95 on "
            f"{sum(hsa['reached'])} of {len(hsa['reached'])} seeds, 16x accuracy "
            f"{_mean(hsa['accuracy_16x']):.2f}" if hsa else "method not run")
    # runs (variant, seed) that restarted, not restarts: a run restarted twice counts once
    restarted = {n: sum(a > 1 for a in row.get("attempts", [])) for n, row in t.items()}
    runs = sum(len(row.get("attempts", [])) for row in t.values())
    if any(restarted.values()):
        which = ", ".join(f"{LABEL.get(n, n)} on {k} of "
                          f"{len(t[n]['attempts'])} seeds" for n, k in restarted.items() if k)
        head += (f"; {sum(restarted.values())} of the {runs} runs restarted after missing "
                 f"0.95 at the step cap: {which}")
    full = f"; full attention {t['full']['verdict']}" if "full" in t else ""
    worse = [n for n in names if t[n].get("verdict") == "worse"]
    second = ""
    if "runs" in result:
        rule = _worse(judged(result, RULE_MARGIN))
        second = (f"; secondary reading, {RULE_MARGIN:.2f} margin (the rule stated before the "
                  f"run): {len(rule)} of {len(names)} worse"
                  + (f" ({', '.join(rule)})" if rule else ""))
    return ("| `chunk_sparse_attention` | length generalisation; each ablation worse | "
            f"2 keys per chunk, trained to target (bench --settle): {head}{full}; "
            f"ablations at 16x (paper's acceptance: >= {MARGIN * 100:.0f} points worse): "
            f"**{len(worse)} of {len(names)} worse: {', '.join(parts) or 'not run'}**"
            f"{second} |")


def settle(seeds, names, jobs: int) -> dict:
    """Every (variant, seed) to the target, ``jobs`` at a time; the JSON file is rewritten
    after every finished run."""
    import multiprocessing as mp
    work = [(n, s) for n in names for s in seeds]
    result = {"benchmark": "chunk_sparse_attention_settle", "settings": SETTLE,
              "restarts": RESTARTS, "target": TARGET, "margin": MARGIN,
              "eval_n": {"1x": ONE_N, "16x": LONG_N},
              "seeds": list(seeds), "variants": list(names),
              "command": "python bench/chunk_sparse_attention.py --settle " + " ".join(
                  sys.argv[1:]).replace("--settle", "").strip(),
              "machine": "shared 2-core CPU", "torch": torch.__version__, "runs": []}
    SETTLE_FILE.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(jobs) as pool:
        for r in pool.imap_unordered(settle_one, work):
            result["runs"].append(r)
            result["table"] = summarise(result["runs"], len(seeds))
            result["missing"] = [f"{n}/{s}" for n, s in work
                                 if not any(x["variant"] == n and x["seed"] == s
                                            for x in result["runs"])]
            result["total_s"] = time.perf_counter() - t0
            store(SETTLE_FILE, result)
            print(f"{r['variant']} seed {r['seed']}: steps {r['steps']} reached "
                  f"{r['reached']} acc 1x {r['accuracy_1x']:.3f} 16x {r['accuracy_16x']:.3f} "
                  f"({r['wall_s']:.0f} s)", flush=True)
    print(render(result))
    return result


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
    ap.add_argument("--steps", type=int, default=None, help="training steps (default 500)")
    ap.add_argument("--jobs", type=int, default=2,
                    help="Dask worker processes per variant's sweep, at most one per seed "
                         "(1: serial, in-process)")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    ap.add_argument("--lengths", default=None,
                    help="test lengths (default 512,2048,4096,8192,16384,32768)")
    ap.add_argument("--scaling", default=None, help="cost lengths (default 512,2048,8192,32768)")
    ap.add_argument("--variants", default=None, help=f"default {','.join(VARIANTS)}")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 30 steps, hsa and full, lengths 512,2048 (defaults only)")
    ap.add_argument("--settle", action="store_true",
                    help="issue 34: every variant trained to 0.95 on the 2-keys-per-chunk "
                         "task, compared at 16x (default seeds 0,1,2)")
    ap.add_argument("--measure", nargs=2, metavar=("ARCH", "LENGTH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], int(args.measure[1]))))
        return
    if args.settle:
        seeds = [int(x) for x in (args.seeds if args.seeds != "0" else "0,1,2").split(",")]
        names = (args.variants or ",".join(SETTLE_ORDER)).split(",")
        result = settle(seeds, names, args.jobs)
        print("RESULT " + json.dumps(result))
        return
    q = args.quick
    steps = args.steps or (30 if q else 500)
    lengths = [int(x) for x in (args.lengths or (
        "512,2048" if q else "512,2048,4096,8192,16384,32768")).split(",")]
    args.scaling = args.scaling or ("512,2048" if q else "512,2048,8192,32768")
    names = (args.variants or ("hsa,full" if q else ",".join(VARIANTS))).split(",")
    seeds = [int(x) for x in args.seeds.split(",")]
    t_start = time.perf_counter()
    print(f"training {len(names)} models at 512 tokens ({steps} steps, seeds {seeds}, "
          f"{min(args.jobs, len(seeds))} worker processes per variant), testing at {lengths}",
          flush=True)
    results, spreads = {}, {}
    for n in names:
        results[n], spreads[n] = train_eval(n, steps, lengths, seeds, args.jobs)

    print(f"\naccuracy (chance 0.25; mean over {len(seeds)} seeds) | retention = acc(16x) / "
          "acc(1x) | HSA recall = needle chunk in top-K")
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
        "torch": torch.__version__, "steps": steps, "preset": PRESET, "seeds": seeds,
        "results": results, "spread": spreads, "checks": checks, "cost": cost, "slopes": slopes,
        "total_s": total}))


if __name__ == "__main__":
    main()
