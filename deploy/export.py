"""Exporting trained models to edge targets: artifacts in, files out.

A method that can be exported lists its targets in ``Card.exports`` and registers an
``artifact(trained, target)`` function that rebuilds, from the trained state alone (a
``models.registry.Trained``), the plain data the ``sim`` layer owns for that target
(``sim/artifacts.py``). This module maps each target to its writer (:data:`EXPORTERS`):

========  =====================  ==============================================================
target    artifact               writer
========  =====================  ==============================================================
``c``     ``BitwiseArtifact``    ``c_export.export_c``: the layers run on a BitwiseDevice of the
                                 artifact's profile give the golden vectors of a C99 project
``nir``   ``NetworkArtifact``    ``nir_export.export_nir``, with the weights the placement on
                                 the artifact's profile quantises to
``onnx``  ``TorchArtifact``      ``onnx_export.export_onnx``, checked in onnxruntime against
                                 torch before the file is kept
========  =====================  ==============================================================

Two ways in, both checking everything that needs no training first
(:func:`prepare_export`: the model, the target, the target's packages, the run's profile,
dataset and settings, the output path), so a bad ``--out`` fails in a second:

* :func:`export_model` trains once through ``models.runner`` (on the card's
  ``trains_on`` dataset) and exports ``artifact(result.trained, target)``;
* :func:`export_run` exports the trained state a run file stored, training nothing.

Every writer goes through :func:`deploy.outputs.atomic_output`, which is why a failed
export leaves nothing half-written and why an export never destroys anything (temporary
sibling, then rename; an existing file only with ``force``; a directory only if empty or an
earlier neuroedge export).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploy.errors import ExportError
from deploy.outputs import check_output, given_path
from hw_profiles.errors import NeuroedgeError
from sim.errors import NotExportable

TARGETS = ("c", "nir", "onnx")
"""Every export target the CLI knows (``models.registry.EXPORT_TARGETS``); a card lists
the subset its ``artifact`` builds."""
DIRECTORY_TARGETS = ("c",)
"""Targets whose export is a directory (a C project), not a single file."""
SUFFIXES = {"c": "", "nir": ".nir", "onnx": ".onnx"}
EXPORT_DEPENDENCIES = {"c": (), "nir": ("nir",), "onnx": ("onnx", "onnxruntime")}
"""Python packages a target's writer needs (the ``export`` extra); checked before training.
ONNX needs onnxruntime as well: every ONNX export is run in it before it is kept."""
INSTALL_HINT = "pip install 'neuroedge[export]'"


def check_export_dependencies(target: str) -> None:
    """Raise ExportError naming the missing packages of ``target`` and how to install them."""
    missing = [m for m in EXPORT_DEPENDENCIES.get(target, ())
               if importlib.util.find_spec(m) is None]
    if missing:
        raise ExportError(f"export target {target!r} needs the Python package(s) "
                          f"{', '.join(missing)}, which are not installed: {INSTALL_HINT}")


# -- the writers, one per target --------------------------------------------------------------
def _artifact_of(target: str, art) -> Any:
    """``art`` if it is the artifact type ``target`` takes, else a one-line ExportError."""
    from sim.artifacts import ARTIFACT_TYPES
    want = ARTIFACT_TYPES[target]
    if not isinstance(art, want):
        raise ExportError(f"export target {target!r} takes a sim.artifacts.{want.__name__}; "
                          f"got a {type(art).__name__} (the card's artifact() must return "
                          f"a {want.__name__} for {target!r})")
    return art


def export_c_artifact(art, out, *, force: bool = False) -> Path:
    """A :class:`~sim.artifacts.BitwiseArtifact` as a C99 project directory at ``out``."""
    from deploy.c_export import export_c
    art = _artifact_of("c", art)
    return export_c(art.layers, art.inputs, out, profile=art.profile, force=force)


def export_nir_artifact(art, out, *, force: bool = False) -> Path:
    """A :class:`~sim.artifacts.NetworkArtifact` as a ``.nir`` file at ``out``, with the
    weights its placement on ``art.profile`` quantises them to."""
    import sim
    from deploy.nir_export import export_nir
    from hw_profiles import load
    art = _artifact_of("nir", art)
    profile = load(art.profile)
    if profile.kind != "neuromorphic":
        raise ExportError(f"NIR export: the artifact's profile {profile.label!r} is a "
                          f"{profile.kind!r} profile; the placement that quantises the "
                          "weights needs a neuromorphic one (loihi, loihi2, ...)")
    compiled = sim.device(profile).compile(art.network)
    return export_nir(art.network, out, compiled=compiled, force=force)


def export_onnx_artifact(art, out, *, force: bool = False) -> Path:
    """A :class:`~sim.artifacts.TorchArtifact` as an ONNX file at ``out``, checked in
    onnxruntime against torch on ``art.check_inputs`` before it is kept."""
    from deploy.onnx_export import export_onnx
    art = _artifact_of("onnx", art)
    return export_onnx(art.module, art.example_inputs, out, input_names=art.input_names,
                       output_names=art.output_names, check_inputs=art.check_inputs,
                       force=force)


EXPORTERS: dict[str, Callable[..., Path]] = {"c": export_c_artifact, "nir": export_nir_artifact,
                                             "onnx": export_onnx_artifact}
"""target -> ``writer(artifact, out, *, force) -> Path``; each refuses an artifact of
another type than ``sim.artifacts.ARTIFACT_TYPES[target]``."""


def write_artifact(target: str, art, out, *, force: bool = False) -> Path:
    """Write ``art`` with the exporter of ``target``."""
    check_target_name(target)
    return Path(EXPORTERS[target](art, out, force=force))


# -- checks before the work ----------------------------------------------------------------
def check_target_name(target: str) -> None:
    if target not in TARGETS:
        raise ExportError(f"unknown export target {target!r}: targets are {', '.join(TARGETS)}")


def check_target(method, target: str) -> None:
    """``target`` is known, the card exports to it, and its packages are installed."""
    check_target_name(target)
    card = method.card
    if target not in card.exports or method.artifact is None:
        raise ExportError(f"model {card.name!r} cannot be exported to {target!r}; its export "
                          f"targets are: {', '.join(card.exports) or 'none'}")
    check_export_dependencies(target)


def default_out(name: str, target: str) -> Path:
    """``exports/MODEL-TARGET[.ext]`` (a directory for the C target)."""
    return Path(f"exports/{name}-{target}{SUFFIXES[target]}")


@dataclass(frozen=True)
class ExportPlan:
    """A checked export: the method, the target, where it goes, and either the runner's plan
    (train first) or the trained state read from a run file (no training)."""

    method: Any
    target: str
    out: Path
    plan: Any = None          # models.runner.Plan: train once, then export
    trained: Any = None       # models.registry.Trained from a run file: export only
    source: str = ""          # the run file read, when exporting from one
    profile: Any = None       # the run file's profile snapshot (a HardwareProfile)


def prepare_export(name: str | None, target: str, out: str | os.PathLike | None = None, *,
                   run_file: str | os.PathLike | None = None, preset: str = "quick",
                   seed: int = 0, overrides=None, profile=None, force: bool = False,
                   option: str | None = None) -> ExportPlan:
    """Every check of an export that needs no training; returns the :class:`ExportPlan`.

    Without ``run_file``: the model, the target (known, among ``card.exports``, its packages
    installed), then ``runner.prepare`` on the card's ``trains_on`` dataset (profile, data
    files, preset and ``--set`` overrides), then the output path. With ``run_file``: the
    file is read (its checks), its model must be ``name`` (or ``name`` is ``None``) and it
    must hold a trained state; training settings do not apply.

    Raises
    ------
    ModelError, ExportError, DatasetError, OutputError, RunFileError, ProfileError
        One line each; nothing has been trained or written.
    """
    from models import runner
    from models.registry import get
    if run_file is not None:
        from deploy.runfile import read_run
        run = read_run(run_file)
        if name is not None and name != run.model:
            raise ExportError(f"--from {str(run_file)!r} is a run of model {run.model!r}, not "
                              f"{name!r}: name {run.model!r} or leave the model out")
        method = get(run.model)
        check_target(method, target)
        if run.trained is None:
            raise ExportError(f"--from {str(run_file)!r} stores no trained state (format "
                              f"version {run.file.format_version}; a run keeps it from format 3 "
                              f"on, when the model returns one): rerun 'neuroedge simulate "
                              f"{run.model}' or export without --from, which trains")
        check_stored_state(run.trained, str(run_file))
        dest = given_path(out, default_out(method.name, target), option or "--out")
        check_output(dest, force=force, inputs=[run_file],
                     directory=target in DIRECTORY_TARGETS, option=option)
        # the rebuild's dry run last: every check that needs no model code comes first
        check_stored_shapes(method, run.trained, target, str(run_file))
        return ExportPlan(method, target, dest, trained=run.trained, source=str(run_file),
                          profile=run.profile)
    if name is None:
        raise ExportError("export: name the model to train and export, or give --from RUN.h5")
    method = get(name)
    check_target(method, target)
    plan = runner.prepare(method, profile=profile, dataset=method.card.trains_on,
                          preset=preset, seed=seed, overrides=overrides)
    dest = given_path(out, default_out(method.name, target), option or "--out")
    inputs = [plan.profile.path] if plan.profile.path else []
    check_output(dest, force=force, inputs=inputs, directory=target in DIRECTORY_TARGETS,
                 option=option)
    return ExportPlan(method, target, dest, plan=plan)


def check_stored_state(trained, source: str) -> None:
    """Check a run file's trained state before any model is rebuilt from it: every array
    finite (a NaN weight is named, not found later as a disagreement with onnxruntime),
    and every list of integers in the meta (layer sizes, shapes) non-negative and no larger
    than the number of values the stored arrays hold, so a hand-edited ``sizes: [1e6, 1e6]``
    cannot make the rebuild allocate terabytes: a layer cannot be wider than the weights it
    has. An integer element counts as one value per bit (a bitwise model's weights are
    packed 32 or 64 to a word: a BEP run with 8 hidden units holds 8 x 32 words for 1000
    inputs, and was refused as 256 elements for k_in = 1000)."""
    import numpy as np
    total = sum(int(np.asarray(a).size) * (np.asarray(a).dtype.itemsize * 8
                                           if np.asarray(a).dtype.kind in "iub" else 1)
                for a in trained.arrays.values())
    for name, arr in trained.arrays.items():
        arr = np.asarray(arr)
        if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
            raise ExportError(f"--from {source!r}: trained array {name!r} holds NaN or "
                              "infinite values; rerun the simulation for finite weights")
    pending = [("meta", trained.meta)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, dict):
            pending.extend((f"{where}.{k}", v) for k, v in value.items())
        elif isinstance(value, list):
            ints = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
            if ints and len(ints) == len(value) and not all(0 <= v <= total for v in ints):
                raise ExportError(f"--from {source!r}: trained {where} = {value!r:.80} has a "
                                  f"size outside 0..{total} (the stored arrays hold {total} "
                                  "values in all, a packed bit counting one)")
            pending.extend((f"{where}[{i}]", v) for i, v in enumerate(value)
                           if isinstance(v, (dict, list)))


_REBUILD_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError,
                   MemoryError, NeuroedgeError)


def _does_not_rebuild(source: str, model: str, exc: BaseException) -> str:
    msg = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return (f"--from {source!r}: its /trained state does not rebuild a {model} model ({msg}); "
            f"rerun 'neuroedge simulate {model}' for a fresh run file")


# torch's load_state_dict names each mismatch as "size mismatch for KEY: copying a param with
# shape torch.Size([3, 2]) from checkpoint, the shape in current model is torch.Size([...])."
_SIZE_MISMATCH = re.compile(r"size mismatch for (\S+): copying a param with shape "
                            r"torch\.Size\(\[([^\]]*)\]\) from checkpoint, the shape in "
                            r"current model is torch\.Size\(\[([^\]]*)\]\)")
_MISSING_KEYS = re.compile(r'Missing key\(s\) in state_dict: "([^"]+)"')


def check_stored_shapes(method, trained, target: str, source: str) -> None:
    """Check every stored array of a torch model against the shape its ``/trained`` meta
    implies, before anything is allocated: the model's own rebuild (``artifact``) runs on
    torch's ``meta`` device, where a module of any size holds no memory, and
    ``load_state_dict`` compares each stored array with the parameter the meta builds. A
    mismatch is one line naming the array, the shape found and the shape expected, so a meta
    of ``sizes = [100000, 100000]`` over 3 x 2 weights never allocates 40 GB. Bitwise and
    NIR artifacts are built from the stored arrays themselves (their layers check the shapes
    as they are made: :func:`execute_export`)."""
    from sim.artifacts import ARTIFACT_TYPES, TorchArtifact
    if ARTIFACT_TYPES.get(target) is not TorchArtifact:
        return
    import torch
    try:
        with torch.device("meta"):
            method.artifact(trained, target)
    except _REBUILD_ERRORS as exc:
        text = str(exc)
        m = _SIZE_MISMATCH.search(text)
        if m:
            key, found, expected = m.group(1), _shape(m.group(2)), _shape(m.group(3))
            # the stored name of that parameter ("param/0.weight", "head/..."): the one
            # whose name ends in the key and whose shape is the one found
            name = next((n for n, a in trained.arrays.items()
                         if n.rpartition("/")[2] == key and tuple(a.shape) == found), key)
            raise ExportError(f"--from {source!r}: trained array /trained/arrays/{name} has "
                              f"shape {found}; the /trained meta {_meta_text(trained.meta)} "
                              f"implies {expected} for a {method.name} model; rerun "
                              f"'neuroedge simulate {method.name}' for a fresh run file"
                              ) from None
        m = _MISSING_KEYS.search(text)
        if m:
            raise ExportError(f"--from {source!r}: the /trained meta {_meta_text(trained.meta)} "
                              f"implies a parameter {m.group(1)!r} that no stored array holds "
                              f"for a {method.name} model; rerun 'neuroedge simulate "
                              f"{method.name}' for a fresh run file") from None
        raise ExportError(_does_not_rebuild(source, method.name, exc)) from None


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split(",") if d.strip())


def _meta_text(meta) -> str:
    import json
    return json.dumps(meta, default=str)[:120]


def check_golden_outputs(trained, art, source: str, model: str) -> None:
    """A bitwise model rebuilt from a run file must give, on the golden inputs the run
    stored, the golden outputs it stored with them (``golden_scores`` / ``golden_labels``,
    the trained model's own): weights edited within their types (polarities scaled, include
    bits moved) rebuild without an error, and the C export would otherwise take the edited
    model's outputs as its golden vectors and pass its own check."""
    import numpy as np

    from sim.artifacts import BitwiseArtifact
    stored = {k: np.asarray(trained.arrays[k]) for k in ("golden_scores", "golden_labels")
              if k in trained.arrays}
    if not isinstance(art, BitwiseArtifact) or not stored:
        return
    from sim.bitwise import BitwiseDevice
    out = BitwiseDevice(art.profile).run(art.layers, art.inputs, scope="golden")
    got = {"golden_scores": out.scores, "golden_labels": out.labels}
    for name, want in stored.items():
        have = got[name]
        if have is None:
            continue
        have = np.asarray(have)
        if have.shape != want.shape:
            differ = f"shape {have.shape} against the stored {want.shape}"
        elif not np.array_equal(have, want):
            rows = have.reshape(len(have), -1) != want.reshape(len(want), -1)
            differ = f"{int(rows.any(axis=1).sum())} of {len(want)} inputs differ"
        else:
            continue
        raise ExportError(f"--from {source!r}: its /trained model does not give the "
                          f"{name.replace('_', ' ')} the run stored ({differ}): the file "
                          f"was edited or is corrupt; rerun 'neuroedge simulate {model}' "
                          "for a fresh run file")


