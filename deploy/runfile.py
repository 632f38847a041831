"""Run files: one HDF5 file per simulation, written atomically, read back with checks.

A run file holds one :class:`models.registry.RunResult`: :func:`write_run` ``(path,
result)`` stores it and :func:`read_run` ``(path)`` gives the same type back, its ``file``
(:class:`models.registry.RunFile`) saying what only the file knows (path, format version,
write time, package versions).

Layout (format ``neuroedge.run``, version 3)::

    /                 attrs: format, format_version, created, model, profile (its label),
                      dataset, preset (``quick`` / ``full``)
    /config           attr json: the model's configuration
    /facts            attr json: plain values about the run that are not settings
    /profile          attr json: the profile document exactly as loaded (a snapshot, so a
                      report can be rebuilt even if the shipped profile changes later);
                      attr label: how the profile is shown (``a100`` or
                      ``a100 (file: /abs/a100.toml)``); attr digest: ``sha256:HEX`` of the
                      document's canonical JSON (sorted keys, no spaces); attr
                      field_digests: JSON ``{dotted leaf path: first 16 hex of its sha256}``,
                      so a reader can name the field an edit changed
    /ledger           the Ledger (see sim.ledger.Ledger.to_hdf5)
    /metrics          one attr per scalar metric
    /                 attr neurobench (JSON): NeuroBench's metrics of the ledger
                      (``sim.neurobench.metrics``; nan written as null), absent in files
                      written before it; ``RunResult.neurobench`` recomputes them from the
                      ledger
    /metric_units     attr json: ``{metric: unit}`` (the card's units); attr main_metric:
                      the metric a report's headline leads with ("" when none). Optional:
                      files written before units existed have no such group, and read every
                      unit as ``"?"`` (``RunResult.unit``) with no main metric
    /traces/NAME      typed traces (``sim.traces.Trace``), gzip-compressed; attrs kind,
                      unit, columns (JSON list, a table's column names)
    /trained          only when the run kept its trained state (``models.registry.Trained``):
                      attr meta (JSON), datasets ``arrays/NAME`` (numeric), so ``neuroedge
                      export --from RUN.h5`` rebuilds the export without training
    /versions         attrs: versions of python, neuroedge and the libraries used

The file is written under a temporary name in the same directory and renamed when
complete, so an interrupted run never leaves a half-written file at the target path.

Older versions are still read (``RunResult.file.format_version`` says which was read).
Version 1 has no label and no digest: its label is the profile's name and its snapshot
cannot be verified. Versions 1 and 2 have no preset, facts or trained state (read as
``None``, ``{}``, ``None``: those versions ran quick and full presets alike and recorded
neither, so the preset reads as not recorded) and store traces as bare arrays;
:func:`legacy_trace` gives each its kind once, here, by the naming rule those versions'
report drew with (the only place a trace's name decides how it is drawn). The reader
checks the snapshot's digest, the ledger arrays' shapes and dtypes, every trace's kind and
shape and every trained array's dtype; every problem is one
:class:`~hw_profiles.errors.RunFileError` line.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import io
import json
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from deploy.errors import RunFileError
from deploy.hdf5_checks import check_structure
from deploy.outputs import check_output, write_bytes
from hw_profiles import HardwareProfile, from_dict
from hw_profiles.errors import NeuroedgeError, not_a_file
from models.registry import RunFile, RunResult, Trained
from sim import neurobench
from sim.ledger import Ledger
from sim.traces import TRACE_KINDS, Trace

FORMAT = "neuroedge.run"
FORMAT_VERSION = 3
SUPPORTED_VERSIONS = (1, 2, 3)   # 1: no profile label or digest (read unverified);
                                 # 1-2: bare trace arrays, no preset/facts/trained state
PRESETS = ("quick", "full", "own")   # own: deploy.sweep_own.PRESET (a model of one's own)
_VERSION_PACKAGES = ("neuroedge", "numpy", "torch", "h5py", "numba", "brian2", "scipy")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _VERSION_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _json_default(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (np.ndarray, tuple)):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


# -- profile snapshot: canonical JSON, digest, per-field digests -----------------------------
def canonical_json(doc) -> str:
    """The one spelling of a document that its digest is taken over: sorted keys, no spaces."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False, default=_json_default)


