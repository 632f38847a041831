"""BEP's model card: simulate BEP / BEP-TT on a bitwise profile, and export a trained BEP MLP to C.

``simulate`` picks BEP for static bit sets and BEP-TT for the sequence sets of
``models/bep_data.py``; every op of training (``train``), held-out checks (``validate``)
and testing (``infer``) lands in the device's ledger, which holds integer and word ops only.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

from models import bep_data
from models.bep import BEP, BEPConfig
from models.bep_tt import BEPTT, BEPTTConfig
from models.registry import ModelCard, Progress, RunResult, register
from sim.bitwise.network import ScoresLayer, SignLayer
from sim.bitwise.packing import pack_bits
from sim.errors import ModelError

# quick = a run of seconds (the CLI default); full = `neuroedge simulate bep --full`
QUICK = {"random-prototypes": {"hidden": (64, 64), "epochs": 5},
         "digits": {"hidden": (64, 64), "epochs": 10},
         "fashion-mnist": {"hidden": (256, 256), "epochs": 2},
         "cylinder-bell-funnel": {"epochs": 5}, "synthetic-control": {"epochs": 5},
         "digits-rows": {"epochs": 5}}
FULL = {"random-prototypes": {"hidden": (64, 64), "epochs": 30},
        "digits": {"hidden": (128, 128), "epochs": 30},
        "fashion-mnist": {"hidden": (256, 256), "epochs": 15},
        "cylinder-bell-funnel": {"epochs": 30}, "synthetic-control": {"epochs": 30},
        "digits-rows": {"epochs": 30}}
MLP_DEFAULTS = {"gamma0": 8, "nu": 0.5, "r": 0.5}  # tuned on Random Prototypes (README, bench)


def make_model(data: bep_data.BitData, device, seed: int = 0, quick: bool = True, **overrides):
    """BEP (static data) or BEP-TT (sequences) with the quick or full setting for ``data``."""
    base = (QUICK if quick else FULL)[data.name]
    if data.recurrent:
        cfg = BEPTTConfig(**{**base, "seed": seed, **overrides})
        return BEPTT(data.n_features, data.n_classes, cfg, device)
    cfg = BEPConfig(**{**MLP_DEFAULTS, **base, "seed": seed, **overrides})
    return BEP(data.n_features, data.n_classes, cfg, device)


STATE_BITS_PER_WEIGHT = 16 + 2
"""Device memory per weight as implemented: int16 counter + a bit in packed W and in W^T."""


def simulate(profile="cortex-m4", dataset="random-prototypes", seed: int = 0, quick: bool = True,
             progress: Progress | None = None, **overrides) -> RunResult:
    """Train BEP (or BEP-TT) on ``dataset`` on a BitwiseDevice for ``profile`` and test it."""
    import sim
    dev = sim.device(profile)
    if dev.profile.kind != "bitwise":
        raise ModelError(f"bep: profile {dev.profile.name!r} is of kind {dev.profile.kind!r}; "
                         "BEP runs on bitwise profiles (e.g. cortex-m4, cortex-m7, fpga-bnn)")
    kw = {"limit_train": 10000, "limit_test": 2000} if dataset.replace("_", "-") == \
        "fashion-mnist" and quick else {}
    data = bep_data.load(dataset, **kw)
    model = make_model(data, dev, seed, quick, **overrides)
    # the training state must fit the device's writable memory (a capacity error otherwise)
    dev.reserve(model.n_weights * STATE_BITS_PER_WEIGHT // 8, scope="train")
    model.fit(data.x_train, data.y_train, progress=progress)
    acc = model.evaluate(data.x_test, data.y_test, scope="infer")["accuracy"]
    n_w = model.n_weights
    metrics = {"test_accuracy": acc, "train_error": model.history[-1]["train_error"],
               "weights": float(n_w),
               "state_bits_per_weight": float(STATE_BITS_PER_WEIGHT),
               "state_bytes": float(n_w * STATE_BITS_PER_WEIGHT // 8)}
    cfg = model.config
    config = {**asdict(cfg), "hidden": list(cfg.hidden), "model": type(model).__name__,
              "n_inputs": data.n_features, "n_classes": data.n_classes,
              "word_bits": dev.word_bits, "data_source": data.source}
    traces = {"train_error": np.array([h["train_error"] for h in model.history])}
    return RunResult("bep", dev.profile, data.name, config, metrics, dev.ledger, traces)


def experiment(quick: bool = True, profile="cortex-m4", seed: int = 0) -> RunResult:
    """BEP learns Random Prototypes far above chance (10%) with bits and integers only."""
    return simulate(profile=profile, dataset="random-prototypes", seed=seed, quick=quick)


def packed_network(model: BEP) -> list:
    """The trained BEP MLP as a packed network for BitwiseDevice.run and the C exporter:
    one SignLayer (threshold 0: sign(0) = +1) per hidden layer, then the frame P as scores."""
    if isinstance(model, BEPTT):
        raise ModelError("packed_network: BEP-TT (recurrent) has no feed-forward C export yet")
    layers = [SignLayer(lay.w, lay.k_in, np.zeros(lay.k_out, np.int32), name=f"bep{i}")
              for i, lay in enumerate(model.layers)]
    layers.append(ScoresLayer(model.head_words[-1], model.frame.shape[1],
                              np.zeros(model.n_classes, np.int32)))
    return layers


def export(target: str, out, *, seed: int = 0, quick: bool = True, progress=None,
           profile="cortex-m4", dataset="digits", n_golden: int = 16,
           force: bool = False) -> Path:
    """Train BEP on ``dataset`` and write the C99 project (``deploy.c_export``) to ``out``,
    with ``n_golden`` test samples and BitwiseDevice's outputs on them as golden vectors."""
    from deploy.c_export import export_c  # deploy sits above models: imported only here
    if target != "c":
        raise ModelError(f"bep export: target {target!r}; BEP exports to 'c' only")
    import sim
    dev = sim.device(profile)
    data = bep_data.load(dataset)
    if data.recurrent:
        raise ModelError(f"bep export: dataset {dataset!r} is a sequence set; the C export "
                         "covers the feed-forward BEP network (use a static set)")
    model = make_model(data, dev, seed, quick)
    model.fit(data.x_train, data.y_train, progress=progress)
    x = pack_bits(data.x_test[:n_golden], dev.word_bits)
    return export_c(packed_network(model), x, out, profile=profile, force=force)


CARD = register(ModelCard(
    name="bep",
    title="BEP: A Binary Error Propagation Algorithm for Binary Neural Networks Training",
    reference="Colombo, Pittorino, Zambon, Baldassi, Roveri & Alippi, ICLR 2026, arXiv:2512.04189",
    claim="binary MLPs/RNNs trained with bits and int16 counters only (no float op in the "
          "ledger); BEP beats the binary local rule on Random Prototypes (bench/bep.py)",
    device_kinds=("bitwise",),
    datasets=tuple(bep_data.LOADERS),
    default_dataset="random-prototypes",
    default_profile="cortex-m4",
    simulate=simulate,
    exports=("c",),
    export=export,
    export_dataset="digits",
))
