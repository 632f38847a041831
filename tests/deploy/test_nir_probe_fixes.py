"""NIR import/export defects a read-only probe reproduced, each with its smallest failing
input: a bias added once per incoming edge, loops across populations with a Delay refused,
parameters and weights that are no real numbers crashing or truncated, a conv that
allocates gigabytes, the initial state of a foreign graph, NeuroBench's Dense and static
facts, a ``dt=`` overriding the file's, malformed metadata of our own format, and messages
that did not name the node."""
import tracemalloc
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest

import sim
from deploy.errors import ExportError
from deploy.nir_estimate import estimate_nir
from deploy.nir_export import export_nir, to_nir
from deploy.nir_import import read_nir, stimulus
from deploy.nir_ops import MAX_SYNAPSES
from hw_profiles import load as load_profile
from sim.errors import ModelError
from sim.neuromorphic import Network

nir = pytest.importorskip("nir")

DT = 1e-3
DOCS = Path(__file__).resolve().parents[2] / "docs"


def _lif(n, tau=5e-3, thr=0.5, v_leak=0.0, v_reset=0.0):
    return nir.LIF(tau=np.full(n, tau), r=np.ones(n), v_leak=np.full(n, v_leak),
                   v_threshold=np.full(n, thr), v_reset=np.full(n, v_reset))


def _graph(nodes, edges, dt=DT):
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata={"dt": dt}, type_check=False)


def _inp(n):
    return nir.Input(input_type={"input": np.array([n])})


def _out(n):
    return nir.Output(output_type={"output": np.array([n])})


def _chain(*names):
    return list(zip(names[:-1], names[1:], strict=True))


def _run(net, spikes, steps, input=None):
    if spikes is not None:
        stimulus(net, spikes, steps, input=input)
    dev = sim.device(load_profile("loihi"))
    dev.compile(net, quantize=False)
    return dev, dev.run(steps)


def _write(tmp_path, graph, name="g.nir"):
    path = tmp_path / name
    nir.write(str(path), graph)
    return path


def _edit(path, key, value):
    with h5py.File(path, "r+") as f:
        del f[key]
        f[key] = value


def _base_file(tmp_path):
    """in (3) -> lin (4 x 3) -> lif (4) -> out, written by nir.write."""
    nodes = {"in": _inp(3), "lin": nir.Linear(np.full((4, 3), 0.5)), "lif": _lif(4),
             "out": _out(4)}
    return _write(tmp_path, _graph(nodes, _chain("in", "lin", "lif", "out")))


# -- 1. an Affine's bias once, whatever the edges into it ------------------------------------
def _two_inputs_into_affine(target):
    # NIR sums a node's inputs: y = W (xA + xB) + b, the bias once
    nodes = {"inA": _inp(2), "inB": _inp(2),
             "aff": nir.Affine(np.array([[1.0, 1.0]]), np.array([0.3])), "n": target,
             "out": _out(1)}
    edges = [("inA", "aff"), ("inB", "aff"), ("aff", "n"), ("n", "out")]
    return _graph(nodes, edges)


def test_an_affine_fed_by_two_inputs_adds_its_bias_once():
    net = read_nir(_two_inputs_into_affine(_lif(1, tau=DT)), reset="value")
    # was [0.6]: the bias of 0.3 added once per incoming edge
    assert net.populations["n"].i_inj.tolist() == [0.3]
    # each Input keeps its own synapses (both were merged under inA before)
    assert sorted((p.pre, p.weight.tolist()) for p in net.projections.values()) == \
        [("inA", [1.0, 1.0]), ("inB", [1.0, 1.0])]
    # silent inputs: tau = dt gives v = 0.3 each step, under the threshold 0.5: no spike
    _, res = _run(net, np.zeros((5, 2), int), 6, input="inA")
    assert res.spikes["n"][0].size == 0


def test_parallel_branches_into_one_affine_add_its_bias_once():
    nodes = {"in": _inp(2), "l1": nir.Linear(np.eye(2)), "l2": nir.Linear(np.eye(2)),
             "aff": nir.Affine(np.array([[1.0, 1.0]]), np.array([0.3])),
             "n": _lif(1, tau=DT), "out": _out(1)}
    edges = [("in", "l1"), ("in", "l2"), ("l1", "aff"), ("l2", "aff"), ("aff", "n"),
             ("n", "out")]
    assert read_nir(_graph(nodes, edges), reset="value").populations["n"].i_inj.tolist() == \
        [0.3]


