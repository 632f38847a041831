"""Price a Ledger on a HardwareProfile: joules per op, scope and sample; bytes; latency; static.

The model, stated once (every figure in a report is an *estimate* built from it):

- dynamic energy = sum over ops of ``count x energy_pj[op]``
  + sum over memory levels of ``bytes read x read_pj_per_byte + bytes written x write_pj_per_byte``;
- latency of a scope (a roofline bound) = ``max(compute time, memory time)`` where compute
  time = sum over ops of ``count / throughput[op]`` (ops share the chip, so their times add)
  and memory time = sum over levels of ``bytes / bandwidth_bytes_per_s``; scopes run one
  after another, so the run's latency is the sum over scopes;
- static energy = ``static power_w x latency``, charged to each scope for its own latency.

A count the profile has no number for is an error naming the op (or level) and the profile,
never a silent zero.
"""
from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass, field
from typing import Iterable

from hw_profiles import load
from hw_profiles.errors import PricingError
from hw_profiles.ops import OPS, OP_NAMES
from hw_profiles.profile import HardwareProfile
from sim.ledger import within

FORMAT = "neuroedge.EnergyReport"
FORMAT_VERSION = 1
PJ = 1e-12


@dataclass(frozen=True)
class Charge:
    """One priced line: ``count`` of ``item`` in ``scope`` at ``unit_pj`` each."""

    scope: str
    category: str     # compute | communication | learning | memory | static
    item: str         # op name, "LEVEL:read|write", or "static"
    count: float      # ops, bytes, or seconds for static
    unit_pj: float    # pJ per op / per byte; for static: pJ per second (= W x 1e12)
    energy_j: float
    seconds: float    # time this line contributes to the roofline (compute or memory side)
    entry: str        # profile key the price came from, e.g. "energy_pj.synop"


@dataclass(frozen=True)
class EnergyReport:
    """What a ledger costs on one profile. All figures are estimates; see ``entries``.

    Attributes
    ----------
    profile : the profile's label (its name, or ``"NAME (file: PATH)"`` for a user's file);
        kind : its engine kind
    charges : every priced line (see :class:`Charge`)
    latency_s : mapping scope -> estimated seconds (roofline; see module docstring)
    samples : mapping scope -> samples processed there
    entries : mapping profile key -> citation line of every number used
    uncounted : mapping op name -> calls the engine could not count
    """

    profile: str
    kind: str
    charges: tuple[Charge, ...]
    latency_s: dict[str, float]
    samples: dict[str, int]
    entries: dict[str, str]
    uncounted: dict[str, int] = field(default_factory=dict)
    # -- which time model made each figure (issue 13 items 3 and 5) ------------------------
    # time_model: scope -> how its latency was built (empty: the roofline of the module
    # docstring); static_basis: what the static power was multiplied by.
    time_model: dict[str, str] = field(default_factory=dict)
    static_basis: str = "run time: static power x estimated latency (roofline)"
    # -- end time model ------------------------------------------------------------------

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
                "time_model": dict(self.time_model), "static_basis": self.static_basis}

    @classmethod
    def from_dict(cls, data) -> "EnergyReport":
        if data.get("type") != FORMAT or data.get("version") != FORMAT_VERSION:
            raise PricingError(f"not an energy report of version {FORMAT_VERSION}: type "
                               f"{data.get('type')!r}, version {data.get('version')!r}")
        return cls(profile=data["profile"], kind=data["kind"],
                   charges=tuple(Charge(**c) for c in data["charges"]),
                   latency_s=dict(data["latency_s"]), samples=dict(data["samples"]),
                   entries=dict(data["entries"]), uncounted=dict(data["uncounted"]),
                   time_model=dict(data.get("time_model", {})),
                   static_basis=data.get("static_basis", cls.static_basis))


