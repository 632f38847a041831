"""The fitted numbers of the microcontroller profiles, computed from the validation table's
calibration rows only (issue 29 items 2-3). ``bench/calibrate.py`` prints and checks them;
a test checks that the shipped profiles hold exactly these values.

Two kinds of number are fitted, each on named rows of ``group = "calibration"`` (a held-out row
is refused, never read):

- **Energy per cycle of a part** (:data:`ENERGY_ROWS`): the run power the MLPerf Tiny energy
  monitor measured on the board during that row's inferences, divided by the clock:
  ``measured_j / measured_latency_s / clock_hz`` (reduced to the profile's supply voltage). A
  microcontroller draws about this power whatever it executes, so every op's energy is its
  cycles times this number (the profile's ``[energy_pj]``).
- **Cycles per int8 MAC of a software stack, per op class of the layer**
  (``[stacks.NAME]``, :data:`CLASS_ROWS`): on each calibration row with a ``stack``, the
  row's workload is counted and priced at the core manual's peak (``stack = "peak"``); the
  time outside the MACs being fitted (other ops, SRAM traffic, MACs of a class fitted
  before) is kept and those MACs are given the rest of the measured latency:
  ``cycles = (measured latency - other time) x clock / MACs``. Per part and stack, the
  anomaly-detection row (MLPerf Tiny's autoencoder: only dense layers) fits
  ``dense_cycles``; then the keyword-spotting row fits ``mac_int8_cycles``, every int8 MAC
  not priced by class (its convolutions and depthwise convolutions: one row cannot tell the
  two apart), with its one dense layer at the ``dense_cycles`` just fitted. The stack's VWW
  and IC rows and other submitters' and rounds' rows are held out.

Values are rounded to 4 significant digits, as the profiles store them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from hw_profiles.errors import NeuroedgeError
from hw_profiles.loader import load
from hw_profiles.validation import Measurement, load_table
from sim.execution.mcu import library_key
from sim.layers import scope_op_classes
from sim.pricing import price
from sim.validation import supply_factor, torch_ledger

ENERGY_ROWS = {"stm32l4r5": "l4r5-kws-xcube-ai-7.3-v1.0",
               "stm32h7a3": "h7a3-kws-xcube-ai-7.3-v1.0"}
"""profile -> the calibration row whose measured run power sets the part's energy per cycle."""


def round4(x: float) -> float:
    """``x`` to 4 significant digits (how the profiles store fitted numbers)."""
    return round(x, 3 - math.floor(math.log10(abs(x))))


@dataclass(frozen=True)
class Fit:
    """One fitted number: where it goes in the profile, its value, the row and the arithmetic."""

    profile: str
    key: str          # "energy_per_cycle_pj" or "stacks.NAME.KEY" (KEY: CLASS_ROWS' values)
    value: float
    row: str
    derivation: str


def _calibration_row(rows: dict[str, Measurement], row_id: str) -> Measurement:
    m = rows.get(row_id)
    if m is None:
        raise NeuroedgeError(f"calibration row {row_id!r} is not in the validation table")
    if m.group != "calibration":
        raise NeuroedgeError(f"row {row_id!r} is group {m.group!r}: only rows of the "
                             "calibration group may be fitted on")
    return m


def energy_fit(m: Measurement) -> Fit:
    """The part's energy per cycle from one calibration row's measured power (module doc)."""
    clock = load(m.profile).limit("clock_hz")
    volts = supply_factor(m)
    power = m.measured_j / volts / m.measured_latency_s
    value = round4(power / clock * 1e12)
    return Fit(m.profile, "energy_per_cycle_pj", value, m.id,
               f"{m.measured_j:.7g} J / {m.measured_latency_s:.6g} s"
               + (f" / {volts:.4g} (supply)" if volts != 1 else "")
               + f" = {power * 1e3:.4g} mW / {clock:.4g} Hz = {value:g} pJ per cycle")


CLASS_ROWS = {"fc_autoencoder_ad": "dense_cycles", "ds_cnn_kws": "mac_int8_cycles"}
"""workload of a calibration row -> the ``[stacks.NAME]`` entry it fits, in fitting order
(module doc)."""

_WHAT = {"dense_cycles": "int8 MACs of dense layers",
         "mac_int8_cycles": "int8 MACs of convolutions and depthwise convolutions"}


