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
        [--out bench] [--set key=value ...]

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.dave.card import BENCH  # noqa: E402
from models.dave.experiment import experiment  # noqa: E402

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
    args = ap.parse_args(argv)
    over = dict(BENCH) if args.scale == "bench" else {"checks": True}
    for kv in args.set:
        k, v = kv.split("=", 1)
        over[k] = json.loads(v)
    t0 = time.time()
    study = experiment("quick", args.seed, {"gpu": "a100"}, overrides=over, seeds=args.seeds)
    wall = time.time() - t0
    s = study.summary
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
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    first = next(iter(study.runs.values()))
    pngs = write_pictures(first, out, f"seed {args.seed}")
    print("pictures:", ", ".join(pngs))
    result = {"seeds": args.seeds, "scale": args.scale, "overrides": over,
              "wall_s": round(wall, 1),
              "metrics": {k: {"mean": v["mean"], "std": v["std"]} for k, v in ms.items()},
              "checks": {k: {kk: vv for kk, vv in v.items() if kk != "values"}
                         for k, v in s["checks"].items()},
              "claim_met": s["claim_met"], "pictures": pngs}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
