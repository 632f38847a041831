"""Activation memory the way TensorFlow Lite Micro plans it: tensor lifetimes and a greedy
arena.

TFLM keeps every activation (the model's input and output included) in one arena and
places them with ``GreedyMemoryPlanner``: buffers are taken largest first, and each goes at
the lowest offset where it overlaps no already-placed buffer whose lifetime (first op that
writes it .. last op that reads it) overlaps its own. The arena is the highest end offset;
two tensors alive at the same op can never share bytes, so the arena is at least the peak
of the live bytes and often equals it. Buffers are aligned to 16 bytes
(``MicroArenaBufferAlignment``). Weights are not in the arena (TFLM reads them from the
flatbuffer, in flash).

:func:`trace_lifetimes` records the lifetimes of a torch module's activations by running it
once (eval, no gradients) under a dispatch mode: every tensor an op creates is one buffer
(views and in-place results share their base's storage and so its buffer), alive from the
op that creates it to the last op that reads it; the inputs are alive from the start and
the outputs to the end. An op's further outputs that no later op reads (the int64 indices
``max_pool2d_with_indices`` returns beside the pooled values, a batch norm's saved
statistics) are torch's, not the layer's: a TFLM kernel makes none, so they are left out.
:func:`greedy_arena` plans them.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

ALIGNMENT = 16
"""Bytes: TFLM's MicroArenaBufferAlignment()."""


@dataclass(frozen=True)
class Buffer:
    """One activation: its bytes and the ops (0-based, inclusive) it is alive over."""

    nbytes: int
    first: int
    last: int


