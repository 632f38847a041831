"""ScopeTracker: the module path an aten op runs in, forward and backward, the same every run.

Forward: global module pre/post hooks keep a stack of the modules whose ``forward`` is
running; the innermost one names the op. A module's path is its registered name below the
module that called it (``net.0``), so the path follows the call, and a module called by one
that does not register it (kept in a list, or passed in) is named by its class
(``prototypes.Sequential.1``).

Backward: an op belongs to the autograd node the engine is evaluating, and a node belongs
to the module whose forward created it. Nodes carry a sequence number taken from a
per-thread counter when they are created; each time the stack changes the tracker notes
the counter and the new path, so a node's path is the one noted last at or below its
number (a bisection). Parameters' ``AccumulateGrad`` nodes all share the largest number;
they take the path of the first module in the block that owns the parameter.

Why not ``torch.utils.module_tracker.ModuleTracker``: it keeps the running modules in a
set of names and leaves a module "running" in backward until the gradient of its inputs
arrives, which never happens when the inputs need no gradient. Several modules are then
running at once, the innermost is picked by the depth of its name, and ties fall to the
set's iteration order, which changes with the string hash seed of each process: the same
run gave 51 to 71 scopes. Nothing here orders by a hash or an object's address; dicts keyed
by modules or tensors are only looked up, never iterated.

Activation checkpointing (``torch.utils.checkpoint``) runs a forward again inside backward:
those module calls take the path of their last forward call (the stack is empty then), the
ops they run land in those modules' backward scopes (recomputing is backward's work), and
they call no ``on_enter``/``on_leave`` (they are no new forward calls: NeuroBench's activity
is the forward's).
The recomputation may stop part-way (torch stops it by raising once it has the tensors
backward needs): the leave hook is registered ``always_call``, so a forward that raised
leaves too; and every entry remembers the backward pass it was made in, so one made in a pass
that is no longer running is dropped whatever left it.

Limits: nodes created by a backward pass (``create_graph=True``) on another thread take a
number from that thread's counter and may be named wrongly; nodes made before the block
count at its root.
"""
from __future__ import annotations

import inspect
import sys
from bisect import bisect_right
from typing import Self

import torch
from torch import nn
from torch.nn.modules.module import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
)

_ACCUMULATE_GRAD = 2 ** 64 - 1   # the sequence number every AccumulateGrad node has

_WRAPPER_CLASSES: dict[type, bool] = {}


def _is_compile_wrapper(mod: nn.Module) -> bool:
    """``mod`` is ``torch.compile``'s wrapper (``OptimizedModule``, the model inside as
    ``_orig_mod``): no level of the paths, no call of its own (the model inside is the one
    that runs). Looked up once per class; dynamo is not imported for it."""
    cls = type(mod)
    wrapper = _WRAPPER_CLASSES.get(cls)
    if wrapper is None:
        eval_frame = sys.modules.get("torch._dynamo.eval_frame")
        wrapper = _WRAPPER_CLASSES[cls] = (eval_frame is not None
                                           and issubclass(cls, eval_frame.OptimizedModule))
    return wrapper


_SIGNATURES: dict[type, inspect.Signature | None] = {}


def _positional(mod: nn.Module, args: tuple, kwargs: dict) -> tuple:
    """``mod``'s call arguments as one tuple in its ``forward``'s parameter order (the
    layer records read a layer's inputs by position), the defaults of parameters not given
    left out after the last one given; ``args`` unchanged when forward's signature cannot
    be read or does not take them."""
    cls = type(mod)
    if cls not in _SIGNATURES:
        try:
            _SIGNATURES[cls] = inspect.signature(mod.forward)
        except (TypeError, ValueError):
            _SIGNATURES[cls] = None
    sig = _SIGNATURES[cls]
    if sig is None:
        return args
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return args
    params = sig.parameters
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY,
                                                         p.POSITIONAL_OR_KEYWORD)]
    last = max((k for k, n in enumerate(names) if n in bound.arguments), default=-1)
    out = [bound.arguments.get(n, params[n].default) for n in names[:last + 1]]
    out += [a for n, p in params.items() if p.kind == p.VAR_POSITIONAL
            for a in bound.arguments.get(n, ())]
    return tuple(out)


