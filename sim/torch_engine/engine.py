"""TorchDevice: run torch modules on CUDA or CPU and count their ops and bytes in the ledger.

Counting happens in a ``TorchDispatchMode``: every aten op that executes (forward,
backward and optimizer steps alike) is priced by :func:`sim.torch_engine.costs.op_cost`,
and :class:`sim.torch_engine.scopes.ScopeTracker` tells which module it belongs to (in
backward: the module whose forward made the autograd node being run), so a ledger scope
reads ``train/net.0/forward`` or ``train/net.0/backward``, the same every run. Counts are
kept in local dicts and flushed into the ledger once, when the counting block ends.

What counting costs (issue 36): a training loop repeats the same op calls every step, so an
op's price is computed once per call signature and looked up after
(:class:`sim.torch_engine.costs.CostMemo`, one per device, kept across blocks). Why the
ledger stays exactly that of pricing every call: the signature holds everything the price
is a function of (the op; every tensor's shape, strides, dtype, device and which arguments
are the same tensor; every non-float argument), ops whose price reads tensor values are
never memoised (``costs.VALUE_DEPENDENT``: a boolean-mask ``index_put_``), and nothing
is replayed at a coarser grain than one op, so data-dependent control flow (a branch on a
tensor's value) prices whichever ops ran, each by its own signature. The scope, the kernel
launch, the resident storages and the NeuroBench activity (non-zero inputs and outputs)
are taken from every call as before: they depend on where and on what data the op ran.
Views, allocations and profiler markers (``costs.is_free``) cost nothing whatever their
arguments and skip the signature and the scope lookup. ``dev.cost_memo.verify = True``
prices every call in full as well and raises on a difference; the tests compare memoised
and full ledgers on an MLP, a CNN and a model with data-dependent branches and masks.
Step replay (opt-in, ``TorchDevice(..., replay=True)``, :mod:`sim.torch_engine.replay`)
goes one grain up: a training step seen before is checked op by op and module call by
module call against its record, and its recorded tally added once; it saves the pricing,
not the interception (``bench/RESULTS.md``, issue 36).

Counts are those of the ops torch actually runs, and torch's choice can depend on Python
references: autograd takes a fresh gradient into ``.grad`` when nothing else holds it and
copies it when something does. A thread sampling this thread's frames (Dask's worker
profiler) holds them for a moment and can add a copy kernel; ``deploy.sweep`` pauses it.
"""
from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from hw_profiles.errors import first_names
from sim.device import Device, register_engine
from sim.errors import ModelError
from sim.torch_engine.activity import (
    UNCOUNTED_ACTIVITY,
    LayerRecorder,
    model_facts,
    uninitialized_parameters,
)
from sim.torch_engine.costs import (
    CostMemo,
    dense_parts,
    mutated_args,
    op_signature,
    packed_weights,
    reads_selected_rows_of_first_arg,
    source_bytes_gathered,
)
from sim.torch_engine.dispatch import ObserverMode, observed_as_counted
from sim.torch_engine.replay import (
    ENTER,
    FREE,
    FULL,
    LEAVE,
    PRICED,
    UNCOUNTED,
    ReplayingMode,
    StepReplay,
    never_replayed,
    output_meta,
)
from sim.torch_engine.scopes import ScopeTracker


