"""Execution model of bitwise devices (microcontrollers, FPGA fabric): serial core, placement.

Time. The profiles give every op its cycles on the core (Cortex-M: Arm's instruction timings,
ST's wait states; see each TOML), as ``throughput = clock / cycles``. An in-order core issues
loads and stores as instructions, so a scope's time is the *sum* of its op time and its memory
time (``sum n / rate + sum bytes / bandwidth``), not their maximum; for a dataflow FPGA fabric
this is pessimistic. Energy is ops x ``energy_pj`` + bytes x pJ/B (+ static power x time, 0 W
in the shipped MCU profiles, whose per-cycle energy is whole-chip run power).

Placement. A ledger's recorded footprint (``Ledger.add_footprint``: BEP's weights and
counters, a torch model's live tensors) is placed per block: *writable* state in the writable
memories in order (``local`` SRAM, then ``shared``, then ``offchip``), never in flash (word
programming takes microseconds per word and wears the cells out); *read-only* state in what
is left, then in ``nonvolatile`` flash. State that does not fit is a
:class:`~hw_profiles.errors.HardwareLimitError` naming the bytes needed and available.

Torch ledgers record their traffic at ``offchip`` (the engine's "device memory"). On a
bitwise profile those bytes are mapped to the block's placement: reads split in proportion
to where the block's state lies, writes in proportion to where its writable state lies; with
no footprint they are priced at ``local`` SRAM (and the report says so).
"""
from __future__ import annotations

from dataclasses import replace

from hw_profiles.profile import HardwareProfile
from sim.energy_report import Charge, EnergyReport
from sim.errors import HardwareLimitError
from sim.execution import LedgerCounts, register_execution_model
from sim.execution.charges import memory_charge, op_charge, static_charge
from sim.execution.gpu_cpu import footprint_scope
from sim.layers import scope_op_classes

NAME = ("bitwise/MCU: serial in-order core, per scope sum of op cycles and memory time at the "
        "profile's rates; state placed in SRAM, read-only state may spill to flash "
        "(sim/execution/mcu.py)")
EXCLUDED = (
    "sleep and stop modes, duty cycling and wake-up (the core is busy for the whole time)",
    "function-call overhead per kernel (kernel_launch counts are not priced on this kind)",
    "instruction-fetch stalls beyond the wait states in the cycle counts",
    "tensors that die inside a block (activations, gradients) in the capacity check of "
    "the priced placement (estimate checks an inference's activation arena apart)",
)
WRITABLE = ("local", "shared", "offchip")
_FLASH_NOTE = ("writable state is never placed in flash (programming takes microseconds "
               "per word and wears the cells)")


def place(prof: HardwareProfile, writable: int, read_only: int, scope: str = "",
          who: str = "", writable_what: str = "parameters, optimizer state, counters",
          read_only_what: str = "", subject: str = "",
          read_only_in_flash: bool = False) -> dict[str, tuple[int, int]]:
    """Place ``writable`` then ``read_only`` bytes on ``prof``'s memories: read-only bytes
    in the SRAM left over and then flash, or (``read_only_in_flash``, where the profile
    has flash: a build that links them there, ``static const``) in flash alone.

    Returns
    -------
    dict level -> (writable bytes, read-only bytes) placed there.

    Raises
    ------
    HardwareLimitError
        The writable state exceeds the writable memories, or the read-only state what is
        left of them plus flash; the message names the bytes needed and available.
    """
    where = f"[{who}] " if who else ""
    what = subject or (f"state of scope {scope!r}" if scope else "state")
    out: dict[str, list[int]] = {}
    levels = [lv for lv in WRITABLE if lv in prof.memory]
    free = {lv: int(prof.memory[lv].capacity_bytes.value) for lv in prof.memory}
    cap_w = sum(free[lv] for lv in levels)
    if writable > cap_w:
        names = " + ".join(f"{prof.memory[lv].name} {free[lv]:,} B" for lv in levels)
        raise HardwareLimitError(
            f"{where}{prof.name}: {what} needs {writable:,} B of writable memory "
            f"({writable_what}), but {prof.name} has {cap_w:,} B ({names}); "
            f"{_FLASH_NOTE}. Use a part with more SRAM, or shrink the model")
    _fill(out, free, levels, writable, column=0)
    ro_levels = levels + (["nonvolatile"] if "nonvolatile" in prof.memory else [])
    if read_only_in_flash and "nonvolatile" in prof.memory:
        ro_levels = ["nonvolatile"]
    cap_r = sum(free[lv] for lv in ro_levels)
    if read_only > cap_r:
        raise HardwareLimitError(
            f"{where}{prof.name}: {what} needs {read_only:,} B of read-only memory"
            f"{f' ({read_only_what})' if read_only_what else ''} beside its "
            f"{writable:,} B writable state, but only {cap_r:,} B are left "
            f"({', '.join(f'{prof.memory[lv].name} {free[lv]:,} B' for lv in ro_levels)}). "
            "Use a part with more memory, or shrink the model or its data")
    _fill(out, free, ro_levels, read_only, column=1)
    return {lv: (w, r) for lv, (w, r) in out.items()}


