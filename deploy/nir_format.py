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