def _names_profile(ref, profile) -> bool:
    """Whether ``ref``, the profile an artifact names (what the model stored in its trained
    meta: a profile's name, or the path of the user's file it was loaded from, absolute or
    -- in older run files -- relative to the directory it was simulated in), is
    ``profile``, the run's own (a shipped name, or ``NAME (file: /abs/path.toml)``)."""
    if not isinstance(ref, (str, os.PathLike)):
        return False
    text = str(ref)
    if text in (profile.name, profile.label):
        return True
    prefix = f"{profile.name} (file: "
    if not (profile.label.startswith(prefix) and profile.label.endswith(")")):
        return False
    file = Path(profile.label[len(prefix):-1])
    given = Path(os.path.normpath(text))
    if given.is_absolute():
        return given == file
    parts = given.parts
    return bool(parts) and ".." not in parts and file.parts[-len(parts):] == parts


def _with_run_profile(art, profile):
    """``art`` with the run's profile object in place of the name or path it holds, when
    that names the run's profile (:func:`_names_profile`): the export then reads no profile
    file, so it works from any directory and whatever became of the user's TOML since the
    run. A profile the run did not use (a NIR export placed on another chip) is kept."""
    if profile is None or not dataclasses.is_dataclass(art) \
            or not _names_profile(getattr(art, "profile", None), profile):
        return art
    return dataclasses.replace(art, profile=profile)


