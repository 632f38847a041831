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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from hw_profiles.ops import MEMORY_LEVELS, OP_NAMES, OPS
from sim.errors import LedgerError

FORMAT = "neuroedge.Ledger"
FORMAT_VERSION = 1
_SCOPE_RE = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")
_DIRECTIONS = ("read", "write")
_INT64_MAX = np.iinfo(np.int64).max

ACTIVITY = {
    # NeuroBench's activity counts (neurobench.metrics; names of its SynapticOperations,
    # ActivationSparsity and MembraneUpdates): what the model did, never priced
    "dense_synops": "synaptic operations of connection layers counting every input and "
                    "weight, zeros included (NeuroBench SynapticOperations 'Dense')",
    "effective_macs": "multiply-accumulates of connection layers with a non-zero, "
                      "non-binary input and a non-zero weight (NeuroBench 'Effective_MACs')",
    "effective_acs": "accumulates of connection layers with a spike (binary non-zero) input "
                     "and a non-zero weight (NeuroBench 'Effective_ACs')",
    "activations": "outputs of neuron layers (activation functions, spiking neurons)",
    "activations_zero": "outputs of neuron layers that are zero (ActivationSparsity)",
    "membrane_updates": "updates of a spiking neuron's membrane state (NeuroBench "
                        "MembraneUpdates)",
}
"""Unpriced activity counts a ledger may hold beside its ops (:meth:`Ledger.add_activity`)."""

MODEL_FACTS = ("parameters", "parameter_bytes", "buffer_bytes", "connection_weights",
               "connection_zero_weights")
"""What :meth:`Ledger.record_model` stores of a placed model: parameter count, bytes of
parameters and of buffers (NeuroBench Footprint = their sum), and the weights of its
connection layers with how many are zero (ConnectionSparsity)."""

