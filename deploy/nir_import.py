"""NIR import: a ``nir.NIRGraph`` or ``.nir`` file from any producer as an engine Network.

:func:`read_nir` turns the graph into a :class:`sim.neuromorphic.Network`; :func:`stimulus`
attaches spikes to its ``Input``. Two kinds of graph are read:

- **this project's exports** (graph metadata ``neuroedge_format``, :mod:`deploy.nir_export`):
  every field comes back as written, delays included, and the network's order of sources,
  populations and projections (graph metadata ``neuroedge_order``; without it, as in files
  written before it, the graph's order, alphabetical in a file), its projections' ``kernel_weights``
  and its listed synapses of weight 0 (``Linear`` metadata ``kernel_weights``,
  ``zero_synapses``), except what :mod:`deploy.nir_export` lists under "Round trip";
- **other producers** (snnTorch's ``export_to_nir``, Norse's ``to_nir``, hand-built
  graphs): every NIR 1.0.8 primitive (:data:`READ_NODES`) and nested ``NIRGraph``
  subgraphs (older snnTorch RLeaky / RSynaptic exports; nirtorch 2.x writes them flat as
  ``lif2.lif`` + ``lif2.w_rec``):

  - a weight of 0 in a matrix is no synapse (this project's own ``zero_synapses``
    metadata is read only from its own exports), but the projection's
    ``dense_connections`` keeps it for NeuroBench's Dense synaptic operations, which count
    every weight of the matrix (:func:`deploy.nir_ops.connection_map`);
  - the stateless nodes between two spiking layers (``Linear``, ``Affine``, ``Scale``,
    ``Conv1d``, ``Conv2d``, ``SumPool2d``, ``AvgPool2d``, ``Flatten``: the same C-order
    values under the shape it gives the next node) compose into one projection
    (:mod:`deploy.nir_ops`); a chain with only convolutions, pooling and Scale is marked
    weight-shared (``Projection.kernel_weights``: what a chip with shared kernels
    stores, see :mod:`sim.neuromorphic.compiler`);
  - ``LIF``, ``CubaLIF``, ``IF`` are spiking populations; ``Threshold`` a stateless one
    (``tau = dt``, ``r = 1``: ``v[t]`` is the step's input, a spike iff it exceeds the
    threshold); ``LI``, ``I`` and ``CubaLI`` non-spiking readouts (threshold
    :data:`NEVER`), which must end at an ``Output``;
  - a ``Delay`` before the first weight node of a path delays each source neuron (NIR's
    ``y(t) = x(t - delay)`` on its own input), one after the last each target neuron;
  - a cycle through stateless nodes only (no neuron to end it; anywhere in the graph),
    an edge into an ``Input`` or out of an ``Output``, parallel branches that
    join into more than :data:`MAX_PATHS` paths, a ``Delay`` that is not a whole number of
    steps of ``dt`` or sits between two weight nodes, a tensor whose layout differs from
    its target's per-neuron parameters, parameters that are no real numbers, a node of
    over :data:`MAX_NEURONS` neurons and more synapses than
    :data:`deploy.nir_ops.MAX_SYNAPSES` are refused naming the nodes;
  - a neuron node with scalar parameters takes its size from the tensor that feeds it;
    an ``Input`` typed with a leading batch of 1 (Norse's export) feeds a conv unbatched.

Discretisation of a foreign graph (NIR itself is continuous-time):

- ``dt`` comes from the graph metadata (``dt``, or ``time_step``) or, for a graph that gives
  none, the ``dt=`` argument (one that differs from the metadata's is refused); without
  either the import stops and asks for it. snnTorch writes no ``dt``; its export
  uses ``dt = 1e-4`` s (``tau = dt / (1 - beta)``, ``r = tau / dt``), which the error names
  when the graph has that form.
- neurons integrate with forward Euler (``method="euler"``): ``v[t] = (1 - dt/tau) v[t-1]
  + (dt/tau) r I[t]``, which for snnTorch's parameters is exactly ``beta v + I`` (Leaky,
  RLeaky) and ``syn = alpha syn + x; mem = beta mem + syn`` (Synaptic).
- snnTorch's layers act in the step their input arrives; in the engine every spike takes at
  least one step. The import therefore places each population at its depth ``L`` (longest
  feed-forward path from an ``Input``), gives an edge ``a -> b`` the delay
  ``L_b - L_a`` (+1 on a recurrent edge, the step snnTorch's RLeaky takes; + a ``Delay``
  node's steps), and starts a population's biases at step ``L``: the run is the producer's
  run shifted by ``L`` steps per population, spike for spike. An edge back from a deeper
  population (a loop through several) therefore needs a ``Delay`` of at least the depth
  difference, and is refused naming it without one.
- every neuron starts at rest, ``v = v_leak`` (0 for ``IF``, ``I`` and ``Threshold``, which
  have no leak), with no synaptic current: NIR's fixed point with no input (this project's
  exports start as written: ``v_init``, else ``v_reset``).
- ``Affine.bias`` is an input current, added once however many edges enter the node (NIR
  sums a node's inputs: ``y = W (xA + xB) + b``) and once per route from it to a
  population: into a ``LIF`` / ``IF`` target it becomes the
  population's injected current ``i_inj`` (added to the synaptic input, the same scaling as
  a weight); into a ``CubaLIF`` it enters the synaptic current (NIR's ``tau_syn dI/dt = -I
  + w_in (W S + b)``), which a chip's compartment bias (into ``v``) cannot express, so it
  becomes an input source that fires every step with weights ``b`` (priced as such).

Reset rule (``reset=`` argument, or the file):

- a node's metadata ``reset`` (this project's exports, or ``reset_mechanism`` from another
  producer) is honoured;
- otherwise the ``reset=`` argument decides: ``"value"`` (NIR's ``v <- v_reset``),
  ``"subtract"`` (``v <- v - (v_threshold - v_reset)`` right after the spike) or
  ``"snntorch"`` (snnTorch's default ``reset_mechanism="subtract"``, ``reset_delay=True``:
  the threshold is subtracted in the next step after the decay, ``mem = beta mem + x -
  thr``; the engine does it exactly as a subtraction of ``thr / beta`` right after the
  spike);
- with neither, a warning names the assumption: ``"snntorch"`` when every neuron node has
  snnTorch's export form (``v_leak = 0``, ``v_reset = 0``, ``r = tau / 1e-4``), since
  snnTorch's export does not record its reset mechanism; ``"value"`` (NIR's definition)
  otherwise.

Which reader takes which graph (of this project's exports, :mod:`deploy.nir_export`):
``nir.read`` with its default type check takes all of them; snnTorch's ``import_from_nir``
takes ``LIF`` / ``CubaLIF`` / ``IF`` populations with ``v_leak = 0``, one threshold per
population and ``r = tau/1e-4``, fed forward or with one recurrent ``Linear`` per population
(its spikes are ours only for ``reset="value"`` with ``v_reset = 0``: it resets every
neuron to 0; :mod:`deploy.nir_export` states the conditions);
Norse's ``from_nir`` takes ``LIF`` / ``CubaLIF`` / ``IF`` / ``Linear`` graphs; neither
takes multi-channel CUBA (``LI`` per channel) or ``Delay`` nodes.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from deploy import events, nir_ops
from deploy.errors import ExportError
from deploy.hdf5_checks import check_structure
from deploy.nir_format import (
    FORMAT_KEY,
    FORMAT_VALUE,
    KERNEL_WEIGHTS_KEY,
    ORDER_KEY,
    PLACEHOLDER_KEY,
    PROBES_KEY,
    ZERO_SYNAPSES_KEY,
    population_name,
    probe_entries,
    require_nir,
    whole_number,
)
from hw_profiles.errors import not_a_file

RESETS = ("value", "subtract", "snntorch")
READ_NODES = ("Input", "Output", "Linear", "Affine", "Scale", "Conv1d", "Conv2d", "SumPool2d",
              "AvgPool2d", "Flatten", "Delay", "LIF", "CubaLIF", "IF", "Threshold", "LI", "I",
              "CubaLI")


MAX_NEURONS = 20_000_000
"""The most neurons one Input or neuron node may declare (its state is several float64
vectors: ~1 GB at this size), checked before anything of that size is allocated."""

MAX_PATHS = 100_000
"""The most emitter-to-neuron path steps one emitter's stateless nodes may give (parallel
branches that join multiply them: 17 two-way splits and joins in a row give 131,072)."""


def linear_node_types() -> tuple:
    """The NIR node classes composed into a projection's matrix (deploy.nir_ops)."""
    nir = require_nir()
    return (nir.Linear, nir.Affine, nir.Scale, nir.Conv1d, nir.Conv2d, nir.SumPool2d,
            nir.AvgPool2d, nir.Flatten)
