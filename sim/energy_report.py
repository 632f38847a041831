"""What a priced ledger says: :class:`Charge` lines and the :class:`EnergyReport` they make.

Plain data, below pricing and the execution models: :func:`sim.pricing.price` and every model
in :mod:`sim.execution` build these; reports, run files and the CLI read them. Units: a
charge's ``unit_pj`` is picojoules per op, per byte or (static lines) per second; energies are
joules (``PJ`` converts), times seconds.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from sim.errors import PricingError
from sim.scope_paths import within

FORMAT = "neuroedge.EnergyReport"
FORMAT_VERSION = 2
_READ_VERSIONS = (1, 2)  # version 1 lacks the "what a figure is" fields: upgraded on read
PJ = 1e-12
"""Joules per picojoule."""
BOUNDS = ("estimate", "lower bound", "upper bound")
"""What a report's totals can be (:attr:`EnergyReport.bound`)."""
_LOWER = BOUNDS[1]   # also the words a time model uses for a time built as a lower bound


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
    validation_error : median relative error, against the validation table of published
        measurements, of the held-out rows ``hw_profiles.validation.error_rows`` picks: the
        profile's device kind where rows price the profile, else its profile kind's rows
        (named by device kind and profile); this profile's own rows for a neuromorphic one
        (``PER_PROFILE_KINDS``); None while no held-out row covers it
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
    # the software stack the run was priced for (sim/execution STACKS; "" : not recorded)
    stack: str = ""
    # held-out error of this kind and stack (hw_profiles.validation.heldout_error): rows,
    # energy / latency median and worst factor max(r, 1/r); None while no row covers them
    validation: dict | None = None

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

    @property
    def launch_idle_j(self) -> float:
        """Idle power over the time spent in per-op host dispatch (``overhead`` charges, gpu/cpu
        eager stack): the device does no work meanwhile, so this is never dynamic energy."""
        return sum(c.energy_j for c in self.charges if c.category == "overhead")

    @property
    def dynamic_j(self) -> float:
        """Energy of the work itself: total minus static power and idle power during launches."""
        return self.total_j - self.static_j - self.launch_idle_j

    def latency_bound(self, scope: str | None = None) -> str:
        """What the latency of ``scope`` (sub-scopes included; None: the whole run) is:
        "lower bound" where an op ran uncounted or the time of the scope or a sub-scope was
        built as a lower bound (its :attr:`time_model` says so: the neuromorphic step
        model's ideal spread of ops counted outside the engine's steps), else :attr:`bound`."""
        lower = any(_LOWER in model for s, model in self.time_model.items()
                    if scope is None or within(s, scope))
        return _LOWER if self.uncounted or lower else self.bound

    def energy_bound(self, scope: str | None = None) -> str:
        """What the energy of ``scope`` (sub-scopes included; None: the whole run) is:
        "lower bound" where an op ran uncounted, or where static power was charged over a
        time built as a lower bound (static energy is power x that time), else
        :attr:`bound`."""
        lower = any(c.category == "static" and c.energy_j > 0
                    and _LOWER in self.time_model.get(c.scope, "")
                    for c in self.charges if scope is None or within(c.scope, scope))
        return _LOWER if self.uncounted or lower else self.bound

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
                "validation_error": self.validation_error, "stack": self.stack,
                "validation": self.validation}

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
                   validation_error=None if v1 else data["validation_error"],
                   stack=data.get("stack", ""), validation=data.get("validation"))
