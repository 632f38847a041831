"""Price a Ledger on a HardwareProfile: joules per op, scope and sample; bytes; latency; static.

This module owns the report types (:class:`Charge`, :class:`EnergyReport`) and :func:`price`,
which checks that the profile prices every count and then hands the ledger to the execution
model of the profile's kind (``EXECUTION_MODELS``; one module each under :mod:`sim.execution`):

- ``gpu``, ``cpu``: :mod:`sim.execution.gpu_cpu` (launch time, Hockney efficiency below the
  roofline, idle power over the whole run, cache reuse of a resident footprint);
- ``bitwise``: :mod:`sim.execution.mcu` (serial in-order core, SRAM/flash placement and
  capacity);
- any other kind: :func:`price_roofline` below (per scope, ``max(compute, memory)`` at peak
  rates; static power over that latency).

Every report says which model priced it, what it leaves out and whether its figures are an
estimate, a lower or an upper bound (``execution_model``, ``excluded``, ``bound``). A count the
profile has no number for is an error naming the op (or level) and the profile, never a
silent zero.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace

from hw_profiles import load
from hw_profiles.ops import EXECUTION_OPS, OP_NAMES, OPS
from hw_profiles.profile import HardwareProfile
from sim.errors import PricingError
from sim.ledger import within

FORMAT = "neuroedge.EnergyReport"
FORMAT_VERSION = 2
_READ_VERSIONS = (1, 2)  # version 1 lacks the "what a figure is" fields: upgraded on read
PJ = 1e-12
BOUNDS = ("estimate", "lower bound", "upper bound")


@dataclass(frozen=True)
class Charge:
    """One priced line: ``count`` of ``item`` in ``scope`` at ``unit_pj`` each."""

    scope: str
    category: str     # compute | communication | learning | memory | static | overhead
    item: str         # op name, "LEVEL:read|write", or "static"
    count: float      # ops, bytes, or seconds for static
    unit_pj: float    # pJ per op / per byte; for static: pJ per second (= W x 1e12)
    energy_j: float
    seconds: float    # time this line contributes to the roofline (compute or memory side)
    entry: str        # profile key the price came from, e.g. "energy_pj.synop"


@dataclass(frozen=True)
class EnergyReport:
    """What a ledger costs on one profile, and what kind of figure that is.

    Attributes
    ----------
    profile : the profile's label (its name, or ``"NAME (file: PATH)"`` for a user's file);
        kind : its engine kind
    charges : every priced line (see :class:`Charge`)
    latency_s : mapping scope -> estimated seconds (see the execution model)
    samples : mapping scope -> samples processed there
    entries : mapping profile key -> citation line of every number used
    uncounted : mapping op name -> calls the engine could not count
    execution_model : one line naming the model that priced the ledger and its rules
    bound : "estimate", "lower bound" or "upper bound": what the totals are
    excluded : what the figures leave out (each a short sentence)
    notes : decisions the model took for this ledger (cache fit, memory placement, ...)
    validation_error : median relative error of this device kind against the validation
        table of published measurements; None while no validation covers the kind
    """

    profile: str
    kind: str
    charges: tuple[Charge, ...]
    latency_s: dict[str, float]
    samples: dict[str, int]
    entries: dict[str, str]
    uncounted: dict[str, int] = field(default_factory=dict)
    # time_model: scope -> how its latency was built (empty: the roofline of the module
    # docstring); static_basis: what the static power was multiplied by.
    time_model: dict[str, str] = field(default_factory=dict)
    static_basis: str = "run time: static power x estimated latency (roofline)"
    execution_model: str = ""
    bound: str = "estimate"
    excluded: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    validation_error: float | None = None

    # -- aggregates ----------------------------------------------------------------------
    @property
    def total_j(self) -> float:
        return sum(c.energy_j for c in self.charges)

    @property
    def total_latency_s(self) -> float:
        return sum(self.latency_s.values())

    @property
    def static_j(self) -> float:
        return sum(c.energy_j for c in self.charges if c.category == "static")

    def by_category(self) -> dict[str, float]:
        return self._sum(lambda c: c.category)

    def by_op(self) -> dict[str, float]:
        """Energy per op name (memory lines as "LEVEL:read|write", static as "static")."""
        return self._sum(lambda c: c.item)

    def by_scope(self, depth: int | None = None) -> dict[str, float]:
        """Energy per scope; ``depth`` truncates scope paths (1: "train", "infer", ...)."""
        def key(c):
            parts = c.scope.split("/") if c.scope else ["(root)"]
            return "/".join(parts[:depth] if depth else parts)
        return self._sum(key)

    def bytes_moved(self) -> dict[str, int]:
        """Bytes per "LEVEL:read|write" summed over scopes."""
        out: dict[str, int] = {}
        for c in self.charges:
            if c.category == "memory":
                out[c.item] = out.get(c.item, 0) + int(c.count)
        return out

    def energy_within(self, scope: str) -> float:
        return sum(c.energy_j for c in self.charges if within(c.scope, scope))

    def per_sample_j(self) -> dict[str, float]:
        """Energy per sample for every scope that recorded samples (sub-scopes included)."""
        return {s: self.energy_within(s) / n for s, n in self.samples.items() if n > 0}

    def _sum(self, key) -> dict[str, float]:
        out: dict[str, float] = {}
        for c in self.charges:
            k = key(c)
            out[k] = out.get(k, 0.0) + c.energy_j
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    # -- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"type": FORMAT, "version": FORMAT_VERSION, "profile": self.profile,
                "kind": self.kind, "charges": [asdict(c) for c in self.charges],
                "latency_s": dict(self.latency_s), "samples": dict(self.samples),
                "entries": dict(self.entries), "uncounted": dict(self.uncounted),
                "time_model": dict(self.time_model), "static_basis": self.static_basis,
                "execution_model": self.execution_model, "bound": self.bound,
                "excluded": list(self.excluded), "notes": list(self.notes),
                "validation_error": self.validation_error}

    @classmethod
    def from_dict(cls, data) -> EnergyReport:
        """Read a serialised report; version 1 (before ``bound`` and friends) is upgraded
        with ``bound = "estimate"`` and an ``execution_model`` saying it was not recorded."""
        if data.get("type") != FORMAT or data.get("version") not in _READ_VERSIONS:
            raise PricingError(f"not an energy report of a supported version: type "
                               f"{data.get('type')!r}, version {data.get('version')!r}; this "
                               f"neuroedge reads versions {', '.join(map(str, _READ_VERSIONS))}")
        v1 = data["version"] == 1
        return cls(profile=data["profile"], kind=data["kind"],
                   charges=tuple(Charge(**c) for c in data["charges"]),
                   latency_s=dict(data["latency_s"]), samples=dict(data["samples"]),
                   entries=dict(data["entries"]), uncounted=dict(data["uncounted"]),
                   time_model=dict(data.get("time_model", {})),
                   static_basis=data.get("static_basis", cls.static_basis),
                   execution_model="(not recorded: version-1 report)" if v1
                   else data["execution_model"],
                   bound="estimate" if v1 else data["bound"],
                   excluded=() if v1 else tuple(data["excluded"]),
                   notes=() if v1 else tuple(data["notes"]),
                   validation_error=None if v1 else data["validation_error"])


EXECUTION_MODELS: dict = {}
"""profile kind -> function(ledger, profile) -> EnergyReport; filled by :func:`_models`."""


def _models() -> dict:
    """The kind -> model registry, filled on first use (the modules import this one)."""
    if not EXECUTION_MODELS:
        from sim.execution import gpu_cpu, mcu
        EXECUTION_MODELS.update({"gpu": gpu_cpu.price, "cpu": gpu_cpu.price,
                                 "bitwise": mcu.price})
    return EXECUTION_MODELS


def check_prices(ledger, prof: HardwareProfile) -> None:
    """Raise unless ``prof`` has a number for every op and memory level the ledger counts.

    Ops priced by the execution model (``EXECUTION_OPS``) are left to it. A bitwise profile
    without an ``offchip`` level maps the torch engine's device-memory bytes to its own
    memories (:mod:`sim.execution.mcu`), so that level is not required there.
    """
    missing_ops = sorted(set(ledger.total_ops()) - set(prof.energy_pj) - EXECUTION_OPS,
                         key=OP_NAMES.index)
    if missing_ops:
        raise PricingError(
            f"profile {prof.name!r} has no energy for op(s) {', '.join(missing_ops)} counted "
            f"by this ledger; it prices {', '.join(prof.energy_pj) or 'no ops'}. Price the run "
            f"on a profile of a kind that executes these ops, or add them to the profile")
    levels = {lv for lv, _ in ledger.total_bytes()}
    if prof.kind == "bitwise":
        levels -= {"offchip"} - set(prof.memory)
    missing_levels = sorted(levels - set(prof.memory))
    if missing_levels:
        raise PricingError(
            f"profile {prof.name!r} has no memory level {', '.join(missing_levels)} for bytes "
            f"counted by this ledger; its levels are {', '.join(prof.memory)}")


def price(ledger, profile: str | HardwareProfile, *, realtime: bool = False) -> EnergyReport:
    """Price every count of ``ledger`` on ``profile`` with the execution model of its kind.

    ``realtime`` (neuromorphic profiles with a step-time model): pace every time step to the
    network's dt and charge static power over that duration instead of the run time.

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
    _check_counts_finite(ledger, prof)
    stepped = prof.kind == "neuromorphic" and bool(prof.core_op_ns)
    if realtime and not stepped:
        raise PricingError(f"realtime pacing needs a neuromorphic profile with [core_op_ns] "
                           f"and [step_sync]; {prof.label!r} ({prof.kind}) has none")
    check_prices(ledger, prof)
    if stepped:   # per-core step-time model: sim/neuromorphic/timing.py
        from sim.neuromorphic.timing import price_neuromorphic
        report = price_neuromorphic(ledger, prof, realtime=realtime)
    else:
        report = _models().get(prof.kind, price_roofline)(ledger, prof)   # dispatch by kind
    _check_result_finite(report.charges, report.latency_s, prof)
    return _with_validation(report)


