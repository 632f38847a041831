"""Load hardware profiles from TOML and validate them strictly, once.

``load("loihi")`` reads a shipped profile (``hw_profiles/data/loihi.toml``);
``load("path/to/mine.toml")`` reads a user's file. Every problem is a
:class:`~hw_profiles.errors.ProfileError` naming the file, the key and what was expected,
e.g. ``loihi2.toml [energy_pj] synop = -1.0: energies must be >= 0 pJ``.
The format is documented in ``hw_profiles/SCHEMA.md``.
"""
from __future__ import annotations

import math
import os
import re
import tomllib
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hw_profiles.errors import ProfileError, not_a_file, suggestion
from hw_profiles.ops import OPS
from hw_profiles.profile import (
    EXECUTION_STACKS,
    KINDS,
    MEMORY_LEVELS,
    PROVENANCES,
    HardwareProfile,
    MemoryLevel,
    Quantity,
    Source,
)

SCHEMA_VERSION = 1
DATA_DIR = Path(__file__).with_name("data")

_TOP_KEYS = {"schema_version", "name", "kind", "description", "technology_node_nm",
             "energy_pj", "throughput", "memory", "interconnect", "limits", "static", "sources",
             "execution", "stacks", "default_stack"}
# neuromorphic execution model (sim/execution/neuromorphic.py):
# [core_op_ns]: time one core spends per op it executes (the ops a core's pipeline does; a
# router hop is not a core op). [step_sync]: per-step barrier (whole chip, and optionally one
# router's cores, interpolated by routers used) and an optional fixed tick (the step period).
_NM_TOP_KEYS = {"core_op_ns", "step_sync"}
_CORE_OPS = ("synop", "neuron_update_active", "neuron_update_idle", "spike", "syn_update")
_STEP_SYNC_UNITS = {"barrier_ns": "ns", "barrier_one_router_ns": "ns", "tick_ns": "ns"}
_TOP_KEYS = _TOP_KEYS | _NM_TOP_KEYS
_QUANTITY_KEYS = {"value", "unit", "provenance", "source", "derivation", "note"}
_MEMORY_QUANTITIES = {"capacity_bytes": "B", "read_pj_per_byte": "pJ/B",
                      "write_pj_per_byte": "pJ/B", "bandwidth_bytes_per_s": "B/s"}
_INTERCONNECT_UNITS = {"mesh_x": "1", "mesh_y": "1", "cores_per_router": "1",
                       "bits_per_packet": "bit", "chips_x": "1", "chips_y": "1"}
_LIMIT_UNITS = {"cores": "1", "neurons_per_core": "1", "synapse_bytes_per_core": "B",
                "fan_in_per_core": "1", "fan_out_per_core": "1", "weight_bits": "bit",
                "spike_payload_bits": "bit", "word_bits": "bit", "clock_hz": "Hz",
                "supply_v": "V", "weight_sharing": "1", "synapse_crossbar": "1",
                "fan_out_multicast": "1"}
_INTEGER_LIMITS = {"cores", "neurons_per_core", "synapse_bytes_per_core", "fan_in_per_core",
                   "fan_out_per_core", "weight_bits", "spike_payload_bits", "word_bits",
                   "mesh_x", "mesh_y", "cores_per_router", "bits_per_packet", "chips_x",
                   "chips_y"}
_REQUIRED_LIMITS = {
    "neuromorphic": ("cores", "neurons_per_core", "synapse_bytes_per_core",
                     "fan_in_per_core", "fan_out_per_core", "weight_bits"),
    "bitwise": ("word_bits",),
    "cpu": ("word_bits",),
    "gpu": (),
}
# [execution]: parameters of the kind's execution model
# (session_call_s, optional: the host's per-call overhead of a TensorFlow 1.x session.run,
# which the tf1-session stack charges once per counted block)
_EXECUTION_UNITS = {"board_power_w": "W", "launch_s": "s", "half_perf_ops": "1",
                    "session_call_s": "s"}
# [stacks.NAME]: the software stack's parameters, per kind (sim/execution/ reads them):
# bitwise: cycles of the stack's kernel library (replace [throughput]'s cycles): per int8 MAC
# (mac_int8_cycles: any layer; conv/depthwise_conv/dense_cycles: layers of that op class,
# sim.ledger.OP_CLASSES) and per op counted in a non-MAC layer (pooling_cycles ...)
_LIBRARY_KEYS = ("mac_int8_cycles", "conv_cycles", "depthwise_conv_cycles", "dense_cycles",
                 "pooling_cycles", "elementwise_cycles", "activation_cycles",
                 "normalization_cycles", "softmax_cycles")
