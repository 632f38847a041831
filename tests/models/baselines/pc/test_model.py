"""Float PC: FF init, energy descent, PC updates ~ backprop gradients near equilibrium."""
import pytest
import torch

from models.pc import PCConfig, PCNet, comm_bits_per_neuron, simulate
from sim.errors import ModelError


def _net_and_data(seed=0):
    net = PCNet((8, 7, 6, 3), 1e-3, 0.0, seed=seed)
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(5, 8, generator=g)
    return net, x


def test_zero_steps_is_feedforward_with_output_error_only():
    net, x = _net_and_data()
    y = torch.eye(3)[[0, 1, 2, 0, 1]]
    _xs, eps = net.infer(x, y, steps=0, eta=0.1)
    assert float(eps[1].abs().max()) == 0.0 and float(eps[2].abs().max()) == 0.0
    torch.testing.assert_close(eps[3], y - net.feedforward(x)[3])


def test_inference_lowers_the_energy():
    net, x = _net_and_data(1)
    y = torch.eye(3)[[2, 1, 0, 0, 1]]
    energy = []
    for steps in (0, 5, 50):
        _, eps = net.infer(x, y, steps=steps, eta=0.1)
        energy.append(sum(float((e ** 2).sum()) for e in eps[1:]) / 2)
    assert energy[0] > energy[1] > energy[2], energy


def test_pc_update_matches_backprop_near_equilibrium():
    # Whittington & Bogacz 2017: with a small output error, converged PC errors equal the
    # backprop deltas, so -dW of PC is the gradient of 1/2 ||y - mu_L||^2
    net, x = _net_and_data(2)
    with torch.no_grad():
        mu = net.feedforward(x)[3]
    y = mu + 1e-3 * torch.randn(mu.shape, generator=torch.Generator().manual_seed(0))
    xs, eps = net.infer(x, y, steps=400, eta=0.1)
    pc = [-(eps[k].T @ net.presyn(xs)[k - 1]) for k in range(1, 4)]
    W = [w.clone().requires_grad_(True) for w in net.W]
    h = x
    for k in range(3):
        h = h @ W[k].T + net.b[k]
        if k < 2:
            h = torch.relu(h)
    (0.5 * ((y - h) ** 2).sum()).backward()
    for k in range(3):
        cos = torch.nn.functional.cosine_similarity(pc[k].ravel(), W[k].grad.ravel(), dim=0)
        assert float(cos) > 0.97, (k, float(cos))   # float32: 0.986 seen


def test_bits_formula_and_bad_config():
    assert comm_bits_per_neuron(15) == 960.0     # 15 steps x 2 x 32 bits (digest)
    with pytest.raises(ModelError, match="steps"):
        PCConfig(steps=0)


@pytest.mark.slow
def test_digits_quick_accuracy():
    assert simulate(epochs=20).metrics["test_accuracy"] >= 0.9
