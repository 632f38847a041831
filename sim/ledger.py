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

This module owns the counting; the serialised forms (dict, JSON, HDF5) are in
:mod:`sim.ledger_io`, the neuromorphic step-timing record a ledger keeps beside its counts
in :mod:`sim.step_timing`, and the scope-path rules in :mod:`sim.scope_paths`.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import numpy as np

from hw_profiles.ops import MEMORY_LEVELS, OP_NAMES, OPS
from sim import ledger_io, pricing
from sim.errors import LedgerError
from sim.scope_paths import SCOPE_RE, within
from sim.step_timing import StepTiming

_DIRECTIONS = ledger_io.DIRECTIONS

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
"""What :meth:`Ledger.record_layer` stores of one layer for per-layer tables (and, when the
engine knows it, ``op_class``)."""

OP_CLASSES = ("conv", "depthwise_conv", "dense", "pooling", "elementwise", "activation",
              "normalization", "softmax")
"""Kernel classes of a layer (``Ledger.record_layer(op_class=...)``), the classes a deployed
inference library implements as separate kernels: standard and pointwise convolution,
depthwise convolution (one input channel per output channel), dense (fully connected),
pooling, element-wise arithmetic, activation functions, normalisation and softmax."""


def _check_count(what: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise LedgerError(f"count for {what} = {value!r}: counts must be integers")
    value = int(value)
    if value < 0:
        raise LedgerError(f"count for {what} = {value}: counts must be >= 0")
    return value


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
        self._timing: dict[str, StepTiming] = {}   # see add_timing
        self._footprint: dict[str, dict[str, int]] = {}  # see add_footprint
        self._activity: dict[str, dict[str, int]] = defaultdict(dict)  # see add_activity
        self._models: dict[str, dict[str, int]] = {}     # see record_model
        self._deployed: set[str] = set()                 # see mark_deployed
        self._layers: dict[str, dict] = {}               # see record_layer
        self._word_bits: int | None = None               # see record_word_bits
        self._payloads: tuple[int, int] | None = None    # see record_payloads
        self._stack: list[str] = []

    # -- recording ---------------------------------------------------------------------
    def resolve_scope(self, scope: str | None) -> str:
        """Full scope path for ``scope`` inside the current ``with scope()`` blocks; checks it."""
        parts = [p for p in self._stack]
        if scope:
            parts.append(scope)
        full = "/".join(parts)
        if full and not SCOPE_RE.match(full):
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

    def forget_model(self, name: str) -> None:
        """Drop the facts of model ``name``, and its deployed mark (none recorded: nothing
        happens): an engine whose models merged (a part first run alone, then the whole it
        belongs to) records them again under other names."""
        self._models.pop(str(name), None)
        self._deployed.discard(str(name))

    def models(self) -> dict[str, dict[str, int]]:
        """``model name -> facts`` of every recorded model."""
        return {k: dict(v) for k, v in sorted(self._models.items())}

    def mark_deployed(self, name: str) -> None:
        """Mark recorded model ``name`` as (one of) the model(s) the run deploys: NeuroBench's
        static metrics are then those of the marked models only (:mod:`sim.neurobench`),
        not of every model the run recorded (probes, copies, auxiliary networks). A ledger
        with no mark keeps the older meaning: every recorded model is deployed.

        Raises
        ------
        LedgerError
            ``name`` is not a recorded model (the message lists the recorded ones).

        Examples
        --------
        >>> led = Ledger()
        >>> for name, n in (("Policy", 10), ("Policy#2", 10)):
        ...     led.record_model(name, parameters=n, parameter_bytes=4 * n, buffer_bytes=0,
        ...                      connection_weights=n, connection_zero_weights=0)
        >>> led.mark_deployed("Policy")
        >>> led.deployed()
        ['Policy']
        """
        if str(name) not in self._models:
            raise LedgerError(f"mark_deployed {name!r}: no model of that name is recorded; "
                              f"recorded: {', '.join(self._models) or 'none'} "
                              "(record_model first)")
        self._deployed.add(str(name))

    def deployed(self) -> list[str]:
        """Names of the models :meth:`mark_deployed` marked, sorted; empty when none is
        (then every recorded model counts as deployed)."""
        return sorted(self._deployed)

    def record_layer(self, path: str, type: str, output_shape, parameters,
                     op_class: str = "") -> None:
        """Record (or replace) what layer ``path`` is: its ``type`` (class name), the
        ``output_shape`` of its last call (per call, batch included) and its ``parameters``.
        ``path`` is the part of a scope that names the layer (``net.0`` in
        ``train/net.0/forward``; a population name on neuromorphic engines). ``op_class``
        (optional, one of :data:`OP_CLASSES`) is the kind of kernel a deployed library runs
        for it, which a microcontroller's kernel library prices per class
        (``sim/execution/mcu.py``); kept only when given."""
        shape = [_check_count(f"layer {path} output_shape", int(d)) for d in output_shape]
        if op_class and op_class not in OP_CLASSES:
            raise LedgerError(f"layer {path!r}: op_class {op_class!r} is not one of "
                              f"{', '.join(OP_CLASSES)}")
        self._layers[str(path)] = {"type": str(type), "output_shape": shape,
                                   "parameters": _check_count(f"layer {path} parameters",
                                                              parameters)}
        if op_class:
            self._layers[str(path)]["op_class"] = op_class

    def layers(self) -> dict[str, dict]:
        """``layer path -> {"type", "output_shape", "parameters"}`` in recording order."""
        return {k: {**v, "output_shape": list(v["output_shape"])}
                for k, v in self._layers.items()}

    def record_word_bits(self, bits: int) -> None:
        """The width of the words the ledger's word ops (``xor_word``, ``popcount_word``,
        ...) were counted in: a bitwise engine's counts hold ``ceil(bits / width)`` words per
        row, so they price only on a profile of that width (:func:`sim.pricing.price`)."""
        bits = _check_count("word_bits", bits)
        if self._word_bits is not None and self._word_bits != bits:
            raise LedgerError(f"word_bits: the ledger's word ops were counted in "
                              f"{self._word_bits}-bit words, not {bits}-bit ones; a ledger "
                              "holds counts of one word width")
        self._word_bits = bits

    @property
    def word_bits(self) -> int | None:
        """:meth:`record_word_bits`'s width, or None (no word ops recorded with one)."""
        return self._word_bits

    def record_payloads(self, lowest: int, highest: int) -> None:
        """The lowest and highest spike payload a spiking engine's run carried (1 and 1 for
        binary spikes; a ternary or graded code's signed values): its counts price only on
        a chip whose spikes carry them (:func:`sim.pricing.price`). Widens what is held."""
        for name, v in (("lowest", lowest), ("highest", highest)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise LedgerError(f"record_payloads: {name} payload {v!r} is not an integer")
        lo, hi = int(lowest), int(highest)
        if lo > hi:
            raise LedgerError(f"record_payloads: lowest payload {lo} > highest {hi}")
        if self._payloads is not None:
            lo, hi = min(lo, self._payloads[0]), max(hi, self._payloads[1])
        self._payloads = (lo, hi)

    @property
    def payloads(self) -> tuple[int, int] | None:
        """:meth:`record_payloads`'s range, or None (no spikes recorded with one)."""
        return self._payloads

    def _merge_extras(self, data: Mapping, prefix: str) -> None:
        """Activity, models (and their deployed marks), layers and word width of a
        serialised ledger (optional keys; a ledger written before deployed marks has none)."""
        if data.get("word_bits") is not None:
            self.record_word_bits(data["word_bits"])
        if data.get("spike_payloads") is not None:
            lo, hi = data["spike_payloads"]
            self.record_payloads(lo, hi)
        for name, bucket in data.get("activity", {}).items():
            full = "/".join(p for p in (prefix, name) if p)
            for k, n in bucket.items():
                self._add_activity_at(full, k, n)
        for name, facts in data.get("models", {}).items():
            self.record_model(name, **facts)
        deployed = data.get("deployed", [])
        if not isinstance(deployed, list) or not all(isinstance(n, str) for n in deployed):
            raise LedgerError(f"deployed = {deployed!r}: expected a list of model names")
        for name in deployed:
            self.mark_deployed(name)
        for path, info in data.get("layers", {}).items():
            self.record_layer(path, info["type"], info["output_shape"], info["parameters"],
                              info.get("op_class", ""))

    def _add_activity_at(self, full: str, name: str, n) -> None:
        if name not in ACTIVITY:
            raise LedgerError(f"unknown activity {name!r}: the ledger counts "
                              f"{', '.join(ACTIVITY)} (sim/ledger.py ACTIVITY)")
        bucket = self._activity[full]
        bucket[name] = bucket.get(name, 0) + _check_count(name, n)

    # -- resident footprint: cache reuse (GPU/CPU) and capacity (MCU) --------------------
    def add_footprint(self, writable=0, read_only=0, scope: str | None = None,
                      streamed=0, streamed_read=None) -> None:
        """Record that one block of work under ``scope`` kept these bytes resident.

        ``writable``: state the block writes (parameters, optimizer state, counters);
        ``read_only``: state it only reads (input data, frozen weights); ``streamed``: the
        part of ``read_only`` the block only gathers rows from (a training tensor indexed
        batch by batch), which it passes through rather than reuses; ``streamed_read``: the
        bytes the block gathered of it (default: all of it). Repeated blocks keep the
        maximum of each size, add up ``streamed_read`` and count the blocks; pricing uses
        this to decide whether the reused state fits a cache (GPU/CPU) or the SRAM and
        flash of a microcontroller, and what DRAM supplies per block.
        """
        w = _check_count("footprint writable bytes", writable)
        r = _check_count("footprint read-only bytes", read_only)
        st = _check_count("footprint streamed bytes", streamed)
        if st > r:
            raise LedgerError(f"footprint streamed bytes = {st} > read-only bytes = {r}: "
                              "streamed data is part of the read-only state")
        sr = st if streamed_read is None else _check_count("footprint streamed read bytes",
                                                           streamed_read)
        if sr > st:
            raise LedgerError(f"footprint streamed read bytes = {sr} > streamed bytes = {st}: "
                              "a block reads at most the data it streams through")
        entry = self._footprint.setdefault(self.resolve_scope(scope),
                                           {"writable": 0, "read_only": 0, "blocks": 0})
        entry["writable"] = max(entry["writable"], w)
        entry["read_only"] = max(entry["read_only"], r)
        if st:
            entry["streamed"] = max(entry.get("streamed", 0), st)
            entry["streamed_read"] = entry.get("streamed_read", 0) + sr
        entry["blocks"] += 1

    def footprints(self) -> dict[str, dict[str, int]]:
        """``scope -> {"writable", "read_only", "blocks"}`` (and ``"streamed"`` with
        ``"streamed_read"``, summed over the blocks, where any was recorded) for every
        recorded footprint."""
        return {k: dict(v) for k, v in sorted(self._footprint.items())}

    def _merge_footprints(self, other: dict, prefix: str) -> None:
        for name, fp in other.items():
            full = "/".join(p for p in (prefix, name) if p)
            entry = self._footprint.setdefault(full, {"writable": 0, "read_only": 0,
                                                      "blocks": 0})
            for key in ("writable", "read_only"):
                entry[key] = max(entry[key], _check_count(f"footprint {key}", fp[key]))
            blocks = _check_count("footprint blocks", fp["blocks"])
            if fp.get("streamed"):
                st = _check_count("footprint streamed", fp["streamed"])
                entry["streamed"] = max(entry.get("streamed", 0), st)
                # a ledger from before streamed reads were recorded: all of the streamed
                # data read in every block (what pricing assumed then)
                read = (_check_count("footprint streamed_read", fp["streamed_read"])
                        if "streamed_read" in fp else st * blocks)
                if read > st * blocks:
                    raise LedgerError(f"footprint {full!r}: streamed_read = {read} > streamed "
                                      f"{st} x {blocks} blocks: a block reads at most the data "
                                      "it streams through")
                entry["streamed_read"] = entry.get("streamed_read", 0) + read
            entry["blocks"] += blocks

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
        extras = self._extras()
        extras.pop("word_bits", None)   # a width alone counts nothing
        extras.pop("spike_payloads", None)
        return not self.scopes() and not self._footprint and not extras

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
        return pricing.price(self, profile, **options)

    # -- serialisation: one to_dict/from_dict path; JSON and HDF5 built on it (ledger_io) ---
    def to_dict(self) -> dict:
        """Plain data: a format tag and version, one entry per scope, optional extras.

        The one serialised form of a ledger; JSON and HDF5 (:mod:`sim.ledger_io`) write it.
        """
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
        out = {"type": ledger_io.FORMAT, "version": ledger_io.FORMAT_VERSION, "scopes": scopes}
        if self._footprint:  # optional key: ledgers without one serialise as before
            out["footprint"] = self.footprints()
        out.update(self._extras())
        return out

    def _extras(self) -> dict:
        """The optional activity, models, deployed and layers keys (absent when empty, so
        ledgers without them serialise as before)."""
        out = {}
        activity = {k: dict(sorted(v.items())) for k, v in sorted(self._activity.items()) if v}
        if activity:
            out["activity"] = activity
        if self._models:
            out["models"] = self.models()
        if self._deployed:
            out["deployed"] = self.deployed()
        if self._layers:
            out["layers"] = self.layers()
        if self._word_bits is not None:
            out["word_bits"] = self._word_bits
        if self._payloads is not None:
            out["spike_payloads"] = list(self._payloads)
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> Ledger:
        """A ledger from :meth:`to_dict`'s form, every count checked as if recorded live.

        Raises
        ------
        LedgerError
            Not a serialised ledger, another format version, or a malformed entry.
        """
        ledger_io.check_format(data)
        led = cls()
        try:
            for entry in data["scopes"]:
                name = entry["scope"]
                for op, n in entry["ops"].items():
                    led.add(op, n, scope=name or None)
                for key, n in entry["bytes"].items():
                    level, direction = key.split(":")
                    if direction not in ledger_io.DIRECTIONS:
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
        """:meth:`to_dict` as JSON text."""
        return ledger_io.to_json(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> Ledger:
        """A ledger from :meth:`to_json`'s text."""
        return cls.from_dict(ledger_io.from_json(text))

    def to_hdf5(self, group) -> None:
        """Write into an h5py group: int64 matrices scopes x ops and scopes x byte columns
        (layout: :mod:`sim.ledger_io`)."""
        ledger_io.write_hdf5(self.to_dict(), group)

    @classmethod
    def from_hdf5(cls, group) -> Ledger:
        """A ledger from a group :meth:`to_hdf5` wrote; a foreign or corrupt group is a
        :class:`~sim.errors.LedgerError` naming it."""
        return cls.from_dict(ledger_io.read_hdf5(group))

    # -- neuromorphic step timing ----------------------------------------------------------
    # A hardware-dependent record beside the counts: the engine reduces its per-core work to
    # the step's critical path inside its kernels and keeps only sums here (never per-step
    # arrays), so pricing on the profile the run was placed on is exact (sim/step_timing.py).
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

    def __repr__(self) -> str:
        ops = self.total_ops()
        top = ", ".join(f"{k}={v}" for k, v in list(ops.items())[:4])
        return f"Ledger({len(self.scopes())} scopes; {top}{', ...' if len(ops) > 4 else ''})"
