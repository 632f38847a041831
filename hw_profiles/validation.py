"""The validation table: published measurements of workloads, shipped with the profiles.

``load_table()`` reads ``hw_profiles/measured/validation.toml`` (or a given path) and checks it
strictly: an unknown key, a missing field, a profile that is not shipped, a kind that does not
match the profile's kind, a non-positive measurement or a row that names neither a workload nor
what is missing is a :class:`~hw_profiles.errors.ProfileError` naming the file, the entry and the
key. The rows are plain data; ``sim.validation.validate()`` rebuilds and prices them.
"""
from __future__ import annotations

import functools
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hw_profiles.errors import ProfileError
from hw_profiles.loader import available, load
from hw_profiles.profile import KINDS

TABLE_PATH = Path(__file__).with_name("measured") / "validation.toml"
SUMMARY_PATH = Path(__file__).with_name("measured") / "validation_summary.json"
"""Per device kind, how the held-out rows' predictions compare with the measurements, as
``sim.validation.kind_errors`` computed them (``bench/validate.py --write-summary``); a test
checks it against a fresh run, so it cannot go stale silently."""
SCHEMA_VERSION = 1
GROUPS = ("calibration", "held-out")
PARTS = ("same", "same-core", "different")
DEVICE_KINDS = ("mcu", "fpga", "cpu", "gpu", "edge-gpu", "vpu", "neuromorphic")
"""The device kinds ``bench/validate.py`` counts rows under: finer than the profile kinds (a
Jetson is an ``edge-gpu`` priced on a ``gpu`` profile, a microcontroller an ``mcu`` priced on a
``bitwise`` one). A row names its own (``device_kind``) or gets :data:`DEFAULT_DEVICE_KIND` of
its profile kind."""
DEFAULT_DEVICE_KIND = {"bitwise": "mcu", "cpu": "cpu", "gpu": "gpu",
                       "neuromorphic": "neuromorphic"}
PER_PROFILE_KINDS = ("neuromorphic",)
"""Profile kinds whose reports show only the held-out rows of their own profile, never the
kind's rows on other profiles: each neuromorphic profile is another architecture priced from
other kinds of figures (TrueNorth's whole-chip measurement split into per-event and static
power, Loihi's pre-silicon per-op energies), so a TrueNorth row says nothing of a Loihi
estimate."""

_REQUIRED = {"id", "kind", "profile", "device", "part", "group", "workload", "params", "per",
             "measured_j", "conditions", "source_title", "source_url"}
_OPTIONAL = {"measured_latency_s", "measured_derivation", "missing", "note", "stack",
             "idle_subtracted", "supply_v", "device_kind"}


@dataclass(frozen=True)
class Measurement:
    """One published measurement and the workload that reproduces it.

    Attributes
    ----------
    id : unique row name;  kind : device kind (a profile kind);  profile : shipped profile priced
        ("" when none of the measured part ships: the row is then not rebuildable)
    device : the measured hardware, as the source names it
    part : "same" (the profiled part), "same-core" (same core, another part) or "different"
    group : "calibration" (some profile number was derived from this measurement) or "held-out"
    workload : builder name in ``sim.validation`` ("" when the workload cannot be rebuilt)
    params : the workload's published shape and activity
    per : what one measured figure is per ("inference", "synaptic event")
    measured_j : joules per ``per``;  measured_latency_s : seconds per ``per`` (None if absent)
    missing : what the rebuild needs that the source does not publish ("" when nothing)
    """

    id: str
    kind: str
    profile: str
    device: str
    part: str
    group: str
    workload: str
    params: Mapping[str, Any]
    per: str
    measured_j: float
    conditions: str
    source_title: str
    source_url: str
    measured_latency_s: float | None = None
    measured_derivation: str = ""
    missing: str = ""
    note: str = ""
    stack: str = ""                  # software stack measured ("" : the profile's default)
    idle_subtracted: bool = False    # the measurement is running minus idle power
    supply_v: float | None = None    # supply voltage the source states (None: not published)
    device_kind: str = ""            # DEVICE_KINDS entry the row counts under


def load_table(path: str | Path | None = None) -> list[Measurement]:
    """Read and check the validation table; rows in file order.

    Raises
    ------
    ProfileError
        Any malformed entry (see the module docstring).
    """
    path = Path(path) if path is not None else TABLE_PATH
    origin = path.name
    try:
        doc = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ProfileError(f"validation table {str(path)!r} cannot be read: {exc.strerror}") \
            from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{origin}: TOML syntax error: {exc}") from None
    return from_dict(doc, origin)


