"""The base of this project's aten-op observers (the torch engine's counting mode, the
MCU arena's lifetime trace).

torch wraps a ``TorchDispatchMode`` subclass's ``__torch_dispatch__`` in
``torch._dynamo.disable`` unless the class says otherwise. That wrapper imports
``torch._dynamo`` on the first op (1-3 s of CPU time: most of a ``neuroedge estimate`` run's
start-up, issue 36) and goes through dynamo's eval-frame switch on every op after. It only
matters when ``torch.compile`` traces code that runs inside the mode; nothing in this
project compiles inside a counting or tracing block, so the modes here opt out; where the
process uses ``torch.compile``, compiled code runs eagerly inside the block
(:func:`eager_while_observing`).
"""
from __future__ import annotations

import contextlib
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class ObserverMode(TorchDispatchMode):
    """A ``TorchDispatchMode`` whose ``__torch_dispatch__`` runs as plain Python (no dynamo
    guard, see the module docstring)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


def eager_while_observing():
    """A context in which ``torch.compile``d code runs eagerly, for a block that observes ops
    with a mode here: ``torch.compiler.set_stance("force_eager")`` once this process uses
    torch.compile (``torch._dynamo`` imported), else nothing. Inside an observing block a
    compiled model's ops are its eager ops anyway, and dynamo, running compiled frames,
    compiled the mode's own Python: 72 frames, 9 graphs and its recompile limit for a 3-layer
    MLP counted under ``TorchDevice.count``. Nothing is compiled inside the block; the
    compiled model compiles on its next call outside. Without compile nothing is imported
    (the module docstring)."""
    if "torch._dynamo" not in sys.modules:
        return contextlib.nullcontext()
    return torch.compiler.set_stance("force_eager")


@contextlib.contextmanager
def observed_as_counted():
    """The settings every block that observes a model's ops runs under, so that the count
    (``TorchDevice.count``) and the lifetime trace (:func:`sim.arena.trace_lifetimes`) see
    the same ops: compiled code eager (:func:`eager_while_observing`), and PyTorch's fused
    encoder-layer / multi-head-attention fast path off, restored after. That fast path is
    one opaque kernel; without it those layers run as the linear, attention and norm ops
    they stand for, counted the same on every device (``costs.py``'s docstring). A trace
    of the fused kernel would miss their intermediate tensors: a 160-token encoder layer's
    (160, 256) feed-forward hidden tensor, 163,840 B, which the counted run holds."""
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with eager_while_observing():
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
