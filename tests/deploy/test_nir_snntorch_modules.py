"""snnTorch modules as people write them, estimated through snnTorch's own NIR export
(``estimate(module, spikes)`` / ``estimate_spiking_module``). Before: a scalar ``beta`` or
``threshold`` (``snn.Leaky(beta=0.9)``, the usual way) failed inside snnTorch's export with
NIR's raw type-inference ValueError, and a neuron's reset was never read from the module (the
import assumed snnTorch's default subtract, so ``reset_mechanism="zero"`` ran the wrong
network with a warning whose advice the caller could not take)."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
snn = pytest.importorskip("snntorch")

from deploy.nir_estimate import estimate_spiking_module  # noqa: E402
from hw_profiles.errors import NeuroedgeError  # noqa: E402


def _net(reset="subtract", second=None):
    second = second or snn.Leaky(beta=0.8, init_hidden=True, reset_mechanism=reset)
    torch.manual_seed(0)
    # a bias into a Synaptic layer becomes an input source firing every step (its spikes
    # would add to the ledger's): none there
    net = torch.nn.Sequential(
        torch.nn.Linear(10, 16), snn.Leaky(beta=0.9, init_hidden=True, reset_mechanism=reset),
        torch.nn.Linear(16, 5, bias=not isinstance(second, snn.Synaptic)), second)
    with torch.no_grad():   # stronger weights: both layers spike
        net[0].weight.mul_(3)
        net[2].weight.mul_(2)
    return net


def _snntorch_spikes(net, x) -> int:
    """Spikes of both neuron layers, snnTorch running the module itself step by step."""
    from snntorch import utils
    utils.reset(net)
    total = 0

    def count(module, args, out):
        nonlocal total
        total += int((out[0] if isinstance(out, tuple) else out).sum())

    hooks = [net[i].register_forward_hook(count) for i in (1, 3)]
    try:
        with torch.no_grad():
            for t in range(x.shape[0]):
                net(torch.tensor(x[t]))
    finally:
        for h in hooks:
            h.remove()
    return total


def _estimated_spikes(net, x) -> int:
    """The ledger's spikes less the input's (every input spike is one packet too)."""
    with warnings.catch_warnings():
        # no reset assumed: it is read from the module
        warnings.filterwarnings("error", message=".*does not state the reset")
        est = estimate_spiking_module(net, x, ["loihi"], quantize=False)
    return est.ledgers["loihi"].total_ops()["spike"] - int(x.sum())


@pytest.mark.parametrize("reset, second", [
    ("subtract", None),
    ("zero", None),
    ("subtract", "synaptic"),
], ids=["leaky-subtract", "leaky-zero", "leaky-synaptic-subtract"])
def test_scalar_parameters_export_and_spike_as_snntorch(reset, second):
    if second == "synaptic":
        second = snn.Synaptic(alpha=0.7, beta=0.8, init_hidden=True)
    net = _net(reset, second)
    for seed in (0, 1):
        x = (np.random.default_rng(seed).random((200, 10)) < 0.2).astype(np.float32)
        theirs = _snntorch_spikes(net, x)
        assert theirs > 50          # both layers are driven: the comparison can fail
        assert _estimated_spikes(net, x) == theirs, (seed, reset)
    # the module itself keeps its scalar parameters (the export ran on a copy)
    assert net[1].beta.dim() == 0 and net[1].threshold.dim() == 0


def test_zero_reset_is_not_run_as_subtract():
    """The two resets give different spikes on the same weights and input, so the test
    above tells them apart."""
    x = (np.random.default_rng(0).random((200, 10)) < 0.2).astype(np.float32)
    assert _snntorch_spikes(_net("zero"), x) != _snntorch_spikes(_net("subtract"), x)


@pytest.mark.parametrize("neuron, what", [
    (lambda: snn.RLeaky(beta=0.8, linear_features=5, init_hidden=True,
                        reset_mechanism="zero"), "reset_mechanism='zero'"),
    (lambda: snn.Leaky(beta=0.8, init_hidden=True, reset_mechanism="none"),
     "reset_mechanism='none'"),
    (lambda: snn.Leaky(beta=0.8, init_hidden=True, reset_delay=False),
     "reset_mechanism='subtract', reset_delay=False"),
])
def test_resets_the_import_cannot_run_are_refused_in_one_line(neuron, what):
    x = np.zeros((5, 10), np.float32)
    with pytest.raises(NeuroedgeError, match=rf"^estimate_spiking_module: 3 \(\w+\) has "
                                             rf"{what}, which the NIR import cannot run"):
        estimate_spiking_module(_net(second=neuron()), x, ["loihi"])


def test_a_layer_snntorch_cannot_export_is_one_line():
    net = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.Dropout(0.1),
                              snn.Leaky(beta=0.9, init_hidden=True)).eval()
    with pytest.raises(NeuroedgeError, match=r"^estimate_spiking_module: snnTorch's "
                                             r"export_to_nir failed on Sequential .*snnTorch "
                                             r"exports Linear, Conv2d"):
        estimate_spiking_module(net, np.zeros((5, 10), np.float32), ["loihi"])


def test_conv_classifier_with_flatten_exports_and_spikes_as_snntorch():
    """Conv2d -> Leaky -> AvgPool2d -> Flatten -> Linear -> Leaky, scalar betas: the usual
    snnTorch classifier. snnTorch's export traces one unbatched sample, where nn.Flatten()
    kept the 4 channels apart ((4, 9) into a Linear of 36: the export failed); the copy
    flattens from the sample's first dimension. Per layer, the spikes in each population's
    T-step window (the import delays a population by its depth) equal snnTorch's."""
    from snntorch import utils
    from snntorch.export_nir import export_to_nir

    from deploy.nir_estimate import _exportable_copy
    from deploy.nir_import import read_nir, stimulus
    from sim.neuromorphic.engine import NeuromorphicDevice
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3), snn.Leaky(beta=0.9, init_hidden=True), torch.nn.AvgPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(36, 5), snn.Leaky(beta=0.9, init_hidden=True))
    with torch.no_grad():   # stronger weights: both layers spike
        net[0].weight.mul_(3)
        net[4].weight.abs_().mul_(2)
    sample = torch.zeros(1, 8, 8)
    graph = export_to_nir(_exportable_copy(net, sample), sample)
    T = 30
    for seed in (0, 1):
        x = (np.random.default_rng(seed).random((T, 1, 8, 8)) < 0.3).astype(np.float32)
        utils.reset(net)
        theirs = {"1": 0, "5": 0}
        hooks = [net[int(k)].register_forward_hook(
            lambda m, a, out, k=k, tally=theirs: tally.__setitem__(k, tally[k] + int(out.sum())))
            for k in theirs]
        with torch.no_grad():
            for t in range(T):
                net(torch.tensor(x[t:t + 1]))
        for h in hooks:
            h.remove()
        assert min(theirs.values()) > 5     # both layers spike: the comparison can fail
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours_net = read_nir(graph, dt=1e-4, reset="snntorch")
        steps = T + max(ours_net.nir_depth.values())
        stimulus(ours_net, x.reshape(T, -1), steps)
        dev = NeuromorphicDevice("loihi")
        dev.compile(ours_net, quantize=False)
        res = dev.run(steps)
        ours = {k: int(np.count_nonzero((res.spikes[k][0] >= L) & (res.spikes[k][0] < L + T)))
                for k, L in ours_net.nir_depth.items()}
        assert ours == theirs, (seed, ours, theirs)
    # and the module goes through estimate as it is
    x = (np.random.default_rng(0).random((T, 1, 8, 8)) < 0.3).astype(np.float32)
    est = estimate_spiking_module(net, x, ["loihi"])
    assert est.ledgers["loihi"].total_ops()["synop"] > 0
