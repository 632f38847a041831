"""Malformed NIR graphs a producer or a hostile file can hold: each is refused in one line
naming the node and what would be right, instead of hanging (a cycle of Linear nodes with
no neuron in it looped forever, and parallel branches that join multiply the paths the
import walks), crashing (a ``dt`` that is no number) or moving spikes silently (a Delay
rounded to the nearest step). A graph with several Input nodes can be estimated with the
one the stimulus drives named."""
import warnings

import numpy as np
import pytest

from deploy.errors import ExportError
from deploy.nir_estimate import estimate_nir
from deploy.nir_import import MAX_PATHS, read_nir

nir = pytest.importorskip("nir")


def _lif(n):
    return nir.LIF(tau=np.full(n, 0.01), r=np.ones(n), v_leak=np.zeros(n),
                   v_threshold=np.ones(n), v_reset=np.zeros(n))


def _linear(n_out, n_in, value=1.0):
    return nir.Linear(weight=np.full((n_out, n_in), value))


def _graph(nodes, edges, dt=1e-3):
    # type_check=False: the checks below are the import's, as for a file written by a
    # producer that did not check
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata={"dt": dt}, type_check=False)


def _chain(extra_nodes, extra_edges, dt=1e-3):
    nodes = {"in": nir.Input(input_type=np.array([4])), "l": _lif(4),
             "out": nir.Output(output_type=np.array([4])), **extra_nodes}
    return _graph(nodes, [*extra_edges, ("l", "out")], dt)


def test_a_cycle_of_stateless_nodes_is_refused():
    g = _chain({"w": _linear(4, 4), "w2": _linear(4, 4)},
               [("in", "w"), ("w", "w2"), ("w2", "w"), ("w", "l")])
    with pytest.raises(ExportError, match=r"nodes w -> w2 -> w form a cycle with no neuron"):
        read_nir(g)


def test_a_cycle_through_a_neuron_is_a_recurrence_and_reads():
    g = _chain({"w": _linear(4, 4), "rec": _linear(4, 4, 0.1)},
               [("in", "w"), ("w", "l"), ("l", "rec"), ("rec", "l")])
    net = read_nir(g, reset="value")
    assert "l" in net.populations


def test_branches_that_multiply_the_paths_are_refused():
    # 17 levels of a two-way split that joins again: 2^17 = 131,072 paths from the Input
    nodes, edges, last = {}, [], "in"
    for i in range(17):
        for side in "ab":
            nodes[f"{side}{i}"] = _linear(4, 4, 0.5)
            edges += [(last, f"{side}{i}"), (f"{side}{i}", f"j{i}")]
        nodes[f"j{i}"] = _linear(4, 4)
        last = f"j{i}"
    g = _chain(nodes, [*edges, (last, "l")])
    assert 2 ** 17 > MAX_PATHS
    with pytest.raises(ExportError, match=r"branch and join into more than 100,000 paths"):
        read_nir(g)


@pytest.mark.parametrize("value", ["fast", [], None])
def test_a_dt_in_the_metadata_that_is_no_number_is_refused(value):
    g = _chain({"w": _linear(4, 4)}, [("in", "w"), ("w", "l")])
    g.metadata = {"dt": value}
    with pytest.raises(ExportError, match=r"metadata dt = .* is not a time step in seconds"):
        read_nir(g)
    # the dt= argument overrides it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert read_nir(g, dt=1e-3).dt == 1e-3


@pytest.mark.parametrize("delay, message", [
    (-1e-3, r"Delay of -0.001 s; delays must be >= 0"),
    (np.nan, r"Delay with non-finite values"),
    # 1.5 ms at dt = 1 ms was rounded to 2 steps before, silently
    (1.5e-3, r"Delay of 0.0015 s, 1.5 time steps of dt = 0.001 s; a delay must be a whole "),
])
def test_a_delay_that_is_no_whole_number_of_steps_is_refused(delay, message):
    g = _chain({"w": _linear(4, 4), "d": nir.Delay(delay=np.full(4, delay))},
               [("in", "w"), ("w", "d"), ("d", "l")])
    with pytest.raises(ExportError, match=message):
        read_nir(g, reset="value")


def test_a_whole_number_of_steps_of_delay_reads():
    g = _chain({"w": _linear(4, 4), "d": nir.Delay(delay=np.full(4, 3e-3))},
               [("in", "w"), ("w", "d"), ("d", "l")])
    net = read_nir(g, reset="value")
    # one step from the Input's layer to l's, and the Delay's 3 steps
    (proj,) = net.projections.values()
    assert set(np.unique(proj.delay)) == {4}


def _two_inputs():
    nodes = {"a": nir.Input(input_type=np.array([4])), "b": nir.Input(input_type=np.array([4])),
             # b's weights are zero: spikes from b reach no synapse
             "wa": _linear(4, 4, 2.0), "wb": _linear(4, 4, 0.0), "la": _lif(4), "lb": _lif(4),
             "oa": nir.Output(output_type=np.array([4])),
             "ob": nir.Output(output_type=np.array([4]))}
    edges = [("a", "wa"), ("wa", "la"), ("la", "oa"), ("b", "wb"), ("wb", "lb"), ("lb", "ob")]
    return _graph(nodes, edges)


def test_a_graph_with_two_inputs_runs_with_the_driven_one_named(tmp_path):
    with pytest.raises(ExportError, match=r"2 Input nodes \(a, b\); name the one the "
                                          r"stimulus drives with input= \(--input-node"):
        estimate_nir(_two_inputs(), stimulus="poisson:rate=200", steps=50,
                     profiles=["loihi"], reset="value")
    def ops(name):
        est = estimate_nir(_two_inputs(), stimulus="poisson:rate=200", steps=50,
                           profiles=["loihi"], reset="value", input=name)
        return est.ledgers["loihi"].total_ops()
    # driven through a: its spikes reach la's 4 x 4 synapses; through b: no synapse at all
    # (a silent a, b's spikes on zero weights)
    assert ops("a")["synop"] > 0
    assert ops("b").get("synop", 0) == 0 and ops("b")["spike"] > 0


def test_the_cli_takes_the_input_node(tmp_path, capsys):
    from deploy.cli import main
    path = tmp_path / "two.nir"
    nir.write(path, _two_inputs())
    code = main(["estimate", str(path), "--stimulus", "poisson:rate=200", "--steps", "50",
                 "--profiles", "loihi", "--reset", "value", "--input-node", "a"])
    assert code == 0
    assert "loihi" in capsys.readouterr().out
