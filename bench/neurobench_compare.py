"""NeuroBench metrics: neuroedge's counts against the ``neurobench`` package, same weights.

The ``neurobench`` package runs in its own environment (it pins its own dependencies):

    python3 -m venv bench/.venv-neurobench
    bench/.venv-neurobench/bin/pip install torch==2.13.0
    bench/.venv-neurobench/bin/pip install neurobench      # keeps torch 2.13.0

Then, from the repository root, with neuroedge's environment:

    PYTHONPATH=$PWD .venv/bin/python bench/neurobench_compare.py

This side builds two models with seeded weights and inputs and saves them
(``bench/out/neurobench_compare.pt``): the MLP card's network (``models.baselines.mlp``:
64-32-10 with ReLU, digits-sized) with weights below 0.05 in magnitude pruned to zero, on
64 non-negative inputs with zeros; and an snnTorch network (20 -> Leaky -> 16 -> Leaky -> 4,
biases, beta 0.9, subtract reset) on 8 samples x 25 steps of Bernoulli(0.3) spikes. It
counts both on the torch engine (``sim.neurobench.metrics``), runs the other environment's
``neurobench.benchmarks.Benchmark`` on the saved file (``--neurobench-side``), and prints
both sides and their ratio.

A third column runs the same spiking network the way a chip would: exported by snnTorch's
``export_to_nir``, read by ``deploy.nir_import`` and run on the neuromorphic engine
(``loihi``, float weights so the spikes are snnTorch's), one sample after the other. Its
ActivationSparsity and Effective_ACs follow from the spikes and should equal NeuroBench's;
ParameterCount and Footprint are the module's own (``estimate_spiking_module`` counts its
parameters and buffers, NeuroBench's definitions; the chip's synapse memory is reported
apart, ``placement_report()["chip_synapse_memory_bytes"]``); Dense (stored synapses x
steps) and MembraneUpdates (every neuron every step) are the chip's readings of those
metrics and are expected to differ (see docs/pricing.md).

The ``neurobench`` package is in the dev extra; where it is importable the script calls it
in-process, else it runs the separate environment below.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch import nn  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "neurobench_compare.pt"
VENV_PY = HERE / ".venv-neurobench" / "bin" / "python"
NAMES = ("Footprint", "ParameterCount", "ConnectionSparsity", "ActivationSparsity",
         "SynapticOperations", "MembraneUpdates")


def mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def snn_net():
    import snntorch as snn
    return nn.Sequential(
        nn.Linear(20, 16), snn.Leaky(beta=0.9, init_hidden=True, reset_mechanism="subtract"),
        nn.Linear(16, 4), snn.Leaky(beta=0.9, init_hidden=True, output=True,
                                    reset_mechanism="subtract"))


def make_models() -> dict:
    # seeded without touching torch's global RNG: the same draws as a global seed of 14
    from models.shared.training import seeded
    with seeded(14):
        net = mlp()
        with torch.no_grad():
            for m in net:
                if isinstance(m, nn.Linear):
                    m.weight[m.weight.abs() < 0.05] = 0.0
        x = torch.relu(torch.randn(64, 64))               # about half the inputs are zero
        s = snn_net()
        spikes = (torch.rand(8, 25, 20) < 0.3).float()    # (batch, steps, features)
    return {"mlp": net.state_dict(), "mlp_x": x, "snn": s.state_dict(), "snn_x": spikes}


# -- this side ---------------------------------------------------------------------------
def ours(saved: dict) -> dict:
    from snntorch import utils

    from sim.neurobench import metrics
    from sim.torch_engine.engine import TorchDevice
    out = {}
    dev = TorchDevice("a100", prefer_cuda=False)
    net = mlp()
    net.load_state_dict(saved["mlp"])
    net = dev.compile(net)
    dev.run(net, saved["mlp_x"])
    out["mlp"] = metrics(dev.ledger)
    dev = TorchDevice("a100", prefer_cuda=False)
    net = snn_net()
    net.load_state_dict(saved["snn"])
    net = dev.compile(net)
    x = saved["snn_x"]
    utils.reset(net)
    with torch.no_grad(), dev.count("infer", samples=x.shape[0]):
        for t in range(x.shape[1]):
            net(x[:, t])
    out["snn"] = metrics(dev.ledger)
    return out


def ours_on_chip(saved: dict) -> dict:
    """The spiking network through NIR on the neuromorphic engine, per sample, summed."""
    import warnings

    from neuroedge import estimate_spiking_module
    from sim.ledger import Ledger
    from sim.neurobench import metrics
    total = Ledger()
    x = saved["snn_x"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # the reset warning: subtract is snnTorch's
        for sample in x:                      # (steps, features), time first
            # a fresh module per sample: its static facts as before a run, as NeuroBench's
            est = estimate_spiking_module(chip_snn(saved), sample, ["loihi"], quantize=False)
            total.merge(est.ledgers["loihi"])
    return metrics(total, "infer")


def chip_snn(saved: dict):
    """The spiking network as snnTorch's NIR export needs it: per-neuron beta and threshold
    (the same 0.9 and 1.0), the saved weights."""
    import snntorch as snn
    net = nn.Sequential(
        nn.Linear(20, 16), snn.Leaky(beta=torch.full((16,), 0.9), threshold=torch.ones(16),
                                     init_hidden=True, reset_mechanism="subtract"),
        nn.Linear(16, 4), snn.Leaky(beta=torch.full((4,), 0.9), threshold=torch.ones(4),
                                    init_hidden=True, output=True, reset_mechanism="subtract"))
    weights = {k: v for k, v in saved["snn"].items() if k.split(".")[0] in ("0", "2")}
    net.load_state_dict(weights, strict=False)
    return net


# -- the neurobench side (run in bench/.venv-neurobench) ----------------------------------
def theirs(saved: dict) -> dict:
    from neurobench.benchmarks import Benchmark
    from neurobench.metrics.static import ConnectionSparsity, Footprint, ParameterCount
    from neurobench.metrics.workload import (
        ActivationSparsity,
        MembraneUpdates,
        SynapticOperations,
    )
    from neurobench.models import SNNTorchModel, TorchModel
    from torch.utils.data import DataLoader, TensorDataset
    static = [Footprint, ParameterCount, ConnectionSparsity]
    workload = [ActivationSparsity, SynapticOperations, MembraneUpdates]
    canon = {n.lower(): n for n in NAMES}
    out = {}
    for name, build, wrap in (("mlp", mlp, TorchModel), ("snn", snn_net, SNNTorchModel)):
        net = build()
        net.load_state_dict(saved[name])
        x = saved[f"{name}_x"]
        data = DataLoader(TensorDataset(x, torch.zeros(x.shape[0])), batch_size=x.shape[0])
        bench = Benchmark(wrap(net), data, [], [], [static, workload])
        res = bench.run(quiet=True)
        out[name] = {canon[k.replace("_", "").lower()]: (dict(v) if isinstance(v, dict)
                                                           else float(v))
                     for k, v in res.items()}
    return out


def _flat(m: dict) -> dict:
    flat = {}
    for k in NAMES:
        v = m[k]
        if isinstance(v, dict):
            flat.update({f"{k}.{kk}": float(vv) for kk, vv in v.items()})
        else:
            flat[k] = float(v)
    return flat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--neurobench-side", action="store_true",
                    help="compute the neurobench package's values of the saved file (run "
                         "with bench/.venv-neurobench's python) and print them as JSON")
    args = ap.parse_args()
    if args.neurobench_side:
        print(json.dumps(theirs(torch.load(OUT))))
        return
    OUT.parent.mkdir(exist_ok=True)
    torch.save(make_models(), OUT)
    saved = torch.load(OUT)
    mine = ours(saved)
    try:   # the dev extra installs neurobench beside neuroedge (it keeps torch's pin)
        import neurobench  # noqa: F401
        other = json.loads(json.dumps(theirs(torch.load(OUT))))
    except ImportError:
        if not VENV_PY.exists():
            sys.exit(f"neurobench_compare: neurobench is not installed and {VENV_PY} is "
                     "missing; pip install neurobench, or make it as the docstring says")
        done = subprocess.run([str(VENV_PY), __file__, "--neurobench-side"], check=True,
                              capture_output=True, text=True)
        other = json.loads(done.stdout.strip().splitlines()[-1])
    def ratio(a, b):
        return a / b if b else (1.0 if a == b else math.inf)

    sides = {"mlp": (_flat(mine["mlp"]), _flat(other["mlp"]), "neuroedge"),
             "snn": (_flat(mine["snn"]), _flat(other["snn"]), "neuroedge"),
             "snn_chip": (_flat(ours_on_chip(saved)), _flat(other["snn"]), "chip")}
    titles = {"mlp": "mlp", "snn": "snn", "snn_chip": "snn through NIR on loihi (float weights)"}
    worst = {}
    for name, (a, b, ours_label) in sides.items():
        print(f"\n{titles[name]}: {'metric':36s} {ours_label:>14s} {'neurobench':>14s} "
              f"{'ratio':>8s}")
        for k in a:
            print(f"{'':5s}{k:36s} {a[k]:14.6g} {b[k]:14.6g} {ratio(a[k], b[k]):8.4f}")
        worst[name] = max(a, key=lambda k: abs(ratio(a[k], b[k]) - 1.0))
    try:   # NeuroBench's Footprint of the chip column's own module (per-neuron buffers)
        from neurobench.metrics.static import Footprint
        from neurobench.models import TorchModel
        print(f"\nneurobench Footprint of the chip column's module (per-neuron beta and "
              f"threshold): {Footprint()(TorchModel(chip_snn(saved)))}")
    except ImportError:
        pass
    # the metric furthest from neurobench's value, per network and side
    print("RESULT " + json.dumps({name: {"furthest": k, "ratio": round(
        ratio(sides[name][0][k], sides[name][1][k]), 6)} for name, k in worst.items()}))

if __name__ == "__main__":
    main()
