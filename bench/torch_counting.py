"""Cost of counting: TorchDevice's op counting against plain torch and torch's FlopCounterMode.

One training epoch seven ways in one run: plain torch (bare, no counting), torch's own
``FlopCounterMode`` (the anchor: counts FLOPs of matmuls/convs only), a dispatch mode that
only runs each op (the floor of any Python-level interception, for reference), the floor of
a C++ interception (a ``RecordFunction`` callback compiled here, which appends each op's name
and its input shapes and dtypes to a C++ buffer and prices nothing: what a counter that
intercepts in C++ and prices in Python only once per step signature would at least pay;
:data:`_CPP_FLOOR_SOURCE`, built with ``torch.utils.cpp_extension``, which needs ``g++`` and
``ninja``: Debian ``g++ ninja-build``; without them the side says why and the rest runs),
torch's own C++-side op interception, the profiler (``torch.profiler.profile`` with CPU
activity and ``record_shapes=True``: what a counter built on the profiler would pay), its
events read back afterwards as counting would need them (each aten event's name, input
shapes and dtypes, from the raw kineto events: the cheapest read; the public
``prof.events()`` builds a Python ``FunctionEvent`` per event and cost 3.8x bare torch on
the small MLP, 2,048 samples, in a one-off probe), ``TorchDevice.count`` counting every
op in full (every op, bytes, scopes per module, NeuroBench activity), and the same with
step replay (``TorchDevice(replay=True)``, ``sim/torch_engine/replay.py``). Three workloads
(issue 36):

- ``small``: the MLP 784-1000-10, batch 128, Adam (the issue's);
- ``large``: an MLP 784-2048-2048-10, batch 128, Adam (large layers: the per-op cost of
  counting is a smaller share of each op);
- ``cnn``: a small CNN (conv 1-16 3x3, max-pool, conv 16-32 3x3, max-pool, linear 800-10)
  on 28 x 28 inputs, batch 64, SGD with momentum.

Each side trains the same epoch (every sample, the same batches); the sides take turns,
``--repeats`` times, and the best CPU time per epoch of each is kept (one torch thread, so
CPU time is one core's). Checked, so that each side did the work it is timed for: every
side ran every batch of the epoch; the MAC counts agree with the anchor (2 FLOPs per MAC);
the profiler recorded, with its shapes, every op counting prices (the calls a dispatch mode
sees of ops that are not free, by name: at least as many events as calls; it also records
the composite ops above them); both TorchDevice sides counted one whole epoch; the replay
side's ledger equals the full side's (their nets start equal and train the same epochs, so
even the NeuroBench activity matches) and its last epoch replayed every step. The cost memo
and the recorded steps persist across epochs, as they do across a training run's count
blocks. One more replayed epoch, not timed as a side, is split with timers: the CPU time of
the layer recorder (NeuroBench activity and layer records, per module call) and of the
resident-footprint bookkeeping (per priced op), as shares of the bare epoch
(``replay_activity_share``, ``replay_footprint_share``): what replay pays above the
interception floor besides following its record, which a C++ interception would still pay
while they stay in Python. Last line:
``RESULT {json}`` with ``overhead_small``, ``overhead_large``, ``overhead_cnn`` (replay
counting / bare CPU time), ``overhead_full_<workload>`` (full counting / bare),
``profiler_overhead_<workload>`` (the profiler with its read-back / bare) and
``cpp_floor_overhead_<workload>`` (the C++ callback / bare; null when it could not be built).

``--write`` stores the RESULT in ``bench/out/torch_counting.json``, from which the table in
bench/RESULTS.md is rendered (:func:`summary_text`; tests/bench/test_torch_counting.py).

    .venv/bin/python bench/torch_counting.py [--samples 4096] [--repeats 3] [--quick] [--write]
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import time
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import sim  # noqa: E402
from bench._results import store  # noqa: E402
from models.shared.training import seeded  # noqa: E402
from sim.torch_engine.activity import LayerRecorder  # noqa: E402
from sim.torch_engine.costs import is_free  # noqa: E402
from sim.torch_engine.dispatch import ObserverMode  # noqa: E402
from sim.torch_engine.engine import _Resident  # noqa: E402


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


def _epoch(net, opt, x, y, batch) -> int:
    """One epoch; returns the steps it ran."""
    steps = 0
    for s in range(0, len(x), batch):
        loss = torch.nn.functional.cross_entropy(net(x[s:s + batch]), y[s:s + batch])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        steps += 1
    return steps


class _Floor(ObserverMode):
    """A dispatch mode that runs each op and nothing else: what intercepting costs."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class _OpNames(ObserverMode):
    """Counts, by name, the calls a dispatch mode sees of ops that are not free (counting
    prices them; views, allocations and profiler markers cost nothing: ``costs.is_free``).
    The profiler side's check."""

    def __init__(self):
        super().__init__()
        self.calls: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not is_free(func):
            name = func._schema.name
            self.calls[name] = self.calls.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