def document_digest(doc) -> str:
    """``"sha256:HEX"`` of the document's canonical JSON."""
    return "sha256:" + hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


def field_digests(doc) -> dict[str, str]:
    """Dotted path of every leaf (``energy_pj.mac_fp32.value``, ``memory.0.name``) -> the
    first 16 hex digits of the sha256 of its canonical JSON. Stored beside the digest so a
    reader can say which field an edit changed; 64 bits per leaf is plenty to tell edits
    apart (this is a check against edits, not a signature)."""
    out: dict[str, str] = {}

    def walk(obj, prefix):
        if isinstance(obj, dict) and obj:
            for k in obj:
                walk(obj[k], f"{prefix}.{k}" if prefix else str(k))
        elif isinstance(obj, list) and obj:
            for i, v in enumerate(obj):
                walk(v, f"{prefix}.{i}" if prefix else str(i))
        else:
            out[prefix] = hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:16]
    walk(doc, "")
    return out


def _document(prof: HardwareProfile) -> dict:
    """The profile's document as a snapshot stores it (plain JSON values)."""
    return json.loads(json.dumps(dict(prof.raw), default=_json_default))


def _snapshot(prof: HardwareProfile) -> tuple[str, dict[str, str]]:
    """The profile's document as stored JSON, and the /profile attrs that go with it.

    Refuses a profile whose document does not build the same profile (one made or changed in
    memory, e.g. with ``dataclasses.replace``): its snapshot would price differently.
    """
    doc = _document(prof)
    try:
        rebuilt = from_dict(doc, origin=f"profile {prof.label!r}", path=prof.path,
                            label=prof.label)
    except NeuroedgeError as exc:
        raise RunFileError(f"cannot snapshot profile {prof.label!r}: its document is not a "
                           f"valid profile ({exc}); load profiles with hw_profiles.load or "
                           "from_dict") from None
    if rebuilt != prof:
        raise RunFileError(f"cannot snapshot profile {prof.label!r}: its numbers differ from "
                           "its document (changed in memory?); build the changed profile with "
                           "hw_profiles.from_dict so the run file records what was priced")
    return json.dumps(doc), {"label": prof.label, "digest": document_digest(doc),
                             "field_digests": json.dumps(field_digests(doc))}


def _read_profile(group, root_label, path: Path, version: int) -> HardwareProfile:
    """Check the snapshot against its digest, then build the profile (version 2 layout)."""
    where = f"run file {str(path)!r}"
    doc = _json_attr(group, "json", where, dict, "a JSON object (the profile document as "
                     "loaded)", finite=True)
    origin = f"{path.name}:/profile"
    if version == 1:   # no label, no digest: the name, unverified
        return from_dict(doc, origin=origin)
    label, digest = _text_attr(group, "label", where), _text_attr(group, "digest", where)
    if document_digest(doc) != digest:
        raise RunFileError(_digest_mismatch(path, doc, group.attrs.get("field_digests")))
    profile = from_dict(doc, origin=origin, label=label)
    name = profile.name
    if not (label == name or (label.startswith(f"{name} (file: ") and label.endswith(")"))):
        raise RunFileError(f"run file {str(path)!r}: profile label {label!r} does not name the "
                           f"snapshot's profile {name!r} (expected {name!r} or "
                           f"'{name} (file: PATH)')")
    if root_label != label:
        raise RunFileError(f"run file {str(path)!r}: root attribute profile = {root_label!r} "
                           f"differs from the snapshot's label {label!r}")
    return profile


