"""Cost of counting: TorchDevice's op counting against plain torch and torch's FlopCounterMode.

One training epoch three ways in one run: plain torch (no counting), torch's own
``FlopCounterMode`` (the anchor: counts FLOPs of matmuls/convs only), and
``TorchDevice.count`` (every op, bytes, scopes per module, NeuroBench activity). Three
workloads (issue 36):

- ``small``: the MLP 784-1000-10, batch 128, Adam (the issue's);
- ``large``: an MLP 784-2048-2048-10, batch 128, Adam (large layers: the per-op cost of
  counting is a smaller share of each op);
- ``cnn``: a small CNN (conv 1-16 3x3, max-pool, conv 16-32 3x3, max-pool, linear 800-10)
  on 28 x 28 inputs, batch 64, SGD with momentum.

Each side trains the same epoch (every sample, the same batches); the three take turns,
``--repeats`` times, and the best CPU time per epoch of each is kept (one torch thread, so
CPU time is one core's). Prints the seconds per epoch and the slowdown ratios, and checks
that the MAC counts agree with the anchor (2 FLOPs per MAC) and that TorchDevice counted
one whole epoch. The device's cost memo (``sim.torch_engine.costs.CostMemo``) persists
across epochs, as it does across a training run's count blocks; its hits and misses are
printed. Last line: ``RESULT {json}`` with ``overhead_small``, ``overhead_large`` and
``overhead_cnn`` (counted / plain CPU time).

    .venv/bin/python bench/torch_counting.py [--samples 4096] [--repeats 3] [--quick]
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

import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import sim  # noqa: E402
from models.shared.training import seeded  # noqa: E402


def _mlp(widths, seed=0):
    with seeded(seed):   # torch's global RNG state untouched
        layers = []
        for a, b in zip(widths[:-1], widths[1:], strict=False):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers[:-1])


def _cnn(seed=0):
    with seeded(seed):
        nn = torch.nn
        return nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(32 * 5 * 5, 10))


# name -> (model factory, input shape of one sample, batch, optimizer factory)
WORKLOADS = {
    "small": (lambda: _mlp((784, 1000, 10)), (784,), 128,
              lambda p: torch.optim.Adam(p, foreach=True)),
    "large": (lambda: _mlp((784, 2048, 2048, 10)), (784,), 128,
              lambda p: torch.optim.Adam(p, foreach=True)),
    "cnn": (_cnn, (1, 28, 28), 64,
            lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, foreach=True)),
}


def _epoch(net, opt, x, y, batch):
    for s in range(0, len(x), batch):
        loss = torch.nn.functional.cross_entropy(net(x[s:s + batch]), y[s:s + batch])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def _timed(fns: dict, repeats: int) -> dict:
    """Best CPU seconds of each function over ``repeats`` turns (the functions alternate, so
    load on a shared machine hits all of them alike)."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t)
    return best


def run_workload(name: str, samples: int, repeats: int) -> dict:
    """Plain, FlopCounterMode and TorchDevice.count on one epoch of workload ``name``."""
    make, shape, batch, optim = WORKLOADS[name]
    g = torch.Generator().manual_seed(0)
    x = torch.rand(samples, *shape, generator=g)
    y = torch.randint(0, 10, (samples,), generator=g)

    net = make()
    opt = optim(net.parameters())
    _epoch(net, opt, x[:batch], y[:batch], batch)  # warm-up

    anchor_flops = 0

    def with_anchor():
        nonlocal anchor_flops
        with FlopCounterMode(display=False) as fc:
            _epoch(net, opt, x, y, batch)
        anchor_flops = fc.get_total_flops()

    dev = sim.device("x86-avx2")   # a cpu profile: the torch engine
    net2 = dev.compile(make())
    opt2 = optim(net2.parameters())

    def with_device():
        dev.reset()
        with dev.count("train", samples=samples):
            _epoch(net2, opt2, x, y, batch)
    best = _timed({"plain": lambda: _epoch(net, opt, x, y, batch),
                   "anchor": with_anchor, "ours": with_device}, repeats)
    macs = dev.ledger.total_ops()["mac_fp32"]
    counted = dev.ledger.samples()["train"]     # the last repeat's ledger (reset per repeat)
    if counted != samples:
        raise RuntimeError(f"bench: TorchDevice counted {counted} training samples, the "
                           f"epoch has {samples}")
    if 2 * macs != anchor_flops:
        raise RuntimeError(f"bench {name}: TorchDevice counted {macs} MACs, "
                           f"FlopCounterMode {anchor_flops} FLOPs")
    plain, anchor, ours = best["plain"], best["anchor"], best["ours"]
    return {"batch": batch, "samples": samples, "plain_s": plain, "flopcounter_s": anchor,
            "torchdevice_s": ours, "overhead": ours / plain,
            "flopcounter_overhead": anchor / plain, "macs": macs,
            # (an older checkout, run for comparison, has no memo)
            "memo_hits": getattr(getattr(dev, "cost_memo", None), "hits", None),
            "memo_misses": getattr(getattr(dev, "cost_memo", None), "misses", None),
            "uncounted": dev.ledger.uncounted()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=4096,
                    help="samples per epoch of the small MLP and the CNN; the large MLP "
                         "trains half of them (default 4096)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", help="comma-separated workloads (small, large, cnn)")
    ap.add_argument("--quick", action="store_true", help="1024 samples, 2 repeats")
    args = ap.parse_args()
    if args.quick:
        args.samples, args.repeats = 1024, 2
    torch.set_num_threads(1)
    names = args.only.split(",") if args.only else list(WORKLOADS)
    rows = {}
    for name in names:
        samples = args.samples // 2 if name == "large" else args.samples
        rows[name] = run_workload(name, samples, args.repeats)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, "
          f"{platform.processor() or platform.machine()}, load average "
          f"{os.getloadavg()[0]:.2f}; CPU time per epoch, best of {args.repeats} turns")
    print(f"{'workload':9s} {'samples':>7s} {'plain s':>8s} {'FlopCounter':>12s} "
          f"{'TorchDevice':>12s}  memo hits/misses")
    for name, r in rows.items():
        print(f"{name:9s} {r['samples']:7d} {r['plain_s']:8.3f} "
              f"{r['flopcounter_s']:7.3f} {r['flopcounter_overhead']:4.2f}x "
              f"{r['torchdevice_s']:7.3f} {r['overhead']:4.2f}x  "
              f"{r['memo_hits']}/{r['memo_misses']}")
    print("MACs agree with FlopCounterMode's FLOPs / 2 on every workload; every epoch counted "
          "whole")
    result = {"timer": "process_time", "threads": torch.get_num_threads(),
              "loadavg": os.getloadavg(), "workloads": rows}
    for name, r in rows.items():
        result[f"overhead_{name}"] = r["overhead"]
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
