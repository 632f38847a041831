"""Load hardware profiles from TOML and validate them strictly, once.

``load("loihi")`` reads a shipped profile (``hw_profiles/data/loihi.toml``);
``load("path/to/mine.toml")`` reads a user's file. Every problem is a
:class:`~hw_profiles.errors.ProfileError` naming the file, the key and what was expected,
e.g. ``loihi2.toml [energy_pj] synop = -1.0: energies must be >= 0 pJ``.
The format is documented in ``hw_profiles/SCHEMA.md``.
"""
from __future__ import annotations

import math
import tomllib
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from hw_profiles.errors import ProfileError
from hw_profiles.ops import OPS
from hw_profiles.profile import (KINDS, MEMORY_LEVELS, PROVENANCES, HardwareProfile,
                                 MemoryLevel, Quantity, Source)

SCHEMA_VERSION = 1
DATA_DIR = Path(__file__).with_name("data")

_TOP_KEYS = {"schema_version", "name", "kind", "description", "technology_node_nm",
             "energy_pj", "throughput", "memory", "interconnect", "limits", "static", "sources",
             "execution"}
_QUANTITY_KEYS = {"value", "unit", "provenance", "source", "derivation", "note"}
_MEMORY_QUANTITIES = {"capacity_bytes": "B", "read_pj_per_byte": "pJ/B",
                      "write_pj_per_byte": "pJ/B", "bandwidth_bytes_per_s": "B/s"}
_INTERCONNECT_UNITS = {"mesh_x": "1", "mesh_y": "1", "cores_per_router": "1",
                       "bits_per_packet": "bit"}
_LIMIT_UNITS = {"cores": "1", "neurons_per_core": "1", "synapse_bytes_per_core": "B",
                "fan_in_per_core": "1", "fan_out_per_core": "1", "weight_bits": "bit",
                "spike_payload_bits": "bit", "word_bits": "bit", "clock_hz": "Hz"}
_INTEGER_LIMITS = {"cores", "neurons_per_core", "synapse_bytes_per_core", "fan_in_per_core",
                   "fan_out_per_core", "weight_bits", "spike_payload_bits", "word_bits",
                   "mesh_x", "mesh_y", "cores_per_router", "bits_per_packet"}
_REQUIRED_LIMITS = {
    "neuromorphic": ("cores", "neurons_per_core", "synapse_bytes_per_core",
                     "fan_in_per_core", "fan_out_per_core", "weight_bits"),
    "bitwise": ("word_bits",),
    "cpu": ("word_bits",),
    "gpu": (),
}
# -- [execution] (issue 13 item 3): parameters of the kind's execution model ----------------
_EXECUTION_UNITS = {"board_power_w": "W", "launch_s": "s", "half_perf_ops": "1"}
# -- end [execution] -------------------------------------------------------------------------
_SOURCE_KEYS = {"title", "url", "kind"}
_SOURCE_KINDS = ("paper", "datasheet", "web", "book")


def available() -> list[str]:
    """Names of the shipped profiles, sorted."""
    return sorted(p.stem for p in DATA_DIR.glob("*.toml"))