def stored_profile(run: RunResult) -> HardwareProfile:
    """The run's profile snapshot, to price the run on it.

    A user's file is labelled ``NAME (file: PATH)``. Priced under that label, the snapshot
    would read as the file, which may have changed or gone since the run; it is labelled
    ``NAME (snapshot stored in the run; file: PATH when simulated)`` instead. A shipped
    profile keeps its name. The file at PATH is never opened: the run file says which
    file it names, so reading it would let a run file make neuroedge open any file (a
    label ``a100 (file: /etc/passwd)``). Whoever wants the file as it is now passes
    ``--profile PATH``.
    """
    prof = run.profile
    prefix = f"{prof.name} (file: "
    if not prof.label.startswith(prefix):
        return prof
    path = prof.label[len(prefix):-1]   # _read_profile checked the label's form
    return dataclasses.replace(prof, label=f"{prof.name} (snapshot stored in the run; "
                                           f"file: {path} when simulated)")


def _digest_mismatch(path: Path, doc, stored_fields) -> str:
    """Name the first field whose digest differs, when the stored field digests tell it."""
    head = f"run file {str(path)!r}: "
    tail = ("; the snapshot was edited after the run. Rerun the simulation, or price the "
            "run on another profile with --profile")
    try:
        before = json.loads(stored_fields)
        if not isinstance(before, dict):
            raise TypeError
    except (TypeError, ValueError):
        return head + "profile snapshot digest mismatch" + tail
    now = field_digests(doc)
    changed = [k for k in now if k in before and before[k] != now[k]]
    added = [k for k in now if k not in before]
    removed = [k for k in before if k not in now]
    if changed:
        try:
            value = f" = {_leaf(doc, changed[0])!r}"
        except (KeyError, IndexError, ValueError, TypeError):  # a key holding a "."
            value = ""
        return (head + f"profile snapshot field {changed[0]}{value} differs from the "
                f"digest written with the run ({len(changed) + len(added) + len(removed)} "
                "field(s) differ)" + tail)
    if added or removed:
        what = (f"field {added[0] or '(the whole document)'} was added" if added else
                f"field {removed[0] or '(the whole document)'} was removed")
        return head + f"profile snapshot {what} after the digest was written" + tail
    return head + "profile snapshot digest mismatch" + tail


def _leaf(doc, dotted: str):
    obj = doc
    for part in dotted.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj
# -- end profile snapshot ---------------------------------------------------------------------


def _array_name(name, what: str) -> str:
    """An HDF5 path below the group: non-empty, relative, no empty parts (``param/fc.w``)."""
    name = str(name)
    if not name or any(part in ("", ".", "..") for part in name.split("/")):
        raise RunFileError(f"{what} name {name!r}: names are non-empty, relative, with no "
                           "empty, '.' or '..' parts between '/' (e.g. 'param/fc1.weight')")
    return name


def _clean_traces(traces) -> dict[str, Trace]:
    out = {}
    for name, trace in dict(traces or {}).items():
        _array_name(name, "trace")
        if not isinstance(trace, Trace):
            raise RunFileError(f"trace {name!r} is a {type(trace).__name__}; wrap it in "
                               "sim.traces.Trace(kind, data, unit) with kind one of "
                               f"{', '.join(TRACE_KINDS)}")
        if trace.data.dtype.kind not in _TRACE_DTYPES:
            raise RunFileError(f"trace {name!r} has dtype {trace.data.dtype}; traces are "
                               "numbers (a table may hold text)")
        out[str(name)] = trace
    return out


