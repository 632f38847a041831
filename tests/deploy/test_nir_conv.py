"""Convolutional NIR graphs (Conv2d, pooling, Flatten, Scale, Threshold, LI) from their
producers' own exporters, run with the producers' spike counts (issue 35, item 1)."""
import warnings

import numpy as np
import pytest

from deploy.errors import ExportError
from deploy.nir_import import read_nir, stimulus
from sim.neuromorphic import NeuromorphicDevice

nir = pytest.importorskip("nir")
torch = pytest.importorskip("torch")


def _snntorch_conv():
    """Conv2d(2->4, 3x3, pad 1) -> Leaky -> AvgPool2d(2) -> Conv2d(4->4, 3x3, stride 2) ->
    Leaky -> Conv2d(4->5, 2x2) -> Leaky: 12x12 events to 5 outputs. Per-neuron beta and
    threshold tensors: snnTorch's export of scalar ones fails NIR's type inference."""
    snn = pytest.importorskip("snntorch")
    torch.manual_seed(0)

    def leaky(shape, beta, **kw):
        return snn.Leaky(beta=torch.full(shape, beta), threshold=torch.ones(shape),
                         init_hidden=True, **kw)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3, padding=1), leaky((4, 12, 12), 0.9),
        torch.nn.AvgPool2d((2, 2)), torch.nn.Conv2d(4, 4, 3, stride=2), leaky((4, 2, 2), 0.8),
        torch.nn.Conv2d(4, 5, 2), leaky((5, 1, 1), 0.9, output=True))
    with torch.no_grad():   # stronger weights: every layer spikes
        for m in net:
            if isinstance(m, torch.nn.Conv2d):
                m.weight.mul_(3)
    return net


def _snntorch_counts(net, x):
    """Spikes of each Leaky layer (by its index in the Sequential) over the input."""
    import snntorch as snn
    from snntorch import utils
    utils.reset(net)
    counts = {str(i): 0 for i, m in enumerate(net) if isinstance(m, snn.Leaky)}
    with torch.no_grad():
        for t in range(x.shape[0]):
            h = torch.tensor(x[t:t + 1])
            for i, m in enumerate(net):
                h = m(h)
                h = h[0] if isinstance(h, tuple) else h
                if str(i) in counts:
                    counts[str(i)] += int(h.sum())
    return counts


def _our_counts(net, x, profile="loihi"):
    """Spikes of each population in the producer's window: a population at depth L sees
    input step t at step t + L, so its steps L .. L + T - 1 are the producer's 0 .. T - 1."""
    T = x.shape[0]
    steps = T + max(net.nir_depth.values())
    stimulus(net, x.reshape(T, -1), steps)
    dev = NeuromorphicDevice(profile)
    dev.compile(net, quantize=False)
    res = dev.run(steps)
    out = {}
    for k, L in net.nir_depth.items():
        st = res.spikes[k][0]
        out[k] = int(np.count_nonzero((st >= L) & (st < L + T)))
    return out, dev


@pytest.fixture(scope="module")
def snn_conv():
    from snntorch.export_nir import export_to_nir
    net = _snntorch_conv()
    return net, export_to_nir(net, torch.zeros(2, 12, 12))