class _CountingMode(ReplayingMode, ObserverMode):
    """Prices every aten op into per-scope local tallies."""

    def __init__(self, base: str, tracker: ScopeTracker, memo: CostMemo,
                 steps: StepReplay | None = None):
        super().__init__()
        self.bases = [base]   # the count() blocks open now, outermost first
        self.tracker = tracker
        self.memo = memo
        # step replay (sim/torch_engine/replay.py), when the device enables it: the record
        # being followed and the position in it, or the ops of the step being recorded
        self.steps = steps
        self._key: tuple | None = None
        self._replay: list | None = None
        self._pos = 0
        self._rec: list | None = None
        self.ops: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.bytes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.uncounted: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.resident = _Resident()
        self._work = 0   # calls seen that do work, priced or uncounted (never free ones)
        # (module path, backward) -> scope name for the blocks open now: the name is built
        # once, not joined per op (issue 36); cleared when a block opens or closes
        self._scopes: dict[tuple[str, bool], str] = {}

    def push(self, base: str) -> None:
        """An inner count() block opens: its ops land below ``base``."""
        self.end_step()   # the recorded scopes no longer apply
        self.bases.append(base)
        self._scopes.clear()

    def pop(self) -> None:
        self.end_step()
        self.bases.pop()
        self._scopes.clear()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        whole = _ARRIVES_WHOLE.get(id(func))
        if whole is None:
            whole = _ARRIVES_WHOLE[id(func)] = (_has_composite_kernel(func)
                                                or _python_custom_op(func))
        out = _NOT_RUN
        if whole is True:
            # a CompositeImplicitAutograd op (linear, conv2d, layer_norm, ...) reaches the
            # mode undecomposed only where autograd's dispatch keys are off (under
            # torch.inference_mode): run as ATen's composite kernel, the ops it stands for,
            # with this mode entered again around them (as torch's FlopCounterMode does), so
            # they are counted as under no_grad; the op itself has no price (inference mode
            # counted a Linear's MACs as nothing). ATen's kernel, not torch's Python
            # decomposition (``func.decompose``): an eval dropout's returns its input, the
            # Python one a clone, a kernel no_grad does not run. Limit: the inner ops run
            # below autograd here, where a choice made on which tensors require gradients
            # can differ from torch's own run: matmul of a non-contiguous 3-D input by a
            # weight (nn.MultiheadAttention's projections) takes one bmm where torch copies
            # the input and folds it into an mm; the MACs are the same, 3 copy kernels of a
            # TransformerEncoderLayer fewer (tests/sim/test_torch_engine_inference_mode.py)
            if not any(isinstance(t, torch.Tensor) and t.is_nested
                       for t in (*args, *kwargs.values())):   # nested: their own kernels
                with self:
                    return func._op_dk(_COMPOSITE, *args, **kwargs)
        elif whole:
            # a torch.library.custom_op implemented in Python (a user's own op; torch's
            # chunked linear_cross_entropy): opaque to the mode, so its kernel runs with the
            # mode entered again and is counted by the torch ops it runs. Where those do no
            # work the mode can price (the op computes in numpy or C), the op itself is
            # reported uncounted below; one launching Triton kernels is never entered
            kernel = _custom_kernel(whole, args, kwargs)
            if kernel is not None:
                before = self._work
                with self:
                    out = kernel(*args, **kwargs)
                if self._work != before:
                    return out
        if out is _NOT_RUN:
            out = func(*args, **kwargs)
        replay = self._replay
        if replay is not None:
            # a replayed step: the op and its output's shapes must be the recorded ones
            i = self._pos
            if i < len(replay):
                entry = replay[i]
                # an op with a price: its call's signature, which holds its output's
                # meta and what else its price reads (a tensor from outside the step's
                # key, a non-tensor argument); any other op: its output's shapes and dtypes
                sig = entry[5]
                if entry[0] is func and (entry[1] == output_meta(out) if sig is None
                                         else sig == op_signature(func, args, kwargs, out)):
                    self._pos = i + 1
                    kind = entry[2]
                    if kind == PRICED:
                        self._work += 1
                        self.resident.touch(func, args, kwargs, out)
                    elif kind == UNCOUNTED:
                        self._work += 1
                    elif kind == FULL:
                        self._count(func, args, kwargs, out)
                    if self.steps.verify and kind != FULL:
                        self._check(entry, func, args, kwargs, out)
                    return out
            self._diverge()
        scope, cost = self._count(func, args, kwargs, out)
        rec = self._rec
        if rec is not None:
            sig = None
            if never_replayed(func):
                kind = FULL
            elif scope is None:
                kind = FREE
            else:
                # no signature (a sparse tensor's op, an argument it cannot key on): its
                # price may read more than shapes, so it is priced on every call
                sig = op_signature(func, args, kwargs, out)
                kind = FULL if sig is None else UNCOUNTED if cost[3] else PRICED
            rec.append((func, output_meta(out), kind, scope, cost, sig))
        return out

    def _count(self, func, args, kwargs, out) -> tuple[str | None, tuple]:
        """Price one call into the tallies: (its scope, None for a free op; its cost)."""
        cost = self.memo.cost(func, args, kwargs, out)
        counts, read, write, uncounted = cost
        if uncounted or counts or read or write:
            self._work += 1   # calls that do work (priced or not): see the custom ops above
        if uncounted:
            scope = self._scope_name(*self.tracker.where())
            self.uncounted[scope][uncounted] += 1
            return scope, cost
        # a free op (a view, an allocation) records nothing: no scope to look up;
        # an op that computes or moves bytes runs one kernel (an execution model input)
        # and every tensor it touches may stay resident after the block
        if counts or read or write:
            scope = self._scope_name(*self.tracker.where())
            tally = self.ops[scope]
            for op, n in counts.items():
                tally[op] += n
            tally["kernel_launch"] += 1
            if read or write:
                b = self.bytes[scope]
                b[0] += read
                b[1] += write
            self.resident.touch(func, args, kwargs, out)
            return scope, cost
        return None, cost


_COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd
_NOT_RUN = object()   # __torch_dispatch__: the op has not run yet
_ARRIVES_WHOLE: dict[int, Any] = {}
"""id(op) -> True where ATen has a CompositeImplicitAutograd kernel for the op (it then reaches
a dispatch mode only undecomposed, under inference mode), the op's ``CustomOpDef`` where it
is a Python ``torch.library.custom_op`` (:func:`_python_custom_op`), else False; see
:meth:`_CountingMode.__torch_dispatch__`."""


def _python_custom_op(func):
    """The ``CustomOpDef`` of a ``torch.library.custom_op`` implemented in Python that
    launches no Triton kernel, or False (ATen's ops, C++ and Triton custom ops)."""
    if func.namespace in ("aten", "prim", "prims", "profiler"):
        return False
    try:
        from torch._library.custom_ops import _maybe_get_opdef
        opdef = _maybe_get_opdef(func._name)
    except (ImportError, AttributeError):   # torch's private registry moved
        return False
    if opdef is None or getattr(opdef, "_used_triton_kernels", None) \
            or not getattr(opdef, "_backend_fns", None):
        return False
    return opdef


def _custom_kernel(opdef, args, kwargs):
    """``opdef``'s kernel for the device of the call's first tensor (its kernel for every
    device where it has no device's own), or None."""
    first = next((t for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor)), None)
    fns = opdef._backend_fns
    return fns.get(first.device.type if first is not None else None) or fns.get(None)


_BACKEND_KERNELS = ("CPU", "CUDA", "XPU", "MPS", "CompositeExplicitAutograd",
                    "CompositeExplicitAutogradNonFunctional")


def _has_composite_kernel(func) -> bool:
    """ATen runs ``func`` as its CompositeImplicitAutograd kernel on every backend: it has
    one, and no kernel of a backend or an explicit composite that would run instead."""
    name = func.name()
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        return has(name, _COMPOSITE) and not any(has(name, k) for k in _BACKEND_KERNELS)
    except RuntimeError:
        # not in the dispatcher (``aten.sym_size``, which a jagged nested tensor's size
        # query sends from C++ where an exception aborts the process): no composite kernel
        return False


