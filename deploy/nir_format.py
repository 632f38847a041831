"""The conventions of neuroedge's ``.nir`` files, shared by the writer and the reader.

:mod:`deploy.nir_export` writes them and :mod:`deploy.nir_import` reads them back; both take
the metadata keys, the node naming and the ``nir`` package from here, so neither imports
the other for them.
"""
from __future__ import annotations

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