def _with_validation(report: EnergyReport) -> EnergyReport:
    """Attach the held-out validation error of the report's device kind."""
    from hw_profiles.validation import kind_summary
    v = kind_summary().get(report.kind)
    if v is None:
        return report
    note = (f"validation ({report.kind}): {v['rows']} held-out published measurement(s), "
            f"predicted / measured {v['min_ratio']:.2g}-{v['max_ratio']:.2g} "
            "(neuroedge validate)")
    return replace(report, validation_error=v["median_rel_error"], notes=report.notes + (note,))


ROOFLINE = ("roofline: per scope max(compute, memory) at peak rates, scopes in sequence; "
            "static power x that latency")


def price_roofline(ledger, prof: HardwareProfile) -> EnergyReport:
    """The generic model: per scope ``max(sum count / rate, sum bytes / bandwidth)``.

    dynamic energy = sum over ops of ``count x energy_pj[op]`` + sum over levels of
    ``bytes x pJ/B``; static energy = ``static power x latency``, charged to each scope for
    its own latency. Every figure is an estimate.
    """
    charges: list[Charge] = []
    latency: dict[str, float] = {}
    entries: dict[str, str] = {}
    static_pj_per_s = prof.static_power_w.value / PJ
    for scope in ledger.scopes():
        compute_s = memory_s = 0.0
        for op, n in ledger.ops(scope).items():
            if op in EXECUTION_OPS:
                continue
            c = op_charge(prof, scope, op, n, entries)
            compute_s += c.seconds
            charges.append(c)
        for (level, direction), n in ledger.bytes(scope).items():
            c = memory_charge(prof, scope, level, direction, n, entries)
            memory_s += c.seconds
            charges.append(c)
        seconds = max(compute_s, memory_s)
        latency[scope] = seconds
        if seconds > 0 and static_pj_per_s > 0:
            charges.append(static_charge(prof, scope, seconds, entries))
    excluded = ["kernel launches (not modelled for this kind)"] \
        if "kernel_launch" in ledger.total_ops() else []
    return EnergyReport(profile=prof.label, kind=prof.kind, charges=tuple(charges),
                        latency_s=latency, samples=ledger.samples(), entries=entries,
                        uncounted=ledger.uncounted(), execution_model=ROOFLINE,
                        bound="estimate", excluded=tuple(excluded))


