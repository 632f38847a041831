"""Step replay: the tally of a training step counted once per step signature and replayed for
the identical steps after it (issue 36; opt-in, ``TorchDevice(..., replay=True)``).

A *step* is what runs from one call of an outermost module (the model's forward, a loss
module) to the next call of one, or to the end of the counting block: the forward, the loss,
the backward and the optimizer step of a training loop. Its *key* is known when it starts:
the module, the open count blocks, the grad and inference modes, the module's training flag
and the signature of its inputs (shapes, strides, dtypes, devices, aliasing; the cost
memo's :func:`sim.torch_engine.costs.op_signature` rules). The first step of a key is counted
in full and *recorded*: for every op in order, the op, its output's shapes and dtypes, and
what counting it added (ledger scope, op counts, bytes, or nothing for a free op). A later
step with that key is *replayed*: the dispatch mode still sees every op, but instead of
looking up the op's price and scope and adding to the tallies, it checks that the op is the
recorded one at that position with the same output shapes and dtypes (and, for an op with a
price, the same signature), and adds the recorded step's tally once when the step ends.
Module calls are part of the record: each start and end of a module's forward is checked
against it too, in order among the ops, so every op lands under the module path it was
recorded under (two layers of the same shape run by a branch are told apart), forward and
backward (a backward op's path is that of the forward module that made its autograd node:
the same order of ops and module calls makes the same nodes under the same paths).

Why the ledger is exactly that of full counting:

- Which ops run is checked op by op, so a Python branch on a value (``if x.sum() > 0``), a
  training flag, a grad mode or an optimizer's first step (state created) that runs other
  ops is seen at the first op that differs. From there the step is counted in full: the
  ops matched so far add their recorded tallies, and the step is recorded again as what
  runs for its key now.
- A step that ends early with every op so far matched (the last step of a block, which
  lacks the next batch's slicing) adds the tally of the part that ran.
- A replayed op that computes or moves bytes (priced or uncounted) must also have the
  recorded call's signature (:func:`sim.torch_engine.costs.op_signature`: the shapes,
  strides, dtypes and devices of every tensor argument and output, the non-tensor
  arguments), which is everything its price reads: a tensor from outside the step's key (a
  raw batch resized for the next step, a tensor passed by keyword, the weight of a layer
  swapped for one of another kernel size, a broadcast label) or a non-tensor argument that
  changed makes the step fall back at that op. An op with no signature (a sparse tensor's:
  its price reads how many values it stores) is priced in full on every call, as is one
  whose output has no sizes (a strided nested tensor: the step falls back there).
  ``replay="verify"`` prices every replayed op in full as well and raises on any
  difference, and the tests run models both ways.
- Ops whose output shape or price depends on tensor values (tagged ``dynamic_output_shape``:
  ``nonzero``, ``masked_select``, ``unique``, boolean indexing; and
  :data:`sim.torch_engine.costs.VALUE_DEPENDENT`, a boolean-mask ``index_put_``) are never
  replayed: in a replayed step they are priced in full each time, and the ops after them
  are still checked against the record (a different number of selected elements changes
  their shapes: the step falls back from there).
- What depends on data or on which tensors are alive is never replayed: the resident
  footprint still sees every tensor each op touches, and the NeuroBench activity and the
  layer records come from the module hooks, on every call.

Nested count blocks change the scopes ops land in: opening or closing one ends the step,
and the ops until the next outermost module call are counted in full.
"""
from __future__ import annotations

import torch

from sim.torch_engine.costs import VALUE_DEPENDENT, NoSignature, op_cost, sign_into

FREE, PRICED, UNCOUNTED, FULL, MODULE = 0, 1, 2, 3, 4
"""Kinds of a recorded entry: an op that is free (a view, an allocation: no tally, no
tensor touched), priced (a tally under a scope, and the tensors it touched are resident),
uncounted (an op with no cost rule: one uncounted call under a scope) or priced in full on
every call; or a module's forward starting or ending (the path ops land in changes)."""