def test_a_bias_reaching_a_target_by_two_routes_counts_twice():
    # aff's output goes through l1 and l2 into n, which sums them: 0.3 x 1 + 0.3 x 2 = 0.9
    nodes = {"in": _inp(1), "aff": nir.Affine(np.array([[1.0]]), np.array([0.3])),
             "l1": nir.Linear(np.array([[1.0]])), "l2": nir.Linear(np.array([[2.0]])),
             "n": _lif(1, tau=DT), "out": _out(1)}
    edges = [("in", "aff"), ("aff", "l1"), ("aff", "l2"), ("l1", "n"), ("l2", "n"),
             ("n", "out")]
    i_inj = read_nir(_graph(nodes, edges), reset="value").populations["n"].i_inj
    np.testing.assert_allclose(i_inj, [0.9], rtol=1e-12)


def test_an_affine_fed_by_two_inputs_into_a_cubalif_reads_with_one_bias_source():
    cuba = nir.CubaLIF(tau_syn=np.full(1, DT), tau_mem=np.full(1, DT), r=np.ones(1),
                       v_leak=np.zeros(1), v_threshold=np.full(1, 0.5), v_reset=np.zeros(1),
                       w_in=np.ones(1))
    # was "name 'aff.bias' is already used": one bias source per incoming edge
    net = read_nir(_two_inputs_into_affine(cuba), reset="value")
    bias = [p for p in net.projections.values() if p.pre not in ("inA", "inB")]
    assert len(bias) == 1 and bias[0].weight.tolist() == [0.3]


# -- 2. a loop across populations ----------------------------------------------------------
def _ei(delay_steps):
    nodes = {"in": _inp(2), "w_in": nir.Linear(np.eye(2)), "E": _lif(2),
             "w_ei": nir.Linear(np.full((2, 2), 0.3)), "I": _lif(2),
             "w_ie": nir.Linear(np.full((2, 2), -0.3)), "out": _out(2)}
    edges = [("in", "w_in"), ("w_in", "E"), ("E", "w_ei"), ("w_ei", "I"), ("E", "out")]
    if delay_steps:
        nodes["d"] = nir.Delay(np.full(2, delay_steps * DT))
        edges += [("I", "w_ie"), ("w_ie", "d"), ("d", "E")]
    else:
        edges += [("I", "w_ie"), ("w_ie", "E")]
    return _graph(nodes, edges)


def test_a_loop_across_two_populations_with_a_delay_reads():
    # depths: in 0, E 1, I 2; the back edge I -> E: 1 - 2 + 1 (the recurrent step) + 2
    # (the Delay) = 2 steps; E -> I is 2 - 1 = 1 step
    net = read_nir(_ei(2), reset="value")
    delays = {p.name: set(p.delay.tolist()) for p in net.projections.values()}
    assert delays == {"w_in": {1}, "w_ei": {1}, "w_ie": {2}}
    _run(net, np.eye(2, dtype=int)[[0]], 10)


def test_a_loop_across_two_populations_without_a_delay_is_refused_as_the_docs_say():
    # 1 - 2 + 1 = 0 steps: the spikes would arrive in the step they are sent
    with pytest.raises(ExportError, match=r"edge 'I' -> 'E' closes a loop through populations "
                                          r"with too short a delay: .* give the edge a Delay "
                                          r"of at least 1 step"):
        read_nir(_ei(0), reset="value")
    assert "closes a loop through populations with too short a delay" in \
        " ".join((DOCS / "estimate.md").read_text().split())


# -- 3. / 6. values that are no real numbers -------------------------------------------------
@pytest.mark.parametrize("value, kind", [
    (np.array([b"a", b"b", b"c", b"d"]), "bytes"),
    (np.zeros(4, dtype=[("a", "<f8"), ("b", "<i4")]), "compound"),
])
def test_neuron_parameters_that_are_no_numbers_are_refused(tmp_path, value, kind):
    path = _base_file(tmp_path)
    _edit(path, "node/nodes/lif/tau", value)
    # was a TypeError traceback from the snnTorch-form test (tau / 1e-4)
    with pytest.raises(ExportError, match=r"node 'lif': tau holds .*; expected real numbers"):
        read_nir(path)


