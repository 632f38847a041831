"""DiffPC's comparison: DiffPC (loihi2) vs float PC and backprop (GPU/CPU profiles).

Trains the three methods on the same data, architecture and number of epochs, and returns
one RunResult per method (each with its own ledger) plus a comparison dict: test accuracy,
bits per neuron per sample (float PC 64 x steps and BP 32, the paper's counts; DiffPC
2 x measured spikes + 32 bits x feed-forward messages, per neuron), spikes per neuron per
sample, and energy per training sample and per inference (estimates priced from the
profiles' ``energy_pj`` entries; see ``sim/pricing.py`` and each profile's ``sources``).

How the three are treated alike: every method's training energy includes its learning
step, counted by the same code. PC's and BP's gradients and optimizer steps run inside
``TorchDevice.count`` with the rest of their training; DiffPC's identical ``PCNet.step``
(PC's weight rule, AdamW) runs inside ``TorchDevice.count`` too (``DiffPCClassifier.learn``).
DiffPC's training is shown in two hardware readings (``models/diffpc.py``'s docstring):
``train_j_per_sample@loihi2`` runs the step on the chip's learning engine (its counted
operations as ``syn_update``), and ``train_j_per_sample@loihi2+P`` runs it on a host priced
on profile P, the profile PC and BP are priced on in the same table
(``learn_j_per_sample@P`` is that host step alone).
"""
from __future__ import annotations

from dataclasses import asdict

import numpy as np
import torch

from models.baselines.mlp.card import MLPConfig
from models.baselines.mlp.model import MLPClassifier
from models.diffpc import DiffPCClassifier, DiffPCConfig
from models.pc import PCClassifier, PCConfig, comm_bits_per_neuron
from models.registry import RunResult
from models.shared import datasets
from sim.neuromorphic import NeuromorphicDevice
from sim.torch_engine import TorchDevice

GPU_PROFILES = ("a100", "jetson-orin", "x86-avx2")


def run(data: datasets.Dataset, hidden=(32,), epochs: int = 30, batch_size: int = 32,
        seed: int = 0, progress=None, diffpc_overrides=None) -> dict:
    """Train DiffPC, float PC and BP on ``data``; return results and the comparison."""
    torch.set_num_threads(1)
    nin, ncls = data.n_features, data.n_classes
    common = {"hidden": tuple(hidden), "epochs": epochs, "batch_size": batch_size, "seed": seed}
    out: dict[str, RunResult] = {}

    dcfg = DiffPCConfig(**common, **(diffpc_overrides or {}))
    dev = NeuromorphicDevice("loihi2")
    dm = DiffPCClassifier(nin, ncls, dcfg, dev).fit(data.x_train, data.y_train, progress)
    acc = dm.evaluate(data.x_test, data.y_test)["accuracy"]
    out["diffpc"] = RunResult("diffpc", dev.profile, data.name, asdict(dcfg),
                              {"test_accuracy": acc, **dm.comm()}, dev.ledger)
    # DiffPC's learning step as the torch engine counted it, for the host reading
    out["diffpc_learn"] = RunResult("diffpc", dm.host.profile, data.name, asdict(dcfg), {},
                                    dm.host_ledger)

    pcfg = PCConfig(**common)
    tdev = TorchDevice("a100")
    pm = PCClassifier(nin, ncls, pcfg, tdev).fit(data.x_train, data.y_train, progress)
    acc = pm.evaluate(data.x_test, data.y_test)["accuracy"]
    out["pc"] = RunResult("pc", tdev.profile, data.name, asdict(pcfg),
                          {"test_accuracy": acc,
                           "bits_per_neuron_per_sample": comm_bits_per_neuron(pcfg.steps)},
                          tdev.ledger)

    mcfg = MLPConfig(**common)
    bdev = TorchDevice("a100")
    bm = MLPClassifier(nin, ncls, mcfg, bdev)
    bm.fit(data.x_train, data.y_train, progress=progress)
    acc = bm.evaluate(data.x_test, data.y_test)["accuracy"]
    out["bp"] = RunResult("mlp", bdev.profile, data.name, asdict(mcfg),
                          {"test_accuracy": acc, "bits_per_neuron_per_sample": 32.0},
                          bdev.ledger)
    return {"results": out, "comparison": compare(out)}


def compare(results: dict[str, RunResult]) -> dict:
    """Accuracy, bits, and energy per train sample / inference on each profile.

    ``results["diffpc_learn"]`` (DiffPC's learning step counted by the torch engine) gives
    DiffPC's host reading: ``train_j_per_sample@loihi2+P`` = the chip's training energy
    without ``train/learn/rule`` + the step priced on P (module docstring)."""
    table = {}
    for name, r in results.items():
        if name == "diffpc_learn":
            continue
        profiles = ("loihi2",) if name == "diffpc" else GPU_PROFILES
        row = {k: float(v) for k, v in r.metrics.items()}
        for p in profiles:
            rep = r.ledger.price(p)
            per = rep.per_sample_j()
            row[f"train_j_per_sample@{p}"] = per.get("train", np.nan)
            row[f"infer_j_per_sample@{p}"] = per.get("infer", np.nan)
        table[name] = row
    d, pc = table["diffpc"], table["pc"]
    if "diffpc_learn" in results:
        chip = results["diffpc"].ledger.price("loihi2")
        n = chip.samples["train"]
        d["learn_rule_j_per_sample@loihi2"] = chip.energy_within("train/learn/rule") / n
        dynamics = d["train_j_per_sample@loihi2"] - d["learn_rule_j_per_sample@loihi2"]
        for p in GPU_PROFILES:
            host = results["diffpc_learn"].ledger.price(p).per_sample_j()["train"]
            d[f"learn_j_per_sample@{p}"] = host
            d[f"train_j_per_sample@loihi2+{p}"] = dynamics + host
    table["comm_ratio_pc_over_diffpc"] = pc["bits_per_neuron_per_sample"] / \
        max(d["bits_per_neuron_per_sample"], 1e-12)
    return table