SNNTORCH_DT = 1e-4   # the time step snnTorch's export_to_nir assumes (tau = dt/(1-beta))
_RESET_WORDS = {"value": "value", "zero": "value", "subtract": "subtract",
                "snntorch": "snntorch"}


def _err(msg: str) -> ExportError:
    return ExportError(f"NIR import: {msg}")


def _check_euler(k: str, params: dict, dt: float) -> None:
    """Forward Euler, how a NIR graph runs here, diverges where ``dt > 2 tau``: refused naming
    the ``dt`` that runs the node (the engine's own check would advise a method the import
    does not take). Norse's ``to_nir`` writes taus ``dt`` times too small (norse/norse#411):
    its graphs run as Norse ran them at Norse's ``dt`` squared."""
    for key, value in params.items():
        if not key.startswith("tau"):
            continue
        for tau in (value if isinstance(value, tuple) else (value,)):
            least = float(np.min(tau))
            if least <= 0:
                raise _err(f"node {k!r}: {key} = {least:g} s; a time constant must be > 0 "
                           "(seconds)")
            if dt > 2 * least:
                raise _err(f"node {k!r}: {key} = {least:g} s is under half of dt = {dt:g} s, "
                           f"where forward Euler diverges; give dt <= {2 * least:g} s (--dt, "
                           "dt=). A graph from Norse's to_nir has taus dt times too small "
                           "(norse/norse#411): read it at Norse's dt squared, 1e-06 s for its "
                           "default 1 ms")


def load(graph_or_path):
    """A ``nir.NIRGraph`` as given, or read from a ``.nir`` path (no type check: foreign
    files often fail it; :func:`read_nir` checks what it uses). The file is opened once and
    its HDF5 structure checked before ``nir.read`` reads that same open file: links, external
    raw storage and virtual datasets (data from other files) and more decompressed bytes
    than :mod:`deploy.hdf5_checks` allows are refused."""
    nir = require_nir()
    if isinstance(graph_or_path, nir.NIRGraph):
        return graph_or_path
    if isinstance(graph_or_path, (str, os.PathLike)):
        import h5py
        path = Path(graph_or_path)
        if not path.is_file():
            raise _err(f"{str(path)!r} is not a file; expected a .nir file")
        checked = False
        with open(path, "rb") as raw:
            try:
                with h5py.File(raw, "r") as f:
                    check_structure(f, f"{str(path)!r}", "NIR files",
                                    os.fstat(raw.fileno()).st_size, _err)
                checked = True
                raw.seek(0)
                return nir.read(raw, type_check=False)
            except ExportError:
                raise
            except Exception as exc:   # h5py / nir raise many kinds on a foreign file
                # the node types are listed only from a file whose structure passed
                reason = _unreadable_reason(path, nir, exc) if checked else \
                    (str(exc) or type(exc).__name__)
                raise _err(f"{str(path)!r} is not a readable NIR file ({reason})") from None
    raise _err(f"expected a nir.NIRGraph or a .nir path, got {type(graph_or_path).__name__}")


def _unreadable_reason(path, nir, exc) -> str:
    """Why ``nir.read`` failed, in words naming the node: nir asserts on a node type it does
    not know (an empty AssertionError), compares an array type field with a string (numpy's
    "truth value of an array"), unpacks edges that are no pairs and raises its own
    constructors' errors without the node's name; the file's nodes are walked to find the
    first that is wrong (:func:`_node_problem`)."""
    import h5py
    from nir.serialization import read_node
    known = {name for name in dir(nir) if isinstance(getattr(nir, name), type)
             and issubclass(getattr(nir, name), nir.NIRNode) and name != "NIRNode"}
    problem = None
    try:
        with h5py.File(path, "r") as f:
            if isinstance(f.get("node"), h5py.Group):
                problem = _node_problem(f["node"], "", known, read_node)
    except Exception:   # not HDF5 at all, or stranger still: the exception itself is the reason
        pass
    return problem or str(exc) or type(exc).__name__


def _node_problem(group, name: str, known: set, read_node) -> str | None:
    """The first thing wrong with the node ``group`` of a ``.nir`` file (``name`` as the
    import names it, subgraphs' nodes as ``sub.node``; ``""`` the graph itself), or None."""
    import h5py
    label = f"node {name!r}" if name else "the graph"
    t = group.get("type")
    if not isinstance(t, h5py.Dataset):
        return f"{label} has no type field; expected one string naming a NIR node type"
    if t.shape != () or t.dtype.kind not in "SOU":
        return (f"{label}: its type field is an array of shape {t.shape} ({t.dtype}); "
                "expected one string naming a NIR node type")
    value = t[()]
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if text not in known:
        shown = text[:40].encode("unicode_escape").decode("ascii")
        return (f"{label} has type {shown!r}, which NIR does not define; NIR defines "
                f"{', '.join(sorted(known))}")
    if text == "NIRGraph":
        edges, nodes = group.get("edges"), group.get("nodes")
        where = "the graph's edges" if not name else f"the edges of subgraph {name!r}"
        if not isinstance(edges, h5py.Dataset):
            return f"{where} are missing; expected pairs of node names, shape (k, 2)"
        if edges.size and (edges.ndim != 2 or edges.shape[1] != 2
                           or edges.dtype.kind not in "SOU"):
            return (f"{where} are an array of shape {edges.shape} ({edges.dtype}); expected "
                    "pairs of node names, shape (k, 2)")
        if not isinstance(nodes, h5py.Group):
            return f"{label} holds no group of nodes; expected one ('nodes')"
        for key in nodes:
            problem = _node_problem(nodes[key], f"{name}.{key}" if name else key, known,
                                    read_node)
            if problem:
                return problem
        return None
    try:
        read_node(group)
    except Exception as exc:   # nir's constructors raise ValueError, TypeError, ...
        why = (str(exc).splitlines() or [""])[0] or type(exc).__name__
        fields = ", ".join(f"{k} {group[k].shape}" for k in group
                           if k != "type" and isinstance(group[k], h5py.Dataset))
        return f"{label} ({text}) is not a valid NIR node ({why}): its fields {fields}"
    return None


# -- graph preprocessing -------------------------------------------------------------------
def _flatten(graph, nir, prefix=""):
    """(nodes, edges, identity names): nested subgraphs inlined with ``key.`` prefixes; their
    inner Input/Output are identity (pass-through) nodes."""
    nodes, edges, ident = {}, [], set()
    inner_in, inner_out = {}, {}
    for key, node in graph.nodes.items():
        name = prefix + key
        if isinstance(node, nir.NIRGraph):
            sub_nodes, sub_edges, sub_ident = _flatten(node, nir, name + ".")
            nodes.update(sub_nodes)
            edges += sub_edges
            ident |= sub_ident
            inner_in[name] = [name + "." + k for k, n in node.nodes.items()
                              if isinstance(n, nir.Input)]
            inner_out[name] = [name + "." + k for k, n in node.nodes.items()
                               if isinstance(n, nir.Output)]
            ident |= set(inner_in[name]) | set(inner_out[name])
        else:
            nodes[name] = node
            if prefix and isinstance(node, (nir.Input, nir.Output)):
                ident.add(name)
    for a, b in graph.edges:
        a, b = prefix + a, prefix + b
        for x in inner_out.get(a, [a]):
            for y in inner_in.get(b, [b]):
                edges.append((x, y))
    return nodes, list(dict.fromkeys(edges)), ident


_PARAM_FIELDS = ("tau", "tau_mem", "tau_syn", "r", "v_threshold", "threshold", "v_leak")
NEVER = float(np.finfo(np.float64).max)
"""Threshold of a non-spiking readout population (LI, I, CubaLI): ``v > NEVER`` never holds."""


def _param_shape(node) -> tuple[int, ...]:
    """The shape of a neuron node's largest parameter array."""
    arrs = [np.asarray(getattr(node, k)) for k in _PARAM_FIELDS
            if getattr(node, k, None) is not None]
    return max((a.shape for a in arrs), key=lambda s: int(np.prod(s)), default=(1,))


