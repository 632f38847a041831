"""COLA (conformal domain-adaptive hashing): the component ablation on two shifted domain pairs.

The paper's claim (ICLR 2026, OpenReview fBmRLVAw4T, ablation table): on Office-Home at 64
bits, removing semantic calibration (SC), representation calibration (RC) or self-regulation
(SR) lowers MAP (full 57.31; w/o SC 54.53, w/o RC 55.21, w/o SR 54.74; none 49.14), and the
uncertainty-weighted Hamming distance (UWHD) ranks better than plain Hamming. Here, at small
scale on one CPU core (``models/conformal_hashing/data.py``):

- ``fashion-mnist``: Fashion-MNIST train (source) -> test images inverted/rotated/scaled/
  blurred/noised (target);
- ``digits``: scikit-learn digits upsampled to 16x16 -> held-out digits re-rendered
  (thicker strokes, elastic jitter, noise).

Per pair: every variant (full, no_sc, no_rc, no_sr, none) at 32 bits, full and none at 16
and 64 bits, 3 seeds; the full model's codes also ranked by plain Hamming (packed codes,
XOR + popcount on ``BitwiseDevice``). Target queries vs the source database, MAP@all. The
sweep runs uncounted (``count=False``); one counted run per pair (full, 32 bits, seed 0)
gives the training ops on TorchDevice and both retrieval costs. Writes
``bench/out/conformal_hashing_map-PAIRS.png`` (MAP per variant and code length) and ends with
``RESULT {json}``.

    python bench/conformal_hashing.py                 # the plan above (~15-25 min, 1 core)
    python bench/conformal_hashing.py --pairs digits  # one pair
    python bench/conformal_hashing.py --checks        # the coverage and set-size checks only
    python bench/conformal_hashing.py --checks --write    # ... stored in bench/out/

``--checks``: the digest's checks 2 and 3 (second half) at 32 bits on both pairs, 3 seeds,
for ``full``, ``none`` (alignment without the conformal weights) and ``source_only`` (no
alignment, no target loss: "before alignment"): target coverage against ``1 - alpha_t -
TV-hat`` (TV-hat: 20-bin histograms of the non-conformity scores of the source hold-out
and of the labelled target), the coverage gap ``1 - alpha_t - coverage`` with and without
alignment and per epoch, and the mean prediction-set size per epoch (the training batches'
target sets; the same trace the HTML report draws as ``mean_set_size``). ``--checks
--write`` stores its RESULT in ``bench/out/conformal_hashing_checks.json``; the coverage
table of ``bench/RESULTS.md`` and of the room README and the set-size lines of the README
are rendered from it (:func:`render_checks`, :func:`set_size_lines`;
``tests/bench/test_conformal_hashing_checks.py`` pins them).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench._results import store  # noqa: E402
from models import runner  # noqa: E402
from models.conformal_hashing.experiment import PLANS, summarize, sweep  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
CHECKS_FILE = OUT / "conformal_hashing_checks.json"
CHECK_VARIANTS = ("source_only", "full", "none")   # the table's row order per pair


def figure(summary: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pairs = sorted({k.split("/")[0] for k in summary if "/" in k})
    fig, axes = plt.subplots(1, len(pairs), figsize=(5.5 * len(pairs), 4), squeeze=False)
    for ax, pair in zip(axes[0], pairs, strict=True):
        keys = sorted((k for k in summary if k.startswith(pair + "/")),
                      key=lambda k: int(k.split("/")[1]))
        bits = [int(k.split("/")[1]) for k in keys]
        for v in ("full", "full_hamming", "none"):
            m = [summary[k][v]["mean"] for k in keys]
            s = [summary[k][v]["std"] for k in keys]
            ax.errorbar(bits, m, yerr=s, marker="o", capsize=3,
                        label={"full_hamming": "full, plain Hamming"}.get(v, v))
        for k in keys:
            for i, v in enumerate(("no_sc", "no_rc", "no_sr")):
                if v in summary[k]:
                    b = int(k.split("/")[1])
                    ax.errorbar(b + 1.5 * (i + 1), summary[k][v]["mean"],
                                yerr=summary[k][v]["std"], marker="s", ls="", capsize=3,
                                label=v)
        ax.set_xscale("log", base=2)
        ax.set_xticks(bits, [str(b) for b in bits])
        ax.set_xlabel("code length (bits)")
        ax.set_ylabel("MAP@all (target queries, source database)")
        ax.set_title(pair + " -> shifted")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def counted(pair: str) -> dict:
    """One counted run: training MACs on TorchDevice and both retrieval costs."""
    run = runner.run("conformal_hashing", dataset=pair, preset="quick", seed=0,
                     overrides={"bits": 32, "variant": "full", "count": True})
    led = run.ledger
    macs = {scope: sum(v for k, v in led.total_ops(scope).items() if k.startswith("mac_"))
            for scope in ("train", "retrieve/uwhd")}
    return {"train_macs": macs["train"], "train_samples": led.samples().get("train", 0),
            "uwhd_macs_ledger": macs["retrieve/uwhd"], "uwhd_macs": run.metrics["uwhd_macs"],
            "hamming_word_ops": run.metrics["hamming_word_ops"],
            "hamming_ops": run.facts["hamming_ledger_ops"],
            "uncounted": {k: int(v) for k, v in led.uncounted().items()},
            "map": run.metrics["map"]}


def _trace(xs) -> str:
    return " ".join(f"{x:.3f}" for x in xs)


def _ms(s: dict) -> str:
    return f"{s['mean']:.3f} +- {s['std']:.3f}"


def render_checks(result: dict) -> str:
    """The coverage table of bench/RESULTS.md and the room README, from a ``--checks``
    RESULT: per pair and variant the final model's target coverage, ``1 - alpha_t``, TV-hat,
    the gap ``1 - alpha_t - coverage``, the runs meeting the bound and MAP (seed mean +- std)."""
    lines = ["| pair | variant | coverage | 1 - alpha_t | TV-hat | gap | bound `cov >= 1 - "
             "alpha - TV-hat` | MAP |", "|---|---|---|---|---|---|---|---|"]
    for key, e in result["checks"].items():
        for v in CHECK_VARIANTS:
            c = e["coverage"].get(v)
            if c is None:
                continue
            lines.append(
                f"| {key.split('/')[0]} | {v} | {_ms(c['target_coverage'])} | "
                f"{1 - c['alpha_final']['mean']:.3f} | {_ms(c['tv_hat'])} | "
                f"{_ms(c['coverage_gap'])} | {c['bound_met']}/{c['runs']} (margin "
                f"{c['coverage_bound_margin']['mean']:+.2f}) | {_ms(c['map'])} |")
    return "\n".join(lines)


def set_size_lines(result: dict) -> list[str]:
    """Full COLA's mean training-set size per epoch (seed means), as the README states it."""
    out = []
    for key, e in result["checks"].items():
        f = e["coverage"]["full"]
        sz = f["per_epoch_mean_set_size"]
        out.append(f"{key.split('/')[0]}: {' '.join(f'{x:.2f}' for x in sz)}: lower at the end "
                   f"than at the start in {f['set_size_last_below_first']}/{f['runs']} seeds, "
                   f"smallest at epoch {int(np.argmin(sz)) + 1}")
    return out