# -- charge builders shared by the execution models --------------------------------------------
def op_charge(prof: HardwareProfile, scope: str, op: str, n: int, entries: dict) -> Charge:
    """``n`` ops at ``energy_pj[op]``; seconds at the peak ``throughput[op]``."""
    e, rate = prof.energy_pj[op], prof.throughput[op]
    entries[f"energy_pj.{op}"] = prof.cite(e)
    entries[f"throughput.{op}"] = prof.cite(rate)
    return Charge(scope, OPS[op], op, n, e.value, n * e.value * PJ, n / rate.value,
                  f"energy_pj.{op}")


def memory_charge(prof: HardwareProfile, scope: str, level: str, direction: str, n: int,
                  entries: dict, item: str | None = None) -> Charge:
    """``n`` bytes read or written at ``level``; seconds at its peak bandwidth.

    ``item`` names the line when it differs from ``LEVEL:direction`` (a remapped level).
    """
    mem = prof.memory[level]
    q = mem.read_pj_per_byte if direction == "read" else mem.write_pj_per_byte
    key = f"memory.{level}.{direction}_pj_per_byte"
    entries[key] = f"{mem.name}: " + prof.cite(q)
    entries[f"memory.{level}.bandwidth_bytes_per_s"] = \
        f"{mem.name}: " + prof.cite(mem.bandwidth_bytes_per_s)
    return Charge(scope, "memory", item or f"{level}:{direction}", n, q.value,
                  n * q.value * PJ, n / mem.bandwidth_bytes_per_s.value, key)


