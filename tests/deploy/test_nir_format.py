"""deploy.nir_format: the node names and metadata keys the NIR writer and reader share."""
from types import SimpleNamespace

import pytest

from deploy import nir_export, nir_import
from deploy.nir_format import (
    FORMAT_KEY,
    FORMAT_VALUE,
    POPULATION_SUFFIX,
    node_name,
    population_name,
    require_nir,
)


def test_populations_get_the_suffix_and_lose_it_on_the_way_back():
    net = SimpleNamespace(populations={"hidden": object(), "out": object()})
    assert node_name("hidden", net) == "hidden.neurons" == "hidden" + POPULATION_SUFFIX
    assert node_name("in", net) == "in"      # a source keeps its name
    for name in ("hidden", "out"):
        assert population_name(node_name(name, net)) == name
    assert population_name("proj.d1") == "proj.d1"


def test_one_set_of_conventions_for_both_directions():
    # neither module defines its own copy: both use this module's
    assert nir_export.require_nir is require_nir is nir_import.require_nir
    assert (FORMAT_KEY, FORMAT_VALUE) == ("neuroedge_format", "neuroedge.nir/1")


def test_a_written_file_carries_the_format_tag():
    import numpy as np
    pytest.importorskip("nir")

    from sim.neuromorphic import Network
    net = Network(dt=1e-3)
    net.poisson("in", 2, 100.0, seed=0)
    net.population("p", 2, "if", r=1e3, v_threshold=1.0)
    net.connect("in", "p", pre_idx=np.arange(2), post_idx=np.arange(2), weight=np.ones(2))
    graph = nir_export.to_nir(net)
    assert graph.metadata[FORMAT_KEY] == FORMAT_VALUE
    assert "p.neurons" in graph.nodes and "in" in graph.nodes
