"""Float PC: FF init, energy descent, PC updates ~ backprop gradients near equilibrium."""
import numpy as np
import pytest
import torch

import sim
from models.baselines.pc.card import PCConfig
from models.baselines.pc.model import PCClassifier, PCNet, comm_bits_per_neuron
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


def test_feedforward_by_hand():
    # 2-1-1 net with chosen weights: mu_1 = W_1 x + b_1 = 1 x 0.5 - 2 x 0.25 + 0.1 = 0.1;
    # mu_2 = W_2 relu(mu_1) + b_2 = 3 x 0.1 - 1 = -0.7
    net = PCNet((2, 1, 1), 1e-3, 0.0, seed=0)
    net.W = [torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0]])]
    net.b = [torch.tensor([0.1]), torch.tensor([-1.0])]
    xs = net.feedforward(torch.tensor([[0.5, 0.25]]))
    assert [float(v) for v in (xs[1][0, 0], xs[2][0, 0])] == pytest.approx([0.1, -0.7])
    # one inference step, eta = 0.5, y = 0: eps_2 = 0 - (-0.7) = 0.7, eps_1 = 0 (FF init);
    # x_1 += 0.5 (-0 + 1[x_1 > 0] x W_2^T eps_2) = 0.1 + 0.5 x 2.1 = 1.15
    xs, eps = net.infer(torch.tensor([[0.5, 0.25]]), torch.tensor([[0.0]]), 1, 0.5)
    assert float(xs[1][0, 0]) == pytest.approx(1.15)
    # eps_1 = 1.15 - 0.1 = 1.05, eps_2 = 0 - (3 x 1.15 - 1) = -2.45
    assert [float(eps[1][0, 0]), float(eps[2][0, 0])] == pytest.approx([1.05, -2.45])


def test_classifier_checks_its_inputs():
    clf = PCClassifier(4, 3, PCConfig(hidden=(2,), epochs=1), sim.device("x86-avx2"))
    with pytest.raises(ModelError, match=r"PCClassifier.fit: x has shape \(2, 5\), expected "
                                         r"\(N, 4\)"):
        clf.fit(np.zeros((2, 5)), np.zeros(2, int))
    with pytest.raises(ModelError, match=r"PCClassifier.fit: labels span 0..3, expected 0..2"):
        clf.fit(np.zeros((2, 4)), np.array([0, 3]))
    with pytest.raises(ModelError, match=r"PCClassifier.evaluate: x holds 1 NaN"):
        clf.evaluate(np.array([[0.0, np.nan, 0.0, 0.0]]), np.zeros(1, int))


@pytest.mark.parametrize("over, message", [
    # AdamW's first step moves every weight by ~lr = 1e20: the states overflow float32 and
    # the run reported energy = nan
    ({"lr": 1e20}, r"PCConfig lr = 1e\+20, eta = 0.1: training diverged in epoch 1"),
    # eta = 1000: each inference step overshoots the equilibrium ~1000-fold (energy nan)
    ({"eta": 1000.0}, r"PCConfig lr = 0.001, eta = 1000.0: training diverged in epoch 1"),
    # 1e38 / (1 - 0.9) = 1e39 is AdamW's first step size: not a float32 (torch RuntimeError)
    ({"lr": 1e38}, r"PCConfig.lr = 1e\+38: AdamW's step overflows float32")])
def test_a_diverging_run_is_a_one_line_error(over, message):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, (8, 6)), np.arange(8) % 3
    cfg = PCConfig(hidden=(5,), epochs=2, batch_size=4, **over)
    m = PCClassifier(6, 3, cfg, sim.device("x86-avx2", prefer_cuda=False))
    with pytest.raises(ModelError, match=message):
        m.fit(x, y)
