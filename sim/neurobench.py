"""NeuroBench's complexity metrics of a run, from its ledger.

NeuroBench (Yik et al., "NeuroBench: A Framework for Benchmarking Neuromorphic Computing
Algorithms and Systems", Nature Communications 2025; arXiv:2304.04640, Methods "Complexity
metrics") defines hardware-independent metrics of a model and of what it did on a
workload. This module computes them, under NeuroBench's names, from what engines record in
a :class:`~sim.ledger.Ledger` (:meth:`~sim.ledger.Ledger.record_model` for the static
metrics, :meth:`~sim.ledger.Ledger.add_activity` for the workload ones):

* ``Footprint`` (B): bytes of the model's parameters and buffers.
* ``ParameterCount``: its parameters.
* ``ConnectionSparsity``: zero weights / weights of its connection layers (Linear, Conv;
  recurrent layers with their biases). NeuroBench rounds it to 4 decimals; this does not.
* ``ActivationSparsity``: zero outputs / outputs of its neuron layers (ReLU, Sigmoid,
  spiking neurons; on a neuromorphic chip every population), over every layer, time step and
  sample of the scope.
* ``SynapticOperations``: per sample, ``Effective_MACs`` (non-zero, non-spike input x
  non-zero weight), ``Effective_ACs`` (spike input x non-zero weight) and ``Dense`` (every
  input x weight pair of the connection layers, zeros included). Biases are not synaptic
  operations.
* ``MembraneUpdates``: per sample, updates of spiking neurons' membrane potentials.

Static metrics are those of the deployed model: the models the run marked
(:meth:`~sim.ledger.Ledger.mark_deployed`, ``TorchDevice.deploy(module)``), summed when it
marked several (a run that deploys two models reports both together). A run that marked
none, and every run file written before the mark, sums every model the ledger recorded; a
run that also built probes, copies or auxiliary networks should mark the one it deploys, or
they count too. Workload metrics are those of one scope: by default the inference scope
(:func:`inference_scope`), divided by the samples recorded there. A value the run cannot
give is nan: per-sample figures of a scope without samples, sparsities with nothing to
divide by, workload metrics of an engine that records no activity (the bitwise engine).
"""
from __future__ import annotations

import math

from sim import phases

METRIC_UNITS = {
    "Footprint": "B",
    "ParameterCount": "parameters",
    "ConnectionSparsity": "fraction",
    "ActivationSparsity": "fraction",
    "SynapticOperations": "ops/sample",
    "SynapticOperations.Effective_MACs": "MACs/sample",
    "SynapticOperations.Effective_ACs": "ACs/sample",
    "SynapticOperations.Dense": "ops/sample",
    "MembraneUpdates": "updates/sample",
}
"""Unit of every metric :func:`metrics` returns (the inner keys of SynapticOperations as
``SynapticOperations.KEY``)."""

def inference_scope(ledger) -> str | None:
    """The run's inference scope (:func:`sim.phases.inference_scope`); None when none."""
    return phases.inference_scope(ledger.samples())


def deployed_models(ledger) -> dict[str, dict[str, int]]:
    """``name -> facts`` of the models the static metrics are of: those
    :meth:`~sim.ledger.Ledger.mark_deployed` marked, or every recorded model when none is.

    Examples
    --------
    >>> from sim.ledger import Ledger
    >>> led = Ledger()
    >>> for name in ("Net", "Probe"):
    ...     led.record_model(name, parameters=5, parameter_bytes=20, buffer_bytes=0,
    ...                      connection_weights=4, connection_zero_weights=0)
    >>> sorted(deployed_models(led))
    ['Net', 'Probe']
    >>> led.mark_deployed("Net")
    >>> sorted(deployed_models(led))
    ['Net']
    """
    models = ledger.models()
    marked = ledger.deployed()
    return {k: models[k] for k in marked} if marked else models


def _ratio(num, den) -> float:
    return num / den if den else math.nan


def metrics(ledger, scope: str | None = None) -> dict:
    """NeuroBench's metrics of ``ledger`` (module docstring); workload metrics of ``scope``
    (None: :func:`inference_scope`).

    Examples
    --------
    >>> from sim.ledger import Ledger
    >>> led = Ledger()
    >>> led.record_model("m", parameters=15, parameter_bytes=60, buffer_bytes=0,
    ...                  connection_weights=12, connection_zero_weights=3)
    >>> led.add_samples(2, scope="infer")
    >>> led.add_activity("dense_synops", 24, scope="infer/0/forward")
    >>> m = metrics(led)
    >>> m["Footprint"], m["ConnectionSparsity"], m["SynapticOperations"]["Dense"]
    (60, 0.25, 12.0)
    """
    models = deployed_models(ledger).values()
    if models:
        footprint = sum(m["parameter_bytes"] + m["buffer_bytes"] for m in models)
        params = sum(m["parameters"] for m in models)
        sparsity = _ratio(sum(m["connection_zero_weights"] for m in models),
                          sum(m["connection_weights"] for m in models))
    else:
        footprint = params = sparsity = math.nan
    if scope is None:
        scope = inference_scope(ledger)
    samples = phases.scope_samples(ledger.samples(), scope)
    act = ledger.activity(scope) if scope is not None else {}

    def per_sample(name):
        return act.get(name, 0) / samples if act and samples else math.nan

    return {
        "Footprint": footprint,
        "ParameterCount": params,
        "ConnectionSparsity": sparsity,
        "ActivationSparsity": _ratio(act.get("activations_zero", 0), act.get("activations", 0)),
        "SynapticOperations": {"Effective_MACs": per_sample("effective_macs"),
                               "Effective_ACs": per_sample("effective_acs"),
                               "Dense": per_sample("dense_synops")},
        "MembraneUpdates": per_sample("membrane_updates"),
    }


def flat(values: dict) -> dict[str, float]:
    """:func:`metrics` with SynapticOperations' keys as ``SynapticOperations.KEY`` (the keys
    of :data:`METRIC_UNITS`), for tables."""
    out = {}
    for k, v in values.items():
        if isinstance(v, dict):
            out.update({f"{k}.{kk}": vv for kk, vv in v.items()})
        else:
            out[k] = v
    return out
