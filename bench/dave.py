"""DAVE at small scale: the digest's acceptance checks a-e over seeds, and parsed pages.

Per seed the card runs the whole pipeline (``models/dave/run.py``, scale ``BENCH``: MAE-pixel
200 steps, 3 Stage-2 decoders x 250 steps, learned merge 50 steps, generalist 300 steps,
a fresh decoder D 800 steps on each frozen encoder, 1024 labelled / 128 test pages), with
the probes of check b and the fine-tuned generalist of check e. It prints box F1 (IoU 0.5)
and figure-class accuracy per encoder (mean +- std over seeds), every check with its
threshold and pass/fail (mean over seeds; seeds passing beside it), and writes the parsed
test pages of the first seed (ground truth | decoder D on the fused and on the merged
encoder) as PNGs.

    nice -n 5 .venv/bin/python bench/dave.py [--seeds 3] [--scale bench|quick]
        [--out bench] [--set key=value ...] [--write NAME] [--result NAME] [--no-pictures]

``--result NAME`` also stores the last line's RESULT in ``bench/out/NAME.json``.

``--write NAME`` (issue 34): the paired power study. Seeds run one at a time and after each
one ``bench/out/NAME.json`` is rewritten with the per-seed box F1 of the learned merge, the
plain average and the mean single copy, the paired tests of merge - average and merge -
single (t and Wilcoxon p), the power these seeds have for the paper's relative effect
(Doc averages 63.4 / 62.8 / 55.6: merge over average +0.96 %, over a single encoder +14.0 %,
times this scale's measured average / single box F1) and the seeds a paired t-test would
need for power 0.8 (``models/shared/power.py``); ``"complete": false`` until the last seed
is in; ``--rescore NAME`` recomputes a stored file's analysis from its per-seed box F1.
``--set checks=false`` skips the probes and the fine-tuned generalist (checks b, e),
which neither difference reads; every stage draws from its own named seed stream, so the
merge, average and copies should be the same runs either way (not checked by a run). The
tables of ``bench/RESULTS.md`` and ``models/dave/README.md`` and the ``docs/claims.md`` row
are rendered from the file (:func:`render`, :func:`claim_text`;
``tests/bench/test_dave_power.py`` pins them).

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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._results import store  # noqa: E402
from models.dave.card import BENCH  # noqa: E402
from models.dave.experiment import experiment, judge, mean_std, with_derived  # noqa: E402
from models.shared import power  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAPER = {"merge": 63.4, "average": 62.8, "single": 55.6,
         "source": "ablation, Doc average (merging method; single encoder = Granite only)"}
# (difference, the arm it is relative to, the paper's relative gain of the merge over it)
CONTRASTS = (("merge_minus_average", "average", PAPER["merge"] / PAPER["average"] - 1),
             ("merge_minus_single", "mean_single", PAPER["merge"] / PAPER["single"] - 1))


def power_study(per_seed: list[dict], seeds: list[int]) -> dict:
    """The paired merge - average and merge - single box F1 over the seeds, tested against 0
    and powered for the paper's relative effect at this scale's measured box F1."""
    arms = {a: [m[f"{a}_box_f1"] for m in per_seed] for a in ("merged", "average",
                                                              "mean_single")}
    out = {"seeds": list(seeds), "box_f1": arms, "paper": PAPER, "contrasts": {}}
    for name, base, rel in CONTRASTS:
        effect = rel * float(np.mean(arms[base]))
        out["contrasts"][name] = {"relative_gain": rel,
                                  **power.analyse(arms["merged"], arms[base], effect)}
    return out


def _where(c: dict) -> str:
    """Whether the paper's effect lies in the measured difference's 95 % interval."""
    return "inside" if c["ci95"][0] <= c["effect"] <= c["ci95"][1] else "outside"


def _num(v) -> str:
    """None (sd 0: power undefined, ``power.analyse``) as '-'."""
    return "-" if v is None else f"{v:.2f}"


def render(result: dict) -> str:
    """The power study's table for bench/RESULTS.md and the room README."""
    f1 = {a: np.asarray(v) for a, v in result["box_f1"].items()}
    lines = ["| difference (box F1) | seeds | merge | other arm | paired mean +- sd | 95 % CI | "
             "t (p) | Wilcoxon p | merge ahead | paper's effect here | power | seeds for 0.8 "
             "(sd at 80 % upper limit) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, base, _ in CONTRASTS:
        c = result["contrasts"][name]
        ahead = sum(d > 0 for d in c["diffs"])
        lines.append(
            f"| {name.replace('_', ' ')} | {c['n']} | {f1['merged'].mean():.3f} +- "
            f"{f1['merged'].std(ddof=1):.3f} | {f1[base].mean():.3f} +- "
            f"{f1[base].std(ddof=1):.3f} | {c['mean']:+.4f} +- {c['sd']:.4f} | "
            f"[{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}] | "
            f"{c['t']:+.2f} ({c['p_t']:.3f}) | {c['p_wilcoxon']:.3f} | {ahead}/{c['n']} | "
            f"{c['effect']:+.4f} ({100 * c['relative_gain']:.2f} %, d = {_num(c['d'])}) | "
            f"{_num(c['power'])} | {c['seeds_needed'] or '-'} "
            f"({c['seeds_needed_upper80'] or '-'}) |")
    return "\n".join(lines)


def claim_text(result: dict) -> str:
    """The verdict as docs/claims.md states it (tests/bench/test_dave_power.py pins the two)."""
    parts = []
    for name, _, _ in CONTRASTS:
        c = result["contrasts"][name]
        ahead = sum(d > 0 for d in c["diffs"])
        parts.append(f"{name.replace('_', ' ')} {c['mean']:+.4f} +- {c['sd']:.4f}, merge "
                     f"ahead on {ahead}/{c['n']} seeds "
                     f"(95 % CI [{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}]; t p "
                     f"{c['p_t']:.3f}, Wilcoxon p {c['p_wilcoxon']:.3f}; power "
                     f"{_num(c['power'])} for the paper's {100 * c['relative_gain']:.1f} % "
                     f"({c['effect']:+.4f}, {_where(c)} the 95 % CI), "
                     f"{c['seeds_needed'] or '-'} seeds for 0.8, "
                     f"{c['seeds_needed_upper80'] or '-'} at the sd's 80 % upper limit)")
    return f"{result['contrasts']['merge_minus_average']['n']} seeds: " + "; ".join(parts)


def pilot_text(summary: dict) -> str:
    """The same power analysis from an older study's stored summary (``bench/out/dave.json``:
    5 seeds, checks on, measured before named seed streams), whose metrics hold each
    difference's mean and population std (ddof 0) but not the per-seed values."""
    n = summary["seeds"]
    parts = []
    for name, base, rel in CONTRASTS:
        m = summary["metrics"][f"{name}_box_f1"]
        sd = m["std"] * (n / (n - 1)) ** 0.5              # ddof 0 -> the sample sd
        effect = rel * summary["metrics"][f"{base}_box_f1"]["mean"]
        parts.append(f"{name.replace('_', ' ')} {m['mean']:+.4f} +- {sd:.4f}: power "
                     f"{power.power(n, effect, sd):.3f} for {effect:+.4f}, "
                     f"{power.seeds_needed(effect, sd)} seeds for 0.8")
    return f"the {n}-seed study of `bench/out/dave.json`: " + "; ".join(parts)


def rescore(name: str) -> dict:
    """Recompute a stored power study's analysis from its per-seed box F1 (no training)."""
    path = ROOT / "bench" / "out" / f"{name}.json"
    stored = json.loads(path.read_text())
    f1 = stored["box_f1"]
    per_seed = [{f"{a}_box_f1": f1[a][i] for a in f1} for i in range(len(stored["seeds"]))]
    stored.update(power_study(per_seed, stored["seeds"]))
    store(path, stored)
    return stored


ENCODERS = ("fused", "merged", "average", "copy_gru", "copy_tf2", "copy_tf1_class",
            "generalist", "finetuned_generalist")


def write_pictures(run, out: Path, tag: str) -> list[str]:
    """The run's pictures traces as PNG files (matplotlib, Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    paths = []
    for name, tr in run.traces.items():
        if tr.kind != "pictures":
            continue
        pics = tr.data
        cols = 2
        rows = -(-len(pics) // cols)
        h, w = pics.shape[1:3]
        fig, axes = plt.subplots(rows, cols, figsize=(cols * w / 80, rows * h / 80),
                                 squeeze=False)
        for ax in axes.flat:
            ax.axis("off")
        for ax, p in zip(axes.flat, pics, strict=False):
            ax.imshow(p, interpolation="nearest")
        fig.suptitle(f"DAVE {tag}: {name.removeprefix('pictures_')} encoder + fresh decoder D "
                     "(left truth, right parsed; N nav T title x text B button F figure)",
                     fontsize=8)
        fig.tight_layout()
        path = out / f"dave_{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(str(path))
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", choices=("bench", "quick"), default="bench")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--write", metavar="NAME", help="the paired power study, stored in "
                    "bench/out/NAME.json after every seed")
    ap.add_argument("--result", metavar="NAME", help="also store the RESULT in "
                    "bench/out/NAME.json")
    ap.add_argument("--no-pictures", action="store_true")
    ap.add_argument("--rescore", metavar="NAME", help="recompute bench/out/NAME.json's "
                    "paired analysis from its stored per-seed box F1, and stop")
    args = ap.parse_args(argv)
    if args.rescore:
        stored = rescore(args.rescore)
        print(render(stored))
        print("RESULT " + json.dumps(stored))
        return
    over = dict(BENCH) if args.scale == "bench" else {"checks": True}
    for kv in args.set:
        k, v = kv.split("=", 1)
        over[k] = json.loads(v)
    t0 = time.time()
    seeds, runs, per_seed, first = [], {}, [], None
    for seed in range(args.seed, args.seed + args.seeds):   # one at a time: a partial study
        study = experiment("quick", seed, {"gpu": "a100"}, overrides=over, seeds=1)  # stays
        first = first or study
        seeds.append(seed)
        runs.update(study.runs)
        per_seed.append(with_derived(next(iter(study.runs.values())).metrics))
        if args.write and len(seeds) > 1:
            result = {**power_study(per_seed, seeds), "scale": args.scale, "overrides": over,
                      "complete": len(seeds) == args.seeds,
                      "machine": f"{platform.machine()} {os.cpu_count()} cores (shared)",
                      "wall_s": round(time.time() - t0, 1),
                      "command": "python bench/dave.py " + " ".join(argv or sys.argv[1:])}
            path = ROOT / "bench" / "out" / f"{args.write}.json"
            store(path, result)
            print(f"  seed {seed}: {path.name} written", flush=True)
    wall = time.time() - t0
    keys = [k for k in per_seed[0] if all(k in m for m in per_seed)]
    s = {"metrics": {k: mean_std([m[k] for m in per_seed]) for k in keys},
         "checks": {**judge(per_seed),
                    "a_low_variance": first.summary["checks"]["a_low_variance"]},
         "claim_met": all(c["holds"] for n, c in judge(per_seed).items()
                          if n in ("c_merge_vs_average", "c_merge_vs_single", "d_semantic",
                                   "d_structure_vs_specialist"))}
    ms = s["metrics"]
    print(f"DAVE, {args.seeds} seeds, scale {args.scale} {over}, {wall:.0f} s")
    print(f"{'encoder (decoder D)':24s} {'box F1':>15s} {'figure acc':>15s}")
    for e in ENCODERS:
        if f"{e}_box_f1" in ms:
            b, f = ms[f"{e}_box_f1"], ms[f"{e}_figure_accuracy"]
            print(f"{e:24s} {b['mean']:7.3f} +- {b['std']:.3f} "
                  f"{f['mean']:7.3f} +- {f['std']:.3f}")
    for k in ("probe_mae_pixel", "probe_random_init", "probe_norm_pix", "distill_mse_merged",
              "distill_mse_average", "norm_pix_loss_spikes", "pixel_loss_spikes"):
        if k in ms:
            print(f"{k:24s} {ms[k]['mean']:7.3f} +- {ms[k]['std']:.3f}")
    print("checks (mean over seeds against the digest's threshold):")
    for name, c in s["checks"].items():
        if name == "a_low_variance":
            print(f"  {name:28s} pages {c['pages_flat_fraction']:.3f} vs Fashion "
                  f"{c['fashion_flat_fraction']:.3f}  ({c['asks']})  "
                  f"{'PASS' if c['holds'] else 'FAIL'}")
            continue
        print(f"  {name:28s} {c['mean']:+.3f} +- {c['std']:.3f} {c['threshold']:>8s} "
              f"({c['seeds_passing']}/{c['n']} seeds)  "
              f"{('PASS' + ('' if c['clear'] else ' (within noise)')) if c['holds'] else 'FAIL'}"
              f"  {c['asks']}")
    pngs = []
    if not args.no_pictures:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        pngs = write_pictures(next(iter(runs.values())), out, f"seed {args.seed}")
        print("pictures:", ", ".join(pngs))
    if args.write:
        print(render(power_study(per_seed, seeds)))
    result = {"seeds": args.seeds, "scale": args.scale, "overrides": over,
              "wall_s": round(wall, 1),
              "metrics": {k: {"mean": v["mean"], "std": v["std"]} for k, v in ms.items()},
              "checks": {k: {kk: vv for kk, vv in v.items() if kk != "values"}
                         for k, v in s["checks"].items()},
              "claim_met": s["claim_met"], "pictures": pngs}
    if args.result:
        result["command"] = "python bench/dave.py " + " ".join(argv or sys.argv[1:])
        store(ROOT / "bench" / "out" / f"{args.result}.json", result)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