def test_snntorch_conv_pool_export_runs_with_snntorchs_spike_counts(snn_conv):
    """snnTorch's own export of a conv net (Conv2d with biases, AvgPool2d, Leaky) runs on
    loihi (float weights) with snnTorch's spike counts per layer, for several inputs. The
    pool and the next conv compose to one projection (AvgPool then Conv2d: a 4x4 window of
    stride 4 per output, summing 4 inputs/4 per tap)."""
    net, graph = snn_conv
    measured = {}
    for seed in (0, 1, 2):
        x = (np.random.default_rng(seed).random((20, 2, 12, 12)) < 0.3).astype(np.float32)
        theirs = _snntorch_counts(net, x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours, dev = _our_counts(read_nir(graph, dt=1e-4), x)
        assert ours == theirs, (seed, ours, theirs)
        measured[seed] = ours
    # every layer spikes (a silent layer would make the comparison empty)
    assert all(v > 0 for counts in measured.values() for v in counts.values()), measured
    # synapses: conv1 4 x 12 x 12 outputs x (2 x 3 x 3) taps minus those in the padding
    # (the 44 border positions per channel lose 3 or 5 taps x 2 input channels)
    proj = dev.compiled.net.projections["0"]
    border = 4 * 2 * (4 * 5 + 40 * 3)   # 4 corners lose 5 taps, 40 edge positions lose 3
    assert proj.weight.size == 4 * 144 * 18 - border
    assert proj.kernel_weights == 4 * 2 * 3 * 3


def test_conv_with_mismatched_channels_is_one_line():
    """A Conv2d whose weight expects 3 input channels, fed 2: the node, its type and what
    would fit, in one line."""
    w = np.ones((4, 3, 3, 3))
    g = nir.NIRGraph(nodes={"in": nir.Input(input_type={"input": np.array([2, 8, 8])}),
                            "c": nir.Conv2d(input_shape=(8, 8), weight=w, stride=1, padding=1,
                                            dilation=1, groups=1, bias=np.zeros(4)),
                            "lif": nir.LIF(tau=np.full((4, 8, 8), 1e-3),
                                           r=np.ones((4, 8, 8)), v_leak=np.zeros((4, 8, 8)),
                                           v_threshold=np.ones((4, 8, 8))),
                            "out": nir.Output(output_type={"output": np.array([4, 8, 8])})},
                     edges=[("in", "c"), ("c", "lif"), ("lif", "out")], type_check=False)
    with pytest.raises(ExportError) as exc:
        read_nir(g, dt=1e-4, reset="value")
    msg = str(exc.value)
    assert "\n" not in msg
    assert "'c' is a Conv2d" in msg and "fed 2 channels" in msg and "expected 3" in msg


def test_conv_kernels_are_shared_on_loihi_and_unrolled_on_spinnaker2(snn_conv):
    """Loihi (limits.weight_sharing) keeps each conv kernel once per core holding its
    targets; SpiNNaker2's profile states no weight sharing, so every synapse has its entry.
    Spike counts are the same on both (the run does not depend on the storage)."""
    _, graph = snn_conv
    x = (np.random.default_rng(0).random((20, 2, 12, 12)) < 0.3).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loihi, dl = _our_counts(read_nir(graph, dt=1e-4), x, "loihi")
        spin, ds = _our_counts(read_nir(graph, dt=1e-4), x, "spinnaker2")
    assert loihi == spin
    cl, cs = dl.compiled, ds.compiled
    assert set(cl.connectivity.values()) == {"shared"}
    assert set(cs.connectivity.values()) == {"unrolled"}
    # loihi: 1,024 neurons per core, so each population (576, 16, 5 neurons) sits on one
    # core; kernels: conv1 4x2x3x3 = 72, avgpool (1 value) + conv2 4x4x3x3 = 145,
    # conv3 5x4x2x2 = 80 -> 297 entries
    assert cl.synapse_memory_bytes == 297 * cl.entry_bytes
    # spinnaker2: one entry per synapse
    assert cs.synapse_memory_bytes == cs.w.size * cs.entry_bytes


def test_neurobench_static_metrics_equal_the_neurobench_package(snn_conv):
    """ParameterCount and Footprint by the ``neurobench`` package's own metrics on the
    snnTorch module: the NIR import counts the graph's weights and biases (its kernels, not
    the unrolled synapses); estimate_spiking_module counts the module itself, buffers
    included. The chip's synapse memory is reported apart."""
    pytest.importorskip("neurobench")
    from neurobench.metrics.static import Footprint, ParameterCount
    from neurobench.models import TorchModel

    from deploy.nir_estimate import estimate_nir, estimate_spiking_module
    _, graph = snn_conv
    net = _snntorch_conv()   # a fresh module: NeuroBench's static metrics see it before a run
    model = TorchModel(net)
    footprint, params = Footprint()(model), ParameterCount()(model)
    x = (np.random.default_rng(0).random((20, 2, 12, 12)) < 0.3).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = estimate_spiking_module(net, x, ["loihi"], quantize=False)
        from_file = estimate_nir(graph, stimulus=x.reshape(20, -1), steps=23,
                                 profiles=["loihi"], dt=1e-4, quantize=False)
    # conv weights + biases: (4x2x9 + 4) + (4x4x9 + 4) + (5x4x4 + 5) = 76 + 148 + 85 = 309
    assert params == 309
    # 309 float32 parameters x 4 B + buffers: per Leaky, beta and threshold per neuron
    # (576 + 16 + 5 neurons, float32), graded_spikes_factor (float32, 4 B) and
    # reset_mechanism_val (int64, 8 B) scalars, mem empty before a run
    assert footprint == 309 * 4 + 2 * (576 + 16 + 5) * 4 + 3 * (4 + 8)
    assert est.neurobench["ParameterCount"] == params
    assert est.neurobench["Footprint"] == footprint
    assert from_file.neurobench["ParameterCount"] == 309
    # the chip's synapse memory is its own figure, not NeuroBench's Footprint
    rep = NeuromorphicDevice("loihi")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = read_nir(graph, dt=1e-4)
    rep.compile(g, quantize=False)
    assert rep.placement_report()["chip_synapse_memory_bytes"] == 297 * rep.compiled.entry_bytes


def _norse_run(net, x, cells) -> tuple[dict, list]:
    """Norse running ``net`` (a SequentialState of torch layers and cells) step by step on
    ``x`` [T, ...]: the output spikes of each cell named in ``cells`` (its index) summed
    over the run, and the last layer's output per step."""
    states, counts, last = [None] * len(net), dict.fromkeys(cells, 0), []
    with torch.no_grad():
        for t in range(x.shape[0]):
            h = torch.tensor(x[t:t + 1])
            for i, m in enumerate(net):
                if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                    h = m(h)
                else:
                    h, states[i] = m(h, states[i])
                    if str(i) in counts:
                        counts[str(i)] += int(h.sum())
            last.append(h.numpy().ravel())
    return counts, last


def test_norse_conv_export_runs_with_norses_spikes_and_readout():
    """Norse's own export (Conv2d -> LIFBoxCell -> Conv2d -> LIFBoxCell -> Conv2d ->
    LIBoxCell readout): spike counts per layer equal Norse's, and the LI readout's voltage
    follows Norse's output step for step (float32 there, float64 here).

    Norse 1.1.0's ``to_nir`` writes ``tau = dt / tau_mem_inv`` (norse/norse#411) where NIR
    means ``1 / tau_mem_inv``, so its file's taus are ``dt`` times too small; forward Euler
    uses only ``dt / tau``, so reading the file with ``dt = 1e-3 ** 2`` reproduces Norse's
    ``dt * tau_mem_inv = 0.1`` per step. Its Input carries the sample's batch of 1, which the
    first Conv2d drops."""
    norse = pytest.importorskip("norse.torch")
    torch.manual_seed(0)
    net = norse.SequentialState(torch.nn.Conv2d(2, 4, 3, padding=1), norse.LIFBoxCell(),
                                torch.nn.Conv2d(4, 3, 4, stride=4), norse.LIFBoxCell(),
                                torch.nn.Conv2d(3, 2, 3), norse.LIBoxCell())
    with torch.no_grad():   # positive, strong weights: both LIF layers spike
        for m in net:
            if isinstance(m, torch.nn.Conv2d):
                m.weight.abs_().mul_(12)
    graph = norse.to_nir(net, torch.zeros(1, 2, 12, 12))
    T = 20
    x = (np.random.default_rng(0).random((T, 2, 12, 12)) < 0.3).astype(np.float32)
    theirs, readout = _norse_run(net, x, ("1", "3"))
    ours = read_nir(graph, dt=1e-3 ** 2, reset="value")
    assert ours.populations["5"].n == 2 and ours.nir_depth["5"] == 3
    ours.probe("5", "v")
    counts, dev = _our_counts(ours, x)
    assert {k: counts[k] for k in theirs} == theirs
    assert theirs["1"] > 0 and theirs["3"] > 0, theirs
    assert counts["5"] == 0   # a readout never fires


def test_norse_li_readout_voltage_matches():
    """The LI readout's membrane equals Norse's LIBoxCell output, step for step."""
    norse = pytest.importorskip("norse.torch")
    torch.manual_seed(1)
    net = norse.SequentialState(torch.nn.Conv2d(2, 3, 3, stride=3), norse.LIBoxCell())
    graph = norse.to_nir(net, torch.zeros(1, 2, 6, 6))
    T = 15
    x = (np.random.default_rng(1).random((T, 2, 6, 6)) < 0.4).astype(np.float32)
    out, state, theirs = None, None, []
    with torch.no_grad():
        for t in range(T):
            out, state = net(torch.tensor(x[t:t + 1]), state)
            theirs.append(out.numpy().ravel())
    ours = read_nir(graph, dt=1e-3 ** 2, reset="value")
    ours.probe("1", "v")
    stimulus(ours, x.reshape(T, -1), T + 1)
    dev = NeuromorphicDevice("loihi")
    dev.compile(ours, quantize=False)
    v = dev.run(T + 1).states["1.v"]
    # the readout sits at depth 1: its step t + 1 is Norse's step t
    np.testing.assert_allclose(v[1:], np.array(theirs), rtol=1e-5, atol=1e-5)


def test_threshold_and_scale_nodes():
    """Scale(2) then Threshold(0.5): a neuron fires in the step after each input spike of
    weight 1 (2 x 1 > 0.5), never for weight 0.2 (0.4 <= 0.5): a stateless Heaviside."""
    g = nir.NIRGraph(nodes={"in": nir.Input(input_type={"input": np.array([2])}),
                            "w": nir.Linear(weight=np.array([[1.0, 0.0], [0.0, 0.2]])),
                            "s": nir.Scale(scale=np.array([2.0, 2.0])),
                            "th": nir.Threshold(threshold=np.array([0.5, 0.5])),
                            "out": nir.Output(output_type={"output": np.array([2])})},
                     edges=[("in", "w"), ("w", "s"), ("s", "th"), ("th", "out")],
                     type_check=False)
    net = read_nir(g, dt=1e-3)
    x = np.zeros((6, 2))
    x[[0, 2, 3], 0] = 1
    x[[1, 4], 1] = 1
    stimulus(net, x, 7)
    dev = NeuromorphicDevice("loihi")
    dev.compile(net, quantize=False)
    st, ix, _ = dev.run(7).spikes["th"]
    assert st.tolist() == [1, 3, 4] and ix.tolist() == [0, 0, 0]


def test_events_npy_are_binned_by_dt(tmp_path):
    """tonic's structured events (x, y, t in us, p) binned into (T, 2, H, W) steps of dt:
    events at 0, 999 and 1000 us with dt = 1 ms fall in steps 0, 0 and 1."""
    from deploy.events import events_to_spikes, synthetic_events
    ev = np.zeros(3, dtype=[("x", "<i2"), ("y", "<i2"), ("t", "<i8"), ("p", "<i1")])
    ev["x"], ev["y"], ev["t"], ev["p"] = [1, 1, 0], [0, 0, 2], [0, 999, 1000], [1, 1, 0]
    spikes = events_to_spikes(ev, (2, 3, 4), 1e-3, 3)
    assert spikes.shape == (3, 2, 3, 4) and spikes.sum() == 3
    assert spikes[0, 1, 0, 1] == 2 and spikes[1, 0, 2, 0] == 1
    # a file in that layout drives an Input of shape (2, 3, 4)
    path = tmp_path / "ev.npy"
    np.save(path, ev)
    g = nir.NIRGraph(nodes={"in": nir.Input(input_type={"input": np.array([2, 3, 4])}),
                            "pool": nir.SumPool2d(kernel_size=(3, 4), stride=(3, 4),
                                                  padding=(0, 0)),
                            "th": nir.Threshold(threshold=np.array([0.5, 0.5])),
                            "out": nir.Output(output_type={"output": np.array([2])})},
                     edges=[("in", "pool"), ("pool", "th"), ("th", "out")], type_check=False)
    net = read_nir(g, dt=1e-3)
    stimulus(net, str(path), 4)
    dev = NeuromorphicDevice("loihi")
    dev.compile(net, quantize=False)
    st, ix, _ = dev.run(4).spikes["th"]
    assert st.tolist() == [1, 2] and ix.tolist() == [1, 0]   # ON at 0 us, OFF at 1000 us
    # outside the sensor: one line naming the event
    ev["x"][2] = 9
    with pytest.raises(ExportError, match="event 2 at \\(x=9, y=2\\) lies outside"):
        events_to_spikes(ev, (2, 3, 4), 1e-3, 3)
    syn = synthetic_events(width=32, height=32, duration_us=10_000, rate_per_us=0.1)
    assert syn.size > 500 and syn["x"].max() < 32 and np.all(np.diff(syn["t"]) >= 0)


def test_a_readout_feeding_a_layer_is_refused_in_one_line():
    g = nir.NIRGraph(nodes={"in": nir.Input(input_type={"input": np.array([2])}),
                            "w": nir.Linear(weight=np.eye(2)),
                            "li": nir.LI(tau=np.ones(2), r=np.ones(2), v_leak=np.zeros(2)),
                            "w2": nir.Linear(weight=np.eye(2)),
                            "lif": nir.LIF(tau=np.ones(2), r=np.ones(2), v_leak=np.zeros(2),
                                           v_threshold=np.ones(2)),
                            "out": nir.Output(output_type={"output": np.array([2])})},
                     edges=[("in", "w"), ("w", "li"), ("li", "w2"), ("w2", "lif"),
                            ("lif", "out")], type_check=False)
    with pytest.raises(ExportError) as exc:
        read_nir(g, dt=1e-3, reset="value")
    assert "\n" not in str(exc.value)
    assert "'li' is a LI (a non-spiking readout) feeding 'w2' (Linear)" in str(exc.value)


@pytest.mark.parametrize("cin,cout,k,stride,pad,dil,groups,hw", [
    (2, 4, 3, 1, 1, 1, 1, (7, 9)),
    (4, 6, (3, 2), 2, (1, 0), 1, 2, (8, 8)),      # groups, rectangular kernel and padding
    (3, 3, 3, 1, "same", 2, 3, (9, 9)),          # depthwise, dilated, 'same'
    (2, 5, 4, 3, "valid", 1, 1, (11, 10)),
])
def test_conv2d_map_equals_torch(cin, cout, k, stride, pad, dil, groups, hw):
    """nir_ops' sparse matrix of a Conv2d applied to a random tensor equals
    torch.nn.functional.conv2d (PyTorch's conventions, which NIR follows)."""
    from deploy.nir_ops import linear_map, out_shape
    rng = np.random.default_rng(0)
    kk = k if isinstance(k, tuple) else (k, k)
    w = rng.normal(size=(cout, cin // groups, *kk))
    b = rng.normal(size=cout)
    node = nir.Conv2d(input_shape=hw, weight=w, stride=stride, padding=pad, dilation=dil,
                      groups=groups, bias=b)
    x = rng.normal(size=(cin, *hw))
    W, bias = linear_map("c", node, (cin, *hw))
    ref = torch.nn.functional.conv2d(torch.tensor(x)[None], torch.tensor(w), torch.tensor(b),
                                     stride=stride, padding=pad, dilation=dil,
                                     groups=groups)[0].numpy()
    assert out_shape("c", node, (cin, *hw)) == ref.shape
    np.testing.assert_allclose(W @ x.ravel() + bias, ref.ravel(), atol=1e-12)


def test_conv1d_and_pooling_maps_equal_torch():
    from deploy.nir_ops import linear_map
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(4, 2, 3)), rng.normal(size=(2, 10))
    node = nir.Conv1d(input_shape=10, weight=w, stride=2, padding=1, dilation=1, groups=1,
                      bias=np.zeros(4))
    W, bias = linear_map("c1", node, (2, 10))
    ref = torch.nn.functional.conv1d(torch.tensor(x)[None], torch.tensor(w), stride=2,
                                     padding=1)[0].numpy()
    assert bias is None   # an all-zero bias adds nothing
    np.testing.assert_allclose(W @ x.ravel(), ref.ravel(), atol=1e-12)
    x = rng.normal(size=(3, 8, 9))
    W, _ = linear_map("s", nir.SumPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0)),
                      (3, 8, 9))
    ref = torch.nn.functional.avg_pool2d(torch.tensor(x)[None], 2, 2)[0].numpy() * 4
    np.testing.assert_allclose(W @ x.ravel(), ref.ravel(), atol=1e-12)
    W, _ = linear_map("a", nir.AvgPool2d(kernel_size=(2, 3), stride=(2, 1), padding=(0, 0)),
                      (3, 8, 9))
    ref = torch.nn.functional.avg_pool2d(torch.tensor(x)[None], (2, 3), (2, 1))[0].numpy()
    np.testing.assert_allclose(W @ x.ravel(), ref.ravel(), atol=1e-12)