_STACK_UNITS = {"bitwise": dict.fromkeys(_LIBRARY_KEYS, "1"), "cpu": {}, "gpu": {},
                "neuromorphic": {}}
_SOURCE_KEYS = {"title", "url", "kind"}
_SOURCE_KINDS = ("paper", "datasheet", "web", "book")

# bounds per unit (SCHEMA.md "Bounds"):
# The largest value a quantity of each unit may take: far above any real chip (the shipped
# maxima are in the comments), low enough that count x value stays finite for any ledger a
# run file can hold (int64 counts x 1e9 pJ = 9.2e15 J). A typo in an exponent is refused
# here, with the bound, instead of surfacing as `inf J` in a report.
MAX_BY_UNIT = {
    "pJ": 1e9,      # 1 mJ per op            (shipped max 1.4e4: cortex-m4 popcount_word)
    "pJ/B": 1e9,    # 1 mJ per byte          (shipped max 6.8e5: cortex-m7 flash write)
    "1/s": 1e18,    # 1e18 ops/s, whole chip (shipped max 9.9e14: h100 mac_int8)
    "B/s": 1e17,    # 100 PB/s               (shipped max 1.9e13: loihi-pohoiki-beach SRAM)
    "B": 1e15,      # 1 PB                   (shipped max 8.6e10: h100 HBM)
    "W": 1e5,       # 100 kW                 (shipped max 700: h100 board; a server ~10 kW)
    "Hz": 1e11,     # 100 GHz                (shipped max 3.5e9: x86-avx2)
    "bit": 65536,   # 2^16 bits              (shipped max 64: word_bits)
    "1": 1e9,       # counts: cores, mesh, fan-in (shipped max 67584: h100 half_perf_ops)
    "nm": 1e4,      # 10 um process          (shipped max 90: cortex-m4)
    "ns": 1e12,     # 1,000 s per core op    (shipped max 1e6: truenorth/spinnaker2 1 ms tick)
    "s": 1e3,       # 1,000 s per launch     (shipped max 1.3e-4: jetson-tx1 session_call_s)
    "V": 1e3,       # 1 kV supply            (shipped max 3.3: stm32h7a3)
}

MIN_POSITIVE_BY_UNIT = {
    # the smallest value a quantity that must be > 0 may take: below these a cost divided by
    # it overflows or is meaningless (1e-300 ops/s makes every latency infinite)
    "1/s": 1.0,     # 1 op/s                  (shipped min 6.7e6: stm32l4r5 popcount_word)
    "B/s": 1.0,     # 1 B/s
    "B": 1.0,       # 1 byte of capacity      (0 B would fit nothing)
    "Hz": 1.0,      # 1 Hz
}

MAX_PROFILE_BYTES = 2**20   # a profile file (shipped max ~15 kB): a 1 GB file is not read
MAX_NAME_CHARS = 64         # a profile's or memory level's name (shipped max ~20)
MAX_TEXT_CHARS = 4000       # a description, source title, URL, derivation or note


def check_text(value: str, limit: int, fail) -> None:
    """A profile's text is printed by ``profiles show`` and reports: at most ``limit``
    characters and no control characters (a newline or ESC[2J would rewrite the terminal);
    ``fail(why)`` raises."""
    if len(value) > limit:
        fail(f"{len(value)} characters; at most {limit}")
    bad = next((c for c in value if unicodedata.category(c) == "Cc" and c != "\t"), None)
    if bad is not None:
        fail(f"holds the control character {bad!r} at {value.index(bad)}; profile text is "
             "printed and must be plain")


