"""Plain-data types of a hardware profile: frozen dataclasses, one per TOML section.

They are built and validated once by :mod:`hw_profiles.loader`; nothing downstream
re-checks them. Names carry their units (``energy_pj``, ``read_pj_per_byte``, ``power_w``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

KINDS = ("neuromorphic", "bitwise", "gpu", "cpu")
PROVENANCES = ("measured", "simulated", "specified", "derived", "fitted")
"""``fitted``: fitted by ``bench/calibrate.py`` on the validation table's calibration rows,
which its ``derivation`` names (never on held-out rows)."""
MEMORY_LEVELS = ("local", "shared", "offchip", "nonvolatile")
EXECUTION_STACKS = {"gpu": ("eager", "graph", "fused", "tf1-session"),
                    "cpu": ("eager", "graph", "fused", "tf1-session"),
                    "bitwise": ("peak",), "neuromorphic": ("native",)}
"""kind -> the software stacks its execution model prices (sim/execution: what each means).
A bitwise profile's own ``[stacks.NAME]`` tables add kernel libraries beside them, under
other names."""


@dataclass(frozen=True)
class Source:
    """A public reference that numbers of the profile cite."""

    key: str
    title: str
    url: str
    kind: str  # paper | datasheet | web | book


@dataclass(frozen=True)
class Quantity:
    """One number of a profile with its unit and where it comes from.

    ``derivation`` holds the arithmetic when ``provenance == "derived"``.
    """

    value: float
    unit: str
    provenance: str
    source: str
    derivation: str = ""
    note: str = ""

    def cite(self, sources: Mapping[str, Source]) -> str:
        """One line: value, unit, provenance and the cited reference."""
        src = sources[self.source]
        text = f"{self.value:g} {self.unit} ({self.provenance}; {src.title}, {src.url})"
        if self.derivation:
            text += f" [derived: {self.derivation}]"
        return text


@dataclass(frozen=True)
class MemoryLevel:
    """One memory of the hardware, mapped to a logical level the ledger counts in."""

    name: str
    level: str
    capacity_bytes: Quantity
    read_pj_per_byte: Quantity
    write_pj_per_byte: Quantity
    bandwidth_bytes_per_s: Quantity


@dataclass(frozen=True)
class HardwareProfile:
    """A hardware target: energy and rate per primitive op, memories, limits, sources.

    Attributes
    ----------
    energy_pj : mapping op name -> Quantity (pJ per op)
    throughput : mapping op name -> Quantity (peak ops per second, whole chip)
    memory : mapping logical level -> MemoryLevel
    interconnect, limits : mapping key -> Quantity
    static_power_w : Quantity
    execution : mapping key -> Quantity (board power, launch time, ... of the kind's model)
    sources : mapping key -> Source
    path : file the profile was loaded from ("" for one built in memory)
    raw : the parsed TOML document, kept so a run file can snapshot the profile exactly
    label : how reports, run files and comparison rows name the profile: the name for a
        shipped profile, ``"NAME (file: /abs/path.toml)"`` for a user's file, so a user file
        that reuses a shipped name is never mistaken for it (defaults to ``name``)
    """

    name: str
    kind: str
    description: str
    energy_pj: Mapping[str, Quantity]
    throughput: Mapping[str, Quantity]
    memory: Mapping[str, MemoryLevel]
    interconnect: Mapping[str, Quantity]
    limits: Mapping[str, Quantity]
    static_power_w: Quantity
    sources: Mapping[str, Source]
    technology_node_nm: Quantity | None = None
    # execution model parameters (SCHEMA.md [execution])
    execution: Mapping[str, Quantity] = field(default_factory=lambda: MappingProxyType({}))
    path: str = ""
    raw: Mapping = field(default_factory=lambda: MappingProxyType({}), repr=False, compare=False)
    # neuromorphic execution model (sim/execution/neuromorphic.py):
    # core_op_ns: op -> time one core spends on one such op (ns); step_sync: barrier_ns,
    # optional barrier_one_router_ns and tick_ns. Empty when the profile does not give them.
    core_op_ns: Mapping[str, Quantity] = field(default_factory=lambda: MappingProxyType({}))
    step_sync: Mapping[str, Quantity] = field(default_factory=lambda: MappingProxyType({}))
    label: str = ""
    # software stacks with profile-specific parameters ([stacks.NAME], SCHEMA.md) and the one
    # a run is priced for when none is asked ("" : the execution model's default)
    stacks: Mapping[str, Mapping[str, Quantity]] = field(
        default_factory=lambda: MappingProxyType({}))
    default_stack: str = ""

    def __post_init__(self):
        if not self.label:
            object.__setattr__(self, "label", self.name)  # frozen: set once, here

    def limit(self, key: str, default: float | None = None) -> float | None:
        """Value of a hardware limit, or ``default`` when the profile does not state it."""
        q = self.limits.get(key)
        return default if q is None else q.value

    def payload_range(self) -> tuple[int, int]:
        """The spike payloads a neuromorphic chip carries, lowest and highest: (1, 1) for
        binary spikes (no ``spike_payload_bits``), else signed values of magnitude below
        2^(b-1) for ``spike_payload_bits`` b."""
        bits = self.limit("spike_payload_bits")
        if bits is None:
            return 1, 1
        top = 2 ** (int(bits) - 1) - 1
        return -top, top

    def cite(self, quantity: Quantity) -> str:
        return quantity.cite(self.sources)

    def entries(self):
        """Yield ``(dotted key, Quantity)`` for every number of the profile."""
        if self.technology_node_nm is not None:
            yield "technology_node_nm", self.technology_node_nm
        for op, q in self.energy_pj.items():
            yield f"energy_pj.{op}", q
        for op, q in self.throughput.items():
            yield f"throughput.{op}", q
        for level, mem in self.memory.items():
            for attr in ("capacity_bytes", "read_pj_per_byte", "write_pj_per_byte",
                         "bandwidth_bytes_per_s"):
                yield f"memory.{level}.{attr}", getattr(mem, attr)
        for k, q in self.interconnect.items():
            yield f"interconnect.{k}", q
        for k, q in self.limits.items():
            yield f"limits.{k}", q
        yield "static.power_w", self.static_power_w
        for k, q in self.core_op_ns.items():      # neuromorphic execution model
            yield f"core_op_ns.{k}", q
        for k, q in self.step_sync.items():
            yield f"step_sync.{k}", q
        for k, q in self.execution.items():
            yield f"execution.{k}", q
        for name, table in self.stacks.items():
            for k, q in table.items():
                yield f"stacks.{name}.{k}", q
