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

from hw_profiles.errors import NeuroedgeError
from hw_profiles.profile import KINDS, HardwareProfile
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


ExecutionModel = Callable[[LedgerCounts, HardwareProfile], EnergyReport]
"""``price(ledger, profile) -> EnergyReport``: an execution model."""

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

