"""Exporting trained models to edge targets: the one place that decides where files go.

A method that can be exported lists its targets in ``ModelCard.exports`` and gives the card
an ``export(target, out, *, seed, quick, progress, force) -> Path`` callable. That callable
trains (or loads) the model, writes the artefact through :func:`atomic_output` and returns
the path. The target-specific writers live beside this module (``onnx_export.py``,
``nir_export.py``, ``c_export/``).

:func:`atomic_output` is why a failed export leaves nothing half-written and why an export
never destroys anything: it is :mod:`deploy.outputs` (temporary sibling, then rename; an
existing file only with ``force``; a directory only if empty or an earlier neuroedge
export). :func:`prepare_export` checks everything that needs no training (target, packages,
data, output path), so a bad ``--out`` fails in a second, not after the training.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

from deploy.errors import ExportError
from deploy.outputs import check_output, write_directory, write_file

TARGETS = ("c", "nir", "onnx")
"""Every export target the CLI knows; a model card lists the subset it supports."""


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, *, directory: bool = False, force: bool = False,
                  inputs=(), disposable=(), option: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it onto ``path`` only on success.

    With ``directory=True`` the temporary path is an empty directory and the export may
    fill it with several files (the C target writes a header, sources and a Makefile).
    The rules are :mod:`deploy.outputs`': an existing file is replaced only with
    ``force``, an existing directory only when it is empty or (with ``force``) an earlier
    neuroedge export, and an input of the command is never an output.
    """
    if directory:
        with write_directory(path, force=force, inputs=inputs, disposable=disposable,
                             option=option) as tmp:
            yield tmp
    else:
        with write_file(path, force=force, inputs=inputs, parents=True,
                        option=option) as tmp:
            yield tmp


DIRECTORY_TARGETS = ("c",)
"""Targets whose export is a directory (a C project), not a single file."""
SUFFIXES = {"c": "", "nir": ".nir", "onnx": ".onnx"}
EXPORT_DEPENDENCIES = {"c": (), "nir": ("nir",), "onnx": ("onnx", "onnxruntime")}
"""Python packages a target's writer needs (the ``export`` extra); checked before training.
ONNX needs onnxruntime as well: every ONNX export is run in it before it is kept."""


def check_export_dependencies(target: str) -> None:
    """Raise ExportError naming the missing packages of ``target`` and how to install them."""
    missing = [m for m in EXPORT_DEPENDENCIES.get(target, ())
               if importlib.util.find_spec(m) is None]
    if missing:
        raise ExportError(f"export target {target!r} needs the Python package(s) "
                          f"{', '.join(missing)}, which are not installed: "
                          "pip install 'neuroedge[export]'")


def prepare_export(name: str, target: str, out: str | os.PathLike | None = None, *,
                   force: bool = False, option: str | None = None):
    """Every check of an export that needs no training: the model, the target, the target's
    packages, the training data and the output path. Returns ``(card, out)``.

    Raises
    ------
    ModelError, ExportError, DatasetError, OutputError
        One line each; nothing has been trained or written.
    """
    import models
    from models.shared import datasets
    card = models.get(name)
    if target not in TARGETS:
        raise ExportError(f"unknown export target {target!r}: targets are {', '.join(TARGETS)}")
    if target not in card.exports or card.export is None:
        supported = ", ".join(card.exports) or "none"
        raise ExportError(f"model {name!r} cannot be exported to {target!r}; "
                          f"its export targets are: {supported}")
    check_export_dependencies(target)
    if card.export_dataset:
        datasets.check_available(card.export_dataset)
    out = Path(out) if out else Path(f"exports/{name}-{target}{SUFFIXES[target]}")
    check_output(out, force=force, directory=target in DIRECTORY_TARGETS, option=option)
    return card, out


def export_model(name: str, target: str, out: str | os.PathLike | None = None, *,
                 seed: int = 0, quick: bool = True, progress=None, force: bool = False,
                 option: str | None = None) -> Path:
    """Export registered model ``name`` to ``target``; the CLI's ``export`` command.

    Everything that can fail without training is checked first (:func:`prepare_export`);
    ``force`` allows replacing an existing file or an earlier neuroedge export directory.
    """
    card, out = prepare_export(name, target, out, force=force, option=option)
    return Path(card.export(target, out, seed=seed, quick=quick, progress=progress,
                            force=force))