def _size(node, name, shape) -> int:
    """Neurons of ``node``: its tensor's size; each parameter is a scalar or one per neuron."""
    arrs = [np.asarray(getattr(node, k)) for k in _PARAM_FIELDS
            if getattr(node, k, None) is not None]
    n = max([_count(name, shape)] + [a.size for a in arrs])
    if any(a.size not in (1, n) for a in arrs):
        raise _err(f"node {name!r} ({type(node).__name__}): parameters of sizes "
                   f"{[a.size for a in arrs]} for a {tuple(shape)} tensor; expected one "
                   f"value or {n}")
    return int(n)


def _count(name: str, shape) -> int:
    """The neurons of a ``shape`` node ``name`` declares, at most :data:`MAX_NEURONS`."""
    n = float(np.prod(np.asarray(shape, dtype=np.float64)))   # float: no int64 overflow
    if not n <= MAX_NEURONS:
        raise _err(f"node {name!r} declares {n:,.0f} neurons (shape "
                   f"{tuple(int(d) for d in np.asarray(shape).ravel())}); the "
                   f"simulator takes at most {MAX_NEURONS:,} per node")
    return int(n)


def _vec(x, n) -> np.ndarray:
    return np.broadcast_to(np.asarray(x, dtype=np.float64).ravel(), (n,)).copy() \
        if np.asarray(x).size == 1 else np.asarray(x, dtype=np.float64).ravel().copy()


def _snntorch_form(node, nir) -> bool:
    """The parameters snnTorch's export_to_nir writes: v_leak 0, v_reset 0, r = tau/1e-4
    (CubaLIF also w_in = tau_syn/1e-4)."""
    def close(a, b):
        return np.allclose(np.asarray(a, float), np.asarray(b, float), rtol=1e-6, atol=0)
    if isinstance(node, nir.CubaLIF):
        return (close(node.v_leak, 0) and close(_reset_of(node), 0)
                and close(node.r, node.tau_mem / SNNTORCH_DT)
                and close(node.w_in, node.tau_syn / SNNTORCH_DT))
    if isinstance(node, nir.LIF):
        return close(node.v_leak, 0) and close(_reset_of(node), 0) \
            and close(node.r, node.tau / SNNTORCH_DT)
    return False


def _reset_of(node):
    v = getattr(node, "v_reset", None)
    return np.zeros_like(np.asarray(node.v_threshold, float)) if v is None else v


def _graph_dt(graph, strict: bool = True):
    """The ``dt`` the graph's metadata gives (None: none); one that is no number is refused,
    or, with ``strict`` False (a ``dt=`` was given, which the error advises), ignored."""
    meta = dict(graph.metadata or {})
    for key in ("dt", "time_step", "timestep"):
        if key in meta:
            value = np.asarray(meta[key]).ravel()
            try:
                return float(value[0])
            except (IndexError, TypeError, ValueError):
                if not strict:
                    return None
                raise _err(f"the graph's metadata {key} = {meta[key]!r} is not a time step "
                           "in seconds; pass dt= (--dt on the command line)") from None
    return None


def _check_delays(nodes, dt: float, nir) -> None:
    """Every ``Delay`` node holds finite delays >= 0 that are whole numbers of steps (the
    engine delivers a spike at a step, and rounding a delay would move spikes)."""
    for k, v in nodes.items():
        if not isinstance(v, nir.Delay):
            continue
        d = nir_ops.real_values(k, "delay", v.delay, " (seconds)").ravel()
        if d.size and not np.isfinite(d).all():
            raise _err(f"node {k!r} is a Delay with non-finite values; expected delays in "
                       "seconds, finite and >= 0")
        if d.size and d.min() < 0:
            raise _err(f"node {k!r} is a Delay of {d.min():g} s; delays must be >= 0")
        steps = d / dt
        off = np.abs(steps - np.rint(steps))
        if d.size and off.max() > 1e-6 * max(1.0, float(np.abs(steps).max())):
            i = int(off.argmax())
            raise _err(f"node {k!r} is a Delay of {d[i]:g} s, {steps[i]:g} time steps of dt = "
                       f"{dt:g} s; a delay must be a whole number of steps: give a dt that "
                       "divides it (dt=, --dt)")


def _check_edges(edges, nodes, ident, nir) -> None:
    """An edge into a graph's ``Input`` or out of its ``Output`` has no meaning in NIR (an
    Input is where spikes enter, an Output where they leave); the walk from the Inputs
    ignored them without a word. Nested subgraphs' own Input/Output pass through."""
    for a, b in edges:
        if b not in ident and isinstance(nodes[b], nir.Input):
            raise _err(f"edge {a!r} -> {b!r} ends at an Input node; an Input is where the "
                       "graph's spikes enter and takes no edge: remove the edge (or feed a "
                       "weight node instead)")
        if a not in ident and isinstance(nodes[a], nir.Output):
            raise _err(f"edge {a!r} -> {b!r} starts at an Output node; an Output ends the "
                       f"graph and sends nothing on: connect the node that feeds {a!r} to "
                       f"{b!r} instead")


def _check_numbers(nodes, names, nir) -> None:
    """The parameters of the neuron nodes ``names`` hold real numbers (a string or a compound
    record crashed the snnTorch-form test with a TypeError)."""
    for k in names:
        for field in (*_PARAM_FIELDS, "v_reset", "w_in"):
            value = getattr(nodes[k], field, None)
            if value is not None:
                nir_ops.real_values(k, field, value,
                                    " (seconds)" if field.startswith("tau") else "")


def _stateless_cycle(nodes, succ, stateless: set) -> list[str] | None:
    """The first cycle of stateless nodes (no neuron in it), anywhere in the graph: the walk
    from the Inputs finds those it reaches, but a loop no Input reaches was accepted."""
    color: dict[str, int] = {}
    for root in nodes:
        if root not in stateless or color.get(root):
            continue
        path, color[root] = [root], 1
        stack = [iter(succ.get(root, []))]
        while stack:
            nxt = next((b for b in stack[-1] if b in stateless), None)
            if nxt is None:
                color[path.pop()] = 2
                stack.pop()
            elif color.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not color.get(nxt):
                color[nxt] = 1
                path.append(nxt)
                stack.append(iter(succ.get(nxt, [])))
    return None


def _channel(nodes, k) -> int:
    """The synaptic channel an ``LI`` node of a neuroedge file stands for (0: none)."""
    if k is None:
        return 0
    return whole_number(dict(nodes[k].metadata or {}), "channel", k, 0, 0,
                        "the synaptic channel the node stands for")


def _free(name: str, taken) -> str:
    """``name``, or ``name#2``, ``name#3`` ... when it is taken."""
    out, i = name, 1
    while out in taken:
        i += 1
        out = f"{name}#{i}"
    return out


