"""The Tsetlin machine's card: simulate on booleanised data on a bitwise profile, export to C.

``simulate`` trains :class:`models.tsetlin.TsetlinMachine` on a BitwiseDevice and tests it;
every op of training (``train``) and inference (``infer``) lands in the device's ledger, so
the run prices per training sample and per inference on any bitwise profile.
``export`` writes the trained include masks as the C exporter's ClauseLayer.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

from models.registry import ModelCard, Progress, RunResult, register
from models.shared import datasets
from models.tsetlin import TsetlinConfig, TsetlinMachine, booleanise, noisy_xor
from sim.bitwise.packing import pack_bits
from sim.errors import ModelError

# booleanisation per dataset: digits 0..16 -> 3-level thermometer (192 bits); Fashion-MNIST
# pixel > 75 (the threshold of the pyTsetlinMachine MNIST demo), 784 bits
BOOLEANISE = {"digits": {"method": "thermometer", "levels": 3},
              "fashion-mnist": {"method": "threshold", "threshold": 75 / 255}}
QUICK = {"noisy-xor": {"clauses": 10, "T": 15, "s": 3.9, "epochs": 200},
         "digits": {"clauses": 100, "T": 10, "s": 5.0, "epochs": 10},
         "fashion-mnist": {"clauses": 200, "T": 15, "s": 10.0, "epochs": 2}}
FULL = {"noisy-xor": {"clauses": 10, "T": 15, "s": 3.9, "epochs": 200},
        "digits": {"clauses": 400, "T": 20, "s": 5.0, "epochs": 40},
        "fashion-mnist": {"clauses": 1000, "T": 25, "s": 10.0, "epochs": 10}}
FASHION_QUICK = {"limit_train": 5000, "limit_test": 1000}


def load(dataset: str, seed: int = 0, quick: bool = True):
    """(x_train, y_train, x_test, y_test, n_classes) as booleans for ``dataset``."""
    name = dataset.replace("_", "-")
    if name == "noisy-xor":
        return (*noisy_xor(seed=seed), 2)
    if name not in BOOLEANISE:
        raise ModelError(f"tsetlin: dataset {dataset!r}; one of noisy-xor, "
                         f"{', '.join(BOOLEANISE)}")
    kw = FASHION_QUICK if name == "fashion-mnist" and quick else {}
    d = datasets.load(name, **kw)
    b = BOOLEANISE[name]
    return (booleanise(d.x_train, **b), d.y_train, booleanise(d.x_test, **b), d.y_test,
            d.n_classes)


def simulate(profile="cortex-m4", dataset="digits", seed: int = 0, quick: bool = True,
             progress: Progress | None = None, **overrides) -> RunResult:
    """Train a Tsetlin machine on ``dataset`` on a BitwiseDevice for ``profile`` and test it."""
    import sim
    dev = sim.device(profile)
    if dev.profile.kind != "bitwise":
        raise ModelError(f"tsetlin: profile {dev.profile.name!r} is of kind "
                         f"{dev.profile.kind!r}; the Tsetlin machine runs on bitwise profiles "
                         "(cortex-m4, cortex-m7, fpga-bnn)")
    x_tr, y_tr, x_te, y_te, n_cls = load(dataset, seed, quick)
    name = dataset.replace("_", "-")
    cfg = TsetlinConfig(**{**(QUICK if quick else FULL)[name], "seed": seed, **overrides})
    tm = TsetlinMachine(x_tr.shape[1], n_cls, cfg, dev)
    tm.fit(x_tr, y_tr, progress=progress)
    acc = tm.evaluate(x_te, y_te, scope="infer")["accuracy"]
    report = dev.ledger.price(dev.profile).per_sample_j()
    inc = tm.include()
    metrics = {"test_accuracy": acc,
               "energy_per_train_sample_j": report.get("train", float("nan")),
               "energy_per_inference_j": report.get("infer", float("nan")),
               "included_literals_per_clause": float(inc.sum(-1).mean()),
               "state_bytes": float(tm.state.nbytes),
               "model_bytes": float(2 * inc.size / 8)}
    config = {**asdict(cfg), "n_features": int(x_tr.shape[1]), "n_classes": n_cls,
              "word_bits": dev.word_bits, "booleanise": str(BOOLEANISE.get(name, "none"))}
    return RunResult("tsetlin", dev.profile, name, config, metrics, dev.ledger)


def experiment(quick: bool = True, seed: int = 0) -> dict:
    """Convergence study of the 2-bit operators: see :mod:`models.tsetlin_convergence`."""
    from models.tsetlin_convergence import study
    return study(quick=quick, seed=seed)


def export(target: str, out, *, seed: int = 0, quick: bool = True, progress=None,
           profile="cortex-m4", dataset="digits", n_golden: int = 16,
           force: bool = False) -> Path:
    """Train on ``dataset`` and write the C99 project of the clause layer (include masks in
    words, golden vectors from BitwiseDevice) to ``out``."""
    from deploy.c_export import export_c  # deploy sits above models: imported only here
    if target != "c":
        raise ModelError(f"tsetlin export: target {target!r}; the Tsetlin machine exports to "
                         "'c' only")
    import sim
    dev = sim.device(profile)
    x_tr, y_tr, x_te, _, n_cls = load(dataset, seed, quick)
    name = dataset.replace("_", "-")
    cfg = TsetlinConfig(**{**(QUICK if quick else FULL)[name], "seed": seed})
    tm = TsetlinMachine(x_tr.shape[1], n_cls, cfg, dev).fit(x_tr, y_tr, progress=progress)
    x = pack_bits(np.asarray(x_te[:n_golden]), dev.word_bits)
    return export_c([tm.clause_layer()], x, out, profile=profile, force=force)


CARD = register(ModelCard(
    name="tsetlin",
    title="The Tsetlin Machine (Granmo 2018) + Convergence Analysis of Tsetlin Machines "
          "under Noise-Free and Noisy Training Conditions (ICLR 2026)",
    reference="Granmo, arXiv:1804.01508; Jiao, Zhang, Granmo et al., ICLR 2026, "
              "OpenReview feOrSQdD9Y",
    claim="a bit-plane TM learns Noisy XOR to 100% and converges to absorbing x1 AND x2 "
          "clauses; OR with T > floor(m/2) never absorbs",
    device_kinds=("bitwise",),
    datasets=("digits", "fashion-mnist", "noisy-xor"),
    default_dataset="digits",
    default_profile="cortex-m4",
    simulate=simulate,
    exports=("c",),
    export=export,
    export_dataset="digits",
))
