"""Neuromorphic step timing: the record a ledger keeps beside its counts, and its parameters.

A neuromorphic engine reduces each time step's per-core work to the step's critical path
inside its kernels (``sim/neuromorphic/kernels.py`` ``end_step``, driven by
:class:`sim.neuromorphic.step_clock.StepClock`) and keeps only sums: one :class:`StepTiming`
per ledger scope (:meth:`sim.ledger.Ledger.add_timing`), never per-step arrays, so a ledger of
millions of steps stays small and pricing on the profile the run was placed on is exact.

This module owns that record and the profile's time parameters it is computed from
(``[core_op_ns]`` and ``[step_sync]``, see ``hw_profiles/SCHEMA.md``): seconds per op on one
core, the barrier, the tick, and the fingerprint (:func:`timing_key`) that says whether a
record can be reused on a profile. The engine (``sim/neuromorphic/``) and the execution model
that prices the record (:mod:`sim.execution.neuromorphic`) both read them from here.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from hw_profiles.profile import HardwareProfile
from sim.errors import LedgerError

TIMED_OPS = ("synop", "neuron_update_active", "neuron_update_idle", "spike", "hop",
             "syn_update")
"""Columns of :attr:`StepTiming.core_ops`: the ops an engine attributes to a core."""
COL = {op: k for k, op in enumerate(TIMED_OPS)}
"""op name -> column of a per-core count table (StepTiming.core_ops, kernels' ``cc``)."""
NS = 1e-9


@dataclass(frozen=True)
class StepTiming:
    """What a neuromorphic engine's steps took on the profile it ran on, as sums.

    The step time is computed inside the kernels from per-core op counts (the model is
    described in :mod:`sim.execution.neuromorphic`); only these totals are kept, so a ledger
    of millions of steps stays small. ``key`` fingerprints the profile's time parameters and
    the placement's barrier: a price on a profile with another key cannot reuse ``step_s``.

    Attributes
    ----------
    profile : name of the profile whose per-core op times made the figures
    key : fingerprint of those times, the barrier and the tick (:func:`timing_key`)
    steps : synchronised phases (time steps, and learning phases) recorded
    work_s : sum over steps of the slowest core's work, seconds (no barrier, no tick)
    step_s : sum over steps of ``max(tick, slowest core + barrier)``, seconds
    paced_s : sum over steps of ``max(dt, step time)``: the run paced to real time
    bio_s : biological duration of the time steps (steps x dt; 0 for learning phases)
    overruns : steps whose time exceeded dt (they could not keep real time)
    core_ops : (1 + cores, len(TIMED_OPS)) int64 totals; row 0 = ops off the cores (input
        spikes injected by the host, ...), row 1 + c = core c
    """

    profile: str
    key: str
    steps: int
    work_s: float
    step_s: float
    paced_s: float
    bio_s: float
    overruns: int
    core_ops: np.ndarray = field(repr=False, compare=False)

    def covered(self) -> dict[str, int]:
        """Op -> count this record timed (the sum over its rows)."""
        tot = np.asarray(self.core_ops).sum(axis=0)
        return {op: int(n) for op, n in zip(TIMED_OPS, tot, strict=True) if n}

    def plus(self, other: StepTiming, scope: str = "") -> StepTiming:
        """The sum of two records made on the same profile and time parameters.

        Raises
        ------
        LedgerError
            The records were made on different profiles or time parameters (``scope`` names
            where, for the message).
        """
        if (self.profile, self.key) != (other.profile, other.key):
            raise LedgerError(f"scope {scope!r}: step timing recorded on {self.profile!r} "
                              f"(key {self.key}) cannot be summed with timing on "
                              f"{other.profile!r} (key {other.key}); record them in "
                              "separate scopes")
        a, b = np.asarray(self.core_ops), np.asarray(other.core_ops)
        rows = max(a.shape[0], b.shape[0])
        ops = np.zeros((rows, len(TIMED_OPS)), np.int64)
        ops[:a.shape[0]] += a
        ops[:b.shape[0]] += b
        return StepTiming(self.profile, self.key, self.steps + other.steps,
                          self.work_s + other.work_s, self.step_s + other.step_s,
                          self.paced_s + other.paced_s, self.bio_s + other.bio_s,
                          self.overruns + other.overruns, ops)

    def to_dict(self) -> dict:
        """Plain data (JSON-ready): the sums, the column names and ``core_ops`` as lists."""
        return {"profile": self.profile, "key": self.key, "steps": int(self.steps),
                "work_s": float(self.work_s), "step_s": float(self.step_s),
                "paced_s": float(self.paced_s), "bio_s": float(self.bio_s),
                "overruns": int(self.overruns), "columns": list(TIMED_OPS),
                "core_ops": np.asarray(self.core_ops, np.int64).tolist()}

    @classmethod
    def from_dict(cls, d: Mapping) -> StepTiming:
        """Read :meth:`to_dict`'s form; refuses other columns and negative counts or times."""
        if list(d.get("columns", TIMED_OPS)) != list(TIMED_OPS):
            raise LedgerError(f"step timing columns {d.get('columns')!r}: this neuroedge "
                              f"reads {list(TIMED_OPS)}")
        ops = np.asarray(d["core_ops"], np.int64).reshape(-1, len(TIMED_OPS))
        vals = [float(d[k]) for k in ("work_s", "step_s", "paced_s", "bio_s")]
        if (ops < 0).any() or min(vals) < 0 or int(d["steps"]) < 0 or int(d["overruns"]) < 0:
            raise LedgerError("step timing record has a negative count or time")
        return cls(str(d["profile"]), str(d["key"]), int(d["steps"]), *vals,
                   int(d["overruns"]), ops)


def has_model(profile: HardwareProfile) -> bool:
    """True when the profile gives the per-core step-time model."""
    return profile.kind == "neuromorphic" and bool(profile.core_op_ns)


def core_times_s(profile: HardwareProfile) -> np.ndarray:
    """(len(TIMED_OPS),) seconds one core spends per op; hop (a router's work) is 0."""
    tau = np.zeros(len(TIMED_OPS))
    for op, q in profile.core_op_ns.items():
        tau[COL[op]] = q.value * NS
    return tau


def timing_key(profile: HardwareProfile) -> str:
    """Fingerprint of every parameter a recorded step time depends on (placement aside)."""
    data = {"name": profile.name,
            "core_op_ns": {k: q.value for k, q in sorted(profile.core_op_ns.items())},
            "step_sync": {k: q.value for k, q in sorted(profile.step_sync.items())}}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def barrier_s(profile: HardwareProfile, routers_used: int) -> float:
    """Barrier time for a placement spanning ``routers_used`` routers.

    ``barrier_ns`` when the profile gives one value, else interpolated linearly in the
    routers the placement uses from ``barrier_one_router_ns`` (1 router) to ``barrier_ns``
    (all routers of the mesh, every chip of a multi-chip mesh included): Davies et al. 2018
    (IEEE Micro 38(1), Table 2) give 113-465 ns for 1-32 tiles; the linear reading is ours.
    """
    sync = profile.step_sync
    if "barrier_ns" not in sync:
        return 0.0
    hi = sync["barrier_ns"].value
    lo_q = sync.get("barrier_one_router_ns")
    ix = profile.interconnect
    total = int(ix["mesh_x"].value * ix["mesh_y"].value) if "mesh_x" in ix else 1
    for key in ("chips_x", "chips_y"):      # a multi-chip mesh: all its routers
        total *= int(ix[key].value) if key in ix else 1
    if lo_q is None or total <= 1:
        return hi * NS
    frac = (min(max(routers_used, 1), total) - 1) / (total - 1)
    return (lo_q.value + (hi - lo_q.value) * frac) * NS


def tick_s(profile: HardwareProfile) -> float:
    """The fixed step period ``tick_ns`` in seconds (TrueNorth's 1 kHz Sync), 0 when absent."""
    q = profile.step_sync.get("tick_ns")
    return 0.0 if q is None else q.value * NS
