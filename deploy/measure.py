"""``neuroedge measure FILE.py:factory --input-shape ... --profile P``: run a model of your
own for real on this machine and print the predicted price (``deploy.estimate.estimate`` on
profile P) beside the measured latency and, where a counter exists, energy.

Timing: ``warmup`` untimed calls, then ``repeats`` timed calls; the median is reported with
the spread (min and max). On CUDA every call is synchronised before the clock is read.
Energy: NVML (through ``pynvml``, package ``nvidia-ml-py``) on an NVIDIA GPU; RAPL through
``/sys/class/powercap`` on a CPU where its counter is readable; otherwise one line says
energy is not measurable here. ``--calibrate`` is :mod:`deploy.calibrate`.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from sim.errors import ModelError

RAPL_ENERGY = Path("/sys/class/powercap/intel-rapl:0/energy_uj")


# a first call this many times the warmed median, with a prediction this many times the
# median too, did one-time work (a cache, lazy set-up): the prediction prices that first call,
# the median does not see it, and the table says so. Any torch model's first call takes
# 3-7x its warmed median here (allocator, dispatch caches), hence 10x and the second test
FIRST_CALL_NOTE_RATIO = 10.0


@dataclass(frozen=True)
class Timing:
    """Seconds per call: median of the repeats and their spread; ``first_s`` the very first
    call (the first warm-up call, or the first timed one without warm-up)."""
    median_s: float
    min_s: float
    max_s: float
    repeats: int
    first_s: float


def time_calls(fn, *, warmup: int, repeats: int, clock=time.perf_counter, sync=None) -> Timing:
    """Call ``fn`` ``warmup`` times untimed (the first of them timed alone, as
    ``first_s``), then ``repeats`` times, each timed alone with ``clock``; ``sync`` (e.g.
    ``torch.cuda.synchronize``) runs before each clock read so an asynchronous device has
    finished."""
    if repeats < 1 or warmup < 0:
        raise ModelError(f"--repeats {repeats}, --warmup {warmup}: expected --repeats >= 1 "
                         "and --warmup >= 0")

    def timed():
        if sync:
            sync()
        t0 = clock()
        fn()
        if sync:
            sync()
        return clock() - t0

    first = timed() if warmup else None
    for _ in range(warmup - 1):
        fn()
    times = [timed() for _ in range(repeats)]
    return Timing(statistics.median(times), min(times), max(times), repeats,
                  times[0] if first is None else first)


class NvmlEnergy:
    """The GPU's cumulative energy counter (mJ since driver load) read through pynvml."""

    def __init__(self, pynvml, index: int = 0):
        self._nvml = pynvml
        pynvml.nvmlInit()
        self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        self.read_j()   # a board without the counter (before Volta, some vGPUs) raises here
        self.name = "NVML total energy (GPU board)"

    def read_j(self) -> float:
        return self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle) / 1000.0


class RaplEnergy:
    """The CPU package's RAPL counter (uJ) under /sys/class/powercap."""

    def __init__(self, path: Path = RAPL_ENERGY):
        self._path = path
        self.read_j()
        self.name = f"RAPL {path.parent.name} (CPU package)"

    def read_j(self) -> float:
        return int(self._path.read_text()) / 1e6


def energy_meter(device: str):
    """A meter for ``device`` ("cuda" or "cpu"), or ``(None, why)`` when none is readable."""
    if device == "cuda":
        try:
            import pynvml
            return NvmlEnergy(pynvml), ""
        except Exception as exc:   # no package, no driver, a GPU without the counter
            return None, f"NVML not readable ({type(exc).__name__}: {exc})"
    try:
        return RaplEnergy(), ""
    except OSError as exc:
        return None, f"no readable RAPL counter ({RAPL_ENERGY}: {exc.strerror or exc})"


def measure_energy(fn, meter, *, repeats: int, sync=None) -> float:
    """Joules per call: the counter's difference over ``repeats`` calls, divided by them."""
    if sync:
        sync()
    e0 = meter.read_j()
    for _ in range(repeats):
        fn()
    if sync:
        sync()
    return (meter.read_j() - e0) / repeats


