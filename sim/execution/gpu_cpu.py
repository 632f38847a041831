"""Execution model of GPUs and CPUs running eager PyTorch: launches, achieved rate, idle, cache.

Per ledger scope ``s`` (the torch engine's ``train/net.0/forward`` and so on), with ``K``
counted ``kernel_launch`` ops, ``N`` compute ops of peak time ``C = sum n_op / rate_op`` and
``M = sum bytes / bandwidth`` at the level each byte is priced at:

- achieved compute time follows Hockney's n_1/2 curve (Hockney & Jesshope, *Parallel
  Computers 2*, 1988, sec. 1.3.3: ``r(n) = r_inf n / (n + n_1/2)``) for the scope's mean kernel
  of ``N / K`` ops: ``C_eff = C (1 + n_1/2 K / N)`` (``[execution] half_perf_ops``);
- ``latency(s) = max(C_eff, M) + K x launch_s``. The max is taken over the scope's totals, not
  per kernel: exact when the scope's kernels share one compute/memory balance, otherwise
  at most the per-kernel sum ``sum_k max(c_k, m_k)``;
- energy = ops x ``energy_pj`` (dynamic only: the profiles derive every op energy as
  (board power - idle - DRAM power at peak bandwidth) / peak rate, so no op class implies a
  different board power and memory energy is charged once, by the memory lines)
  + bytes x pJ/B + idle power x busy time (``static``) + idle power x launch time
  (``overhead``, the ``kernel_launch`` line): idle power is paid over the whole duration.

Cache reuse rule (per count block). The torch engine records, per count block (a scope such
as ``train``), the bytes of the tensors still alive when the block ends (parameters,
optimizer state, gradients, data on the device) as the block's resident footprint. Data the
block only gathers rows from (a training tensor indexed batch by batch) is streamed: it passes
through the cache once and is not reused, so it does not count toward fitting. When the
reused part fits the on-chip cache (the profile's ``shared`` level: L2 on GPUs, LLC on CPUs),
every byte the block's kernels move is charged at the cache's energy and bandwidth, and DRAM
is charged once per block for loading the reused footprint and writing back its written part,
plus the bytes the blocks gathered of the streamed data (each gathered row comes from DRAM
once; a mini-batch of 64 rows reads 64 rows of the training tensor, not all of it; ledgers
from before these reads were recorded charge all of it per block). When it does not fit,
or no footprint was recorded, every byte is charged at DRAM. Tensors that die
inside the block (activations) are not in the footprint, so a block whose activations
overflow the cache is priced optimistically: every figure is an estimate.
"""
from __future__ import annotations

from hw_profiles.profile import HardwareProfile
from sim.energy_report import PJ, Charge, EnergyReport
from sim.errors import PricingError
from sim.execution import LedgerCounts, register_execution_model
from sim.execution.charges import memory_charge, op_charge, static_charge
from sim.scope_paths import within

REQUIRED = ("board_power_w", "launch_s", "half_perf_ops")


def execution_model_name(stack: str) -> str:
    """What priced a report for ``stack``: the launches charged under eager dispatch (and a
    TF1 session's call per block) only."""
    host = {"eager": " + kernel launches x launch_s",
            "tf1-session": " + kernel launches x launch_s + one session call per block"}
    return (f"gpu/cpu {stack}: per scope max(compute at Hockney-achieved rate, memory)"
            f"{host.get(stack, '; no per-op host dispatch')}; idle power over the whole "
            "duration; cache reuse of a resident footprint that fits the L2/LLC "
            "(sim/execution/gpu_cpu.py)")


def excluded(stack: str) -> tuple[str, ...]:
    """What the execution model leaves out for ``stack``."""
    host = ("host CPU energy spent dispatching kernels (their time is counted; the host's "
            "power is not in the device profile)" if stack in ("eager", "tf1-session") else
            "host CPU time and energy (the stack replays its kernels without per-op dispatch)")
    return (host, *_EXCLUDED)


_EXCLUDED = (
    "DRAM latency per kernel and cache misses of tensors that die inside a block",
    "host-device transfers, CUDA context and library start-up, first-call compilation",
    "clock and power management (boost, DVFS, power capping)",
)


