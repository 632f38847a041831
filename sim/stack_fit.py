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
- **Cycles per int8 MAC of a software stack** (``[stacks.NAME] mac_int8_cycles``): on each
  calibration row with a ``stack``, the row's workload is counted and priced at the core
  manual's peak (``stack = "peak"``); the time outside int8 MACs (other ops, SRAM traffic) is
  kept and the MACs are given the rest of the measured latency:
  ``cycles = (measured latency - other time) x clock / int8 MACs``. One keyword-spotting row
  per part and stack; the stack's other benchmarks and other submitters' rows are held out.

Values are rounded to 4 significant digits, as the profiles store them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from hw_profiles.errors import NeuroedgeError
from hw_profiles.loader import load
from hw_profiles.validation import Measurement, load_table
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
    key: str          # "energy_per_cycle_pj" or "stacks.NAME.mac_int8_cycles"
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


def mac_cycles_fit(m: Measurement) -> Fit:
    """The row's stack's cycles per int8 MAC on the row's profile (module doc)."""
    prof = load(m.profile)
    clock = prof.limit("clock_hz")
    ledger, n, _ = torch_ledger(m)
    report = price(ledger, prof, stack="peak")
    macs = ledger.total_ops().get("mac_int8", 0) / n
    if not macs:
        raise NeuroedgeError(f"[calibrate {m.id}] the workload counts no int8 MAC")
    t_mac = sum(c.seconds for c in report.charges if c.item == "mac_int8") / n
    other = report.total_latency_s / n - t_mac
    left = m.measured_latency_s - other
    if left <= 0:
        raise NeuroedgeError(f"[calibrate {m.id}] the time outside int8 MACs ({other:.4g} s) "
                             f"already exceeds the measured {m.measured_latency_s:.4g} s")
    value = round4(left * clock / macs)
    return Fit(m.profile, f"stacks.{m.stack}.mac_int8_cycles", value, m.id,
               f"measured {m.measured_latency_s:.6g} s - {other:.4g} s outside int8 MACs "
               f"(priced at peak) = {left:.4g} s x {clock:.4g} Hz / {macs:,.0f} int8 MACs "
               f"= {value:g} cycles per int8 MAC")


def fit_all(table=None) -> list[Fit]:
    """Every fitted number, from the calibration rows of the table (the shipped one when
    None): the energy per cycle of each part in :data:`ENERGY_ROWS`, then the cycles per int8
    MAC of every stack that has a calibration row on such a part.

    Raises
    ------
    NeuroedgeError
        A named row is missing or not in the calibration group, or two calibration rows fit
        the same stack of the same part.
    """
    rows = {m.id: m for m in load_table(table)}
    fits = [energy_fit(_calibration_row(rows, rid)) for rid in ENERGY_ROWS.values()]
    seen: dict[tuple[str, str], str] = {}
    for m in rows.values():
        if m.group != "calibration" or m.profile not in ENERGY_ROWS or not m.stack:
            continue
        key = (m.profile, m.stack)
        if key in seen:
            raise NeuroedgeError(f"rows {seen[key]!r} and {m.id!r} both calibrate stack "
                                 f"{m.stack!r} of {m.profile}; one calibration row per stack")
        seen[key] = m.id
        fits.append(mac_cycles_fit(m))
    return fits


def shipped_value(fit: Fit) -> float | None:
    """The value the shipped profile holds for ``fit`` (None when it holds none). The energy
    per cycle is read back as ``energy_pj.int_mul``: MUL takes one cycle on both cores."""
    prof = load(fit.profile)
    if fit.key == "energy_per_cycle_pj":
        return prof.energy_pj["int_mul"].value
    stack = fit.key.removeprefix("stacks.").removesuffix(".mac_int8_cycles")
    q = prof.stacks.get(stack, {}).get("mac_int8_cycles")
    return None if q is None else q.value
