"""TorchDevice: run torch modules on CUDA or CPU and count their ops and bytes in the ledger.

Counting happens in a ``TorchDispatchMode``: every aten op that executes (forward,
backward and optimizer steps alike) is priced by :func:`sim.torch_engine.costs.op_cost`,
and :class:`sim.torch_engine.scopes.ScopeTracker` tells which module it belongs to (in
backward: the module whose forward made the autograd node being run), so a ledger scope
reads ``train/net.0/forward`` or ``train/net.0/backward``, the same every run. Counts are
kept in local dicts and flushed into the ledger once, when the counting block ends.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from hw_profiles.errors import ModelError
from sim.device import Device, register_engine
from sim.torch_engine.costs import op_cost, tensor_bytes
from sim.torch_engine.scopes import ScopeTracker


class _CountingMode(TorchDispatchMode):
    """Prices every aten op into per-scope local tallies."""

    def __init__(self, base: str, tracker: ScopeTracker):
        super().__init__()
        self.base = base
        self.tracker = tracker
        self.ops: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.bytes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.uncounted: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def _scope(self) -> str:
        path, backward = self.tracker.where()
        parts = [self.base] if self.base else []
        if path:
            parts.append(path)
        if backward:
            parts.append("backward")
        elif path:
            parts.append("forward")
        return "/".join(parts)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        counts, read, write, uncounted = op_cost(func, args, kwargs, out)
        scope = self._scope()
        if uncounted:
            self.uncounted[scope][uncounted] += 1
            return out
        tally = self.ops[scope]
        for op, n in counts.items():
            tally[op] += n
        if read or write:
            b = self.bytes[scope]
            b[0] += read
            b[1] += write
        return out


class TorchDevice(Device):
    """Standard GPU backend: torch on CUDA when the profile is a GPU and CUDA exists, else CPU.

    Parameters
    ----------
    profile : str, path or HardwareProfile
        A ``gpu`` or ``cpu`` profile.
    prefer_cuda : bool
        Use CUDA for a GPU profile when available (default). Counts do not depend on it.

    Examples
    --------
    >>> import torch
    >>> dev = TorchDevice("a100")
    >>> lin = dev.compile(torch.nn.Linear(4, 3))
    >>> _ = dev.run(lin, torch.zeros(2, 4))
    >>> dev.ledger.total_ops()["mac_fp32"]   # 2 samples x 4 inputs x 3 outputs
    24
    """

    def __init__(self, profile, prefer_cuda: bool = True):
        super().__init__(profile)
        use_cuda = prefer_cuda and self.profile.kind == "gpu" and torch.cuda.is_available()
        self.torch_device = torch.device("cuda" if use_cuda else "cpu")
        self.footprint_bytes = 0
        self._counting = False

    def compile(self, module: torch.nn.Module) -> torch.nn.Module:
        """Move ``module`` to the device after checking its parameters fit device memory."""
        if not isinstance(module, torch.nn.Module):
            raise ModelError(f"[TorchDevice.compile] expected a torch.nn.Module, got "
                             f"{type(module).__name__}")
        footprint = tensor_bytes(list(module.parameters()) + list(module.buffers()))
        capacity = self.profile.memory["offchip"].capacity_bytes.value
        if footprint > capacity:
            self._limit_error(f"{type(module).__name__} parameters + buffers",
                              f"{footprint} B", "memory.offchip.capacity_bytes",
                              f"{capacity:.0f} B", "use a smaller model or a profile with "
                              "more device memory")
        self.footprint_bytes = footprint
        return module.to(self.torch_device)

    def tensor(self, x, dtype=torch.float32) -> torch.Tensor:
        """``x`` (array or tensor) as a tensor on this device."""
        return torch.as_tensor(x, dtype=dtype, device=self.torch_device)

    @contextmanager
    def count(self, scope: str, samples: int = 0) -> Iterator[None]:
        """Count every torch op run inside the block into ``self.ledger`` under ``scope``.

        ``samples`` (if > 0) is recorded for per-sample energy. Blocks do not nest.
        """
        if self._counting:
            raise ModelError(f"[TorchDevice.count] already counting; scope {scope!r} cannot "
                             "nest inside another count() block")
        self.ledger.resolve_scope(scope)  # validate the name before running anything
        tracker = ScopeTracker()
        mode = _CountingMode(scope, tracker)
        self._counting = True
        try:
            with tracker, mode:
                yield
        finally:
            self._counting = False
        for name, tally in mode.ops.items():
            for op, n in tally.items():
                self.ledger.add(op, n, scope=name)
        for name, (read, write) in mode.bytes.items():
            self.ledger.add_bytes("offchip", read=read, write=write, scope=name)
        for name, bucket in mode.uncounted.items():
            for op, n in bucket.items():
                self.ledger.add_uncounted(op, n, scope=name)
        if samples:
            self.ledger.add_samples(samples, scope=scope)

    def run(self, module: torch.nn.Module, x: torch.Tensor, scope: str = "infer"):
        """Inference: ``module(x)`` without gradients, counted under ``scope``."""
        with torch.no_grad(), self.count(scope, samples=int(x.shape[0]) if x.dim() else 1):
            return module(x)


register_engine("gpu", TorchDevice)
register_engine("cpu", TorchDevice)
