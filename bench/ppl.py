"""PPL: the learned pose prior against a frozen random template, and iterative inference
against one pass under occlusion, over seeds (``models/ppl/experiment.py``).

Per seed the card trains PPL (template distilled from the VQ pose memory) and the baseline
(fixed random template, no memory; the paper's Tab. 2 arm) on the same figures and steps,
then scores the linear-regression keypoint error (x100 of the image size), the template's
Procrustes distance to the mean GT pose (end vs start), link recall of the top K - 1 links,
the memory's per-bank perplexity and gap, and, on CenterMasking-occluded test figures, the
one-pass error against the error after 4 iterations through the memory. Prints a table and
the digest's checks a-e with their thresholds and pass/fail, writes PNG pictures next to
``--out`` (poses over test images, detections with the learned links, the template with its
top links, occluded poses one-pass vs iterated, error per iteration):

    nice -n 5 .venv/bin/python bench/ppl.py [--seeds 3] [--steps 600] [--train 1000]
        [--size 32] [--reference pair] [--out bench/out/ppl]

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.ppl.experiment import run_pairs, summarize  # noqa: E402


def write_pictures(study, out: Path) -> list[str]:
    """One PNG per pictures trace of the first seed's learned run, plus error curves."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out.mkdir(parents=True, exist_ok=True)
    first = sorted(k for k in study.runs if k.startswith("learned/"))[0]
    run = study.runs[first]
    written = []
    for name, tr in run.traces.items():
        if tr.kind != "pictures":
            continue
        pics = np.asarray(tr.data)
        fig, axes = plt.subplots(1, len(pics), figsize=(1.6 * len(pics), 1.9), squeeze=False)
        for ax, p in zip(axes[0], pics, strict=True):
            ax.imshow(p)
            ax.axis("off")
        fig.suptitle(f"{name} ({first})", fontsize=8)
        fig.tight_layout()
        path = out / f"ppl_{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(str(path))
    fig, ax = plt.subplots(1, 2, figsize=(8, 3))
    for key, r in sorted(study.runs.items()):
        if key.startswith("learned/"):
            ax[0].plot(r.traces["occluded_error_per_iteration"].data, "o-", label=f"{key} memory")
            ax[0].plot(r.traces["occluded_raw_error_per_iteration"].data, "x--",
                       label=f"{key} regressor")
        ax[1].plot(r.traces["train_loss"].data, lw=0.6, label=key)
    ax[0].set_xlabel("iteration")
    ax[0].set_ylabel("occluded error (% of size)")
    ax[0].legend(fontsize=5)
    ax[1].set_xlabel("step")
    ax[1].set_ylabel("training loss")
    ax[1].set_yscale("log")
    ax[1].legend(fontsize=5)
    fig.tight_layout()
    path = out / "ppl_curves.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(str(path))
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--train", type=int, default=1000)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--reference", default="pair")
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--out", default="bench/out/ppl")
    args = ap.parse_args(argv)
    t0 = time.time()
    ov = {"steps": args.steps, "train": args.train, "size": args.size, "count": False,
          "reference": args.reference}
    study = run_pairs(args.preset, args.seed, args.seeds, {"gpu": "a100"}, ov)
    s = summarize(study.runs)
    s["seconds"] = round(time.time() - t0, 1)
    s["config"] = {**ov, "preset": args.preset, "seeds": args.seeds}
    print(f"== PPL, {args.seeds} seeds, {args.steps} steps, {args.train} figures of "
          f"{args.size} px, reference {args.reference} ({s['seconds']} s) ==")
    keys = ("keypoint_error", "mean_pose_error", "template_procrustes",
            "template_procrustes_init", "link_recall", "min_bank_perplexity", "memory_gap",
            "occluded_one_pass_error", "occluded_iterative_error",
            "occluded_iterative_raw_error", "clean_error_same_images")
    print(f"  {'metric':30s} {'learned':>18s} {'frozen_random':>18s}")
    for k in keys:
        row = [s["table"].get(p, {}).get(k) for p in ("learned", "frozen_random")]
        cell = ["-" if v is None else f"{v['mean']:.3f} +- {v['std']:.3f}" for v in row]
        print(f"  {k:30s} {cell[0]:>18s} {cell[1]:>18s}")
    for name, c in s["checks"].items():
        print(f"  check {name:28s} {c['measured']:>10.3f}  needs {c['needs']:14s} "
              f"{'PASS' if c['holds'] else 'FAIL'} ({c['seeds_holding']} seeds)")
    s["pictures"] = write_pictures(study, Path(args.out))
    print("  pictures: " + ", ".join(s["pictures"]))
    s.pop("rows", None)
    print("RESULT " + json.dumps(s))


if __name__ == "__main__":
    main()
