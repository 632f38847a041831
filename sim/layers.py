"""Per-layer rows of a priced run: what each layer is, the work it did and what that cost.

A ledger's layer records (:meth:`sim.ledger.Ledger.record_layer`: type, output shape,
parameters) are joined with the counts and charges of the scopes the layer's work landed in:

* torch engine: a layer ``path`` (``net.0``) owns every scope whose last two parts are
  ``path/forward`` or ``path/backward``, under every top scope (``infer/net.0/forward``,
  ``train/net.0/backward``, ``train/epoch1/net.0/forward``); the root layer ``""`` (a model
  that is itself one leaf module) owns the scopes with neither suffix. Its work is its
  multiply-accumulates (the ``mac_*`` ops), or, with none, every op it ran.
* bitwise engine: a layer ``L{i}_{name}`` owns every scope with that part
  (``infer/L0_h1``); its work is every op it ran.
* neuromorphic engine: all ops of a run land in the run's scope; a population records its
  activity (synops it received, its neuron updates) under ``<run scope>/<population>``.
  Its work is the synops it received; its energy is its share of the run's lines priced
  per synop and per synapse-memory byte (exact: those are synops x price) and, of the
  neuron-update lines, its share of membrane updates. Spike, routing and static lines stay
  with the run (no row holds them). Latency is a critical path over cores
  (``sim/execution/neuromorphic.py``) that does not split by population: nan.

A torch row's energy is every charge of its scopes, static power over its latency
included, so the rows and the scopes outside any layer sum to the report's total.

The ``bound`` of a row is the largest of the compute, memory and launch parts of its
latency (:func:`latency_parts`), the rule of the report's latency table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

_DIRECTIONS = ("forward", "backward")


@dataclass(frozen=True)
class LayerRow:
    """One row of a per-layer table (see the module docstring for what each field sums)."""

    name: str
    type: str
    output_shape: tuple
    parameters: int
    work: int
    work_unit: str        # "MACs" | "synops" | "ops"
    bytes: int
    energy_j: float
    latency_s: float
    bound: str            # "compute" | "memory" | "launch" | a time model's name | ""


def latency_parts(report, scopes) -> dict[str, float]:
    """Seconds of the compute, memory and launch parts of the charges of ``scopes``
    (static lines excluded; ``overhead`` charges are launches)."""
    scopes = set(scopes)
    part = {"compute": 0.0, "memory": 0.0, "launch": 0.0}
    for c in report.charges:
        if c.scope in scopes and c.category != "static":
            key = {"memory": "memory", "overhead": "launch"}.get(c.category, "compute")
            part[key] += c.seconds
    return part


def bound_of(report, scopes) -> str:
    """The part that bounds the latency of ``scopes``: the largest of :func:`latency_parts`,
    or the time model the report names for them (neuromorphic step model); ``""`` when they
    take no time."""
    scopes = list(scopes)
    models = {report.time_model[s] for s in scopes if s in report.time_model}
    if len(models) == 1:
        return models.pop()
    part = latency_parts(report, scopes)
    if not any(part.values()):
        return ""
    return max(part, key=part.get)


def _owned_scopes(scopes, path: str) -> list[str]:
    """Scopes of layer ``path``: the torch rule, else (bitwise engine, ``infer/L0_h1``)
    every scope with a part equal to ``path``."""
    out = []
    for s in scopes:
        parts = s.split("/") if s else [""]
        suffixed = len(parts) >= 2 and parts[-1] in _DIRECTIONS
        if path == "":
            if not suffixed:
                out.append(s)
        elif suffixed and parts[-2] == path:
            out.append(s)
    if not out and path:
        out = [s for s in scopes if path in s.split("/")]
    return out


def scope_op_classes(ledger) -> dict[str, str]:
    """scope -> the op class (:data:`sim.ledger.OP_CLASSES`) of the layer that owns it, for
    every layer recorded with one (the torch engine records them); scopes of no such layer
    (a container's own ops, such as a residual add) are absent."""
    scopes = ledger.scopes()
    out = {}
    for path, info in ledger.layers().items():
        if info.get("op_class"):
            for s in _owned_scopes(scopes, path):
                out[s] = info["op_class"]
    return out


def layer_rows(ledger, report) -> list[LayerRow]:
    """One :class:`LayerRow` per recorded layer, in recording order, its forward and
    backward scopes under every top scope summed (see the module docstring)."""
    layers = ledger.layers()
    if not layers:
        return []
    scopes = sorted(set(ledger.scopes()) | {c.scope for c in report.charges})
    by_scope = activity_by_scope(ledger)
    activity_scopes = sorted(by_scope)
    rows = []
    for path, info in layers.items():
        owned = _owned_scopes(scopes, path)
        pop_scopes = [s for s in activity_scopes if s.split("/")[-1] == path and path]
        if owned:
            rows.append(_torch_row(ledger, report, path, info, owned))
        elif pop_scopes:
            rows.append(_population_row(ledger, report, path, info, pop_scopes, by_scope))
        else:
            rows.append(LayerRow(path or "(model)", info["type"], tuple(info["output_shape"]),
                                 info["parameters"], 0, "ops", 0, 0.0, 0.0, ""))
    return rows


def _torch_row(ledger, report, path, info, owned) -> LayerRow:
    ops: dict[str, int] = {}
    nbytes = 0
    for s in owned:
        for op, n in ledger.ops(s).items():
            ops[op] = ops.get(op, 0) + n
        nbytes += sum(ledger.bytes(s).values())
    macs = sum(n for op, n in ops.items() if op.startswith("mac_"))
    if macs:
        work, unit = macs, "MACs"
    elif ops.get("synop"):
        work, unit = ops["synop"], "synops"
    else:
        work, unit = sum(n for op, n in ops.items() if op != "kernel_launch"), "ops"
    owned_set = set(owned)
    energy = sum(c.energy_j for c in report.charges if c.scope in owned_set)
    latency = sum(report.latency_s.get(s, 0.0) for s in owned)
    return LayerRow(path or "(model)", info["type"], tuple(info["output_shape"]),
                    info["parameters"], work, unit, nbytes, energy, latency,
                    bound_of(report, owned))


def activity_by_scope(ledger) -> dict[str, dict[str, int]]:
    """``scope -> activity counts recorded directly there`` (the ledger's serialised form)."""
    return ledger.to_dict().get("activity", {})


def _population_row(ledger, report, path, info, pop_scopes, by_scope) -> LayerRow:
    """A neuromorphic population: its share of its run scopes' charges (module docstring)."""
    energy, nbytes, synops = 0.0, 0, 0
    runs = []
    for s in pop_scopes:
        run = s.rsplit("/", 1)[0]
        runs.append(run)
        mine = by_scope[s]
        total = _direct_activity(by_scope, run)
        syn, tot_syn = mine.get("effective_acs", 0), total.get("effective_acs", 0)
        upd, tot_upd = mine.get("membrane_updates", 0), total.get("membrane_updates", 0)
        synops += syn
        ops = ledger.ops(run)
        run_bytes = sum(ledger.bytes(run).values())
        share_syn = syn / tot_syn if tot_syn else 0.0
        share_upd = upd / tot_upd if tot_upd else 0.0
        nbytes += round(run_bytes * share_syn) if ops.get("synop") else 0
        for c in report.charges:
            if c.scope != run or c.category == "static":
                continue
            if c.item.startswith("neuron_update"):
                energy += c.energy_j * share_upd
            elif c.item == "synop" or c.category == "memory":
                energy += c.energy_j * share_syn
    return LayerRow(path, info["type"], tuple(info["output_shape"]), info["parameters"],
                    synops, "synops", nbytes, energy, math.nan, "")


def _direct_activity(by_scope, run: str) -> dict[str, int]:
    """Activity of the populations directly below ``run`` (their sum)."""
    out: dict[str, int] = {}
    for s, bucket in by_scope.items():
        if "/" in s and s.rsplit("/", 1)[0] == run:
            for k, v in bucket.items():
                out[k] = out.get(k, 0) + v
    return out
