"""BEP against its anchors in one run: the binary local rule and QAT (STE + Adam) of the same
binary network; accuracy, memory per weight and ops per training sample.

Parts (all single-threaded; the machine is shared, so wall times are indicative only):

1. Random Prototypes (12,000 x 1000 bits, 10 classes, flip 0.44), MLP 1000-K-K-10 for small
   K, ``--seeds`` seeds: BEP vs the local rule vs QAT without batch norm (Adam lr 1e-3, the
   Adam default, and lr 1e-2) vs QAT with batch norm (not fully binary at inference).
2. Fashion-MNIST (median-binarised) 784-256-256-10: BEP's test accuracy beside QAT's.
3. Sequence sets (procedural Cylinder-Bell-Funnel, Synthetic Control, digits row by row):
   BEP-TT vs the QAT RNN (no BN), same binary RNN.
4. Cost per training sample from the ledgers (BEP on cortex-m4, QAT on x86-avx2 counts;
   both priced with cortex-m4's per-op energies), and state bits per weight.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bep.py [--quick] [--seeds 5]

Part 1's BEP and local-rule runs are one sweep (``deploy.sweep``: K x local x seed, run
serially in this process so the runs stay single-threaded; run files and table in
``bench/out/bep-prototypes-sweep``), so their accuracies come with the spread over seeds
(mean, std over n - 1, min, max). QAT keeps its own seed loop beside it (std over n, as
before): it is not a registered method, so a sweep cannot run it. Parts 2 and 3 are one
seed each (seed 0), as before.
BEP and the local rule run through ``models.runner`` (the card's config with overrides),
except where the card must refuse: BEP's Fashion-MNIST training state (599,552 B) does not
fit cortex-m4's SRAM, so the runner stops that run with a capacity error; part 2 counts it
on a bare cortex-m4 BitwiseDevice instead (``sim.device``, no capacity reservation), as the
benchmark always has, to price what a 32-bit MCU would execute. QAT is not a registered
method (``models/baselines/qat``) and runs on ``sim.device("x86-avx2")``.

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

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import sim  # noqa: E402
from bench import _checks, _sweeps  # noqa: E402
from hw_profiles import load  # noqa: E402
from hw_profiles.ops import EXECUTION_OPS  # noqa: E402
from models import runner  # noqa: E402
from models.baselines.qat.model import QAT, QATConfig  # noqa: E402
from models.bep import data as bep_data  # noqa: E402
from models.bep.card import BEPConfig, load_data  # noqa: E402
from models.bep.model import BEP  # noqa: E402

WORD_OPS = ("xor_word", "xnor_word", "and_word", "or_word", "not_word", "popcount_word")


class _Timed:
    """Progress callback that notes when training starts and ends (wall seconds of fit)."""

    def __init__(self):
        self.start, self.end = time.perf_counter(), None

    def __call__(self, step, total, record):
        self.end = time.perf_counter()


def bep_run(dataset, hidden, epochs, seed, local=False, profile="cortex-m4", preset="quick",
            **kw):
    """One BEP / BEP-TT / local-rule run through the runner: (accuracy, run, wall seconds)."""
    timed = _Timed()
    run = runner.run("bep", profile=profile, dataset=dataset, preset=preset, seed=seed,
                     overrides={"hidden": hidden, "epochs": epochs, "local": local, **kw},
                     progress=timed)
    _checks.epochs_trained(f"BEP on {dataset}", len(run.traces["train_error"].data), epochs)
    return run.metrics["test_accuracy"], run, timed.end - timed.start


def bep_unreserved(data, hidden, epochs, seed, profile="cortex-m4"):
    """BEP on a bare device, for a state the card's run refuses (see the module docstring)."""
    dev = sim.device(profile)
    cfg = BEPConfig(hidden=hidden, epochs=epochs, seed=seed)
    t = time.perf_counter()
    m = BEP(data.n_features, data.n_classes, cfg, dev).fit(data.x_train, data.y_train)
    wall = time.perf_counter() - t
    _checks.epochs_trained("BEP (bare device)", len(m.history), epochs)
    return m.evaluate(data.x_test, data.y_test)["accuracy"], dev, wall


def qat_run(data, hidden, epochs, seed, count=False, batch_size=100, **kw):
    dev = sim.device("x86-avx2")
    cfg = QATConfig(hidden=hidden, epochs=epochs, seed=seed, batch_size=batch_size, **kw)
    t = time.perf_counter()
    m = QAT(bep_data.bits_per_step(data), data.n_classes, cfg, dev,
            recurrent=bep_data.is_sequence(data))
    done = _checks.EpochCounter()              # QAT keeps no history: count its callbacks
    m.fit(data.x_train, data.y_train, progress=done, count=count)
    wall = time.perf_counter() - t
    _checks.epochs_trained("QAT", done.epochs, epochs)
    return m.evaluate(data.x_test, data.y_test)["accuracy"], dev, wall, m


