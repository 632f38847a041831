"""The base of this project's aten-op observers (the torch engine's counting mode, the
MCU arena's lifetime trace).

torch wraps a ``TorchDispatchMode`` subclass's ``__torch_dispatch__`` in
``torch._dynamo.disable`` unless the class says otherwise. That wrapper imports
``torch._dynamo`` on the first op (1-3 s of CPU time: most of a ``neuroedge estimate`` run's
start-up, issue 36) and goes through dynamo's eval-frame switch on every op after. It only
matters when ``torch.compile`` traces code that runs inside the mode; nothing in this
project compiles inside a counting or tracing block, so the modes here opt out, and take the
guard only where the process already uses ``torch.compile`` (:func:`for_compiled_code`).
"""
from __future__ import annotations

import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class ObserverMode(TorchDispatchMode):
    """A ``TorchDispatchMode`` whose ``__torch_dispatch__`` runs as plain Python (no dynamo
    guard, see the module docstring)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


_UNDER_COMPILE: dict[type, type] = {}


def for_compiled_code(cls: type) -> type:
    """``cls``, or, once this process uses ``torch.compile`` (``torch._dynamo`` imported), its
    subclass whose ``__torch_dispatch__`` dynamo does not trace. A compiled model's ops reach
    the mode from compiled frames, and dynamo then compiled the mode's own Python: a new
    graph for each argument type, a recompile-limit warning after 8, seconds spent (a
    compiled MLP counted under ``TorchDevice.count``). Without compile the mode stays
    unwrapped (the module docstring)."""
    if "torch._dynamo" not in sys.modules:
        return cls
    sub = _UNDER_COMPILE.get(cls)
    if sub is None:
        dispatch = torch._disable_dynamo(cls.__torch_dispatch__, recursive=True)
        sub = _UNDER_COMPILE[cls] = type(cls.__name__ + "UnderCompile", (cls,),
                                         {"__torch_dispatch__": dispatch})
    return sub