def test_complex_weights_are_refused(tmp_path):
    path = _base_file(tmp_path)
    _edit(path, "node/nodes/lin/weight", np.full((4, 3), 0.5 + 1j))
    # was read as its real part, with a numpy ComplexWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        with pytest.raises(ExportError, match=r"node 'lin': weight holds complex128 values; "
                                              r"expected real numbers"):
            read_nir(path, reset="value")


# -- 4. / 12. pooling and convolution geometry ----------------------------------------------
def _pool(**kw):
    args = dict(kernel_size=np.array([2, 2]), stride=np.array([2, 2]), padding=np.array([0, 0]))
    args.update(kw)
    nodes = {"in": nir.Input({"input": np.array([1, 4, 4])}), "p": nir.AvgPool2d(**args),
             "lif": _lif((1, 2, 2)), "out": nir.Output({"output": np.array([1, 2, 2])})}
    return _graph(nodes, _chain("in", "p", "lif", "out"))


@pytest.mark.parametrize("kw, message", [
    # a ZeroDivisionError traceback
    (dict(stride=np.array([0, 0])), r"node 'p' is a AvgPool2d with stride \(0, 0\); expected "
                                    r"integers >= 1"),
    # a ValueError traceback from numpy (negative dimensions)
    (dict(kernel_size=np.array([-2, -2])), r"node 'p' is a AvgPool2d with kernel_size "
                                           r"\(-2, -2\); expected integers >= 1"),
    (dict(kernel_size=np.array([0, 0])), r"node 'p' is a AvgPool2d with kernel_size \(0, 0\)"),
])
def test_pooling_with_a_stride_or_kernel_below_one_is_refused(kw, message):
    with pytest.raises(ExportError, match=message):
        read_nir(_pool(**kw), reset="value")


def _conv(**kw):
    args = dict(input_shape=np.array([4, 4]), weight=np.ones((2, 1, 3, 3)), stride=1, padding=0,
                dilation=1, groups=1, bias=np.zeros(2))
    args.update(kw)
    nodes = {"in": nir.Input({"input": np.array([1, 4, 4])}), "c": nir.Conv2d(**args),
             "lif": _lif((2, 2, 2)), "out": nir.Output({"output": np.array([2, 2, 2])})}
    return _graph(nodes, _chain("in", "c", "lif", "out"))


@pytest.mark.parametrize("kw, message", [
    # was "... output size (4, 4); expected every output size >= 1"
    (dict(dilation=0), r"node 'c' is a Conv2d with dilation \(0, 0\); expected integers >= 1"),
    # was "expected 0 input channels"
    (dict(groups=0), r"node 'c' is a Conv2d with groups 0; expected an integer >= 1 that "
                     r"divides its 2 output channels"),
    (dict(padding=-1), r"node 'c' is a Conv2d with padding \(-1, -1\); expected integers "
                       r">= 0"),
])
def test_conv_geometry_below_its_range_is_refused_naming_the_field(kw, message):
    with pytest.raises(ExportError, match=message):
        read_nir(_conv(**kw), reset="value")


# -- 5. a conv or a chain that would unroll into more synapses than memory holds -----------
def test_a_conv_of_too_many_synapses_is_refused_before_allocating():
    # 4 output channels x 2200 x 2200 positions x 9 taps = 174,240,000 synapses (~36 GB at
    # the ~210 B each import + compile take); a 43 KB file
    h = 2200
    nodes = {"in": nir.Input({"input": np.array([1, h, h])}),
             "c": nir.Conv2d(input_shape=np.array([h, h]), weight=np.ones((4, 1, 3, 3)),
                             stride=1, padding=1, dilation=1, groups=1, bias=np.zeros(4)),
             "n": _lif(1), "out": nir.Output({"output": np.array([4, h, h])})}
    assert 4 * h * h * 9 > MAX_SYNAPSES
    tracemalloc.start()
    try:
        with pytest.raises(ExportError, match=r"node 'c' is a Conv2d of 174,240,000 synapses"):
            read_nir(_graph(nodes, _chain("in", "c", "n", "out")), reset="value")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20


def test_a_chain_that_composes_into_too_many_synapses_is_refused_before_allocating():
    # 100,000 -> 1 -> 100,000: 200,000 weights compose into 10^10 synapses
    n = 100_000
    nodes = {"in": _inp(n), "a": nir.Linear(np.ones((1, n))), "b": nir.Linear(np.ones((n, 1))),
             "l": nir.LIF(tau=np.array([5e-3]), r=np.ones(1), v_leak=np.zeros(1),
                          v_threshold=np.ones(1), v_reset=np.zeros(1)), "out": _out(n)}
    tracemalloc.start()
    try:
        with pytest.raises(ExportError, match=r"the chain a -> b composes into up to "
                                              r"10,000,000,000 synapses"):
            read_nir(_graph(nodes, _chain("in", "a", "b", "l", "out")), reset="value")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20


