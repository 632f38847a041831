"""Decoupled against joint prototypes on Fashion-MNIST: unique prototypes over training.

For each seed, one card run (``models/decoupled_prototypes``: DINO with K prototypes, the
joint variant learning them by gradient, the decoupled one fitting them by online EM on the
teacher's features). Prints the fraction of unique prototypes at eps = 0.025 / 0.1 / 0.25
(final and minimum over training), the usage entropy of the teacher's test assignments and
the k-NN accuracy, mean +- std over seeds; writes ``bench/decoupled_prototypes.png`` (unique
fraction against training step, both variants, every eps). Runs on CPU (torch) priced on
the A100 profile, one torch thread (two threads on the shared 2-core machine ran ~10x
slower). ``--uncounted`` skips the ledger (the long collapse runs: ~2x faster; the card's
counted runs price the same ops per step). Last line: ``RESULT {json}``.

    python bench/decoupled_prototypes.py --train 2000 --epochs 4 --batch 64 --seeds 3
    python bench/decoupled_prototypes.py --train 6000 --epochs 30 --batch 64 \
        --prototypes 1024 --seeds 3 --uncounted          # the collapse run (README)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.decoupled_prototypes.card import EPSILONS  # noqa: E402
from models.decoupled_prototypes.experiment import experiment  # noqa: E402


def plot(study, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(EPSILONS), figsize=(4 * len(EPSILONS), 3.2), sharey=True)
    for ax, eps in zip(axes, EPSILONS, strict=True):
        for variant, colour in (("joint", "tab:red"), ("decoupled", "tab:blue")):
            for i, run in enumerate(study.runs.values()):
                steps = (run.traces["measure_steps"].data if variant == "joint"
                         else np.asarray(run.facts["measure_steps_decoupled"]))
                ax.plot(steps, 100 * run.traces[f"{variant}_unique_eps{eps}"].data,
                        color=colour, alpha=0.7, label=variant if i == 0 else None)
        ax.set_title(f"eps = {eps}")
        ax.set_xlabel("training step")
        ax.set_ylim(0, 105)
    axes[0].set_ylabel("unique prototypes (%)")
    axes[0].legend()
    fig.suptitle("unique prototypes over training (one line per seed)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--test", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--prototypes", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64, help="64: 4x the steps of the card's 256")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--forgetting", default="responsibility",
                    help="responsibility (the card's default, the paper's) or global")
    ap.add_argument("--measure-every", type=int, default=5, help="steps between counts")
    ap.add_argument("--uncounted", action="store_true", help="no ledger (long runs)")
    ap.add_argument("--plot", default=str(Path(__file__).with_suffix(".png")))
    a = ap.parse_args()
    torch.set_num_threads(1)
    over = {"train": a.train, "test": a.test, "epochs": a.epochs, "prototypes": a.prototypes,
            "batch_size": a.batch, "forgetting": a.forgetting,
            "measure_every": a.measure_every, "count": not a.uncounted}
    study = experiment("quick", 0, {"gpu": "a100"}, overrides=over, seeds=a.seeds)
    s = study.summary
    for variant in ("joint", "decoupled"):
        cells = [f"unique@{e} final {100 * s[f'{variant}_unique_eps{e}']['mean']:.1f}% "
                 f"min {100 * s[f'{variant}_min_unique_eps{e}']['mean']:.1f}%"
                 for e in EPSILONS]
        print(f"{variant:>9}: " + "; ".join(cells))
        print(f"{'':>9}  usage entropy {s[f'{variant}_usage_entropy']['mean']:.3f} +- "
              f"{s[f'{variant}_usage_entropy']['std']:.3f} nats; k-NN "
              f"{100 * s[f'{variant}_knn_accuracy']['mean']:.2f} +- "
              f"{100 * s[f'{variant}_knn_accuracy']['std']:.2f}%")
    if a.plot:
        plot(study, Path(a.plot))
        print(f"wrote {a.plot}")
    result = {"settings": {**over, "seeds": a.seeds}, **{k: v for k, v in s.items()}}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
