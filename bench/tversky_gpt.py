"""Tversky GPT against its equal-parameter linear twin: validation perplexity vs steps (issue 33).

The Tversky GPT of ``models/tversky/gpt.py`` (every block's MLP stack -> one Tversky
projection d -> d, the LM head a Tversky projection whose prototypes are the token
embeddings, one feature bank shared by all) was compared with a GPT that keeps its 4x GELU
MLPs: a network about twice its size, not a linear layer. Here the same character GPT is
trained in four forms, same data, optimiser, schedule, window draws and seeds:

- ``tversky``: the Tversky GPT (``CharGPTConfig(tversky="all")``);
- ``bank_linear``: the equal-parameter linear twin: every Tversky projection becomes the
  linear map ``x F^T F Pi^T`` over the same tensors (bank F, prototypes Pi, tied head), so
  the two differ only in the similarity (Tversky's masked contrast vs a dot product); it
  has 3 (layers + 1) parameters fewer (theta, alpha, beta);
- ``linear``: every Tversky projection becomes a plain ``nn.Linear`` of the same shape (no
  bank: K d + 3 (layers + 1) parameters fewer);
- ``mlp``: the earlier baseline (GELU MLP stacks d -> 4d -> d, tied linear head).

Validation perplexity (every non-overlapping window of the held-out last 10% of the text)
is logged every ``--eval-every`` steps. The verdict rule, k of n seeds: Tversky is *better*
than a twin when its final PPL is below the twin's x 0.99 on at least ceil(2n/3) seeds,
*worse* when above x 1.01 on at least ceil(2n/3) seeds, else a *tie*.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python bench/tversky_gpt.py \\
        [--steps 5000] [--seeds 0,1,2,3,4] [--models tversky,bank_linear,linear,mlp] \\
        [--width 48] [--block 32] [--quick] [--plot-only]

Writes ``bench/out/tversky_gpt.json`` (after every run, atomically; ``--out`` to change)
and the plot ``bench/tversky_gpt.png`` rendered from that file (``--plot-only`` re-renders
it without training). Last line: ``RESULT {json}`` (the summary, without the curves).
The paper's configuration width 64, context 64 is ``--width 64 --block 64`` (about 3x the
CPU time of the default).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

# run from a checkout without installing: this checkout, not an installed copy, is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from models.tversky.gpt import CharGPT, CharGPTConfig, encode, license_corpus, train_lm  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULT_FILE = HERE / "out" / "tversky_gpt.json"
PLOT_FILE = HERE / "tversky_gpt.png"
VARIANT = {"tversky": "all", "bank_linear": "bank_linear", "linear": "linear", "mlp": "none"}
LABEL = {"tversky": "Tversky GPT (Tversky d->d per block, Tversky tied head, shared bank)",
         "bank_linear": "equal-parameter linear twin (x F^T F Pi^T, same tensors)",
         "linear": "plain linear twin (nn.Linear d->d, tied head, no bank)",
         "mlp": "earlier baseline (GELU MLP d->4d->d, tied head)"}
MARGIN = 0.01   # a seed counts for one side when the PPL ratio is beyond 1 -+ this


def verdict(ratios: list[float]) -> str:
    """``tversky PPL / twin PPL`` per seed -> better / worse / tie (the module docstring's rule)."""
    k = math.ceil(2 * len(ratios) / 3)
    better = sum(r < 1 - MARGIN for r in ratios)
    worse = sum(r > 1 + MARGIN for r in ratios)
    if better >= k:
        return f"better ({better} of {len(ratios)} seeds below x{1 - MARGIN:.2f}; rule: >= {k})"
    if worse >= k:
        return f"worse ({worse} of {len(ratios)} seeds above x{1 + MARGIN:.2f}; rule: >= {k})"
    return (f"tie ({better} better, {worse} worse of {len(ratios)} seeds; rule: >= {k} beyond "
            f"x1 -+ {MARGIN})")


def spread(values: list[float]) -> dict:
    return {"mean": statistics.mean(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "n": len(values)}


def summarise(result: dict) -> dict:
    """Per model: final PPL spread over seeds; per twin: Tversky/twin ratios and the verdict."""
    runs = result["runs"]
    out = {}
    for name, by_seed in runs.items():
        out[name] = {"parameters": next(iter(by_seed.values()))["parameters"],
                     "final_ppl": spread([r["val_ppl"] for r in by_seed.values()]),
                     "seeds": sorted(int(s) for s in by_seed)}
    if "tversky" in runs:
        for twin in (m for m in runs if m != "tversky"):
            common = sorted(set(runs["tversky"]) & set(runs[twin]), key=int)
            if not common:
                continue
            ratios = [runs["tversky"][s]["val_ppl"] / runs[twin][s]["val_ppl"] for s in common]
            out[f"tversky_vs_{twin}"] = {"ppl_ratio": spread(ratios),
                                         "ratios": ratios, "verdict": verdict(ratios)}
    return out


def render_table(result: dict) -> list[str]:
    """The README/RESULTS table rows of a results file, as the docs show them."""
    s = result["summary"]
    rows = []
    for name in VARIANT:
        if name not in s:
            continue
        f = s[name]["final_ppl"]
        cells = [LABEL[name], f"{s[name]['parameters']:,}",
                 f"{f['mean']:.3f} +- {f['std']:.3f} ({f['min']:.3f}-{f['max']:.3f}, "
                 f"{f['n']} seeds)"]
        if name == "tversky":
            cells += ["-", "-"]
        elif f"tversky_vs_{name}" in s:
            c = s[f"tversky_vs_{name}"]
            cells += [f"x{c['ppl_ratio']['mean']:.3f} ({c['ppl_ratio']['min']:.3f}-"
                      f"{c['ppl_ratio']['max']:.3f})", c["verdict"]]
        else:
            cells += ["-", "-"]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def render_claim(result: dict) -> str:
    """The claims-table cell of a results file (docs/claims.md states it verbatim)."""
    s, c = result["summary"], result["config"]
    tv = s["tversky"]
    parts = [f"char GPT ({c['steps']:,} steps, {tv['final_ppl']['n']} seeds, d {c['width']}, "
             f"context {c['block']}): Tversky PPL {tv['final_ppl']['mean']:.2f}"]
    for twin, words in (("bank_linear", "equal-parameter linear twin"),
                        ("linear", "plain linear twin"), ("mlp", "4x-MLP baseline")):
        if f"tversky_vs_{twin}" in s:
            r = s[f"tversky_vs_{twin}"]
            parts.append(f"vs {words} ({s[twin]['parameters']:,} vs {tv['parameters']:,} params)"
                         f" x{r['ppl_ratio']['mean']:.2f} ({r['ppl_ratio']['min']:.2f}-"
                         f"{r['ppl_ratio']['max']:.2f}), {r['verdict'].split(' (')[0]}")
    return "; ".join(parts)


def plot(result: dict, path: Path = PLOT_FILE) -> Path:
    """Validation PPL vs steps, mean over seeds with the min-max band, from the results file."""
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for name in VARIANT:
        if name not in result["runs"]:
            continue
        curves = [r["val_curve"] for r in result["runs"][name].values()]
        steps = np.array([p[0] for p in curves[0]])
        ppl = np.array([[p[1] for p in c] for c in curves])     # (seeds, points)
        line, = ax.plot(steps, ppl.mean(0), label=f"{name} ({len(curves)} seeds, "
                        f"{result['summary'][name]['parameters']:,} params)")
        ax.fill_between(steps, ppl.min(0), ppl.max(0), color=line.get_color(), alpha=0.2)
    c = result["config"]
    ax.set(yscale="log", xlabel="training steps", ylabel="validation perplexity (log)",
           title=f"char GPT, {c['layers']} layers, d {c['width']}, context {c['block']}, "
                 f"K {c['bank_size']}: mean and min-max over seeds")
    ax.set_ylim(top=min(ax.get_ylim()[1], 40))
    ticks = [t for t in (3, 4, 5, 6, 8, 10, 15, 20, 30, 40) if ax.get_ylim()[0] <= t]
    ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
    ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_path(results: Path) -> Path:
    """bench/tversky_gpt.png for the default results file, else the file's name with .png."""
    return PLOT_FILE if results.resolve() == RESULT_FILE else results.with_suffix(".png")


def write_atomic(path: Path, result: dict) -> None:
    """Write the results file whole or not at all (a killed run leaves the last good one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--models", default=",".join(VARIANT))
    ap.add_argument("--width", type=int, default=48)
    ap.add_argument("--block", type=int, default=32, help="context length in characters")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--bank", type=int, default=0, help="bank size K (default: = width)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 100 steps, seed 0, "
                    "results to <tmp>/tversky_gpt_quick.json, no plot")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--append", action="store_true",
                    help="add these seeds' runs to the results file (same settings otherwise)")
    ap.add_argument("--plot-only", action="store_true",
                    help="re-render the plot from the results file, train nothing")
    args = ap.parse_args()
    out = args.out or (Path(tempfile.gettempdir()) / "tversky_gpt_quick.json" if args.quick
                       else RESULT_FILE)
    if args.plot_only:
        print(f"plot: {plot(json.loads(out.read_text()), plot_path(out))}")
        return
    if args.quick:
        args.steps, args.seeds, args.eval_every = 100, "0", 25
    models = args.models.split(",")
    unknown = [m for m in models if m not in VARIANT]
    if unknown:
        raise SystemExit(f"--models: {unknown} unknown; choose from {list(VARIANT)}")
    seeds = [int(s) for s in args.seeds.split(",")]
    torch.set_num_threads(1)

    text = license_corpus()
    ids, chars = encode(text)
    split = int(0.9 * len(ids))
    config = {"corpus": "/usr/share/common-licenses", "characters": len(text),
              "vocab": len(chars), "validation_characters": len(ids) - split,
              "layers": args.layers, "width": args.width, "heads": 4, "block": args.block,
              "bank_size": args.bank or args.width, "batch": args.batch, "lr": args.lr,
              "schedule": "AdamW (weight decay 0.01), cosine to 0 over the steps",
              "steps": args.steps, "eval_every": args.eval_every, "seeds": seeds}
    print(f"== char GPT on {config['corpus']} ({len(text)} chars, vocab {len(chars)}, last "
          f"10% held out): {args.layers} layers, d {args.width}, context {args.block}, "
          f"K {config['bank_size']}, batch {args.batch}, {args.steps} steps, seeds {seeds} ==",
          flush=True)
    result = {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
              "torch": torch.__version__, "threads": 1, "config": config, "runs": {}}
    if args.append:       # more seeds for the same experiment: every other setting must agree
        old = json.loads(out.read_text())
        differ = [k for k in config if k != "seeds" and old["config"].get(k) != config[k]]
        if differ:
            raise SystemExit(f"--append: {out} was run with other settings {differ}: "
                             + ", ".join(f"{k} {old['config'].get(k)} here {config[k]}"
                                         for k in differ))
        config["seeds"] = sorted(set(old["config"]["seeds"]) | set(seeds))
        result["runs"] = old["runs"]
        result["wall_s_earlier"] = old.get("wall_s", 0.0) + old.get("wall_s_earlier", 0.0)
    t_all = time.perf_counter()
    for seed in seeds:            # seeds outer: a cut-short run still has every model per seed
        for name in models:
            cfg = CharGPTConfig(vocab=len(chars), block=args.block, layers=args.layers,
                                width=args.width, bank_size=config["bank_size"],
                                tversky=VARIANT[name])
            model = CharGPT(cfg, seed=seed)
            c0, w0 = time.process_time(), time.perf_counter()
            run = train_lm(model, ids[:split], ids[split:], steps=args.steps, batch=args.batch,
                           lr=args.lr, seed=seed, eval_every=args.eval_every)
            if len(run.train_loss) != args.steps or run.val_curve[-1][0] != args.steps:
                raise RuntimeError(f"bench: {name} seed {seed} trained {len(run.train_loss)} "
                                   f"steps, but the bench asked for {args.steps}")
            result["runs"].setdefault(name, {})[str(seed)] = {
                "parameters": model.n_parameters, "val_ppl": run.val_ppl,
                "val_curve": run.val_curve,
                "train_loss_last_100": statistics.mean(run.train_loss[-100:]),
                "cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0}
            r = result["runs"][name][str(seed)]
            print(f"  seed {seed} {name:11s}: val PPL {run.val_ppl:.3f} | {model.n_parameters:,}"
                  f" params | curve " + " ".join(f"{p:.2f}" for _, p in run.val_curve[1::4])
                  + f" | {r['cpu_s']:.0f} s CPU, {r['wall_s']:.0f} s wall", flush=True)
            result["summary"] = summarise(result)
            result["wall_s"] = time.perf_counter() - t_all
            write_atomic(out, result)
    for row in render_table(result):
        print(row)
    print(render_claim(result))
    for key, c in result["summary"].items():
        if key.startswith("tversky_vs_"):
            print(f"  {key}: PPL ratio mean x{c['ppl_ratio']['mean']:.3f} per seed "
                  + ", ".join(f"{r:.3f}" for r in c["ratios"]) + f" -> {c['verdict']}")
    if not args.quick:
        print(f"results: {out}; plot: {plot(result, plot_path(out))}")
    print(f"total {result['wall_s']:.0f} s")
    print("RESULT " + json.dumps({k: v for k, v in result.items() if k != "runs"}))


if __name__ == "__main__":
    main()
