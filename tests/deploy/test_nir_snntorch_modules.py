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
    # named before the export, which wrote an empty node for it (an AttributeError on
    # 'NoneType' for an Alpha, a Lapicque or a MaxPool2d)
    with pytest.raises(NeuroedgeError, match=r"^estimate_spiking_module: layer '1' \(Dropout\) "
                                             r"is not exported by snnTorch's export_to_nir; it "
                                             r"writes Linear, Conv2d"):
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


def _spikes(est) -> int:
    return est.ledgers["loihi"].total_ops()["spike"]


def _input(t=20, n=10, seed=1):
    return (np.random.default_rng(seed).random((t, n)) < 0.3).astype(np.float32)


def test_a_time_step_keeps_snntorchs_decay():
    """snnTorch is discrete-time; its export writes tau = 1e-4 / (1 - beta). Read at another
    dt the decay changed (beta 0.98: 65 spikes at 1e-4 s, 380 at 1e-3 s); the taus are now
    scaled with dt, so the spikes are the same."""
    x = _input()
    runs = {dt: estimate_spiking_module(_net(), x, ["loihi"], dt=dt, quantize=False)
            for dt in (None, 1e-3, 2e-3)}
    assert len({_spikes(e) for e in runs.values()}) == 1 and _spikes(runs[None]) > 0


def test_a_module_left_by_training_is_estimated_as_after_a_reset():
    """After a training step an init_hidden neuron's state holds autograd history, which
    torch cannot deep-copy (the estimate was refused as an export failure); the copy takes
    it detached, and the export resets it."""
    from snntorch import utils
    net, x = _net(), _input()
    net.train()
    utils.reset(net)
    loss = sum(net(torch.from_numpy(row)).sum() for row in x[:3])
    loss.backward()
    trained = _spikes(estimate_spiking_module(net.eval(), x, ["loihi"], quantize=False))
    utils.reset(net)
    assert trained == _spikes(estimate_spiking_module(net, x, ["loihi"], quantize=False))


@pytest.mark.parametrize("make, words", [
    (lambda: snn.Leaky(beta=0.9, init_hidden=True, graded_spikes_factor=2.0),
     ["'1' (Leaky) has graded_spikes_factor=2.0"]),
    (lambda: snn.Leaky(beta=0.9, init_hidden=True, inhibition=True),
     ["'1' (Leaky) has inhibition=True"]),
    (lambda: snn.Leaky(beta=1.0, init_hidden=True), ["beta >= 1 (no leak)"]),
    (lambda: snn.Leaky(beta=0.0, init_hidden=True),
     ["beta = 0 with reset_mechanism='subtract'", "use reset_mechanism='zero'"]),
    (lambda: snn.Lapicque(beta=0.9, init_hidden=True),
     ["layer '1' (Lapicque) is not exported"]),
])
def test_a_neuron_the_export_would_change_is_refused_naming_it(make, words):
    """Before: graded spikes and inhibition were dropped silently (a different network was
    priced), beta = 1 gave an infinite tau, beta = 0 advised reset='value' (which this call
    does not take), a Lapicque an AttributeError on 'NoneType'."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = torch.nn.Sequential(torch.nn.Linear(10, 16), make(), torch.nn.Linear(16, 5),
                                  snn.Leaky(beta=0.8, init_hidden=True))
    with pytest.raises(NeuroedgeError) as err:
        estimate_spiking_module(net, _input(), ["loihi"])
    for word in words:
        assert word in str(err.value), str(err.value)


def test_images_in_the_time_first_batched_layout():
    """(T, 1, C, H, W), snnTorch's usual layout, runs as (T, C, H, W) (it was an IndexError);
    a batch of more than one is refused naming it."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), snn.Leaky(beta=0.9, init_hidden=True),
                              torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 3),
                              snn.Leaky(beta=0.9, init_hidden=True))
    x = (np.random.default_rng(0).random((10, 1, 1, 8, 8)) < 0.4).astype(np.float32)
    batched = estimate_spiking_module(net, x, ["loihi"], quantize=False)
    assert _spikes(batched) == _spikes(estimate_spiking_module(net, x[:, 0], ["loihi"],
                                                               quantize=False))
    with pytest.raises(NeuroedgeError, match=r"a batch of 3; one sample is run"):
        estimate_spiking_module(net, np.repeat(x, 3, axis=1), ["loihi"])


def test_training_options_are_refused_for_a_spiking_module():
    # they were ignored: the ledger was the inference's, with no note
    from deploy.estimate import estimate
    from sim.errors import ModelError
    for options in ({"loss": "auto"}, {"dtype": "int8"}, {"train_step": lambda m, x: 0}):
        with pytest.raises(ModelError, match="leave"):
            estimate(_net(), torch.from_numpy(_input()), profiles=["loihi"], **options)


