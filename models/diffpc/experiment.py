"""DiffPC's comparison: DiffPC (neuromorphic) vs float PC and backprop (GPU/CPU profiles).

Trains the three methods through the runner on the same data, architecture and training
protocol (DiffPC's preset; float PC takes its ``hidden``, ``epochs``, ``batch_size``, ``lr``,
``lr_schedule`` and AdamW ``weight_decay`` as overrides, BP only ``hidden``, ``epochs``,
``batch_size`` and ``lr_schedule``, keeping its own Adam step 1e-3 and no decay: ``SHARED``)
and returns a :class:`Study`: one RunResult per method (each
with its own ledger) and a comparison dict: test accuracy, bits per neuron per sample
(float PC 64 x steps and BP 32, the paper's counts; DiffPC 2 x measured spikes + 32 bits x
feed-forward messages, per neuron), spikes per neuron per sample, and energy per training
sample and per inference (estimates priced from the profiles' ``energy_pj`` entries; see
``sim/execution/`` and each profile's ``sources``).

How the three are treated alike: every method's training energy includes its learning
step, counted by the same code. PC's and BP's gradients and optimizer steps run inside
``TorchDevice.count`` with the rest of their training; DiffPC's identical ``PCNet.step``
(PC's weight rule, AdamW) runs inside ``TorchDevice.count`` too (``DiffPCClassifier.learn``).
DiffPC's training is shown in two hardware readings (``model.py``'s docstring):
``train_j_per_sample@CHIP`` runs the step on the chip's learning engine (its counted
operations as ``syn_update``), and ``train_j_per_sample@CHIP+P`` runs it on a host priced
on profile P, the profile PC and BP are priced on in the same table
(``learn_j_per_sample@P`` is that host step alone; the host counts come with the DiffPC
run as ``facts["host_ledger"]``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from models.registry import RunResult, Study
from sim.ledger import Ledger

GPU_PROFILES = ("a100", "jetson-orin", "x86-avx2")
BASELINE_PROFILE = "a100"          # where float PC and BP train unless profiles["gpu"] says
BP_BITS_PER_NEURON = 32.0          # one float32 activation per neuron per sample (the paper)
METHODS = ("diffpc", "pc", "mlp")  # the study's runs, in the order they train
PROTOCOL = ("hidden", "epochs", "batch_size", "lr_schedule")
SHARED = {"pc": PROTOCOL + ("lr", "weight_decay"),   # the same AdamW as DiffPC (PCNet)
          "mlp": PROTOCOL}   # BP keeps its own Adam: step 1e-3 (its best), no decay
"""DiffPC's config values each baseline trains with: the training protocol (DiffPC's card).
BP (Adam, cross-entropy) keeps its own step, 1e-3: PC's 5e-4 would handicap it (the
measurements: the room's README, "How the settings were chosen")."""


def _with_train_limit(name: str, limit_train: int | None):
    """The registered method, or a copy whose data loader keeps the first ``limit_train``
    training rows of Fashion-MNIST (the bench's subset runs)."""
    from models import runner
    from models.shared import datasets
    method = runner.method_of(name)
    if limit_train is None:
        return method

    def load(dataset, cfg):
        if dataset != "fashion-mnist":
            return datasets.load(dataset)
        return datasets.fashion_mnist(limit_train=limit_train)
    return dataclasses.replace(method, load_data=load)


def run(dataset: str, preset: str, seed: int, profiles, progress=None,
        overrides: dict | None = None, limit_train: int | None = None) -> Study:
    """Train DiffPC, float PC and BP on ``dataset``; return their runs and the comparison.

    ``profiles``: ``{"neuromorphic": chip, "gpu": profile}`` (defaults loihi2, a100);
    ``overrides`` change DiffPC's preset values and, for those in ``SHARED``, the
    baselines' too; ``limit_train`` trains on a Fashion-MNIST subset.
    """
    import torch

    from models import runner
    torch.set_num_threads(1)
    chip = profiles.get("neuromorphic") or "loihi2"
    gpu = profiles.get("gpu") or profiles.get("cpu") or BASELINE_PROFILE
    plan = runner.prepare(_with_train_limit("diffpc", limit_train), profile=chip,
                          dataset=dataset, preset=preset, seed=seed, overrides=overrides)
    out: dict[str, RunResult] = {"diffpc": runner.execute(plan, progress)}
    for name in METHODS[1:]:
        common = {k: getattr(plan.config, k) for k in SHARED[name]}
        out[name] = runner.run(_with_train_limit(name, limit_train), profile=gpu,
                               dataset=dataset, preset=preset, seed=seed, overrides=common,
                               progress=progress)
    return Study(out, compare(out))


def compare(results: dict[str, RunResult]) -> dict:
    """Accuracy, bits, and energy per train sample / inference on each profile.

    DiffPC is priced on the chip it ran on, PC and BP on ``GPU_PROFILES``. DiffPC's host
    reading (its run's ``facts["host_ledger"]``, the learning step counted by the torch
    engine): ``train_j_per_sample@CHIP+P`` = the chip's training energy without
    ``train/learn/rule`` + the step priced on P (module docstring).
    """
    table = {}
    d_run = results["diffpc"]
    chip = d_run.profile
    for name, r in results.items():
        targets = (chip,) if name == "diffpc" else GPU_PROFILES
        row = {k: float(v) for k, v in r.metrics.items()}
        if name == "mlp":
            row.setdefault("bits_per_neuron_per_sample", BP_BITS_PER_NEURON)
        for p in targets:
            label = p.name if name == "diffpc" else p
            per = r.ledger.price(p).per_sample_j()
            row[f"train_j_per_sample@{label}"] = per.get("train", np.nan)
            row[f"infer_j_per_sample@{label}"] = per.get("infer", np.nan)
        table[name] = row
    d, pc = table["diffpc"], table["pc"]
    host = d_run.facts.get("host_ledger")
    if host is not None:
        host = host if isinstance(host, Ledger) else Ledger.from_dict(host)
        rep = d_run.ledger.price(chip)
        n = rep.samples["train"]
        d[f"learn_rule_j_per_sample@{chip.name}"] = rep.energy_within("train/learn/rule") / n
        dynamics = d[f"train_j_per_sample@{chip.name}"] - \
            d[f"learn_rule_j_per_sample@{chip.name}"]
        for p in GPU_PROFILES:
            step = host.price(p).per_sample_j()["train"]
            d[f"learn_j_per_sample@{p}"] = step
            d[f"train_j_per_sample@{chip.name}+{p}"] = dynamics + step
    table["comm_ratio_pc_over_diffpc"] = pc["bits_per_neuron_per_sample"] / \
        max(d["bits_per_neuron_per_sample"], 1e-12)
    return table
