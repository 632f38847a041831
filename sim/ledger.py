"""The Ledger: hardware-independent counts of primitive ops and bytes moved, in nested scopes.

A ledger records *what happened* (4 096 synops, 3.1 MB read from off-chip memory) and
nothing about what it costs; :meth:`Ledger.price` turns it into joules and seconds on a
:class:`~hw_profiles.HardwareProfile`. The same ledger priced on several profiles is how
reports compare hardware.

Scopes are ``/``-separated paths (``"train/fc1/backward"``); a scope's totals include its
sub-scopes. Engines accumulate counts in a local int64 array indexed by
``hw_profiles.ops.OP_CODES`` inside their kernels and call :meth:`Ledger.flush` once per
step or batch, so accounting never costs a Python call per event.

Counts are exact Python integers. Ops outside the closed vocabulary are refused; ops an
engine saw but could not count (an unknown torch op, say) are recorded by name with
:meth:`Ledger.add_uncounted` so reports can say what is missing instead of a silent zero.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterator, Mapping

import numpy as np

from hw_profiles.errors import LedgerError
from hw_profiles.ops import MEMORY_LEVELS, OP_NAMES, OPS

FORMAT = "neuroedge.Ledger"
FORMAT_VERSION = 1
_SCOPE_RE = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")
_DIRECTIONS = ("read", "write")
_INT64_MAX = np.iinfo(np.int64).max


def _check_count(what: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise LedgerError(f"count for {what} = {value!r}: counts must be integers")
    value = int(value)
    if value < 0:
        raise LedgerError(f"count for {what} = {value}: counts must be >= 0")
    return value


def within(scope: str, parent: str) -> bool:
    """True when ``scope`` is ``parent`` or one of its sub-scopes (``""`` contains all)."""
    return parent == "" or scope == parent or scope.startswith(parent + "/")


class Ledger:
    """Scoped counts of primitive ops, bytes per memory level, samples and uncounted ops.

    Examples
    --------
    >>> led = Ledger()
    >>> with led.scope("infer"):
    ...     led.add("mac_fp32", 64 * 32)
    ...     led.add_bytes("offchip", read=4 * 64 * 32)
    ...     led.add_samples(1)
    >>> led.total_ops()["mac_fp32"]
    2048
    """

    def __init__(self):
        self._ops: dict[str, dict[str, int]] = defaultdict(dict)
        self._bytes: dict[str, dict[tuple[str, str], int]] = defaultdict(dict)
        self._samples: dict[str, int] = {}
        self._uncounted: dict[str, dict[str, int]] = defaultdict(dict)
        self._footprint: dict[str, dict[str, int]] = {}  # see add_footprint
        self._stack: list[str] = []

    # -- recording ---------------------------------------------------------------------
    def resolve_scope(self, scope: str | None) -> str:
        """Full scope path for ``scope`` inside the current ``with scope()`` blocks; checks it."""
        parts = [p for p in self._stack]
        if scope:
            parts.append(scope)
        full = "/".join(parts)
        if full and not _SCOPE_RE.match(full):
            raise LedgerError(f"scope {full!r}: expected '/'-separated names of letters, "
                              "digits, '_', '.', '-' (e.g. 'train/fc1/forward')")
        return full

    @contextmanager
    def scope(self, name: str) -> Iterator["Ledger"]:
        """Record everything inside the ``with`` block under ``current/name``."""
        self.resolve_scope(name)  # validate before entering
        self._stack.append(name)
        try:
            yield self
        finally:
            self._stack.pop()

    @property
    def current_scope(self) -> str:
        return self.resolve_scope(None)

    def add(self, op: str, count, scope: str | None = None) -> None:
        """Add ``count`` occurrences of primitive ``op``."""
        if op not in OPS:
            raise LedgerError(f"unknown op {op!r}: the ledger counts only "
                              f"{', '.join(OP_NAMES)} (hw_profiles/ops.py)")
        count = _check_count(op, count)
        if count:
            ops = self._ops[self.resolve_scope(scope)]
            ops[op] = ops.get(op, 0) + count

    def add_bytes(self, level: str, read=0, write=0, scope: str | None = None) -> None:
        """Add bytes read from and written to the logical memory ``level``."""
        if level not in MEMORY_LEVELS:
            raise LedgerError(f"unknown memory level {level!r}: expected one of "
                              f"{', '.join(MEMORY_LEVELS)}")
        full = self.resolve_scope(scope)
        for direction, n in zip(_DIRECTIONS, (read, write)):
            n = _check_count(f"{level} {direction} bytes", n)
            if n:
                key = (level, direction)
                self._bytes[full][key] = self._bytes[full].get(key, 0) + n

    def add_samples(self, n, scope: str | None = None) -> None:
        """Record that the work in this scope processed ``n`` more samples."""
        n = _check_count("samples", n)
        full = self.resolve_scope(scope)
        self._samples[full] = self._samples.get(full, 0) + n

    def add_uncounted(self, name: str, calls=1, scope: str | None = None) -> None:
        """Record an operation an engine executed but has no cost formula for."""
        calls = _check_count(f"uncounted {name}", calls)
        bucket = self._uncounted[self.resolve_scope(scope)]
        bucket[name] = bucket.get(name, 0) + calls

    # -- resident footprint (issue 13 item 3: cache reuse and MCU capacity) ---------------
    def add_footprint(self, writable=0, read_only=0, scope: str | None = None) -> None:
        """Record that one block of work under ``scope`` kept these bytes resident.

        ``writable``: state the block writes (parameters, optimizer state, counters);
        ``read_only``: state it only reads (input data, frozen weights). Repeated blocks keep
        the maximum of each and count the blocks; pricing uses this to decide whether the
        state fits a cache (GPU/CPU) or the SRAM and flash of a microcontroller.
        """
        w = _check_count("footprint writable bytes", writable)
        r = _check_count("footprint read-only bytes", read_only)
        entry = self._footprint.setdefault(self.resolve_scope(scope),
                                           {"writable": 0, "read_only": 0, "blocks": 0})
        entry["writable"] = max(entry["writable"], w)
        entry["read_only"] = max(entry["read_only"], r)
        entry["blocks"] += 1

    def footprints(self) -> dict[str, dict[str, int]]:
        """``scope -> {"writable", "read_only", "blocks"}`` for every recorded footprint."""
        return {k: dict(v) for k, v in sorted(self._footprint.items())}

    def _merge_footprints(self, other: dict, prefix: str) -> None:
        for name, fp in other.items():
            full = "/".join(p for p in (prefix, name) if p)
            entry = self._footprint.setdefault(full, {"writable": 0, "read_only": 0,
                                                      "blocks": 0})
            for key in ("writable", "read_only"):
                entry[key] = max(entry[key], _check_count(f"footprint {key}", fp[key]))
            entry["blocks"] += _check_count("footprint blocks", fp["blocks"])
    # -- end resident footprint ----------------------------------------------------------

    def flush(self, counts: np.ndarray, scope: str | None = None) -> None:
        """Add an engine's int64 count array (indexed by ``OP_CODES``) in one call."""
        counts = np.asarray(counts)
        if counts.shape != (len(OP_NAMES),) or counts.dtype.kind not in "iu":
            raise LedgerError(f"flush: expected an integer array of shape ({len(OP_NAMES)},) "
                              f"indexed by OP_CODES, got {counts.dtype} {counts.shape}")
        if (counts < 0).any():
            raise LedgerError(f"flush: negative count for "
                              f"{OP_NAMES[int(np.argmin(counts))]}")
        ops = self._ops[self.resolve_scope(scope)]
        for code in np.flatnonzero(counts):
            op = OP_NAMES[code]
            ops[op] = ops.get(op, 0) + int(counts[code])

    # -- reading -----------------------------------------------------------------------
    def scopes(self) -> list[str]:
        """Every scope that holds direct counts, bytes, samples or uncounted ops."""
        names = set(k for k, v in self._ops.items() if v)
        names |= set(k for k, v in self._bytes.items() if v)
        names |= set(self._samples) | set(k for k, v in self._uncounted.items() if v)
        return sorted(names)

    def ops(self, scope: str) -> dict[str, int]:
        """Op counts recorded directly in ``scope`` (not its sub-scopes)."""
        return dict(self._ops.get(scope, {}))

    def bytes(self, scope: str) -> dict[tuple[str, str], int]:
        """``(level, 'read'|'write') -> bytes`` recorded directly in ``scope``."""
        return dict(self._bytes.get(scope, {}))

    def samples(self) -> dict[str, int]:
        return dict(self._samples)

    def uncounted(self, within_scope: str = "") -> dict[str, int]:
        out: dict[str, int] = {}
        for scope, bucket in self._uncounted.items():
            if within(scope, within_scope):
                for k, v in bucket.items():
                    out[k] = out.get(k, 0) + v
        return out

    def total_ops(self, within_scope: str = "") -> dict[str, int]:
        """Op counts summed over ``within_scope`` and its sub-scopes (all by default)."""
        out: dict[str, int] = {}
        for scope, ops in self._ops.items():
            if within(scope, within_scope):
                for k, v in ops.items():
                    out[k] = out.get(k, 0) + v
        return out

    def total_bytes(self, within_scope: str = "") -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for scope, b in self._bytes.items():
            if within(scope, within_scope):
                for k, v in b.items():
                    out[k] = out.get(k, 0) + v
        return out

    def is_empty(self) -> bool:
        return not self.scopes() and not self._footprint

    # -- combining ---------------------------------------------------------------------
    def merge(self, other: "Ledger", scope: str | None = None) -> "Ledger":
        """Add every count of ``other`` into this ledger (under ``scope`` if given)."""
        if not isinstance(other, Ledger):
            raise LedgerError(f"merge: expected a Ledger, got {type(other).__name__}")
        data = other.to_dict()
        prefix = self.resolve_scope(scope)
        for entry in data["scopes"]:
            name = "/".join(p for p in (prefix, entry["scope"]) if p)
            for op, n in entry["ops"].items():
                self._ops[name][op] = self._ops[name].get(op, 0) + n
            for key, n in entry["bytes"].items():
                level, direction = key.split(":")
                self._bytes[name][(level, direction)] = \
                    self._bytes[name].get((level, direction), 0) + n
            if "samples" in entry:
                self._samples[name] = self._samples.get(name, 0) + entry["samples"]
            for k, n in entry["uncounted"].items():
                self._uncounted[name][k] = self._uncounted[name].get(k, 0) + n
        self._merge_footprints(data.get("footprint", {}), prefix)
        return self

    def __add__(self, other: "Ledger") -> "Ledger":
        return Ledger().merge(self).merge(other)

    def __eq__(self, other) -> bool:
        return isinstance(other, Ledger) and self.to_dict() == other.to_dict()

    def copy(self) -> "Ledger":
        return Ledger().merge(self)

    # -- pricing -----------------------------------------------------------------------
    def price(self, profile):
        """Price every count on ``profile`` (name, path or HardwareProfile): an EnergyReport."""
        from sim.pricing import price
        return price(self, profile)

    # -- serialisation: one to_dict/from_dict path, JSON and HDF5 built on it ------------
    def to_dict(self) -> dict:
        scopes = []
        for name in self.scopes():
            entry = {"scope": name,
                     "ops": {op: self._ops[name][op] for op in OP_NAMES
                             if op in self._ops.get(name, {})},
                     "bytes": {f"{lv}:{d}": n for (lv, d), n in
                               sorted(self._bytes.get(name, {}).items())},
                     "uncounted": dict(sorted(self._uncounted.get(name, {}).items()))}
            if name in self._samples:
                entry["samples"] = self._samples[name]
            scopes.append(entry)
        out = {"type": FORMAT, "version": FORMAT_VERSION, "scopes": scopes}
        if self._footprint:  # optional key: ledgers without one serialise as before
            out["footprint"] = self.footprints()
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> "Ledger":
        if not isinstance(data, Mapping) or data.get("type") != FORMAT:
            raise LedgerError(f"not a serialised ledger: expected type {FORMAT!r}, got "
                              f"{data.get('type') if isinstance(data, Mapping) else data!r}")
        if data.get("version") != FORMAT_VERSION:
            raise LedgerError(f"ledger format version {data.get('version')!r} is not "
                              f"supported (this neuroedge reads version {FORMAT_VERSION})")
        led = cls()
        try:
            for entry in data["scopes"]:
                name = entry["scope"]
                for op, n in entry["ops"].items():
                    led.add(op, n, scope=name or None)
                for key, n in entry["bytes"].items():
                    level, direction = key.split(":")
                    if direction not in _DIRECTIONS:
                        raise LedgerError(f"bytes key {key!r}: expected LEVEL:read|write")
                    led.add_bytes(level, scope=name or None, **{direction: n})
                if "samples" in entry:
                    led.add_samples(entry["samples"], scope=name or None)
                for k, n in entry["uncounted"].items():
                    led.add_uncounted(k, n, scope=name or None)
            led._merge_footprints(data.get("footprint", {}), "")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise LedgerError(f"malformed serialised ledger: {type(exc).__name__}: {exc}") \
                from None
        return led

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "Ledger":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LedgerError(f"ledger JSON is not valid JSON: {exc}") from None
        return cls.from_dict(data)

    def to_hdf5(self, group) -> None:
        """Write into an h5py group: int64 matrices scopes x ops and scopes x byte columns."""
        import h5py
        names = self.scopes()
        str_dt = h5py.string_dtype()
        ops = np.zeros((len(names), len(OP_NAMES)), dtype=np.int64)
        byte_cols = [f"{lv}:{d}" for lv in MEMORY_LEVELS for d in _DIRECTIONS]
        nbytes = np.zeros((len(names), len(byte_cols)), dtype=np.int64)
        samples = np.full(len(names), -1, dtype=np.int64)  # -1: no samples recorded
        for i, name in enumerate(names):
            for op, n in self._ops.get(name, {}).items():
                ops[i, OP_NAMES.index(op)] = self._fit_int64(op, n)
            for (lv, d), n in self._bytes.get(name, {}).items():
                nbytes[i, byte_cols.index(f"{lv}:{d}")] = self._fit_int64(f"{lv} bytes", n)
            if name in self._samples:
                samples[i] = self._samples[name]
        group.attrs["type"] = FORMAT
        group.attrs["version"] = FORMAT_VERSION
        group.create_dataset("scope_names", data=np.array(names, dtype=object), dtype=str_dt)
        group.create_dataset("op_names", data=np.array(OP_NAMES, dtype=object), dtype=str_dt)
        group.create_dataset("byte_columns", data=np.array(byte_cols, dtype=object),
                             dtype=str_dt)
        group.create_dataset("ops", data=ops, compression="gzip")
        group.create_dataset("bytes", data=nbytes, compression="gzip")
        group.create_dataset("samples", data=samples)
        group.attrs["uncounted"] = json.dumps({k: v for k, v in self._uncounted.items() if v})
        if self._footprint:
            group.attrs["footprint"] = json.dumps(self.footprints())

    @staticmethod
    def _fit_int64(what, n):
        if n > _INT64_MAX:
            raise LedgerError(f"count for {what} = {n} does not fit in int64 for HDF5")
        return n

    @classmethod
    def from_hdf5(cls, group) -> "Ledger":
        if group.attrs.get("type") != FORMAT:
            raise LedgerError(f"HDF5 group {group.name!r} is not a ledger "
                              f"(type attribute {group.attrs.get('type')!r})")
        if group.attrs.get("version") != FORMAT_VERSION:
            raise LedgerError(f"ledger format version {group.attrs.get('version')!r} is not "
                              f"supported (this neuroedge reads version {FORMAT_VERSION})")
        try:
            names = [s.decode() if isinstance(s, bytes) else s for s in group["scope_names"][()]]
            op_names = [s.decode() if isinstance(s, bytes) else s for s in group["op_names"][()]]
            cols = [s.decode() if isinstance(s, bytes) else s for s in group["byte_columns"][()]]
            ops, nbytes, samples = group["ops"][()], group["bytes"][()], group["samples"][()]
            uncounted = json.loads(group.attrs["uncounted"])
        except (KeyError, OSError, ValueError) as exc:
            raise LedgerError(f"HDF5 ledger in {group.name!r} is incomplete or corrupt: "
                              f"{exc}") from None
        led = cls()
        for i, name in enumerate(names):
            scope = name or None
            for j, op in enumerate(op_names):
                if ops[i, j]:
                    led.add(op, int(ops[i, j]), scope=scope)
            for j, col in enumerate(cols):
                if nbytes[i, j]:
                    level, direction = col.split(":")
                    led.add_bytes(level, scope=scope, **{direction: int(nbytes[i, j])})
            if samples[i] >= 0:
                led.add_samples(int(samples[i]), scope=scope)
        for name, bucket in uncounted.items():
            for k, n in bucket.items():
                led.add_uncounted(k, n, scope=name or None)
        if "footprint" in group.attrs:  # optional: written only when a footprint was recorded
            try:
                led._merge_footprints(json.loads(group.attrs["footprint"]), "")
            except (KeyError, TypeError, ValueError) as exc:
                raise LedgerError(f"HDF5 ledger in {group.name!r} has a corrupt footprint "
                                  f"attribute: {exc}") from None
        return led

    def __repr__(self) -> str:
        ops = self.total_ops()
        top = ", ".join(f"{k}={v}" for k, v in list(ops.items())[:4])
        return f"Ledger({len(self.scopes())} scopes; {top}{', ...' if len(ops) > 4 else ''})"