class ScopeTracker:
    """Context manager: ``tracker.where()`` is ``(module path, in backward)`` for the running op.

    The path is ``""`` at the root (ops outside any module, or in the outermost module's own
    code) and dotted below it (``0.attn.qkv``).
    """

    def __init__(self, on_enter=None, on_leave=None, placed=()):
        # on_enter(mod, path, args) / on_leave(mod, path, args, out): called for every module
        # whose forward runs, with its path (the engine records layers and activity there)
        self._on_enter, self._on_leave = on_enter, on_leave
        # the models the device compiled: a part of one called directly (a policy's
        # ``logits`` method running its embedding and head) keeps its path in that model
        self._placed = tuple(placed)
        self._outer_paths: dict[nn.Module, str] = {}
        # (module, path, graph task id when it was entered: -1 in forward)
        self._stack: list[tuple[nn.Module, str, int]] = []
        self._forward_paths: dict[nn.Module, str] = {}   # module -> path of its last forward
        self._names: dict[nn.Module, dict[nn.Module, str]] = {}  # caller -> {descendant: name}
        self._starts: list[int] = []   # sequence numbers at which the path changed ...
        self._paths: list[str] = []    # ... and the path from there on
        self._param_paths: dict[torch.Tensor, str] = {}
        self._handles = []

    def __enter__(self) -> Self:
        self._mark("")
        self._handles = [register_module_forward_pre_hook(self._enter_module),
                         # always_call: a forward that raises leaves too (a recomputation
                         # that checkpointing stops part-way raises to stop it)
                         register_module_forward_hook(self._leave_module, always_call=True,
                                                      with_kwargs=True)]
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _names_in(self, caller: nn.Module) -> dict[nn.Module, str]:
        """``caller``'s descendants by their names in it (cached per caller)."""
        names = self._names.get(caller)
        if names is None:
            names = {}
            for name, sub in caller.named_modules(remove_duplicate=False):
                names.setdefault(sub, name)     # first registered name wins, as in state_dict
            self._names[caller] = names
        return names

    def _relative_name(self, caller: nn.Module, mod: nn.Module) -> str:
        name = self._names_in(caller).get(mod)
        return type(mod).__name__ if name is None else name

    def _enter_module(self, mod: nn.Module, args) -> None:
        if _is_compile_wrapper(mod):
            return
        task = torch._C._current_graph_task_id()
        self._drop_stale(task)
        if self._stack:
            caller, caller_path, _ = self._stack[-1]
            name = self._relative_name(caller, mod)
            path = ".".join(p for p in (caller_path, name) if p)
        elif task != -1:    # recomputed inside backward (checkpointing): its forward's path
            path = self._forward_paths.get(mod, "")
        else:
            # the outermost module is the block's root; a part of a compiled model called
            # on its own keeps its name in that model (else its layers would be recorded
            # as "", "0", "1" ... and take the scopes of the root)
            path = self._outer_path(mod)
        if task == -1:
            self._forward_paths[mod] = path
        self._stack.append((mod, path, task))
        # a forward recomputed inside backward is no new call of the module: no callbacks
        # (the engine's layer records, NeuroBench activity and step events are the forward's)
        if self._on_enter is not None and task == -1:
            self._on_enter(mod, path, args)
        # the module's own registry (what ``parameters(recurse=False)`` walks, without its
        # generator and duplicate set: this runs on every module call, issue 36)
        for p in mod._parameters.values():
            if p is not None:
                self._param_paths.setdefault(p, path)
        self._mark(path)

    def _outer_path(self, mod: nn.Module) -> str:
        path = self._outer_paths.get(mod)
        if path is None:
            path = ""
            if not any(mod is m for m in self._placed):
                path = next((self._names_in(model)[mod] for model in self._placed
                             if mod in self._names_in(model)), "")
            self._outer_paths[mod] = path
        return path

    def _leave_module(self, mod: nn.Module, args, *rest) -> None:
        if _is_compile_wrapper(mod):
            return
        # (kwargs, out); torch calls an always_call hook (args, out) when forward raised
        kwargs, out = rest if len(rest) == 2 else ({}, rest[0])
        if kwargs:   # inputs given by name (cell(x, hx=h), fc(input=x)): in forward's order
            args = _positional(mod, args, kwargs)
        # pop down to ``mod``: entries above it are calls that never left (a hook another
        # library removed, say); a forward that raised leaves too (always_call)
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] is mod:
                # out None: the forward raised (the hook is always_call), no call to record
                if self._on_leave is not None and self._stack[i][2] == -1 and out is not None:
                    self._on_leave(mod, self._stack[i][1], args, out)
                del self._stack[i:]
                break
        self._mark(self._stack[-1][1] if self._stack else "")

    def _drop_stale(self, task: int) -> None:
        """Drop the entries made inside a backward pass other than ``task`` (it ended, and a
        recomputation that stopped part-way left them)."""
        stack = self._stack
        while stack and stack[-1][2] != -1 and stack[-1][2] != task:
            stack.pop()

    def _mark(self, path: str) -> None:
        seq = torch._C._autograd._get_sequence_nr()   # the number the next node will get
        if self._starts and self._starts[-1] == seq:
            self._paths[-1] = path                    # no node was made under the last path
        elif not self._paths or self._paths[-1] != path:
            self._starts.append(seq)
            self._paths.append(path)

    def where(self) -> tuple[str, bool]:
        """``(path, backward)`` of the op running now."""
        task = torch._C._current_graph_task_id()
        stack = self._stack
        if task == -1:
            if stack and stack[-1][2] != -1:
                self._drop_stale(task)
            return (stack[-1][1] if stack else ""), False
        if stack and stack[-1][2] == task:   # a forward recomputed inside this backward
            return stack[-1][1], True
        node = torch._C._current_autograd_node()
        if node is None:
            return "", True
        seq = node._sequence_nr()
        if seq == _ACCUMULATE_GRAD:
            return self._param_paths.get(getattr(node, "variable", None), ""), True
        i = bisect_right(self._starts, seq) - 1
        return (self._paths[i] if i >= 0 else ""), True