def test_the_callers_hidden_state_is_kept_bit_for_bit():
    """Before: an estimate zeroed the caller's mem and syn, and those of every other snnTorch
    network in the process (the copy was reset with snnTorch's utils.reset, which resets
    every instance of each neuron class), although the module is promised untouched."""
    import copy

    from deploy.estimate import estimate
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 5),
                              snn.Synaptic(alpha=0.8, beta=0.9, init_hidden=True, output=True))
    other = torch.nn.Sequential(torch.nn.Linear(6, 3), snn.Leaky(beta=0.9, init_hidden=True))
    x = (torch.rand(10, 6) < 0.5).float()
    with torch.no_grad():
        for t in range(5):
            net(x[t])
            other(x[t])
    syn, mem, other_mem = net[1].syn.clone(), net[1].mem.clone(), other[1].mem.clone()
    assert syn.abs().sum() > 0 and mem.abs().sum() > 0 and other_mem.abs().sum() > 0
    est = estimate(net, x, profiles=["loihi"])
    assert torch.equal(net[1].syn, syn) and torch.equal(net[1].mem, mem)   # were zeros
    assert torch.equal(other[1].mem, other_mem)                            # was zeros
    # the estimate is still that of the network at rest
    rest = copy.deepcopy(net)
    rest[1].reset_mem()
    assert est.ledgers["loihi"].total_ops() == \
        estimate(rest, x, profiles=["loihi"]).ledgers["loihi"].total_ops()


def test_a_stimulus_drives_a_spiking_module():
    """Before: estimate_spiking_module took no stimulus (the command line refused --stimulus
    for a spiking module, though its help names them). The stimulus drives the run; the
    example input gives one step's shape."""
    net, x, drive = _net(), _input(t=20), _input(t=30, seed=7)
    alone = estimate_spiking_module(net, drive, ["loihi"], quantize=False)
    driven = estimate_spiking_module(net, x, ["loihi"], quantize=False, stimulus=drive)
    assert driven.ledgers["loihi"].total_ops() == alone.ledgers["loihi"].total_ops()
    assert _spikes(driven) != _spikes(estimate_spiking_module(net, x, ["loihi"],
                                                              quantize=False))
    assert driven.notes[0].startswith("input: a spike array of shape (30, 10) drives the 32 "
                                      "steps (seed 0)")   # its 30 rows + the depth, 2
    # Poisson: the example input's T (20) plus the depth, drawn with seed
    runs = [estimate_spiking_module(net, x, ["loihi"], stimulus="poisson:rate=1000", seed=s)
            for s in (1, 1, 2)]
    assert "22 time steps" in runs[0].reports["loihi"].time_model["infer"]
    assert _spikes(runs[0]) == _spikes(runs[1]) != _spikes(runs[2])


def test_the_command_line_drives_a_spiking_module_with_a_stimulus(tmp_path, capsys):
    """Before: "estimate_spiking_module takes no option(s) stimulus; it takes module,
    example_input, profiles, steps, dt, quantize" (quantize: no option of the command line)."""
    from deploy.cli import main
    path = tmp_path / "snnmod.py"
    path.write_text("import torch, snntorch as snn\n"
                    "def make(n=20):\n"
                    "    torch.manual_seed(0)\n"
                    "    return torch.nn.Sequential(torch.nn.Linear(n, 16), snn.Leaky(beta=0.9, "
                    "init_hidden=True), torch.nn.Linear(16, 4), snn.Leaky(beta=0.9, "
                    "init_hidden=True, output=True))\n"
                    "def digits():\n"
                    "    return make(64)\n")
    base = ["estimate", "--profiles", "loihi"]
    assert main([*base, f"{path}:make", "--input-shape", "25,20", "--stimulus",
                 "poisson:rate=100", "--steps", "100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Sequential (nir): 1 inference sample(s)")
    assert "input: the stimulus 'poisson:rate=100' drives the 100 steps (seed 0)" in out
    # dataset: 10 images, one inference sample each
    assert main([*base, f"{path}:digits", "--input-shape", "30,64", "--stimulus",
                 "dataset:digits"]) == 0
    assert capsys.readouterr().out.startswith("Sequential (nir): 10 inference sample(s)")
    # what a spiking module does not take: one line naming it and what it takes
    assert main([*base, f"{path}:make", "--input-shape", "25,20", "--reset", "value"]) == 2
    assert capsys.readouterr().err == (
        "neuroedge: error: estimate: a spiking module takes no reset (each neuron's "
        "reset_mechanism gives it); of the NIR options it takes stimulus, steps, dt\n")


def test_a_batch_of_several_is_refused_in_one_line():
    """(T, B, n) with B > 1, snnTorch's time-first batch, failed inside snnTorch's export
    with NIR's type error ("type mismatch: input.output: [[ 2 20]] -> 0.input: [[20]]")."""
    net, x = _net(), _input(t=25)
    with pytest.raises(NeuroedgeError, match=r"^estimate_spiking_module: example_input has "
                       r"shape \(25, 2, 10\): a batch of 2; one sample is run, \(T, 1, n\) or "
                       r"\(T, n\)$"):
        estimate_spiking_module(net, np.stack([x, x], 1), ["loihi"])
    # one step's input of (2, 10) is a sample for a network that flattens it first
    torch.manual_seed(0)
    flat = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(20, 4),
                               snn.Leaky(beta=0.9, init_hidden=True))
    assert estimate_spiking_module(flat, np.stack([x, x], 1), ["loihi"]).ledgers[
        "loihi"].total_ops()["synop"] > 0