def _clean_trained(trained):
    if trained is None:
        return None
    arrays, meta = getattr(trained, "arrays", None), getattr(trained, "meta", None)
    if not isinstance(arrays, dict) or not isinstance(meta, dict):
        raise RunFileError(f"trained state is a {type(trained).__name__}; expected a "
                           "models.registry.Trained(arrays, meta)")
    for name, arr in arrays.items():
        _array_name(name, "trained array")
        if np.asarray(arr).dtype.kind not in _NUMERIC:
            raise RunFileError(f"trained array {name!r} has dtype {np.asarray(arr).dtype}; "
                               "trained arrays are numeric (put text in Trained.meta)")
    try:
        meta_json = json.dumps(meta, default=_json_default, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise RunFileError(f"trained meta is not JSON: {exc}") from None
    return arrays, meta_json


_NUMERIC = "biuf"          # bool, signed, unsigned, float
_TRACE_DTYPES = _NUMERIC + "US"


def write_run(path: str | os.PathLike, result: RunResult, *, force: bool = False,
              inputs=(), parents: bool = False) -> Path:
    """Write ``result`` as a run file atomically (temporary name in the same directory, then
    rename); :func:`read_run` gives it back.

    Parameters
    ----------
    path : the run file to write (``.h5``)
    result : the run (``models.runner.run``, or a record read back); its ``trained`` state,
        when not ``None``, goes to ``/trained`` so the file can be exported from. Its
        ``file``, if any, is not copied: the new file gets its own write time and the
        package versions of this process.
    force : replace an existing ``path``
    inputs : the command's input files, which ``path`` may not be (:mod:`deploy.outputs`)
    parents : create the folders ``path`` goes in (removed again if the write fails)

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    RunFileError
        ``result`` is not a RunResult, its preset is not one a run file records (None:
        read from a version-1/2 file), the directory does not exist, a metric is not a
        scalar, a trace is not a Trace, a unit is not text, a trained array is not numeric,
        or facts / meta are not JSON.
    OutputError
        ``path`` is a directory, an existing file without ``force``, or an input.
    """
    path = Path(path)
    if not isinstance(result, RunResult):
        raise RunFileError(f"write_run({str(path)!r}, ...): the run is a "
                           f"{type(result).__name__}; expected a models.registry.RunResult "
                           "(models.runner.run returns one)")
    if result.preset not in PRESETS:
        # read_run refuses a version-3 file without one of these; a run read from a
        # version-1/2 file has None (not recorded), and no preset can be made up for it
        raise RunFileError(f"write_run({str(path)!r}, ...): the run's preset is "
                           f"{result.preset!r}; a run file records one of "
                           f"{', '.join(PRESETS)} (a run read from a version-1/2 file has "
                           "none: set result.preset to the one it ran)")
    profile_json, profile_attrs = _snapshot(result.profile)
    if not parents and not path.parent.exists():
        raise RunFileError(f"cannot write run file {str(path)!r}: directory "
                           f"{str(path.parent)!r} does not exist")
    clean_metrics = {}
    for k, v in result.metrics.items():
        try:
            clean_metrics[k] = float(v)
        except (TypeError, ValueError):
            raise RunFileError(f"metric {k!r} = {v!r}: metrics must be scalars") from None
    clean_traces = _clean_traces(result.traces)
    kept = _clean_trained(result.trained)
    units = {str(k): v for k, v in dict(result.units or {}).items()}
    bad = [k for k, v in units.items() if not isinstance(v, str)]
    if bad:
        raise RunFileError(f"unit of metric {bad[0]!r} = {units[bad[0]]!r}: units are text "
                           "(e.g. '1', 'nats', 'B')")
    try:
        facts_json = json.dumps(dict(result.facts or {}), default=_json_default)
    except (TypeError, ValueError) as exc:
        raise RunFileError(f"facts are not JSON: {exc}") from None
    # -- write path: the HDF5 file is built in memory and its bytes written by
    # deploy.outputs (temporary sibling, rename; no overwrite without force). HDF5 never
    # touches the disk, so a full disk is one OSError on a plain write, not an h5py write
    # failure (after which closing the file and collecting its datasets could segfault).
    check_output(path, force=force, inputs=inputs)   # before any work: a bad path fails fast
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["created"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        f.attrs["model"] = result.model
        f.attrs["profile"] = result.profile.label
        f.attrs["dataset"] = result.dataset
        f.attrs["preset"] = str(result.preset)
        f.attrs["neurobench"] = json.dumps(_nan_to_null(neurobench.metrics(result.ledger)))
        f.create_group("config").attrs["json"] = json.dumps(result.config,
                                                            default=_json_default)
        f.create_group("facts").attrs["json"] = facts_json
        g = f.create_group("profile")
        g.attrs["json"] = profile_json
        for k, v in profile_attrs.items():
            g.attrs[k] = v
        result.ledger.to_hdf5(f.create_group("ledger"))
        g = f.create_group("metrics")
        for k, v in clean_metrics.items():
            g.attrs[k] = v
        g = f.create_group("metric_units")
        g.attrs["json"] = json.dumps(units)
        g.attrs["main_metric"] = str(result.main_metric or "")
        g = f.create_group("traces", track_order=True)   # the report shows them in order
        for k, tr in clean_traces.items():
            data = tr.data
            if data.dtype.kind == "U":   # text cells of a table: HDF5 variable-length UTF-8
                data = data.astype(object)
                ds = g.create_dataset(k, data=data, dtype=h5py.string_dtype())
            else:
                ds = g.create_dataset(k, data=data, compression="gzip")
            ds.attrs["kind"] = tr.kind
            ds.attrs["unit"] = tr.unit
            ds.attrs["columns"] = json.dumps(list(tr.columns))
        if kept is not None:
            arrays, meta_json = kept
            g = f.create_group("trained")
            g.attrs["meta"] = meta_json
            a = g.create_group("arrays", track_order=True)
            for k, arr in arrays.items():
                arr = np.asarray(arr)   # HDF5 compresses arrays, not scalars (0-d)
                a.create_dataset(k, data=arr, compression="gzip" if arr.ndim else None)
        g = f.create_group("versions")
        for k, v in package_versions().items():
            g.attrs[k] = v
        f.attrs["complete"] = True  # last write: a reader sees it only in a whole file
    write_bytes(path, buffer.getvalue(), force=force, inputs=inputs, parents=parents)
    # -- end of write path
    return path


# -- reading ----------------------------------------------------------------------------------
LEGACY_ROUTE_COLUMNS = ("src_core", "dst_core", "hops", "neurons")
"""The columns of a version 1-2 ``routes`` array (snn_cuba's placement routes)."""


def legacy_trace(name: str, arr: np.ndarray) -> Trace:
    """The kind of a bare trace array of a version 1-2 file, by the rule those versions'
    report drew with: a name ending in ``raster`` with shape (k, 2) is a raster (time in s,
    neuron); ``core_*`` 1-D is per core (a fraction of the core's limit); ``routes`` (k, 4)
    is a table of routes; any other 1-D array a curve; (N, H, W) pictures; any other 2-D
    array a table with numbered columns. A scalar becomes a one-point curve and more than
    three dimensions pictures of the last two. Used by :func:`read_run` only, once per
    trace: nothing after the reader looks at a trace's name."""
    arr = np.asarray(arr)
    if arr.ndim == 2 and arr.shape[1] == 2 and name.endswith("raster"):
        return Trace("raster", arr, "s")
    if arr.ndim == 1 and name.startswith("core_"):
        return Trace("per_core", arr, "fraction of the core's limit")
    if arr.ndim == 2 and name == "routes" and arr.shape[1] == len(LEGACY_ROUTE_COLUMNS):
        return Trace("table", arr, "", LEGACY_ROUTE_COLUMNS)
    if arr.ndim <= 1:
        return Trace("curve", arr.reshape(-1))
    if arr.ndim == 2:
        return Trace("table", arr, "", tuple(str(i) for i in range(arr.shape[1])))
    return Trace("images", arr.reshape(-1, *arr.shape[-2:]))


# -- read checks: every field is of the type write_run writes, or one line naming it ------------
def _shown(value) -> str:
    """A stored value as a message shows it: its repr, at most 60 characters."""
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _type(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype} array of shape {value.shape}"
    return type(value).__name__


def _field(obj, key: str) -> str:
    return f"root attribute {key}" if obj.name == "/" else f"{obj.name} attribute {key}"


def _group(f, name: str, where: str, holds: str):
    """``f[name]``, which must be a group (holding ``holds``)."""
    if name not in f:
        raise RunFileError(f"{where} is incomplete or corrupt: it has no /{name}; expected a "
                           f"group holding {holds}")
    obj = f[name]
    if not isinstance(obj, h5py.Group):
        raise RunFileError(f"{where}: /{name} is a dataset; expected a group holding {holds}")
    return obj


def _text_attr(obj, key: str, where: str, default: str | None = None) -> str:
    """A text attribute (h5py reads variable-length text as str, fixed-length as bytes)."""
    if key not in obj.attrs:
        if default is not None:
            return default
        raise RunFileError(f"{where} is incomplete or corrupt: {_field(obj, key)} is missing; "
                           "expected text")
    value = obj.attrs[key]
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    if not isinstance(value, str):
        raise RunFileError(f"{where}: {_field(obj, key)} = {_shown(value)} ({_type(value)}); "
                           "expected text")
    return str(value)


class _NotFinite(ValueError):
    pass


def _no_constant(name):
    raise _NotFinite(name)


def _json_name(value) -> str:
    for kind, name in ((dict, "a JSON object"), (list, "a JSON array"), (str, "a JSON string"),
                       (bool, "JSON true/false"), ((int, float), "a JSON number")):
        if isinstance(value, kind):
            return name
    return "JSON null"


def _json_attr(obj, key: str, where: str, kind: type, what: str, *, default=None,
               finite: bool = False):
    """A JSON text attribute holding a ``kind`` (``what`` says which, for the message);
    ``finite``: NaN and Infinity are refused (a profile's numbers)."""
    field = _field(obj, key)
    if key not in obj.attrs and default is not None:
        return default
    if key not in obj.attrs:
        raise RunFileError(f"{where} is incomplete or corrupt: {field} is missing; expected "
                           f"JSON text of {what}")
    text = obj.attrs[key]
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    if not isinstance(text, str):
        raise RunFileError(f"{where}: {field} = {_shown(text)} ({_type(text)}); expected "
                           f"JSON text of {what}")
    try:
        value = json.loads(text, parse_constant=_no_constant if finite else None)
    except _NotFinite as exc:
        raise RunFileError(f"{where}: {field} holds {exc}; expected {what} with finite "
                           "numbers") from None
    except ValueError as exc:
        raise RunFileError(f"{where}: {field} is not valid JSON ({getattr(exc, 'msg', exc)} "
                           f"at character {getattr(exc, 'pos', '?')}); expected {what}") \
            from None
    except RecursionError:
        raise RunFileError(f"{where}: {field} is JSON nested too deep to read; expected "
                           f"{what}") from None
    if not isinstance(value, kind):
        raise RunFileError(f"{where}: {field} is {_json_name(value)}; expected {what}")
    return value


def _read_metrics(f, where: str) -> dict[str, float]:
    out = {}
    for key, value in _group(f, "metrics", where, "one attribute per metric").attrs.items():
        if isinstance(value, np.ndarray) and value.shape == ():
            value = value[()]
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)):
            raise RunFileError(f"{where}: /metrics attribute {key} = {_shown(value)} "
                               f"({_type(value)}); expected a real number (a float or an "
                               "integer, one per metric)")
        out[key] = float(value)
    return out