def load(name_or_path: str | Path | HardwareProfile) -> HardwareProfile:
    """Return the validated profile for a shipped name, a TOML path, or a profile object.

    Raises
    ------
    ProfileError
        Unknown name, unreadable file, TOML syntax error or any schema violation.
    """
    if isinstance(name_or_path, HardwareProfile):
        return name_or_path
    text = str(name_or_path)
    path = Path(text)
    if not (text.endswith(".toml") or path.is_file() or "/" in text):
        path = DATA_DIR / f"{text}.toml"
        if not path.is_file():
            raise ProfileError(f"unknown hardware profile {text!r}: shipped profiles are "
                               f"{', '.join(available())}, or pass the path of a .toml file")
    if not path.is_file():
        raise ProfileError(f"profile file {text!r} does not exist: pass a shipped profile "
                           f"name ({', '.join(available())}) or the path of a .toml file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ProfileError(f"profile file {text!r} cannot be read: {exc.strerror}") from None
    profile = loads(raw, origin=path.name, path=str(path))
    if path.parent.resolve() == DATA_DIR.resolve() and profile.name != path.stem:
        raise ProfileError(f"{path.name}: name = {profile.name!r} must equal the file stem "
                           f"{path.stem!r} for a shipped profile")
    return profile


def loads(text: str | bytes, origin: str = "<string>", path: str = "") -> HardwareProfile:
    """Parse and validate profile TOML given as text; ``origin`` names it in errors."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProfileError(f"{origin}: not UTF-8 text (byte {exc.start}); a profile is a "
                               "TOML file") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{origin}: TOML syntax error: {exc}") from None
    return from_dict(doc, origin=origin, path=path)


def from_dict(doc: Mapping[str, Any], origin: str = "<dict>", path: str = "") -> HardwareProfile:
    """Validate a parsed profile document and build the frozen :class:`HardwareProfile`."""
    v = _Validator(origin)
    v.table(doc, "", _TOP_KEYS, required={"schema_version", "name", "kind", "description",
                                           "energy_pj", "throughput", "memory", "limits",
                                           "static", "sources"})
    if doc["schema_version"] != SCHEMA_VERSION or isinstance(doc["schema_version"], bool):
        v.fail("", "schema_version", doc["schema_version"],
               f"this neuroedge reads schema_version {SCHEMA_VERSION}")
    name = v.string(doc, "", "name")
    kind = v.string(doc, "", "kind")
    if kind not in KINDS:
        v.fail("", "kind", kind, f"expected one of {', '.join(KINDS)}")
    description = v.string(doc, "", "description")

    sources = v.sources(doc["sources"])
    tech = None
    if "technology_node_nm" in doc:
        tech = v.quantity(doc["technology_node_nm"], "", "technology_node_nm", "nm", "positive")

    energy = v.op_table(doc["energy_pj"], "energy_pj", "pJ", "nonnegative")
    throughput = v.op_table(doc["throughput"], "throughput", "1/s", "positive")
    if set(energy) != set(throughput):
        only_e = sorted(set(energy) - set(throughput))
        only_t = sorted(set(throughput) - set(energy))
        v.fail("throughput", "", "", "[energy_pj] and [throughput] must list the same ops; "
               f"missing from [throughput]: {only_e}, missing from [energy_pj]: {only_t}")

    memory = v.memory(doc["memory"], kind)
    interconnect = {}
    if "interconnect" in doc:
        interconnect = v.quantity_table(doc["interconnect"], "interconnect", _INTERCONNECT_UNITS)
    elif kind == "neuromorphic":
        v.fail("", "interconnect", "(missing)", "a neuromorphic profile needs an "
               "[interconnect] table (mesh_x, mesh_y, cores_per_router, bits_per_packet)")
    limits = v.quantity_table(doc["limits"], "limits", _LIMIT_UNITS)
    for key in _REQUIRED_LIMITS[kind]:
        if key not in limits:
            v.fail("limits", key, "(missing)", f"required for kind = {kind!r} "
                   f"(unit {_LIMIT_UNITS[key]!r})")
    v.table(doc["static"], "static", {"power_w"}, required={"power_w"})
    static = v.quantity(doc["static"]["power_w"], "static", "power_w", "W", "nonnegative")
    # -- [execution] (issue 13 item 3) --
    # optional here, so profile snapshots in run files written before it existed still load;
    # the gpu/cpu execution model refuses to price without it (sim/execution/gpu_cpu.py)
    execution = {}
    if "execution" in doc:
        execution = v.quantity_table(doc["execution"], "execution", _EXECUTION_UNITS)
    # -- end [execution] --

    unused = sorted(set(sources) - v.cited)
    if unused:
        v.fail("sources", unused[0], "", "this source is cited by no number; remove it or "
               "cite it")
    return HardwareProfile(
        name=name, kind=kind, description=description,
        energy_pj=MappingProxyType(energy), throughput=MappingProxyType(throughput),
        memory=MappingProxyType(memory), interconnect=MappingProxyType(interconnect),
        limits=MappingProxyType(limits), static_power_w=static,
        sources=MappingProxyType(sources), technology_node_nm=tech,
        execution=MappingProxyType(execution), path=path,
        raw=MappingProxyType(dict(doc)))


class _Validator:
    """Checks one document; every failure names the origin, section and key."""

    def __init__(self, origin: str):
        self.origin = origin
        self.source_keys: set[str] = set()
        self.cited: set[str] = set()

    def fail(self, section: str, key: str, value: Any, expected: str):
        where = f"{self.origin}"
        if section:
            where += f" [{section}]"
        if key:
            where += f" {key}"
            if value != "":
                where += f" = {value!r}"
        raise ProfileError(f"{where}: {expected}")

    def table(self, obj, section, allowed, required=()):
        if not isinstance(obj, dict):
            self.fail("", section, obj, "expected a table")
        unknown = sorted(set(obj) - set(allowed))
        if unknown:
            self.fail(section, unknown[0], "", f"unknown key; allowed keys are "
                      f"{', '.join(sorted(allowed))}")
        for key in sorted(required):
            if key not in obj:
                self.fail(section, key, "", "missing required key")

    def string(self, obj, section, key):
        value = obj[key]
        if not isinstance(value, str) or not value.strip():
            self.fail(section, key, value, "expected a non-empty string")
        return value

    def sources(self, obj) -> dict[str, Source]:
        if not isinstance(obj, dict) or not obj:
            self.fail("", "sources", obj, "expected a table of [sources.KEY] entries, "
                      "at least one")
        out = {}
        for key, entry in obj.items():
            section = f"sources.{key}"
            self.table(entry, section, _SOURCE_KEYS, required=_SOURCE_KEYS)
            for field_ in ("title", "url"):
                self.string(entry, section, field_)
            if entry["kind"] not in _SOURCE_KINDS:
                self.fail(section, "kind", entry["kind"],
                          f"expected one of {', '.join(_SOURCE_KINDS)}")
            if not entry["url"].startswith(("https://", "http://")):
                self.fail(section, "url", entry["url"], "expected an http(s) URL")
            out[key] = Source(key=key, title=entry["title"], url=entry["url"],
                              kind=entry["kind"])
        self.source_keys = set(out)
        return out

    def quantity(self, obj, section, key, unit, sign) -> Quantity:
        if not isinstance(obj, dict):
            self.fail(section, key, obj, f'expected a quantity table {{ value = ..., unit = '
                      f'"{unit}", provenance = ..., source = ... }}')
        self.table(obj, f"{section}.{key}" if section else key, _QUANTITY_KEYS,
                   required={"value", "unit", "provenance", "source"})
        value = obj["value"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            self.fail(section, key, value, f"value must be a finite number in {unit}")
        if obj["unit"] != unit:
            self.fail(section, key, f"{value} {obj['unit']}", f"unit must be {unit!r} "
                      f"(convert the value; units are not converted for you)")
        if sign == "nonnegative" and value < 0:
            what = "energies" if unit.startswith("pJ") else "values"
            self.fail(section, key, value, f"{what} must be >= 0 {unit}")
        if sign == "positive" and value <= 0:
            self.fail(section, key, value, f"must be > 0 {unit}")
        prov = obj["provenance"]
        if prov not in PROVENANCES:
            self.fail(section, key, prov, f"provenance must be one of {', '.join(PROVENANCES)}")
        src = obj["source"]
        if src not in self.source_keys:
            self.fail(section, key, src, f"source {src!r} is not defined in [sources] "
                      f"(defined: {', '.join(sorted(self.source_keys))})")
        derivation = obj.get("derivation", "")
        if prov == "derived" and (not isinstance(derivation, str) or not derivation.strip()):
            self.fail(section, key, value, "provenance = 'derived' needs a 'derivation' "
                      "giving the arithmetic and its cited inputs")
        self.cited.add(src)
        return Quantity(value=value, unit=unit, provenance=prov, source=src,
                        derivation=derivation, note=str(obj.get("note", "")))

    def op_table(self, obj, section, unit, sign) -> dict[str, Quantity]:
        if not isinstance(obj, dict):
            self.fail("", section, obj, "expected a table of op = quantity")
        out = {}
        for op, q in obj.items():
            if op not in OPS:
                self.fail(section, op, "", f"unknown op; ops are {', '.join(OPS)}")
            out[op] = self.quantity(q, section, op, unit, sign)
        return out

    def quantity_table(self, obj, section, units) -> dict[str, Quantity]:
        self.table(obj, section, set(units))
        out = {}
        for key, q in obj.items():
            sign = "nonnegative" if key == "spike_payload_bits" else "positive"
            out[key] = self.quantity(q, section, key, units[key], sign)
            if key in _INTEGER_LIMITS and out[key].value != int(out[key].value):
                self.fail(section, key, out[key].value, "expected a whole number")
        return out

    def memory(self, obj, kind) -> dict[str, MemoryLevel]:
        if not isinstance(obj, list) or not obj:
            self.fail("", "memory", obj, "expected at least one [[memory]] entry")
        out = {}
        for i, entry in enumerate(obj):
            section = f"memory.{i}"
            self.table(entry, section, {"name", "level", *_MEMORY_QUANTITIES},
                       required={"name", "level", *_MEMORY_QUANTITIES})
            name = self.string(entry, section, "name")
            level = entry["level"]
            if level not in MEMORY_LEVELS:
                self.fail(section, "level", level, f"expected one of {', '.join(MEMORY_LEVELS)}")
            if level in out:
                self.fail(section, "level", level, "only one [[memory]] entry per level")
            q = {k: self.quantity(entry[k], section, k, unit,
                                  "positive" if k == "bandwidth_bytes_per_s" else "nonnegative")
                 for k, unit in _MEMORY_QUANTITIES.items()}
            out[level] = MemoryLevel(name=name, level=level, **q)
        if kind in ("gpu", "cpu") and "offchip" not in out:
            self.fail("", "memory", "", f"a {kind} profile needs an 'offchip' memory level "
                      "(DRAM/HBM)")
        return out