def _refuse_profile_files(art, source: str) -> None:
    """A run file's artifact may name a shipped profile (a NIR export placed on another chip)
    but not a file: that is the run's own profile, replaced by its snapshot above, or a path
    the file was edited to hold, and a run file never makes neuroedge read another file."""
    from hw_profiles import available
    ref = getattr(art, "profile", None)
    if isinstance(ref, (str, os.PathLike)) and str(ref) not in available():
        raise ExportError(f"--from {source!r}: its trained state names the profile "
                          f"{str(ref)!r}, which is neither a shipped profile nor the run's "
                          "own (stored in the run file); a run file never makes neuroedge "
                          "read another file: export from an unedited run file")


def execute_export(xplan: ExportPlan, progress=None, *, force: bool = False) -> Path:
    """Train (when the plan says so) once, build the artifact, write it. The artifact's
    profile is the run's own profile object (:func:`_with_run_profile`): from a run file its
    snapshot, which a run file stores so that exporting it never reads another file."""
    trained, profile = xplan.trained, xplan.profile
    if xplan.plan is not None:
        from models import runner
        result = runner.execute(xplan.plan, progress)
        trained, profile = result.trained, result.profile
        if trained is None:
            raise ExportError(f"{xplan.method.name}.simulate returned no trained state, so "
                              f"there is nothing to export to {xplan.target!r}")
    if not xplan.source:
        art = _with_run_profile(xplan.method.artifact(trained, xplan.target), profile)
    else:
        try:
            art = xplan.method.artifact(trained, xplan.target)
        except NotExportable as exc:
            # a valid run of a kind the target cannot take: no fresh run file would help
            raise ExportError(f"--from {xplan.source!r}: {exc}") from None
        except _REBUILD_ERRORS as exc:
            # the trained state came from a file: a hand-edited /trained can fail anywhere
            # the model's artifact() reads it (a bitwise layer's own shape check included)
            raise ExportError(_does_not_rebuild(xplan.source, xplan.method.name, exc)) from None
        art = _with_run_profile(art, profile)
        _refuse_profile_files(art, xplan.source)
    if not xplan.source:
        return write_artifact(xplan.target, art, xplan.out, force=force)
    check_golden_outputs(trained, art, xplan.source, xplan.method.name)
    try:
        return write_artifact(xplan.target, art, xplan.out, force=force)
    except NeuroedgeError:
        raise                      # the exporter's own one-line errors (a full disk, ...)
    except _REBUILD_ERRORS as exc:
        # the stored example inputs are the file's too: of another dtype or shape than the
        # rebuilt model takes, they fail inside the exporter (the temporary is gone)
        raise ExportError(_does_not_rebuild(xplan.source, xplan.method.name, exc)) from None


def export_model(name: str, target: str, out: str | os.PathLike | None = None, *,
                 preset: str = "quick", seed: int = 0, overrides=None, profile=None,
                 progress=None, force: bool = False, option: str | None = None) -> Path:
    """Train registered model ``name`` once (``models.runner``) and export it to ``target``.

    Everything that can fail without training is checked first (:func:`prepare_export`);
    ``force`` allows replacing an existing file or an earlier neuroedge export directory.
    """
    xplan = prepare_export(name, target, out, preset=preset, seed=seed, overrides=overrides,
                           profile=profile, force=force, option=option)
    return execute_export(xplan, progress, force=force)


def export_run(run_file: str | os.PathLike, target: str, out: str | os.PathLike | None = None,
               *, name: str | None = None, force: bool = False,
               option: str | None = None) -> Path:
    """Export the trained state stored in ``run_file`` to ``target``: no training at all."""
    xplan = prepare_export(name, target, out, run_file=run_file, force=force, option=option)
    return execute_export(xplan, force=force)