def from_dict(doc: Mapping[str, Any], origin: str = "<dict>") -> list[Measurement]:
    """Check a parsed table document and build its rows."""
    unknown = sorted(set(doc) - {"schema_version", "entry"})
    if unknown:
        raise ProfileError(f"{origin}: unknown top-level key {unknown[0]!r}; allowed: "
                           "schema_version, entry")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ProfileError(f"{origin}: schema_version = {doc.get('schema_version')!r}; this "
                           f"neuroedge reads schema_version {SCHEMA_VERSION}")
    entries = doc.get("entry")
    if not isinstance(entries, list) or not entries:
        raise ProfileError(f"{origin}: expected at least one [[entry]] table")
    shipped = set(available())
    rows, seen = [], set()
    for i, e in enumerate(entries):
        where = f"{origin} [[entry]] #{i}"
        if not isinstance(e, dict):
            raise ProfileError(f"{where}: expected a table")
        if isinstance(e.get("id"), str):
            where = f"{origin} [[entry]] {e['id']!r}"
        bad = sorted(set(e) - _REQUIRED - _OPTIONAL)
        if bad:
            raise ProfileError(f"{where}: unknown key {bad[0]!r}; allowed keys are "
                               f"{', '.join(sorted(_REQUIRED | _OPTIONAL))}")
        absent = sorted(_REQUIRED - set(e))
        if absent:
            raise ProfileError(f"{where}: missing required key {absent[0]!r}")
        for key in ("id", "device", "per", "conditions", "source_title"):
            if not isinstance(e[key], str) or not e[key].strip():
                raise ProfileError(f"{where}: {key} = {e[key]!r}: expected a non-empty string")
        if e["id"] in seen:
            raise ProfileError(f"{where}: id {e['id']!r} is used twice; ids must be unique")
        seen.add(e["id"])
        if e["kind"] not in KINDS:
            raise ProfileError(f"{where}: kind = {e['kind']!r}; expected one of "
                               f"{', '.join(KINDS)}")
        if e["profile"] == "":
            # no profile of the measured part ships: the row is kept, never priced on a
            # neighbour's profile (issue 29 item 1)
            if e["workload"] != "" or not str(e.get("missing", "")).strip():
                raise ProfileError(f"{where}: profile = '' (no profile of the measured part) "
                                   "needs workload = '' and a 'missing' saying so")
        elif e["profile"] not in shipped:
            raise ProfileError(f"{where}: profile = {e['profile']!r} is not a shipped profile "
                               f"({', '.join(sorted(shipped))})")
        prof_kind = load(e["profile"]).kind if e["profile"] else e["kind"]
        if prof_kind != e["kind"]:
            raise ProfileError(f"{where}: kind = {e['kind']!r} but profile {e['profile']!r} is "
                               f"of kind {prof_kind!r}")
        if e["part"] not in PARTS:
            raise ProfileError(f"{where}: part = {e['part']!r}; expected one of "
                               f"{', '.join(PARTS)}")
        if e["group"] not in GROUPS:
            raise ProfileError(f"{where}: group = {e['group']!r}; expected one of "
                               f"{', '.join(GROUPS)}")
        if not str(e["source_url"]).startswith(("https://", "http://")):
            raise ProfileError(f"{where}: source_url = {e['source_url']!r}: expected an "
                               "http(s) URL")
        if not isinstance(e["params"], dict):
            raise ProfileError(f"{where}: params = {e['params']!r}: expected an inline table")
        for key in ("measured_j", "measured_latency_s", "supply_v"):
            if key not in e:
                continue
            v = e[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v <= 0:
                unit = {"measured_j": f"J per {e['per']}", "supply_v": "V",
                        "measured_latency_s": f"s per {e['per']}"}[key]
                raise ProfileError(f"{where}: {key} = {v!r}: expected a finite number > 0 "
                                   f"({unit})")
        device_kind = e.get("device_kind", DEFAULT_DEVICE_KIND[e["kind"]])
        if device_kind not in DEVICE_KINDS:
            raise ProfileError(f"{where}: device_kind = {device_kind!r}; expected one of "
                               f"{', '.join(DEVICE_KINDS)}")
        # a profile prices one device: its rows name one device kind, which is then the
        # profile's (the kind whose error its reports show: error_rows)
        first = next((r for r in rows if r.profile == e["profile"] != ""), None)
        if first is not None and first.device_kind != device_kind:
            raise ProfileError(f"{where}: device_kind = {device_kind!r} but row "
                               f"{first.id!r} prices profile {e['profile']!r} as "
                               f"{first.device_kind!r}; the rows of one profile name one "
                               "device kind")
        if not isinstance(e.get("idle_subtracted", False), bool) \
                or not isinstance(e.get("stack", ""), str):
            raise ProfileError(f"{where}: idle_subtracted must be true or false and stack a "
                               "string")
        workload, missing = e["workload"], e.get("missing", "")
        if not isinstance(workload, str) or not isinstance(missing, str):
            raise ProfileError(f"{where}: workload and missing must be strings")
        if not workload and not missing.strip():
            raise ProfileError(f"{where}: workload = '' needs a 'missing' saying which "
                               "published number the rebuild lacks")
        rows.append(Measurement(
            id=e["id"], kind=e["kind"], profile=e["profile"], device=e["device"],
            part=e["part"], group=e["group"], workload=workload,
            params=MappingProxyType(dict(e["params"])), per=e["per"],
            measured_j=float(e["measured_j"]), conditions=e["conditions"],
            source_title=e["source_title"], source_url=e["source_url"],
            measured_latency_s=(float(e["measured_latency_s"]) if "measured_latency_s" in e
                                else None),
            measured_derivation=str(e.get("measured_derivation", "")), missing=missing,
            note=str(e.get("note", "")), stack=e.get("stack", ""),
            idle_subtracted=e.get("idle_subtracted", False),
            supply_v=float(e["supply_v"]) if "supply_v" in e else None,
            device_kind=device_kind))
    return rows


def kind_summary(path: str | Path = SUMMARY_PATH) -> dict[str, dict]:
    """``kind -> {"rows", "median_rel_error", "min_ratio", "max_ratio"}`` (per profile
    kind) of the shipped validation summary ({} when there is none).

    Raises
    ------
    ProfileError
        The file is not the JSON object this function's writer produces.
    """
    doc = _summary(path)
    return {} if doc is None else dict(doc["kinds"])


def error_rows(kind: str, profile: str, path: str | Path = SUMMARY_PATH) -> dict | None:
    """The held-out rows whose error a report on ``profile`` (of profile ``kind``) shows as
    its validation error, and whose rows they are.

    The rule: a profile that a row of the table prices has that row's device kind (all its
    rows name one: :func:`load_table` checks it), and its report shows that device kind's
    held-out rows, on every profile and stack (a Jetson Orin report: the two ``edge-gpu``
    rows, Orin and TX1). A profile no row prices has no device kind the table knows
    (``fpga-bnn``, ``a100``, ``cortex-m7``): its report shows every held-out row of its
    profile kind, named by their device kinds and profiles (an ``fpga-bnn`` report: the
    ``mcu`` rows of the STM32 boards, none on an FPGA), and ``measured`` is False. So is a
    profile whose device kind has no held-out row (only calibration rows). A kind of
    :data:`PER_PROFILE_KINDS` shows only its own profile's rows (None when it has none).

    Returns
    -------
    dict or None
        ``{"device_kinds", "profiles", "rows", "median_rel_error", "min_ratio",
        "max_ratio", "measured"}`` (device kinds and profiles of the rows, sorted; ratio =
        predicted / measured energy); None when no held-out row covers the profile.
    """
    doc = _summary(path)
    if doc is None:
        return None
    device_kind = doc["profile_device_kinds"].get(profile)
    if kind in PER_PROFILE_KINDS:
        own = doc["profiles"].get(profile)
        if own is None:
            return None
        return {"device_kinds": [device_kind], "profiles": [profile], "rows": own["rows"],
                "median_rel_error": own["median_rel_error"], "min_ratio": None,
                "max_ratio": None, "measured": True}
    keys = ("rows", "median_rel_error", "min_ratio", "max_ratio")
    own = doc["device_kinds"].get(device_kind)
    if own is not None:
        return {"device_kinds": [device_kind], "profiles": list(own["profiles"]),
                **{k: own[k] for k in keys}, "measured": True}
    per_kind, factors = doc["kinds"].get(kind), doc["kind_factors"].get(kind)
    if per_kind is None or factors is None:
        return None
    return {"device_kinds": list(factors["device_kinds"]),
            "profiles": list(factors["profiles"]), **{k: per_kind[k] for k in keys},
            "measured": False}


def heldout_error(kind: str, stack: str = "", path: str | Path = SUMMARY_PATH,
                  profile: str = "") -> dict | None:
    """The held-out error of a report on ``profile`` (of profile ``kind``) priced for
    software ``stack``, from the shipped validation summary: ``{"kind", "stack", "rows",
    "energy_median_factor", "energy_worst_factor", "latency_median_factor",
    "latency_worst_factor", "device_kinds", "profiles"}`` (factor = max(r, 1/r) of
    predicted / measured; a latency entry is None where no held-out row publishes latency;
    ``device_kinds`` and ``profiles``: whose rows they are). The rows of that profile and
    stack when the summary has them (``"profile"`` then names it), else the rows of
    :func:`error_rows` (``stack`` then reads ``"all stacks"``, ``"asked"`` names the stack
    asked for, ``"for_profile"`` the profile and ``"measured"`` whether a held-out row of
    its device kind covers it: False where its profile kind's rows stand in); None when
    no held-out row covers it. A kind of :data:`PER_PROFILE_KINDS` gets the rows of its own
    profile (every stack) or None.
    """
    doc = _summary(path)
    if doc is None:
        return None
    device_kind = doc["profile_device_kinds"].get(profile)
    per_stack = doc["stacks"].get(f"{profile}/{stack}")
    if per_stack is not None:
        return {"kind": kind, "profile": profile, "stack": stack, **per_stack,
                "device_kinds": [device_kind], "profiles": [profile]}
    if kind in PER_PROFILE_KINDS:
        own = doc["profiles"].get(profile)
        return None if own is None else {"kind": kind, "profile": profile, "stack": stack,
                                         **own, "device_kinds": [device_kind],
                                         "profiles": [profile]}
    rows = error_rows(kind, profile, path)
    if rows is None:
        return None
    keys = ("rows", "energy_median_factor", "energy_worst_factor", "latency_median_factor",
            "latency_worst_factor")
    source = (doc["device_kinds"][rows["device_kinds"][0]] if rows["measured"]
              else doc["kind_factors"][kind])
    # "asked": the stack the report was priced for, which no held-out row of it ran
    return {"kind": kind, "stack": "all stacks", "asked": stack,
            **{k: source[k] for k in keys}, "device_kinds": rows["device_kinds"],
            "profiles": rows["profiles"], "measured": rows["measured"], "for_profile": profile}


def _summary(path: str | Path) -> dict | None:
    """The shipped summary's sections, checked (None when there is no file). Every price()
    asks for it: read once per version of the file, not once per call."""
    path = Path(path)
    if not path.exists():
        return None
    return _read_summary(str(path), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _read_summary(path_text: str, mtime_ns: int) -> dict:
    path = Path(path_text)
    try:
        data = json.loads(path.read_text())
        kinds = {k: {"rows": int(v["rows"]), "median_rel_error": float(v["median_rel_error"]),
                     "min_ratio": float(v["min_ratio"]), "max_ratio": float(v["max_ratio"])}
                 for k, v in data["kinds"].items()}
        doc = {"kinds": kinds, **{key: dict(data[key]) for key in
                                  ("device_kinds", "kind_factors", "stacks", "profiles",
                                   "profile_device_kinds")}}
        # whose rows a report's figure is (error_rows): a summary written before these
        # were kept cannot say, so it is refused rather than read as rows of no one
        for v in doc["device_kinds"].values():
            list(v["profiles"])
        for v in doc["kind_factors"].values():
            list(v["device_kinds"]), list(v["profiles"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ProfileError(f"{path}: not a validation summary ({type(exc).__name__}: {exc}); "
                           "rewrite it with python bench/validate.py --write-summary") from None
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ProfileError(f"{path}: unknown device kind {unknown[0]!r}; kinds are "
                           f"{', '.join(KINDS)}")
    unknown = sorted((set(doc["device_kinds"]) | set(doc["profile_device_kinds"].values()))
                     - set(DEVICE_KINDS))
    if unknown:
        raise ProfileError(f"{path}: unknown device kind {unknown[0]!r}; device kinds are "
                           f"{', '.join(DEVICE_KINDS)}")
    return doc