ENTER, LEAVE = "enter", "leave"
"""The first item of a MODULE entry: ``(ENTER or LEAVE, module path, MODULE, None,
NO_COST, None)``."""
NO_COST: tuple = ({}, 0, 0, "")

_DYNAMIC = torch.Tag.dynamic_output_shape


def never_replayed(func) -> bool:
    """``func``'s output shape or its price reads tensor values: priced in full every call."""
    return (func in VALUE_DEPENDENT or func.overloadpacket in VALUE_DEPENDENT
            or _DYNAMIC in func.tags)


class _Unmatched:
    """The output meta of a tensor without sizes (a strided nested tensor): equal to
    nothing, so a step that makes one never replays past it (counted in full there)."""

    __slots__ = ()


def output_meta(out):
    """What a replayed op's output is checked on: shapes and dtypes of its tensors; for a
    Python scalar (``.item()``) its type only (a branch on its value shows in the ops run)."""
    if isinstance(out, torch.Tensor):
        try:
            return (out.shape, out.dtype)
        except RuntimeError:    # a strided nested tensor has no sizes
            return _Unmatched()
    if isinstance(out, (list, tuple)):
        return tuple([output_meta(o) for o in out])
    return type(out)


def step_key(mod: torch.nn.Module, args, bases: tuple) -> tuple | None:
    """The key of a step that starts with ``mod(*args)``; None when an input has no
    signature (another object, a sparse tensor): such a step is counted in full."""
    key: list = [id(mod), bases, torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
                 mod.training, len(args)]
    try:
        sign_into(args, key, {})
    except (NoSignature, RuntimeError):   # RuntimeError: a strided nested tensor's sizes
        return None
    return tuple(key)


class StepRecord:
    """One step's ops in order and their tally summed per scope.

    ``ops``: ``(func, output meta, kind, scope, cost, signature)`` per op, ``cost`` as
    :meth:`sim.torch_engine.costs.CostMemo.cost` returns it, ``signature`` the call's
    :func:`sim.torch_engine.costs.op_signature` for a priced or uncounted op (its price is
    replayed only for a call with that signature), else None. ``total``: scope ->
    ``[op counts, bytes read, bytes written, uncounted ops]`` over the ops of kind
    ``PRICED`` and ``UNCOUNTED`` (``FULL`` ops are added as they run).
    """

    __slots__ = ("ops", "total")

    def __init__(self, ops: list):
        self.ops = ops
        self.total = tally_of(ops)


def tally_of(ops) -> dict[str, list]:
    """Scope -> [op counts, read, written, uncounted] of the ``PRICED`` and ``UNCOUNTED``
    ops in ``ops``."""
    total: dict[str, list] = {}
    for entry in ops:
        kind = entry[2]
        if kind != PRICED and kind != UNCOUNTED:
            continue
        scope, (counts, read, write, uncounted) = entry[3], entry[4]
        t = total.get(scope)
        if t is None:
            t = total[scope] = [{}, 0, 0, {}]
        if uncounted:
            t[3][uncounted] = t[3].get(uncounted, 0) + 1
            continue
        tally = t[0]
        for op, n in counts.items():
            tally[op] = tally.get(op, 0) + n
        tally["kernel_launch"] = tally.get("kernel_launch", 0) + 1
        t[1] += read
        t[2] += write
    return total


class StepReplay:
    """The recorded steps of one device, kept across its count blocks, and what replay did.

    ``verify``: every replayed op is priced in full as well and a difference from its record
    (cost or scope) raises ``AssertionError``. At most ``limit`` keys are kept (a model fed
    ever-new shapes starts again from empty rather than grow without bound).
    """

    def __init__(self, verify: bool = False, limit: int = 10_000):
        self.verify = verify
        self.limit = limit
        self.records: dict[tuple, StepRecord] = {}
        self.replayed = 0     # steps whose every op matched its record (or a first part of it)
        self.recorded = 0     # steps counted in full and recorded (first of a key, or fallen back)
        self.diverged = 0     # replayed steps that ran another op than their record

    def store(self, key: tuple, ops: list) -> None:
        if len(self.records) >= self.limit:
            self.records.clear()
        self.records[key] = StepRecord(ops)


