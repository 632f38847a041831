"""Screener at small scale: voxel AUROC of six density variants over seeds, checks a-e.

Per seed (``models/screener/experiment.py``): the descriptor f and the masking-invariant
condition g trained by DenseVICReg on procedural "CT" volumes (15 % of them hold lesions),
then six densities on frozen features: marginal Gaussian (``gauss_none``), sin-cos
position condition (``gauss_sincos``), masking-invariant condition (``gauss_mask``, the
deployed Screener-Gaussian), the conditional flow without and with g (``flow_none``,
``flow_mask``) and the Screener-Gaussian on a random-init descriptor (``gauss_mask_randf``);
plus ``gauss_mask`` trained on 0 % contaminated volumes (check d). Nothing is counted
(``count_steps=0``): the card's ``simulate`` prices the same steps. Prints a table of
mean +- std, each digest check with its threshold and whether it holds (on the mean, and
k of n seeds), writes the anomaly maps of the first seed and an AUROC bar chart as PNGs.
Voxel AUROC over body voxels only (``models/screener/model.auroc``: the paper's crop to
voxels > -500 HU; air outside the body is never a negative).

    nice -n 5 .venv/bin/python bench/screener.py [--seeds 3] [--preset full]
        [--set ssl_steps=300 ...] [--png-dir bench] [--write]

``--write`` (the full preset, no ``--set``) stores the RESULT in ``bench/out/screener.json``;
the tables of ``bench/RESULTS.md``'s Screener section and of ``models/screener/README.md``
are rendered from it (:func:`render`; ``tests/bench/test_screener_results.py`` pins them).
Last line: ``RESULT {json}``.
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

from bench._results import store  # noqa: E402
from models.screener.experiment import (  # noqa: E402
    VARIANTS,
    per_seed_metrics,
    seed_runs,
    summarize,
)

ROOT = Path(__file__).resolve().parents[1]
RESULT_FILE = ROOT / "bench" / "out" / "screener.json"
LABELS = {"gauss_none": "gauss_none (marginal Gaussian)",
          "gauss_sincos": "gauss_sincos (positional condition)",
          "gauss_mask": "**gauss_mask (Screener-Gaussian: masking-invariant condition)**",
          "flow_none": "flow_none", "flow_mask": "flow_mask",
          "gauss_mask_randf": "gauss_mask_randf (random-init descriptor)"}
THRESHOLDS = {"a_auroc_ge_0.85": "gauss_mask AUROC >= 0.85",
              "a_vs_none_ge_+0.05": "gauss_mask - gauss_none >= 0.05",
              "a_vs_sincos_ge_+0.03": "gauss_mask - gauss_sincos >= 0.03",
              "b_vs_randf_ge_+0.05": "gauss_mask - gauss_mask_randf >= 0.05",
              "c_ratio_le_0.5": "mean |dc| / mean |dy| over lesion voxels <= 0.5",
              "d_contamination_gap_le_0.03": "|AUROC(15 %) - AUROC(0 %)| <= 0.03",
              "e_gap_mask_lt_gap_none": "|flow_mask - gauss_mask| < |flow_none - gauss_none|"}


def panels(run) -> tuple[list[str], np.ndarray]:
    """The anomaly_maps_all_variants trace (4 panels a row) cut back into its panels:
    (names, (vol, panel, H, W, 3))."""
    names = run.facts["anomaly_maps_all_variants_panels"]
    pic = run.traces["anomaly_maps_all_variants"].data
    cols = 4
    rows = -(-len(names) // cols)
    ph, pw = pic.shape[1] // rows - 2, pic.shape[2] // cols - 2
    out = np.stack([[pic[v, (k // cols) * (ph + 2):(k // cols) * (ph + 2) + ph,
                         (k % cols) * (pw + 2):(k % cols) * (pw + 2) + pw]
                     for k in range(len(names))] for v in range(len(pic))])
    return names, out


def write_pngs(run, summary: dict, png_dir: Path) -> list[str]:
    """Anomaly maps (rows: test volumes; columns: the image and each variant's heat, titled
    with that variant's AUROC on this seed) and the AUROC bars (mean +- std over seeds)."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    names, pan = panels(run)
    n_vol, n_pan = pan.shape[:2]
    fig, axes = plt.subplots(n_vol, n_pan, figsize=(1.9 * n_pan, 1.9 * n_vol + 0.5),
                             squeeze=False)
    for v in range(n_vol):
        for k in range(n_pan):
            ax = axes[v, k]
            ax.imshow(pan[v, k], interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if v == 0:
                var = names[k].removesuffix(" heat")
                auc = run.metrics.get(f"auroc_{var}")
                ax.set_title(var if auc is None else f"{var}\nAUROC {auc:.3f}", fontsize=8)
    fig.suptitle("Screener anomaly maps: -log q(y|c) heat over the axial slice through the "
                 "largest lesion; cyan = ground-truth outline (seed 0)", fontsize=9)
    fig.tight_layout()
    maps_png = png_dir / "screener_anomaly_maps.png"
    fig.savefig(maps_png, dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    labels = [*VARIANTS, "gauss_mask @0%"]
    means = [summary[f"auroc_{v}_mean"] for v in VARIANTS] + [
        summary["auroc_clean_gauss_mask_mean"]]
    stds = [summary[f"auroc_{v}_std"] for v in VARIANTS] + [
        summary["auroc_clean_gauss_mask_std"]]
    ax.bar(range(len(labels)), means, yerr=stds, capsize=3,
           color=["#999", "#69c", "#c33", "#bbb", "#e99", "#963", "#f66"])
    ax.axhline(0.85, color="k", lw=0.8, ls="--", label="check a: 0.85")
    ax.set_xticks(range(len(labels)), labels, rotation=25, fontsize=8)
    ax.set_ylim(0.4, 1.0)
    ax.set_ylabel("voxel AUROC")
    ax.set_title(f"Screener variants, mean +- std over {summary['seeds']} seeds", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    bars_png = png_dir / "screener_auroc.png"
    fig.savefig(bars_png, dpi=110)
    plt.close(fig)
    return [str(maps_png), str(bars_png)]


def render(result: dict) -> str:
    """The tables of bench/RESULTS.md's Screener section and the room README, from a RESULT:
    AUROC per variant (mean +- population std over seeds, then each seed) and the checks."""
    s, per = result["summary"], result["per_seed"]

    def row(label, key):
        ms = f"{s[key + '_mean']:.3f} +- {s[key + '_std']:.3f}"
        if label.startswith("**"):
            ms = f"**{ms}**"
        return f"| {label} | {ms} | {' '.join(f'{m[key]:.3f}' for m in per)} |"

    def held(key):
        c = s["checks"][key]
        return (f"{'holds' if c['holds_on_mean'] else 'fails'} | "
                f"{c['seeds_holding']}/{c['seeds']}")

    def gap(key):
        return f"{s[key + '_mean']:+.3f} +- {s[key + '_std']:.3f}"
    e_mask = float(np.mean([abs(m["auroc_flow_mask"] - m["auroc_gauss_mask"]) for m in per]))
    e_none = float(np.mean([abs(m["auroc_flow_none"] - m["auroc_gauss_none"]) for m in per]))
    lines = ["| variant | AUROC (body voxels) mean +- std | per seed |", "|---|---|---|",
             *[row(LABELS[v], f"auroc_{v}") for v in VARIANTS],
             row("gauss_mask trained on 0 % contamination", "auroc_clean_gauss_mask"), "",
             "| digest check | threshold | measured (mean) | on the mean | seeds |",
             "|---|---|---|---|---|",
             f"| a | gauss_mask >= 0.85 | {s['auroc_gauss_mask_mean']:.3f} | "
             f"{held('a_auroc_ge_0.85')} |",
             f"| a | >= gauss_none + 0.05 | {gap('mask_minus_none')} | "
             f"{held('a_vs_none_ge_+0.05')} |",
             f"| a | >= gauss_sincos + 0.03 | {gap('mask_minus_sincos')} | "
             f"{held('a_vs_sincos_ge_+0.03')} |",
             f"| b | >= random-init descriptor + 0.05 | {gap('mask_minus_randf')} | "
             f"{held('b_vs_randf_ge_+0.05')} |",
             f"| c | mean abs(dc) / mean abs(dy) over lesion voxels <= 0.5 | "
             f"{s['invariance_ratio_mean']:.3f} +- {s['invariance_ratio_std']:.3f} | "
             f"{held('c_ratio_le_0.5')} |",
             f"| d | abs(15 % - 0 %) <= 0.03 | {gap('contaminated_minus_clean')} | "
             f"{held('d_contamination_gap_le_0.03')} |",
             f"| e | abs(flow - Gaussian) smaller with g than with none | "
             f"{e_mask:.3f} vs {e_none:.3f} | {held('e_gap_mask_lt_gap_none')} |", "",
             f"Invariance ratio {s['invariance_ratio_mean']:.3f} +- "
             f"{s['invariance_ratio_std']:.3f} (|dc| {s['delta_condition_mean']:.2f}, |dy| "
             f"{s['delta_descriptor_mean']:.2f}). Paired gaps: mask - none "
             f"{gap('mask_minus_none')}, mask - sincos {gap('mask_minus_sincos')}, mask - randf "
             f"{gap('mask_minus_randf')}, flow - gauss (none) {gap('flow_minus_gauss_none')}, "
             f"flow - gauss (mask) {gap('flow_minus_gauss_mask')}, 15 % - 0 % "
             f"{gap('contaminated_minus_clean')}."]
    return "\n".join(lines)


def parse_sets(items) -> dict:
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        out[key] = value
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--preset", default="full", choices=("quick", "full"))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override (runner syntax), repeatable")
    ap.add_argument("--png-dir", default=str(Path(__file__).resolve().parent))
    ap.add_argument("--write", action="store_true", help=f"store the RESULT in {RESULT_FILE}")
    args = ap.parse_args(argv)
    if args.write and (args.preset != "full" or args.set):
        ap.error("only a full-preset run without --set is written (the stored RESULT is the "
                 "bench's protocol)")
    import torch
    torch.set_num_threads(1)
    load0 = os.getloadavg()[0]
    t0 = time.time()
    ov = {"count_steps": 0, **parse_sets(args.set)}
    runs = seed_runs(args.preset, range(args.seed, args.seed + args.seeds), "a100", ov)
    per_seed = per_seed_metrics(runs)
    s = summarize(per_seed)
    seconds = round(time.time() - t0, 1)
    first = runs[f"seed{args.seed}"]
    cfg = first.config
    print(f"== Screener, preset {args.preset}, {args.seeds} seeds, volumes {cfg['shape']}, "
          f"{cfg['train']} train / {cfg['test']} test, {cfg['ssl_steps']} SSL steps, "
          f"{cfg['density_steps']} density steps, {seconds} s ==")
    print(f"{'variant':22s} {'AUROC mean +- std':>20s}   per seed")
    for v in VARIANTS:
        vals = " ".join(f"{m[f'auroc_{v}']:.3f}" for m in per_seed)
        print(f"{v:22s} {s[f'auroc_{v}_mean']:.3f} +- {s[f'auroc_{v}_std']:.3f}"
              f"       {vals}")
    vals = " ".join(f"{m['auroc_clean_gauss_mask']:.3f}" for m in per_seed)
    print(f"{'gauss_mask @ 0 %':22s} {s['auroc_clean_gauss_mask_mean']:.3f} +- "
          f"{s['auroc_clean_gauss_mask_std']:.3f}       {vals}")
    print(f"invariance ratio       {s['invariance_ratio_mean']:.3f} +- "
          f"{s['invariance_ratio_std']:.3f} (|dc| {s['delta_condition_mean']:.3f}, "
          f"|dy| {s['delta_descriptor_mean']:.3f})")
    for k in ("mask_minus_none", "mask_minus_sincos", "mask_minus_randf",
              "flow_minus_gauss_none", "flow_minus_gauss_mask",
              "contaminated_minus_clean"):
        print(f"{k:26s} {s[k + '_mean']:+.3f} +- {s[k + '_std']:.3f}")
    print("checks (digest), judged on the mean; seeds holding:")
    for k, c in s["checks"].items():
        print(f"  {k:30s} {THRESHOLDS[k]:52s} {'HOLDS' if c['holds_on_mean'] else 'FAILS'}"
              f"  ({c['seeds_holding']}/{c['seeds']} seeds)")
    pngs = write_pngs(first, s, Path(args.png_dir))
    print("pictures: " + ", ".join(pngs))
    result = {"summary": s, "per_seed": [{k: v for k, v in m.items() if "auroc" in k or
                                          k.startswith(("invariance", "delta"))}
                                         for m in per_seed],
              "seeds": list(range(args.seed, args.seed + args.seeds)),
              "preset": args.preset, "overrides": ov, "auroc_voxels": "body (organ > 0)",
              "config": {k: cfg[k] for k in ("shape", "train", "test", "ssl_steps",
                                             "density_steps", "width", "d")},
              "machine": f"{platform.machine()} {os.cpu_count()} cores (shared), torch "
                         f"{torch.__version__}, 1 thread",
              "load_average": [round(load0, 2), round(os.getloadavg()[0], 2)],
              "date": time.strftime("%Y-%m-%d"), "seconds": seconds,
              "pngs": [str(Path(p).resolve().relative_to(ROOT)) if Path(p).resolve()
                       .is_relative_to(ROOT) else p for p in pngs]}
    print(render(result))
    if args.write:
        store(RESULT_FILE, json.loads(json.dumps(result, default=str)))
    print("RESULT " + json.dumps(result, default=str))


if __name__ == "__main__":
    main()