def place_inference(prof: HardwareProfile, arena_bytes: int, weight_bytes: int,
                    who: str = "estimate", weights_in_flash: bool = False,
                    samples: int = 1) -> dict[str, tuple[int, int]]:
    """TFLM's layout of one inference: the activation arena (:mod:`sim.arena`), written at
    every op, in the writable memories; the weights, only read, in the SRAM left over and
    then flash (``weights_in_flash``: in flash alone, as a C project that declares them
    ``static const`` links them). ``samples``: the samples the arena was planned for (an
    example batch; the message names them). Returns :func:`place`'s placement.

    Raises
    ------
    HardwareLimitError
        The arena or the weights do not fit; one line naming the bytes needed and available.
    """
    subject = ("one inference" if samples == 1 else
               f"one inference of {samples} samples at once (a microcontroller runs one at "
               "a time: estimate it with a batch of 1)")
    return place(prof, arena_bytes, weight_bytes, who=who, subject=subject,
                 writable_what="the activation arena of one inference: TFLM's greedy "
                               "plan of the tensors' lifetimes",
                 read_only_what="the weights" + (" and the code" if weights_in_flash else ""),
                 read_only_in_flash=weights_in_flash)


def _fill(out: dict, free: dict, levels: list[str], n: int, column: int) -> None:
    """Place ``n`` bytes on ``levels`` in order, each up to its ``free`` bytes (checked to fit
    by the caller); ``column`` 0 records them as writable, 1 as read-only."""
    for lv in levels:
        take = min(n, free[lv])
        if take:
            out.setdefault(lv, [0, 0])[column] += take
            free[lv] -= take
            n -= take


