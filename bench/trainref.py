"""TrainRef on Fashion-MNIST with synthetic label noise, against CE, LS, TS and hard relabel.

The paper's Table (CIFAR-100 sym 20/50/80 %, asym 40 %) at small scale: the first
``--train`` training images (D_ref drawn from them with true labels, 500 clean validation
images for temperature scaling, the rest corrupted), 2000 test images, the quick preset's
model and epochs (``models/trainref/card.py``). Per seed one masked autoencoder is
pre-trained (label-free, so shared by every noise setting of that seed); then per setting
and reference count: CE and label smoothing (``ce_epochs``, no early stopping), CE + TS,
TrainRef (soft) + TS and the hard-relabel variant on the same D*_ref. Reported: test
accuracy, ECE (15 bins), D*_ref size and precision, mean +- std over seeds. Every op runs
on a TorchDevice (a100 profile) and is counted; the ledger's totals are printed.

    OMP_NUM_THREADS=2 .venv/bin/python bench/trainref.py [--seeds 3] [--train 6000]
        [--pool mmr|farthest|nearest] [--oracle] [--plot PATH]

Writes ``bench/trainref.png`` (``--plot``): test accuracy and ECE per setting for every
method, bars at the mean over seeds with the standard deviation as error bars, and the
precision of D*_ref. Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


import sim  # noqa: E402
from models.trainref import data as D  # noqa: E402
from models.trainref import model as M  # noqa: E402
from models.trainref import run as R  # noqa: E402
from models.trainref.card import TrainRefConfig  # noqa: E402

SETTINGS = (("symmetric", 0.2), ("symmetric", 0.5), ("symmetric", 0.8), ("asymmetric", 0.4))
KEYS = ("ce_accuracy", "ce_ece", "label_smoothing_accuracy", "label_smoothing_ece",
        "ce_ts_ece", "trainref_accuracy", "trainref_ece", "trainref_ts_ece", "hard_accuracy",
        "hard_ece", "dstar_size", "dstar_precision", "relabel_accuracy_round2")


METHODS = (("ce", "CE"), ("label_smoothing", "label smoothing"), ("trainref", "TrainRef"),
           ("hard", "hard relabel"))


def plot(summary: dict, path: str) -> None:
    """Accuracy, ECE and D*_ref precision per setting: the picture of the tables printed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    keys = list(summary)
    x = np.arange(len(keys))
    width = 0.8 / len(METHODS)
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    for panel, metric in zip(axes[:2], ("accuracy", "ece"), strict=True):
        for i, (name, label) in enumerate(METHODS):
            k = f"{name}_{metric}"
            mean = [summary[key][k][0] for key in keys]
            sd = [summary[key][k][1] for key in keys]
            panel.bar(x + (i - (len(METHODS) - 1) / 2) * width, mean, width, yerr=sd,
                      label=label, capsize=2)
        panel.set_title(f"test {metric} (mean +- std over seeds)")
    prec = [summary[key]["dstar_precision"][0] for key in keys]
    axes[2].bar(x, prec, 0.6, yerr=[summary[key]["dstar_precision"][1] for key in keys],
                capsize=2, color="tab:green")
    axes[2].axhline(0.9, color="k", ls="--", lw=1, label="target 0.90 (80% noise, 1 ref)")
    axes[2].set_title("precision of the enlarged reference set D*_ref")
    for ax in axes:
        ax.set_xticks(x, keys, rotation=30, ha="right")
    axes[0].legend(fontsize=8)
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--train", type=int, default=6000)
    ap.add_argument("--pool", default="mmr", choices=("mmr", "farthest", "nearest"))
    ap.add_argument("--refs", default="1,5")
    ap.add_argument("--oracle", action="store_true",
                    help="diagnostic: D*_ref with its true labels (phase III without selection "
                         "errors); not the method")
    ap.add_argument("--settings", default="all", help="all, or e.g. symmetric:0.8")
    ap.add_argument("--plot", default=str(Path(__file__).with_suffix(".png")),
                    help="where the figure goes (default bench/trainref.png)")
    args = ap.parse_args()
    settings = SETTINGS if args.settings == "all" else tuple(
        (s.split(":")[0], float(s.split(":")[1])) for s in args.settings.split(","))
    refs = tuple(int(r) for r in args.refs.split(","))
    base = TrainRefConfig(train=args.train, pool=args.pool)
    data = D.load("fashion-mnist", base)
    dev = sim.device("a100")
    t0 = time.time()
    rows: dict[str, list[dict]] = {}
    for seed in range(args.seeds):
        cfg = dataclasses.replace(base, seed=seed)
        enc = M.pretrain(dev.tensor(data.x_train), cfg, dev)
        for noise, rate in settings:
            for r in refs:
                c = dataclasses.replace(cfg, noise=noise, noise_rate=rate, refs_per_class=r)
                m = R.metrics_of(R.run_all(data, c, dev, enc=enc, oracle=args.oracle))
                key = f"{noise[:3]}{int(rate * 100)}_ref{r}"
                rows.setdefault(key, []).append(m)
                print(f"seed {seed} {key}: CE {m['ce_accuracy']:.4f} LS "
                      f"{m['label_smoothing_accuracy']:.4f} TrainRef {m['trainref_accuracy']:.4f}"
                      f" hard {m['hard_accuracy']:.4f} | ECE CE+TS {m['ce_ts_ece']:.4f} TrainRef "
                      f"{m['trainref_ece']:.4f} +TS {m['trainref_ts_ece']:.4f} hard "
                      f"{m['hard_ece']:.4f} | D* {m['dstar_size']:.0f} @ "
                      f"{m['dstar_precision']:.4f} ({time.time() - t0:.0f} s)", flush=True)
    summary = {}
    print(f"\n== mean +- std over {args.seeds} seeds, {args.train} training images, pool "
          f"{args.pool}{' ORACLE D*_ref labels' if args.oracle else ''} ==")
    for key, ms in rows.items():
        summary[key] = {}
        for k in KEYS:
            vals = [m[k] for m in ms]
            sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
            summary[key][k] = [round(statistics.fmean(vals), 4), round(sd, 4)]
        s = summary[key]
        print(f"{key:12s} acc CE {s['ce_accuracy'][0]:.3f}+-{s['ce_accuracy'][1]:.3f} LS "
              f"{s['label_smoothing_accuracy'][0]:.3f} TrainRef {s['trainref_accuracy'][0]:.3f}"
              f"+-{s['trainref_accuracy'][1]:.3f} hard {s['hard_accuracy'][0]:.3f} | ECE CE "
              f"{s['ce_ece'][0]:.3f} CE+TS {s['ce_ts_ece'][0]:.3f} TrainRef "
              f"{s['trainref_ece'][0]:.3f} +TS {s['trainref_ts_ece'][0]:.3f} hard "
              f"{s['hard_ece'][0]:.3f} | vote {s['relabel_accuracy_round2'][0]:.3f} | D* "
              f"{s['dstar_size'][0]:.0f} prec "
              f"{s['dstar_precision'][0]:.3f}+-{s['dstar_precision'][1]:.3f}")
    plot(summary, args.plot)
    print(f"figure: {args.plot}")
    ops = dev.ledger.total_ops()
    print("ledger totals:", {k: int(v) for k, v in sorted(ops.items())})
    print("RESULT " + json.dumps({"bench": "trainref", "train": args.train, "seeds": args.seeds,
                                  "pool": args.pool, "oracle": args.oracle,
                                  "wall_s": round(time.time() - t0, 1),
                                  "settings": summary,
                                  "ops": {k: int(v) for k, v in ops.items()}}))


if __name__ == "__main__":
    main()
