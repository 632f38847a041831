"""The roofline execution model: per scope ``max(compute, memory)`` at the profile's peak rates.

The generic model, for a profile that gives no model of its own: the neuromorphic model
(:mod:`sim.execution.neuromorphic`) uses it for a neuromorphic profile without a per-core
step-time model (no ``[core_op_ns]``). Scopes run in sequence; static power is charged over
each scope's latency. Every figure is an estimate.
"""
from __future__ import annotations

from hw_profiles.ops import EXECUTION_OPS
from hw_profiles.profile import HardwareProfile
from sim.energy_report import PJ, Charge, EnergyReport
from sim.execution import LedgerCounts
from sim.execution.charges import memory_charge, op_charge, static_charge

ROOFLINE = ("roofline: per scope max(compute, memory) at peak rates, scopes in sequence; "
            "static power x that latency")


def price(ledger: LedgerCounts, prof: HardwareProfile) -> EnergyReport:
    """The generic model: per scope ``max(sum count / rate, sum bytes / bandwidth)``.

    dynamic energy = sum over ops of ``count x energy_pj[op]`` + sum over levels of
    ``bytes x pJ/B``; static energy = ``static power x latency``, charged to each scope for
    its own latency. Every figure is an estimate.
    """
    charges: list[Charge] = []
    latency: dict[str, float] = {}
    entries: dict[str, str] = {}
    static_pj_per_s = prof.static_power_w.value / PJ
    for scope in ledger.scopes():
        compute_s = memory_s = 0.0
        for op, n in ledger.ops(scope).items():
            if op in EXECUTION_OPS:
                continue
            c = op_charge(prof, scope, op, n, entries)
            compute_s += c.seconds
            charges.append(c)
        for (level, direction), n in ledger.bytes(scope).items():
            c = memory_charge(prof, scope, level, direction, n, entries)
            memory_s += c.seconds
            charges.append(c)
        seconds = max(compute_s, memory_s)
        latency[scope] = seconds
        if seconds > 0 and static_pj_per_s > 0:
            charges.append(static_charge(prof, scope, seconds, entries))
    excluded = ["kernel launches (not modelled for this kind)"] \
        if "kernel_launch" in ledger.total_ops() else []
    return EnergyReport(profile=prof.label, kind=prof.kind, charges=tuple(charges),
                        latency_s=latency, samples=ledger.samples(), entries=entries,
                        uncounted=ledger.uncounted(), execution_model=ROOFLINE,
                        bound="estimate", excluded=tuple(excluded))
