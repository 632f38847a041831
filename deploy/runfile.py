"""Run files: one HDF5 file per simulation, written atomically, read back with checks.

Layout (format ``neuroedge.run``, version 2)::

    /                 attrs: format, format_version, created, model, profile (its label),
                      dataset
    /config           attr json: the model's configuration
    /profile          attr json: the profile document exactly as loaded (a snapshot, so a
                      report can be rebuilt even if the shipped profile changes later);
                      attr label: how the profile is shown (``a100`` or
                      ``a100 (file: /abs/a100.toml)``); attr digest: ``sha256:HEX`` of the
                      document's canonical JSON (sorted keys, no spaces); attr
                      field_digests: JSON ``{dotted leaf path: first 16 hex of its sha256}``,
                      so a reader can name the field an edit changed
    /ledger           the Ledger (see sim.ledger.Ledger.to_hdf5)
    /metrics          one attr per scalar metric
    /traces/NAME      optional arrays (loss curves, spike rasters), gzip-compressed
    /versions         attrs: versions of python, neuroedge and the libraries used

The file is written under a temporary name in the same directory and renamed when
complete, so an interrupted run never leaves a half-written file at the target path.

Version 1 (no label, no digest) is still read: its label is the profile's name and its
snapshot cannot be verified (``Run.format_version`` says which was read). The reader checks
the snapshot's digest and the ledger arrays' shapes and dtypes; every problem is one
:class:`~hw_profiles.errors.RunFileError` line.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from deploy.errors import RunFileError
from deploy.outputs import write_file
from hw_profiles import HardwareProfile, from_dict, load
from hw_profiles.errors import NeuroedgeError
from sim.ledger import Ledger

FORMAT = "neuroedge.run"
FORMAT_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)   # 1: no profile label or digest (read unverified)
_VERSION_PACKAGES = ("neuroedge", "numpy", "torch", "h5py", "numba", "brian2", "scipy")


@dataclass
class Run:
    """A run file's content."""

    model: str
    profile: HardwareProfile
    dataset: str
    config: dict[str, Any]
    metrics: dict[str, float]
    ledger: Ledger
    traces: dict[str, np.ndarray] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    created: str = ""
    path: str = ""
    format_version: int = FORMAT_VERSION


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


def _snapshot(prof: HardwareProfile) -> tuple[str, dict[str, str]]:
    """The profile's document as stored JSON, and the /profile attrs that go with it.

    Refuses a profile whose document does not build the same profile (one made or changed in
    memory, e.g. with ``dataclasses.replace``): its snapshot would price differently.
    """
    doc = json.loads(json.dumps(dict(prof.raw), default=_json_default))
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
    doc = json.loads(group.attrs["json"])
    origin = f"{path.name}:/profile"
    if version == 1:   # no label, no digest: the name, unverified
        return from_dict(doc, origin=origin)
    label, digest = str(group.attrs["label"]), str(group.attrs["digest"])
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
        what = f"field {added[0]} was added" if added else f"field {removed[0]} was removed"
        return head + f"profile snapshot {what} after the digest was written" + tail
    return head + "profile snapshot digest mismatch" + tail


def _leaf(doc, dotted: str):
    obj = doc
    for part in dotted.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj
# -- end profile snapshot ---------------------------------------------------------------------