def _datasets(group) -> dict[str, Any]:
    """Every dataset below ``group`` by its path relative to it, in stored order (creation
    order where the group tracks it); a nested name (``param/fc1.weight``) keeps its slash."""
    out = {}
    for key in group:            # iteration follows the group's order (visititems does not);
        # recursive: check_structure has bounded the depth (hdf5_checks.MAX_DEPTH)
        obj = group[key]
        if isinstance(obj, h5py.Dataset):
            out[key] = obj
        else:
            out.update({f"{key}/{k}": v for k, v in _datasets(obj).items()})
    return out


def _read_traces(group, where: str, version: int) -> dict[str, Trace]:
    """Every trace, its kind, unit and columns checked; its dtype and shape by ``Trace``."""
    out = {}
    for name, ds in _datasets(group).items():
        text = h5py.check_string_dtype(ds.dtype) is not None
        data = np.asarray(ds.asstr()[()], dtype=str) if text else np.asarray(ds[()])
        try:
            if version < 3:
                out[name] = legacy_trace(name, data)
                continue
            kind = ds.attrs.get("kind")
            kind = kind.decode() if isinstance(kind, bytes) else kind
            if kind not in TRACE_KINDS:
                raise RunFileError(f"{where}: trace {name!r} has kind {_shown(kind)}; kinds "
                                   f"are {', '.join(TRACE_KINDS)}")
            columns = _json_attr(ds, "columns", where, list, "a JSON array of column names",
                                 default=[])
            if not all(isinstance(c, str) for c in columns):
                raise RunFileError(f"{where}: {_field(ds, 'columns')} = {_shown(columns)}; "
                                   "expected a JSON array of column names (text)")
            out[name] = Trace(kind, data, _text_attr(ds, "unit", where, default=""),
                              tuple(columns))
        except NeuroedgeError as exc:
            if isinstance(exc, RunFileError):
                raise
            raise RunFileError(f"{where}: trace {name!r}: {exc}") from None
    return out


