"""DiffPC vs float PC vs backprop: accuracy, communication and energy per sample.

Usage::

    OMP_NUM_THREADS=1 python bench/diffpc.py                       # digits 64-32-10
    OMP_NUM_THREADS=1 python bench/diffpc.py --fashion --hidden 400 --limit-train 6000 \
        --epochs 3 --batch 100

Anchors (the paper, Karlsson et al. ICLR 2026): Fashion-MNIST 784-1000-10 DiffPC 89.6%,
784-400-10 89.2% (full data; epochs not reported); MNIST bits/neuron: DiffPC 0.08-0.18,
PC-SE 960, BP 32. Energies are estimates from the profiles' energy_pj entries (loihi2 for
DiffPC; a100, jetson-orin, x86-avx2 for float PC and BP), see each profile's sources.
Every method's training energy includes its learning step, counted by the torch engine
(DiffPC: the same PCNet.step as PC); DiffPC is shown with the step on the chip's learning
engine (@loihi2) and on a host priced on each GPU/CPU profile (@loihi2+P).
The three methods run through the runner (``models/diffpc/experiment.py``): DiffPC's
preset (digits: quick; ``--fashion``: full) with --hidden/--epochs/--batch as overrides,
which float PC and BP take too. Writes a run file per method and a comparison JSON under
--out; last line RESULT {json}.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deploy.outputs import write_text
from deploy.runfile import write_result
from models.diffpc.experiment import run

PAPER = {"digits": None, (400,): 0.892, (1000,): 0.896}
METHODS = ("diffpc", "pc", "mlp")
LABEL = {"diffpc": "diffpc", "pc": "pc", "mlp": "bp"}   # the BP baseline is the mlp card


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fashion", action="store_true")
    ap.add_argument("--hidden", type=int, nargs="+", default=None)
    ap.add_argument("--limit-train", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--out", default="runs/diffpc-bench")
    args = ap.parse_args()
    if args.fashion:
        dataset, preset, hidden = "fashion-mnist", "full", tuple(args.hidden or (400,))
    else:
        dataset, preset = "digits", "quick"
        hidden = tuple(args.hidden) if args.hidden else None
    overrides = {k: v for k, v in (("hidden", hidden), ("epochs", args.epochs),
                                   ("batch_size", args.batch)) if v is not None}
    t0 = time.time()
    study = run(dataset, preset, 0, {}, overrides=overrides,
                limit_train=args.limit_train if args.fashion else None)
    wall = time.time() - t0
    d_run = study.runs["diffpc"]
    cfg, sizes = d_run.config, d_run.facts["sizes"]
    hidden, epochs, batch = tuple(cfg["hidden"]), cfg["epochs"], cfg["batch_size"]
    arch = "-".join(map(str, sizes))
    n_train = d_run.ledger.samples()["train"] // epochs   # DiffPC skips partial batches
    print(f"{dataset} {arch}: {n_train} train samples per epoch (DiffPC), "
          f"{d_run.ledger.samples()['infer']} test, {epochs} epochs, batch {batch}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, r in study.runs.items():
        # a bench rewrites its own result files on every run: force
        write_result(out / f"{name}-{dataset}-{arch}.h5", r, force=True)
    cmp_ = study.summary
    write_text(out / f"comparison-{dataset}-{arch}.json", json.dumps(cmp_, indent=1),
               force=True)

    paper = PAPER.get(hidden) if args.fashion else None
    print(f"{'method':<8}{'test acc':>9}{'paper':>7}{'bits/neuron':>13}{'spikes/neuron':>15}")
    for name in METHODS:
        row = cmp_[name]
        pap = f"{paper:.3f}" if (paper and name == "diffpc") else "-"
        sp = row.get("spikes_per_neuron_per_sample")
        print(f"{LABEL[name]:<8}{row['test_accuracy']:>9.4f}{pap:>7}"
              f"{row['bits_per_neuron_per_sample']:>13.3f}"
              f"{'-' if sp is None else f'{sp:.3f}':>15}")
    d = cmp_["diffpc"]
    print(f"DiffPC bits = 2 x {d['spikes_per_neuron_per_sample']:.3f} spikes + 32 x "
          f"{d['ff_messages_per_neuron_per_sample']:.3f} feed-forward messages per neuron")
    print(f"communication ratio float PC / DiffPC: {cmp_['comm_ratio_pc_over_diffpc']:.1f}x "
          "(target >= 100; paper ~5,000 on MNIST with its error-phase count)")
    print("energy per sample (estimates; J; training includes the learning step):")
    print(f"  {'method':<7}{'trained on':<27}{'train':>10} {'infer':>10} {'learn step':>10}")
    for name in METHODS:
        row = cmp_[name]
        for k, v in row.items():
            if k.startswith("train_j_per_sample@"):
                p = k.split("@")[1]
                inf = row.get(f"infer_j_per_sample@{p.split('+')[0]}", float("nan"))
                learn = row.get("learn_rule_j_per_sample@loihi2") if p == "loihi2" else \
                    row.get(f"learn_j_per_sample@{p.split('+')[-1]}")
                where = "chip learning engine" if p == "loihi2" else \
                    (f"loihi2 + host {p.split('+')[1]}" if "+" in p else p)
                lrn = "-" if learn is None else f"{learn:.3e}"
                print(f"  {LABEL[name]:<7}{where:<27}{v:>10.3e} {inf:>10.3e} {lrn:>10}")
    result = {"dataset": dataset, "arch": arch,
              # float PC and BP train on the whole split (DiffPC skips partial batches)
              "train_samples": study.runs["pc"].ledger.samples()["train"] // epochs,
              "epochs": epochs, "batch": batch, "wall_s": wall,
              **{f"acc_{LABEL[n]}": cmp_[n]["test_accuracy"] for n in METHODS},
              "acc_paper_diffpc": paper,
              "bits_diffpc": cmp_["diffpc"]["bits_per_neuron_per_sample"],
              "ff_messages_diffpc": cmp_["diffpc"]["ff_messages_per_neuron_per_sample"],
              "spikes_diffpc": cmp_["diffpc"]["spikes_per_neuron_per_sample"],
              "comm_ratio_pc_over_diffpc": cmp_["comm_ratio_pc_over_diffpc"],
              "train_j_diffpc_loihi2": cmp_["diffpc"]["train_j_per_sample@loihi2"],
              "train_j_diffpc_loihi2_host_a100": cmp_["diffpc"]["train_j_per_sample@loihi2+a100"],
              "infer_j_diffpc_loihi2": cmp_["diffpc"]["infer_j_per_sample@loihi2"],
              "train_j_pc_a100": cmp_["pc"]["train_j_per_sample@a100"],
              "train_j_bp_a100": cmp_["mlp"]["train_j_per_sample@a100"]}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