# -- 7. a foreign graph starts at rest -------------------------------------------------------
def test_a_foreign_lif_starts_at_rest_not_at_its_reset():
    """tau = 2 dt, v_leak 0, v_reset -5, threshold 0.4, input 1 from step 1 on (each spike
    arrives a step later): from rest v = 0.5 at step 1 (spike), then -2.5, -0.75, 0.125,
    0.5625 (spike at 5), ... spikes at 1, 5, 9; from v_reset the first comes at 3."""
    nodes = {"in": _inp(1), "lin": nir.Linear(np.array([[1.0]])),
             "n": _lif(1, tau=2e-3, thr=0.4, v_leak=0.0, v_reset=-5.0), "out": _out(1)}
    net = read_nir(_graph(nodes, _chain("in", "lin", "n", "out")), reset="value")
    _, res = _run(net, np.ones((10, 1), int), 11)
    assert res.spikes["n"][0].tolist() == [1, 5, 9]


def test_a_foreign_if_starts_at_zero_and_our_network_keeps_its_own_start(tmp_path):
    nodes = {"in": _inp(1), "lin": nir.Linear(np.array([[1.0]])),
             "n": nir.IF(r=np.ones(1), v_threshold=np.ones(1), v_reset=np.full(1, 0.5)),
             "out": _out(1)}
    net = read_nir(_graph(nodes, _chain("in", "lin", "n", "out")), reset="value")
    assert net.populations["n"].params["v_init"].tolist() == [0.0]
    # the engine's own network starts at v_reset (compiler's default), through export too
    own = Network(dt=DT)
    own.population("A", 2, "lif", tau_mem=5e-3, v_threshold=0.5, v_leak=0.0, v_reset=-5.0)
    own.spikes("s", 1, steps=[0], index=[0])
    own.connect("s", "A", weight=np.ones((2, 1)))
    back = read_nir(export_nir(own, tmp_path / "own.nir"))
    assert "v_init" not in back.populations["A"].params or \
        back.populations["A"].params["v_init"] is None


# -- 8. NeuroBench's Dense counts a foreign matrix's zero weights ---------------------------
def test_dense_synaptic_operations_count_the_zero_weights_of_a_foreign_matrix():
    W = np.array([[1.0, 0, 0.5], [0, 0, 0], [2, 1, 1], [0.3, 0, 0]])   # 6 of 12 weights 0
    nodes = {"in": _inp(3), "lin": nir.Linear(W), "lif": _lif(4, tau=2e-3, thr=0.9),
             "out": _out(4)}
    g = _graph(nodes, _chain("in", "lin", "lif", "out"))
    spikes = np.zeros((10, 3), int)
    spikes[::2, 0] = 1                      # 5 spikes of input 0, which has 3 synapses
    est = estimate_nir(g, stimulus=spikes, steps=12, profiles=["loihi"], quantize=False,
                       reset="value")
    nb = est.neurobench
    # NeuroBench's Dense: every weight of the matrix, zeros included, each step: 12 x 12;
    # was 72 (the 6 non-zero synapses x 12 steps)
    assert nb["SynapticOperations"]["Dense"] == 144.0
    # the effective ACs and the priced synops stay the non-zero synapses: 5 spikes x 3
    assert nb["SynapticOperations"]["Effective_ACs"] == 15.0
    assert est.ledgers["loihi"].total_ops()["synop"] == 15
    assert nb["ConnectionSparsity"] == 0.5
    net = read_nir(g, reset="value")
    assert net.projections["lin"].weight.size == 6      # zeros are not stored
    assert net.projections["lin"].dense_connections == 12