def _read_trained(f, where: str):
    if "trained" not in f:
        return None
    g = f["trained"]
    meta = json.loads(g.attrs["meta"])
    if not isinstance(meta, dict):
        raise RunFileError(f"{where}: /trained attribute meta is not a JSON object")
    arrays = {}
    for name, ds in _datasets(g["arrays"]).items():
        if ds.dtype.kind not in _NUMERIC:
            raise RunFileError(f"{where}: trained array {name!r} has dtype {ds.dtype}; "
                               "trained arrays are numeric")
        arrays[name] = np.asarray(ds[()])
    return Trained(arrays, meta)


def _read_units(f, where: str) -> tuple[dict[str, str], str | None]:
    """``/metric_units``: metric -> unit and the main metric; ``({}, None)`` in a file
    written before units were stored (any format version)."""
    if "metric_units" not in f:
        return {}, None
    g = f["metric_units"]
    units = json.loads(g.attrs["json"])
    if not isinstance(units, dict) or not all(isinstance(v, str) for v in units.values()):
        raise RunFileError(f"{where}: /metric_units attribute json is not an object of "
                           "unit strings")
    return units, _text_attr(g, "main_metric", where, default="") or None


def _check_structure(f, path: Path) -> None:
    """Refuse what :func:`write_run` never writes and a hostile file could use to make us
    read another file or allocate without bound (:func:`deploy.hdf5_checks.check_structure`)."""
    check_structure(f, f"run file {str(path)!r}", "run files", path.stat().st_size,
                    RunFileError)