LAYER_FIELDS = ("type", "output_shape", "parameters")
"""What :meth:`Ledger.record_layer` stores of one layer for per-layer tables."""


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
        self._timing: dict[str, StepTiming] = {}   # neuromorphic step timing (see below)
        self._footprint: dict[str, dict[str, int]] = {}  # see add_footprint
        self._activity: dict[str, dict[str, int]] = defaultdict(dict)  # see add_activity
        self._models: dict[str, dict[str, int]] = {}     # see record_model
        self._layers: dict[str, dict] = {}               # see record_layer
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
    def scope(self, name: str) -> Iterator[Ledger]:
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
        for direction, n in zip(_DIRECTIONS, (read, write), strict=True):
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

    # -- what the model is and did, for NeuroBench metrics and per-layer tables -----------
    # Never priced: these say what ran (connections, neurons, zeros), not what it cost.
    def add_activity(self, name: str, count, scope: str | None = None) -> None:
        """Add ``count`` to the activity counter ``name`` (one of :data:`ACTIVITY`)."""
        if name not in ACTIVITY:
            raise LedgerError(f"unknown activity {name!r}: the ledger counts "
                              f"{', '.join(ACTIVITY)} (sim/ledger.py ACTIVITY)")
        count = _check_count(name, count)
        if count:
            bucket = self._activity[self.resolve_scope(scope)]
            bucket[name] = bucket.get(name, 0) + count

    def activity(self, within_scope: str = "") -> dict[str, int]:
        """Activity counts summed over ``within_scope`` and its sub-scopes (all by default)."""
        out: dict[str, int] = {}
        for scope, bucket in self._activity.items():
            if within(scope, within_scope):
                for k, v in bucket.items():
                    out[k] = out.get(k, 0) + v
        return out

    def record_model(self, name: str, **facts) -> None:
        """Record (or replace) the facts of placed model ``name``: each of
        :data:`MODEL_FACTS`, integers. Engines record a model when it is placed and again
        when a counting block ends, so the ledger holds the model as it was last run (after
        training: its pruned or trained weights)."""
        unknown = set(facts) - set(MODEL_FACTS)
        if unknown or set(facts) != set(MODEL_FACTS):
            raise LedgerError(f"record_model {name!r}: expected the facts "
                              f"{', '.join(MODEL_FACTS)}, got {', '.join(sorted(facts))}")
        self._models[str(name)] = {k: _check_count(f"{name} {k}", facts[k])
                                   for k in MODEL_FACTS}

    def models(self) -> dict[str, dict[str, int]]:
        """``model name -> facts`` of every recorded model."""
        return {k: dict(v) for k, v in sorted(self._models.items())}

    def record_layer(self, path: str, type: str, output_shape, parameters) -> None:
        """Record (or replace) what layer ``path`` is: its ``type`` (class name), the
        ``output_shape`` of its last call (per call, batch included) and its ``parameters``.
        ``path`` is the part of a scope that names the layer (``net.0`` in
        ``train/net.0/forward``; a population name on neuromorphic engines)."""
        shape = [_check_count(f"layer {path} output_shape", int(d)) for d in output_shape]
        self._layers[str(path)] = {"type": str(type), "output_shape": shape,
                                   "parameters": _check_count(f"layer {path} parameters",
                                                              parameters)}

    def layers(self) -> dict[str, dict]:
        """``layer path -> {"type", "output_shape", "parameters"}`` in recording order."""
        return {k: {**v, "output_shape": list(v["output_shape"])}
                for k, v in self._layers.items()}

    def _merge_extras(self, data: Mapping, prefix: str) -> None:
        """Activity, models and layers of a serialised ledger (optional keys)."""
        for name, bucket in data.get("activity", {}).items():
            full = "/".join(p for p in (prefix, name) if p)
            for k, n in bucket.items():
                self._add_activity_at(full, k, n)
        for name, facts in data.get("models", {}).items():
            self.record_model(name, **facts)
        for path, info in data.get("layers", {}).items():
            self.record_layer(path, info["type"], info["output_shape"], info["parameters"])

    def _add_activity_at(self, full: str, name: str, n) -> None:
        if name not in ACTIVITY:
            raise LedgerError(f"unknown activity {name!r}: the ledger counts "
                              f"{', '.join(ACTIVITY)} (sim/ledger.py ACTIVITY)")
        bucket = self._activity[full]
        bucket[name] = bucket.get(name, 0) + _check_count(name, n)

    # -- resident footprint: cache reuse (GPU/CPU) and capacity (MCU) --------------------
    def add_footprint(self, writable=0, read_only=0, scope: str | None = None,
                      streamed=0) -> None:
        """Record that one block of work under ``scope`` kept these bytes resident.

        ``writable``: state the block writes (parameters, optimizer state, counters);
        ``read_only``: state it only reads (input data, frozen weights); ``streamed``: the
        part of ``read_only`` the block only gathers rows from (a training tensor indexed
        batch by batch), which it passes through rather than reuses. Repeated blocks keep
        the maximum of each and count the blocks; pricing uses this to decide whether the
        reused state fits a cache (GPU/CPU) or the SRAM and flash of a microcontroller.
        """
        w = _check_count("footprint writable bytes", writable)
        r = _check_count("footprint read-only bytes", read_only)
        st = _check_count("footprint streamed bytes", streamed)
        if st > r:
            raise LedgerError(f"footprint streamed bytes = {st} > read-only bytes = {r}: "
                              "streamed data is part of the read-only state")
        entry = self._footprint.setdefault(self.resolve_scope(scope),
                                           {"writable": 0, "read_only": 0, "blocks": 0})
        entry["writable"] = max(entry["writable"], w)
        entry["read_only"] = max(entry["read_only"], r)
        if st:
            entry["streamed"] = max(entry.get("streamed", 0), st)
        entry["blocks"] += 1

    def footprints(self) -> dict[str, dict[str, int]]:
        """``scope -> {"writable", "read_only", "blocks"}`` (and ``"streamed"`` where any
        was recorded) for every recorded footprint."""
        return {k: dict(v) for k, v in sorted(self._footprint.items())}

    def _merge_footprints(self, other: dict, prefix: str) -> None:
        for name, fp in other.items():
            full = "/".join(p for p in (prefix, name) if p)
            entry = self._footprint.setdefault(full, {"writable": 0, "read_only": 0,
                                                      "blocks": 0})
            for key in ("writable", "read_only"):
                entry[key] = max(entry[key], _check_count(f"footprint {key}", fp[key]))
            if fp.get("streamed"):
                entry["streamed"] = max(entry.get("streamed", 0),
                                        _check_count("footprint streamed", fp["streamed"]))
            entry["blocks"] += _check_count("footprint blocks", fp["blocks"])

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
        names |= set(self._timing)
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
        return not self.scopes() and not self._footprint and not self._extras()

    # -- combining ---------------------------------------------------------------------
    def merge(self, other: Ledger, scope: str | None = None) -> Ledger:
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
            if "timing" in entry:
                self._add_timing(name, StepTiming.from_dict(entry["timing"]))
        self._merge_footprints(data.get("footprint", {}), prefix)
        self._merge_extras(data, prefix)
        return self

    def __add__(self, other: Ledger) -> Ledger:
        return Ledger().merge(self).merge(other)

    def __eq__(self, other) -> bool:
        return isinstance(other, Ledger) and self.to_dict() == other.to_dict()

    def copy(self) -> Ledger:
        return Ledger().merge(self)

    # -- pricing -----------------------------------------------------------------------
    def price(self, profile, **options):
        """Price every count on ``profile`` (name, path or HardwareProfile): an EnergyReport.

        ``options`` go to :func:`sim.pricing.price` (``realtime=True``: neuromorphic static
        energy over the biological duration)."""
        from sim.pricing import price
        return price(self, profile, **options)

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
            if name in self._timing:
                entry["timing"] = self._timing[name].to_dict()
            scopes.append(entry)
        out = {"type": FORMAT, "version": FORMAT_VERSION, "scopes": scopes}
        if self._footprint:  # optional key: ledgers without one serialise as before
            out["footprint"] = self.footprints()
        out.update(self._extras())
        return out

    def _extras(self) -> dict:
        """The optional activity, models and layers keys (absent when empty, so ledgers
        without them serialise as before)."""
        out = {}
        activity = {k: dict(sorted(v.items())) for k, v in sorted(self._activity.items()) if v}
        if activity:
            out["activity"] = activity
        if self._models:
            out["models"] = self.models()
        if self._layers:
            out["layers"] = self.layers()
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> Ledger:
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
                if "timing" in entry:
                    led._add_timing(name, StepTiming.from_dict(entry["timing"]))
            led._merge_footprints(data.get("footprint", {}), "")
            led._merge_extras(data, "")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise LedgerError(f"malformed serialised ledger: {type(exc).__name__}: {exc}") \
                from None
        return led

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Ledger:
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
        self._timing_to_hdf5(group)
        if self._footprint:
            group.attrs["footprint"] = json.dumps(self.footprints())
        extras = self._extras()
        if extras:
            group.attrs["extras"] = json.dumps(extras)

    @staticmethod
    def _fit_int64(what, n):
        if n > _INT64_MAX:
            raise LedgerError(f"count for {what} = {n} does not fit in int64 for HDF5")
        return n

    @classmethod
    def from_hdf5(cls, group) -> Ledger:
        if group.attrs.get("type") != FORMAT:
            raise LedgerError(f"HDF5 group {group.name!r} is not a ledger "
                              f"(type attribute {group.attrs.get('type')!r})")
        if group.attrs.get("version") != FORMAT_VERSION:
            raise LedgerError(f"ledger format version {group.attrs.get('version')!r} is not "
                              f"supported (this neuroedge reads version {FORMAT_VERSION})")
        try:
            names = _hdf5_strings(group, "scope_names")
            op_names = _hdf5_strings(group, "op_names")
            cols = _hdf5_strings(group, "byte_columns")
            ops, nbytes, samples = group["ops"][()], group["bytes"][()], group["samples"][()]
            uncounted = json.loads(group.attrs["uncounted"])
        except (KeyError, OSError, ValueError, TypeError, AttributeError) as exc:
            raise LedgerError(f"HDF5 ledger in {group.name!r} is incomplete or corrupt: "
                              f"{exc}") from None
        _check_hdf5_arrays(group.name, names, op_names, cols, ops, nbytes, samples, uncounted)
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
        led._timing_from_hdf5(group)
        if "footprint" in group.attrs:  # optional: written only when a footprint was recorded
            try:
                led._merge_footprints(json.loads(group.attrs["footprint"]), "")
            except (KeyError, TypeError, ValueError) as exc:
                raise LedgerError(f"HDF5 ledger in {group.name!r} has a corrupt footprint "
                                  f"attribute: {exc}") from None
        if "extras" in group.attrs:   # optional: activity, models, layers
            try:
                led._merge_extras(json.loads(group.attrs["extras"]), "")
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise LedgerError(f"HDF5 ledger in {group.name!r} has a corrupt extras "
                                  f"attribute (activity, models, layers): {exc}") from None
        return led

    # -- neuromorphic step timing ----------------------------------------------------------
    # A hardware-dependent record beside the counts: the engine reduces its per-core work to
    # the step's critical path inside its kernels and keeps only sums here (never per-step
    # arrays), so pricing on the profile the run was placed on is exact. See StepTiming.
    def add_timing(self, record: StepTiming, scope: str | None = None) -> None:
        """Add an engine's step-timing record to ``scope`` (summed with one already there)."""
        if not isinstance(record, StepTiming):
            raise LedgerError(f"add_timing: expected a StepTiming, got "
                              f"{type(record).__name__}")
        self._add_timing(self.resolve_scope(scope), record)

    def _add_timing(self, scope: str, record: StepTiming) -> None:
        old = self._timing.get(scope)
        self._timing[scope] = record if old is None else old.plus(record, scope)

    def timing(self, scope: str) -> StepTiming | None:
        """The step-timing record of ``scope`` itself (not its sub-scopes), or None."""
        return self._timing.get(scope)

    def _timing_to_hdf5(self, group) -> None:
        if not self._timing:
            return
        g = group.create_group("timing")
        for i, (scope, rec) in enumerate(sorted(self._timing.items())):
            sub = g.create_group(str(i))
            meta = rec.to_dict()
            sub.create_dataset("core_ops", data=np.asarray(meta.pop("core_ops"), np.int64),
                               compression="gzip")
            sub.attrs["scope"] = scope
            sub.attrs["meta"] = json.dumps(meta)

    def _timing_from_hdf5(self, group) -> None:
        if "timing" not in group:
            return
        try:
            for sub in group["timing"].values():
                meta = json.loads(sub.attrs["meta"])
                meta["core_ops"] = sub["core_ops"][()].tolist()
                self._add_timing(str(sub.attrs["scope"]), StepTiming.from_dict(meta))
        except (KeyError, OSError, ValueError, TypeError) as exc:
            raise LedgerError(f"HDF5 ledger in {group.name!r}: step-timing record is "
                              f"incomplete or corrupt: {exc}") from None

    def __repr__(self) -> str:
        ops = self.total_ops()
        top = ", ".join(f"{k}={v}" for k, v in list(ops.items())[:4])
        return f"Ledger({len(self.scopes())} scopes; {top}{', ...' if len(ops) > 4 else ''})"


