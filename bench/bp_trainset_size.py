"""Backprop's energy per training sample does not depend on the training-set size (issue 13).

The mini-batch gather ``x[idx]`` once charged the whole training tensor per batch, so the
energy per sample grew with the data set. Now a gather reads its rows plus indices, and the
GPU/CPU execution model treats a tensor that is only gathered from as streamed data (it does
not count toward fitting the cache). This bench trains the `mlp` baseline (784-1000-10,
Adam, batch 100) on the 6,000-row Fashion-MNIST subset for 3 epochs and on the full 60,000
rows for 1 epoch, and prices both ledgers' training scope on a100, jetson-orin and x86-avx2
(the runs go through ``models.runner``, so each also tests on the 10,000 test rows).

Usage: ``OMP_NUM_THREADS=1 python bench/bp_trainset_size.py`` (about 1 minute; needs the
Debian package dataset-fashion-mnist). Last line: ``RESULT {json}`` with the 60k / 6k ratio
of the training energy per sample per profile (the issue's acceptance: within 1% on a100).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import _checks  # noqa: E402

PROFILES = ("a100", "jetson-orin", "x86-avx2")
FASHION_TRAIN_ROWS = 60_000


def train_energy_per_sample(limit_train: int | None, epochs: int) -> tuple[dict, int, float]:
    import dataclasses

    import torch

    from models import runner
    from models.shared import datasets
    torch.set_num_threads(1)
    # the mlp card through the runner, on the first `limit_train` Fashion-MNIST rows
    method = dataclasses.replace(
        runner.method_of("mlp"),
        load_data=lambda dataset, cfg: datasets.fashion_mnist(limit_train=limit_train))
    t0 = time.process_time()
    # the counts do not depend on the profile the run is made on; every profile prices them
    run = runner.run(method, profile="a100", dataset="fashion-mnist",
                     overrides={"hidden": (1000,), "epochs": epochs, "batch_size": 100})
    cpu_s = time.process_time() - t0          # training and the test pass
    per = {p: run.ledger.price(p).per_sample_j()["train"] for p in PROFILES}
    # the per-sample figures are only comparable if each run trained all its epochs on all
    # its rows: the card's train_loss trace has one point per epoch, the ledger the samples
    _checks.epochs_trained(f"mlp on {limit_train or 'all'} rows",
                           len(run.traces["train_loss"].data), epochs)
    rows = limit_train or FASHION_TRAIN_ROWS
    if run.ledger.samples()["train"] != rows * epochs:
        raise RuntimeError(f"bench: the mlp run counted {run.ledger.samples()['train']} "
                           f"training samples, expected {rows} rows x {epochs} epochs")
    return per, rows, cpu_s


def main() -> int:
    # no options; --help says what the bench does and needs instead of starting the runs
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    small, n_small, s_small = train_energy_per_sample(6000, 3)
    full, n_full, s_full = train_energy_per_sample(None, 1)
    print(f"{'profile':12} {'6k x 3 ep J/sample':>20} {'60k x 1 ep J/sample':>20} {'ratio':>8}")
    ratio = {}
    for p in PROFILES:
        ratio[p] = full[p] / small[p]
        print(f"{p:12} {small[p]:20.4e} {full[p]:20.4e} {ratio[p]:8.5f}")
    print(f"(train rows {n_small:,} and {n_full:,}; CPU time {s_small:.0f} s and {s_full:.0f} s)")
    print("RESULT " + json.dumps({"ratio_60k_over_6k": ratio,
                                  "within_1pct_a100": abs(ratio["a100"] - 1) <= 0.01}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
