"""deploy.estimate (``neuroedge.estimate``): a torch module counted once, priced on GPUs, CPUs
and MCUs; skips; errors."""

import pytest
import torch
from torch import nn

from deploy.estimate import estimate
from deploy.estimate_result import Estimate
from hw_profiles.errors import ProfileError
from sim.errors import ModelError

# conv 1->4 3x3 on 28x28: 26*26 outputs x 4 channels x 9 taps = 24,336 MACs per sample;
# pool -> 4x13x13 = 676 features; fc 676 -> 10: 6,760 MACs per sample
CONV_MACS, FC_MACS = 26 * 26 * 4 * 9, 676 * 10


def cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 13 * 13, 10))


def test_cnn_macs_per_layer_and_one_ledger_for_every_profile():
    est = estimate(cnn(), (3, 1, 28, 28), profiles=["jetson-orin", "cortex-m7", "a100"])
    assert isinstance(est, Estimate) and est.source == "torch" and est.model == "Sequential"
    assert list(est.reports) == ["jetson-orin", "cortex-m7", "a100"] and not est.skipped
    ledger = est.ledgers["a100"]
    # counted once: the same ledger object priced on all three
    assert est.ledgers["jetson-orin"] is ledger and est.ledgers["cortex-m7"] is ledger
    assert ledger.samples() == {"infer": 3} and est.inference_samples == 3
    assert est.train_samples == 0
    assert ledger.ops("infer/0/forward")["mac_fp32"] == 3 * CONV_MACS     # 73,008
    assert ledger.ops("infer/4/forward")["mac_fp32"] == 3 * FC_MACS       # 20,280
    assert ledger.total_ops()["mac_fp32"] == 3 * (CONV_MACS + FC_MACS)    # 93,288
    for name, rep in est.reports.items():
        assert rep.total_j == ledger.price(name).total_j
        # per inference: the infer scope's energy over its 3 samples
        assert est.per_inference_j(name) == rep.energy_within("infer") / 3


def test_cortex_m7_prices_bytes_at_its_own_memories_a100_at_offchip():
    est = estimate(cnn(), (1, 1, 28, 28), profiles=["cortex-m7", "a100"])
    m7 = est.reports["cortex-m7"].bytes_moved()
    a100 = est.reports["a100"].bytes_moved()
    assert m7 and not any(k.startswith("offchip") for k in m7)
    assert set(m7) <= {"local:read", "local:write", "nonvolatile:read"}
    assert a100["offchip:read"] > 0
    # the same bytes moved in total, placed on different memories
    assert sum(m7.values()) == sum(est.ledgers["a100"].total_bytes().values())


def test_a_model_too_large_for_the_mcu_is_skipped_there_and_priced_elsewhere():
    big = nn.Linear(2000, 2000)   # (2000*2000 + 2000) * 4 B = 16,008,000 B of parameters
    est = estimate(big, torch.zeros(1, 2000), profiles="cortex-m7,a100")
    assert list(est.reports) == ["a100"]
    why = est.skipped["cortex-m7"]
    assert "16008000 B" in why and "cortex-m7" in why and "\n" not in why


def test_neuromorphic_and_unpriceable_profiles_are_skipped_with_a_line_each():
    est = estimate(cnn(), (1, 1, 28, 28), profiles=["loihi2", "fpga-bnn", "a100"])
    assert list(est.reports) == ["a100"]
    assert "NIR graph" in est.skipped["loihi2"] and "snnTorch" in est.skipped["loihi2"]
    assert "mac_fp32" in est.skipped["fpga-bnn"]   # a binary fabric prices no float MACs


def test_only_neuromorphic_profiles_price_nothing_and_run_nothing():
    est = estimate(cnn(), (1, 1, 28, 28), profiles=["loihi"])
    assert est.reports == {} and est.ledgers == {} and list(est.skipped) == ["loihi"]


def test_training_step_counts_forward_backward_on_a_copy():
    net = cnn().train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    est = estimate(net, (2, 1, 28, 28), profiles=["a100"], loss="auto")
    ledger = est.ledgers["a100"]
    assert ledger.samples() == {"infer": 2, "train": 2} and est.train_samples == 2
    # train: forward 31,096 + backward conv weight grad 24,336 (no grad wrt the input) +
    # fc input grad 6,760 + fc weight grad 6,760 = 68,952 MACs per sample
    train_macs = sum(ledger.ops(s).get("mac_fp32", 0) for s in ledger.scopes()
                     if s.startswith("train"))
    assert train_macs == 2 * 68_952
    assert any("cross_entropy on random labels over 10 classes" in n for n in est.notes)
    assert any("SGD(lr=0.01)" in n for n in est.notes)
    # the user's module: same weights, no gradients, still in train mode
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert all(p.grad is None for p in net.parameters()) and net.training
    assert est.per_train_sample_j("a100") == est.reports["a100"].energy_within("train") / 2