SHOWN_CHARS = 60
"""The most characters of an offending value a message quotes (a 1 MB profile may hold a
value of 900,000 characters; the message names it, it does not print it)."""


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters (then ``...``)."""
    try:
        text = repr(value)
    except ValueError:   # an int past Python's 4300-digit str limit
        text = f"({value.bit_length()}-bit integer)" if isinstance(value, int) else \
            f"({type(value).__name__})"
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def clipped(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` (a key, a section) for a message, at most ``limit`` characters."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


NAME_MAX_BYTES = 255    # Linux NAME_MAX: the longest file name (one path component)
PATH_MAX_BYTES = 4095   # Linux PATH_MAX less the terminating NUL: the longest path


def _check_spec(text: str) -> None:
    """Refuse a profile argument no file can be named, before the file system is asked:
    ``Path.is_file`` raises (``OSError: File name too long``, ``ValueError: embedded null
    byte``) instead of answering False for these."""
    what = None
    try:
        encoded = os.fsencode(text)
    except UnicodeEncodeError:
        encoded = None
    if "\0" in text:
        what = "holds a NUL character, which no file name can"
    elif encoded is None:
        what = "is not text a file name can hold (a lone surrogate character)"
    else:
        longest = max(len(part) for part in encoded.split(b"/"))
        if longest > NAME_MAX_BYTES:
            what = (f"is too long for a file name ({longest} bytes in one name; at most "
                    f"{NAME_MAX_BYTES})")
        elif len(encoded) > PATH_MAX_BYTES:
            what = f"is too long for a path ({len(encoded)} bytes; at most {PATH_MAX_BYTES})"
    if what:
        raise ProfileError(f"profile {shown(text)} {what}: pass a shipped profile name "
                           f"({', '.join(available())}) or the path of a .toml file")


def _is_file(path: Path, text: str) -> bool:
    """``path.is_file()``, with an error the OS gives (a directory on the way that cannot
    be searched) as a one-line ProfileError naming the argument."""
    try:
        return path.is_file()
    except OSError as exc:
        raise ProfileError(f"profile {shown(text)} cannot be looked up: {exc.strerror}; pass "
                           "a shipped profile name or the path of a readable .toml "
                           "file") from None


def available() -> list[str]:
    """Names of the shipped profiles, sorted."""
    return sorted(p.stem for p in DATA_DIR.glob("*.toml"))


def label_for(name: str, path: str | Path = "") -> str:
    """How a profile is shown: ``name`` when shipped or built in memory, else with its file.

    A user's file is always shown with its absolute path, whatever its name, so a file
    that reuses a shipped name (``a100 (file: /home/me/a100.toml)``) never reads as the
    shipped profile.
    """
    if not path:
        return name
    resolved = Path(path).resolve()
    if resolved.parent == DATA_DIR.resolve():
        return name
    return f"{name} (file: {resolved})"


def load_many(specs: Iterable[str | Path | HardwareProfile]) -> list[HardwareProfile]:
    """Load a list of profiles (names, paths or objects) for one comparison; refuse duplicates.

    Two entries are the same profile when they have the same label: the same shipped name,
    or the same name from the same file (however the path is spelt). A shipped ``a100``
    and a user's ``a100.toml`` are distinct and keep distinct labels.

    Raises
    ------
    ProfileError
        Any entry fails to load, or one profile is listed twice.
    """
    specs = list(specs)
    profiles = [load(s) for s in specs]
    first: dict[str, int] = {}
    for i, p in enumerate(profiles):
        if p.label in first:
            j = first[p.label]
            raise ProfileError(f"profile {p.label!r} is listed twice (entries {j + 1} and "
                               f"{i + 1}: {str(specs[j])!r}, {str(specs[i])!r}); list each "
                               "profile once")
        first[p.label] = i
    return profiles


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
    _check_spec(text)
    path = Path(text)
    # a bare shipped name is the shipped profile, even with a file of that name in the
    # working directory (a notes file called a100 must not replace it); another bare name
    # may be a file there
    if text in available() or not (text.endswith(".toml") or _is_file(path, text)
                                   or "/" in text):
        path = DATA_DIR / f"{text}.toml"
        if not _is_file(path, text):
            hint = suggestion(text, available(), "neuroedge profiles") or \
                f"shipped profiles are {', '.join(available())}, or pass the path of a .toml file"
            raise ProfileError(f"unknown hardware profile {text!r}: {hint}")
    if not _is_file(path, text):
        raise ProfileError(f"profile file {text!r} {not_a_file(path)}: pass a shipped "
                           f"profile name ({', '.join(available())}) or the path of a .toml "
                           "file")
    try:
        size = path.stat().st_size
        if size > MAX_PROFILE_BYTES:
            raise ProfileError(f"profile file {text!r} is {size:,} bytes; a profile is at "
                               f"most {MAX_PROFILE_BYTES:,} (the shipped ones are under 20 kB)")
        raw = path.read_bytes()
    except OSError as exc:
        raise ProfileError(f"profile file {text!r} cannot be read: {exc.strerror}") \
            from None
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
    if text.startswith("\ufeff"):
        raise ProfileError(f"{origin}: starts with a byte-order mark (U+FEFF), which TOML "
                           "does not allow; save it as UTF-8 without BOM")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{origin}: TOML syntax error: {exc}") from None
    except RecursionError:   # tomllib recurses per level: ~500 nested [ or { exhaust it
        raise ProfileError(f"{origin}: nested too deeply to read; a profile holds tables of "
                           "quantities, not deep nesting (hw_profiles/SCHEMA.md)") from None
    return from_dict(doc, origin=origin, path=path)


def from_dict(doc: Mapping[str, Any], origin: str = "<dict>", path: str = "",
              label: str = "") -> HardwareProfile:
    """Validate a parsed profile document and build the frozen :class:`HardwareProfile`.

    ``label`` (default: :func:`label_for` of the name and ``path``) is how the profile is
    shown; a run file passes the label it stored, since its snapshot has no file.
    """
    v = _Validator(origin)
    v.table(doc, "", _TOP_KEYS, required={"schema_version", "name", "kind", "description",
                                           "energy_pj", "throughput", "memory", "limits",
                                           "static", "sources"})
    if type(doc["schema_version"]) is not int or doc["schema_version"] != SCHEMA_VERSION:
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
    if kind == "neuromorphic":
        _check_cores_fit_mesh(v, limits, interconnect)
        _check_crossbar(v, limits)
        if "fan_out_multicast" in limits and limits["fan_out_multicast"].value != 1:
            v.fail("limits", "fan_out_multicast", limits["fan_out_multicast"].value,
                   "expected 1 (a neuron's spike is one multicast key the routers copy to "
                   "every core it reaches), or leave the key out")
    v.table(doc["static"], "static", {"power_w"}, required={"power_w"})
    static = v.quantity(doc["static"]["power_w"], "static", "power_w", "W", "nonnegative")
    # [execution] is optional here, so profile snapshots in run files written before it
    # existed still load; the gpu/cpu execution model refuses to price without it
    # (sim/execution/gpu_cpu.py)
    execution = {}
    if "execution" in doc:
        execution = v.quantity_table(doc["execution"], "execution", _EXECUTION_UNITS)

    core_op_ns, step_sync = _nm_execution_model(v, doc, kind)
    stacks, default_stack = _stacks(v, doc, kind)

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
        raw=MappingProxyType(dict(doc)), core_op_ns=MappingProxyType(core_op_ns),
        step_sync=MappingProxyType(step_sync), label=label or label_for(name, path),
        stacks=MappingProxyType(stacks), default_stack=default_stack)


_MESH_KEYS = ("mesh_x", "mesh_y", "cores_per_router", "chips_x", "chips_y")


def _check_cores_fit_mesh(v, limits, interconnect) -> None:
    """``limits.cores`` must have a place on the mesh: the compiler numbers cores chip by
    chip over ``mesh_x x mesh_y`` routers of ``cores_per_router`` cores, ``chips_x x
    chips_y`` chips (``sim/neuromorphic/compiler.py``, ``MeshGeometry.core_xy``; a missing
    key counts 1, as there), so a core past that product would sit on a chip the profile
    does not have, and its routes would be priced as hops the mesh cannot take. Fewer
    cores than places is a chip that leaves some unused (spinnaker2: 152 of 160)."""
    sizes = {k: int(interconnect[k].value) if k in interconnect else 1 for k in _MESH_KEYS}
    places = math.prod(sizes.values())
    cores = limits["cores"].value
    if cores > places:
        v.fail("limits", "cores", cores, "more cores than the mesh holds: [interconnect] "
               f"{' x '.join(_MESH_KEYS)} = {' x '.join(str(n) for n in sizes.values())} = "
               f"{places}; give cores <= {places}, or the mesh (or chips) that holds them")


def _check_crossbar(v, limits) -> None:
    """``limits.synapse_crossbar`` (SCHEMA.md) is a flag, 1; the compiler then bounds a core by
    ``fan_in_per_core`` and ``neurons_per_core`` alone, so their crossbar (one bit per axon and
    neuron) must fit ``synapse_bytes_per_core``; and a crossbar holds one bit per connection, so
    it cannot also store a convolution as a shared kernel (``weight_sharing``)."""
    if "synapse_crossbar" not in limits:
        return
    if limits["synapse_crossbar"].value != 1:
        v.fail("limits", "synapse_crossbar", limits["synapse_crossbar"].value,
               "expected 1 (the chip's synapses are a binary crossbar), or leave the key out")
    if "weight_sharing" in limits:
        v.fail("limits", "weight_sharing", limits["weight_sharing"].value,
               "a synapse_crossbar stores one bit per axon and neuron, not shared kernels; "
               "state one of the two")
    axons, neurons = limits["fan_in_per_core"].value, limits["neurons_per_core"].value
    need = math.ceil(axons * neurons / 8)
    have = limits["synapse_bytes_per_core"].value
    if need > have:
        v.fail("limits", "synapse_bytes_per_core", have,
               f"the synapse_crossbar of fan_in_per_core x neurons_per_core = {axons:g} x "
               f"{neurons:g} bits needs {need} B; give synapse_bytes_per_core >= {need}")


def _stacks(v, doc, kind: str) -> tuple[dict[str, Mapping[str, Quantity]], str]:
    """``[stacks.NAME]`` tables (software stacks with profile-specific parameters) and the
    ``default_stack`` naming one of them; both optional, but a default needs its table."""
    raw = doc.get("stacks", {})
    if not isinstance(raw, dict):
        v.fail("", "stacks", raw, "expected tables [stacks.NAME]")
    units = _STACK_UNITS[kind]
    if raw and not units:
        v.fail("", "stacks", ", ".join(raw), f"a {kind} profile takes no [stacks] tables "
               "(its stacks are the execution model's: sim/execution/)")
    for name in raw:
        _check_stack_name(v, name, kind)
    stacks = {name: MappingProxyType(v.quantity_table(t, f"stacks.{name}", units))
              for name, t in raw.items()}
    default = doc.get("default_stack", "")
    if not isinstance(default, str):
        v.fail("", "default_stack", default, "expected the name of a [stacks] table (text)")
    if default and default not in stacks:
        v.fail("", "default_stack", default, f"must name a [stacks] table "
               f"({', '.join(stacks) or 'none given'})")
    return stacks, default


STACK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
"""A stack's name: what ``--stack NAME`` and ``PROFILE=NAME`` can select (no ``,``, ``=``
or space), up to 64 characters."""


def _check_stack_name(v, name: str, kind: str) -> None:
    """A ``[stacks.NAME]`` table's name: selectable (:data:`STACK_NAME`) and none of the
    execution model's own stacks, which a table of the same name would silently replace."""
    if not STACK_NAME.fullmatch(name):
        v.fail("stacks", name, "", "a stack name is 1-64 letters, digits, '.', '_', '+' or "
               "'-', starting with a letter or digit (--stack PROFILE=NAME selects it)")
    own = EXECUTION_STACKS[kind]
    if name in own:
        v.fail("stacks", name, "", f"{name!r} is a stack of the {kind} execution model "
               f"({', '.join(own)}); give the table another name")


