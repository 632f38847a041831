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
    net, graph = snn_conv
    x = (np.random.default_rng(0).random((20, 2, 12, 12)) < 0.3).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = estimate_spiking_module(net, x, ["loihi"], quantize=False)
        from_file = estimate_nir(graph, stimulus=x.reshape(20, -1), steps=23,
                                 profiles=["loihi"], dt=1e-4, quantize=False)
    model = TorchModel(net)
    # conv weights + biases: (4x2x9 + 4) + (4x4x9 + 4) + (5x4x4 + 5) = 76 + 148 + 85 = 309
    assert ParameterCount()(model) == 309
    assert est.neurobench["ParameterCount"] == ParameterCount()(model)
    assert est.neurobench["Footprint"] == Footprint()(model)
    assert from_file.neurobench["ParameterCount"] == 309
    # the chip's synapse memory is its own figure, not NeuroBench's Footprint
    rep = NeuromorphicDevice("loihi")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = read_nir(graph, dt=1e-4)
    rep.compile(g, quantize=False)
    assert rep.placement_report()["chip_synapse_memory_bytes"] == 297 * rep.compiled.entry_bytes
