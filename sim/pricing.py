"""Price a Ledger on a HardwareProfile: joules per op, scope and sample; bytes; latency; static.

:func:`price` checks that the profile prices every count, then hands the ledger to the
execution model of the profile's kind, looked up in :data:`sim.execution.EXECUTION_MODELS`
(one module each under :mod:`sim.execution`, registered by the module itself):

- ``gpu``, ``cpu``: :mod:`sim.execution.gpu_cpu` (launch time, Hockney efficiency below the
  roofline, idle power over the whole run, cache reuse of a resident footprint);
- ``bitwise``: :mod:`sim.execution.mcu` (serial in-order core, SRAM/flash placement and
  capacity);
- ``neuromorphic``: :mod:`sim.execution.neuromorphic` (slowest core plus the barrier per time
  step), or :mod:`sim.execution.roofline` (per scope ``max(compute, memory)`` at peak rates;
  static power over that latency) for a profile without a step-time model.

Every report (:class:`~sim.energy_report.EnergyReport`) says which model priced it, what it
leaves out and whether its figures are an estimate, a lower or an upper bound
(``execution_model``, ``excluded``, ``bound``). A count the profile has no number for is an
error naming the op (or level) and the profile, never a silent zero.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from dataclasses import replace

from hw_profiles import load
from hw_profiles.ops import EXECUTION_OPS, OP_NAMES
from hw_profiles.profile import HardwareProfile
from sim.energy_report import EnergyReport
from sim.errors import PricingError

# importing a model's module registers it in EXECUTION_MODELS (gpu_cpu, mcu: only that)
from sim.execution import (  # noqa: F401
    EXECUTION_MODELS,
    ExecutionModel,
    LedgerCounts,
    gpu_cpu,
    mcu,
    neuromorphic,
    resolve_stack,
)
from sim.step_timing import has_model


def check_prices(ledger: LedgerCounts, prof: HardwareProfile) -> None:
    """Raise unless ``prof`` has a number for every op and memory level the ledger counts.

    Ops priced by the execution model (``EXECUTION_OPS``) are left to it. A bitwise profile
    without an ``offchip`` level maps the torch engine's device-memory bytes to its own
    memories (:mod:`sim.execution.mcu`), so that level is not required there.
    """
    missing_ops = sorted(set(ledger.total_ops()) - set(prof.energy_pj) - EXECUTION_OPS,
                         key=OP_NAMES.index)
    if missing_ops:
        able = _shipped_pricing(set(ledger.total_ops()) - EXECUTION_OPS, prof.kind)
        where = (f"price the run on one that does ({', '.join(able)})" if able else
                 "price the run on a profile of a kind that executes these ops")
        raise PricingError(
            f"profile {prof.label!r} has no energy for op(s) {', '.join(missing_ops)} counted "
            f"by this ledger; it prices {', '.join(prof.energy_pj) or 'no ops'}. {where[0].upper()}"
            f"{where[1:]}, or add them to the profile")
    levels = {lv for lv, _ in ledger.total_bytes()}
    if prof.kind == "bitwise":
        levels -= {"offchip"} - set(prof.memory)
    missing_levels = sorted(levels - set(prof.memory))
    if missing_levels:
        raise PricingError(
            f"profile {prof.label!r} has no memory level {', '.join(missing_levels)} for bytes "
            f"counted by this ledger; its levels are {', '.join(prof.memory)}")


def _shipped_pricing(ops: set[str], kind: str) -> list[str]:
    """The shipped profiles of ``kind`` that have an energy for every op of ``ops`` (what a
    refusal names as the way out)."""
    from hw_profiles import available
    able = []
    for name in available():
        other = load(name)
        if other.kind == kind and ops <= set(other.energy_pj):
            able.append(name)
    return able


def price(ledger: LedgerCounts, profile: str | HardwareProfile, *,
          realtime: bool = False, stack: str | None = None,
          validation: bool = True) -> EnergyReport:
    """Price every count of ``ledger`` on ``profile`` with the execution model of its kind,
    for the software ``stack`` (``sim.execution.stacks_of(profile)``; None: the profile's
    default, else the kind's: eager PyTorch on gpu/cpu, the manual's peak cycles on bitwise).

    ``realtime`` (neuromorphic profiles with a step-time model): pace every time step to the
    network's dt and charge static power over that duration instead of the run time.

    ``validation``: attach the held-out error of the shipped validation summary
    (``hw_profiles.validation.error_rows``); False for the validation run itself
    (``sim.validation``), which computes that summary and must not need it to exist or be
    current.

    Raises
    ------
    PricingError
        The ledger counts an op, or moves bytes at a memory level, for which the profile
        has no number; ``realtime`` on a profile without a step-time model; or a figure is
        not finite (overflow), naming the op and scope.
    HardwareLimitError
        (bitwise profiles) the ledger's recorded state does not fit the device's memories.
    """
    prof = load(profile)
    stack = resolve_stack(prof, stack)
    _check_word_width(ledger, prof)
    _check_payloads(ledger, prof)
    _check_counts_finite(ledger, prof)
    if realtime and not has_model(prof):
        raise PricingError(f"realtime pacing needs a neuromorphic profile with [core_op_ns] "
                           f"and [step_sync]; {prof.label!r} ({prof.kind}) has none")
    check_prices(ledger, prof)
    if realtime:   # only the neuromorphic step model paces steps to real time
        report = neuromorphic.price(ledger, prof, realtime=True)
    elif prof.kind in ("gpu", "cpu", "bitwise"):   # the models that price a stack
        report = _model(prof)(ledger, prof, stack=stack)
    else:
        report = _model(prof)(ledger, prof)
    _check_result_finite(report.charges, report.latency_s, prof)
    if not any(ledger.total_ops().values()) and not any(ledger.total_bytes().values()):
        # a run that counted nothing (counting turned off: count=false) ran ops all the
        # same: its 0 J and 0 s are no estimate of them
        report = replace(report, bound="lower bound", notes=report.notes + (
            "nothing was counted (a run with counting turned off, or an empty ledger): "
            "every figure is 0 and a lower bound",))
    return _with_validation(report) if validation else report


def _check_word_width(ledger, prof: HardwareProfile) -> None:
    """A bitwise ledger's word ops were counted in words of its device's width (a row of k
    bits is ceil(k / width) words): priced on a bitwise profile of another width, each op
    would be charged at the other word's energy and time, for a count the other device
    would not make (a 32-bit run on a 64-bit FPGA: twice the ops at the 64-bit price)."""
    bits = getattr(ledger, "word_bits", None)
    width = prof.limit("word_bits")   # any profile that states one (a CPU's too)
    if bits is None or width is None or int(width) == bits:
        return
    raise PricingError(f"the ledger's word ops were counted in {bits}-bit words, and "
                       f"{prof.label!r} computes {int(width)}-bit words: its counts would "
                       f"differ; simulate the model on {prof.label!r} (--profile) to price "
                       "it there")


def _check_payloads(ledger, prof: HardwareProfile) -> None:
    """A spiking run's spikes carried payloads from its lowest to its highest (DiffPC's
    ternary and graded codes): a neuromorphic chip whose spikes cannot carry them would
    not run the model at all (binary spikes carry 1 only; ``spike_payload_bits`` b: signed
    values of magnitude < 2^(b-1)), so its price would be for another model."""
    span = getattr(ledger, "payloads", None)
    if span is None or prof.kind != "neuromorphic":
        return
    lo, hi = prof.payload_range()
    if span[0] >= lo and span[1] <= hi:
        return
    bits = prof.limit("spike_payload_bits")
    carries = ("binary spikes only (payload 1)" if bits is None
               else f"payloads {lo}..{hi} (spike_payload_bits {int(bits)})")
    raise PricingError(f"the run's spikes carried payloads {span[0]}..{span[1]}, and "
                       f"{prof.label!r} carries {carries}: it cannot run this model; price "
                       "it on a chip whose spikes carry them")


def _model(prof: HardwareProfile) -> ExecutionModel:
    """The execution model registered for the profile's kind."""
    model = EXECUTION_MODELS.get(prof.kind)
    if model is None:
        raise PricingError(f"profile {prof.label!r} is of kind {prof.kind!r}, which no "
                           f"execution model prices; models are registered for "
                           f"{', '.join(sorted(EXECUTION_MODELS))} (sim/execution/)")
    return model