# -- neuromorphic step timing ----------------------------------------------------------------
TIMED_OPS = ("synop", "neuron_update_active", "neuron_update_idle", "spike", "hop",
             "syn_update")
"""Columns of :attr:`StepTiming.core_ops`: the ops an engine attributes to a core."""


@dataclass(frozen=True)
class StepTiming:
    """What a neuromorphic engine's steps took on the profile it ran on, as sums.

    The step time is computed inside the kernels from per-core op counts (see
    ``sim/neuromorphic/timing.py``); only these totals are kept, so a ledger of millions of
    steps stays small. ``key`` fingerprints the profile's time parameters and the placement's
    barrier: a price on a profile with another key cannot reuse ``step_s``.

    Attributes
    ----------
    profile : name of the profile whose per-core op times made the figures
    key : fingerprint of those times, the barrier and the tick (``timing.timing_key``)
    steps : synchronised phases (time steps, and learning phases) recorded
    work_s : sum over steps of the slowest core's work, seconds (no barrier, no tick)
    step_s : sum over steps of ``max(tick, slowest core + barrier)``, seconds
    paced_s : sum over steps of ``max(dt, step time)``: the run paced to real time
    bio_s : biological duration of the time steps (steps x dt; 0 for learning phases)
    overruns : steps whose time exceeded dt (they could not keep real time)
    core_ops : (1 + cores, len(TIMED_OPS)) int64 totals; row 0 = ops off the cores (input
        spikes injected by the host, ...), row 1 + c = core c
    """

    profile: str
    key: str
    steps: int
    work_s: float
    step_s: float
    paced_s: float
    bio_s: float
    overruns: int
    core_ops: np.ndarray = field(repr=False, compare=False)

    def covered(self) -> dict[str, int]:
        """Op -> count this record timed (the sum over its rows)."""
        tot = np.asarray(self.core_ops).sum(axis=0)
        return {op: int(n) for op, n in zip(TIMED_OPS, tot, strict=True) if n}

    def plus(self, other: StepTiming, scope: str = "") -> StepTiming:
        if (self.profile, self.key) != (other.profile, other.key):
            raise LedgerError(f"scope {scope!r}: step timing recorded on {self.profile!r} "
                              f"(key {self.key}) cannot be summed with timing on "
                              f"{other.profile!r} (key {other.key}); record them in "
                              "separate scopes")
        a, b = np.asarray(self.core_ops), np.asarray(other.core_ops)
        rows = max(a.shape[0], b.shape[0])
        ops = np.zeros((rows, len(TIMED_OPS)), np.int64)
        ops[:a.shape[0]] += a
        ops[:b.shape[0]] += b
        return StepTiming(self.profile, self.key, self.steps + other.steps,
                          self.work_s + other.work_s, self.step_s + other.step_s,
                          self.paced_s + other.paced_s, self.bio_s + other.bio_s,
                          self.overruns + other.overruns, ops)

    def to_dict(self) -> dict:
        return {"profile": self.profile, "key": self.key, "steps": int(self.steps),
                "work_s": float(self.work_s), "step_s": float(self.step_s),
                "paced_s": float(self.paced_s), "bio_s": float(self.bio_s),
                "overruns": int(self.overruns), "columns": list(TIMED_OPS),
                "core_ops": np.asarray(self.core_ops, np.int64).tolist()}

    @classmethod
    def from_dict(cls, d: Mapping) -> StepTiming:
        if list(d.get("columns", TIMED_OPS)) != list(TIMED_OPS):
            raise LedgerError(f"step timing columns {d.get('columns')!r}: this neuroedge "
                              f"reads {list(TIMED_OPS)}")
        ops = np.asarray(d["core_ops"], np.int64).reshape(-1, len(TIMED_OPS))
        vals = [float(d[k]) for k in ("work_s", "step_s", "paced_s", "bio_s")]
        if (ops < 0).any() or min(vals) < 0 or int(d["steps"]) < 0 or int(d["overruns"]) < 0:
            raise LedgerError("step timing record has a negative count or time")
        return cls(str(d["profile"]), str(d["key"]), int(d["steps"]), *vals,
                   int(d["overruns"]), ops)