def static_charge(prof: HardwareProfile, scope: str, seconds: float, entries: dict,
                  category: str = "static", item: str = "static") -> Charge:
    """Static (idle) power over ``seconds``; count is seconds, unit pJ per second."""
    entries["static.power_w"] = prof.cite(prof.static_power_w)
    w = prof.static_power_w.value
    return Charge(scope, category, item, seconds, w / PJ, w * seconds, 0.0, "static.power_w")


# --- overflow checks: no report shows `inf J nan%` ------------------------------------------
# Loaded profiles are bounded (hw_profiles/loader.py MAX_BY_UNIT) and run files hold int64
# counts, so these fire only for profiles or ledgers built in memory past those bounds (a
# throughput of 1e-300/s, a Python-int count of 10**400): then the figure is refused, naming
# the op and scope, rather than summed into an infinite total.
def _check_counts_finite(ledger, prof: HardwareProfile) -> None:
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
    total = 0.0
    for c in charges:
        total += c.energy_j
        if not (math.isfinite(c.energy_j) and math.isfinite(c.seconds)):
            raise PricingError(
                f"pricing on profile {prof.label!r} overflows: {c.count:g} x {c.item} in scope "
                f"{c.scope!r} at {c.entry} = {c.unit_pj:g} pJ gives {c.energy_j:g} J in "
                f"{c.seconds:g} s; figures must be finite (check the profile's numbers)")
        if not math.isfinite(total):
            raise PricingError(
                f"pricing on profile {prof.label!r} overflows: the total energy passes "
                f"{_FLOAT_MAX:g} J when adding {c.item} in scope {c.scope!r}; figures must be "
                "finite (check the profile's numbers)")
    for scope, s in latency.items():
        if not math.isfinite(s):
            raise PricingError(f"pricing on profile {prof.label!r} overflows: latency of scope "
                               f"{scope!r} is {s:g} s; figures must be finite")


_FLOAT_MAX = sys.float_info.max


def price_many(ledger, profiles: Iterable[str | HardwareProfile],
               **options) -> list[EnergyReport]:
    """Price one ledger on several profiles (the comparison behind ``neuroedge compare``).

    A neuromorphic run priced on another neuromorphic chip keeps the first chip's placement;
    its time is then a lower bound (see ``EnergyReport.time_model``) and
    ``sim.neuromorphic.timing.reprice`` re-places it for the exact figure."""
    return [price(ledger, p, **options) for p in profiles]