_CPP_FLOOR_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/record_function.h>
#include <string>
#include <unordered_map>
#include <vector>

// One entry per op the dispatcher runs: its name's id in `ids` (names interned in `table`:
// a RecordFunction may own its name and free it when it ends), its tensor inputs' sizes and
// dtypes appended to `shapes` (sizes, then -1 - dtype). Autograd's node markers carry no
// inputs: their id is -1 and their sequence number (the forward op's, what ties a backward
// op to its module) goes to `shapes`. Nothing is priced: the floor of intercepting in C++.
static std::unordered_map<std::string, int32_t> table;
static std::vector<std::string> table_names;
static std::vector<int32_t> ids;
static std::vector<int64_t> shapes;
static at::CallbackHandle handle = 0;

static int32_t intern(const char* name) {
  auto it = table.find(name);
  if (it != table.end()) return it->second;
  const auto id = static_cast<int32_t>(table_names.size());
  table.emplace(name, id);
  table_names.emplace_back(name);
  return id;
}

static std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  if (inputs.empty()) {
    ids.push_back(-1);
    shapes.push_back(fn.seqNr());
    return nullptr;
  }
  ids.push_back(intern(fn.name()));
  for (const auto& v : inputs) {
    if (!v.isTensor()) continue;
    const auto& t = v.toTensor();
    if (!t.defined()) continue;
    for (auto n : t.sizes()) shapes.push_back(n);
    shapes.push_back(-1 - static_cast<int64_t>(t.scalar_type()));
  }
  return nullptr;
}

