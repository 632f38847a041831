"""Malformed NIR graphs a producer or a hostile file can hold: each is refused in one line
naming the node and what would be right, instead of hanging (a cycle of Linear nodes with
no neuron in it looped forever, and parallel branches that join multiply the paths the
import walks), crashing (a ``dt`` that is no number) or moving spikes silently (a Delay
rounded to the nearest step). A graph with several Input nodes can be estimated with the
one the stimulus drives named."""
import warnings

import h5py
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


def test_a_delay_before_a_linear_delays_each_source_neuron():
    """NIR's Delay is y(t) = x(t - delay) on its own input: before a Linear that permutes
    (target i <- source (i + 1) % 4) the delay belongs to the source neuron. Source j's
    synapse: 1 step (layer to layer) + j steps. Before, the delays were applied by target
    neuron (target 3, fed by source 0, got 3 extra steps instead of 0)."""
    perm = nir.Linear(weight=np.eye(4)[[1, 2, 3, 0]])
    g = _chain({"d": nir.Delay(delay=np.arange(4) * 1e-3), "w": perm},
               [("in", "d"), ("d", "w"), ("w", "l")])
    (proj,) = read_nir(g, reset="value").projections.values()
    pairs = zip(proj.pre_idx.tolist(), proj.delay.tolist(), strict=True)
    assert sorted(pairs) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    # a delay on each side: 2 source steps + 3 target steps on every synapse of a 4 x 4
    g = _chain({"d": nir.Delay(delay=np.full(4, 2e-3)), "w": _linear(4, 4),
                "d2": nir.Delay(delay=np.full(4, 3e-3))},
               [("in", "d"), ("d", "w"), ("w", "d2"), ("d2", "l")])
    (proj,) = read_nir(g, reset="value").projections.values()
    assert proj.delay.tolist() == [6] * 16
    # between two weight nodes a delay has no neuron to belong to
    g = _chain({"w": _linear(4, 4), "d": nir.Delay(delay=np.full(4, 1e-3)), "w2": _linear(4, 4)},
               [("in", "w"), ("w", "d"), ("d", "w2"), ("w2", "l")])
    with pytest.raises(ExportError, match=r"node 'w2' \(Linear\) follows a Delay that follows "
                                          r"a weight node \(w\)"):
        read_nir(g, reset="value")


def test_a_flatten_gives_its_shape_to_the_node_after_it():
    """Flatten(start_dim=1) of (2, 4, 4) is (2, 16) (NIR's own output type): a Conv1d of 2
    input channels reads it; before, Flatten was passed through unchanged and the Conv1d
    was refused as fed (2, 4, 4). Conv1d of kernel 3, stride 2, padding 1 on 16: (16 + 2 - 2
    - 1) // 2 + 1 = 8 outputs per channel, 3 channels: 24 neurons."""
    nodes = {"in": nir.Input(input_type=np.array([2, 4, 4])),
             "fl": nir.Flatten(input_type={"input": np.array([2, 4, 4])}, start_dim=1),
             "c": nir.Conv1d(input_shape=16, weight=np.ones((3, 2, 3)), stride=2, padding=1,
                             dilation=1, groups=1, bias=np.zeros(3)),
             "l": nir.LIF(tau=np.full((3, 8), 0.01), r=np.ones((3, 8)),
                          v_leak=np.zeros((3, 8)), v_threshold=np.ones((3, 8)),
                          v_reset=np.zeros((3, 8))),
             "out": nir.Output(output_type=np.array([3, 8]))}
    net = read_nir(_graph(nodes, [("in", "fl"), ("fl", "c"), ("c", "l"), ("l", "out")]),
                   reset="value")
    assert net.populations["l"].n == 24


def test_a_tensor_and_parameters_of_another_layout_are_refused():
    """A Conv2d gives (2, 3, 3); a LIF holding one threshold per neuron as (3, 3, 2) would
    pair neurons with others' thresholds (nir's own type check refuses the edge)."""
    nodes = {"in": nir.Input(input_type=np.array([1, 5, 5])),
             "c": nir.Conv2d(input_shape=(5, 5), weight=np.ones((2, 1, 3, 3)), stride=1,
                             padding=0, dilation=1, groups=1, bias=np.zeros(2)),
             "l": nir.LIF(tau=np.full((3, 3, 2), 0.01), r=np.ones((3, 3, 2)),
                          v_leak=np.zeros((3, 3, 2)),
                          v_threshold=np.linspace(0.1, 5, 18).reshape(3, 3, 2),
                          v_reset=np.zeros((3, 3, 2))),
             "out": nir.Output(output_type=np.array([18]))}
    with pytest.raises(ExportError, match=r"edge 'c' -> 'l': 'c' gives a tensor of shape "
                                          r"\(2, 3, 3\), but 'l' \(LIF\) holds parameters "
                                          r"of shape \(3, 3, 2\)"):
        read_nir(_graph(nodes, [("in", "c"), ("c", "l"), ("l", "out")]), reset="value")


