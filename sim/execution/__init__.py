"""Execution models: how a ledger's counts become seconds and joules on one kind of device.

One module per model, each a function ``price(ledger, profile) -> EnergyReport`` that its
module registers here for the profile kinds it serves, the way engines register in
:data:`sim.device.ENGINES`: a plain dict filled by the implementing module, and registering a
kind twice is an error. :func:`sim.pricing.price` imports the models and looks the profile's
kind up in :data:`EXECUTION_MODELS`.

- ``gpu``, ``cpu``: :mod:`sim.execution.gpu_cpu` (launch time, Hockney efficiency below the
  roofline, idle power over the whole run, cache reuse of a resident footprint);
- ``bitwise``: :mod:`sim.execution.mcu` (serial in-order core, SRAM/flash placement and
  capacity);
- ``neuromorphic``: :mod:`sim.execution.neuromorphic` (the slowest core plus the barrier per
  time step, SANA-FE); a profile without a step-time model gets :mod:`sim.execution.roofline`
  (per scope ``max(compute, memory)`` at peak rates).

Every parameter a model uses comes from the profile (``[execution]``, ``[core_op_ns]``,
``[step_sync]``, ``[static]``, ``[[memory]]``), with its source. The charge builders the
models share are in :mod:`sim.execution.charges`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from hw_profiles.errors import NeuroedgeError, suggestion
from hw_profiles.profile import EXECUTION_STACKS, KINDS, HardwareProfile
from sim.energy_report import EnergyReport
from sim.step_timing import StepTiming


class LedgerCounts(Protocol):
    """What an execution model reads of a ledger (:class:`sim.ledger.Ledger` provides it)."""

    def scopes(self) -> list[str]: ...

    def ops(self, scope: str) -> dict[str, int]: ...

    def bytes(self, scope: str) -> dict[tuple[str, str], int]: ...

    def samples(self) -> dict[str, int]: ...

    def uncounted(self, within_scope: str = "") -> dict[str, int]: ...

    def total_ops(self, within_scope: str = "") -> dict[str, int]: ...

    def total_bytes(self, within_scope: str = "") -> dict[tuple[str, str], int]: ...

    def footprints(self) -> dict[str, dict[str, int]]: ...

    def timing(self, scope: str) -> StepTiming | None: ...

    def layers(self) -> dict[str, dict]: ...


ExecutionModel = Callable[..., EnergyReport]
"""``price(ledger, profile, stack=...) -> EnergyReport``: an execution model (``stack``: a
name :func:`resolve_stack` returned; the neuromorphic and roofline models take none)."""

_MEANING = {
    "eager": "eager PyTorch: every kernel pays the host's per-op dispatch ([execution] "
             "launch_s), the device idling meanwhile",
    "graph": "graph-captured or compiled (CUDA graphs, torch.compile): kernels are replayed "
             "without per-op host dispatch; launch time is not charged",
    "fused": "fused inference engine (TensorRT-like): no per-op host dispatch, as graph; the "
             "traffic fusion saves between kernels is NOT modelled, so memory-bound figures "
             "are high",
    "tf1-session": "TensorFlow 1.x session.run from Python: per-op dispatch as eager plus the "
                   "host's per-call overhead ([execution] session_call_s) once per counted "
                   "block (one inference batch, one training step); the device is charged "
                   "idle power meanwhile",
    "peak": "the core manual's cycle counts ([throughput]): no kernel library's overhead, a "
            "lower bound on time",
    "native": "the chip's own runtime (the only stack)",
}
STACKS: dict[str, dict[str, str]] = {kind: {name: _MEANING[name] for name in names}
                                     for kind, names in EXECUTION_STACKS.items()}
"""kind -> software stacks the kind's execution model knows (their names:
:data:`hw_profiles.profile.EXECUTION_STACKS`) -> what pricing for it means. A bitwise profile
adds its own kernel libraries (``[stacks.NAME]``: cycles per op class per library,
hw_profiles/SCHEMA.md)."""
DEFAULT_STACK = {"gpu": "eager", "cpu": "eager", "bitwise": "peak", "neuromorphic": "native"}
"""The stack a run is priced for when none is asked and the profile names none
(``default_stack``)."""


STACK_NEEDS = {"tf1-session": "session_call_s"}
"""stack -> the ``[execution]`` entry a profile needs to be priced for it (a profile without
it does not list the stack)."""


def stacks_of(prof: HardwareProfile) -> dict[str, str]:
    """The stacks ``prof`` can be priced for: its kind's (those whose :data:`STACK_NEEDS`
    entry it has), then its own ``[stacks]``."""
    out = {name: what for name, what in STACKS[prof.kind].items()
           if STACK_NEEDS.get(name, "") in ("", *prof.execution)}
    for name, table in prof.stacks.items():
        out[name] = "kernel library: " + ", ".join(f"{k} = {q.value:g}"
                                                   for k, q in table.items())
    return out


def resolve_stack(prof: HardwareProfile, stack: str | None) -> str:
    """``stack``, or the profile's default, checked against :func:`stacks_of`.

    Raises
    ------
    NeuroedgeError
        ``stack`` is not a stack of this profile; the message lists those that are.
    """
    if stack is None or stack == "":
        return prof.default_stack or DEFAULT_STACK[prof.kind]
    known = stacks_of(prof)
    if stack not in known:
        guess = suggestion(stack, known)
        raise NeuroedgeError(f"stack {stack!r} is not a software stack of profile "
                             f"{prof.label!r} ({prof.kind}); "
                             + (f"{guess} " if guess else "")
                             + f"its stacks are {', '.join(known)}")
    return stack


EXECUTION_MODELS: dict[str, ExecutionModel] = {}
"""profile kind -> the execution model that prices ledgers on profiles of that kind."""


def register_execution_model(kind: str, model: ExecutionModel) -> None:
    """Make ``model`` the execution model of profile ``kind``; called by the model's module.

    Raises
    ------
    NeuroedgeError
        ``kind`` is not a profile kind, or already has a model.
    """
    if kind not in KINDS:
        raise NeuroedgeError(f"register_execution_model: unknown kind {kind!r}; kinds are "
                             f"{KINDS}")
    if kind in EXECUTION_MODELS:
        old = EXECUTION_MODELS[kind]
        raise NeuroedgeError(f"register_execution_model: kind {kind!r} already has model "
                             f"{old.__module__}.{old.__qualname__}; refusing "
                             f"{model.__module__}.{model.__qualname__}")
    EXECUTION_MODELS[kind] = model