def mac_cycles_fit(m: Measurement, key: str = "mac_int8_cycles",
                   known: dict[str, float] | None = None) -> Fit:
    """The row's stack's ``key`` (cycles per int8 MAC of the MACs it prices,
    :func:`sim.execution.mcu.library_key`) on the row's profile, with the entries in
    ``known`` (fitted before on this stack) pricing their MACs (module doc)."""
    prof = load(m.profile)
    clock = prof.limit("clock_hz")
    peak_mac = clock / prof.throughput["mac_int8"].value
    ledger, n, _ = torch_ledger(m)
    report = price(ledger, prof, stack="peak")
    classes = scope_op_classes(ledger)
    table = {**(known or {}), key: 1.0}
    macs, t_fitted, t_known = 0, 0.0, 0.0
    for c in report.charges:
        if c.item != "mac_int8":
            continue
        k = library_key(table, c.item, classes.get(c.scope, ""))
        if k == key:
            macs += c.count
            t_fitted += c.seconds
        elif k is not None:   # a class fitted before: its cycles instead of the peak's
            t_known += c.seconds * (table[k] / peak_mac - 1.0)
    macs /= n
    if not macs:
        raise NeuroedgeError(f"[calibrate {m.id}] the workload counts no {_WHAT[key]}")
    other = (report.total_latency_s - t_fitted + t_known) / n
    left = m.measured_latency_s - other
    if left <= 0:
        raise NeuroedgeError(f"[calibrate {m.id}] the time outside the {_WHAT[key]} "
                             f"({other:.4g} s) already exceeds the measured "
                             f"{m.measured_latency_s:.4g} s")
    value = round4(left * clock / macs)
    before = "".join(f", {k} = {v:g}" for k, v in (known or {}).items())
    return Fit(m.profile, f"stacks.{m.stack}.{key}", value, m.id,
               f"measured {m.measured_latency_s:.6g} s - {other:.4g} s outside the "
               f"{_WHAT[key]} (priced at peak{before}) = {left:.4g} s x {clock:.4g} Hz / "
               f"{macs:,.0f} MACs = {value:g} cycles per int8 MAC")


def fit_all(table=None) -> list[Fit]:
    """Every fitted number, from the calibration rows of the table (the shipped one when
    None): the energy per cycle of each part in :data:`ENERGY_ROWS`, then per stack with
    calibration rows on such a part its ``dense_cycles`` and ``mac_int8_cycles``
    (:data:`CLASS_ROWS`, in that order).

    Raises
    ------
    NeuroedgeError
        A named row is missing or not in the calibration group, two calibration rows fit
        the same entry of the same stack and part, or a calibration row's workload fits
        no entry.
    """
    rows = {m.id: m for m in load_table(table)}
    fits = [energy_fit(_calibration_row(rows, rid)) for rid in ENERGY_ROWS.values()]
    by_stack: dict[tuple[str, str], dict[str, Measurement]] = {}
    for m in rows.values():
        if m.group != "calibration" or m.profile not in ENERGY_ROWS or not m.stack:
            continue
        key = CLASS_ROWS.get(m.workload)
        if key is None:
            raise NeuroedgeError(f"calibration row {m.id!r}: workload {m.workload!r} fits no "
                                 f"stack entry (calibration workloads: "
                                 f"{', '.join(CLASS_ROWS)})")
        mine = by_stack.setdefault((m.profile, m.stack), {})
        if key in mine:
            raise NeuroedgeError(f"rows {mine[key].id!r} and {m.id!r} both calibrate {key} "
                                 f"of stack {m.stack!r} of {m.profile}; one calibration row "
                                 "per stack and entry")
        mine[key] = m
    for stack_rows in by_stack.values():
        known: dict[str, float] = {}
        for key in CLASS_ROWS.values():   # fitting order: dense first
            if key in stack_rows:
                f = mac_cycles_fit(stack_rows[key], key, known)
                known[key] = f.value
                fits.append(f)
    return fits


def shipped_value(fit: Fit) -> float | None:
    """The value the shipped profile holds for ``fit`` (None when it holds none). The energy
    per cycle is read back as ``energy_pj.int_mul``: MUL takes one cycle on both cores."""
    prof = load(fit.profile)
    if fit.key == "energy_per_cycle_pj":
        return prof.energy_pj["int_mul"].value
    stack, key = fit.key.removeprefix("stacks.").rsplit(".", 1)
    q = prof.stacks.get(stack, {}).get(key)
    return None if q is None else q.value