# -- HDF5 read checks: a foreign or edited file is a LedgerError line -----------------------
def _hdf5_strings(group, key: str) -> list[str]:
    """A 1-D dataset of strings as a list (h5py gives bytes or str by version)."""
    data = group[key][()]
    if not isinstance(data, np.ndarray) or data.ndim != 1 or data.dtype.kind not in "OSU":
        raise LedgerError(f"HDF5 ledger in {group.name!r}: {key} must be a 1-D array of "
                          f"strings, got {getattr(data, 'dtype', type(data).__name__)} "
                          f"shape {getattr(data, 'shape', ())}")
    out = [s.decode() if isinstance(s, bytes) else s for s in data]
    if not all(isinstance(s, str) for s in out):
        raise LedgerError(f"HDF5 ledger in {group.name!r}: {key} must hold strings")
    if len(set(out)) != len(out):
        dup = next(s for s in out if out.count(s) > 1)
        raise LedgerError(f"HDF5 ledger in {group.name!r}: {key} lists {dup!r} twice; "
                          "a ledger writes each name once")
    return out


def _check_hdf5_arrays(where, names, op_names, cols, ops, nbytes, samples, uncounted):
    """Shapes, ranks and dtypes a ledger's writer produces (Ledger.to_hdf5), or an error."""
    expected = (("ops", ops, (len(names), len(op_names)), "scope_names x op_names"),
                ("bytes", nbytes, (len(names), len(cols)), "scope_names x byte_columns"),
                ("samples", samples, (len(names),), "one per scope name"))
    for key, arr, shape, meaning in expected:
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iu":
            raise LedgerError(f"HDF5 ledger in {where!r}: {key} must be an integer array, got "
                              f"{getattr(arr, 'dtype', type(arr).__name__)}")
        if arr.shape != shape:
            raise LedgerError(f"HDF5 ledger in {where!r}: {key} has shape {arr.shape}; "
                              f"expected {shape} ({meaning})")
    if samples.size and samples.min() < -1:
        raise LedgerError(f"HDF5 ledger in {where!r}: samples has {int(samples.min())}; "
                          "expected >= 0, or -1 for a scope without samples")
    for col in cols:
        level, _, direction = col.partition(":")
        if level not in MEMORY_LEVELS or direction not in _DIRECTIONS:
            raise LedgerError(f"HDF5 ledger in {where!r}: byte column {col!r}; expected "
                              "LEVEL:read|write with LEVEL one of " + ", ".join(MEMORY_LEVELS))
    if not isinstance(uncounted, dict) or not all(
            isinstance(b, dict) and all(isinstance(k, str) for k in b)
            for b in uncounted.values()):
        raise LedgerError(f"HDF5 ledger in {where!r}: attribute uncounted must be a JSON "
                          "object {scope: {op name: calls}}")