class _Resident:
    """Storages an op touched, to measure a count block's resident footprint at its end.

    Keyed by storage address; holds a weak reference to the storage itself, so a storage
    counts while it is alive, whichever tensor keeps it (a gradient that autograd detached
    from the kernel's output keeps that output's storage, as the storage's written one).
    At the end of a block, the live storages are the state the block keeps (parameters,
    optimizer state, gradients, data on the device); those some op wrote are its writable
    part. Activations that die inside the block are not in it. A storage that ops only
    gathered rows from and never wrote (the training tensor a mini-batch is indexed out of)
    is streamed data: it is read-only state that the block passes through, not state it
    reuses, so it is reported apart, with the bytes the block's ops gathered from it (what
    it reads of that data, which is all DRAM must supply of it).
    """

    def __init__(self):
        # address -> [storage bytes, written, weak reference to the storage, only gathered
        # from so far, bytes gathered from it]
        self.seen: dict[int, list] = {}
        # address -> ops that wrote it: a tensor's ``_version`` misses in-place ``_foreach_``
        # updates run under a dispatch mode (the optimizers' step), this does not
        self.writes: dict[int, int] = {}
        # id(tensor) -> (weakref to it, its data address, its storage's address, its entry
        # in ``seen``) of the tensors already added: parameters, gradients and optimizer
        # state are the same tensor objects every step, and a tensor known alive at the same
        # data address is on the same storage (two live storages never share an address):
        # no storage object, weakref or lookup for it (issue 36)
        self._known: dict[int, tuple] = {}
        self._plans: dict[int, tuple] = {}   # id(op) -> (written positions, gathers)
        # id -> (packed-weight object, its stored bytes): a quantized model's weights
        self.packed: dict[int, tuple] = {}

    def writes_to(self, t: torch.Tensor) -> int:
        """Ops in this block that wrote ``t``'s storage."""
        return self.writes.get(t.untyped_storage().data_ptr(), 0)

    def _add(self, t: torch.Tensor, written: bool, gathered: bool = False) -> list | None:
        """Note ``t``'s storage as touched; returns its entry (None: no plain storage)."""
        known = self._known.get(id(t))
        if known is not None and known[0]() is t and known[1] == t.data_ptr():
            # seen alive on the same memory: on the storage of the entry it was added to
            ptr, entry = known[2], known[3]
        else:
            if t.layout is not torch.strided:   # a sparse tensor: the storages it holds
                for part in dense_parts(t):
                    self._add(part, written, gathered)
                return None
            try:
                st = t.untyped_storage()
            except (RuntimeError, NotImplementedError):   # meta: no plain storage
                return None
            ptr = st.data_ptr()
            entry = self.seen.get(ptr)
            # a storage seen before at this address and dead since: a new storage reuses
            # the memory. (Before, liveness was that of the tensor objects seen on it, and a
            # gradient detached from its kernel's output, alive on that output's storage,
            # reset the entry and lost its written flag: issue 36.)
            if entry is None or entry[2]() is None:
                # a weak reference to the storage's Python object, which torch keeps as
                # long as the storage lives (PyObject preservation). Not torch's
                # StorageWeakRef: on torch 2.13 it keeps a dead storage's memory allocated
                # until the reference goes, so a long count block held every activation
                # it had ever seen (22 MB a step on chunk attention's training)
                entry = self.seen[ptr] = [st.nbytes(), False, weakref.ref(st), True, 0]
            else:
                entry[0] = max(entry[0], st.nbytes())
            if len(self._known) > 4096:   # ids of dead tensors pile up: start again
                self._known.clear()
            self._known[id(t)] = (weakref.ref(t), t.data_ptr(), ptr, entry)
        if written:
            entry[1] = True
            self.writes[ptr] = self.writes.get(ptr, 0) + 1
        if not gathered:
            entry[3] = False
        return entry

    def touch(self, func, args, kwargs, out) -> None:
        # which arguments the op writes and gathers from, per op: keyed by id (an
        # OpOverload's own __hash__ is Python code; this runs for every priced op, issue 36)
        plan = self._plans.get(id(func))
        if plan is None:
            plan = self._plans[id(func)] = (mutated_args(func),
                                            reads_selected_rows_of_first_arg(func))
        mutated, gathers = plan
        add = self._add
        for i, a in enumerate(args):
            if isinstance(a, _Tensor):
                entry = add(a, i in mutated, gathers and i == 0)
                if gathers and i == 0 and entry is not None:
                    entry[4] += source_bytes_gathered(getattr(func, "overloadpacket", func), args,
                                                      _flat_tensors(out))
            elif isinstance(a, (list, tuple)):
                written, gathered = i in mutated, gathers and i == 0
                for t in a:
                    if isinstance(t, _Tensor):
                        add(t, written, gathered)
                    elif isinstance(t, _ScriptObject):   # a dynamic RNN's packed cells
                        self._add_packed(t)
            elif isinstance(a, _ScriptObject):   # a quantized kernel's packed weights
                self._add_packed(a)
        if kwargs:
            for a in kwargs.values():
                for t in _flat_tensors(a):
                    add(t, False)
        if isinstance(out, _Tensor):
            add(out, True)
        else:
            for t in _flat_tensors(out):
                add(t, True)

    def _add_packed(self, obj) -> None:
        """A torch.ao packed-weight object an op read (a quantized Linear's, convolution's,
        embedding's, RNN cell's): read-only state of the bytes it stores, held until the
        block ends (a script object takes no weak reference; its module holds it anyway)."""
        if id(obj) not in self.packed:
            self.packed[id(obj)] = (obj, sum(p.stored for p in packed_weights(obj)))

    def footprint(self) -> tuple[int, int, int, int]:
        """(writable, read-only, streamed, streamed read) bytes of the storages still alive
        and of the packed weights read; streamed is the part of read-only that ops only
        gathered rows from, streamed read what they gathered of it (at most each storage's
        size: a row gathered twice comes from DRAM once at most)."""
        w = streamed = streamed_read = 0
        r = sum(nbytes for _, nbytes in self.packed.values())
        for nbytes, written, storage, gathered_only, gathered in self.seen.values():
            if storage() is not None:
                if written:
                    w += nbytes
                else:
                    r += nbytes
                    if gathered_only:
                        streamed += nbytes
                        streamed_read += min(gathered, nbytes)
        return w, r, streamed, streamed_read


