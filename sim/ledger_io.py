"""A ledger's serialised forms: the tagged dict, JSON text and an HDF5 group, and their checks.

:meth:`sim.ledger.Ledger.to_dict` / :meth:`~sim.ledger.Ledger.from_dict` is the one path
between a ledger and plain data (a format tag and version at the root, one entry per scope);
JSON and HDF5 are built on it here. This module never builds a ledger: readers return the
dict form, which ``Ledger.from_dict`` turns back into a ledger through the same checks as
counts recorded live.

The HDF5 layout (a group, usually ``/ledger`` of a run file):

- ``scope_names`` (S,), ``op_names`` (O,), ``byte_columns`` (B,) string datasets;
- ``ops`` (S, O) and ``bytes`` (S, B) int64 matrices (gzip), ``samples`` (S,) int64 with
  -1 for a scope without samples;
- attributes ``type``, ``version``, ``uncounted`` (JSON ``{scope: {op name: calls}}``) and,
  when present, ``footprint`` and ``extras`` (JSON: activity, models, deployed (the names
  ``Ledger.mark_deployed`` marked; absent in files written before the mark, which then
  mean every model), layers, word_bits, spike_payloads);
- a ``timing`` subgroup with one group per step-timing record (``core_ops`` dataset, the
  ``scope`` and the rest of the record as JSON ``meta``).

A file a reader cannot take (foreign type, other version, arrays of the wrong shape or
dtype) is a :class:`~sim.errors.LedgerError` line naming the group and what was expected.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from hw_profiles.ops import MEMORY_LEVELS, OP_NAMES
from sim.errors import LedgerError
from sim.step_timing import StepTiming

FORMAT = "neuroedge.Ledger"
FORMAT_VERSION = 1
EXTRAS = ("activity", "models", "deployed", "layers", "word_bits", "spike_payloads")
"""The optional keys of a ledger's dict form kept in the HDF5 ``extras`` attribute."""
DIRECTIONS = ("read", "write")
_INT64_MAX = np.iinfo(np.int64).max


def check_format(data) -> None:
    """Raise unless ``data`` is tagged as a serialised ledger of the version this reads."""
    if not isinstance(data, Mapping) or data.get("type") != FORMAT:
        raise LedgerError(f"not a serialised ledger: expected type {FORMAT!r}, got "
                          f"{data.get('type') if isinstance(data, Mapping) else data!r}")
    if data.get("version") != FORMAT_VERSION:
        raise LedgerError(f"ledger format version {data.get('version')!r} is not "
                          f"supported (this neuroedge reads version {FORMAT_VERSION})")


# -- JSON --------------------------------------------------------------------------------------
def to_json(data: Mapping) -> str:
    """JSON text of a ledger's dict form."""
    return json.dumps(data, indent=1)


