"""Counting inside torch.func transforms (per-sample gradients with ``vmap(grad(...))``,
model ensembles with ``vmap`` over stacked weights). The module hooks see functorch
wrappers, which have no storage and no numpy view: the NeuroBench activity count raised
NotImplementedError ("Cannot access storage of TensorWrapper")."""
import pytest
import torch
from torch import nn
from torch.func import functional_call, grad, stack_module_state, vmap

from sim.torch_engine.activity import UNCOUNTED_ACTIVITY
from sim.torch_engine.engine import TorchDevice

DEVICE = TorchDevice("x86-avx2").torch_device


def _mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 6 * 6, 3))


@pytest.mark.parametrize("make, shape", [(_mlp, (8,)), (_cnn, (1, 6, 6))], ids=["mlp", "cnn"])
def test_per_sample_gradients_count_as_the_batch(make, shape):
    """The activity of a vmapped forward equals the batched forward's: vmap's samples are
    the batch (the convolution's effective pairs of each sample, the ReLUs' zeros)."""
    torch.manual_seed(0)
    net = make().to(DEVICE)
    with torch.no_grad():             # some zero weights: the effective counts read them
        net[0].weight[0].zero_()
    x = torch.randn(5, *shape, device=DEVICE)
    y = torch.randint(0, 3, (5,), device=DEVICE)
    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss(p, xi, yi):
        out = functional_call(net, p, (xi.unsqueeze(0),))
        return nn.functional.cross_entropy(out, yi.unsqueeze(0))

    per_sample = TorchDevice("x86-avx2")
    with per_sample.count("psg", samples=5):
        grads = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    batched = TorchDevice("x86-avx2")
    with batched.count("psg", samples=5), torch.no_grad():
        net(x)
    assert per_sample.ledger.uncounted() == {}
    assert per_sample.ledger.activity() == batched.ledger.activity()
    assert per_sample.ledger.activity()["effective_macs"] < \
        per_sample.ledger.activity()["dense_synops"]
    # the vmapped step's MACs: each layer's forward, its input's and its weights'
    # gradient products (3x the forward), less the first layer's input gradient, which
    # grad does not compute: 5 samples x its weights x its output positions (36 for the
    # 6 x 6 convolution, 1 for the Linear)
    fwd = batched.ledger.total_ops()["mac_fp32"]
    assert per_sample.ledger.total_ops()["mac_fp32"] == 3 * fwd - (
        5 * net[0].weight.numel() * (36 if make is _cnn else 1))
    assert grads["0.weight"].shape == (5, *net[0].weight.shape)


def test_an_ensemble_vmapped_over_weights_reports_its_activity_uncounted():
    torch.manual_seed(0)
    models = [_mlp().to(DEVICE) for _ in range(3)]
    params, buffers = stack_module_state(models)
    base = _mlp().to("meta")
    x = torch.randn(4, 8, device=DEVICE)

    def run(p, b, xi):
        return functional_call(base, (p, b), (xi,))

    dev = TorchDevice("x86-avx2")
    with dev.count("ensemble", samples=4):
        out = vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    assert out.shape == (3, 4, 3)
    # the two Linears' synaptic operations are not counted: reported, not zero; the
    # ReLU's activations are (plain outputs, 3 x 4 x 16)
    assert dev.ledger.uncounted() == {UNCOUNTED_ACTIVITY: 2}
    assert dev.ledger.activity()["activations"] == 192
    assert dev.ledger.total_ops()["mac_fp32"] == 3 * 4 * (8 * 16 + 16 * 3)
