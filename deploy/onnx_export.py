"""ONNX export of a feed-forward torch module, checked with onnxruntime.

``export_onnx`` writes the file atomically; ``check_onnx`` runs it in onnxruntime and
compares with the torch module on the same inputs, raising ``ExportError`` with the
largest deviation when they disagree. Exporters pass ``check_inputs`` to ``export_onnx``
so the check runs before the file is kept: an export that is not checked is not an export.
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
            check_onnx(tmp, module, check_inputs, label=str(path))
            if dynamic_batch:
                doubled = tuple(torch.cat([t, t]) for t in _as_tuple(check_inputs))
                check_onnx(tmp, module, doubled, label=str(path),
                           what=f"at batch {len(doubled[0])} (the batch axis is declared "
                           "dynamic; dynamic_batch=False fixes it to the example's)")
    return Path(path)


def check_onnx(path: str | os.PathLike, module, inputs, *, atol: float = 1e-4,
               rtol: float = 1e-4, what: str = "", label: str | None = None) -> float:
    """Run ``path`` in onnxruntime on ``inputs``; return the largest |onnx - torch|.

    Raises ExportError when onnxruntime fails on them or any output differs beyond ``atol
    + rtol * |torch|`` (``what`` says which inputs, in the message; ``label`` names the
    file there, default ``path``).
    """
    import onnxruntime as ort
    import torch
    inputs = tuple(t.detach().cpu() for t in _as_tuple(inputs))
    options = ort.SessionOptions()
    options.log_severity_level = 3   # a failing run is reported below, not logged as well
    sess = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    path = label or path
    feeds = {i.name: t.numpy() for i, t in zip(sess.get_inputs(), inputs, strict=False)}
    try:
        got = sess.run(None, feeds)
    except Exception as exc:   # onnxruntime's own error classes: a graph that cannot run
        first = " ".join(str(exc).split())[:200]
        raise ExportError(f"{path}: onnxruntime fails{f' {what}' if what else ''}: "
                          f"{type(exc).__name__}: {first}") from None
    with torch.no_grad():
        want = module.cpu().eval()(*inputs)
    want = [w.numpy() for w in _as_tuple(want)]
    worst = 0.0
    if len(got) != len(want):
        raise ExportError(f"{path}: onnxruntime gives {len(got)} outputs, torch {len(want)}"
                          f"{f' {what}' if what else ''}")
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape:
            raise ExportError(f"{path}: onnxruntime output shape {g.shape} != torch {w.shape}"
                              f"{f' {what}' if what else ''}")
        err = np.abs(g - w)
        worst = max(worst, float(err.max(initial=0.0)))
        if not np.all(err <= atol + rtol * np.abs(w)):
            raise ExportError(f"{path}: onnxruntime disagrees with torch by up to {worst:.3g} "
                              f"(tolerance {atol} + {rtol}*|x|){f' {what}' if what else ''}")
    return worst
