"""The closed vocabulary of primitive ops and memory levels that ledgers count and profiles price.

This is the one place the vocabulary is defined. It lives in the lowest layer because both
sides need it: profiles validate their ``[energy_pj]`` keys against it, and ``sim.Ledger``
refuses counts of anything else. Adding an op means adding one line here.

Each op has a category, used to group energy in reports:

- ``compute``: arithmetic and neuron/synapse work,
- ``communication``: spikes and router hops,
- ``learning``: on-chip weight updates,
- ``overhead``: kernel launches (time and idle energy while the device waits for work).

Memory traffic is counted apart, in bytes per logical level (``MEMORY_LEVELS``).
"""
from __future__ import annotations

from types import MappingProxyType

from hw_profiles.profile import MEMORY_LEVELS

# op name -> (category, what one count is)
_OPS = {
    # neuromorphic cores
    "synop": ("compute", "one spike delivered over one synapse (weight read + accumulate)"),
    "neuron_update_active": ("compute", "one neuron update in a step with input or a spike"),
    "neuron_update_idle": ("compute", "one neuron update in a step without input (leak only)"),
    "spike": ("communication", "one spike packet emitted into the network"),
    "hop": ("communication", "one router-to-router hop of one spike packet"),
    "syn_update": ("learning", "one on-chip learning update of one synapse"),
    # bitwise engines: one op on one machine word of the profile's word width
    "xnor_word": ("compute", "bitwise XNOR of two words"),
    "xor_word": ("compute", "bitwise XOR of two words"),
    "and_word": ("compute", "bitwise AND of two words"),
    "or_word": ("compute", "bitwise OR of two words"),
    "not_word": ("compute", "bitwise NOT of one word"),
    "popcount_word": ("compute", "population count of one word"),
    "int_add": ("compute", "integer add or subtract"),
    "int_cmp": ("compute", "integer compare, max or select"),
    "int_mul": ("compute", "integer multiply"),
    # floating point (torch's convention: one multiply-accumulate = 2 FLOPs)
    "mac_fp64": ("compute", "fp64 multiply-accumulate"),
    "mac_fp32": ("compute", "fp32 multiply-accumulate"),
    "mac_fp16": ("compute", "fp16 multiply-accumulate"),
    "mac_bf16": ("compute", "bf16 multiply-accumulate"),
    "mac_int8": ("compute", "int8 multiply-accumulate"),
    "flop_fp64": ("compute", "fp64 non-MAC op (add, mul, exp, compare, ...)"),
    "flop_fp32": ("compute", "fp32 non-MAC op (add, mul, exp, compare, ...)"),
    "flop_fp16": ("compute", "fp16 non-MAC op (add, mul, exp, compare, ...)"),
    "flop_bf16": ("compute", "bf16 non-MAC op (add, mul, exp, compare, ...)"),
    # execution overhead, appended last so existing op codes keep their
    # numbers. One count = one device kernel launched by an engine (the torch engine counts
    # one per executed aten op that runs a kernel); priced by the execution model of the
    # profile's kind from [execution] launch_s, not from [energy_pj].
    "kernel_launch": ("overhead", "one kernel launch (one executed aten op that runs a kernel)"),
    # multi-chip neuromorphic systems, appended last (codes above keep their numbers): the
    # tree edges of a spike's multicast that cross from one chip to the next; each is also
    # one of its "hop"s, so a profile prices only the crossing's extra cost here
    "chip_hop": ("communication", "one chip-to-chip link crossing of one spike packet "
                                  "(extra to its hop)"),
}

OPS = MappingProxyType({name: cat for name, (cat, _) in _OPS.items()})
"""op name -> category"""

OP_DESCRIPTIONS = MappingProxyType({name: desc for name, (_, desc) in _OPS.items()})

OP_NAMES = tuple(_OPS)
"""Op names in a fixed order: engines index their int64 count arrays with ``OP_CODES``."""

OP_CODES = MappingProxyType({name: i for i, name in enumerate(OP_NAMES)})

CATEGORIES = ("compute", "communication", "learning", "memory", "static", "overhead")
"""Report categories: the op categories plus memory traffic, static (idle) energy over busy
time and overhead (idle energy over kernel-launch time)."""

EXECUTION_OPS = frozenset({"kernel_launch"})
"""Ops priced by a kind's execution model from ``[execution]``, never from ``[energy_pj]``."""

__all__ = ["OPS", "OP_NAMES", "OP_CODES", "OP_DESCRIPTIONS", "CATEGORIES", "MEMORY_LEVELS",
           "EXECUTION_OPS"]
