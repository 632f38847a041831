"""Cost of counting: TorchDevice's op counting against plain torch and torch's FlopCounterMode.

One training epoch of an MLP (Adam, mini-batches) three ways in one run:
plain torch (no counting), torch's own ``FlopCounterMode`` (the anchor: counts FLOPs of
matmuls/convs only), and ``TorchDevice.count`` (every op, bytes, scopes per module).
Each side trains the same epoch (every sample, the same batches); the three take turns,
``--repeats`` times, and the best CPU time per epoch of each is kept (one torch thread, so
CPU time is one core's). Prints the seconds per epoch, the slowdown ratios, and checks that
the MAC counts agree with the anchor (2 FLOPs per MAC) and that TorchDevice counted one
whole epoch (``samples`` training samples). Last line: ``RESULT {json}``.

    .venv/bin/python bench/torch_counting.py [--hidden 1000] [--batch 128] [--samples 8192]
"""
from __future__ import annotations

import argparse
import json
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


def _model(n_in, hidden, n_out, seed=0):
    with seeded(seed):   # torch's global RNG state untouched
        return torch.nn.Sequential(torch.nn.Linear(n_in, hidden), torch.nn.ReLU(),
                                   torch.nn.Linear(hidden, n_out))


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=784)
    ap.add_argument("--hidden", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--samples", type=int, default=8192)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(args.samples, args.inputs, generator=g)
    y = torch.randint(0, 10, (args.samples,), generator=g)

    net = _model(args.inputs, args.hidden, 10)
    opt = torch.optim.Adam(net.parameters(), foreach=True)
    _epoch(net, opt, x[:args.batch], y[:args.batch], args.batch)  # warm-up

    anchor_flops = 0

    def with_anchor():
        nonlocal anchor_flops
        with FlopCounterMode(display=False) as fc:
            _epoch(net, opt, x, y, args.batch)
        anchor_flops = fc.get_total_flops()

    dev = sim.device("x86-avx2")   # a cpu profile: the torch engine
    net2 = dev.compile(_model(args.inputs, args.hidden, 10))
    opt2 = torch.optim.Adam(net2.parameters(), foreach=True)

    def with_device():
        dev.reset()
        with dev.count("train", samples=args.samples):
            _epoch(net2, opt2, x, y, args.batch)
    best = _timed({"plain": lambda: _epoch(net, opt, x, y, args.batch),
                   "anchor": with_anchor, "ours": with_device}, args.repeats)
    plain, anchor, ours = best["plain"], best["anchor"], best["ours"]
    macs = dev.ledger.total_ops()["mac_fp32"]
    counted = dev.ledger.samples()["train"]     # the last repeat's ledger (reset per repeat)
    if counted != args.samples:
        raise RuntimeError(f"bench: TorchDevice counted {counted} training samples, the "
                           f"epoch has {args.samples}")

    print(f"MLP {args.inputs}-{args.hidden}-10, {args.samples} samples, batch {args.batch}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{platform.processor() or platform.machine()}; CPU time, best of {args.repeats} "
          f"turns")
    print(f"plain torch          {plain:8.3f} s/epoch")
    print(f"FlopCounterMode      {anchor:8.3f} s/epoch  ({anchor / plain:.2f}x plain)")
    print(f"TorchDevice.count    {ours:8.3f} s/epoch  ({ours / plain:.2f}x plain, "
          f"{ours / anchor:.2f}x FlopCounterMode)")
    print(f"MACs: ours {macs}, anchor FLOPs/2 {anchor_flops // 2}, "
          f"agree: {2 * macs == anchor_flops}")
    result = {"timer": "process_time", "threads": torch.get_num_threads(),
              "train_samples_counted": counted, "plain_s": plain, "flopcounter_s": anchor,
              "torchdevice_s": ours,
              "overhead_vs_plain": ours / plain, "overhead_vs_flopcounter": ours / anchor,
              "macs": macs, "macs_agree_with_flopcounter": 2 * macs == anchor_flops,
              "uncounted": dev.ledger.uncounted()}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
