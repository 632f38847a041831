"""NIR export and import of NeuromorphicDevice networks (``nir`` package, ``.nir`` HDF5 files).

Mapping (NIR 1.0.x node types; every field of the network survives export + import):

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
population ``P`` w/o targets an ``Output`` ``P.out`` of its spikes
===========================  ===============================================================

Conventions written into the graph metadata (``neuroedge_*`` keys) and stated here, since
NIR is continuous-time and leaves discretisation to each backend:

- ``dt`` in seconds; time constants in seconds; ``v`` and weights in the network's unit;
- update order: a step's input arrives, the currents then the membrane update with it,
  strict threshold ``v > v_threshold``, then reset; ``reset`` is ``value`` (NIR's
  ``v <- v_reset``) or ``subtract`` (``v <- v - (v_threshold - v_reset)``), per population
  in its node metadata, with ``method`` (``euler`` | ``exact``) and ``refractory``;
- a spike counts as one step of ``S = 1`` (snnTorch's reading of NIR);
- a synapse delay of ``d`` steps = the one step every spike takes + a NIR ``Delay`` of
  ``(d - 1) dt``; the one-step transmission is the recurrent step snnTorch's RLeaky /
  RSynaptic also take.

Dense ``Linear`` weights are what NIR offers: synapses repeated between the same pair with
the same delay are summed (the import then gives one synapse). Custom neuron kernels have
no NIR node and are refused.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from deploy.errors import ExportError
from deploy.export import atomic_output

FORMAT_KEY = "neuroedge_format"
FORMAT_VALUE = "neuroedge.nir/1"
SUFFIX = ".neurons"   # population P is node "P.neurons" (snnTorch keys recurrent
                      # subgraphs by the part before the first dot, which must be free)


def _node(name: str, net) -> str:
    return f"{name}{SUFFIX}" if name in net.populations else name


def _pop(node: str) -> str:
    return node[:-len(SUFFIX)] if node.endswith(SUFFIX) else node


def _need_nir():
    try:
        import nir
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ExportError("NIR export needs the 'nir' package: "
                          "pip install 'neuroedge[export]'") from exc
    return nir


def to_nir(net, compiled=None):
    """The network as a ``nir.NIRGraph``; with ``compiled``, its quantised weights."""
    nir = _need_nir()
    nodes, edges = {}, []
    for name, src in net.sources.items():
        meta = {"neuroedge_kind": src.kind, "seed": src.seed}
        if src.kind == "events":
            meta.update(steps=src.steps, index=src.index, payload=src.payload)
        else:
            meta["rate_hz"] = src.rate_hz
        nodes[name] = nir.Input({"input": np.array([src.n])}, metadata=meta)
    for pname, pop in net.populations.items():
        name = _node(pname, net)
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
        if not any(p.pre == pname for p in net.projections.values()):
            # sinks only: snnTorch's importer (nirtorch) does not return from mid-graph
            # Output nodes and hangs on them
            nodes[f"{pname}.out"] = nir.Output({"output": np.array([pop.n])})
            edges.append((name, f"{pname}.out"))
    for proj in net.projections.values():
        w = proj.weight if compiled is None else compiled.weights_of(proj.name)
        n_pre, n_post = net.size_of(proj.pre), net.size_of(proj.post)
        post = net.populations[proj.post]
        target = _node(proj.post, net) if post.n_channels == 1 or post.model != "cuba_lif" \
            else f"{proj.post}.syn{proj.channel}"
        for d in np.unique(proj.delay):
            sel = proj.delay == d
            dense = np.zeros((n_post, n_pre))
            np.add.at(dense, (proj.post_idx[sel], proj.pre_idx[sel]), w[sel])
            lin = f"{proj.name}.d{int(d)}"
            nodes[lin] = nir.Linear(weight=dense, metadata={"projection": proj.name,
                                                            "delay_steps": int(d),
                                                            "channel": proj.channel})
            edges.append((_node(proj.pre, net), lin))
            if d > 1:
                dl = f"{lin}.delay"
                nodes[dl] = nir.Delay(delay=np.full(n_post, (d - 1) * net.dt))
                edges += [(lin, dl), (dl, target)]
            else:
                edges.append((lin, target))
    meta = {FORMAT_KEY: FORMAT_VALUE, "dt": net.dt, "neuroedge_time_unit": "s",
            "neuroedge_update_order": "input, currents, membrane, strict threshold, reset",
            "neuroedge_delay": "d steps = 1 step transmission + Delay((d-1) dt)",
            "neuroedge_probes": ";".join(f"{t}:{w}" for t, w in net.probes)}
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata=meta, type_check=False)


def export_nir(net, path: str | os.PathLike, compiled=None, force: bool = False) -> Path:
    """Write ``net`` as a ``.nir`` file (atomically; nothing is left on failure). An existing
    ``path`` is replaced only with ``force`` (the rules of :mod:`deploy.outputs`)."""
    nir = _need_nir()
    graph = to_nir(net, compiled)
    with atomic_output(path, force=force) as tmp:
        nir.write(tmp, graph)
    return Path(path)


def from_nir(graph, dt: float | None = None):
    """Rebuild a Network from a NIR graph or ``.nir`` path written by :func:`to_nir`.

    Graphs from elsewhere import when they use the node types above; ``dt`` must then be
    given (NIR carries no time step).
    """
    nir = _need_nir()
    from sim.neuromorphic import Network
    if isinstance(graph, (str, os.PathLike)):
        graph = nir.read(graph, type_check=False)  # a source-less network has no Input
    meta = dict(graph.metadata or {})
    dt = dt if dt is not None else meta.get("dt")
    if dt is None:
        raise ExportError("NIR import: the graph has no 'dt' in its metadata; pass dt= "
                          "(seconds), since NIR is continuous-time")
    net = Network(dt=float(dt))
    nodes = graph.nodes
    incoming: dict[str, list[str]] = {}
    for a, b in graph.edges:
        incoming.setdefault(b, []).append(a)
    for name, node in nodes.items():
        if isinstance(node, nir.Input):
            m = node.metadata or {}
            n = int(np.prod(node.input_type["input"]))
            if m.get("neuroedge_kind") == "poisson":
                net.poisson(name, n, m["rate_hz"], seed=int(m.get("seed", 0)))
            else:
                steps = m.get("steps", np.zeros(0))
                net.spikes(name, n, steps=steps, index=m.get("index", np.zeros(0)),
                           payload=m.get("payload"))
    for node_name, node in nodes.items():
        name = _pop(node_name)
        m = dict(node.metadata or {})
        common = {"method": str(m.get("method", "euler")), "reset": str(m.get("reset", "value"))}
        extra = {k: m[k] for k in ("refractory", "v_init") if k in m}
        if "i_inj" in m:
            common["i_inj"] = m["i_inj"]
        if isinstance(node, nir.CubaLIF):
            net.population(name, node.tau_mem.size, "cuba_lif", tau_syn=node.tau_syn,
                           tau_mem=node.tau_mem, r=node.r, v_leak=node.v_leak,
                           v_threshold=node.v_threshold, v_reset=_reset(node),
                           w_in=np.broadcast_to(node.w_in, node.tau_mem.shape), **common,
                           **extra)
        elif isinstance(node, nir.LIF):
            syns = sorted((s for s in incoming.get(node_name, []) if isinstance(nodes[s], nir.LI)),
                          key=lambda s: int(nodes[s].metadata.get("channel", 0)))
            if syns:
                net.population(name, node.tau.size, "cuba_lif", n_channels=len(syns),
                               tau_syn=tuple(nodes[s].tau for s in syns), tau_mem=node.tau,
                               r=node.r, v_leak=node.v_leak, v_threshold=node.v_threshold,
                               v_reset=_reset(node), w_in=nodes[syns[0]].r, **common, **extra)
            else:
                net.population(name, node.tau.size, "lif", tau_mem=node.tau, r=node.r,
                               v_leak=node.v_leak, v_threshold=node.v_threshold,
                               v_reset=_reset(node), **common, **extra)
        elif isinstance(node, nir.IF):
            net.population(name, node.r.size, "if", r=node.r, v_threshold=node.v_threshold,
                           v_reset=_reset(node), **common, **extra)
    outgoing: dict[str, list[str]] = {}
    for a, b in graph.edges:
        outgoing.setdefault(a, []).append(b)
    projs: dict[str, list] = {}
    for name, node in nodes.items():
        if not isinstance(node, (nir.Linear, nir.Affine)):
            continue
        if isinstance(node, nir.Affine) and np.any(node.bias):
            raise ExportError(f"NIR import: Affine node {name!r} has a bias; the engine "
                              "models biases as injected currents, not synapses")
        m = node.metadata or {}
        (pre,) = incoming[name]
        (nxt,) = outgoing[name]
        delay = int(m.get("delay_steps", 1))
        if isinstance(nodes[nxt], nir.Delay):
            d = np.unique(nodes[nxt].delay)
            delay = 1 + int(round(float(d[0]) / dt))
            (nxt,) = outgoing[nxt]
        channel = 0
        if isinstance(nodes[nxt], nir.LI):
            channel = int(nodes[nxt].metadata.get("channel", 0))
            (nxt,) = outgoing[nxt]
        post_i, pre_i = np.nonzero(node.weight)
        key = str(m.get("projection", name))
        projs.setdefault(key, []).append((_pop(pre), _pop(nxt), channel, pre_i, post_i,
                                          node.weight[post_i, pre_i], delay))
    for key, parts in projs.items():
        pre, post, channel = parts[0][:3]
        net.connect(pre, post, pre_idx=np.concatenate([p[3] for p in parts]),
                    post_idx=np.concatenate([p[4] for p in parts]),
                    weight=np.concatenate([p[5] for p in parts]),
                    delay=np.concatenate([np.full(p[3].size, p[6]) for p in parts]),
                    channel=channel, name=key)
    probes = meta.get("neuroedge_probes", "")
    probes = probes.decode() if isinstance(probes, bytes) else str(probes)
    for entry in probes.split(";"):
        if entry:
            target, what = entry.split(":")
            net.probe(target, what)
    return net


def _reset(node) -> np.ndarray:
    v = getattr(node, "v_reset", None)
    return np.zeros_like(node.v_threshold) if v is None else v
