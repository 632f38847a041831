"""The conventions of neuroedge's ``.nir`` files, shared by the writer and the reader.

:mod:`deploy.nir_export` writes them and :mod:`deploy.nir_import` reads them back; both take
the metadata keys, the node naming and the ``nir`` package from here, so neither imports
the other for them.
"""
from __future__ import annotations

import numpy as np

from deploy.errors import ExportError

FORMAT_KEY = "neuroedge_format"
"""Graph metadata key whose value :data:`FORMAT_VALUE` marks a file neuroedge wrote."""
FORMAT_VALUE = "neuroedge.nir/1"
PLACEHOLDER_KEY = "neuroedge_placeholder"   # the Input (+ zero Linear) of a source-less
                                            # network, which nir.read's type check needs
ORDER_KEY = "neuroedge_order"
"""Graph metadata key: the graph's node names as a JSON list, in the order :func:`to_nir`
made them (the network's sources, populations and projections in its own order). A
``.nir`` file lists a group's nodes alphabetically, which would reorder the populations
(placement, hops, energy) and sources; :func:`deploy.nir_import.read_nir` restores it."""
ZERO_SYNAPSES_KEY = "zero_synapses"
"""``Linear`` metadata key: the ``[post; pre]`` indices (int64, shape (2, k)) of the
synapses the network lists whose weight in that matrix is 0. A dense matrix cannot tell a
listed synapse of weight 0 from no synapse; the import keeps these (they count synaptic
operations and synapse memory) while a zero in a foreign matrix stays no synapse."""
KERNEL_WEIGHTS_KEY = "kernel_weights"
"""``Linear`` metadata key: the projection's ``kernel_weights`` (weight-shared form), on
each of its ``Linear`` nodes; absent when it is None."""
SPIKE_KEY = "neuroedge_spike"
"""Graph metadata key: the spike convention, :data:`SPIKE_VALUE` (written since it was left
out; the import does not need it)."""
SPIKE_VALUE = "a spike counts as one step of S = 1"
PROBES_KEY = "neuroedge_probes"
"""Graph metadata key: the network's probes, ``TARGET:WHAT`` entries joined by ``;``."""
POPULATION_SUFFIX = ".neurons"   # population P is node "P.neurons" (snnTorch keys recurrent
                                 # subgraphs by the part before the first dot, which must be free)


def node_name(name: str, net) -> str:
    """The NIR node of ``name`` in ``net``: a population gets :data:`POPULATION_SUFFIX`,
    a source keeps its name."""
    return f"{name}{POPULATION_SUFFIX}" if name in net.populations else name


def population_name(node: str) -> str:
    """The population a node of a neuroedge file stands for (the inverse of :func:`node_name`)."""
    return node[:-len(POPULATION_SUFFIX)] if node.endswith(POPULATION_SUFFIX) else node


def require_nir():
    """The ``nir`` module, or an ExportError saying how to install it."""
    try:
        import nir
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ExportError("NIR export needs the 'nir' package: "
                          "pip install 'neuroedge[export]'") from exc
    return nir


def whole_number(meta: dict, key: str, node: str, default: int, low: int,
                 meaning: str) -> int:
    """The whole-number metadata field ``key`` of a node of a neuroedge file (``default``
    when absent), refused in one line naming the node when it is no whole number >= ``low``
    (a bare ``int()`` raised a traceback on ``"abc"`` and truncated 2.7 to 2)."""
    if key not in meta:
        return default
    raw = meta[key]
    a = np.asarray(raw)
    value = a.ravel()[0] if a.size == 1 else None
    if value is None or a.dtype.kind not in "iuf" or not np.isfinite(value) \
            or value != np.rint(value) or not low <= value <= 2**62:
        shown = repr(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else
                     value.item() if value is not None and hasattr(value, "item") else raw)
        raise ExportError(f"NIR import: node {node!r}: metadata {key} = {shown[:40]}; "
                          f"expected a whole number >= {low} ({meaning})")
    return int(value)


def probe_entries(raw) -> list[tuple[str, str]]:
    """The ``(target, what)`` pairs of the graph metadata :data:`PROBES_KEY`."""
    text = bytes(raw).decode("utf-8", "replace") if isinstance(raw, (bytes, np.bytes_)) \
        else str(raw)
    out = []
    for entry in text.split(";"):
        if not entry:
            continue
        target, sep, what = entry.partition(":")
        if not sep or not target or not what or ":" in what:
            raise ExportError(f"NIR import: the graph's metadata {PROBES_KEY} entry "
                              f"{entry[:40]!r} is not TARGET:WHAT (a population or source "
                              "and 'spikes' or a state, e.g. 'A:spikes'); remove the key to "
                              "probe every population's spikes")
        out.append((target, what))
    return out
