"""Run files: one HDF5 file per simulation, written atomically, read back with checks.

Layout (format ``neuroedge.run``, version 1)::

    /                 attrs: format, format_version, created, model, profile, dataset
    /config           attr json: the model's configuration
    /profile          attr json: the profile document exactly as loaded (a snapshot, so a
                      report can be rebuilt even if the shipped profile changes later)
    /ledger           the Ledger (see sim.ledger.Ledger.to_hdf5)
    /metrics          one attr per scalar metric
    /traces/NAME      optional arrays (loss curves, spike rasters), gzip-compressed
    /versions         attrs: versions of python, neuroedge and the libraries used

The file is written under a temporary name in the same directory and renamed when
complete, so an interrupted run never leaves a half-written file at the target path.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from deploy.outputs import write_file
from hw_profiles import HardwareProfile, from_dict, load
from hw_profiles.errors import NeuroedgeError, RunFileError
from sim.ledger import Ledger

FORMAT = "neuroedge.run"
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)
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
            f.attrs["profile"] = prof.name
            f.attrs["dataset"] = dataset
            f.create_group("config").attrs["json"] = json.dumps(config, default=_json_default)
            f.create_group("profile").attrs["json"] = json.dumps(dict(prof.raw),
                                                                 default=_json_default)
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
            profile = from_dict(json.loads(f["profile"].attrs["json"]),
                                origin=f"{path.name}:/profile")
            ledger = Ledger.from_hdf5(f["ledger"])
            metrics = {k: float(v) for k, v in f["metrics"].attrs.items()}
            traces = {k: f["traces"][k][()] for k in f["traces"]}
            versions = {k: str(v) for k, v in f["versions"].attrs.items()}
            return Run(model=str(f.attrs["model"]), profile=profile,
                       dataset=str(f.attrs["dataset"]), config=config, metrics=metrics,
                       ledger=ledger, traces=traces, versions=versions,
                       created=str(f.attrs["created"]), path=str(path))
        except NeuroedgeError as exc:
            raise RunFileError(f"run file {str(path)!r} is corrupt: {exc}") from None
        except (KeyError, OSError, ValueError) as exc:
            raise RunFileError(f"run file {str(path)!r} is corrupt or incomplete: "
                               f"{type(exc).__name__}: {exc}") from None