def test_a_conv_too_large_to_unroll_is_one_line():
    """2 x 4096 x 4096 input, 64 output channels, 5 x 5 taps: 64 x 4096^2 x 50 = 5.4e10
    synapses, refused before any array is built."""
    from deploy.nir_ops import linear_map
    node = nir.Conv2d(input_shape=(4096, 4096), weight=np.ones((64, 2, 5, 5)), stride=1,
                      padding=2, dilation=1, groups=1, bias=np.zeros(64))
    with pytest.raises(ExportError) as exc:
        linear_map("big", node, (2, 4096, 4096))
    assert "\n" not in str(exc.value)
    assert "'big' is a Conv2d of 53,687,091,200 synapses" in str(exc.value)


def test_cli_estimates_a_conv_nir_file_from_an_events_file(snn_conv, tmp_path, capsys):
    """`neuroedge estimate FILE.nir --stimulus events.npy --steps N`: snnTorch's conv
    export written by nir.write, tonic-layout events, on a sharing and a non-sharing chip;
    the notes say how each stored the convolutions."""
    from deploy.cli import main
    from deploy.events import synthetic_events
    _, graph = snn_conv
    path = tmp_path / "conv.nir"
    nir.write(path, graph)
    events = synthetic_events(width=12, height=12, duration_us=2_000, rate_per_us=0.5)
    np.save(tmp_path / "ev.npy", events)
    argv = ["estimate", str(path), "--stimulus", str(tmp_path / "ev.npy"), "--steps", "23",
            "--dt", "1e-4", "--reset", "snntorch", "--profiles", "loihi,spinnaker2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "note: loihi: 3 convolution/pooling projection(s) stored as shared kernels" in out
    assert "note: spinnaker2: 3 convolution/pooling projection(s) stored unrolled" in out
    # events need the run's length: without --steps, one line asks for it
    assert main(argv[:4] + argv[6:]) == 2
    assert "steps is missing" in capsys.readouterr().err


def _norse_dense(norse, cell):
    """Linear -> cell -> Linear -> cell, positive strong weights (both layers spike)."""
    torch.manual_seed(0)
    net = norse.SequentialState(torch.nn.Linear(10, 16, bias=False), cell(),
                                torch.nn.Linear(16, 4, bias=False), cell())
    with torch.no_grad():
        net[0].weight.abs_().mul_(8)
        net[2].weight.abs_().mul_(24)
    return net


def test_norse_graph_read_at_norses_dt_names_the_dt_that_runs_it():
    """Norse's taus are dt times too small (norse/norse#411): LIFBoxCell's default
    tau_mem_inv 100 /s is written as tau = 1e-3 / 100 = 1e-5 s, LIFCell's tau_syn_inv 200 /s
    as 5e-6 s. At dt = 1e-3 forward Euler diverges (dt > 2 tau); the refusal names the
    largest dt that runs (2 tau: 2e-5 s, 1e-5 s) and Norse's, where before it advised
    "method='exact'", which the import does not take. At 1e-3 ** 2 the dense network gives
    Norse's own spike counts per layer."""
    norse = pytest.importorskip("norse.torch")
    box = norse.to_nir(_norse_dense(norse, norse.LIFBoxCell), torch.zeros(1, 10))
    with pytest.raises(ExportError) as err:
        read_nir(box, dt=1e-3, reset="value")
    msg = str(err.value)
    assert "node '1': tau_mem = 1e-05 s" in msg and "dt <= 2e-05 s" in msg
    assert "norse/norse#411" in msg and "method=" not in msg
    cuba = norse.to_nir(_norse_dense(norse, norse.LIFCell), torch.zeros(1, 10))
    with pytest.raises(ExportError, match=r"tau_syn = 5e-06 s .* dt <= 1e-05 s"):
        read_nir(cuba, dt=1e-3, reset="value")

    net = _norse_dense(norse, norse.LIFBoxCell)
    T = 300
    x = (np.random.default_rng(0).random((T, 10)) < 0.3).astype(np.float32)
    theirs, _ = _norse_run(net, x, ("1", "3"))
    counts, _ = _our_counts(read_nir(box, dt=1e-3 ** 2, reset="value"), x)
    assert {k: counts[k] for k in theirs} == theirs
    assert theirs["1"] > 20 and theirs["3"] > 5, theirs


def test_a_layer_norse_could_not_export_is_named():
    """Norse's to_nir keeps a cell it cannot map (LICell) as a None node: named as such."""
    norse = pytest.importorskip("norse.torch")
    torch.manual_seed(0)
    graph = norse.to_nir(norse.SequentialState(torch.nn.Linear(4, 3), norse.LICell()),
                         torch.zeros(1, 4))
    with pytest.raises(ExportError, match=r"node '1' is empty \(None\): its producer wrote "
                                          r"no NIR node"):
        read_nir(graph, dt=1e-6, reset="value")
