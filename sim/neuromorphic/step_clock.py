"""The engine side of the step-time model: per-placement clocks the kernels accumulate into.

A :class:`StepClock` holds one placement's time parameters (per-op core times, the barrier
for the routers it uses, the tick, dt; read from the profile by :mod:`sim.step_timing`) and the
arrays the kernels (``kernels.end_step``) fill with each step's per-core op counts and the
run's sums; :meth:`StepClock.record` turns those sums into the ledger's
:class:`~sim.step_timing.StepTiming`. :func:`row_core_counts` precomputes, per presynaptic row,
the synapses it has on each core, so a spike charges its synops per destination core.
The model itself (slowest core + barrier per step) is described and priced in
:mod:`sim.execution.neuromorphic`.
"""
from __future__ import annotations

import numpy as np

from hw_profiles.profile import HardwareProfile
from sim.step_timing import (
    COL,
    TIMED_OPS,
    StepTiming,
    barrier_s,
    core_times_s,
    has_model,
    tick_s,
    timing_key,
)


class StepClock:
    """Per-placement time parameters and the arrays the kernels accumulate into.

    ``cc`` (1 + cores, 6) int64 holds the current step's per-core op counts (row 0: off the
    cores); ``tot`` the run's per-core totals; ``stats`` float64 [work_s, step_s, paced_s,
    overruns]; ``sync`` float64 [barrier_s, tick_s, dt].
    """

    def __init__(self, profile: HardwareProfile, n_cores: int, routers_used: int, dt: float):
        self.profile = profile
        self.model = has_model(profile)
        self.tau = core_times_s(profile) if self.model else np.zeros(len(TIMED_OPS))
        self.barrier = barrier_s(profile, routers_used) if self.model else 0.0
        self.tick = tick_s(profile) if self.model else 0.0
        self.dt = float(dt)
        self.key = timing_key(profile) if self.model else "no-model"
        self.rows = n_cores + 1
        self.sync = np.array([self.barrier, self.tick, self.dt])
        self.start()

    def start(self) -> None:
        self.cc = np.zeros((self.rows, len(TIMED_OPS)), np.int64)
        self.tot = np.zeros((self.rows, len(TIMED_OPS)), np.int64)
        self.stats = np.zeros(4)

    def record(self, n_steps: int, bio_s: float) -> StepTiming:
        """The sums of the steps run since :meth:`start`, as a ledger record."""
        w, s, p, over = self.stats
        return StepTiming(self.profile.name, self.key, int(n_steps), float(w), float(s),
                          float(p), float(bio_s), int(over), self.tot.copy())

    def phase(self, counts: np.ndarray, op: str) -> StepTiming:
        """One synchronised phase outside the time steps (a learning phase): ``counts[r]``
        ops of kind ``op`` on table row ``r`` (1 + core; ``self.rows`` entries); time =
        slowest core + barrier, not paced."""
        ops = np.zeros((self.rows, len(TIMED_OPS)), np.int64)
        ops[:, COL[op]] = counts
        work = float(counts[1:].max(initial=0) * self.tau[COL[op]])
        step = max(self.tick, work + self.barrier)
        return StepTiming(self.profile.name, self.key, 1, work, step, step, 0.0, 0, ops)


def row_core_counts(row_ptr: np.ndarray, col: np.ndarray, n_neurons: int,
                    core_of: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each presynaptic row: its distinct target cores (as table rows 1 + core) and the
    synapses it has on each, in CSR form ``(ptr, rows, counts)``; a spike then charges its
    synops per destination core in O(distinct cores), not O(synapses)."""
    n_pre = row_ptr.size - 1
    pre = np.repeat(np.arange(n_pre), np.diff(row_ptr))
    dest = core_of[col % n_neurons] + 1 if col.size else np.zeros(0, np.int64)
    ncol = int(core_of.max(initial=0)) + 2
    keys, cnt = np.unique(pre * ncol + dest, return_counts=True)
    ptr = np.zeros(n_pre + 1, np.int64)
    np.cumsum(np.bincount(keys // ncol, minlength=n_pre), out=ptr[1:])
    return ptr, (keys % ncol).astype(np.int64), cnt.astype(np.int64)