def test_auto_loss_is_mse_for_a_non_classifier_output_and_optimizer_class_is_used():
    est = estimate(nn.Linear(4, 1), torch.ones(5, 4), profiles=["x86-avx2"],
                   optimizer=torch.optim.Adam)
    note = next(n for n in est.notes if n.startswith("training step"))
    assert "mse against random normal targets" in note and "Adam" in note


def test_an_integer_output_is_refused_for_training_like_a_dict_without_floats():
    # argmax gives class ids (int64): no gradient flows through them, so no loss on them
    class Predictor(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(x).argmax(-1)
    with pytest.raises(ModelError) as info:
        estimate(Predictor(), (2, 4), profiles=["a100"], loss="auto")
    assert str(info.value) == (
        "estimate: the forward returned a Tensor of int64 with no floating-point tensor to "
        "train on; give train_step=callable(module, x) -> loss for this model "
        "(neuroedge.estimate from Python), or leave the training step out")


class OneShot(nn.Module):
    """A one-slot cache, as a streaming decoder step's: full after the first call."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x):
        if self.calls:
            raise RuntimeError(f"cache full ({self.calls} of 1 slots)")
        self.calls += 1
        return self.fc(x)


def test_a_forward_that_fails_on_its_second_call_is_one_line_where_memory_is_traced(
        tmp_path, toy_gpu_path):
    # the counted forward fills the cache; the memory check's lifetime trace is the second
    # call. cortex-m7 traces every model; the toy GPU only one whose counted bytes could
    # exceed its memory: weights 8 x 8 + 8 = 72 values x 4 B = 288 B fit 300 B, weights +
    # input 32 B + the bytes the forward wrote (its output, 32 B) = 352 B may not
    tight = tmp_path / "toy-300.toml"
    tight.write_text(toy_gpu_path.read_text().replace("capacity_bytes = { value = 1e9",
                                                      "capacity_bytes = { value = 300"))
    for profile, label in (("cortex-m7", "cortex-m7"), (str(tight), "toy-gpu (file: ")):
        with pytest.raises(ModelError) as info:
            estimate(OneShot(), (1, 8), profiles=[profile])
        text = str(info.value)
        assert text.startswith(
            "estimate: OneShot forward failed on example_input of shape (1, 8) on a second "
            "run that traces its activations' lifetimes for the memory check of "
            f"{label}"), text
        assert "(RuntimeError: cache full (1 of 1 slots)); make OneShot.forward run again" \
            in text and "\n" not in text
    # a roomy GPU runs the forward once: priced
    assert list(estimate(OneShot(), (1, 8), profiles=[str(toy_gpu_path)]).reports)


def test_custom_train_step_and_loss_with_target():
    def step(module, x):
        return module(x).pow(2).mean()
    est = estimate(nn.Linear(4, 3), torch.ones(2, 4), profiles=["a100"], train_step=step)
    assert est.ledgers["a100"].samples()["train"] == 2
    assert any("train_step step" in n for n in est.notes)
    est = estimate(nn.Linear(4, 3), torch.ones(2, 4), profiles=["a100"],
                   loss=nn.CrossEntropyLoss(), target=torch.tensor([0, 2]))
    assert any("on the given target" in n for n in est.notes)


def test_same_seed_same_numbers():
    a = estimate(cnn(), (1, 1, 28, 28), profiles=["a100", "cortex-m7"], loss="auto", seed=3)
    b = estimate(cnn(), (1, 1, 28, 28), profiles=["a100", "cortex-m7"], loss="auto", seed=3)
    assert a.rows() == b.rows()


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ModelError, "needs example_input"),
    ({"example_input": (1, 3, 28, 28)}, ModelError,
     r"forward failed on example_input of shape \(1, 3, 28, 28\)"),
    ({"example_input": torch.full((1, 1, 28, 28), float("nan"))}, ModelError,
     "784 NaN or infinite"),
    ({"example_input": (1, 0, 28, 28)}, ModelError, "each >= 1"),
    ({"example_input": (1, 1, 28, 28), "profiles": []}, ProfileError, "profiles is empty"),
    ({"example_input": (1, 1, 28, 28), "profiles": ["nope"]}, ProfileError,
     "unknown hardware profile 'nope'"),
    ({"example_input": (1, 1, 28, 28), "profiles": ["a100", "a100"]}, ProfileError,
     "listed twice"),
    ({"example_input": (1, 1, 28, 28), "steps": 10}, ModelError, "plain torch module"),
    ({"example_input": (1, 1, 28, 28), "loss": "hinge"}, ModelError, "loss 'hinge'"),
    ({"example_input": "x"}, ModelError, "is a str"),
])
def test_bad_input_is_one_neuroedge_line(kwargs, error, match):
    with pytest.raises(error, match=match) as info:
        estimate(cnn(), **kwargs)
    assert "\n" not in str(info.value)


def test_an_optimizer_instance_is_refused_it_holds_the_users_parameters():
    net = cnn()
    with pytest.raises(ModelError, match="instance bound to your module"):
        estimate(net, (1, 1, 28, 28), optimizer=torch.optim.SGD(net.parameters(), lr=0.1))


def test_a_loss_without_grad_is_refused():
    with pytest.raises(ModelError, match="requires grad"):
        estimate(nn.Linear(4, 3), torch.ones(2, 4), train_step=lambda m, x: torch.tensor(1.0))


def test_not_a_model_and_paths_that_are_not_nir():
    with pytest.raises(ModelError, match="is a dict"):
        estimate({}, (1, 2))
    with pytest.raises(ModelError, match="not a .nir file"):
        estimate("net.py", (1, 2))
    with pytest.raises(ModelError, match="does not exist"):
        estimate("missing.nir")


def _own_export(tmp_path):
    """A network of ours with its own Poisson source, exported to NIR."""
    import numpy as np

    from deploy.nir_export import export_nir
    from sim.neuromorphic import Network
    net = Network(dt=1e-3)
    net.poisson("in", 5, 200.0, seed=3)
    net.population("p", 3, "if", r=1e3, v_threshold=1.0)
    net.connect("in", "p", pre_idx=np.arange(5), post_idx=np.arange(5) % 3,
                weight=np.full(5, 0.6))
    return export_nir(net, tmp_path / "own.nir")


def test_nir_paths_and_graphs_go_to_the_neuromorphic_chips(tmp_path):
    import nir
    path = _own_export(tmp_path)
    est = estimate(str(path), profiles="loihi,a100", steps=50, seed=2)
    assert est.source == "nir" and list(est.reports) == ["loihi"]
    assert est.skipped["a100"].startswith("a100 is a gpu profile")
    graph = nir.read(path)
    again = estimate(graph, profiles=["loihi"], steps=50)
    # the same network and source seed: the same counts, from the path or the graph
    assert again.ledgers["loihi"].total_ops() == est.ledgers["loihi"].total_ops()


def test_a_spiking_module_runs_on_the_chips_with_its_spikes(tmp_path):
    snn = pytest.importorskip("snntorch")
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 3), snn.Leaky(beta=torch.full((3,), 0.9),
                                                   threshold=torch.ones(3), init_hidden=True,
                                                   output=True))
    x = (torch.rand(30, 4) < 0.3).float()                    # 30 steps of spikes, time first
    est = estimate(net, x, profiles=["loihi2", "a100"])
    assert list(est.reports) == ["loihi2"] and "a100" in est.skipped
    led = est.ledgers["loihi2"]
    # every input spike reaches the 3 neurons of the Linear layer: 3 synops per spike
    assert led.activity()["effective_acs"] == 3 * int(x.sum())
    drawn = estimate(net, (30, 4), profiles=["loihi2"], seed=1)   # a shape: random spikes
    assert any("random spikes of shape (30, 4)" in n for n in drawn.notes)
    with pytest.raises(ModelError, match="needs example_input"):
        estimate(net, profiles=["loihi2"])
    # a stimulus drives it now (tests/deploy/test_nir_snntorch_modules.py); a reset it
    # reads from its neurons is still refused
    with pytest.raises(ModelError, match=r"^estimate: a spiking module takes no reset "
                       r"\(each neuron's reset_mechanism gives it\); of the NIR options it "
                       r"takes stimulus, steps, dt$"):
        estimate(net, x, profiles=["loihi2"], reset="value")