def _check_header(f, path: Path) -> int:
    """The root attributes that say what the file is: format, version, complete."""
    fmt = f.attrs.get("format")
    if fmt != FORMAT:
        raise RunFileError(f"{str(path)!r} is an HDF5 file but not a neuroedge run file "
                           f"(format attribute {fmt!r}, expected {FORMAT!r})")
    version = f.attrs.get("format_version")
    if isinstance(version, (bool, np.bool_)) or not isinstance(version, (int, np.integer)):
        # np.True_ == 1 and 3.0 == 3: a bool read as version 1 skipped the digest check
        raise RunFileError(f"run file {str(path)!r} has format version {_shown(version)} "
                           f"({_type(version)}); expected an integer, one of "
                           f"{SUPPORTED_VERSIONS}")
    version = int(version)
    if version not in SUPPORTED_VERSIONS:
        raise RunFileError(f"run file {str(path)!r} has format version {version!r}; this "
                           f"neuroedge reads versions {SUPPORTED_VERSIONS}")
    complete = f.attrs.get("complete", False)
    if not isinstance(complete, (bool, np.bool_)):   # the text "False" is truthy
        raise RunFileError(f"run file {str(path)!r} has complete = {_shown(complete)} "
                           f"({_type(complete)}); expected True (a bool, the last attribute "
                           "the writer sets)")
    if not complete:
        raise RunFileError(f"run file {str(path)!r} is incomplete (the write never finished)")
    return version


