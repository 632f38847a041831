"""NIR export and import of NeuromorphicDevice networks (``nir`` package, ``.nir`` HDF5 files).

Mapping (NIR 1.0.x node types; what survives export + import, and what does not, is listed
under "Round trip" below):

===========================  ===============================================================
engine                       NIR
===========================  ===============================================================
source ``S`` (n channels)    ``Input`` ``S`` (its events in the node's metadata)
``lif`` population ``P``     ``LIF(tau=tau_mem, r, v_leak, v_threshold, v_reset)`` named
                             ``P.neurons`` (every population node carries that suffix)
``if`` population            ``IF(r, v_threshold, v_reset)``
``cuba_lif``, 1 channel      ``CubaLIF(tau_syn, tau_mem, r, v_leak, v_threshold, v_reset,
                             w_in)``
``cuba_lif``, C > 1 channels ``LIF`` ``P`` fed by one ``LI(tau=tau_syn_c, r=w_in, v_leak=0)``
                             node ``P.syn<c>`` per channel (``tau_syn dI/dt = -I + w_in S``,
                             CubaLIF's current equation, once per channel)
projection, delay d steps    ``Linear(weight[n_post, n_pre])`` ``<proj>.d<d>``, then for
                             d > 1 a ``Delay((d - 1) dt)`` node ``<proj>.d<d>.delay``
population ``P`` w/o targets an ``Output`` ``P.out`` of its spikes (a self-loop does not
                             count; when every population feeds another, the first probed
                             one, else the last, gets it)
no source at all             a placeholder ``Input`` ``input`` and a zero ``Linear``
                             ``input.none`` into the first population (metadata
                             ``neuroedge_placeholder``; the import drops them)
===========================  ===============================================================

Every file therefore has an ``Input`` and an ``Output`` and passes ``nir.read`` with its
default type check. Other readers (checked in tests/deploy/test_nir_import.py and
tests/deploy/test_nir_roundtrip_fidelity.py):
snnTorch's ``import_from_nir`` takes ``LIF`` / ``CubaLIF`` / ``IF`` populations with
``v_leak = 0``, one threshold per population and ``r = tau / 1e-4`` (its fixed dt), fed
forward or with one recurrent ``Linear`` per population (it runs, but snnTorch 1.0.0 routes
the external input through the recurrent weights). Its spikes are ours (one step earlier per
layer) only for ``LIF`` / ``CubaLIF`` populations with ``reset="value"`` and ``v_reset = 0``
(also ``method="euler"``, no ``refractory``, no ``i_inj``, which it does not read): snnTorch
1.0.0 builds every ``LIF`` / ``CubaLIF`` with ``reset_mechanism="zero"``, whatever the file's
``v_reset`` and reset, so a ``reset="subtract"`` export, or one with ``v_reset != 0``, runs
there with a reset to 0 and gives other spikes; an ``IF`` becomes a ``Leaky`` with
``beta = 0.9`` (a leak ours does not have). Norse's ``from_nir`` takes ``LIF`` / ``IF`` /
``CubaLIF`` and ``Linear`` (same counts for LIF with ``r = 1``, forward Euler). Neither reads
multi-channel CUBA (``LI`` per channel) or ``Delay`` nodes: those files are for this
project's import and NIR tools.

Conventions written into the graph metadata (``neuroedge_*`` keys) and stated here, since
NIR is continuous-time and leaves discretisation to each backend:

- ``dt`` in seconds; time constants in seconds; ``v`` and weights in the network's unit;
- update order: a step's input arrives, the currents then the membrane update with it,
  strict threshold ``v > v_threshold``, then reset; ``reset`` is ``value`` (NIR's
  ``v <- v_reset``) or ``subtract`` (``v <- v - (v_threshold - v_reset)``), per population
  in its node metadata, with ``method`` (``euler`` | ``exact``) and ``refractory``;
- a spike counts as one step of ``S = 1`` (snnTorch's reading of NIR): graph metadata
  ``neuroedge_spike`` (files written before it lack the key; the import needs none of
  these keys);
- a synapse delay of ``d`` steps = the one step every spike takes + a NIR ``Delay`` of
  ``(d - 1) dt``; the one-step transmission is the recurrent step snnTorch's RLeaky /
  RSynaptic also take.

Round trip (:func:`to_nir` / :func:`export_nir`, then :func:`deploy.nir_import.read_nir`,
in memory or through a ``.nir`` file; tests/deploy/test_nir_export.py and
tests/deploy/test_nir_roundtrip_fidelity.py): ``dt``, every population's model, size,
parameters, method, reset, channels, refractory period, ``v_init`` and injected current,
every source's events or rates and seed, every projection's synapses (pre, post, weight,
delay), channel and ``kernel_weights``, and the probes come back as written, and so does
the order of the network's sources, populations and projections (it decides the placement,
hence hops and energy). Three things NIR's nodes cannot hold travel in metadata:

- the order: graph metadata ``neuroedge_order`` (:data:`~deploy.nir_format.ORDER_KEY`),
  the node names as a JSON list, since a ``.nir`` file lists nodes alphabetically;
- ``kernel_weights`` (a projection's weight-shared form): ``Linear`` metadata
  ``kernel_weights`` on each of its ``Linear`` nodes, counted once;
- synapses of weight 0 that the network lists: ``Linear`` metadata ``zero_synapses``
  (``[post; pre]`` indices), since a dense matrix cannot tell a listed synapse of weight 0
  from no synapse. They are kept only for files this exporter wrote (graph metadata
  ``neuroedge_format``); in any other producer's matrix a 0 is no synapse.

What does not survive: synapses repeated between the same pair with the same delay are
summed (dense ``Linear`` weights are what NIR offers; the import gives one synapse, of
weight 0 when they cancel), and a projection's synapses come back per delay in the
matrix's order (by target, then source), not in the order they were listed; with
``compiled``, the weights written are the quantised ones. Custom neuron kernels have no
NIR node and are refused. Other readers ignore this metadata.
"""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np