def test_the_engine_counts_a_projections_dense_connections():
    net = Network(dt=DT)
    net.population("A", 4, "lif", tau_mem=5e-3, v_threshold=0.5)
    net.spikes("s", 3, steps=[0], index=[0])
    net.connect("s", "A", pre_idx=[0, 1, 2], post_idx=[0, 1, 2], weight=[1.0, 1.0, 1.0],
                dense_connections=12)
    dev = sim.device(load_profile("loihi"))
    dev.compile(net, quantize=False)
    dev.run(5)
    # 12 connections x 5 steps (3 stored synapses and 9 of weight 0 left out)
    assert dev.ledger.activity()["dense_synops"] == 60
    with pytest.raises(ModelError, match=r"dense_connections = 2; expected an integer >= 3"):
        net.connect("s", "A", pre_idx=[0, 1, 2], post_idx=[0, 1, 2], weight=[1.0] * 3,
                    dense_connections=2, name="again")


# -- 9. our export's static facts leave out what the import drops -------------------------
def test_our_sourceless_exports_facts_leave_out_the_placeholder():
    net = Network(dt=DT)
    net.population("A", 5, "lif", tau_mem=5e-3, v_threshold=0.5)
    net.population("B", 3, "lif", tau_mem=5e-3, v_threshold=0.5)
    net.connect("A", "B", weight=np.full((3, 5), 0.2))
    net.connect("B", "A", weight=np.full((5, 3), -0.2))
    back = read_nir(to_nir(net))
    # the two projections' weights: 3 x 5 + 5 x 3 = 30; was 35 with the placeholder
    # Linear (5 x 1) into A
    assert back.model_facts["parameters"] == 30
    assert back.model_facts["connection_weights"] == 30


# -- 10. dt= against the file's dt ---------------------------------------------------------
def test_a_dt_argument_that_differs_from_the_files_is_refused():
    g = _graph({"in": _inp(1), "lin": nir.Linear(np.ones((1, 1))), "n": _lif(1),
                "out": _out(1)}, _chain("in", "lin", "n", "out"), dt=1e-3)
    with pytest.raises(ExportError, match=r"dt = 0.0001 s differs from the dt = 0.001 s the "
                                          r"graph's metadata gives"):
        read_nir(g, dt=1e-4, reset="value")
    assert read_nir(g, dt=1e-3, reset="value").dt == 1e-3


# -- 11. malformed metadata in our own format ------------------------------------------------
def _own():
    net = Network(dt=DT)
    net.population("A", 3, "lif", tau_mem=5e-3, v_threshold=0.5)
    net.population("B", 2, "lif", tau_mem=5e-3, v_threshold=0.5, i_inj=np.full(2, 0.1),
                   i_inj_start=2)
    net.population("C", 2, "lif", tau_mem=5e-3, v_threshold=0.5)
    net.poisson("pin", 3, 200.0, seed=3)
    net.connect("pin", "A", weight=np.full((3, 3), 0.4), name="pA")
    net.connect("A", "B", weight=np.full((2, 3), 0.3), delay=2, name="AB")
    net.connect("B", "C", weight=np.full((2, 2), 0.3), name="BC")
    net.probe("A")
    return net


@pytest.mark.parametrize("node, key, value, message", [
    ("BC.d1", "delay_steps", "abc", r"node 'BC.d1': metadata delay_steps = 'abc'; expected a "
                                    r"whole number >= 1"),
    # was truncated to 2 steps
    ("BC.d1", "delay_steps", 2.7, r"node 'BC.d1': metadata delay_steps = 2.7; expected a "
                                  r"whole number >= 1"),
    ("AB.d2", "delay_steps", -5, r"node 'AB.d2': metadata delay_steps = -5; expected"),
    ("AB.d2", "delay_steps", 5, r"node 'AB.d2': metadata delay_steps = 5, but its Delay node "
                                r"gives 2 steps"),
    ("B.neurons", "i_inj_start", "q", r"node 'B.neurons': metadata i_inj_start = 'q'; expected "
                                      r"a whole number >= 0"),
    ("pin", "seed", "s", r"node 'pin': metadata seed = 's'; expected a whole number >= 0"),
    # was silently merged into projection BC (A's synapses became B's)
    ("AB.d2", "projection", "BC", r"Linear nodes 'AB.d2' and 'BC.d1' both name projection "
                                  r"'BC' but join A -> B and B -> C"),
])
def test_malformed_metadata_of_our_format_is_refused_naming_the_node(node, key, value,
                                                                      message):
    g = to_nir(_own())
    g.nodes[node].metadata[key] = value
    with pytest.raises(ExportError, match=message):
        read_nir(g)