def _split(n: int, weights: dict[str, int]) -> dict[str, int]:
    """Split ``n`` bytes over levels in proportion to ``weights``; remainders to the first."""
    total = sum(weights.values())
    parts = {lv: n * w // total for lv, w in weights.items() if w}
    first = next(iter(parts))
    parts[first] += n - sum(parts.values())
    return parts


MAC_CLASSES = ("conv", "depthwise_conv", "dense")
"""Op classes whose int8 MACs a kernel library prices apart (``[stacks.NAME] CLASS_cycles``
per int8 MAC; ``mac_int8_cycles`` for the others)."""


def library_key(table, op: str, op_class: str) -> str | None:
    """The ``[stacks.NAME]`` entry that sets the cycles of ``op`` counted in a layer of
    ``op_class`` (``""``: no recorded class), or None (the manual's peak cycles hold):

    - an int8 MAC: ``{op_class}_cycles`` for a MAC class the table prices, else
      ``mac_int8_cycles``;
    - any other op in a layer of a non-MAC class (pooling, elementwise, activation,
      normalization, softmax): ``{op_class}_cycles`` per op counted there, if the table
      has it."""
    own = f"{op_class}_cycles" if op_class else ""
    if op == "mac_int8":
        if op_class in MAC_CLASSES and own in table:
            return own
        return "mac_int8_cycles" if "mac_int8_cycles" in table else None
    if op_class and op_class not in MAC_CLASSES and own in table:
        return own
    return None


def stack_factor(prof: HardwareProfile, stack: str, op: str, op_class: str,
                 entries: dict) -> tuple[float, str] | None:
    """(the library's cycles for ``op`` in a layer of ``op_class``) / (the profile's peak
    cycles for ``op``) and the entry it came from, or None when the stack does not set them
    (:func:`library_key`).

    The profile's ``energy_pj[op]`` is its peak cycles x the chip's energy per cycle, so
    scaling time and energy by the same factor keeps the energy per cycle and replaces the
    cycles: a library that spends 3.4 cycles per MAC where the manual's peak is 0.5 costs
    6.8x the peak's time and energy."""
    table = prof.stacks.get(stack, {})
    key = library_key(table, op, op_class)
    if key is None or op not in prof.throughput:
        return None
    peak_cycles = prof.limit("clock_hz") / prof.throughput[op].value
    entry = f"stacks.{stack}.{key}"
    entries[entry] = prof.cite(table[key])
    return table[key].value / peak_cycles, entry


def _library_priced(c: Charge, prof: HardwareProfile, stack: str, op_class: str,
                    entries: dict) -> Charge:
    """Charge ``c`` at the stack's kernel library's cycles (:func:`stack_factor`), or as it
    is when the library does not set them."""
    got = stack_factor(prof, stack, c.item, op_class, entries)
    if got is None:
        return c
    factor, entry = got
    return replace(c, unit_pj=c.unit_pj * factor, energy_j=c.energy_j * factor,
                   seconds=c.seconds * factor, entry=entry)


def price(ledger: LedgerCounts, prof: HardwareProfile, stack: str = "peak") -> EnergyReport:
    """Price ``ledger`` on a ``bitwise`` profile (see the module docstring) for the software
    ``stack``: ``peak`` (the manual's cycle counts) or one of the profile's kernel
    libraries (``[stacks.NAME]``: cycles per int8 MAC per op class of the layer, cycles per
    op of non-MAC layers; see :func:`library_key`).

    Raises
    ------
    HardwareLimitError
        A recorded footprint does not fit the device (see :func:`place`).
    """
    footprints = ledger.footprints()
    placement = {f: place(prof, fp["writable"], fp["read_only"], f, "price")
                 for f, fp in footprints.items()}
    charges: list[Charge] = []
    latency: dict[str, float] = {}
    entries: dict[str, str] = {}
    classes = scope_op_classes(ledger) if prof.stacks.get(stack) else {}
    static_w = prof.static_power_w.value
    unplaced = []
    for scope in ledger.scopes():
        lines = [op_charge(prof, scope, op, n, entries) for op, n in ledger.ops(scope).items()
                 if op != "kernel_launch"]
        lines = [_library_priced(c, prof, stack, classes.get(scope, ""), entries)
                 for c in lines]
        block = footprint_scope(footprints, scope)
        for (level, direction), n in ledger.bytes(scope).items():
            if level == "offchip" and block is not None:
                held = placement[block]
                weights = {lv: (w + r if direction == "read" else w) for lv, (w, r)
                           in held.items()}
                if not any(weights.values()):   # nothing written is resident: writes to SRAM
                    weights = {next(iter(held)) if held else "local": 1}
                for lv, part in _split(n, weights).items():
                    if part:
                        lines.append(memory_charge(prof, scope, lv, direction, part, entries))
            elif level == "offchip" and "offchip" not in prof.memory:
                unplaced.append(scope)
                lines.append(memory_charge(prof, scope, "local", direction, n, entries))
            else:
                lines.append(memory_charge(prof, scope, level, direction, n, entries))
        seconds = sum(c.seconds for c in lines)   # in-order core: ops and accesses in series
        charges += lines
        if seconds > 0 and static_w > 0:
            charges.append(static_charge(prof, scope, seconds, entries))
        latency[scope] = seconds
    notes = []
    for block, held in placement.items():
        parts = ", ".join(f"{prof.memory[lv].name}: {w:,} B writable + {r:,} B read-only"
                          for lv, (w, r) in held.items())
        notes.append(f"{block or '(root)'}: state placed as {parts or 'nothing'}")
    if unplaced:
        notes.append(f"{len(unplaced)} scope(s) move device-memory bytes without a recorded "
                     f"footprint: priced at {prof.memory['local'].name} (local)")
    launches = ledger.total_ops().get("kernel_launch", 0)
    if launches:
        notes.append(f"{launches:,} kernel launches counted, not priced on this kind")
    if stack != "peak" and not any(e.startswith(f"stacks.{stack}.") for e in entries):
        # the library sets the cycles of none of these ops (a BEP run's XNOR and popcount
        # words): the figures are the peak ones, and so is the held-out error they carry
        notes.append(f"stack {stack}: its kernel library sets the cycles of none of this "
                     "ledger's ops; priced at the manual's peak cycle counts (stack peak)")
        stack = "peak"
    return EnergyReport(profile=prof.label, kind=prof.kind, charges=tuple(charges),
                        latency_s=latency, samples=ledger.samples(), entries=entries,
                        uncounted=ledger.uncounted(), execution_model=NAME,
                        bound="estimate", excluded=EXCLUDED, notes=tuple(notes), stack=stack)


register_execution_model("bitwise", price)
