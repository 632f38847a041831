"""TrainRef's enlarged reference set as a function of the phase-I embedding (issue 33, item 6).

The claim (paper, Sec. 5 ablation): with one reference per class at 80 % symmetric noise,
D*_ref is ~98 % clean (2.30 % noise) and TrainRef beats cross-entropy by a wide margin. Here
(Fashion-MNIST, the first ``--train`` training images, sym 80 %, 1 reference per class, the
quick preset's phases II-III and baselines, ``models/trainref/run.run_all``), per seed, with
three encoders of the same width (``models/trainref/encoders.py``):

* ``mae``: the room's masked autoencoder (label-free, MLP, ``mae_epochs``);
* ``contrastive``: a label-free SimCLR-style CNN on the same images (``--contrastive-epochs``);
* ``supervised``: the same CNN trained with labels on ``--supervised`` clean images that are
  disjoint from the run's (training images ``train .. train + supervised - 1``; the test
  set is a separate file): an upper bound, not a label-free method.

Per encoder: the 1-NN accuracy of the pool from the references (true labels, centred
cosine), D*_ref's size and precision, the round-2 vote accuracy, TrainRef's and CE's test
accuracy (the same encoder under both: a paired comparison) and their ECE. Raw pixels' 1-NN
accuracy is the floor. Mean +- std over seeds and per seed; writes
``bench/out/trainref_embedding.json``; last line ``RESULT {json}``.

    nice -n 10 python bench/trainref_embedding.py            # 3 seeds, 4000 images
    python bench/trainref_embedding.py --seeds 1 --train 1000 --contrastive-epochs 1 \
        --supervised 500 --supervised-epochs 1               # a smoke run
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

import torch  # noqa: E402

import sim  # noqa: E402
from models.shared import datasets  # noqa: E402
from models.trainref import encoders as E  # noqa: E402
from models.trainref import model as M  # noqa: E402
from models.trainref import run as R  # noqa: E402
from models.trainref.card import TrainRefConfig  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
RESULT_FILE = OUT / "trainref_embedding.json"
LABELS = {"mae": "MAE (label-free, the room's)", "contrastive": "SimCLR-style CNN (label-free)",
          "supervised": "supervised CNN, disjoint clean split (upper bound)"}
ENCODERS = ("mae", "contrastive", "supervised")
KEYS = ("nn1_accuracy", "dstar_size", "dstar_precision", "relabel_accuracy_round2",
        "trainref_accuracy", "ce_accuracy", "trainref_minus_ce", "trainref_ece", "ce_ece")


def write(args, rows: dict, pixels: list, wall: float) -> dict:
    """Summarise the seeds so far into ``args.out`` (atomically); returns the RESULT dict."""
    summary = {}
    for name, ms in rows.items():
        summary[name] = {}
        for k in KEYS:
            v = [float(m[k]) for m in ms]
            summary[name][k] = {"mean": statistics.fmean(v),
                                "std": statistics.stdev(v) if len(v) > 1 else 0.0,
                                "per_seed": [round(a, 4) for a in v]}
        summary[name]["trainref_above_ce_seeds"] = sum(m["trainref_minus_ce"] > 0 for m in ms)
        summary[name]["pretrain_s"] = statistics.fmean(m["pretrain_s"] for m in ms)
    summary["pixels"] = {"nn1_accuracy": {"mean": statistics.fmean(pixels),
                                          "per_seed": [round(a, 4) for a in pixels]}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"args": {k: v for k, v in vars(args).items() if k != "out"},
                               "seeds_done": len(pixels),
                               "setting": "symmetric 80 %, 1 reference per class",
                               "summary": summary, "wall_s": wall}, indent=1))
    tmp.replace(args.out)
    result = {"seeds": len(pixels), "train": args.train, "wall_s": round(wall, 1),
              "pixels_nn1": round(summary["pixels"]["nn1_accuracy"]["mean"], 3)}
    for name in ENCODERS:
        for k in KEYS:
            result[f"{name}_{k}"] = round(summary[name][k]["mean"], 3)
        result[f"{name}_trainref_above_ce_seeds"] = summary[name]["trainref_above_ce_seeds"]
    return result


PRECISION_TARGET = 0.9
"""The claim's bar for D*_ref (the digest's check 1: >= 0.90 at sym 80 %, 1 ref/class)."""


def clean_seeds(rec: dict) -> int:
    """Seeds whose D*_ref precision reaches :data:`PRECISION_TARGET`."""
    return sum(p >= PRECISION_TARGET for p in rec["dstar_precision"]["per_seed"])


def render(result: dict) -> str:
    """The markdown table the room README and bench/RESULTS.md show, from a results file:
    mean +- std over seeds per encoder (TrainRef - CE: mean, and seeds where it is > 0)."""
    summ, n = result["summary"], result["seeds_done"]

    def ms(rec, digits=3):
        return f"{rec['mean']:.{digits}f} +- {rec['std']:.{digits}f}"
    out = ["| embedding | 1-NN from the references | D*_ref size | "
           "D*_ref precision (seeds >= 0.9) | vote accuracy (round 2) | TrainRef acc | "
           "CE acc | TrainRef - CE (seeds > 0) | "
           "ECE TrainRef / CE |", "|---" * 9 + "|",
           f"| raw pixels | {summ['pixels']['nn1_accuracy']['mean']:.3f} | | | | | | | |"]
    for name, label in LABELS.items():
        r = summ[name]
        out.append(f"| {label} | {ms(r['nn1_accuracy'])} | {r['dstar_size']['mean']:.0f} | "
                   f"{ms(r['dstar_precision'])} ({clean_seeds(r)}/{n}) | "
                   f"{ms(r['relabel_accuracy_round2'])} | "
                   f"{ms(r['trainref_accuracy'])} | {ms(r['ce_accuracy'])} | "
                   f"{r['trainref_minus_ce']['mean']:+.3f} ({r['trainref_above_ce_seeds']}/{n}) | "
                   f"{r['trainref_ece']['mean']:.3f} / {r['ce_ece']['mean']:.3f} |")
    return "\n".join(out)


def render_claim(result: dict) -> str:
    """The claims table's summary: precision and TrainRef - CE per embedding."""
    summ, n = result["summary"], result["seeds_done"]
    parts = [f"{name} 1-NN {summ[name]['nn1_accuracy']['mean']:.2f}, D*_ref precision "
             f"{summ[name]['dstar_precision']['mean']:.2f} ({clean_seeds(summ[name])}/{n} seeds "
             f">= {PRECISION_TARGET}), TrainRef - CE "
             f"{summ[name]['trainref_minus_ce']['mean']:+.3f} "
             f"({summ[name]['trainref_above_ce_seeds']}/{n} seeds above)" for name in LABELS]
    return (f"by embedding (sym 80 %, 1 ref, {n} seeds; raw pixels 1-NN "
            f"{summ['pixels']['nn1_accuracy']['mean']:.2f}): " + "; ".join(parts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--train", type=int, default=4000)
    ap.add_argument("--contrastive-epochs", type=int, default=12)
    ap.add_argument("--supervised", type=int, default=3000,
                    help="clean labelled images for the upper bound, after the first --train")
    ap.add_argument("--supervised-epochs", type=int, default=6)
    ap.add_argument("--out", type=Path, default=RESULT_FILE)
    ap.add_argument("--render", action="store_true",
                    help="print the tables of the results file --out and stop")
    args = ap.parse_args()
    if args.render:
        result = json.loads(args.out.read_text())
        print(render(result) + "\n\n" + render_claim(result))
        return
    torch.set_num_threads(1)
    base = TrainRefConfig(train=args.train)
    full = datasets.fashion_mnist(limit_train=args.train + args.supervised,
                                  limit_test=base.test)
    data = dataclasses.replace(full, x_train=full.x_train[:args.train],
                               y_train=full.y_train[:args.train])
    x_sup, y_sup = E.disjoint_split(full.x_train, full.y_train, args.train, args.supervised)
    dev = sim.device("a100")
    t0 = time.time()
    rows: dict[str, list[dict]] = {name: [] for name in ENCODERS}
    pixels = []
    for seed in range(args.seeds):
        cfg = dataclasses.replace(base, seed=seed)
        x_all = dev.tensor(data.x_train)
        encs = {"mae": lambda c=cfg, x=x_all: M.pretrain(x, c, dev),
                "contrastive": lambda c=cfg, x=x_all: E.contrastive(
                    x, c, dev, args.contrastive_epochs)[0],
                "supervised": lambda c=cfg: E.supervised(
                    dev.tensor(x_sup), dev.tensor(y_sup, dtype=torch.int64), c, dev,
                    args.supervised_epochs)}
        for name, make in encs.items():
            t = time.time()
            enc = make()
            t_pre = time.time() - t
            r = R.run_all(data, cfg, dev, enc=enc)
            s = R.to_device(r["split"], dev)
            m = R.metrics_of(r)
            m["nn1_accuracy"] = E.nearest_reference_accuracy(
                M.features(enc, s["x_ref"]), s["y_ref"], M.features(enc, s["x_pool"]),
                s["y_true"])
            m["trainref_minus_ce"] = m["trainref_accuracy"] - m["ce_accuracy"]
            m["pretrain_s"], m["run_s"] = t_pre, time.time() - t - t_pre
            rows[name].append(m)
            print(f"seed {seed} {name}: 1-NN {m['nn1_accuracy']:.3f} | D* {m['dstar_size']} @ "
                  f"{m['dstar_precision']:.3f} | vote {m['relabel_accuracy_round2']:.3f} | "
                  f"TrainRef {m['trainref_accuracy']:.3f} CE {m['ce_accuracy']:.3f} "
                  f"({time.time() - t0:.0f} s)", flush=True)
        pixels.append(E.nearest_reference_accuracy(s["x_ref"], s["y_ref"], s["x_pool"],
                                                   s["y_true"]))
        result = write(args, rows, pixels, time.time() - t0)   # after every seed: partial runs
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