def price(ledger, profile: str | HardwareProfile, *, realtime: bool = False) -> EnergyReport:
    """Price every count of ``ledger`` on ``profile``.

    ``realtime`` (neuromorphic profiles with a step-time model): pace every time step to the
    network's dt and charge static power over that duration instead of the run time.

    Raises
    ------
    PricingError
        The ledger counts an op, or moves bytes at a memory level, for which the profile
        has no number; ``realtime`` on a profile without a step-time model; or a
        figure is not finite (overflow), naming the op and scope.
    """
    prof = load(profile)
    _check_counts_finite(ledger, prof)
    # -- neuromorphic execution model (issue 13 item 3): sim/neuromorphic/timing.py --------
    if prof.kind == "neuromorphic" and prof.core_op_ns:
        from sim.neuromorphic.timing import price_neuromorphic
        return price_neuromorphic(ledger, prof, realtime=realtime)
    if realtime:
        raise PricingError(f"realtime pacing needs a neuromorphic profile with [core_op_ns] "
                           f"and [step_sync]; {prof.label!r} ({prof.kind}) has none")
    # -- end neuromorphic execution model --------------------------------------------------
    missing_ops = sorted(set(ledger.total_ops()) - set(prof.energy_pj),
                         key=OP_NAMES.index)
    if missing_ops:
        raise PricingError(
            f"profile {prof.name!r} has no energy for op(s) {', '.join(missing_ops)} counted "
            f"by this ledger; it prices {', '.join(prof.energy_pj) or 'no ops'}. Price the run "
            f"on a profile of a kind that executes these ops, or add them to the profile")
    missing_levels = sorted({lv for lv, _ in ledger.total_bytes()} - set(prof.memory))
    if missing_levels:
        raise PricingError(
            f"profile {prof.name!r} has no memory level {', '.join(missing_levels)} for bytes "
            f"counted by this ledger; its levels are {', '.join(prof.memory)}")

    charges: list[Charge] = []
    latency: dict[str, float] = {}
    entries: dict[str, str] = {}
    static_pj_per_s = prof.static_power_w.value / PJ
    for scope in ledger.scopes():
        compute_s = memory_s = 0.0
        for op, n in ledger.ops(scope).items():
            e, rate = prof.energy_pj[op], prof.throughput[op]
            t = n / rate.value
            compute_s += t
            charges.append(Charge(scope, OPS[op], op, n, e.value, n * e.value * PJ, t,
                                  f"energy_pj.{op}"))
            entries[f"energy_pj.{op}"] = prof.cite(e)
            entries[f"throughput.{op}"] = prof.cite(rate)
        for (level, direction), n in ledger.bytes(scope).items():
            mem = prof.memory[level]
            q = mem.read_pj_per_byte if direction == "read" else mem.write_pj_per_byte
            t = n / mem.bandwidth_bytes_per_s.value
            memory_s += t
            key = f"memory.{level}.{direction}_pj_per_byte"
            charges.append(Charge(scope, "memory", f"{level}:{direction}", n, q.value,
                                  n * q.value * PJ, t, key))
            entries[key] = f"{mem.name}: " + prof.cite(q)
            entries[f"memory.{level}.bandwidth_bytes_per_s"] = \
                f"{mem.name}: " + prof.cite(mem.bandwidth_bytes_per_s)
        seconds = max(compute_s, memory_s)
        latency[scope] = seconds
        if seconds > 0 and static_pj_per_s > 0:
            charges.append(Charge(scope, "static", "static", seconds, static_pj_per_s,
                                  prof.static_power_w.value * seconds, 0.0, "static.power_w"))
            entries["static.power_w"] = prof.cite(prof.static_power_w)
    _check_result_finite(charges, latency, prof)
    return EnergyReport(profile=prof.label, kind=prof.kind, charges=tuple(charges),
                        latency_s=latency, samples=ledger.samples(), entries=entries,
                        uncounted=ledger.uncounted())


# --- overflow checks (issue 11 item 5): no report shows `inf J nan%` -------------------------
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
# --- end overflow checks -------------------------------------------------------------------


def price_many(ledger, profiles: Iterable[str | HardwareProfile],
               **options) -> list[EnergyReport]:
    """Price one ledger on several profiles (the comparison behind ``neuroedge compare``).

    A neuromorphic run priced on another neuromorphic chip keeps the first chip's placement;
    its time is then a lower bound (see ``EnergyReport.time_model``) and
    ``sim.neuromorphic.timing.reprice`` re-places it for the exact figure."""
    return [price(ledger, p, **options) for p in profiles]