def _with_validation(report: EnergyReport) -> EnergyReport:
    """Attach the held-out validation error of the report's profile and stack, saying whose
    rows it is over (``hw_profiles.validation.error_rows``: the profile's device kind's
    rows, or, for a profile no row measures, its profile kind's rows by their device
    kinds)."""
    from hw_profiles.validation import PER_PROFILE_KINDS, error_rows, heldout_error
    rows = error_rows(report.kind, report.profile)
    if rows is None:
        return report
    err = {**heldout_error(report.kind, report.stack, profile=report.profile),
           "error_rows": rows}
    if report.kind in PER_PROFILE_KINDS:
        # only this profile's own rows say anything of it (PER_PROFILE_KINDS)
        return replace(report, validation_error=rows["median_rel_error"],
                       validation=err, notes=report.notes + (
                           f"validation ({report.profile}): " + describe_error(err)
                           + " (neuroedge validate)",))
    note = (f"validation ({error_rows_text(rows, report.profile)}): {rows['rows']} held-out "
            f"published measurement(s), predicted / measured "
            f"{rows['min_ratio']:.2g}-{rows['max_ratio']:.2g} (neuroedge validate); "
            + describe_error(err))
    return replace(report, validation_error=rows["median_rel_error"], validation=err,
                   notes=report.notes + (note,))


