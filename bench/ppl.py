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
        [--size 32] [--reference pair] [--out bench/out/ppl] [--write NAME] [--no-pictures]

``--write NAME`` (issue 34): the paired power study. Seeds run one at a time and after each
one ``bench/out/NAME.json`` is rewritten with the per-seed keypoint errors of both arms, the
paired test of learned - frozen (t and Wilcoxon p), the power these seeds have for the
paper's relative effect (Tab. 2: 1 - 2.56 / 2.70 = 5.2 %, times the frozen arm's measured
mean error) and the seeds a paired t-test would need for power 0.8
(``models/shared/power.py``); ``"complete": false`` until the last seed is in.
``--rescore NAME`` recomputes a stored file's analysis from its per-seed errors. The tables of
``bench/RESULTS.md`` and ``models/ppl/README.md`` and the ``docs/claims.md`` row are
rendered from it (:func:`render`, :func:`claim_text`; ``tests/bench/test_ppl_power.py`` pins
them).

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
from models.ppl.experiment import run_pairs, summarize  # noqa: E402
from models.shared import power  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAPER = {"learned": 2.56, "frozen": 2.70, "source": "Tab. 2 (H36M 256 px, norm. L2)"}
PAPER_REL = 1 - PAPER["learned"] / PAPER["frozen"]     # 0.0519: the learned prior's gain


def power_study(runs: dict) -> dict:
    """The paired learned - frozen keypoint error over the seeds both arms ran
    (:func:`power_of`)."""
    by = {p: {int(k.split("seed")[1]): r.metrics["keypoint_error"] for k, r in runs.items()
              if k.startswith(p + "/")} for p in ("learned", "frozen_random")}
    seeds = sorted(set(by["learned"]) & set(by["frozen_random"]))
    return power_of(seeds, [by["learned"][s] for s in seeds],
                    [by["frozen_random"][s] for s in seeds])


def power_of(seeds: list[int], lrn: list[float], frz: list[float]) -> dict:
    """Per-seed errors of both arms, tested against 0 and powered for the paper's relative
    effect at this scale's frozen error (``power.analyse``)."""
    effect = -PAPER_REL * float(np.mean(frz))   # learned lower by 5.2 % of the frozen error
    return {"seeds": list(seeds), "learned": list(lrn), "frozen_random": list(frz),
            "paper": {**PAPER, "relative_gain": PAPER_REL},
            "paired": power.analyse(lrn, frz, effect)}


def render(result: dict) -> str:
    """The power study's table for bench/RESULTS.md and the room README."""
    ps, c = result["paired"], result["config"]
    lrn, frz = np.asarray(result["learned"]), np.asarray(result["frozen_random"])
    return "\n".join([
        "| seeds | steps | learned | frozen random | learned - frozen (paired) | 95 % CI | "
        "t (p) | Wilcoxon p | paper's effect here | power | seeds for 0.8 (sd at 80 % "
        "upper limit) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {ps['n']} ({result['seeds'][0]}-{result['seeds'][-1]}) | {c['steps']} | "
        f"{lrn.mean():.2f} +- {lrn.std(ddof=1):.2f} | {frz.mean():.2f} +- "
        f"{frz.std(ddof=1):.2f} | {ps['mean']:+.3f} +- {ps['sd']:.3f} | "
        f"[{ps['ci95'][0]:+.3f}, {ps['ci95'][1]:+.3f}] | {ps['t']:+.2f} "
        f"({ps['p_t']:.3f}) | {ps['p_wilcoxon']:.3f} | {ps['effect']:+.3f} "
        f"({100 * result['paper']['relative_gain']:.1f} %, d = {ps['d']:.2f}) | "
        f"{ps['power']:.2f} | {ps['seeds_needed']} ({ps['seeds_needed_upper80']}) |"])