_Tensor = torch.Tensor
_ScriptObject = torch.ScriptObject


def _flat_tensors(x) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for t in x if isinstance(t, torch.Tensor)]
    return []


class TorchDevice(Device):
    """Standard GPU backend: torch on CUDA when the profile is a GPU and CUDA exists, else CPU.

    Parameters
    ----------
    profile : str, path or HardwareProfile
        A ``gpu`` or ``cpu`` profile, or a ``bitwise`` one (a microcontroller running the
        model's float kernels; ``sim.device(p, engine="torch")``).
    prefer_cuda : bool
        Use CUDA for a GPU profile when available (default). Counts do not depend on it.
    replay : bool or "verify"
        Step replay (:mod:`sim.torch_engine.replay`): a step (one outermost module call to
        the next) whose key was counted before is checked op by op against its record and
        its tally added once, instead of pricing each op; the ledger is the same. ``"verify"``
        prices every replayed op in full as well and raises on a difference. Default off;
        also settable later as ``dev.replay``.

    Examples
    --------
    >>> import torch
    >>> dev = TorchDevice("a100")
    >>> lin = dev.compile(torch.nn.Linear(4, 3))
    >>> _ = dev.run(lin, torch.zeros(2, 4))
    >>> dev.ledger.total_ops()["mac_fp32"]   # 2 samples x 4 inputs x 3 outputs
    24
    """

    # bitwise: a torch module on a microcontroller profile, priced with its memories
    # (sim/execution/mcu.py); chosen with sim.device(profile, engine="torch")
    kinds = ("gpu", "cpu", "bitwise")

    def __init__(self, profile, prefer_cuda: bool = True, replay: bool | str = False):
        super().__init__(profile)  # refuses a profile of another kind (Device.kinds)
        use_cuda = prefer_cuda and self.profile.kind == "gpu" and torch.cuda.is_available()
        self.torch_device = torch.device("cuda" if use_cuda else "cpu")
        self.footprint_bytes = 0
        self._placed: list[torch.nn.Module] = []   # compiled modules (record_model)
        self._buffer_bytes: dict[int, int] = {}      # id(compiled module) -> its buffers' B
        # every model the ledger's facts cover (compiled, or run outermost with parameters),
        # in the order first seen, and the name each was recorded under (see _record_models)
        self._modelled: list[torch.nn.Module] = []
        self._model_names: dict[int, str] = {}
        self._deployed: list[torch.nn.Module] = []   # marked by deploy()
        self._mode: _CountingMode | None = None   # the outermost count() block's, while open
        # the cost of every distinct op call, kept across blocks (costs.CostMemo); set
        # ``dev.cost_memo.verify = True`` to price every call in full as well and compare
        self.cost_memo = CostMemo()
        self.replay = replay
        # the recorded steps (replay.py), kept across blocks as the cost memo is
        self.step_replay = StepReplay()

    @property
    def replay(self) -> bool | str:
        """Step replay: False (every op priced), True, or "verify" (see the class doc)."""
        return self._replay_setting

    @replay.setter
    def replay(self, value: bool | str) -> None:
        if value not in (False, True, "verify"):
            raise ModelError(f"[TorchDevice] replay = {value!r}: expected False, True or "
                             f"'verify'")
        self._replay_setting = value

    def check_fits(self, name: str, footprint: int) -> None:
        """A model ``name`` of ``footprint`` bytes (parameters and buffers as stored) fits
        the device, else a HardwareLimitError naming both sizes. A GPU/CPU holds the model in
        device memory; a microcontroller (bitwise profile, no offchip level) in its SRAM and
        flash together; the run's state is checked against each memory when its ledger is
        priced (sim/execution/mcu.py)."""
        levels = ["offchip"] if "offchip" in self.profile.memory else list(self.profile.memory)
        capacity = sum(self.profile.memory[lv].capacity_bytes.value for lv in levels)
        if footprint > capacity:
            self._limit_error(f"{name} parameters + buffers", f"{footprint} B",
                              " + ".join(f"memory.{lv}.capacity_bytes" for lv in levels),
                              f"{capacity:.0f} B", "use a smaller model or a profile with "
                              "more device memory")

    def compile(self, module: torch.nn.Module, stored_bytes: int | None = None) -> torch.nn.Module:
        """Move ``module`` to the device after checking its parameters fit device memory.

        ``stored_bytes``: the model's size as the target stores it when that differs from
        its tensors' own bytes (an fp32 module priced at int8); default the tensors' bytes."""
        if not isinstance(module, torch.nn.Module):
            raise ModelError(f"[TorchDevice.compile] expected a torch.nn.Module, got "
                             f"{type(module).__name__}")
        lazy = uninitialized_parameters(module)
        if lazy:
            raise ModelError(f"[TorchDevice.compile] {type(module).__name__} has lazy layers "
                             f"not sized yet ({first_names(lazy)}): their memory is "
                             "unknown until a first forward; run the model once on an input "
                             "batch before compile (torch's LazyModule convention)")
        facts = model_facts(module)
        # parameters and buffers, and a torch.ao quantized model's packed weights as stored
        footprint = (facts["parameter_bytes"] + facts["buffer_bytes"]
                     if stored_bytes is None else stored_bytes)
        self.check_fits(type(module).__name__, footprint)
        self.footprint_bytes = footprint
        meta = [n for n, t in [*module.named_parameters(), *module.named_buffers()]
                if t.device.type == "meta"]
        if meta:   # it fits (checked above), but has no weights to run
            raise ModelError(f"[TorchDevice.compile] {type(module).__name__} has parameters on "
                             f"the meta device ({first_names(meta)}): shapes without data, "
                             "which cannot run; build it on the CPU, or materialise it "
                             "(module.to_empty(device='cpu')) and initialise its weights")
        module = module.to(self.torch_device)
        if not any(m is module for m in self._placed):
            self._placed.append(module)
        # the ledger gets the model's facts when a counting block ends (_record_layers): a
        # run that counts nothing leaves its ledger empty
        self._buffer_bytes[id(module)] = facts["buffer_bytes"]
        return module

    def tensor(self, x, dtype=torch.float32) -> torch.Tensor:
        """``x`` (array or tensor) as a tensor on this device."""
        return torch.as_tensor(x, dtype=dtype, device=self.torch_device)

    @contextmanager
    def count(self, scope: str, samples: int = 0) -> Iterator[None]:
        """Count every torch op run inside the block into ``self.ledger`` under ``scope``.

        The rule of :meth:`Device.count`: the block records below the open ``Ledger.scope``
        blocks, blocks nest (an inner ``count("a")`` in ``count("train")`` records under
        ``train/a``), and ``samples`` (if > 0) are added to the block's own full scope when
        it ends. Below the block's scope, an op lands under the module path it ran in
        (``train/net.0/forward``, ``train/net.0/backward``; see ScopeTracker).

        The outermost block installs the dispatch mode and flushes its tallies into the
        ledger once, when it ends; an inner block pushes its name on that mode. The resident
        footprint (``Ledger.add_footprint``) is that of the outermost block: inner blocks
        share its state, and pricing loads a footprint once per recorded block.
        """
        with self.ledger.scope(scope):   # checks the name before anything runs
            if self._mode is not None:
                self._mode.push(scope)
                try:
                    yield
                finally:
                    self._mode.pop()
                if samples:
                    self.ledger.add_samples(samples)
                return
            recorder = LayerRecorder(lambda path: mode.forward_scope(path),
                                     lambda w: mode.resident.writes_to(w))
            steps = None
            if self._replay_setting:
                steps = self.step_replay
                steps.verify = self._replay_setting == "verify"

            def on_enter(mod, path, args):
                if path:
                    mode.module_event(ENTER, path)
                else:                  # an outermost module: a step starts
                    mode.start_step(mod, args)
                recorder.enter(mod, path, args)

            def on_leave(mod, path, args, out):
                mode.module_event(LEAVE, path)
                recorder.leave(mod, path, args, out)

            tracker = (ScopeTracker(on_enter=recorder.enter, on_leave=recorder.leave,
                                    placed=self._placed)
                       if steps is None else ScopeTracker(on_enter=on_enter,
                                                          on_leave=on_leave,
                                                          placed=self._placed))
            mode = self._mode = _CountingMode(scope, tracker, self.cost_memo, steps)
            try:
                # the fused attention fast path off, as for the lifetime trace (one place)
                with observed_as_counted(), tracker, mode:
                    yield
                    mode.end_step()   # the last step's tally, before the mode leaves
            finally:
                self._mode = None
        # flushed outside the block's Ledger.scope: the tallies' names start with ``scope``
        for name, tally in mode.ops.items():
            for op, n in tally.items():
                self.ledger.add(op, n, scope=name)
        for name, (read, write) in mode.bytes.items():
            self.ledger.add_bytes("offchip", read=read, write=write, scope=name)
        for name, bucket in mode.uncounted.items():
            for op, n in bucket.items():
                self.ledger.add_uncounted(op, n, scope=name)
        self._record_layers(recorder)
        if mode.resident.seen:
            writable, read_only, streamed, streamed_read = mode.resident.footprint()
            self.ledger.add_footprint(writable, read_only, scope=scope, streamed=streamed,
                                      streamed_read=streamed_read)
        if samples:
            self.ledger.add_samples(samples, scope=scope)

    def _record_layers(self, recorder: LayerRecorder) -> None:
        """Layers, activity and models of an outermost block into the ledger: every leaf
        that ran (its last call's output shape), NeuroBench activity under its layer's
        forward scope, and the facts of the compiled modules and of every outermost module
        with parameters, as they are now (after training: the trained weights; a compiled
        module's buffers as compiled)."""
        for path, (kind, shape, params, op) in recorder.layers.items():
            self.ledger.record_layer(path, kind, shape, params, op)
        recorder.flush()   # the counts kept on the device (CUDA): one read-back a block
        for name, calls in recorder.uncounted.items():
            self.ledger.add_uncounted(UNCOUNTED_ACTIVITY, calls, scope=name)
        for name, bucket in recorder.activity.items():
            for what, n in bucket.items():
                self.ledger.add_activity(what, n, scope=name)
        self._record_models(recorder.roots)

    def deploy(self, module: torch.nn.Module) -> torch.nn.Module:
        """Mark ``module`` as (one of) the model(s) the run deploys; returns it.

        NeuroBench's static metrics (Footprint, ParameterCount, ConnectionSparsity;
        :mod:`sim.neurobench`) are then those of the deployed modules only, not the sum of
        every model this device compiled or ran (a room's probes, per-iteration copies,
        auxiliary networks): ``Ledger.mark_deployed`` on its name. Its facts are recorded
        now, as it is (call it after training), and again whenever a counting block ends; a
        deployed module inside another model seen keeps its own entry (the other one's
        entry then leaves out the tensors they share).

        Examples
        --------
        >>> import torch
        >>> dev = TorchDevice("a100")
        >>> net, probe = torch.nn.Linear(4, 3), torch.nn.Linear(4, 1)
        >>> _ = dev.run(net, torch.zeros(2, 4)); _ = dev.run(probe, torch.zeros(2, 4))
        >>> _ = dev.deploy(net)
        >>> dev.ledger.deployed()
        ['Linear']
        """
        if not isinstance(module, torch.nn.Module):
            raise ModelError(f"[TorchDevice.deploy] expected a torch.nn.Module, got "
                             f"{type(module).__name__}")
        if not any(m is module for m in self._deployed):
            self._deployed.append(module)
        self._record_models((), placed=False)   # compiled models not run yet: not now
        return module

    def _record_models(self, roots, placed: bool = True) -> None:
        """The facts of every model this device compiled or ran outermost (with parameters)
        into the ledger, as they are now. A model inside another one seen (a compiled
        encoder run inside a wrapper, one part of a compiled model run alone) is counted
        with the one it belongs to, unless it is deployed (:meth:`deploy`: its own entry,
        counted first), and a tensor two models share once; each model keeps one name for
        the device's life (its class, ``#2``... when a class repeats), and the names of
        models now inside another are dropped from the ledger. ``placed=False``: the
        compiled models not recorded yet wait for a counting block to end."""
        for m in [*(self._placed if placed else ()), *self._deployed, *roots]:
            if (not any(m is seen for seen in self._modelled)
                    and (any(m is p for p in [*self._placed, *self._deployed])
                         or next(m.parameters(), None) is not None)):
                self._modelled.append(m)
        members = [{id(sub) for sub in m.modules()} for m in self._modelled]
        tops = [m for k, m in enumerate(self._modelled)
                if not any(j != k and id(m) in inside for j, inside in enumerate(members))]
        # deployed models first, each whole (one inside another deployed one: with it), so
        # the tensors they share with a probe or wrapper count in theirs
        inside_deployed = [{id(sub) for sub in d.modules()} for d in self._deployed]
        shown = [d for k, d in enumerate(self._deployed)
                 if not any(j != k and id(d) in inside
                            for j, inside in enumerate(inside_deployed))]
        shown += [m for m in tops if not any(m is d for d in shown)]
        for m in self._modelled:
            if not any(m is r for r in shown) and id(m) in self._model_names:
                self.ledger.forget_model(self._model_names[id(m)])
        counted: set[int] = set()
        for module in shown:
            facts = model_facts(module, counted)
            # buffers as compiled: state buffers that take the batch's shape when run
            # (snnTorch's membranes) are the run's state, not the model (NeuroBench's
            # Footprint is taken before the run)
            facts["buffer_bytes"] = self._buffer_bytes.get(id(module), facts["buffer_bytes"])
            self.ledger.record_model(self._model_name(module), **facts)
        for d in self._deployed:
            if any(d is r for r in shown):
                self.ledger.mark_deployed(self._model_name(d))

    def _model_name(self, module: torch.nn.Module) -> str:
        """The ledger name of ``module``'s facts: its class name, ``#k`` added for the k-th
        model of that class this device met."""
        if id(module) not in self._model_names:
            base = type(module).__name__
            taken = set(self._model_names.values())
            name, k = base, 1
            while name in taken:
                k += 1
                name = f"{base}#{k}"
            self._model_names[id(module)] = name
        return self._model_names[id(module)]

    def run(self, module: torch.nn.Module, x: torch.Tensor, scope: str = "infer") -> Any:
        """Inference: ``module(x)`` without gradients, counted under ``scope``; ``x`` is
        moved to the engine's device first (a host-device copy, not counted)."""
        if not isinstance(x, torch.Tensor):
            raise ModelError(f"TorchDevice.run: x is a {type(x).__name__}, not a tensor; run "
                             "takes one batch-first tensor (for other inputs count the call: "
                             "with dev.count('infer', samples=N): module(**inputs))")
        x = x.to(self.torch_device)
        with torch.no_grad(), self.count(scope, samples=int(x.shape[0]) if x.dim() else 1):
            return module(x)


register_engine("gpu", TorchDevice)
register_engine("cpu", TorchDevice)
