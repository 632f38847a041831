"""The base of this project's aten-op observers (the torch engine's counting mode, the
MCU arena's lifetime trace).

torch wraps a ``TorchDispatchMode`` subclass's ``__torch_dispatch__`` in
``torch._dynamo.disable`` unless the class says otherwise. That wrapper imports
``torch._dynamo`` on the first op (1-3 s of CPU time: most of a ``neuroedge estimate`` run's
start-up, issue 36) and goes through dynamo's eval-frame switch on every op after. It only
matters when ``torch.compile`` traces code that runs inside the mode; nothing in this
project compiles inside a counting or tracing block, so the modes here opt out.
"""
from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode


class ObserverMode(TorchDispatchMode):
    """A ``TorchDispatchMode`` whose ``__torch_dispatch__`` runs as plain Python (no dynamo
    guard, see the module docstring)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False