def read_run(path: str | os.PathLike) -> RunResult:
    """Read and check a run file (any supported version; see the module doc).

    Returns
    -------
    RunResult
        The run as :func:`write_run` was given it, with ``file`` (a
        :class:`models.registry.RunFile`: path, format version read, write time, package
        versions). A file of version 1-2 reads with preset ``None`` (not recorded), no
        facts and no trained state; a file without ``/metric_units`` with no units and no
        main metric.

    Raises
    ------
    RunFileError
        Missing, truncated, corrupt or foreign file, an unsupported format version, a
        trace of an unknown kind or a trained array that is not numeric.
    """
    path = Path(path)
    if not path.is_file():
        raise RunFileError(f"run file {str(path)!r} {not_a_file(path)}")
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise RunFileError(f"run file {str(path)!r} is not a readable HDF5 file (truncated or "
                           f"corrupt?): {exc}") from None
    with f:
        try:
            _check_structure(f, path)
            version = _check_header(f, path)
        except (KeyError, OSError, ValueError, TypeError, RuntimeError) as exc:
            # RuntimeError: HDF5's own structures damaged ("bad local heap signature")
            raise RunFileError(_one_line(f"run file {str(path)!r} is corrupt: "
                                         f"{type(exc).__name__}: {exc}")) from None
        where = f"run file {str(path)!r}"
        try:
            config = _json_attr(_group(f, "config", where, "the model's configuration"),
                                "json", where, dict, "a JSON object (the model's "
                                "configuration, {field: value})")
            profile = _read_profile(_group(f, "profile", where, "the profile snapshot"),
                                    _text_attr(f, "profile", where), path, version)
            ledger = Ledger.from_hdf5(_group(f, "ledger", where, "the ledger"))
            metrics = _read_metrics(f, where)
            traces = _read_traces(_group(f, "traces", where, "the traces"), where, version)
            versions = {k: str(v) for k, v in
                        _group(f, "versions", where, "package versions").attrs.items()}
            if version >= 3:
                preset = _text_attr(f, "preset", where)
                if preset not in PRESETS:
                    raise RunFileError(f"{where}: root attribute preset = {_shown(preset)}; "
                                       f"expected one of {', '.join(PRESETS)}")
                facts = _json_attr(_group(f, "facts", where, "the run's facts"), "json",
                                   where, dict, "a JSON object ({fact: value})")
                trained = _read_trained(f, where)
            else:   # those versions wrote --full runs too, without saying which ran
                preset, facts, trained = None, {}, None
            units, main_metric = _read_units(f, where)
            file = RunFile(path=str(path), format_version=version,
                           created=_text_attr(f, "created", where), versions=versions)
            return RunResult(model=_text_attr(f, "model", where), profile=profile,
                             dataset=_text_attr(f, "dataset", where), config=config,
                             metrics=metrics, ledger=ledger, traces=traces, preset=preset,
                             facts=facts, trained=trained, units=units,
                             main_metric=main_metric, file=file)
        except RunFileError as exc:
            raise RunFileError(_one_line(str(exc))) from None
        except NeuroedgeError as exc:
            raise RunFileError(_one_line(f"{where} is corrupt: {exc}")) from None
        except (KeyError, OSError, ValueError, TypeError, IndexError, AttributeError,
                RuntimeError) as exc:
            # a foreign or hand-edited file can fail anywhere h5py/json/numpy look at it
            raise RunFileError(_one_line(f"{where} is corrupt or incomplete: "
                                         f"{type(exc).__name__}: {exc}")) from None


def _nan_to_null(value):
    """``value`` with every nan float as None, so its JSON is standard (``null``)."""
    if isinstance(value, dict):
        return {k: _nan_to_null(v) for k, v in value.items()}
    return None if isinstance(value, float) and value != value else value


def _one_line(text: str) -> str:
    return " ".join(text.split())