def test_a_probe_entry_without_a_colon_is_refused():
    g = to_nir(_own())
    g.metadata["neuroedge_probes"] = "nothing"
    # was a ValueError traceback (not enough values to unpack)
    with pytest.raises(ExportError, match=r"metadata neuroedge_probes entry 'nothing' is not "
                                          r"TARGET:WHAT"):
        read_nir(g)


# -- 12. messages naming the node ----------------------------------------------------------
def test_an_unknown_node_type_in_a_file_names_the_node(tmp_path):
    path = _base_file(tmp_path)
    _edit(path, "node/nodes/lif/type", "Conv3d")
    with pytest.raises(ExportError, match=r"node 'lif' has type 'Conv3d', which NIR does not "
                                          r"define; NIR defines .*LIF"):
        read_nir(path)


def test_a_type_field_that_is_no_string_names_the_node(tmp_path):
    path = _base_file(tmp_path)
    _edit(path, "node/nodes/lif/type", np.array([1, 2]))
    # was "The truth value of an array with more than one element is ambiguous"
    with pytest.raises(ExportError, match=r"node 'lif': its type field is an array of shape "
                                          r"\(2,\) \(int64\); expected one string naming a NIR "
                                          r"node type"):
        read_nir(path)


def test_edges_that_are_no_pairs_of_names_are_refused_in_words(tmp_path):
    path = _base_file(tmp_path)
    _edit(path, "node/edges", np.array([1, 2, 3]))
    # was "cannot unpack non-iterable numpy.int64 object"
    with pytest.raises(ExportError, match=r"the graph's edges are an array of shape \(3,\) "
                                          r"\(int64\); expected pairs of node names, shape "
                                          r"\(k, 2\)"):
        read_nir(path)


def test_a_node_nir_cannot_build_is_named(tmp_path):
    path = _base_file(tmp_path)
    _edit(path, "node/nodes/lif/tau", np.full((2, 2), 5e-3))
    with pytest.raises(ExportError, match=r"node 'lif' \(LIF\) is not a valid NIR node \(All "
                                          r"parameters must have the same shape\): its fields "
                                          r".*tau \(2, 2\)"):
        read_nir(path)


def test_a_stimulus_for_a_graph_without_input_says_so():
    g = _graph({"l": nir.Linear(np.eye(2)), "n": _lif(2), "out": _out(2)},
               _chain("l", "n", "out"))
    net = read_nir(g, reset="value")
    with pytest.raises(ExportError, match=r"the graph has no Input node, so a stimulus has "
                                          r"nothing to drive"):
        stimulus(net, np.ones((3, 2), int), 4)


# -- 13. loops nothing reaches, edges into an Input or out of an Output ---------------------
def test_a_stateless_loop_no_input_reaches_is_refused():
    nodes = {"in": _inp(1), "l0": nir.Linear(np.ones((1, 1))), "n": _lif(1),
             "l1": nir.Linear(np.ones((1, 1))), "l2": nir.Linear(np.ones((1, 1))),
             "out": _out(1)}
    edges = [("in", "l0"), ("l0", "n"), ("l1", "l2"), ("l2", "l1"), ("l2", "n"), ("n", "out")]
    with pytest.raises(ExportError, match=r"nodes l1 -> l2 -> l1 form a cycle with no neuron"):
        read_nir(_graph(nodes, edges), reset="value")


def test_an_edge_into_an_input_or_out_of_an_output_is_refused():
    base = {"in": _inp(2), "l": nir.Linear(np.eye(2)), "n": _lif(2), "out": _out(2)}
    into = _graph(base, [("in", "l"), ("l", "n"), ("n", "in"), ("n", "out")])
    with pytest.raises(ExportError, match=r"edge 'n' -> 'in' ends at an Input node"):
        read_nir(into, reset="value")
    after = _graph({**base, "l2": nir.Linear(np.eye(2)), "m": _lif(2)},
                   [("in", "l"), ("l", "n"), ("n", "out"), ("out", "l2"), ("l2", "m")])
    with pytest.raises(ExportError, match=r"edge 'out' -> 'l2' starts at an Output node"):
        read_nir(after, reset="value")


# -- 14. the spike convention in the export's metadata -------------------------------------
def test_the_export_states_the_spike_convention_and_the_import_does_not_need_it():
    g = to_nir(_own())
    assert g.metadata["neuroedge_spike"] == "a spike counts as one step of S = 1"
    del g.metadata["neuroedge_spike"]
    assert set(read_nir(g).populations) == {"A", "B", "C"}
