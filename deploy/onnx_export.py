"""ONNX export of a feed-forward torch module, checked with onnxruntime.

``export_onnx`` writes the file atomically; ``check_onnx`` runs it in onnxruntime and
compares with the torch module on the same inputs (fed by name; outputs flattened, a dict's
values in key order), raising ``ExportError`` with the largest deviation, or the values
that are NaN on one side only, when they disagree. Exporters pass ``check_inputs`` to
``export_onnx`` so the check runs before the file is kept: an export that is not checked is
not an export.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from deploy.errors import ExportError
from deploy.outputs import atomic_output

OPSET = 18


def _as_tuple(inputs) -> tuple:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def export_onnx(module, example_inputs, path: str | os.PathLike, *,
                input_names: Sequence[str] | None = None,
                output_names: Sequence[str] = ("output",),
                dynamic_batch: bool = True, check_inputs=None, force: bool = False) -> Path:
    """Write ``module`` (eval mode, CPU) as ONNX at ``path``; the batch axis stays dynamic.

    With ``check_inputs``, the written graph is run in onnxruntime against torch on them
    (:func:`check_onnx`) *before* it is moved into place, so a file that disagrees with the
    model is never left at ``path``; with a dynamic batch, on them twice over as well (a
    batch of twice the size: a graph that baked the example's batch size in, from
    ``x.view(x.shape[0], -1)`` with ``int()``, fails there). An existing ``path`` is
    replaced only with ``force`` (the rules of :mod:`deploy.outputs`).
    """
    import torch
    try:
        import onnx  # noqa: F401  (the exporter needs it; say so clearly)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ExportError("ONNX export needs the 'onnx' and 'onnxruntime' packages: "
                          "pip install 'neuroedge[export]'") from exc
    inputs = tuple(t.detach().cpu() for t in _as_tuple(example_inputs))
    names = list(input_names or [f"input{i}" for i in range(len(inputs))])
    module = module.cpu().eval()
    dynamic = ({n: {0: "batch"} for n in [*names, *output_names]} if dynamic_batch else None)
    # The TorchScript exporter (dynamo=False) is deprecated but exports every module we
    # have in one deterministic pass; torch.export's exporter still rejects some of them.
    with atomic_output(path, force=force) as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with torch.no_grad():
            torch.onnx.export(module, inputs, str(tmp), input_names=names,
                              output_names=list(output_names), opset_version=OPSET,
                              dynamic_axes=dynamic, dynamo=False)
        if check_inputs is not None:
            check_onnx(tmp, module, check_inputs, label=str(path), input_names=names)
            if dynamic_batch:
                doubled = tuple(torch.cat([t, t]) for t in _as_tuple(check_inputs))
                check_onnx(tmp, module, doubled, label=str(path), input_names=names,
                           what=f"at batch {len(doubled[0])} (the batch axis is declared "
                           "dynamic; dynamic_batch=False fixes it to the example's)")
    return Path(path)


def _feeds(sess, inputs: tuple, input_names, path, what: str) -> dict:
    """onnxruntime's feed: each graph input by its name. The exporter drops an input the
    graph never reads (a forward that ignores its first argument), so the graph's inputs
    are matched to ``input_names`` (the names exported with, in the forward's order; default
    ``input0``, ``input1``, ... as :func:`export_onnx` names them), never by position; a file
    whose inputs bear none of those names and as many inputs as given is fed in order."""
    names = list(input_names or [f"input{i}" for i in range(len(inputs))])
    graph = [i.name for i in sess.get_inputs()]
    by_name = dict(zip(names, inputs, strict=False))
    if all(g in by_name for g in graph):
        return {g: by_name[g].numpy() for g in graph}
    if not any(g in by_name for g in graph) and len(graph) == len(inputs):
        return {g: t.numpy() for g, t in zip(graph, inputs, strict=True)}
    raise ExportError(f"{path}: the graph's inputs {graph} are not among the names given "
                      f"{names[:len(inputs)]}{f' {what}' if what else ''}; pass input_names= "
                      "as exported")


def _outputs(out, path, what: str) -> list:
    """The torch outputs as a flat list of tensors in the order the ONNX exporter writes
    them: a tensor alone; a tuple or list in order; a dict's values in its key order
    (insertion order, as ``torch.onnx.export`` flattens it), nested alike; None dropped."""
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        items = list(out.values())
    elif isinstance(out, (tuple, list)):
        items = list(out)
    elif out is None:
        return []
    else:
        raise ExportError(f"{path}: the module returns a {type(out).__name__}"
                          f"{f' {what}' if what else ''}; return a tensor, or a tuple, list "
                          "or dict of tensors (compared flattened, dict values in key order)")
    return [t for item in items for t in _outputs(item, path, what)]


def _compared(g: np.ndarray, w: np.ndarray, atol: float, rtol: float):
    """(largest |g - w| where both are numbers, values NaN on one side only, values
    beyond tolerance): NaN on both sides, or the same infinity, is agreement."""
    if not (np.issubdtype(w.dtype, np.inexact) or np.issubdtype(g.dtype, np.inexact)):
        err = np.abs(g.astype(np.float64) - w.astype(np.float64))
        return float(err.max(initial=0.0)), 0, int(np.sum(err > atol + rtol * np.abs(w)))
    g_nan, w_nan = np.isnan(g), np.isnan(w)
    same = (g_nan & w_nan) | (np.isinf(g) & (g == w))
    one_side = int(np.sum(g_nan ^ w_nan))
    with np.errstate(invalid="ignore"):
        err = np.where(same | g_nan | w_nan, 0.0, np.abs(g - w))
    err = np.nan_to_num(err, nan=np.inf)   # inf against a number or -inf: no agreement
    worst = float(err.max(initial=0.0))
    beyond = int(np.sum(err > atol + rtol * np.nan_to_num(np.abs(w), nan=0.0)))
    return worst, one_side, beyond


def check_onnx(path: str | os.PathLike, module, inputs, *, atol: float = 1e-4,
               rtol: float = 1e-4, what: str = "", label: str | None = None,
               input_names: Sequence[str] | None = None) -> float:
    """Run ``path`` in onnxruntime on ``inputs``; return the largest |onnx - torch|.

    Inputs are fed by name (``input_names``, as exported; default ``input0``, ...: the
    exporter drops inputs the graph never reads); outputs are compared flattened (a tuple
    or list in order, a dict's values in key order). NaN where torch gives NaN too is
    agreement, NaN on one side only is not.

    Raises ExportError when onnxruntime fails on them or any output differs beyond ``atol
    + rtol * |torch|`` or is NaN on one side only (``what`` says which inputs, in the
    message; ``label`` names the file there, default ``path``).
    """
    import onnxruntime as ort
    import torch
    inputs = tuple(t.detach().cpu() for t in _as_tuple(inputs))
    options = ort.SessionOptions()
    options.log_severity_level = 3   # a failing run is reported below, not logged as well
    sess = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    path = label or path
    feeds = _feeds(sess, inputs, input_names, path, what)
    try:
        got = sess.run(None, feeds)
    except Exception as exc:   # onnxruntime's own error classes: a graph that cannot run
        first = " ".join(str(exc).split())[:200]
        raise ExportError(f"{path}: onnxruntime fails{f' {what}' if what else ''}: "
                          f"{type(exc).__name__}: {first}") from None
    with torch.no_grad():
        want = module.cpu().eval()(*inputs)
    want = [w.numpy() for w in _outputs(want, path, what)]
    worst = 0.0
    if len(got) != len(want):
        raise ExportError(f"{path}: onnxruntime gives {len(got)} outputs, torch {len(want)}"
                          f"{f' {what}' if what else ''}")
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape:
            raise ExportError(f"{path}: onnxruntime output shape {g.shape} != torch {w.shape}"
                              f"{f' {what}' if what else ''}")
        err, one_side, beyond = _compared(g, w, atol, rtol)
        worst = max(worst, err)
        if one_side:
            raise ExportError(f"{path}: onnxruntime disagrees with torch: {one_side} of "
                              f"{w.size} value(s) NaN on one side only"
                              f"{f' {what}' if what else ''}")
        if beyond:
            raise ExportError(f"{path}: onnxruntime disagrees with torch by up to {worst:.3g} "
                              f"(tolerance {atol} + {rtol}*|x|){f' {what}' if what else ''}")
    return worst
