"""The priced lines every execution model builds: ops, bytes and static power on a profile.

Each builder prices one count at the profile's number, records the citation of every number
it used in ``entries`` (profile key -> citation line), and returns a
:class:`~sim.energy_report.Charge` whose ``seconds`` is its time at the profile's peak rate
(the models decide how those times combine).
"""
from __future__ import annotations

from hw_profiles.ops import OPS
from hw_profiles.profile import HardwareProfile
from sim.energy_report import PJ, Charge


def op_charge(prof: HardwareProfile, scope: str, op: str, n: int, entries: dict) -> Charge:
    """``n`` ops at ``energy_pj[op]``; seconds at the peak ``throughput[op]``."""
    e, rate = prof.energy_pj[op], prof.throughput[op]
    entries[f"energy_pj.{op}"] = prof.cite(e)
    entries[f"throughput.{op}"] = prof.cite(rate)
    return Charge(scope, OPS[op], op, n, e.value, n * e.value * PJ, n / rate.value,
                  f"energy_pj.{op}")


def memory_charge(prof: HardwareProfile, scope: str, level: str, direction: str, n: int,
                  entries: dict, item: str | None = None) -> Charge:
    """``n`` bytes read or written at ``level``; seconds at its peak bandwidth.

    ``item`` names the line when it differs from ``LEVEL:direction`` (a remapped level).
    """
    mem = prof.memory[level]
    q = mem.read_pj_per_byte if direction == "read" else mem.write_pj_per_byte
    key = f"memory.{level}.{direction}_pj_per_byte"
    entries[key] = f"{mem.name}: " + prof.cite(q)
    entries[f"memory.{level}.bandwidth_bytes_per_s"] = \
        f"{mem.name}: " + prof.cite(mem.bandwidth_bytes_per_s)
    return Charge(scope, "memory", item or f"{level}:{direction}", n, q.value,
                  n * q.value * PJ, n / mem.bandwidth_bytes_per_s.value, key)


def static_charge(prof: HardwareProfile, scope: str, seconds: float, entries: dict,
                  category: str = "static", item: str = "static") -> Charge:
    """Static (idle) power over ``seconds``; count is seconds, unit pJ per second."""
    entries["static.power_w"] = prof.cite(prof.static_power_w)
    w = prof.static_power_w.value
    return Charge(scope, category, item, seconds, w / PJ, w * seconds, 0.0, "static.power_w")