def checks(pairs: tuple, seeds: int, write: bool = False) -> None:
    """Checks 2 and 3 (second half) of the digest: bench lines and a ``RESULT`` line;
    ``write``: the RESULT also stored in :data:`CHECKS_FILE`."""
    plan = {"pairs": pairs, "bits": (32,), "ablate_bits": (),
            "variants": ("full", "none", "source_only"), "seeds": seeds}
    t0 = time.perf_counter()

    def progress(i, n, row):
        print(f"[{i}/{n}] {row['pair']} {row['variant']:>11} seed{row['seed']}: coverage "
              f"{row['target_coverage']:.3f} (1 - alpha {1 - row['alpha_final']:.3f}, TV-hat "
              f"{row['tv_hat']:.3f}) MAP {row['map']:.4f} [{time.perf_counter() - t0:.0f} s]",
              flush=True)

    rows, _ = sweep(plan, 0, preset="quick", count=False, progress=progress)
    summary = summarize(rows)
    out = {}
    for key, e in summary.items():
        cov = e["coverage"]
        out[key] = {"coverage": cov}
        for v, c in cov.items():
            print(f"{key} {v:>11}: coverage {c['target_coverage']['mean']:.3f}+-"
                  f"{c['target_coverage']['std']:.3f}, 1 - alpha {1 - c['alpha_final']['mean']:.3f}"
                  f", TV-hat {c['tv_hat']['mean']:.3f}+-{c['tv_hat']['std']:.3f}, gap "
                  f"{c['coverage_gap']['mean']:.3f}+-{c['coverage_gap']['std']:.3f}; "
                  f"coverage >= 1 - alpha - TV-hat in {c['bound_met']}/{c['runs']} runs "
                  f"(margin {c['coverage_bound_margin']['mean']:+.3f}); MAP "
                  f"{c['map']['mean']:.4f}+-{c['map']['std']:.4f}")
            print(f"    per epoch: conformal set size {_trace(c['per_epoch_conformal_set_size'])}"
                  f" | training sets {_trace(c['per_epoch_mean_set_size'])} | "
                  f"coverage gap {_trace(c['per_epoch_coverage_gap'])} | TV-hat "
                  f"{_trace(c['per_epoch_tv_hat'])}")
        if "source_only" in cov:
            for v in ("full", "none"):
                if v in cov:
                    g, g0 = cov[v]["coverage_gap"]["mean"], cov["source_only"]["coverage_gap"][
                        "mean"]
                    tv, tv0 = cov[v]["tv_hat"]["mean"], cov["source_only"]["tv_hat"]["mean"]
                    # paired by seed: the same seed gives both the same data and init
                    by_seed = {r["seed"]: r for r in rows
                               if f"{r['pair']}/{r['bits']}" == key and r["variant"] == v}
                    paired = [by_seed[r["seed"]]["coverage_gap"] < r["coverage_gap"]
                              for r in rows if f"{r['pair']}/{r['bits']}" == key
                              and r["variant"] == "source_only"]
                    out[key][f"gap_shrinks_{v}"] = bool(g < g0)
                    out[key][f"gap_shrinks_{v}_seeds"] = int(sum(paired))
                    out[key][f"tv_shrinks_{v}"] = bool(tv < tv0)
                    print(f"CHECK 2 {key}: coverage gap source_only {g0:.3f} -> {v} {g:.3f} "
                          f"({'shrinks' if g < g0 else 'does not shrink'}; smaller in "
                          f"{sum(paired)}/{len(paired)} seeds); TV-hat {tv0:.3f} -> {tv:.3f}")
        f = cov["full"]
        sz = f["per_epoch_mean_set_size"]
        out[key]["set_size_decreases"] = bool(sz[-1] < sz[0])
        out[key]["set_size_min_epoch"] = int(np.argmin(sz)) + 1
        print(f"CHECK 3 {key}: full's mean set size epoch 1 {sz[0]:.3f} -> epoch {len(sz)} "
              f"{sz[-1]:.3f} (lower at the end in {f['set_size_last_below_first']}/{f['runs']} "
              f"seeds; smallest {min(sz):.3f} at epoch {int(np.argmin(sz)) + 1})")
    result = {"plan": {k: list(v) if isinstance(v, tuple) else v for k, v in plan.items()},
              "checks": out, "rows": rows,
              "machine": f"{platform.machine()} {os.cpu_count()} cores (shared)",
              "wall_s": time.perf_counter() - t0}
    print(render_checks(result))
    print("\n".join(set_size_lines(result)))
    if write:
        store(CHECKS_FILE, result)
    print("RESULT " + json.dumps(result))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default="fashion-mnist,digits")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--checks", action="store_true",
                    help="only the coverage and set-size checks (full, none, source_only)")
    ap.add_argument("--write", action="store_true",
                    help=f"with --checks: store the RESULT in {CHECKS_FILE}")
    args = ap.parse_args(argv)
    if args.write and not args.checks:
        ap.error("--write stores the --checks RESULT; the ablation's is not stored")
    torch.set_num_threads(1)
    if args.checks:
        checks(tuple(args.pairs.split(",")), args.seeds, args.write)
        return
    plan = {**PLANS["full"], "pairs": tuple(args.pairs.split(",")), "seeds": args.seeds}
    t0 = time.perf_counter()

    def progress(i, n, row):
        print(f"[{i}/{n}] {row['pair']} L{row['bits']} {row['variant']:>6} seed{row['seed']}: "
              f"MAP {row['map']:.4f} (Hamming {row['map_hamming']:.4f}) target acc "
              f"{row['target_accuracy']:.3f} cov {row['target_coverage']:.3f} "
              f"[{time.perf_counter() - t0:.0f} s]", flush=True)

    # the quick preset's sizes (stated in the card) for every run
    rows, _ = sweep(plan, 0, preset="quick", count=False, progress=progress)
    summary = summarize(rows)
    for key, e in summary.items():
        line = "  ".join(f"{v} {e[v]['mean']:.4f}+-{e[v]['std']:.4f}"
                         for v in ("full", "full_hamming", "no_sc", "no_rc", "no_sr", "none")
                         if v in e)
        print(f"{key}: {line}")
    OUT.mkdir(exist_ok=True)
    fig_path = OUT / f"conformal_hashing_map-{'+'.join(plan['pairs'])}.png"
    figure(summary, fig_path)
    costs = {pair: counted(pair) for pair in plan["pairs"]}
    for pair, c in costs.items():
        print(f"{pair} counted run: train {c['train_macs']:.3g} MACs over "
              f"{c['train_samples']} samples; retrieval UWHD {c['uwhd_macs']:.3g} MACs, "
              f"plain Hamming {c['hamming_word_ops']:.3g} word ops")
    result = {"plan": {k: list(v) if isinstance(v, tuple) else v for k, v in plan.items()},
              "summary": summary, "costs": costs, "rows": rows, "figure": str(fig_path),
              "wall_s": time.perf_counter() - t0}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