def run_measure(model, example, profile: str, *, device: str, warmup: int, repeats: int,
                seed: int = 0, clock=time.perf_counter, meter_for=energy_meter) -> dict:
    """Predicted (``estimate`` on ``profile``) and measured figures of one inference.
    ``example``: the input's shape (standard normal values drawn with ``seed``), the input
    tensor itself (token ids), or a tuple of tensors (a model's several inputs, in its
    forward's order); the count and the timed run see the same inputs."""
    import torch

    from deploy.estimate import estimate, example_inputs
    if "," in str(profile):
        raise ModelError(f"--profile {profile!r}: measure compares one profile with this "
                         "machine; give one (run it once per profile, or 'neuroedge "
                         "estimate --profile A,B' for the prices alone)")
    if isinstance(example, tuple) and example and all(
            isinstance(t, torch.Tensor) for t in example):
        inputs = example
    elif isinstance(example, torch.Tensor):
        inputs = (example,)
    else:
        inputs = (example_inputs(tuple(example), type(model).__name__, seed, like=model)[0][0],)
    est = estimate(model, inputs if len(inputs) > 1 else inputs[0], profiles=profile,
                   seed=seed)
    if not est.reports:
        why = "; ".join(f"{k}: {v}" for k, v in est.skipped.items())
        raise ModelError(f"profile {profile!r}: the model cannot be priced there ({why})")
    row = est.rows()[0]
    net = model.to(device)
    try:
        net.eval()
    except NotImplementedError:   # torch.export's module: its mode was fixed at export
        pass
    xs = tuple(t.to(device) for t in inputs)
    sync = torch.cuda.synchronize if device == "cuda" else None

    def call():
        net(*xs)

    from deploy.estimate import ExampleInputs, forward_errors
    meter, why = meter_for(device)   # a failing meter is not the model's failure
    # the count ran on a copy; the timed calls run the model itself, and a model that keeps
    # state between calls can fail there: one line, as the count's forward. no_grad is
    # entered once, outside the clock: entering it per call cost ~2 us, 15-20% of a small
    # model's call
    with forward_errors(net, ExampleInputs(xs), type(model).__name__, command="measure",
                        again=f"timed on {device} ({warmup} warm-up, {repeats} repeats)"), \
            torch.no_grad():
        timing = time_calls(call, warmup=warmup, repeats=repeats, clock=clock, sync=sync)
        energy = measure_energy(call, meter, repeats=repeats, sync=sync) if meter else None
    if energy is not None and not energy > 0:
        # a counter that did not tick in the window (RAPL updates about once a millisecond)
        # or wrapped: no reading, not a division by zero or negative joules
        energy, why = None, (f"the {meter.name} counter read {energy * repeats:.4g} J over "
                             f"{repeats} calls (not a positive reading: it did not update in "
                             "so short a window, or wrapped); give more --repeats")
    notes = [line for line in (est.uncounted_line(), *est.notes) if line]
    if (warmup and timing.first_s > FIRST_CALL_NOTE_RATIO * timing.median_s
            and row["latency_s"] > FIRST_CALL_NOTE_RATIO * timing.median_s):
        notes.append(f"the first call took {timing.first_s:.4g} s, "
                     f"{timing.first_s / timing.median_s:.3g}x the warmed median: the "
                     "prediction prices a first call (one-time work in it, a cache or lazy "
                     "set-up, included), the measured median warmed calls")
    # the samples of one call as the count read them (a sequence-first layer's batch is dim 1)
    return {"profile": row["profile"], "device": device, "batch": est.inference_samples,
            "predicted_latency_s": row["latency_s"], "predicted_energy_j": row["total_j"],
            "lower_bound": est.lower_bound, "notes": notes,
            "measured_latency_s": timing.median_s, "latency_min_s": timing.min_s,
            "latency_max_s": timing.max_s, "first_call_s": timing.first_s,
            "repeats": repeats, "warmup": warmup,
            "measured_energy_j": energy,
            "energy_source": meter.name if energy is not None else None,
            "energy_note": "" if energy is not None else f"energy is not measurable here: {why}"}



def _ratio(predicted: float, measured: float, bound: bool) -> str:
    """pred/meas, ``>=`` in front when the prediction is a lower bound, ``-`` for 0/0."""
    if not predicted and not measured:
        return "-"
    return (">=" if bound else "") + f"{predicted / measured:.3g}"


def format_measure(r: dict) -> str:
    """The side-by-side table printed by the command: one call (the whole batch) per row;
    a predicted figure that is a lower bound (ops that ran uncounted, nothing counted) is
    marked ``>=`` and the notes saying why come first."""
    bound = r.get("lower_bound", False)
    mark = ">=" if bound else ""
    lines = [f"measured on {r['device']} (one call = a batch of {r['batch']}; "
             f"{r['warmup']} warm-up, {r['repeats']} repeats, median), predicted on "
             f"{r['profile']}" + (" (a LOWER BOUND)" if bound else ""),
             *r.get("notes", ()),
             f"{'per call':12} {'predicted':>12} {'measured':>12} {'pred/meas':>10}",
             f"{'latency s':12} {mark + format(r['predicted_latency_s'], '.4g'):>12} "
             f"{r['measured_latency_s']:12.4g} "
             f"{_ratio(r['predicted_latency_s'], r['measured_latency_s'], bound):>10}   "
             f"spread {r['latency_min_s']:.4g}..{r['latency_max_s']:.4g} s"]
    predicted_j = f"{mark + format(r['predicted_energy_j'], '.4g'):>12}"
    if r["measured_energy_j"] is None:
        lines.append(f"{'energy J':12} {predicted_j} {'-':>12} {'-':>10}")
        lines.append(r["energy_note"])
    else:
        lines.append(f"{'energy J':12} {predicted_j} {r['measured_energy_j']:12.4g} "
                     f"{_ratio(r['predicted_energy_j'], r['measured_energy_j'], bound):>10}"
                     f"   ({r['energy_source']})")
    return "\n".join(lines)