def claim_text(result: dict) -> str:
    """The verdict as docs/claims.md states it (tests/bench/test_ppl_power.py pins the two)."""
    ps, c = result["paired"], result["config"]
    lrn, frz = np.mean(result["learned"]), np.mean(result["frozen_random"])
    return (f"{c['steps']} steps, {ps['n']} seeds: keypoint error {lrn:.2f} learned vs "
            f"{frz:.2f} frozen, paired difference {ps['mean']:+.3f} +- {ps['sd']:.3f} "
            f"(95 % CI [{ps['ci95'][0]:+.2f}, {ps['ci95'][1]:+.2f}]; t p {ps['p_t']:.3f}, "
            f"Wilcoxon p {ps['p_wilcoxon']:.3f}); power {ps['power']:.2f} for the paper's "
            f"5.2 % relative effect ({ps['effect']:+.2f}, {_where(ps)} the 95 % CI); "
            f"{ps['seeds_needed']} seeds would give 0.8 ({ps['seeds_needed_upper80']} at the "
            "sd's 80 % upper limit)")


def _where(ps: dict) -> str:
    """Whether the paper's effect lies in the measured difference's 95 % interval."""
    return "inside" if ps["ci95"][0] <= ps["effect"] <= ps["ci95"][1] else "outside"


def rescore(name: str) -> dict:
    """Recompute a stored power study's analysis from its per-seed errors (no training)."""
    path = ROOT / "bench" / "out" / f"{name}.json"
    stored = json.loads(path.read_text())
    stored.update(power_of(stored["seeds"], stored["learned"], stored["frozen_random"]))
    store(path, stored)
    return stored


def write_pictures(runs: dict, out: Path) -> list[str]:
    """One PNG per pictures trace of the first seed's learned run, plus error curves."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out.mkdir(parents=True, exist_ok=True)
    first = sorted(k for k in runs if k.startswith("learned/"))[0]
    run = runs[first]
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
    for key, r in sorted(runs.items()):
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
    ap.add_argument("--write", metavar="NAME", help="the paired power study, stored in "
                    "bench/out/NAME.json after every seed")
    ap.add_argument("--no-pictures", action="store_true")
    ap.add_argument("--rescore", metavar="NAME", help="recompute bench/out/NAME.json's "
                    "paired analysis from its stored per-seed errors, and stop")
    args = ap.parse_args(argv)
    if args.rescore:
        stored = rescore(args.rescore)
        print(render(stored))
        print("RESULT " + json.dumps(stored))
        return
    import torch
    torch.set_num_threads(1)     # 2 shared cores: a second thread only spins
    t0 = time.time()
    ov = {"steps": args.steps, "train": args.train, "size": args.size, "count": False,
          "reference": args.reference}
    config = {**ov, "preset": args.preset, "seeds": args.seeds}
    runs = {}
    for seed in range(args.seed, args.seed + args.seeds):   # one seed at a time: a partial
        runs.update(run_pairs(args.preset, seed, 1, {"gpu": "a100"}, ov).runs)  # study stays
        if args.write and seed > args.seed:
            study = {**power_study(runs), "config": config,
                     "complete": seed == args.seed + args.seeds - 1,
                     "machine": f"{platform.machine()} {os.cpu_count()} cores (shared)",
                     "wall_s": round(time.time() - t0, 1),
                     "command": "python bench/ppl.py " + " ".join(argv or sys.argv[1:])}
            path = ROOT / "bench" / "out" / f"{args.write}.json"
            store(path, study)
            print(f"  seed {seed}: learned {study['learned'][-1]:.3f} frozen "
                  f"{study['frozen_random'][-1]:.3f}; {path.name} written", flush=True)
    s = summarize(runs)
    s["seconds"] = round(time.time() - t0, 1)
    s["config"] = config
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
    if not args.no_pictures:
        s["pictures"] = write_pictures(runs, Path(args.out))
        print("  pictures: " + ", ".join(s["pictures"]))
    if args.write:
        s["power"] = power_study(runs)
        print(render({**s["power"], "config": config}))
    s.pop("rows", None)
    print("RESULT " + json.dumps(s))


if __name__ == "__main__":
    main()