class ReplayingMode:
    """The step-replay half of the engine's counting mode (``_CountingMode``): steps start at
    outermost module calls, module calls and ops are checked against or appended to the
    record, and a step's tally is added when it ends. Uses the mode's ``steps``
    (:class:`StepReplay` or None), ``bases``, ``ops``/``bytes``/``uncounted`` tallies,
    ``tracker`` and ``_scope_name``; the mode's ``__torch_dispatch__`` follows the record."""

    def start_step(self, mod, args) -> None:
        """An outermost module is called: the step before ends, this one starts (replayed
        when its key was recorded, else recorded)."""
        if self.steps is None:
            return
        self.end_step()
        key = step_key(mod, args, tuple(self.bases))
        if key is None:
            return
        self._key = key
        record = self.steps.records.get(key)
        if record is None:
            self._rec = []
        else:
            self._replay, self._pos = record.ops, 0

    def module_event(self, event: str, path: str) -> None:
        """A module's forward starts or ends (``ENTER``/``LEAVE``) inside a step: checked
        against the record when replaying, appended to it when recording."""
        if self._replay is not None:
            i = self._pos
            replay = self._replay
            if i < len(replay) and replay[i][0] is event and replay[i][1] == path:
                self._pos = i + 1
                return
            self._diverge()
        if self._rec is not None:
            self._rec.append((event, path, MODULE, None, NO_COST, None))

    def end_step(self) -> None:
        """The step running ends: a replayed one adds its tally (the whole record's, or that
        of the part of it that ran), a recorded one is stored under its key."""
        steps = self.steps
        if steps is None or self._key is None:
            return
        if self._replay is not None:
            steps.replayed += 1
            ops = self._replay
            if self._pos == len(ops):
                self._add_tally(steps.records[self._key].total)
            else:
                # every op so far matched, and the step ended early: the last step of a
                # block (it lacks the next batch's slicing); the record is kept whole
                self._add_tally(tally_of(ops[:self._pos]))
        elif self._rec is not None:
            steps.recorded += 1
            steps.store(self._key, self._rec)
        self._key = self._replay = self._rec = None

    def _diverge(self) -> None:
        """The replayed step runs another op than its record: the ops matched so far add
        their recorded tallies, and the step is recorded in full from here."""
        self.steps.diverged += 1
        self._rec = self._replay[:self._pos]
        self._add_tally(tally_of(self._rec))
        self._replay = None

    def _add_tally(self, total: dict[str, list]) -> None:
        for scope, (counts, read, write, uncounted) in total.items():
            if counts:
                tally = self.ops[scope]
                for op, n in counts.items():
                    tally[op] += n
            if read or write:
                b = self.bytes[scope]
                b[0] += read
                b[1] += write
            for op, n in uncounted.items():
                self.uncounted[scope][op] += n

    def _check(self, entry, func, args, kwargs, out) -> None:
        """``replay="verify"``: the replayed op priced in full equals its record."""
        cost = op_cost(func, args, kwargs, out)
        scope = (self._scope_name(*self.tracker.where())
                 if cost[0] or cost[1] or cost[2] or cost[3] else None)
        if (cost, scope) != (entry[4], entry[3]):
            raise AssertionError(f"step replay: {func} priced {cost} under {scope} in full "
                                 f"but recorded as {entry[4]} under {entry[3]}")

    def forward_scope(self, path: str) -> str:
        """The scope a forward op of module ``path`` lands in now."""
        return self._scope_name(path, False)

    def _scope_name(self, path: str, backward: bool) -> str:
        name = self._scopes.get((path, backward))
        if name is None:
            parts = list(self.bases)
            if path:
                parts.append(path)
            if backward:
                parts.append("backward")
            elif path:
                parts.append("forward")
            name = self._scopes[(path, backward)] = "/".join(parts)
        return name