def _nm_execution_model(v, doc, kind: str):
    """Validate ``[core_op_ns]`` and ``[step_sync]``: both or neither, neuromorphic only."""
    has = [k for k in ("core_op_ns", "step_sync") if k in doc]
    if not has:
        return {}, {}
    if kind != "neuromorphic":
        v.fail("", has[0], "", f"only a neuromorphic profile has a per-core step-time model; "
               f"this profile is kind = {kind!r}")
    for key in ("core_op_ns", "step_sync"):
        if key not in doc:
            v.fail("", key, "(missing)", "[core_op_ns] and [step_sync] go together: the step "
                   "time is the slowest core's ops plus the barrier")
    v.table(doc["core_op_ns"], "core_op_ns", set(_CORE_OPS))
    core = {op: v.quantity(q, "core_op_ns", op, "ns", "nonnegative")
            for op, q in doc["core_op_ns"].items()}
    missing = [op for op in _CORE_OPS if op in doc["energy_pj"] and op not in core]
    if missing:
        v.fail("core_op_ns", missing[0], "(missing)", "every core op the profile prices in "
               "[energy_pj] needs a per-core time here (0 with a derivation where another "
               "op's time already contains it)")
    v.table(doc["step_sync"], "step_sync", set(_STEP_SYNC_UNITS), required={"barrier_ns"})
    sync = {k: v.quantity(q, "step_sync", k, _STEP_SYNC_UNITS[k],
                          "positive" if k == "tick_ns" else "nonnegative")
            for k, q in doc["step_sync"].items()}
    lo = sync.get("barrier_one_router_ns")
    if lo is not None and lo.value > sync["barrier_ns"].value:
        v.fail("step_sync", "barrier_one_router_ns", lo.value, f"must be <= barrier_ns = "
               f"{sync['barrier_ns'].value} (a barrier over fewer routers is not slower)")
    return core, sync


