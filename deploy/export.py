"""Exporting trained models to edge targets: the one place that decides where files go.

A method that can be exported lists its targets in ``ModelCard.exports`` and gives the card
an ``export(target, out, *, seed, quick, progress) -> Path`` callable. That callable trains
(or loads) the model, writes the artefact through :func:`atomic_output` and returns the
path. The target-specific writers live beside this module (``deploy/onnx_export.py`` for
ONNX; the NIR and C writers arrive with their engines).

:func:`atomic_output` is why a failed export leaves nothing half-written: everything is
written into a temporary sibling and renamed into place only when the writer succeeded.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from hw_profiles.errors import ExportError

TARGETS = ("c", "nir", "onnx")
"""Every export target the CLI knows; a model card lists the subset it supports."""


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, *, directory: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it onto ``path`` only on success.

    With ``directory=True`` the temporary path is an empty directory and the export may
    fill it with several files (the C target writes a header, sources and a Makefile).
    An existing ``path`` is replaced only after the new one is complete.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    target = tmp if directory else tmp / path.name
    try:
        yield target
        if not target.exists():
            raise ExportError(f"export to {path}: the writer produced nothing")
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        os.replace(target, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def export_model(name: str, target: str, out: str | os.PathLike | None = None, *,
                 seed: int = 0, quick: bool = True, progress=None) -> Path:
    """Export registered model ``name`` to ``target``; the CLI's ``export`` command."""
    import models
    card = models.get(name)
    if target not in TARGETS:
        raise ExportError(f"unknown export target {target!r}: targets are {', '.join(TARGETS)}")
    if target not in card.exports or card.export is None:
        supported = ", ".join(card.exports) or "none"
        raise ExportError(f"model {name!r} cannot be exported to {target!r}; "
                          f"its export targets are: {supported}")
    suffix = {"c": "", "nir": ".nir", "onnx": ".onnx"}[target]
    out = Path(out) if out else Path(f"exports/{name}-{target}{suffix}")
    return Path(card.export(target, out, seed=seed, quick=quick, progress=progress))