def _aligned(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


def greedy_arena(buffers: list[Buffer]) -> tuple[int, list[int]]:
    """(arena bytes, offset of each buffer) by TFLM's greedy plan.

    Largest first (ties: the order given); each buffer at the lowest offset, from 0, that
    overlaps in address no placed buffer whose lifetime overlaps its own.
    """
    order = sorted(range(len(buffers)), key=lambda i: -buffers[i].nbytes)
    offsets: list[int | None] = [None] * len(buffers)
    placed: list[int] = []
    for i in order:
        b = buffers[i]
        size = _aligned(b.nbytes)
        live = sorted((offsets[j], _aligned(buffers[j].nbytes)) for j in placed
                      if buffers[j].first <= b.last and b.first <= buffers[j].last)
        at = 0
        for off, n in live:   # by offset: the first gap that holds the buffer
            if at + size <= off:
                break
            at = max(at, off + n)
        offsets[i] = at
        placed.append(i)
    arena = max((offsets[i] + _aligned(buffers[i].nbytes) for i in placed), default=0)
    return arena, [int(o) for o in offsets]


def peak_live_bytes(buffers: list[Buffer]) -> int:
    """The most aligned bytes alive at one op: a lower bound for any arena."""
    if not buffers:
        return 0
    end = max(b.last for b in buffers)
    return max(sum(_aligned(b.nbytes) for b in buffers if b.first <= t <= b.last)
               for t in range(end + 1))


def trace_lifetimes(module, inputs: tuple, bytes_per_element: int | None = None,
                    keywords: dict | None = None) -> list[Buffer]:
    """The activation buffers of one inference of ``module`` on ``inputs`` and the keyword
    inputs ``keywords`` (see the module docstring). ``bytes_per_element``: the deployed
    size of each element (1 for int8); ``None`` keeps each tensor's own size; it applies to
    floating-point tensors only.
    Parameters and buffers of the module (its weights) are left out."""
    import torch
    from torch.utils._pytree import tree_leaves

    from sim.torch_engine.costs import dense_parts
    from sim.torch_engine.dispatch import ObserverMode, observed_as_counted

    weights = {p.untyped_storage().data_ptr()
               for t in list(module.parameters()) + list(module.buffers())
               for p in dense_parts(t)}
    # storage address -> [bytes, first op, last op, weak reference to the storage]. A
    # storage that died leaves its address to a new one: its buffer is closed then. (Every
    # tensor was kept alive instead, so no address was reused: the trace held all the
    # activations the forward ever made, the whole forward's bytes at once, which a large
    # model's trace could not hold; now it holds what the forward itself holds.)
    live: dict[int, list] = {}
    closed: list[tuple[int, Buffer]] = []   # (creation number, buffer)
    created = [0]

    def size(t) -> int:
        per = (bytes_per_element if bytes_per_element is not None and t.is_floating_point()
               else t.element_size())   # integer tensors (indices, masks) keep their size
        return t.untyped_storage().nbytes() // t.element_size() * per

    def touch(t, step: int, create: bool, aux: bool = False) -> None:
        if not isinstance(t, torch.Tensor) or t.device.type == "meta":
            return
        if t.layout is not torch.strided:   # a sparse tensor: the storages it holds
            for part in dense_parts(t):
                touch(part, step, create, aux)
            return
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key in weights or storage.nbytes() == 0:
            return
        entry = live.get(key)
        if entry is not None and entry[3]() is None:   # dead: a new storage at its address
            close(entry)
            del live[key]
            entry = None
        if entry is not None:
            entry[2] = step
            entry[5] = False      # read (or written) again: a buffer the graph holds
        elif create:
            # a weak reference to the storage's Python object, which torch keeps while the
            # storage lives (as the engine's resident footprint does)
            live[key] = [size(t), step, step, weakref.ref(storage), created[0], aux]
            created[0] += 1

    def close(entry) -> None:
        if not entry[5]:   # an op's further output no later op read: not the graph's
            closed.append((entry[4], Buffer(entry[0], entry[1], entry[2])))

    class _Trace(ObserverMode):
        step = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.step += 1
            for t in tree_leaves((args, kwargs or {})):
                touch(t, self.step, create=False)
            for i, t in enumerate(tree_leaves(out)):
                touch(t, self.step, create=True, aux=i > 0)
            return out

    keywords = keywords or {}
    for x in (*inputs, *keywords.values()):
        touch(x, 0, create=True)
    mode = _Trace()
    # the settings the count runs under: the same ops, the same tensors
    with observed_as_counted(), torch.no_grad(), mode:
        out = module(*inputs, **keywords)
    for t in output_tensors(out):   # the outputs are read after the last op
        touch(t, mode.step + 1, create=True)
    for entry in live.values():
        close(entry)
    return [b for _, b in sorted(closed, key=lambda c: c[0])]   # in the order made


def output_tensors(out, depth: int = 6) -> list:
    """Every tensor a forward returned: torch's pytree leaves, and the tensors held by the
    objects among them (a ``transformers`` ``DynamicCache`` keeps its key and value tensors
    in per-layer objects that pytree does not open: they are outputs the caller keeps, which
    a trace that missed them took for dead after their last op). Objects are opened through
    their attributes, lists, tuples and dicts, ``depth`` levels deep, each once."""
    import torch
    from torch.utils._pytree import tree_leaves

    # a work list, not a recursive closure: a closure that calls itself is a reference
    # cycle, which would keep the tensors found alive until the collector ran (a count
    # block's resident footprint then held outputs that were already dead)
    found: list = []
    seen: set[int] = set()
    todo = [(leaf, 0) for leaf in tree_leaves(out)]
    for x, level in todo:   # in order (the first output first); appended to while read
        if id(x) in seen or level > depth:
            continue
        seen.add(id(x))
        if isinstance(x, torch.Tensor):
            found.append(x)
        elif isinstance(x, (list, tuple)):
            todo += [(v, level + 1) for v in x]
        elif isinstance(x, dict):
            todo += [(v, level + 1) for v in x.values()]
        elif hasattr(x, "__dict__") and not isinstance(x, (type, torch.nn.Module)):
            todo += [(v, level + 1) for v in vars(x).values()]
    return found


def live_peak_mode(start=()):
    """A dispatch mode that measures, while entered, the most bytes of storages alive at
    once: every storage counts from the first op that reads or makes it until it is freed
    (each storage once, views sharing it), and ``start``'s tensors (the weights, gradients,
    optimizer state and inputs alive before) from the start. ``mode.peak`` after the block:
    what a device holds at its fullest running the same ops eagerly (no allocator rounding,
    caching or fragmentation, no kernel workspace). Entered inside a counting block it sits
    on top of the counting mode, which still sees every op."""
    import torch
    from torch.utils._pytree import tree_leaves

    from sim.torch_engine.costs import dense_parts
    from sim.torch_engine.dispatch import ObserverMode

    class _LivePeak(ObserverMode):
        def __init__(self):
            super().__init__()
            self.live = self.peak = 0
            self._alive: dict[int, int] = {}   # storage address -> its bytes
            self._finalizers: list = []

        def _free(self, key: int, nbytes: int) -> None:
            if self._alive.pop(key, None) is not None:
                self.live -= nbytes

        def add(self, t) -> None:
            if not isinstance(t, torch.Tensor) or t.device.type == "meta":
                return
            if t.layout is not torch.strided:   # a sparse tensor: the storages it holds
                for part in dense_parts(t):
                    self.add(part)
                return
            try:
                storage = t.untyped_storage()
            except (RuntimeError, NotImplementedError):   # functorch wrappers
                return
            try:
                key, nbytes = storage.data_ptr(), storage.nbytes()
            except RuntimeError:   # a storage without data (torch's efficient zero tensor,
                return             # made by sgn's backward): no bytes held
            if nbytes == 0 or key in self._alive:
                return
            self._alive[key] = nbytes
            self.live += nbytes
            # torch keeps a storage's Python object while the storage lives: its death is
            # the storage's
            self._finalizers.append(weakref.finalize(storage, self._free, key, nbytes))

        def __exit__(self, *exc):
            # the storages that outlive the block (weights, gradients) keep no callback
            # into this mode
            for f in self._finalizers:
                f.detach()
            self._finalizers.clear()
            return super().__exit__(*exc)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            for t in tree_leaves((args, kwargs or {})):
                self.add(t)
            out = func(*args, **(kwargs or {}))
            for t in tree_leaves(out):
                self.add(t)
            self.peak = max(self.peak, self.live)
            return out

    mode = _LivePeak()
    for t in start:
        mode.add(t)
    mode.peak = mode.live
    return mode