# -- read ----------------------------------------------------------------------------------
def read_nir(graph_or_path, dt: float | None = None, *, reset: str | None = None):
    """The NIR graph (or ``.nir`` file) as a Network (see the module docstring for the rules).

    Parameters
    ----------
    graph_or_path : ``nir.NIRGraph`` or path of a ``.nir`` file
    dt : time step in s, for a graph whose metadata gives none; one that differs from the
        metadata's is refused
    reset : ``"value"`` | ``"subtract"`` | ``"snntorch"``, for nodes whose reset the file
        does not state (a stated one wins)

    Every population's spikes are probed; ``net.nir_inputs`` lists the sources that stand
    for the graph's ``Input`` nodes (what :func:`stimulus` may drive).
    """
    nir = require_nir()
    from sim.neuromorphic import Network
    graph = load(graph_or_path)
    label = str(graph_or_path) if isinstance(graph_or_path, (str, os.PathLike)) else "the graph"
    if reset is not None and reset not in _RESET_WORDS:
        raise _err(f"reset={reset!r} is unknown; expected one of {RESETS}")
    ours = (graph.metadata or {}).get(FORMAT_KEY) in (FORMAT_VALUE, FORMAT_VALUE.encode())
    nodes, edges, ident = _flatten(graph, nir)
    if ours:
        nodes = _written_order(graph, nodes)
    dangling = sorted({k for edge in edges for k in edge if k not in nodes})
    if dangling:
        raise _err(f"{label} has edges naming nodes it does not hold: {', '.join(dangling)}; "
                   f"every edge must join two of its nodes ({', '.join(sorted(nodes))})")
    _check_edges(edges, nodes, ident, nir)
    neuron_types = (nir.LIF, nir.CubaLIF, nir.IF)
    spiking = [k for k, v in nodes.items() if isinstance(v, neuron_types)]
    # foreign LI / I / CubaLI: non-spiking readouts (a population that never fires);
    # Threshold: a stateless spiking layer (Heaviside of the step's input)
    readout_types = (nir.LI, nir.I, nir.CubaLI)
    readouts = [k for k, v in nodes.items() if isinstance(v, readout_types) and k not in ident
                and not (ours and "channel" in (v.metadata or {}))]
    thresholds = [k for k, v in nodes.items() if isinstance(v, nir.Threshold)]
    neurons = spiking + thresholds + readouts
    target_types = (*neuron_types, nir.Threshold, *readout_types)
    channels = [k for k, v in nodes.items() if isinstance(v, nir.LI) and k not in ident
                and k not in readouts]
    _check_numbers(nodes, neurons + channels, nir)
    stated_dt = _graph_dt(graph, strict=dt is None)
    if dt is not None and stated_dt is not None \
            and not np.isclose(float(dt), stated_dt, rtol=1e-6, atol=0):
        raise _err(f"dt = {float(dt):g} s differs from the dt = {stated_dt:g} s the graph's "
                   "metadata gives; dt= (--dt) is for a graph that gives none: leave it out "
                   "or pass the graph's own")
    if dt is None:
        dt = stated_dt
    if dt is None:
        hint = ""
        if spiking and all(_snntorch_form(nodes[k], nir) for k in spiking):
            hint = (f" (its neurons have snnTorch's export form r = tau/dt with dt = "
                    f"{SNNTORCH_DT:g} s: pass dt={SNNTORCH_DT:g})")
        raise _err(f"{label} has no 'dt' in its metadata; pass dt= (seconds; --dt on the "
                   f"command line), since NIR is continuous-time{hint}")
    dt = float(dt)
    net = Network(dt=dt)
    _check_delays(nodes, dt, nir)
    succ: dict[str, list[str]] = {}
    pred: dict[str, list[str]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
        pred.setdefault(b, []).append(a)
    linear_types = linear_node_types()
    for k, v in nodes.items():
        if k in ident or isinstance(v, (*target_types, nir.Input, nir.Output, nir.Delay,
                                        *linear_types)):
            continue
        if v is None:   # nirtorch's extraction keeps a module its producer could not map
            raise _err(f"node {k!r} is empty (None): its producer wrote no NIR node for that "
                       "layer (Norse's to_nir does so for the cells it cannot export, e.g. "
                       f"LICell); the import reads {', '.join(READ_NODES)}")
        raise _err(f"node {k!r} is a {type(v).__name__}, which the engine has no model for; "
                   f"it reads {', '.join(READ_NODES)}")
    for k in readouts:
        bad = [b for b in succ.get(k, []) if b not in ident
               and not isinstance(nodes[b], nir.Output)]
        if bad:
            raise _err(f"node {k!r} is a {type(nodes[k]).__name__} (a non-spiking readout) "
                       f"feeding {bad[0]!r} ({type(nodes[bad[0]]).__name__}); the engine "
                       "passes spikes only, so a readout must end at an Output (a leaky "
                       "synaptic current into a LIF is a CubaLIF)")
    stateless = set(ident) | set(channels) | {k for k, v in nodes.items()
                                              if isinstance(v, (*linear_types, nir.Delay))}
    loop = _stateless_cycle(nodes, succ, stateless)
    if loop:
        raise _err(f"nodes {' -> '.join(loop)} form a cycle with no neuron in it (an "
                   "algebraic loop the engine cannot step); every cycle must pass through a "
                   "spiking node (LIF, CubaLIF, IF, Threshold)")

    # -- sources (Input nodes) ---------------------------------------------------------------
    inputs = []
    for k, v in nodes.items():
        if not isinstance(v, nir.Input) or k in ident:
            continue
        m = dict(v.metadata or {})
        if m.get(PLACEHOLDER_KEY):
            continue
        n = _count(k, np.asarray(list(v.input_type.values())[0]).ravel())
        inputs.append(k)
        if ours and m.get("neuroedge_kind") == "poisson":
            net.poisson(k, n, m["rate_hz"],
                        seed=whole_number(m, "seed", k, 0, 0, "the Poisson trains' seed"))
        else:
            net.spikes(k, n, steps=m.get("steps", np.zeros(0)),
                       index=m.get("index", np.zeros(0)), payload=m.get("payload"))
    net.nir_inputs = tuple(inputs)

    # -- paths: emitter -> [linear chain] -> [Delay] -> [LI channel] -> neuron ---------------
    # (the chain: Linear, Affine, Conv, pooling and Scale nodes in order, composed into one
    # matrix by deploy.nir_ops; None when the emitter feeds the target one to one)
    def forward(start):
        """Every (chain of linear nodes, delays s, channel node, target, route) from
        ``start``; delays ``(before, after)``: of the ``Delay`` nodes before the chain (one
        per emitter neuron, NIR's ``y(t) = x(t - delay)`` on the emitter's spikes) and after
        it (one per target neuron); the route: every node from ``start`` to the target. A
        Delay between two weight nodes (no per-neuron meaning on either side) is refused,
        and so is a graph whose stateless nodes branch and join into more than
        :data:`MAX_PATHS` paths (each would be composed apart)."""
        out = []
        stack = [(b, (), (0.0, 0.0), None, (start,)) for b in succ.get(start, [])]
        walked = 0
        while stack:
            k, w, d, ch, via = stack.pop()
            walked += 1
            if walked > MAX_PATHS:
                raise _err(f"the stateless nodes after {start!r} branch and join into more "
                           f"than {MAX_PATHS:,} paths to the neurons; merge parallel "
                           "Linear / Affine branches into one node")
            node = nodes[k]
            after = (*via, k)
            if k in ident:
                stack += [(b, w, d, ch, after) for b in succ.get(k, [])]
            elif isinstance(node, linear_types):
                if np.any(d[1]) and not isinstance(node, nir.Flatten):
                    raise _err(f"node {k!r} ({type(node).__name__}) follows a Delay that "
                               f"follows a weight node ({', '.join(w)}) on a path from "
                               f"{start!r}; a Delay is read before the first weight node "
                               "(per source neuron) or after the last (per target neuron)")
                stack += [(b, (*w, k), d, ch, after) for b in succ.get(k, [])]
            elif isinstance(node, nir.Delay):
                delay = np.asarray(node.delay, float)
                d = (d[0] + delay, d[1]) if not w else (d[0], d[1] + delay)
                stack += [(b, w, d, ch, after) for b in succ.get(k, [])]
            elif k in channels:
                stack += [(b, w, d, k, after) for b in succ.get(k, [])]
            elif isinstance(node, target_types):
                # a chain of Flatten nodes only maps one to one, as no chain
                weights = any(not isinstance(nodes[x], nir.Flatten) for x in w)
                out.append((w if weights else None, d, ch, k, after))
            # Output and placeholder sinks end a path
        return out

    emitters = inputs + spiking + thresholds
    paths = [(e, *p) for e in emitters for p in forward(e)]
    if ours:
        placeholder = [k for k, v in nodes.items()
                       if (v.metadata or {}).get(PLACEHOLDER_KEY)]
        paths = [p for p in paths if p[1] not in placeholder]

    # -- depth of every population (foreign graphs: the producer's zero-latency layers) -----
    layered = emitters + readouts   # readouts are targets only
    ff = {e: [] for e in layered}
    back = set()
    color = dict.fromkeys(layered, 0)
    order = inputs + [k for k in neurons if not any(p[4] == k for p in paths)] + neurons
    tgt_of = {}
    for p in paths:
        tgt_of.setdefault(p[0], []).append(p[4])
    for root in order:
        if color[root]:
            continue
        stack = [(root, iter(tgt_of.get(root, [])))]
        color[root] = 1
        while stack:
            u, it = stack[-1]
            v = next(it, None)
            if v is None:
                color[u] = 2
                stack.pop()
            elif color[v] == 1:
                back.add((u, v))
            else:
                ff[u].append(v)
                if color[v] == 0:
                    color[v] = 1
                    stack.append((v, iter(tgt_of.get(v, []))))
    depth = dict.fromkeys(layered, 0)
    indeg = {e: 0 for e in layered}
    for u in ff:
        for v in ff[u]:
            indeg[v] += 1
    queue = [e for e in layered if indeg[e] == 0]
    while queue:
        u = queue.pop()
        for v in ff[u]:
            depth[v] = max(depth[v], depth[u] + 1)
            indeg[v] -= 1
            if indeg[v] == 0:
                queue.append(v)

    # -- tensor shapes and each path's chain as one sparse map (deploy.nir_ops) ------------
    shapes: dict[str, tuple[int, ...]] = {}

    def shape_of(k, seen=()):
        """The tensor shape of emitter/target ``k``: an Input's type, a neuron node's
        parameter shape, or (scalar parameters) what the chain feeding it gives."""
        if k not in shapes:
            node = nodes[k]
            if isinstance(node, nir.Input):
                shp = tuple(int(v) for v in np.asarray(list(node.input_type.values())[0]).ravel())
            else:
                shp = _param_shape(node)
                feed = [p for p in paths if p[4] == k and p[0] not in (*seen, k)]
                if int(np.prod(shp)) <= 1 and feed:
                    shp = chain_shape(feed[0][1], shape_of(feed[0][0], (*seen, k)))
            shapes[k] = shp
        return shapes[k]

    def chain_shape(chain, shp):
        for name in chain or ():
            shp = nir_ops.out_shape(name, nodes[name], shp)
        return shp

    maps: dict[tuple, tuple] = {}
    built = [0]   # synapses built so far: nir_ops.MAX_SYNAPSES bounds them all together

    def chain_map(e, chain):
        """(W, biases, P): the chain from ``e`` as one sparse matrix [out, in]; each bias of
        its nodes carried to the chain's end, ``(index in the chain, vector)``; and ``P`` its
        connections with weights of 0 included (:func:`deploy.nir_ops.connection_map`; None
        when ``W`` holds them all: one weight node without a zero)."""
        if (e, chain) not in maps:
            shp, W, P, biases = shape_of(e), None, None, []
            pattern = sum(not isinstance(nodes[x], nir.Flatten) for x in chain) > 1 or any(
                nir_ops.has_zero_weights(x, nodes[x]) for x in chain)
            for i, name in enumerate(chain):
                limit = nir_ops.MAX_SYNAPSES - built[0]
                label = " -> ".join(chain[:i + 1])
                Wn, bn = nir_ops.linear_map(name, nodes[name], shp, limit)
                if pattern:
                    Pn = nir_ops.connection_map(name, nodes[name], shp, Wn, limit)
                    P = Pn if P is None else nir_ops.compose(label, Pn, P, limit)
                shp = nir_ops.out_shape(name, nodes[name], shp)
                W = Wn if W is None else nir_ops.compose(label, Wn, W, limit)
                biases = [(j, Wn @ c) for j, c in biases]
                if bn is not None:
                    biases.append((i, bn))
            W = W.tocsr()
            built[0] += W.nnz
            maps[(e, chain)] = (W, biases, P)
        return maps[(e, chain)]

    def pname(k):
        return population_name(k) if ours else k

    # -- biases: each bias node's once per route from it to a target -------------------------
    # NIR sums a node's inputs (y = W (xA + xB) + b): a bias reached from two emitters, or
    # by two branches joining before it, is one current; two routes after it are two
    current: dict[str, np.ndarray] = {}      # LIF / IF / LI / I targets: injected current
    source: dict[tuple[str, int], list] = {}   # CubaLIF / CubaLI / channel: a bias source
    routes = set()
    for e, w, _d, ch, k, route in paths:
        for i, b in (chain_map(e, w)[1] if w is not None else ()):
            tail = route[route.index(w[i]):]
            if tail in routes or not np.any(b):
                continue
            routes.add(tail)
            if ch is None and not isinstance(nodes[k], (nir.CubaLIF, nir.CubaLI)):
                current[k] = current.get(k, 0.0) + b
            else:
                entry = source.setdefault((k, _channel(nodes, ch)), [[], 0.0])
                entry[0].append(w[i])
                entry[1] = entry[1] + b

    # -- populations ---------------------------------------------------------------------------
    if reset is not None:
        reset = _RESET_WORDS[reset]
    unstated = [k for k in spiking if "reset" not in (nodes[k].metadata or {})
                and "reset_mechanism" not in (nodes[k].metadata or {})]
    assumed = reset
    if unstated and reset is None:
        snn = all(_snntorch_form(nodes[k], nir) for k in spiking)
        assumed = "snntorch" if snn else "value"
        why = ("snnTorch's default reset_mechanism='subtract' (the nodes have snnTorch's "
               "export form, which does not record the reset)" if snn else
               "NIR's reset to v_reset ('value')")
        warnings.warn(f"NIR import: {label} does not state the reset of "
                      f"{', '.join(unstated)}; assuming {why}; pass reset='value', "
                      "'subtract' or 'snntorch' (--reset on the command line) to choose",
                      stacklevel=2)
    for k in neurons:
        node = nodes[k]
        n = _size(node, k, shape_of(k))
        m = dict(node.metadata or {})
        stated = m.get("reset", m.get("reset_mechanism"))
        if isinstance(stated, bytes):
            stated = stated.decode()
        rmode = _RESET_WORDS.get(str(stated), None) if stated is not None else assumed
        if k in thresholds or k in readouts:
            rmode = "value"   # Threshold keeps no state; a readout never fires
        if rmode is None:
            raise _err(f"node {k!r} states reset {stated!r}; expected one of "
                       f"{sorted(_RESET_WORDS)}")
        method = str(m.get("method", "euler")) if ours else "euler"
        kw = {"method": method}
        if ours:
            kw.update({x: m[x] for x in ("refractory", "v_init") if x in m})
        else:
            # a foreign graph starts at rest: v = v_leak, where the membrane settles with no
            # input (0 for an IF, I or Threshold, which have no leak); no current, no spike
            rest = getattr(node, "v_leak", None) if k not in thresholds else None
            kw["v_init"] = _vec(0.0 if rest is None else rest, n)
        if "i_inj" in m:
            kw["i_inj"] = m["i_inj"]
            kw["i_inj_start"] = whole_number(m, "i_inj_start", k, 0, 0,
                                             "the step its injected current starts")
        elif k in current:
            kw["i_inj"] = current[k]
            kw["i_inj_start"] = depth[k]
        vth = _vec(node.threshold if k in thresholds else
                   NEVER if k in readouts else node.v_threshold, n)
        vres = _vec(0.0 if k in thresholds or k in readouts else _reset_of(node), n)
        if k in thresholds:
            # Heaviside of the step's input: tau = dt, r = 1 give v[t] = x[t] under Euler
            model, nch, tau_m = "lif", 1, None
            prm = dict(tau_mem=np.full(n, dt), r=np.ones(n), v_leak=np.zeros(n))
        elif isinstance(node, nir.CubaLI):
            model, nch, tau_m = "cuba_lif", 1, None
            prm = dict(tau_syn=_vec(node.tau_syn, n), tau_mem=_vec(node.tau_mem, n),
                       r=_vec(node.r, n), v_leak=_vec(node.v_leak, n), w_in=_vec(node.w_in, n))
        elif isinstance(node, nir.LI):
            model, nch, tau_m = "lif", 1, None
            prm = dict(tau_mem=_vec(node.tau, n), r=_vec(node.r, n), v_leak=_vec(node.v_leak, n))
        elif isinstance(node, nir.CubaLIF):
            model, taus, tau_m = "cuba_lif", (_vec(node.tau_syn, n),), _vec(node.tau_mem, n)
            prm = dict(tau_syn=taus[0], tau_mem=tau_m, r=_vec(node.r, n),
                       v_leak=_vec(node.v_leak, n), w_in=_vec(node.w_in, n))
            nch = 1
        elif isinstance(node, nir.LIF):
            syns = sorted((s for s in pred.get(k, []) if s in channels),
                          key=lambda s: _channel(nodes, s))
            tau_m = _vec(node.tau, n)
            prm = dict(tau_mem=tau_m, r=_vec(node.r, n), v_leak=_vec(node.v_leak, n))
            model, nch = ("cuba_lif", len(syns)) if syns else ("lif", 1)
            if syns:
                prm.update(tau_syn=tuple(_vec(nodes[s].tau, n) for s in syns),
                           w_in=_vec(nodes[syns[0]].r, n))
        else:
            model, nch, tau_m = "if", 1, None
            prm = dict(r=_vec(node.r, n))
        if rmode == "snntorch":
            if tau_m is None:
                raise _err(f"node {k!r}: reset 'snntorch' needs a leak (LIF/CubaLIF), "
                           "this is an IF; pass reset='value' or 'subtract'")
            a_v = 1.0 - dt / tau_m     # forward Euler: snnTorch's beta
            if np.any(a_v <= 0):
                raise _err(f"node {k!r}: tau = dt gives beta = 0, where snnTorch's delayed "
                           "subtraction has no equivalent; pass reset='value'")
            kw.setdefault("v_init", vres)
            vres = vth - (vth - vres) / a_v   # subtract thr/beta now = thr after the decay
            rmode = "subtract"
        if method == "euler":
            _check_euler(k, prm, dt)
        net.population(pname(k), n, model, n_channels=nch, reset=rmode,
                       v_threshold=vth, v_reset=vres, **prm, **kw)

    # -- projections -----------------------------------------------------------------------
    projs: dict[tuple, list] = {}   # (name, pre, post, channel) -> its parts, one per path
    owner: dict[str, tuple] = {}    # ours: projection -> (its first Linear, pre, post, channel)
    rank = {k: i for i, k in enumerate(nodes)}
    first: dict[str, int] = {}   # ours: a projection's first Linear node in the written order
    for e, w, d, ch, k, _route in paths:
        node = nodes[w[-1]] if w is not None else None
        n_pre, n_post = net.size_of(pname(e)), net.populations[pname(k)].n
        W, _b, P = (sp.identity(n_pre, format="csr"), (), None) if node is None \
            else chain_map(e, w)
        if W.shape != (n_post, n_pre):
            what = "weight" if len(w or ()) < 2 else f"chain {' -> '.join(w)}"
            raise _err(f"{(w or (e,))[-1]!r} -> {k!r}: {what} of shape {W.shape}; expected "
                       f"({n_post}, {n_pre}) for {e!r} ({n_pre}) -> {k!r} ({n_post})")
        _check_layout(e, w, k, chain_shape(w, shape_of(e)), _param_shape(nodes[k]), nodes)
        m = dict(node.metadata or {}) if node is not None else {}
        last = (w or (e,))[-1]
        coo = W.tocoo()
        keep = coo.data != 0
        post_i, pre_i = coo.row[keep].astype(np.int64), coo.col[keep].astype(np.int64)
        wv = coo.data[keep]
        if ours and ZERO_SYNAPSES_KEY in m:
            # our export's listed synapses of weight 0 (a dense matrix alone cannot hold
            # them); a pair the matrix gives a weight is that synapse already
            zk = _zero_synapses(m[ZERO_SYNAPSES_KEY], w[-1], n_post, n_pre)
            zk = zk[~np.isin(zk, post_i * n_pre + pre_i)]
            post_i = np.concatenate([post_i, zk // n_pre])
            pre_i = np.concatenate([pre_i, zk % n_pre])
            wv = np.concatenate([wv, np.zeros(zk.size)])
        # each synapse's extra steps: its source neuron's delay before the chain and its
        # target neuron's after it
        extra = _delay_steps(d[0], n_pre, dt, e, k, "source")[pre_i] \
            + _delay_steps(d[1], n_post, dt, e, k, "target")[post_i]
        channel = _channel(nodes, ch)
        if ours:
            base = whole_number(m, "delay_steps", last, 1, 1,
                                "the synapses' delay in steps, 1 + its Delay node's")
            off = (extra > 0) & (1 + extra != base)
            if "delay_steps" in m and off.any():
                raise _err(f"node {last!r}: metadata delay_steps = {base}, but its Delay node "
                           f"gives {1 + int(extra[off][0])} steps (1 + its "
                           f"{int(extra[off][0])}); the two must agree")
            dly = np.where(extra > 0, 1 + extra, base)
        else:
            # each population runs its depth in steps after the input; a back edge takes
            # the one recurrent step, and its Delay node's steps count too
            step = depth[k] - depth[e] + (1 if (e, k) in back else 0)
            dly = step + extra
            if dly.size and dly.min() < 1:
                need = 1 - step
                raise _err(f"edge {e!r} -> {k!r} closes a loop through populations with too "
                           f"short a delay: {k!r} runs {depth[k]} step(s) after the input "
                           f"and {e!r} {depth[e]}, so a spike would arrive {1 - int(dly.min())}"
                           " step(s) before the step after it is sent; give the edge a Delay "
                           f"of at least {need} step(s) ({need * dt:g} s)")
        key = str(m.get("projection", "+".join(w) if w is not None else f"{e}->{k}"))
        if ours:   # the projection's own value, on each of its Linear nodes
            have = owner.setdefault(key, (last, pname(e), pname(k), channel))
            if have[1:] != (pname(e), pname(k), channel):
                chan = (f" (channels {have[3]} and {channel})" if have[3] != channel else "")
                raise _err(f"Linear nodes {have[0]!r} and {last!r} both name projection "
                           f"{key!r} but join {have[1]} -> {have[2]} and {pname(e)} -> "
                           f"{pname(k)}{chan}; a projection joins one pair: give each "
                           "its own name (Linear metadata projection)")
            shared = _kernel_weights(m[KERNEL_WEIGHTS_KEY], w[-1]) \
                if KERNEL_WEIGHTS_KEY in m else None
            first[key] = min(first.get(key, len(rank)), rank.get((w or (k,))[-1], len(rank)))
        else:
            shared = None if w is None else [nir_ops.kernel_weights(nodes[x]) for x in w]
            shared = None if shared is None or min(shared) < 0 else sum(shared)
        # NeuroBench's Dense counts every weight of the matrix, zeros included
        dense = None if ours or P is None else int(P.nnz)
        projs.setdefault((key, pname(e), pname(k), channel), []).append(
            (pre_i, post_i, wv, dly, shared, dense))
    # an input current into a CUBA synaptic current: a source that fires every step
    for (k, channel), (via, b) in source.items():
        src = _free(f"{'+'.join(dict.fromkeys(via))}.bias",
                    (*net.populations, *net.sources, *net.projections,
                     *(g[0] for g in projs)))
        rate = 1.0 / dt
        while rate * dt > 1.0:
            rate = np.nextafter(rate, 0.0)
        net.poisson(src, 1, rate)          # probability rate*dt = 1: fires every step
        net.connect(src, pname(k), weight=np.asarray(b).reshape(-1, 1), channel=channel,
                    delay=max(1, depth[k]), name=src)
    if ours:   # connected in the order the network held them (their nodes' order)
        projs = dict(sorted(projs.items(), key=lambda kv: first[kv[0][0]]))
    # a foreign chain reached from two emitters, or feeding two targets, is one projection
    # per pair (its pairs were merged under the first before)
    uses: dict[str, int] = {}
    for key, *_ in projs:
        uses[key] = uses.get(key, 0) + 1
    for (key, pre, post, channel), parts in projs.items():
        name = key if uses[key] == 1 else _free(f"{pre}->{key}->{post}"
                                                + (f"#c{channel}" if channel else ""),
                                                net.projections)
        kernel = [p[4] for p in parts]
        if ours and None not in kernel:
            kernel = kernel[:1]   # one value per projection, not per delay's Linear node
        stored = sum(p[2].size for p in parts)
        dense = sum(p[5] if p[5] is not None else p[2].size for p in parts)
        net.connect(pre, post, pre_idx=np.concatenate([p[0] for p in parts]),
                    post_idx=np.concatenate([p[1] for p in parts]),
                    weight=np.concatenate([p[2] for p in parts]),
                    delay=np.concatenate([p[3] for p in parts]), channel=channel, name=name,
                    kernel_weights=None if None in kernel else sum(kernel),
                    dense_connections=None if dense == stored else dense)
    probes = (graph.metadata or {}).get(PROBES_KEY, None) if ours else None
    if probes is not None:
        for target, what in probe_entries(probes):
            net.probe(target, what)
    else:
        for k in neurons:
            net.probe(pname(k))
    net.nir_depth = {pname(k): depth[k] for k in neurons}
    net.nir_placeholder = _placeholder_target(nodes, succ, nir, pname) if ours else None
    used = {x for p in paths if p[1] is not None for x in p[1]}
    net.model_facts = _model_facts({k: v for k, v in nodes.items() if k in used}, nodes,
                                   neurons, linear_types)
    net.nir_input_shapes = {k: shape_of(k) for k in inputs}
    return net


def _written_order(graph, nodes: dict) -> dict:
    """``nodes`` in the order a neuroedge export made them (graph metadata
    :data:`~deploy.nir_format.ORDER_KEY`, a JSON list of node names), which a ``.nir`` file
    loses (HDF5 lists a group's members alphabetically): the network's sources, populations
    and projections come back in its own order. Nodes the list does not name follow in the
    graph's order; a graph without the list keeps the graph's order."""
    raw = (graph.metadata or {}).get(ORDER_KEY)
    if raw is None:
        return nodes
    if isinstance(raw, (bytes, np.bytes_)):
        raw = bytes(raw).decode("utf-8", "replace")
    try:
        names = json.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        names = None
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        raise _err(f"the graph's metadata {ORDER_KEY} is not a JSON list of node names "
                   "(what neuroedge's export writes); remove it to read the nodes in the "
                   "file's order")
    ordered = {k: nodes[k] for k in names if k in nodes}
    ordered.update((k, v) for k, v in nodes.items() if k not in ordered)
    return ordered


def _zero_synapses(value, node: str, n_post: int, n_pre: int) -> np.ndarray:
    """The synapses of weight 0 a neuroedge ``Linear`` node lists (metadata
    :data:`~deploy.nir_format.ZERO_SYNAPSES_KEY`, ``[post; pre]`` indices) as sorted unique
    flat indices ``post * n_pre + pre``."""
    a = np.asarray(value)
    if a.ndim != 2 or a.shape[0] != 2 or (a.size and (
            a.dtype.kind not in "iu" or a[0].min() < 0 or a[0].max() >= n_post
            or a[1].min() < 0 or a[1].max() >= n_pre)):
        raise _err(f"node {node!r}: metadata {ZERO_SYNAPSES_KEY} of shape {a.shape} "
                   f"({a.dtype}); expected integer [post; pre] indices of shape (2, k) within "
                   f"its ({n_post}, {n_pre}) weight")
    return np.unique(a[0].astype(np.int64) * n_pre + a[1].astype(np.int64))


def _kernel_weights(value, node: str) -> int:
    """A neuroedge ``Linear`` node's :data:`~deploy.nir_format.KERNEL_WEIGHTS_KEY`: one
    whole number."""
    a = np.asarray(value)
    if a.size != 1 or a.dtype.kind not in "iuf" or not np.isfinite(a).all() \
            or a.ravel()[0] != np.rint(a.ravel()[0]) or abs(float(a.ravel()[0])) > 2**62:
        shown = repr(a.ravel()[0].item()) if a.size == 1 else f"{a.size} values of {a.dtype}"
        raise _err(f"node {node!r}: metadata {KERNEL_WEIGHTS_KEY} = {shown[:40]}; expected "
                   "one whole number (the weights of the projection's shared kernel)")
    return int(a.ravel()[0])


def _check_layout(e: str, chain, k: str, given: tuple, held: tuple, nodes) -> None:
    """The tensor a path gives ``k`` and the shape of ``k``'s per-neuron parameters agree
    wherever both have two or more axes (beyond axes of 1): otherwise the same count of
    values in another layout, (2, 3, 3) into parameters of (3, 3, 2), would pair each
    neuron with another neuron's parameters. A flat side is read in C order (how
    producers write flattened tensors)."""
    a = tuple(int(x) for x in given if int(x) != 1)
    b = tuple(int(x) for x in held if int(x) != 1)
    if len(a) >= 2 and len(b) >= 2 and a != b:
        last = (chain or (e,))[-1]
        raise _err(f"edge {last!r} -> {k!r}: {last!r} gives a tensor of shape "
                   f"{tuple(int(x) for x in given)}, but {k!r} ({type(nodes[k]).__name__}) "
                   f"holds parameters of shape {tuple(int(x) for x in held)}; the layouts "
                   "must agree (or one side be flat)")


def _delay_steps(delay, n: int, dt: float, e: str, k: str, side: str) -> np.ndarray:
    """Whole steps of the Delay seconds ``delay`` (one value, or one per ``side`` neuron of
    ``n``) on the path ``e -> k``, one per neuron."""
    delay = np.asarray(delay, float).ravel()
    if delay.size not in (1, n):
        raise _err(f"a Delay of {delay.size} values on the path {e!r} -> {k!r}; expected one "
                   f"value or one per {side} neuron ({n})")
    return np.rint(np.broadcast_to(delay, (n,)) / dt).astype(np.int64)


def _placeholder_target(nodes, succ, nir, pname) -> tuple[str, int] | None:
    """(population, channel) the placeholder ``Input`` of a source-less neuroedge export
    feeds (through its zero ``Linear``, and the channel's ``LI`` node of a multi-channel
    CUBA population); None when the graph has no placeholder."""
    lin = next((k for k, v in nodes.items() if isinstance(v, (nir.Linear, nir.Affine))
                and (v.metadata or {}).get(PLACEHOLDER_KEY)), None)
    target = next(iter(succ.get(lin, [])), None) if lin is not None else None
    if target is None:
        return None
    if isinstance(nodes[target], nir.LI):
        channel = _channel(nodes, target)
        target = next(iter(succ.get(target, [])), None)
        return (pname(target), channel) if target is not None else None
    return pname(target), 0


PLACEHOLDER_INPUT = "input"
"""The source :func:`stimulus` adds to a source-less neuroedge export (its placeholder's name)."""


def _drive_placeholder(net) -> None:
    """Give a network exported by neuroedge without a source of its own (VA CUBA runs on its
    own activity; the file holds only a placeholder ``Input`` with zero weights, which the
    import drops) an input a stimulus can drive: a source ``input`` of the size of the
    population the placeholder feeds, one synapse per neuron (one-to-one) on the same
    channel, each of the largest positive weight that population already receives on it.
    An external spike then acts as one of the network's own excitatory spikes, as in
    Brunel's external input (J_ext = J; Brunel 2000, doi:10.1023/A:1008925309027). Added
    only for a stimulus: without one the network is priced as exported."""
    pop, channel = net.nir_placeholder
    weights = [p.weight for p in net.projections.values()
               if p.post == pop and p.channel == channel and p.weight.size]
    w = max((float(x.max()) for x in weights), default=0.0)
    if w <= 0:
        raise _err(f"the network has no Input node and its population {pop!r} receives no "
                   f"excitatory (positive) synapse on channel {channel} to size a stimulus "
                   "by; export a network with a source to drive it")
    n = net.populations[pop].n
    idx = np.arange(n)
    net.spikes(PLACEHOLDER_INPUT, n, steps=np.zeros(0), index=np.zeros(0))
    net.connect(PLACEHOLDER_INPUT, pop, pre_idx=idx, post_idx=idx, weight=np.full(n, w),
                channel=channel, name=f"{PLACEHOLDER_INPUT}.stimulus")
    net.nir_inputs = (PLACEHOLDER_INPUT,)


def _model_facts(weights, nodes, neurons, linear_types) -> dict[str, int]:
    """NeuroBench's static facts of the graph as its producer's torch module holds them
    (float32): parameters = the weight and bias entries of the weight nodes the network is
    built from (``weights``: a node the import drops, as the placeholder ``Linear`` of our
    export of a network without a source, is not counted), kernels as stored (a Conv2d its
    ``weight`` + ``bias``, not the unrolled synapses); buffers = the neuron nodes' parameter
    values (snnTorch keeps beta and threshold as buffers). A producer's other buffers
    (snnTorch's scalar graded_spikes_factor, reset_mechanism_val, hidden state) are not in
    the graph; :func:`deploy.nir_estimate.estimate_spiking_module` counts them from the
    module itself."""
    params = sum(int(np.asarray(getattr(v, f)).size) for v in weights.values()
                 if isinstance(v, linear_types) for f in ("weight", "bias", "scale")
                 if getattr(v, f, None) is not None)
    buffers = sum(int(np.asarray(getattr(nodes[k], f)).size) for k in neurons
                  for f in _PARAM_FIELDS if getattr(nodes[k], f, None) is not None)
    # NeuroBench's connection layers: the weights of Linear/Affine/Conv nodes as stored,
    # zeros included (the network built from them keeps only non-zero synapses)
    matrices = [np.asarray(v.weight) for v in weights.values()
                if isinstance(v, linear_types) and getattr(v, "weight", None) is not None]
    return {"parameters": params, "parameter_bytes": 4 * params, "buffer_bytes": 4 * buffers,
            "connection_weights": sum(int(w.size) for w in matrices),
            "connection_zero_weights": sum(int(w.size - np.count_nonzero(w))
                                           for w in matrices)}


# -- stimulus --------------------------------------------------------------------------------
DATASET_IMAGES = 10
"""The test images a ``dataset:`` stimulus presents (fewer when the run has fewer steps)."""


def stimulus_length(spec) -> int | None:
    """T, the number of steps a spike-array stimulus (an array or its .npy/.npz path) covers;
    None for the stimuli that fill any length (``poisson:``, ``dataset:``)."""
    if isinstance(spec, str) and spec.startswith(("poisson:", "dataset:")):
        return None
    arr = _load_array(spec) if isinstance(spec, (str, os.PathLike)) else np.asarray(spec)
    if events.is_events(arr):
        return None   # events cover as many steps as dt makes of their span: give steps
    if arr.ndim < 1 or arr.shape[0] < 1:
        raise _err(f"stimulus {_stimulus_label(spec)} has shape {arr.shape}; expected "
                   "(T, n) spikes with T >= 1")
    return int(arr.shape[0])


def _stimulus_label(spec) -> str:
    return repr(str(spec)) if isinstance(spec, (str, os.PathLike)) else "the array"


def stimulus(net, spec, steps: int, seed: int = 0, *, input: str | None = None):
    """Drive the network's ``Input`` with ``spec`` for ``steps`` steps; returns the Source.

    ``spec`` is one of:

    - ``"poisson:rate=50"``: every channel a Poisson train of that rate (Hz), from ``seed``;
    - an array ``(T, n)`` (or ``(T, 1, n)``, ``(T, *shape)``), ``T <= steps``, of spikes
      (0/1, or small integers: graded payloads); row ``t`` is the producer's step ``t``;
    - the path of such an array: ``.npy``, or ``.npz`` holding one array or ``spikes``;
    - ``"dataset:NAME"``: the first ``min(DATASET_IMAGES, steps)`` test images of a shared
      dataset (``models.shared.datasets``), values in [0, 1] rate-coded as spike
      probabilities per step, each image an equal share of the steps (``steps // 10`` when
      10 divides them), back to back: nothing is reset between two images.

    Sets ``net.nir_samples``, the inference samples the stimulus presents: the images of a
    ``dataset:`` stimulus, 1 for any other. A wrong size is refused naming the Input node
    and the shape it expects. A network exported by neuroedge with no source of its own
    gets one first, one-to-one onto the population its placeholder ``Input`` feeds
    (``_drive_placeholder``).
    """
    names = list(getattr(net, "nir_inputs", ()))
    if not names and getattr(net, "nir_placeholder", None) is not None:
        _drive_placeholder(net)       # our export of a network with no source of its own
        names = list(net.nir_inputs)
    if input is None:
        if not names:
            raise _err("the graph has no Input node, so a stimulus has nothing to drive; give "
                       "it an Input feeding its first layer, or run it without a stimulus")
        if len(names) != 1:
            raise _err(f"the network has {len(names)} Input nodes ({', '.join(names) or 'none'}"
                       "); name the one the stimulus drives with input= (--input-node on "
                       "the command line); the others stay silent")
        input = names[0]
    elif input not in names:
        raise _err(f"input {input!r} is not an Input node of the graph; it has "
                   f"{', '.join(names) or 'none'}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise _err(f"steps = {steps!r}; expected an integer >= 1")
    n = net.sources[input].n
    del net.sources[input]
    net.nir_samples = 1
    try:
        if isinstance(spec, str) and spec.startswith("poisson:"):
            rate = _poisson_rate(spec)
            if rate * net.dt > 1:
                raise _err(f"{spec!r}: rate {rate:g} Hz exceeds 1/dt = {1 / net.dt:g} Hz")
            return net.poisson(input, n, rate, seed=seed)
        if isinstance(spec, str) and spec.startswith("dataset:"):
            arr, net.nir_samples = _dataset_spikes(spec[len("dataset:"):], n, steps, seed,
                                                   input)
        elif isinstance(spec, (str, os.PathLike)):
            arr = _load_array(spec)
        else:
            arr = np.asarray(spec)
        if events.is_events(arr):   # tonic's (x, y, t, p) events: binned by dt
            arr = events.events_to_spikes(arr, net.nir_input_shapes[input], net.dt, steps,
                                          what=_stimulus_label(spec))
        return _attach_array(net, input, n, arr, steps, spec)
    except BaseException:
        if input not in net.sources:   # leave the network as it was
            net.spikes(input, n, steps=np.zeros(0), index=np.zeros(0))
        raise


def _poisson_rate(spec: str) -> float:
    body = spec[len("poisson:"):]
    key, _, val = body.partition("=")
    try:
        rate = float(val)
    except ValueError:
        rate = -1.0
    if key.strip() != "rate" or not np.isfinite(rate) or rate < 0:
        raise _err(f"stimulus {spec!r}: expected 'poisson:rate=HZ' with a rate >= 0")
    return rate


def _load_array(path) -> np.ndarray:
    p = Path(path)
    if p.suffix not in (".npy", ".npz"):
        raise _err(f"stimulus {str(p)!r}: expected 'poisson:rate=HZ', 'dataset:NAME' or a "
                   ".npy/.npz spike array")
    if not p.is_file():
        raise _err(f"stimulus file {str(p)!r} {not_a_file(p)}")
    try:
        data = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:   # object arrays, not numpy, truncated
        raise _err(f"stimulus {str(p)!r} is not a plain numeric .npy/.npz array ({exc})") \
            from None
    if p.suffix == ".npz":
        keys = list(data.keys())
        if "spikes" in keys:
            return data["spikes"]
        if len(keys) != 1:
            raise _err(f"stimulus {str(p)!r} holds arrays {keys}; name one 'spikes'")
        return data[keys[0]]
    return data


def _attach_array(net, input, n, arr, steps, spec):
    what = "the array" if not isinstance(spec, (str, os.PathLike)) else repr(str(spec))
    a = np.asarray(arr)
    if a.ndim >= 2 and int(np.prod(a.shape[1:])) == n:
        a = a.reshape(a.shape[0], n)
    if a.ndim != 2 or a.shape[1] != n or a.shape[0] > steps:
        raise _err(f"stimulus {what} has shape {tuple(np.shape(arr))}; Input {input!r} "
                   f"expects (T, {n}) with T <= steps = {steps}")
    if a.dtype == bool:
        a = a.astype(np.int64)
    if not np.all(np.isfinite(a)) or not np.array_equal(a, np.rint(a)):
        raise _err(f"stimulus {what}: values must be spikes (0/1 or small integers); "
                   "rate-code real values first (e.g. dataset: or poisson:)")
    t, i = np.nonzero(a)
    return net.spikes(input, n, steps=t, index=i, payload=a[t, i].astype(np.int64))


def _dataset_spikes(name, n, steps, seed, input) -> tuple[np.ndarray, int]:
    """The first ``k = min(DATASET_IMAGES, steps)`` test images of a shared dataset, pixel
    value p in [0, 1] spiking with probability p per step (rate coding), and ``k``: the images
    share the ``steps`` equally, in order (image i from step ``i * steps // k``)."""
    from models.shared import datasets
    ds = datasets.load(name)
    x = ds.x_test.reshape(ds.x_test.shape[0], -1).astype(np.float64)
    if x.shape[1] != n:
        raise _err(f"dataset {name!r} has {x.shape[1]} values per sample; Input {input!r} "
                   f"takes {n}")
    # equal shares rather than a fixed steps // 10 per image: with that, 105 steps showed an
    # 11th image for 5 steps, and 19 steps 19 images, which the sample count could not name
    k = min(DATASET_IMAGES, steps, x.shape[0])
    probs = np.clip(x[np.arange(steps) * k // steps], 0, 1)
    rng = np.random.default_rng(seed)
    return (rng.random(probs.shape) < probs).astype(np.int64), k