def footprint_scope(footprints: dict, scope: str) -> str | None:
    """The innermost scope with a recorded footprint that contains ``scope``, if any."""
    best = None
    for name in footprints:
        if within(scope, name) and (best is None or len(name) > len(best)):
            best = name
    return best


def cached_blocks(prof: HardwareProfile, footprints: dict) -> dict[str, bool]:
    """footprint scope -> whether its resident bytes fit the profile's ``shared`` cache."""
    cache = prof.memory.get("shared")
    return {f: cache is not None and reused_bytes(fp) <= cache.capacity_bytes.value
            for f, fp in footprints.items()}


def reused_bytes(fp: dict) -> int:
    """The state a block reuses: its footprint less the data it only streams through."""
    return fp["writable"] + fp["read_only"] - fp.get("streamed", 0)


def check_execution(prof: HardwareProfile) -> None:
    """Raise unless ``prof`` has every ``[execution]`` parameter this model needs.

    The loader accepts a profile without them (SCHEMA.md: a run file's snapshot written
    before the section existed must still be read), so this is the check: by :func:`price`,
    and by ``models.runner.prepare`` before a model trains on the profile.

    Raises
    ------
    PricingError
        One line naming the profile by its label (a user's file by its path, whatever its
        name), the missing keys, and the way on: a snapshot of a shipped profile can be
        priced on the shipped one (which has them); a user's file needs them added.
    """
    missing = [k for k in REQUIRED if k not in prof.execution]
    if not missing:
        return
    from hw_profiles import available
    shipped = prof.name in available() and prof.label == prof.name
    hint = (f"A run file written before these existed can be priced on the shipped "
            f"profile (neuroedge report RUN --profile {prof.name})" if shipped else
            "Add them to the profile's [execution] table (each shipped profile's file "
            "gives them with their sources)")
    raise PricingError(
        f"profile {prof.label!r} has no [execution] {', '.join(missing)}: the {prof.kind} "
        f"execution model needs {', '.join(REQUIRED)} (see hw_profiles/SCHEMA.md). {hint}")