@pytest.mark.parametrize("tau", [-5e-3, 0.0])
def test_a_time_constant_that_is_not_positive_is_refused(tau):
    # was "give dt <= -0.01 s" (a negative tau read as a dt too large for forward Euler)
    g = _chain({"w": _linear(4, 4)}, [("in", "w"), ("w", "l")])
    g.nodes["l"] = nir.LIF(tau=np.full(4, tau), r=np.ones(4), v_leak=np.zeros(4),
                           v_threshold=np.ones(4), v_reset=np.zeros(4))
    with pytest.raises(ExportError, match=rf"node 'l': tau_mem = {tau:g} s; a time constant "
                                          r"must be > 0"):
        read_nir(g, reset="value")


def test_an_affine_without_bias_or_with_one_bias_reads():
    # bias None was "an Affine with bias of 1 values; expected 4"; one value is every output's
    for bias, want in ((None, None), (np.array([0.5]), [0.5] * 4)):
        g = _chain({"a": nir.Affine(weight=np.full((4, 4), 0.5), bias=bias)},
                   [("in", "a"), ("a", "l")])
        net = read_nir(g, reset="value")
        i_inj = net.populations["l"].i_inj
        assert (i_inj is None if want is None else np.asarray(i_inj).tolist() == want)


def test_a_huge_declared_input_is_refused_before_allocating():
    # 1e9 neurons were 8 GB of spike state, a MemoryError traceback
    g = _chain({}, [("in", "l")])
    g.nodes["in"] = nir.Input(input_type=np.array([10**9]))
    with pytest.raises(ExportError, match=r"node 'in' declares 1,000,000,000 neurons \(shape "
                                          r"\(1000000000,\)\); the simulator takes at most "
                                          r"20,000,000"):
        read_nir(g, reset="value")


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


# -- hostile files: nothing read from another file, nothing allocated without bound --------
def _written(path):
    """A valid .nir file (Input 3 -> Linear -> LIF 4 -> Output) whose LIF tau the tests
    replace."""
    nodes = {"in": nir.Input(input_type=np.array([3])), "w": _linear(4, 3, 0.5), "l": _lif(4),
             "out": nir.Output(output_type=np.array([4]))}
    nir.write(path, _graph(nodes, [("in", "w"), ("w", "l"), ("l", "out")]))
    return path


TAU = "node/nodes/l/tau"


def _external_storage(f, other):
    del f[TAU]
    f.create_dataset(TAU, shape=(4,), dtype="<f8", external=[(str(other), 0, 32)])


def _external_link(f, other):
    del f[TAU]
    f[TAU] = h5py.ExternalLink(str(other), "/tau")


def _virtual(f, other):
    layout = h5py.VirtualLayout(shape=(4,), dtype="<f8")
    layout[:] = h5py.VirtualSource(str(other), "/tau", shape=(4,))
    del f[TAU]
    f.create_virtual_dataset(TAU, layout)


def _bomb(f, other):
    # 2e8 float64 never written (the fill value): 1.5 GiB once read, a few kB on disk
    del f[TAU]
    f.create_dataset(TAU, shape=(200_000_000,), dtype="<f8", chunks=(1 << 20,),
                     fillvalue=0.01)



@pytest.mark.parametrize("edit, words", [
    (_external_storage, ["/node/nodes/l/tau", "external raw storage"]),
    (_external_link, ["/node/nodes/l/tau", "ExternalLink", "not followed"]),
    (_virtual, ["/node/nodes/l/tau", "virtual dataset"]),
    (_bomb, ["/node/nodes/l/tau", "MiB", "limit is 256 MiB"]),
])
def test_a_file_that_reads_other_files_or_unbounded_data_is_refused(tmp_path, edit, words):
    """Before, each ran: the external storage read the other file's bytes as the LIF's tau
    (a probe pointed it at /etc/passwd), the link and the virtual dataset read another
    file's array, and the 2e8-element tau took 1.9 GB before any check."""
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as g:
        g["tau"] = np.full(4, 5e-3)
    (tmp_path / "secret.bin").write_bytes(np.full(4, 5e-3).tobytes())
    path = _written(tmp_path / "g.nir")
    with h5py.File(path, "r+") as f:
        edit(f, tmp_path / "secret.bin" if edit is _external_storage else other)
    with pytest.raises(ExportError) as err:
        read_nir(path)
    msg = str(err.value)
    assert "\n" not in msg and "'" + str(path) + "'" in msg
    for word in words:
        assert word in msg, msg


def test_a_checked_file_reads(tmp_path):
    net = read_nir(_written(tmp_path / "g.nir"), reset="value")
    assert net.populations["l"].n == 4