def from_json(text: str):
    """The dict form from JSON text (checked by ``Ledger.from_dict``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LedgerError(f"ledger JSON is not valid JSON: {exc}") from None


# -- HDF5 --------------------------------------------------------------------------------------
def write_hdf5(data: Mapping, group) -> None:
    """Write a ledger's dict form into an h5py group (layout in the module docstring).

    Raises
    ------
    LedgerError
        A count does not fit in int64.
    """
    import h5py  # optional at import time: only run files need it
    entries = data["scopes"]
    names = [e["scope"] for e in entries]
    str_dt = h5py.string_dtype()
    ops = np.zeros((len(names), len(OP_NAMES)), dtype=np.int64)
    byte_cols = [f"{lv}:{d}" for lv in MEMORY_LEVELS for d in DIRECTIONS]
    nbytes = np.zeros((len(names), len(byte_cols)), dtype=np.int64)
    samples = np.full(len(names), -1, dtype=np.int64)  # -1: no samples recorded
    for i, entry in enumerate(entries):
        for op, n in entry["ops"].items():
            ops[i, OP_NAMES.index(op)] = _fit_int64(op, n)
        for col, n in entry["bytes"].items():
            nbytes[i, byte_cols.index(col)] = _fit_int64(f"{col.split(':')[0]} bytes", n)
        if "samples" in entry:
            samples[i] = entry["samples"]
    group.attrs["type"] = FORMAT
    group.attrs["version"] = FORMAT_VERSION
    group.create_dataset("scope_names", data=np.array(names, dtype=object), dtype=str_dt)
    group.create_dataset("op_names", data=np.array(OP_NAMES, dtype=object), dtype=str_dt)
    group.create_dataset("byte_columns", data=np.array(byte_cols, dtype=object),
                         dtype=str_dt)
    group.create_dataset("ops", data=ops, compression="gzip")
    group.create_dataset("bytes", data=nbytes, compression="gzip")
    group.create_dataset("samples", data=samples)
    group.attrs["uncounted"] = json.dumps({e["scope"]: e["uncounted"] for e in entries
                                           if e["uncounted"]})
    _timing_to_hdf5({e["scope"]: e["timing"] for e in entries if "timing" in e}, group)
    if "footprint" in data:
        group.attrs["footprint"] = json.dumps(data["footprint"])
    extras = {k: data[k] for k in EXTRAS if k in data}
    if extras:
        group.attrs["extras"] = json.dumps(extras)


def _fit_int64(what: str, n: int) -> int:
    if n > _INT64_MAX:
        raise LedgerError(f"count for {what} = {n} does not fit in int64 for HDF5")
    return n


def read_hdf5(group) -> dict:
    """The dict form of a ledger written by :func:`write_hdf5`, every array checked.

    Scopes come in the file's order, and each scope's ops and bytes in the file's column
    order (the order pricing then adds them in).

    Raises
    ------
    LedgerError
        The group is not a ledger, has another format version, or is incomplete or corrupt
        (the message names the group and the dataset or attribute).
    """
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
    entries: dict[str, dict] = {}
    for i, name in enumerate(names):
        entry = entries[name] = _entry(name)
        entry["ops"] = {op: int(ops[i, j]) for j, op in enumerate(op_names) if ops[i, j]}
        entry["bytes"] = {col: int(nbytes[i, j]) for j, col in enumerate(cols)
                          if nbytes[i, j]}
        if samples[i] >= 0:
            entry["samples"] = int(samples[i])
    for name, bucket in uncounted.items():
        entries.setdefault(name, _entry(name))["uncounted"] = dict(bucket)
    for name, record in _timing_from_hdf5(group).items():
        entries.setdefault(name, _entry(name))["timing"] = record
    data = {"type": FORMAT, "version": FORMAT_VERSION, "scopes": list(entries.values())}
    if "footprint" in group.attrs:  # optional: written only when a footprint was recorded
        try:
            data["footprint"] = json.loads(group.attrs["footprint"])
            if not isinstance(data["footprint"], dict) or not all(
                    isinstance(e, dict) and {"writable", "read_only", "blocks"} <= set(e)
                    for e in data["footprint"].values()):
                raise TypeError("expected a JSON object {scope: {writable, read_only, "
                                "blocks}}")
        except (TypeError, ValueError) as exc:
            raise LedgerError(f"HDF5 ledger in {group.name!r} has a corrupt footprint "
                              f"attribute: {exc}") from None
    if "extras" in group.attrs:   # optional: activity, models, layers
        try:
            extras = json.loads(group.attrs["extras"])
            if not isinstance(extras, dict):
                raise TypeError(f"expected a JSON object, got {type(extras).__name__}")
            data.update({k: extras[k] for k in EXTRAS if k in extras})
        except (TypeError, ValueError) as exc:
            raise LedgerError(f"HDF5 ledger in {group.name!r} has a corrupt extras "
                              f"attribute (activity, models, layers): {exc}") from None
        _check_extras(group.name, data)
    return data


def _check_extras(where: str, data: Mapping) -> None:
    """The forms of the extras (their counts are checked by ``Ledger.from_dict``): a field
    of another form is one line naming it and the form expected."""
    def bad(field, value, expected):
        text = repr(value)
        raise LedgerError(f"HDF5 ledger in {where!r}: extras {field} = "
                          f"{text if len(text) <= 60 else text[:57] + '...'}: expected "
                          f"{expected}")

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)
    for key in ("activity", "models", "layers"):
        if not isinstance(data.get(key, {}), dict):
            bad(key, data[key], "a JSON object {name: {...}}")
        for name, entry in data.get(key, {}).items():
            if not isinstance(entry, dict):
                bad(f"{key}[{name!r}]", entry, "a JSON object")
    for path, info in data.get("layers", {}).items():
        if not isinstance(info.get("type"), str):
            bad(f"layers[{path!r}].type", info.get("type"), "text (the layer's class name)")
        shape = info.get("output_shape")
        if not isinstance(shape, list) or not all(is_int(d) and d >= 0 for d in shape):
            bad(f"layers[{path!r}].output_shape", shape,
                "a list of integers >= 0 (the layer's output shape)")
        if "parameters" not in info:
            bad(f"layers[{path!r}].parameters", None, "an integer >= 0")
        if not isinstance(info.get("op_class", ""), str):
            bad(f"layers[{path!r}].op_class", info["op_class"], "text")
    payloads = data.get("spike_payloads")
    if payloads is not None and not (isinstance(payloads, list) and len(payloads) == 2):
        bad("spike_payloads", payloads, "[lowest, highest], two integers")


def _entry(name: str) -> dict:
    return {"scope": name, "ops": {}, "bytes": {}, "uncounted": {}}


def _timing_to_hdf5(records: Mapping[str, Mapping], group) -> None:
    """One subgroup per step-timing record (``StepTiming.to_dict`` form), in scope order."""
    if not records:
        return
    g = group.create_group("timing")
    for i, (scope, record) in enumerate(sorted(records.items())):
        sub = g.create_group(str(i))
        meta = dict(record)
        sub.create_dataset("core_ops", data=np.asarray(meta.pop("core_ops"), np.int64),
                           compression="gzip")
        sub.attrs["scope"] = scope
        sub.attrs["meta"] = json.dumps(meta)


def _timing_from_hdf5(group) -> dict[str, dict]:
    """scope -> step-timing record in ``StepTiming.to_dict`` form, each record checked."""
    if "timing" not in group:
        return {}
    out: dict[str, dict] = {}
    try:
        for sub in group["timing"].values():
            meta = json.loads(sub.attrs["meta"])
            meta["core_ops"] = sub["core_ops"][()].tolist()
            StepTiming.from_dict(meta)    # checked here, so its error names the file
            scope = str(sub.attrs["scope"])
            if scope in out:   # two records for one scope: summed, as Ledger.add_timing does
                meta = StepTiming.from_dict(out[scope]).plus(StepTiming.from_dict(meta),
                                                             scope).to_dict()
            out[scope] = meta
    except (KeyError, OSError, ValueError, TypeError) as exc:
        raise LedgerError(f"HDF5 ledger in {group.name!r}: step-timing record is "
                          f"incomplete or corrupt: {exc}") from None
    return out


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
    """Shapes, ranks and dtypes :func:`write_hdf5` produces, or an error."""
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
        if level not in MEMORY_LEVELS or direction not in DIRECTIONS:
            raise LedgerError(f"HDF5 ledger in {where!r}: byte column {col!r}; expected "
                              "LEVEL:read|write with LEVEL one of " + ", ".join(MEMORY_LEVELS))
    if not isinstance(uncounted, dict) or not all(
            isinstance(b, dict) and all(isinstance(k, str) for k in b)
            for b in uncounted.values()):
        raise LedgerError(f"HDF5 ledger in {where!r}: attribute uncounted must be a JSON "
                          "object {scope: {op name: calls}}")