def error_rows_text(rows: dict, profile: str) -> str:
    """Whose held-out rows ``rows`` (``hw_profiles.validation.error_rows``) are:
    ``"edge-gpu rows on jetson-orin, jetson-tx1"``, and ``"; none on fpga-bnn"`` where no
    row measures the report's ``profile`` (its profile kind's rows stand in)."""
    text = (f"{', '.join(rows['device_kinds'])} rows on {', '.join(rows['profiles'])}")
    return text if rows["measured"] else f"{text}; none on {profile}"


def error_factors(err: dict | None, quantity: str) -> str | None:
    """``"x36 median, x239 worst"``: the held-out factor max(r, 1/r) of predicted /
    measured ``quantity`` ("energy" or "latency") in ``err``
    (``hw_profiles.validation.heldout_error``), two significant digits (whole numbers from
    100 up); None where no held-out row gives it."""
    m = None if err is None else err.get(f"{quantity}_median_factor")
    if m is None:
        return None

    def digits(x: float) -> str:
        return f"{x:.0f}" if x >= 100 else f"{x:.2g}"
    return f"x{digits(m)} median, x{digits(err[f'{quantity}_worst_factor'])} worst"


def _whose(err: dict) -> str:
    """``"stm32l4r5/tflm-2.3.1"``, the profile alone where no stack is priced (the
    neuromorphic profiles), or the device kinds of the rows where they are not the
    profile's own: ``"edge-gpu, gpu, vpu rows/all stacks"``."""
    if err.get("profile"):
        return f"{err['profile']}/{err['stack']}" if err["stack"] else err["profile"]
    kinds = err.get("device_kinds") or [err["kind"]]
    return f"{', '.join(kinds)} rows/{err['stack']}"


def _where(err: dict) -> str:
    """The profiles a device kind's rows ran on, and that none ran on the report's profile
    where none did: ``" on stm32h7a3, stm32l4r5; none on fpga-bnn"`` ("" for a profile's
    own rows)."""
    if err.get("profile") or not err.get("profiles"):
        return ""
    unmeasured = err.get("measured") is False and err.get("for_profile")
    return f" on {', '.join(err['profiles'])}" + (
        f"; none on {err['for_profile']}" if unmeasured else "")


def error_source(err: dict) -> str:
    """Whose held-out rows ``err`` summarises, short (the headline's):
    ``"stm32l4r5/xcube-ai-9.0, 2 rows"``, ``"mcu rows/all stacks, 38 rows"``
    (:func:`describe_error` adds the profiles they ran on)."""
    return f"{_whose(err)}, {err['rows']} rows"


def describe_error(err: dict) -> str:
    """One line for a held-out error (``hw_profiles.validation.heldout_error``): whose rows,
    then the factor max(r, 1/r) of predicted / measured, median and worst, energy and
    latency."""
    def f(name):
        factors = error_factors(err, name)
        return f"{name} {factors}" if factors is not None else f"{name} -"
    other = (f"; no held-out row ran {err['asked']!r} on this profile: these are the "
             "kind's rows on other profiles and stacks" if err.get("asked") else "")
    return (f"held-out error for {_whose(err)} ({err['rows']} rows{_where(err)}): "
            f"{f('energy')}; {f('latency')}{other}")