def per_sample(ledger, scope="train") -> dict:
    ops = ledger.total_ops(scope)
    n = sum(v for k, v in ledger.samples().items() if k.split("/")[0] == scope)
    return {op: c / n for op, c in sorted(ops.items())}


def energy_uj(ops_per_sample: dict, profile) -> float | None:
    """Compute energy per sample (uJ) with the profile's per-op energies (memory excluded;
    so are kernel launches, which QAT's x86 ledger counts since 2026-12-01: an execution op
    a kind's execution model prices, never ``[energy_pj]``)."""
    try:
        return sum(c * profile.energy_pj[op].value for op, c in ops_per_sample.items()
                   if op not in EXECUTION_OPS) * 1e-6
    except KeyError:
        return None


def fmt(accs):
    return f"{100 * np.mean(accs):5.1f} +/- {100 * np.std(accs):3.1f}"


def fmt_s(spread: dict) -> str:
    """:func:`fmt` of a sweep's spread over seeds."""
    return f"{100 * spread['mean']:5.1f} +/- {100 * spread['std']:3.1f}"


def static_parts(q, seeds, res):
    """Parts 1, 2 and 4 (prototypes, Fashion-MNIST, cost), filling ``res``."""
    # 1. Random Prototypes ---------------------------------------------------------------
    protos = load_data("random-prototypes", BEPConfig())     # what the runner's runs train on
    ep = 3 if q else 15
    part = {}
    print(f"== Random Prototypes 1000-K-K-10, {len(seeds)} seeds, {ep} epochs (test acc %)")
    ks = (32,) if q else (32, 64)
    # BEP and the local rule: one sweep (K x local x seed), spread over seeds
    result = _sweeps.sweep({"name": "bep-prototypes", "models": ["bep"],
                            "datasets": ["random-prototypes"], "presets": ["quick"],
                            "seeds": list(seeds), "profiles": ["cortex-m4"],
                            "grid": {"hidden": [[k, k] for k in ks], "epochs": [ep],
                                     "local": [False, True]}})
    rows = _sweeps.ok_rows(result)
    for r in rows:                             # each run's train_error trace: one per epoch
        _checks.epochs_trained(f"sweep run {r['key']}",
                               len(_sweeps.read(result, r).traces["train_error"].data), ep)
    print(f"{'K':>4} {'BEP':>14} {'local rule':>14} {'QAT noBN 1e-3':>14} {'QAT noBN 1e-2':>14} "
          f"{'QAT+BN 1e-3':>14}  BEP-local  BEP-QATnoBN")
    for k in ks:
        row = {name: [] for name in ("qat_nobn", "qat_nobn_lr1e-2", "qat_bn")}
        for s in seeds:   # QAT is not a registered method: its own seed loop
            row["qat_nobn"].append(qat_run(protos, (k, k), ep, s)[0])
            row["qat_nobn_lr1e-2"].append(qat_run(protos, (k, k), ep, s, lr=1e-2)[0])
            row["qat_bn"].append(qat_run(protos, (k, k), ep, s, batch_norm=True)[0])
        bep = _sweeps.spread(rows, "test_accuracy", hidden=[k, k], local=False)
        loc = _sweeps.spread(rows, "test_accuracy", hidden=[k, k], local=True)
        d_local = 100 * (bep["mean"] - loc["mean"])
        d_qat = 100 * (bep["mean"] - np.mean(row["qat_nobn"]))
        print(f"{k:>4} {fmt_s(bep):>14} {fmt_s(loc):>14} "
              + " ".join(f"{fmt(v):>14}" for v in row.values())
              + f"  {d_local:+8.2f}  {d_qat:+10.2f}   (paper: BEP-local up to +6.89)", flush=True)
        print(f"     BEP range {_sweeps.fmt(bep)}, local rule range {_sweeps.fmt(loc)} "
              f"(mean +/- std [min, max] over {bep['n']} seeds)")
        part[str(k)] = ({"bep": bep["mean"], "local": loc["mean"]}
                        | {n: float(np.mean(v)) for n, v in row.items()}
                        | {"bep_spread": bep, "local_spread": loc,
                           "bep_minus_local_pts": d_local, "bep_minus_qat_nobn_pts": d_qat,
                           "seeds": len(seeds)})
    res["parts"]["random_prototypes_sweep_table"] = str(result.table_path)
    res["parts"]["random_prototypes"] = part

    # 2. Fashion-MNIST 784-256-256-10 ----------------------------------------------------
    fm = load_data("fashion-mnist", BEPConfig(limit_train=5000 if q else None,
                                              limit_test=1000 if q else None))
    ep_f = 1 if q else 8
    acc_b, dev_b, wall_b = bep_unreserved(fm, (256, 256), ep_f, 0)
    acc_q, _, wall_q, _m_q = qat_run(fm, (256, 256), ep_f, 0)
    # QAT's ops per sample do not depend on the data or the epoch: count one epoch of 2000
    small = bep_data.limited(fm, 2000, 500)
    dev_q = qat_run(small, (256, 256), 1, 0, count=True)[1]
    print(f"== Fashion-MNIST 784-256-256-10, {ep_f} epochs, seed 0: BEP {100 * acc_b:.2f}% "
          f"({wall_b:.0f} s)  QAT noBN {100 * acc_q:.2f}% ({wall_q:.0f} s)  "
          f"BEP-QAT {100 * (acc_b - acc_q):+.2f} pts (paper reads ~85-87% for BEP)", flush=True)
    res["parts"]["fashion_mnist"] = {"epochs": ep_f, "bep": acc_b, "qat_nobn": acc_q}

    # 4. cost per training sample (from the FMNIST ledgers) ------------------------------
    m4 = load("cortex-m4")
    ops_b, ops_q = per_sample(dev_b.ledger), per_sample(dev_q.ledger)
    word_bits = dev_b.word_bits
    bit_ops_b = sum(c * word_bits for op, c in ops_b.items() if op in WORD_OPS)
    int_ops_b = sum(c for op, c in ops_b.items() if op.startswith("int_"))
    float_ops_q = sum(c for op, c in ops_q.items() if op.startswith(("mac_fp", "flop_fp")))
    e_b, e_q = energy_uj(ops_b, m4), energy_uj(ops_q, m4)
    cost = {"bep_ops_per_train_sample": ops_b, "qat_ops_per_train_sample": ops_q,
            "bep_bit_ops_per_train_sample": bit_ops_b, "bep_int_ops_per_train_sample": int_ops_b,
            "qat_float_ops_per_train_sample": float_ops_q,
            "bep_energy_uj_per_train_sample_cortex_m4": e_b,
            "qat_energy_uj_per_train_sample_cortex_m4": e_q,
            "bep_state_bits_per_weight": 16 + 2, "qat_state_bits_per_weight": 32 + 64,
            "paper_state_bits_per_weight": {"bep": 16, "qat_adam": 32 + 64}}
    print("== Cost per training sample, FMNIST 784-256-256-10 (ledger counts)")
    print(f"   BEP: {bit_ops_b:.3g} bit ops in word ops ({word_bits}-bit words) + "
          f"{int_ops_b:.3g} int ops, no float op; {e_b:.1f} uJ priced on cortex-m4 (ops only)")
    print(f"   QAT: {float_ops_q:.3g} fp32 ops (MAC = 1); "
          f"{e_q:.1f} uJ priced on cortex-m4 (ops only)" if e_q else
          f"   QAT: {float_ops_q:.3g} fp32 ops (an op cortex-m4 cannot price)")
    if e_q:
        print(f"   energy ratio QAT / BEP = {e_q / e_b:.1f}x")
    print("   state per weight: BEP 16-bit counter + 2 packed sign bits (W, W^T) = 18 bits "
          "(paper: 16); QAT fp32 latent + Adam m, v = 96 bits (paper: 32 + 64)")
    res["parts"]["cost"] = cost


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=None,
                    help="seeds of part 1 (default 5; 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="tiny setting (smoke test)")
    ap.add_argument("--only", choices=("sequences",), help="run one part only")
    args = ap.parse_args()
    torch.set_num_threads(1)
    q = args.quick
    seeds = range(args.seeds or (1 if q else 5))
    res = {"machine": f"{platform.machine()} {os.cpu_count()} cores (shared)", "parts": {}}
    t0 = time.perf_counter()

    if args.only != "sequences":
        static_parts(q, seeds, res)

    # 3. sequences: BEP-TT vs QAT RNN -----------------------------------------------------
    ep_s = 3 if q else 30
    part = {}
    print(f"== Sequences, binary RNN (K_s, K_y) = (120, 64), {ep_s} epochs, seed 0 (test acc %)")
    for name in ("cylinder-bell-funnel", "synthetic-control", "digits-rows"):
        data = load_data(name, BEPConfig())
        a_tt = bep_run(name, (120, 64), ep_s, 0)[0]            # the paper's nu = 0.05
        a_tt3 = bep_run(name, (120, 64), ep_s, 0, nu=0.3)[0]  # a wider gate
        a_q = qat_run(data, (120, 64), ep_s, 0, batch_size=20)[0]
        print(f"   {name:22s} BEP-TT {100 * a_tt:5.1f} (nu 0.3: {100 * a_tt3:5.1f})  QAT noBN "
              f"{100 * a_q:5.1f}  BEP-TT-QAT {100 * (max(a_tt, a_tt3) - a_q):+6.1f} pts (best nu; "
              f"paper, 30 UCR sets: +10.57 mean)", flush=True)
        part[name] = {"bep_tt": a_tt, "bep_tt_nu0.3": a_tt3, "qat_nobn": a_q}
    res["parts"]["sequences"] = part
    res["wall_s"] = time.perf_counter() - t0
    print(f"total {res['wall_s']:.0f} s")
    print("RESULT " + json.dumps(res, default=float))


if __name__ == "__main__":
    main()