def price(ledger: LedgerCounts, prof: HardwareProfile, stack: str = "eager") -> EnergyReport:
    """Price ``ledger`` on a ``gpu`` or ``cpu`` profile (see the module docstring) for the
    software ``stack`` (:data:`sim.execution.STACKS`): ``eager`` charges ``launch_s`` per
    counted kernel launch; ``tf1-session`` does too and adds ``session_call_s`` once per
    counted block (each top scope with samples); ``graph`` and ``fused`` replay kernels
    without per-op host dispatch and charge none (the Hockney curve still applies per
    kernel).

    Raises
    ------
    PricingError
        The profile lacks an ``[execution]`` parameter (e.g. a profile snapshot in a run file
        written before the section existed).
    """
    check_execution(prof)
    ex = prof.execution
    n_half = ex["half_perf_ops"].value
    dispatched = stack in ("eager", "tf1-session")
    launch_s = ex["launch_s"].value if dispatched else 0.0
    session_s = ex["session_call_s"].value if stack == "tf1-session" else 0.0
    idle_w = prof.static_power_w.value
    entries = {f"execution.{k}": prof.cite(q) for k, q in ex.items()}
    footprints = ledger.footprints()
    fits = cached_blocks(prof, footprints)
    charges: list[Charge] = []
    latency: dict[str, float] = {}
    uncached_scopes: list[str] = []

    for scope in ledger.scopes():
        ops = ledger.ops(scope)
        k = ops.get("kernel_launch", 0)
        lines = [op_charge(prof, scope, op, n, entries) for op, n in ops.items()
                 if op != "kernel_launch"]
        n_ops = sum(c.count for c in lines)
        peak_s = sum(c.seconds for c in lines)
        # Hockney: the mean kernel of n_ops / k ops runs at peak x n / (n + n_1/2)
        stretch = 1.0 + n_half * k / n_ops if k and n_ops else 1.0
        lines = [Charge(c.scope, c.category, c.item, c.count, c.unit_pj, c.energy_j,
                        c.seconds * stretch, c.entry) for c in lines]
        block = footprint_scope(footprints, scope)
        for (level, direction), n in ledger.bytes(scope).items():
            if level == "offchip" and block is not None and fits[block]:
                lines.append(memory_charge(prof, scope, "shared", direction, n, entries))
            else:
                if level == "offchip" and block is None:
                    uncached_scopes.append(scope)
                lines.append(memory_charge(prof, scope, level, direction, n, entries))
        compute_s = peak_s * stretch
        memory_s = sum(c.seconds for c in lines if c.category == "memory")
        busy = max(compute_s, memory_s)
        charges += lines
        if busy > 0 and idle_w > 0:
            charges.append(static_charge(prof, scope, busy, entries))
        if k and dispatched:
            entries["static.power_w"] = prof.cite(prof.static_power_w)
            charges.append(Charge(scope, "overhead", "kernel_launch", k,
                                  idle_w * launch_s / PJ, idle_w * launch_s * k, k * launch_s,
                                  "execution.launch_s"))
        latency[scope] = busy + k * launch_s

    notes = []
    if session_s:
        # one session.run per counted block (a top scope with samples: one inference batch,
        # one training step), the device idle meanwhile
        for scope in (s for s in ledger.samples() if "/" not in s):
            entries["execution.session_call_s"] = prof.cite(ex["session_call_s"])
            entries["static.power_w"] = prof.cite(prof.static_power_w)
            charges.append(Charge(scope, "overhead", "session_call", 1,
                                  idle_w * session_s / PJ, idle_w * session_s, session_s,
                                  "execution.session_call_s"))
            latency[scope] = latency.get(scope, 0.0) + session_s
            notes.append(f"stack {stack}: one session.run of {session_s * 1e6:.4g} us charged "
                         f"to {scope} (the host's per-call overhead; the device's power "
                         "meanwhile is charged as idle)")
    cache = prof.memory.get("shared")
    for block, fp in footprints.items():
        resident = fp["writable"] + fp["read_only"]
        streamed = fp.get("streamed", 0)
        if fits[block]:
            # compulsory traffic: the reused footprint is loaded from DRAM and its written
            # part written back once per block; of the streamed data, what was gathered
            read = (resident - streamed) * fp["blocks"] + fp.get("streamed_read", 0)
            load = [memory_charge(prof, block, "offchip", "read", read,
                                  entries, item="offchip:read"),
                    memory_charge(prof, block, "offchip", "write", fp["writable"] * fp["blocks"],
                                  entries, item="offchip:write")]
            load = [c for c in load if c.count]
            t = sum(c.seconds for c in load)
            charges += load
            if t > 0 and idle_w > 0:
                charges.append(static_charge(prof, block, t, entries))
            latency[block] = latency.get(block, 0.0) + t
            notes.append(f"{block or '(root)'}: reused footprint {resident - streamed:,} B "
                         f"fits the {cache.capacity_bytes.value:,.0f} B {cache.name}"
                         + (f" ({streamed:,} B more streamed through, "
                            f"{fp.get('streamed_read', 0):,} B of it gathered)"
                            if streamed else "")
                         + f"; its traffic is priced at {cache.name}, DRAM once per block "
                         f"({fp['blocks']} blocks)")
        else:
            where = (f"exceeds the {cache.capacity_bytes.value:,.0f} B {cache.name}"
                     if cache else "has no cache level in this profile to fit")
            notes.append(f"{block or '(root)'}: resident footprint {resident:,} B {where}; "
                         f"its traffic is priced at {prof.memory['offchip'].name}")
    if uncached_scopes:
        notes.append(f"{len(uncached_scopes)} scope(s) without a recorded footprint: their "
                     f"traffic is priced at {prof.memory['offchip'].name} (no reuse assumed)")
    if not dispatched and "kernel_launch" in ledger.total_ops():
        notes.append(f"stack {stack}: {ledger.total_ops()['kernel_launch']:,} kernel launches "
                     "counted, no per-op host dispatch charged")
    if "kernel_launch" not in ledger.total_ops() and ledger.total_ops():
        notes.append("the ledger counts no kernel launches: launch time and the Hockney "
                     "curve are not applied (ledger from before launches were counted?)")
    return EnergyReport(profile=prof.label, kind=prof.kind, charges=tuple(charges),
                        latency_s=latency, samples=ledger.samples(), entries=entries,
                        uncounted=ledger.uncounted(),
                        execution_model=execution_model_name(stack), bound="estimate",
                        excluded=excluded(stack), notes=tuple(notes), stack=stack)


register_execution_model("gpu", price)
register_execution_model("cpu", price)