# --- overflow checks: no report shows `inf J nan%` ------------------------------------------
# Loaded profiles are bounded (hw_profiles/loader.py MAX_BY_UNIT) and run files hold int64
# counts, so these fire only for profiles or ledgers built in memory past those bounds (a
# throughput of 1e-300/s, a Python-int count of 10**400): then the figure is refused, naming
# the op and scope, rather than summed into an infinite total.
def _check_counts_finite(ledger: LedgerCounts, prof: HardwareProfile) -> None:
    for scope in ledger.scopes():
        items = [*ledger.ops(scope).items(),
                 *((f"{lv}:{d}", n) for (lv, d), n in ledger.bytes(scope).items())]
        for item, n in items:
            try:
                float(n)
            except OverflowError:
                raise PricingError(f"pricing on profile {prof.label!r}: count of {item} in "
                                   f"scope {scope!r} has {len(str(n))} digits, beyond a float "
                                   "(max ~1.8e308); the ledger is corrupt") from None


def _check_result_finite(charges, latency: dict[str, float], prof: HardwareProfile) -> None:
    """Every figure finite, else one line naming the profile entry that made it overflow:
    the price for an energy, the rate (throughput, bandwidth) for a time, the static power
    for static energy -- by its section and key, with its value."""
    where = f"pricing on profile {prof.label!r} overflows"
    hint = "figures must be finite (lower that entry or the count)"
    total = 0.0
    for c in charges:
        total += c.energy_j
        if not math.isfinite(c.energy_j):
            what = (f"static power {_entry(prof, c.entry)} over {c.count:g} s"
                    if c.category == "static" else
                    f"{c.count:g} x {c.item} at {_entry(prof, c.entry)}")
            raise PricingError(f"{where}: {what} in scope {c.scope!r} is {c.energy_j:g} J; "
                               f"{hint}")
        if not math.isfinite(c.seconds):
            raise PricingError(f"{where}: {c.count:g} x {c.item} in scope {c.scope!r} at "
                               f"{_rate_entry(prof, c)} takes {c.seconds:g} s; {hint}")
        if not math.isfinite(total):
            raise PricingError(f"{where}: the total energy passes {_FLOAT_MAX:g} J when adding "
                               f"{c.item} in scope {c.scope!r} ({c.energy_j:g} J at "
                               f"{_entry(prof, c.entry)}); {hint}")
    for scope, s in latency.items():
        if not math.isfinite(s):
            slowest = max((c for c in charges if c.scope == scope), key=lambda c: c.seconds,
                          default=None)
            rate = f" (its slowest line: {slowest.item} at {_rate_entry(prof, slowest)})" \
                if slowest is not None else ""
            raise PricingError(f"{where}: latency of scope {scope!r} is {s:g} s{rate}; {hint}")


def _entry(prof: HardwareProfile, key: str) -> str:
    """A profile entry as a user finds it in the TOML: ``[energy_pj] mac_fp32 = 2 pJ``,
    ``[[memory]] level 'offchip' read_pj_per_byte = 10 pJ/B``."""
    q = dict(prof.entries()).get(key)
    section, _, rest = key.partition(".")
    if section == "memory" and "." in rest:
        level, _, name = rest.partition(".")
        text = f"[[memory]] level {level!r} {name}"
    else:
        text = f"[{section}] {rest}" if rest else f"{section}"
    return f"{text} = {q.value:g} {q.unit}" if q is not None else text


def _rate_entry(prof: HardwareProfile, c) -> str:
    """The entry a line's time comes from: its op's throughput, its level's bandwidth."""
    keys = dict(prof.entries())
    level = c.item.partition(":")[0]
    for key in (f"throughput.{c.item}", f"memory.{level}.bandwidth_bytes_per_s",
                f"core_op_ns.{c.item}"):
        if key in keys:
            return _entry(prof, key)
    return "the rate the profile gives it"


_FLOAT_MAX = sys.float_info.max


def price_many(ledger: LedgerCounts, profiles: Iterable[str | HardwareProfile],
               **options) -> list[EnergyReport]:
    """Price one ledger on several profiles (the comparison behind ``neuroedge compare``).

    A neuromorphic run priced on another neuromorphic chip keeps the first chip's placement;
    its time is then a lower bound (see ``EnergyReport.time_model``) and
    ``sim.execution.neuromorphic.reprice`` re-places it for the exact figure."""
    return [price(ledger, p, **options) for p in profiles]