from deploy.errors import ExportError
from deploy.nir_format import (
    FORMAT_KEY,
    FORMAT_VALUE,
    KERNEL_WEIGHTS_KEY,
    ORDER_KEY,
    PLACEHOLDER_KEY,
    PROBES_KEY,
    SPIKE_KEY,
    SPIKE_VALUE,
    ZERO_SYNAPSES_KEY,
    node_name,
    require_nir,
)
from deploy.outputs import write_bytes


def to_nir(net, compiled=None):
    """The network as a ``nir.NIRGraph``; with ``compiled``, its quantised weights."""
    nir = require_nir()
    nodes, edges = {}, []
    for name, src in net.sources.items():
        meta = {"neuroedge_kind": src.kind, "seed": src.seed}
        if src.kind == "events":
            meta.update(steps=src.steps, index=src.index, payload=src.payload)
        else:
            meta["rate_hz"] = src.rate_hz
        nodes[name] = nir.Input({"input": np.array([src.n])}, metadata=meta)
    for pname, pop in net.populations.items():
        name = node_name(pname, net)
        if pop.custom:
            raise ExportError(f"NIR export: population {pname!r} uses custom kernel "
                              f"{pop.model_name!r}, which has no NIR node")
        P = pop.params
        meta = {"neuroedge_model": pop.model, "method": pop.method, "reset": pop.reset,
                "refractory": P["refractory"], "n_channels": pop.n_channels}
        if "v_init" in P:
            meta["v_init"] = P["v_init"]
        if pop.i_inj is not None:
            meta["i_inj"] = pop.i_inj
            meta["i_inj_start"] = pop.i_inj_start
        if pop.model == "if":
            nodes[name] = nir.IF(r=P["r"], v_threshold=P["v_threshold"],
                                 v_reset=P["v_reset"], metadata=meta)
        elif pop.model == "lif" or pop.n_channels > 1:
            nodes[name] = nir.LIF(tau=P["tau_mem"], r=P["r"], v_leak=P["v_leak"],
                                  v_threshold=P["v_threshold"], v_reset=P["v_reset"],
                                  metadata=meta)
            for c in range(pop.n_channels if pop.model == "cuba_lif" else 0):
                syn = f"{pname}.syn{c}"
                nodes[syn] = nir.LI(tau=P[f"tau_syn{c}"], r=P["w_in"],
                                    v_leak=np.zeros(pop.n), metadata={"channel": c})
                edges.append((syn, name))
        else:
            nodes[name] = nir.CubaLIF(tau_syn=P["tau_syn0"], tau_mem=P["tau_mem"], r=P["r"],
                                      v_leak=P["v_leak"], v_threshold=P["v_threshold"],
                                      v_reset=P["v_reset"], w_in=P["w_in"], metadata=meta)
    for pname in _output_populations(net):
        nodes[f"{pname}.out"] = nir.Output({"output": np.array([net.populations[pname].n])})
        edges.append((node_name(pname, net), f"{pname}.out"))
    for proj in net.projections.values():
        w = proj.weight if compiled is None else compiled.weights_of(proj.name)
        n_pre, n_post = net.size_of(proj.pre), net.size_of(proj.post)
        post = net.populations[proj.post]
        target = node_name(proj.post, net) if post.n_channels == 1 or post.model != "cuba_lif" \
            else f"{proj.post}.syn{proj.channel}"
        for d in np.unique(proj.delay):
            sel = proj.delay == d
            post_i, pre_i = proj.post_idx[sel], proj.pre_idx[sel]
            dense = np.zeros((n_post, n_pre))
            np.add.at(dense, (post_i, pre_i), w[sel])
            lin = f"{proj.name}.d{int(d)}"
            lin_meta = {"projection": proj.name, "delay_steps": int(d),
                        "channel": proj.channel}
            if proj.kernel_weights is not None:
                lin_meta[KERNEL_WEIGHTS_KEY] = int(proj.kernel_weights)
            zero = dense[post_i, pre_i] == 0
            if zero.any():   # listed synapses of weight 0 (summed, as every repeated pair)
                z = np.unique(post_i[zero] * n_pre + pre_i[zero])
                lin_meta[ZERO_SYNAPSES_KEY] = np.stack([z // n_pre, z % n_pre]).astype(np.int64)
            nodes[lin] = nir.Linear(weight=dense, metadata=lin_meta)
            edges.append((node_name(proj.pre, net), lin))
            if d > 1:
                dl = f"{lin}.delay"
                nodes[dl] = nir.Delay(delay=np.full(n_post, (d - 1) * net.dt))
                edges += [(lin, dl), (dl, target)]
            else:
                edges.append((lin, target))
    if not net.sources:
        # nir.read's type check starts from an Input: a zero-weight one into the first
        # population (the import drops both nodes)
        first = next(iter(net.populations.values()))
        target = f"{first.name}.syn0" if first.model == "cuba_lif" and first.n_channels > 1 \
            else node_name(first.name, net)
        nodes["input"] = nir.Input({"input": np.array([1])}, metadata={PLACEHOLDER_KEY: 1})
        nodes["input.none"] = nir.Linear(weight=np.zeros((first.n, 1)),
                                         metadata={PLACEHOLDER_KEY: 1})
        edges += [("input", "input.none"), ("input.none", target)]
    meta = {FORMAT_KEY: FORMAT_VALUE, "dt": net.dt, "neuroedge_time_unit": "s",
            "neuroedge_update_order": "input, currents, membrane, strict threshold, reset",
            "neuroedge_delay": "d steps = 1 step transmission + Delay((d-1) dt)",
            SPIKE_KEY: SPIKE_VALUE,
            PROBES_KEY: ";".join(f"{t}:{w}" for t, w in net.probes),
            ORDER_KEY: json.dumps(list(nodes))}
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata=meta, type_check=False)


def _output_populations(net) -> list[str]:
    """Populations given an ``Output``: those that project to no other population (a
    self-loop is fine: snnTorch's importer wraps it as a recurrent layer, but does not return
    from an Output in mid-graph); in a graph where every population feeds another, the
    probed ones, else the last."""
    out = [p for p in net.populations
           if not any(q.pre == p and q.post != p for q in net.projections.values())]
    if not out:
        out = [t for t, _ in net.probes if t in net.populations][:1] or [list(net.populations)[-1]]
    return list(dict.fromkeys(out))


def export_nir(net, path: str | os.PathLike, compiled=None, force: bool = False) -> Path:
    """Write ``net`` as a ``.nir`` file (atomically; nothing is left on failure). An existing
    ``path`` is replaced only with ``force`` (the rules of :mod:`deploy.outputs`)."""
    nir = require_nir()
    graph = to_nir(net, compiled)
    # built in memory and written as plain bytes (deploy.runfile does the same): on a full
    # disk h5py's own write fails inside HDF5, and closing that file raised a RuntimeError
    # traceback (or crashed the interpreter); a plain write is one OutputError line
    buffer = io.BytesIO()
    nir.write(buffer, graph)
    return write_bytes(path, buffer.getvalue(), force=force, parents=True)


def from_nir(graph, dt: float | None = None):
    """Rebuild a Network from a NIR graph or ``.nir`` path: :func:`deploy.nir_import.read_nir`
    (kept under this name for older callers)."""
    from deploy.nir_import import read_nir
    return read_nir(graph, dt)
