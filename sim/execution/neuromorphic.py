"""The neuromorphic execution model: a step's time is its slowest core's work plus the barrier.

Written once and parameterised by the profile (``[core_op_ns]`` and ``[step_sync]``, see
``hw_profiles/SCHEMA.md``), following SANA-FE (Boyle et al., "SANA-FE: Simulating Advanced
Neuromorphic Architectures for Fast Exploration", IEEE TCAD 44, 2025, Sec. III: the latency of
a time step is that of the slowest core plus the time-step synchronisation):

- **core work** in step t on core c: ``sum over ops of n[c, op](t) x core_op_ns[op]``, with each
  op charged to the core that executes it: a neuron update (active or idle) and a spike sent to
  the neuron's core; a synaptic op to the core of the *target* neuron (synapse memory lives
  there, see compiler.py); a learning update to the core holding the synapse. Router hops are
  not core work: the NoC forwards packets while the cores compute (SANA-FE's simple model
  also leaves network delay off the step time), so hop *energy* is priced but hop time is not;
  congestion is not modelled. Input spikes injected by the host take no core time.
- **step time** = ``max(tick, max_c work[c](t) + barrier)``; ``barrier`` = ``barrier_ns`` when
  the profile gives one value, else interpolated linearly in the routers the placement uses
  from ``barrier_one_router_ns`` (1 router) to ``barrier_ns`` (all routers) -- Davies et al.
  2018 (IEEE Micro 38(1), Table 2) give 113-465 ns for 1-32 tiles; the linear reading is ours
  (:func:`sim.step_timing.barrier_s`).
  ``tick`` (``tick_ns``, 0 when absent) is a fixed step period: TrueNorth's 1 kHz Sync.
- **run time** = the sum of step times; **realtime** pacing makes each step last at least the
  network's ``dt``: ``sum max(dt, step time)`` (steps that take longer are counted as overruns).
- **static energy** = static power x run time, or x the paced (real-time) duration with
  ``realtime=True``; the report says which (``EnergyReport.static_basis``).

The engine computes the per-step critical path inside its kernels (``kernels.end_step``)
under the device's profile and keeps only sums (a :class:`~sim.step_timing.StepTiming` per
scope; the time parameters are read from the profile by :mod:`sim.step_timing`); so pricing
on that profile is exact. Another chip needs another placement and hence a new
simulation: :func:`reprice` runs it; priced on another chip as they are, the recorded steps
get a lower bound (each lasts at least the tick, and the work plus the smallest barrier;
with ``realtime`` at least its ``dt``, so the run at least its biological time). Ops
counted outside the engine's steps (added to the ledger directly, e.g. an analytical
sweep) have no per-core record; they are priced as a *lower bound*: spread evenly over all
the chip's cores, with no barrier.

A neuromorphic profile without ``[core_op_ns]`` has no step-time model and is priced with
the roofline (:mod:`sim.execution.roofline`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from hw_profiles import load
from hw_profiles.ops import OPS
from hw_profiles.profile import HardwareProfile
from sim.energy_report import PJ, Charge, EnergyReport
from sim.errors import PricingError
from sim.execution import LedgerCounts, register_execution_model, roofline
from sim.step_timing import (
    COL,
    StepTiming,
    barrier_s,
    core_times_s,
    has_model,
    tick_s,
    timing_key,
)

STEP_MODEL = ("neuromorphic step model (SANA-FE): each time step lasts max(tick, the slowest "
              "core's work + the barrier); steps in sequence; static power x run time, or x "
              "the real-time-paced duration with realtime")
STEP_EXCLUDED = ("router congestion (hops are charged energy, not core time)",
                 "host, board and I/O power")


def price(ledger: LedgerCounts, prof: HardwareProfile, *,
          realtime: bool = False) -> EnergyReport:
    """Price ``ledger`` on a neuromorphic profile with the per-core step-time model.

    Energy is count x energy per op and bytes x energy per byte, as in every model. Time per
    scope: the recorded step times when the scope's record was made on this profile (same
    :func:`~sim.step_timing.timing_key`), plus a lower bound for any counts no record covers
    (see the module docstring). Static energy per scope = static power x that time, or x the
    real-time-paced duration with ``realtime``. A profile without ``[core_op_ns]`` is priced
    with the roofline (:func:`sim.execution.roofline.price`). :func:`sim.pricing.price` has
    checked that the profile prices every count before it calls this.

    Raises
    ------
    PricingError
        ``realtime`` on a profile without a step-time model; a step-timing record that
        covers more ops than the ledger counts.
    """
    if not has_model(prof):
        if realtime:
            raise PricingError(f"realtime pacing needs a neuromorphic profile with "
                               f"[core_op_ns] and [step_sync]; {prof.label!r} ({prof.kind}) "
                               "has none")
        return roofline.price(ledger, prof)
    key, tau, n_chip = timing_key(prof), core_times_s(prof), int(prof.limit("cores", 1))
    static_w = prof.static_power_w.value
    charges, latency, entries, model = [], {}, {}, {}
    for op, q in prof.core_op_ns.items():
        entries[f"core_op_ns.{op}"] = prof.cite(q)
    for k, q in prof.step_sync.items():
        entries[f"step_sync.{k}"] = prof.cite(q)
    for scope in ledger.scopes():
        ops = ledger.ops(scope)
        rec = ledger.timing(scope)
        valid = rec is not None and rec.key == key and rec.profile == prof.name
        covered = rec.covered() if valid else {}
        rest = {op: n - covered.get(op, 0) for op, n in ops.items()}
        bad = {op: n for op, n in rest.items() if n < 0}
        if bad:
            raise PricingError(f"scope {scope!r}: the step-timing record covers more "
                               f"{', '.join(bad)} than the ledger counts; the ledger is "
                               "inconsistent (was it merged with another run?)")
        # the lower bound for counts without a per-core record: ideal spread over the chip
        rest_s = sum(n * tau[COL[op]] for op, n in rest.items() if op in COL) / n_chip
        if rec is not None and not valid:
            # steps timed on another chip: their number is known, and on this one each
            # lasts at least its tick and at least the work plus the smallest barrier
            # (max(tick, work + barrier) per step): TrueNorth's 1 ms tick over 2,500 steps
            # is 2.5 s, which the ideal spread alone put at microseconds
            rest_s = max(rec.steps * tick_s(prof), rest_s + rec.steps * barrier_s(prof, 1))
            if realtime:
                # paced, each step lasts at least dt on any chip: sum max(dt, step) is at
                # least steps x dt (the biological time) and at least the bound above
                rest_s = max(rest_s, rec.bio_s)
        for op, n in ops.items():
            e = prof.energy_pj[op]
            t = rest.get(op, 0) * tau[COL[op]] / n_chip if op in COL else 0.0
            charges.append(Charge(scope, OPS[op], op, n, e.value, n * e.value * PJ, t,
                                  f"energy_pj.{op}"))
            entries[f"energy_pj.{op}"] = prof.cite(e)
        for (level, direction), n in ledger.bytes(scope).items():
            mem = prof.memory[level]
            q = mem.read_pj_per_byte if direction == "read" else mem.write_pj_per_byte
            k = f"memory.{level}.{direction}_pj_per_byte"
            # memory time is inside the per-core op times (a synop's time includes its
            # synapse-memory read, Davies 2018 Table 2), so no separate memory time
            charges.append(Charge(scope, "memory", f"{level}:{direction}", n, q.value,
                                  n * q.value * PJ, 0.0, k))
            entries[k] = f"{mem.name}: " + prof.cite(q)
        stepped = 0.0
        parts = []
        if valid:
            stepped = rec.paced_s if realtime else rec.step_s
            parts.append(_describe(rec, prof, realtime))
        elif rec is not None:
            parts.append(f"not re-placed on {prof.label}: steps were timed on {rec.profile!r}"
                         + (" with other time parameters" if rec.profile == prof.name else "")
                         + f"; their counts get a lower bound: the larger of {rec.steps:,} "
                         "steps x the tick and the ops spread evenly over every core plus "
                         "the smallest barrier per step"
                         + (f", paced to real time: at least the {rec.bio_s:.6g} s of "
                            "biological time" if realtime and rec.bio_s > 0 else "")
                         + " (sim.execution.neuromorphic.reprice re-simulates for the exact "
                         "figure)")
        n_rest = sum(n for op, n in rest.items() if op in COL and n)
        if n_rest:
            parts.append(f"lower bound for {n_rest:,} ops counted outside the engine's "
                         f"steps: spread evenly over all {n_chip} cores, no barrier"
                         + (", not paced (no time steps recorded)"
                            if realtime and rec is None else ""))
        seconds = stepped + rest_s
        latency[scope] = seconds
        if parts:
            model[scope] = "; ".join(parts)
        if seconds > 0 and static_w > 0:
            charges.append(Charge(scope, "static", "static", seconds, static_w / PJ,
                                  static_w * seconds, 0.0, "static.power_w"))
            entries["static.power_w"] = prof.cite(prof.static_power_w)
    basis = ("real time: each step paced to the network's dt (static power x paced "
             "duration)" if realtime else "run time: static power x the sum of step times")
    return EnergyReport(profile=prof.label, kind=prof.kind, charges=tuple(charges),
                        latency_s=latency, samples=ledger.samples(), entries=entries,
                        uncounted=ledger.uncounted(), time_model=model, static_basis=basis,
                        execution_model=STEP_MODEL, bound="estimate", excluded=STEP_EXCLUDED)


def _describe(rec: StepTiming, prof: HardwareProfile, realtime: bool) -> str:
    cores = int((np.asarray(rec.core_ops)[1:].sum(axis=1) > 0).sum())
    what = "time steps" if rec.bio_s > 0 else "learning phases"
    text = (f"{rec.steps:,} {what}, each the slowest of {cores} busy cores + barrier "
            f"(SANA-FE model, placement on {prof.label})")
    tick = tick_s(prof)
    if tick:
        text += f"; every step lasts at least the {tick * 1e3:g} ms tick"
    if realtime and rec.bio_s > 0:
        text += (f"; paced to real time ({rec.bio_s:.6g} s biological), "
                 f"{rec.overruns:,} steps overran dt")
    return text


# -- re-placing on another chip ----------------------------------------------------------------
def reprice(simulate: Callable[[HardwareProfile], object],
            profiles: Iterable[str | HardwareProfile], realtime: bool = False) -> list:
    """Price a run on each neuromorphic profile by re-placing and re-running it there.

    A step's critical path depends on where every neuron sits, and another chip places the
    network differently (other cores, neurons per core, weight widths), so no recorded sum
    can be re-priced exactly: the honest re-price is a new simulation. ``simulate(profile)``
    runs the same model with the same config and seed on ``profile`` and returns a Ledger
    (or anything with a ``.ledger``, such as a RunResult); each is priced on its own profile.

    Examples
    --------
    >>> from sim.neuromorphic import Network, NeuromorphicDevice
    >>> def run(p):
    ...     net = Network(dt=1e-3)
    ...     _ = net.population("out", 1, "lif", tau_mem=0.01, v_threshold=1.0)
    ...     dev = NeuromorphicDevice(p)
    ...     _ = dev.compile(net)
    ...     _ = dev.run(10)
    ...     return dev.ledger
    >>> [r.profile for r in reprice(run, ["loihi", "loihi2"])]
    ['loihi', 'loihi2']
    """
    out = []
    for p in profiles:
        prof = load(p)
        if prof.kind != "neuromorphic":
            raise PricingError(f"reprice: profile {prof.label!r} is of kind {prof.kind!r}; "
                               "re-placing applies to neuromorphic profiles")
        result = simulate(prof)
        led = getattr(result, "ledger", result)
        out.append(led.price(prof, realtime=realtime))
    return out


register_execution_model("neuromorphic", price)