def write_run(path: str | os.PathLike, *, model: str, profile, dataset: str,
              config: dict, metrics: dict, ledger: Ledger,
              traces: dict[str, np.ndarray] | None = None, force: bool = False,
              inputs=()) -> Path:
    """Write a run file atomically (temporary name in the same directory, then rename).

    An existing ``path`` is replaced only with ``force``; ``path`` may not be one of the
    command's ``inputs`` (the rules of :mod:`deploy.outputs`).

    Raises
    ------
    RunFileError
        The directory does not exist, or a metric is not a finite-or-nan scalar.
    OutputError
        ``path`` is a directory, an existing file without ``force``, or an input.
    """
    path = Path(path)
    prof = load(profile)
    profile_json, profile_attrs = _snapshot(prof)
    if not path.parent.exists():
        raise RunFileError(f"cannot write run file {str(path)!r}: directory "
                           f"{str(path.parent)!r} does not exist")
    clean_metrics = {}
    for k, v in metrics.items():
        try:
            clean_metrics[k] = float(v)
        except (TypeError, ValueError):
            raise RunFileError(f"metric {k!r} = {v!r}: metrics must be scalars") from None
    # -- write path: deploy.outputs (temporary sibling, rename; no overwrite without force)
    with write_file(path, force=force, inputs=inputs) as tmp:  # noqa: SIM117 (small diff)
        with h5py.File(tmp, "w") as f:
            f.attrs["format"] = FORMAT
            f.attrs["format_version"] = FORMAT_VERSION
            f.attrs["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            f.attrs["model"] = model
            f.attrs["profile"] = prof.label
            f.attrs["dataset"] = dataset
            f.create_group("config").attrs["json"] = json.dumps(config, default=_json_default)
            g = f.create_group("profile")
            g.attrs["json"] = profile_json
            for k, v in profile_attrs.items():
                g.attrs[k] = v
            ledger.to_hdf5(f.create_group("ledger"))
            g = f.create_group("metrics")
            for k, v in clean_metrics.items():
                g.attrs[k] = v
            g = f.create_group("traces")
            for k, arr in (traces or {}).items():
                g.create_dataset(k, data=np.asarray(arr), compression="gzip")
            g = f.create_group("versions")
            for k, v in package_versions().items():
                g.attrs[k] = v
            f.attrs["complete"] = True  # last write: a reader sees it only in a whole file
    # -- end of write path
    return path


def write_result(path, result, *, force: bool = False, inputs=()) -> Path:
    """Write a :class:`models.registry.RunResult`-like object (duck-typed to keep layering)."""
    return write_run(path, model=result.model, profile=result.profile, dataset=result.dataset,
                     config=result.config, metrics=result.metrics, ledger=result.ledger,
                     traces=result.traces, force=force, inputs=inputs)


def read_run(path: str | os.PathLike) -> Run:
    """Read and check a run file.

    Raises
    ------
    RunFileError
        Missing, truncated, corrupt or foreign file, or an unsupported format version.
    """
    path = Path(path)
    if not path.is_file():
        raise RunFileError(f"run file {str(path)!r} does not exist")
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise RunFileError(f"run file {str(path)!r} is not a readable HDF5 file (truncated or "
                           f"corrupt?): {exc}") from None
    with f:
        fmt = f.attrs.get("format")
        if fmt != FORMAT:
            raise RunFileError(f"{str(path)!r} is an HDF5 file but not a neuroedge run file "
                               f"(format attribute {fmt!r}, expected {FORMAT!r})")
        version = f.attrs.get("format_version")
        version = int(version) if isinstance(version, (int, np.integer)) else version
        if version not in SUPPORTED_VERSIONS:
            raise RunFileError(f"run file {str(path)!r} has format version {version!r}; this "
                               f"neuroedge reads versions {SUPPORTED_VERSIONS}")
        if not f.attrs.get("complete", False):
            raise RunFileError(f"run file {str(path)!r} is incomplete (the write never "
                               "finished)")
        try:
            config = json.loads(f["config"].attrs["json"])
            profile = _read_profile(f["profile"], str(f.attrs["profile"]), path, version)
            ledger = Ledger.from_hdf5(f["ledger"])
            metrics = {k: float(v) for k, v in f["metrics"].attrs.items()}
            traces = {k: f["traces"][k][()] for k in f["traces"]}
            versions = {k: str(v) for k, v in f["versions"].attrs.items()}
            return Run(model=str(f.attrs["model"]), profile=profile,
                       dataset=str(f.attrs["dataset"]), config=config, metrics=metrics,
                       ledger=ledger, traces=traces, versions=versions,
                       created=str(f.attrs["created"]), path=str(path),
                       format_version=version)
        except RunFileError:
            raise
        except NeuroedgeError as exc:
            raise RunFileError(_one_line(f"run file {str(path)!r} is corrupt: {exc}")) from None
        except (KeyError, OSError, ValueError, TypeError, IndexError, AttributeError) as exc:
            # a foreign or hand-edited file can fail anywhere h5py/json/numpy look at it
            raise RunFileError(_one_line(f"run file {str(path)!r} is corrupt or incomplete: "
                                         f"{type(exc).__name__}: {exc}")) from None


def _one_line(text: str) -> str:
    return " ".join(text.split())
