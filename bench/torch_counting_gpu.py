"""Cost of counting on a GPU (issue 36 item 1, its CUDA half): the MLP epoch of
``bench/torch_counting.py`` (784-1000-10, batch 128, Adam) and ResNet-18 training steps
(batch 64, SGD with momentum) in plain torch, under a do-nothing dispatch mode (the floor of
a Python interception) and under ``TorchDevice.count`` in full and with step replay, on the
``h100`` profile (the torch engine runs on CUDA when it exists).

Made for a lent NVIDIA GPU; without one it runs on the CPU, says so, and its figures are not
the CUDA target's (a quick check that it runs: ``--quick``). Wall-clock time: each turn ends
with ``torch.cuda.synchronize()``, so queued kernels are timed, and what counting costs the
host shows only where the GPU has to wait for it (a read-back of a device value makes it
wait: the NeuroBench activity counts stay on the device until the block ends,
sim/torch_engine/activity.py). The sides take turns, ``--repeats`` times; the best time of
each is kept.

Checked, so that each side did the work it is timed for: every side ran every step; both
counted sides counted every step; the replay side's op counts and bytes equal the full
side's (both nets start equal and train on the same batches; activity counts are not
compared, as GPU kernels need not be bitwise deterministic) and its last turn replayed every
step.

    python bench/torch_counting_gpu.py [--repeats 3] [--steps 20] [--quick] [--write]

Last line: ``RESULT {json}`` with ``overhead_mlp`` and ``overhead_resnet18`` (replay counting
/ bare wall time), ``overhead_full_<workload>`` and ``floor_overhead_<workload>``, and
``cuda`` (whether it ran on a GPU). ``--write`` stores it in ``bench/out/torch_counting_gpu.json``
(a CPU run is refused: it would not be the GPU's figure).
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import sim  # noqa: E402
from bench._results import store  # noqa: E402
from bench.gpu_measure import resnet18  # noqa: E402
from bench.torch_counting import _epoch, _Floor, _mlp, _timed  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "torch_counting_gpu.json"


def _workloads(quick: bool, cuda: bool, steps: int, samples: int) -> dict:
    """name -> (model factory, input shape of a sample, batch, steps a turn, optimizer).
    ResNet-18 on 224 x 224 images on a GPU; 32 x 32 on the CPU (224 would take minutes a
    turn there)."""
    image = 224 if cuda else 32
    if quick:
        samples, steps, image = 512, 3, 32
    return {
        "mlp": (lambda: _mlp((784, 1000, 10)), (784,), 128, -(-samples // 128),
                lambda p: torch.optim.Adam(p, foreach=True)),
        "resnet18": (lambda: resnet18(10), (3, image, image), 64, steps,
                     lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, foreach=True)),
    }


def _ops_and_bytes(ledger) -> dict:
    """Scope -> (op counts, bytes moved): what pricing reads, apart from the activity."""
    return {s: (ledger.ops(s), ledger.bytes(s)) for s in ledger.scopes()}


def run_workload(name: str, spec: tuple, repeats: int, device: torch.device) -> dict:
    """Bare, the Python floor, and TorchDevice.count in full and with step replay on
    workload ``name`` (:func:`_workloads`) on ``device``; the checks in the module doc."""
    make, shape, batch, steps, optim = spec
    g = torch.Generator().manual_seed(0)
    x = torch.rand(steps * batch, *shape, generator=g).to(device)
    y = torch.randint(0, 10, (steps * batch,), generator=g).to(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else None
    ran: dict[str, list[int]] = {}

    def trained(side, n):
        ran.setdefault(side, []).append(n)

    torch.manual_seed(0)
    template = make()
    net = copy.deepcopy(template).to(device)
    opt = optim(net.parameters())
    _epoch(net, opt, x[:batch], y[:batch], batch)    # warm-up: kernels chosen, memory held

    devices = {}
    for side, replay in (("full", False), ("replay", True)):
        dev = sim.device("h100")        # a GPU profile: torch on CUDA when there is one
        dev.replay = replay
        net_side = dev.compile(copy.deepcopy(template))   # the same initial weights
        if next(net_side.parameters()).device.type != device.type:   # cuda:0 is cuda
            raise RuntimeError(f"bench {name}: TorchDevice put the net on "
                               f"{next(net_side.parameters()).device}, expected {device}")
        opt_side = optim(net_side.parameters())

        def with_device(side=side, dev=dev, net_side=net_side, opt_side=opt_side):
            dev.reset()
            with dev.count("train", samples=steps * batch):
                trained(side, _epoch(net_side, opt_side, x, y, batch))
        devices[side] = (dev, with_device)

    def with_floor():
        with _Floor():
            trained("floor", _epoch(net, opt, x, y, batch))

    replayed_before = [0]

    def with_replay():
        replayed_before[0] = devices["replay"][0].step_replay.replayed
        devices["replay"][1]()

    # one untimed turn each: the first steps of a key are counted in full and recorded, the
    # optimizer's first step makes its state (a step that diverges); a training run pays that
    # once, not every epoch
    for _, warm_up in devices.values():
        warm_up()
    ran.clear()
    best = _timed({"bare": lambda: trained("bare", _epoch(net, opt, x, y, batch)),
                   "floor": with_floor, "full": devices["full"][1], "replay": with_replay},
                  repeats, clock=time.perf_counter, sync=sync)
    for side, turns in ran.items():
        if turns != [steps] * repeats:
            raise RuntimeError(f"bench {name}: side {side} ran {turns} steps a turn, "
                               f"expected {steps} x {repeats}")
    full, replayed = devices["full"][0], devices["replay"][0]
    for side, dev in (("full", full), ("replay", replayed)):
        counted = dev.ledger.samples().get("train", 0)
        if counted != steps * batch:
            raise RuntimeError(f"bench {name}: the {side} side counted {counted} samples, "
                               f"expected {steps * batch}")
    if _ops_and_bytes(replayed.ledger) != _ops_and_bytes(full.ledger):
        raise RuntimeError(f"bench {name}: step replay counted other ops or bytes than full "
                           "counting")
    replay_last = replayed.step_replay.replayed - replayed_before[0]
    if replay_last != steps:
        raise RuntimeError(f"bench {name}: the last replay turn replayed {replay_last} of "
                           f"{steps} steps")
    bare = best["bare"]
    return {"batch": batch, "steps": steps, "input": list(shape), "bare_s": bare,
            "floor_s": best["floor"], "full_s": best["full"], "replay_s": best["replay"],
            "floor_overhead": best["floor"] / bare, "overhead_full": best["full"] / bare,
            "overhead": best["replay"] / bare}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20, help="ResNet-18 steps a turn (20)")
    ap.add_argument("--samples", type=int, default=4096, help="MLP samples an epoch (4096)")
    ap.add_argument("--quick", action="store_true",
                    help="a check that it runs: 512 MLP samples, 3 ResNet steps on 32 x 32")
    ap.add_argument("--write", action="store_true",
                    help=f"store the RESULT in {OUT.relative_to(OUT.parents[2])} (GPU only)")
    args = ap.parse_args()
    for flag in ("repeats", "steps", "samples"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    cuda = torch.cuda.is_available()
    if args.write and not cuda:
        ap.error("--write stores the GPU's figures; this machine has no CUDA device")
    device = torch.device("cuda" if cuda else "cpu")
    name = torch.cuda.get_device_name() if cuda else "CPU"
    if not cuda:
        print("no CUDA device: ran on the CPU (ResNet-18 on 32 x 32 images); these are not "
              "the CUDA target's figures")
    print(f"torch {torch.__version__}, {name}; wall time per turn, synchronised, best of "
          f"{args.repeats}")
    print(f"{'workload':10} {'steps':>6} {'bare s':>8} {'floor':>14} {'full count':>14} "
          f"{'replay':>14}")
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "torch": torch.__version__, "device": name, "cuda": cuda, "workloads": {}}
    for wl, spec in _workloads(args.quick, cuda, args.steps, args.samples).items():
        r = result["workloads"][wl] = run_workload(wl, spec, args.repeats, device)
        print(f"{wl:10} {r['steps']:>6} {r['bare_s']:>8.3f} "
              + " ".join(f"{r[k + '_s']:>7.3f} {r[k + '_s'] / r['bare_s']:>5.2f}x"
                         for k in ("floor", "full", "replay")))
        result[f"overhead_{wl}"] = r["overhead"]
        result[f"overhead_full_{wl}"] = r["overhead_full"]
        result[f"floor_overhead_{wl}"] = r["floor_overhead"]
    print("every side ran every step; both counted sides counted every step; replay's ops "
          "and bytes == full counting's; the last replay turn replayed every step")
    result["command"] = " ".join(["bench/torch_counting_gpu.py", *sys.argv[1:]])
    if args.write:
        store(OUT, result)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