class _Validator:
    """Checks one document; every failure names the origin, section and key."""

    def __init__(self, origin: str):
        self.origin = origin
        self.source_keys: set[str] = set()
        self.cited: set[str] = set()

    def fail(self, section: str, key: str, value: Any, expected: str):
        # a section, key or value is the file's own text: quoted, never whole (a 1 MB
        # profile made a 900,090-character line)
        where = f"{self.origin}"
        if section:
            where += f" [{clipped(section)}]"
        if key:
            where += f" {clipped(key)}"
            if not (isinstance(value, str) and value == ""):
                where += f" = {shown(value)}"
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
        check_text(value, MAX_NAME_CHARS if key == "name" else MAX_TEXT_CHARS,
                   lambda why: self.fail(section, key, "", why))
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
        if isinstance(value, int) and not isinstance(value, bool) \
                and not -2**63 <= value < 2**63:
            # TOML 1.0 integers are 64-bit and out-of-range ones are errors; tomllib reads any
            self.fail(section, key, f"({len(str(abs(value)))}-digit integer)",
                      "TOML integers must fit in 64 bits; write a float")
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
        low = MIN_POSITIVE_BY_UNIT.get(unit)
        if sign == "positive" and low is not None and value < low:
            self.fail(section, key, value, f"below the bound {low:g} {unit} for a quantity in "
                      f"{unit} (hw_profiles/SCHEMA.md, Bounds); check the exponent")
        # bounds per unit: see MAX_BY_UNIT
        bound = MAX_BY_UNIT.get(unit)
        if bound is not None and value > bound:
            self.fail(section, key, value, f"above the bound {bound:g} {unit} for a quantity "
                      f"in {unit} (hw_profiles/SCHEMA.md, Bounds); check the exponent")
        prov = obj["provenance"]
        if prov not in PROVENANCES:
            self.fail(section, key, prov, f"provenance must be one of {', '.join(PROVENANCES)}")
        src = obj["source"]
        if not isinstance(src, str) or src not in self.source_keys:
            self.fail(section, key, src, f"source {shown(src)} is not defined in [sources] "
                      f"(defined: {clipped(', '.join(sorted(self.source_keys)), 400)})")
        derivation = obj.get("derivation", "")
        if prov in ("derived", "fitted") and (not isinstance(derivation, str)
                                              or not derivation.strip()):
            self.fail(section, key, value, f"provenance = {prov!r} needs a 'derivation' "
                      "giving the arithmetic and its cited inputs (fitted: the script and "
                      "the calibration rows)")
        for text_key in ("derivation", "note"):
            if text_key in obj and not isinstance(obj[text_key], str):
                self.fail(section, f"{key}.{text_key}", obj[text_key], "expected text (a "
                          "quoted string)")
            if isinstance(obj.get(text_key), str):
                check_text(obj[text_key], MAX_TEXT_CHARS,
                           lambda why, k=text_key: self.fail(section, f"{key}.{k}", "", why))
        self.cited.add(src)
        if isinstance(value, float) and value == 0.0:
            value = 0.0   # -0.0 passes `value < 0` and would be shown as "-0 pJ"
        return Quantity(value=value, unit=unit, provenance=prov, source=src,
                        derivation=derivation, note=str(obj.get("note", "")))

    def op_table(self, obj, section, unit, sign) -> dict[str, Quantity]:
        if not isinstance(obj, dict):
            self.fail("", section, obj, "expected a table of op = quantity")
        out = {}
        for op, q in obj.items():
            if op not in OPS:
                self.fail(section, op, "", f"unknown op; ops are {', '.join(OPS)}")
            if op == "kernel_launch":   # counted, priced from [execution] only (SCHEMA.md)
                self.fail(section, op, "", "a kernel launch is priced from [execution] "
                          "launch_s (the time the device idles per launch, at [static] "
                          "power_w), never from [energy_pj] or [throughput]: remove it")
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
                                  "positive" if k in ("bandwidth_bytes_per_s", "capacity_bytes")
                                  else "nonnegative")
                 for k, unit in _MEMORY_QUANTITIES.items()}
            out[level] = MemoryLevel(name=name, level=level, **q)
        if kind in ("gpu", "cpu") and "offchip" not in out:
            self.fail("", "memory", "", f"a {kind} profile needs an 'offchip' memory level "
                      "(DRAM/HBM)")
        return out