void start() {
  ids.clear();
  shapes.clear();
  ids.reserve(1 << 16);
  shapes.reserve(1 << 20);
  handle = at::addGlobalCallback(
      at::RecordFunctionCallback(on_op).needsInputs(true).scopes(
          {at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

void stop() {
  at::removeCallback(handle);
  handle = 0;
}

// The ops recorded since start(), by name (read after the timed epoch: the check that
// the callback saw every op counting prices).
std::unordered_map<std::string, int64_t> counts() {
  std::unordered_map<std::string, int64_t> out;
  for (auto id : ids) {
    if (id >= 0) out[table_names[id]] += 1;
  }
  return out;
}

// Words in `shapes`: more than one per op, so the inputs were read (the bench checks it).
int64_t shape_words() { return static_cast<int64_t>(shapes.size()); }
"""


@functools.cache
def _cpp_floor():
    """The C++ callback module (built once per machine into torch's extension cache, loaded
    once per process), or the one-line reason it could not be built."""
    try:
        from torch.utils.cpp_extension import load_inline
        # -DNDEBUG: the headers' debug-only check rejects inputs() of autograd's node
        # markers, which carry none (an empty list in a release build)
        return load_inline("neuroedge_bench_op_floor", cpp_sources=_CPP_FLOOR_SOURCE,
                           functions=["start", "stop", "counts", "shape_words"],
                           extra_cflags=["-O2", "-DNDEBUG"], verbose=False)
    except Exception as e:      # no compiler, no ninja, headers missing: say which
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"


def _profiled_ops(epoch) -> list[tuple]:
    """Run ``epoch()`` under torch's profiler (CPU ops, input shapes recorded) and read
    back (name, input shapes, dtypes) of every event: the interception and the read-back a
    counter built on the profiler would need."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        epoch()
    return [(e.name(), e.shapes(), e.dtypes()) for e in prof.profiler.kineto_results.events()]


def _replay_split(epoch) -> dict[str, float]:
    """CPU seconds that one replayed ``epoch()`` spends in the layer recorder (NeuroBench
    activity and layer records, per module call) and in the resident-footprint bookkeeping
    (per priced op): what step replay pays above the interception floor besides following
    its record. Timers wrap both for this one extra epoch, which no side's time includes."""
    spent = {"activity": 0.0, "footprint": 0.0}

    def timer(fn, key):
        def timed(*args, **kwargs):
            t = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += time.process_time() - t
        return timed

    leave, touch = LayerRecorder.leave, _Resident.touch
    LayerRecorder.leave, _Resident.touch = timer(leave, "activity"), timer(touch, "footprint")
    try:
        epoch()
    finally:
        LayerRecorder.leave, _Resident.touch = leave, touch
    return spent


def _timed(fns: dict, repeats: int, clock=time.process_time, sync=None) -> dict:
    """Best ``clock`` seconds (CPU time by default) of each function over ``repeats`` turns
    (the functions alternate, so load on a shared machine hits all of them alike); ``sync``
    runs before and after each (a GPU's queued kernels timed with them)."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            if sync is not None:
                sync()
            t = clock()
            fn()
            if sync is not None:
                sync()
            best[name] = min(best[name], clock() - t)
    return best


def run_workload(name: str, samples: int, repeats: int, cpp_floor: bool = True) -> dict:
    """Bare, FlopCounterMode, the Python and (``cpp_floor``) C++ interception floors, the
    profiler, and TorchDevice.count in full and with step replay, on one epoch of workload
    ``name``."""
    make, shape, batch, optim = WORKLOADS[name]
    g = torch.Generator().manual_seed(0)
    x = torch.rand(samples, *shape, generator=g)
    y = torch.randint(0, 10, (samples,), generator=g)
    steps_per_epoch = -(-samples // batch)
    ran: dict[str, list[int]] = {}     # side -> steps each of its epochs ran

    def trained(side, steps):
        ran.setdefault(side, []).append(steps)

    net = make()
    opt = optim(net.parameters())
    _epoch(net, opt, x[:batch], y[:batch], batch)  # warm-up

    anchor_flops = 0

    def with_anchor():
        nonlocal anchor_flops
        with FlopCounterMode(display=False) as fc:
            trained("anchor", _epoch(net, opt, x, y, batch))
        anchor_flops = fc.get_total_flops()

    def with_floor():
        with _Floor():
            trained("floor", _epoch(net, opt, x, y, batch))

    profiled: list = []

    def with_profiler():
        profiled[:] = _profiled_ops(lambda: trained("profiler",
                                                    _epoch(net, opt, x, y, batch)))

    cpp = _cpp_floor() if cpp_floor else "not asked for (--no-cpp-floor)"
    cpp_counts: dict[str, int] = {}

    def with_cpp_floor():
        cpp.start()
        try:
            trained("cpp_floor", _epoch(net, opt, x, y, batch))
        finally:
            cpp.stop()

    devices, nets = {}, {}
    for side, replay in (("full", False), ("replay", True)):
        dev = devices[side] = sim.device("x86-avx2")   # a cpu profile: the torch engine
        dev.replay = replay
        net_side = nets[side] = dev.compile(make())      # the same initial weights
        opt_side = optim(net_side.parameters())

        def with_device(side=side, dev=dev, net_side=net_side, opt_side=opt_side):
            dev.reset()
            with dev.count("train", samples=samples):
                trained(side, _epoch(net_side, opt_side, x, y, batch))
        devices[side + "_fn"] = with_device
    replayed_before = [0]

    def with_replay():
        replayed_before[0] = devices["replay"].step_replay.replayed
        devices["replay_fn"]()

    sides = {"plain": lambda: trained("plain", _epoch(net, opt, x, y, batch)),
             "anchor": with_anchor, "floor": with_floor, "profiler": with_profiler,
             "full": devices["full_fn"], "replay": with_replay}
    if not isinstance(cpp, str):
        sides["cpp_floor"] = with_cpp_floor
    best = _timed(sides, repeats)
    # every side ran every batch of every epoch it was timed on
    for side, epochs in ran.items():
        if epochs != [steps_per_epoch] * repeats:
            raise RuntimeError(f"bench {name}: side {side} ran {epochs} steps per epoch, "
                               f"expected {steps_per_epoch} x {repeats}")
    # the profiler saw every op counting prices: one more epoch (not timed) names the priced
    # ops a dispatch mode gets; the last profiled epoch holds at least as many events of each
    names = _OpNames()
    with names:
        _epoch(net, opt, x, y, batch)
    events: dict[str, int] = {}
    for op, _, _ in profiled:
        events[op] = events.get(op, 0) + 1
    missed = {op: n for op, n in names.calls.items() if events.get(op, 0) < n}
    if missed:
        raise RuntimeError(f"bench {name}: the profiler recorded fewer events than the "
                           f"dispatch mode saw calls of {missed}")
    cpp_words = 0
    if not isinstance(cpp, str):   # the C++ callback too (its last timed epoch's record)
        cpp_counts = cpp.counts()
        missed = {op: n for op, n in names.calls.items() if cpp_counts.get(op, 0) < n}
        if missed:
            raise RuntimeError(f"bench {name}: the C++ callback recorded fewer ops than the "
                               f"dispatch mode saw calls of {missed}")
        # and it read their inputs: at least a size and a dtype per priced call
        cpp_words = cpp.shape_words()
        if cpp_words < 2 * sum(names.calls.values()):
            raise RuntimeError(f"bench {name}: the C++ callback recorded {cpp_words} shape "
                               f"words for {sum(names.calls.values())} priced calls")
    full, replayed = devices["full"], devices["replay"]
    macs = full.ledger.total_ops()["mac_fp32"]
    for side in ("full", "replay"):
        counted = devices[side].ledger.samples()["train"]   # the last repeat's ledger
        if counted != samples:
            raise RuntimeError(f"bench {name}: TorchDevice ({side}) counted {counted} "
                               f"training samples, the epoch has {samples}")
    if 2 * macs != anchor_flops:
        raise RuntimeError(f"bench {name}: TorchDevice counted {macs} MACs, "
                           f"FlopCounterMode {anchor_flops} FLOPs")
    if replayed.ledger != full.ledger:
        raise RuntimeError(f"bench {name}: the replayed epoch's ledger differs from the "
                           f"fully counted one")
    last = replayed.step_replay.replayed - replayed_before[0]
    if repeats > 1 and last != steps_per_epoch:
        raise RuntimeError(f"bench {name}: the last replay epoch replayed {last} of "
                           f"{steps_per_epoch} steps")
    plain = best["plain"]
    steps = replayed.step_replay
    split = _replay_split(devices["replay_fn"])   # after the checks: it trains one more epoch
    return {"batch": batch, "samples": samples, "plain_s": plain,
            "flopcounter_s": best["anchor"], "floor_s": best["floor"],
            "profiler_s": best["profiler"], "profiler_overhead": best["profiler"] / plain,
            "profiler_events": len(profiled), "priced_calls": sum(names.calls.values()),
            "cpp_floor_s": None if isinstance(cpp, str) else best["cpp_floor"],
            "cpp_floor_overhead": None if isinstance(cpp, str) else best["cpp_floor"] / plain,
            "cpp_floor_ops": sum(cpp_counts.values()), "cpp_floor_shape_words": cpp_words,
            "cpp_floor_not_built": cpp if isinstance(cpp, str) else None,
            "full_s": best["full"], "replay_s": best["replay"],
            "overhead": best["replay"] / plain, "overhead_full": best["full"] / plain,
            "flopcounter_overhead": best["anchor"] / plain,
            "floor_overhead": best["floor"] / plain, "macs": macs,
            "memo_hits": full.cost_memo.hits, "memo_misses": full.cost_memo.misses,
            "steps_replayed": steps.replayed, "steps_recorded": steps.recorded,
            "steps_diverged": steps.diverged, "uncounted": full.ledger.uncounted(),
            "replay_activity_share": split["activity"] / plain,
            "replay_footprint_share": split["footprint"] / plain}


RESULT_FILE = Path(__file__).resolve().parents[1] / "bench" / "out" / "torch_counting.json"
LABELS = {"small": "`small`: MLP 784-1000-10, batch 128, Adam",
          "large": "`large`: MLP 784-2048-2048-10, batch 128, Adam",
          "cnn": "`cnn`: conv 16, pool, conv 32, pool, linear; batch 64, SGD momentum"}


def _split_text(r: dict) -> str:
    """The replay side's activity and footprint shares of bare time ("0.06 / 0.04"), or
    "not measured" in a RESULT from before they were."""
    if "replay_activity_share" not in r:
        return "not measured"
    return f"{r['replay_activity_share']:.2f} / {r['replay_footprint_share']:.2f}"


def summary_text(result: dict) -> str:
    """The bench/RESULTS.md table of a stored RESULT: CPU time per epoch and each side's
    ratio to bare torch."""
    lines = ["| workload | samples | bare s/epoch | FlopCounterMode | interception floor | "
             "C++ callback floor | torch profiler + read-back | full counting | "
             "**step replay** | of which activity / footprint | "
             "steps replayed / recorded / diverged |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in result["workloads"].items():
        cpp = r.get("cpp_floor_overhead")
        lines.append(f"| {LABELS[name]} | {r['samples']} | {r['plain_s']:.3f} | "
                     f"{r['flopcounter_overhead']:.2f}x | {r['floor_overhead']:.2f}x | "
                     f"{'not built' if cpp is None else f'{cpp:.2f}x'} | "
                     f"{r['profiler_overhead']:.2f}x | "
                     f"{r['overhead_full']:.2f}x | **{r['overhead']:.2f}x** | "
                     f"{_split_text(r)} | {r['steps_replayed']} / {r['steps_recorded']} / "
                     f"{r['steps_diverged']} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=4096,
                    help="samples per epoch of the small MLP and the CNN; the large MLP "
                         "trains half of them (default 4096)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", help="comma-separated workloads (small, large, cnn)")
    ap.add_argument("--quick", action="store_true", help="1024 samples, 2 repeats")
    ap.add_argument("--no-cpp-floor", action="store_true",
                    help="skip the C++ callback side (it compiles an extension: ~1 min "
                         "the first time on a machine)")
    ap.add_argument("--write", action="store_true",
                    help=f"store the RESULT in {RESULT_FILE.relative_to(RESULT_FILE.parents[2])}")
    args = ap.parse_args()
    if args.quick:
        args.samples, args.repeats = 1024, 2
    torch.set_num_threads(1)
    names = args.only.split(",") if args.only else list(WORKLOADS)
    rows = {}
    for name in names:
        samples = args.samples // 2 if name == "large" else args.samples
        rows[name] = run_workload(name, samples, args.repeats, not args.no_cpp_floor)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, "
          f"{platform.processor() or platform.machine()}, load average "
          f"{os.getloadavg()[0]:.2f}; CPU time per epoch, best of {args.repeats} turns")
    print(f"{'workload':9s} {'samples':>7s} {'bare s':>7s} {'FlopCounter':>12s} "
          f"{'floor':>12s} {'C++ floor':>12s} {'profiler':>12s} {'full count':>12s} "
          f"{'replay':>12s}  replayed/recorded/diverged")
    for name, r in rows.items():
        cpp = ("   not built   " if r["cpp_floor_s"] is None else
               f"{r['cpp_floor_s']:7.3f} {r['cpp_floor_overhead']:4.2f}x")
        print(f"{name:9s} {r['samples']:7d} {r['plain_s']:7.3f} "
              f"{r['flopcounter_s']:7.3f} {r['flopcounter_overhead']:4.2f}x "
              f"{r['floor_s']:7.3f} {r['floor_overhead']:4.2f}x {cpp} "
              f"{r['profiler_s']:7.3f} {r['profiler_overhead']:4.2f}x "
              f"{r['full_s']:7.3f} {r['overhead_full']:4.2f}x "
              f"{r['replay_s']:7.3f} {r['overhead']:4.2f}x  "
              f"{r['steps_replayed']}/{r['steps_recorded']}/{r['steps_diverged']}  "
              f"(replay: activity {r['replay_activity_share']:.2f}, footprint "
              f"{r['replay_footprint_share']:.2f} of bare)")
    for name, r in rows.items():
        if r["cpp_floor_not_built"]:
            print(f"{name}: the C++ callback was not built ({r['cpp_floor_not_built']})")
    print("every side ran every batch; MACs agree with FlopCounterMode's FLOPs / 2; the "
          "profiler and the C++ callback recorded every priced op; both counted epochs "
          "whole; replay ledger == full ledger")
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "torch": torch.__version__, "cpus": os.cpu_count(),
              "timer": "process_time", "threads": torch.get_num_threads(),
              "loadavg": os.getloadavg(), "workloads": rows}
    for name, r in rows.items():
        result[f"overhead_{name}"] = r["overhead"]
        result[f"overhead_full_{name}"] = r["overhead_full"]
        result[f"profiler_overhead_{name}"] = r["profiler_overhead"]
        result[f"cpp_floor_overhead_{name}"] = r["cpp_floor_overhead"]
    result["command"] = " ".join(["bench/torch_counting.py"] + sys.argv[1:])
    if args.write:
        store(RESULT_FILE, result)
    print(summary_text(result))
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
