"""LatEnt's pieces: k-NN estimators, the latent loss's stop-gradients, GAE, the config's
checks."""
import math

import numpy as np
import pytest
import torch

from models.latent import model as M
from models.latent.card import LatEntConfig
from sim.errors import ModelError


def test_knn_distance_and_reward_on_a_line():
    z = torch.tensor([[0.0], [1.0], [3.0], [7.0]])
    # k = 1: nearest other point; k = 2: second nearest
    assert M.knn_distance(z, 1).tolist() == [1.0, 1.0, 2.0, 4.0]
    assert M.knn_distance(z, 2).tolist() == [3.0, 2.0, 3.0, 6.0]
    r = M.knn_reward(z, 1, 1.0)
    np.testing.assert_allclose(r.numpy(), np.log([2.0, 2.0, 3.0, 5.0]), rtol=1e-6)
    with pytest.raises(ModelError, match=r"knn k = 4: must be in 1..3 for a batch of 4"):
        M.knn_distance(z, 4)


def test_knn_distance_in_chunks_equals_one_block():
    z = torch.randn(300, 5, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(M.knn_distance(z, 3, chunk=64), M.knn_distance(z, 3, chunk=300))


def test_kl_entropy_of_uniform_and_gaussian():
    rng = np.random.default_rng(0)
    # uniform on [0, 2]^2: H = ln 4 = 1.386; Gaussian N(0, I_3): H = 1.5 ln(2 pi e) = 4.257
    # the KL estimator's bias at M = 4000, k = 10 is a few hundredths
    assert M.kl_entropy(rng.uniform(0, 2, (4000, 2))) == pytest.approx(math.log(4), abs=0.06)
    assert M.kl_entropy(rng.standard_normal((4000, 3))) == pytest.approx(
        1.5 * math.log(2 * math.pi * math.e), abs=0.08)


def test_coverage_counts_occupied_cells():
    pts = np.array([[-0.99, -0.99], [-0.98, -0.97], [0.99, 0.99], [0.0, 0.0]])
    # 4 x 4 cells of [-1, 1]^2: the first two share cell (0, 0); (2, 2) and (3, 3) -> 3 of 16
    assert M.coverage(pts, 4) == 3 / 16


def test_latent_loss_stop_gradients():
    """beta's term never reaches the predictor (its target is sg(g)); alpha's does (its
    target sg(l') is fixed, its input l_t is not)."""
    torch.manual_seed(0)
    net = M.LatentModel(3, 2, latent=4, hidden=8)
    obs, act = torch.randn(6, 2, 3), torch.randn(5, 2, 2)

    def grads(alpha, beta):
        net.zero_grad()
        loss, rec, _ = net.loss(obs, act, alpha, beta)
        (loss - rec).backward()       # the predictability terms alone
        return {n: (p.grad is not None and bool(p.grad.abs().sum() > 0))
                for n, p in net.named_parameters()}

    only_alpha = grads(1.0, 0.0)
    assert all(v for n, v in only_alpha.items() if n.startswith("predictor"))
    assert not any(v for n, v in only_alpha.items() if n.startswith("decoder"))
    only_beta = grads(0.0, 1.0)
    assert not any(v for n, v in only_beta.items() if n.startswith("predictor"))
    assert all(v for n, v in only_beta.items() if n.startswith("cell"))
    assert not any(v for n, v in only_beta.items() if n.startswith("decoder"))


def test_unroll_is_the_recursion():
    torch.manual_seed(1)
    net = M.LatentModel(2, 1, latent=3, hidden=5)
    obs, act = torch.randn(4, 2, 2), torch.randn(3, 2, 1)
    lat = net.unroll(obs, act)
    a0, l0 = net.initial(2)
    step = net.step(obs[0], a0, l0)
    torch.testing.assert_close(lat[0], step)
    for t in range(3):
        step = net.step(obs[t + 1], act[t], step)
        torch.testing.assert_close(lat[t + 1], step)


def test_gae_by_hand():
    # T = 2, one trajectory, gamma = 0.5, lambda = 1: deltas r + 0.5 V' - V
    r = torch.tensor([[1.0], [2.0]])
    v = torch.tensor([[0.5], [1.0], [4.0]])
    adv, ret = M.gae(r, v, 0.5, 1.0)
    # delta_1 = 2 + 2 - 1 = 3; delta_0 = 1 + 0.5 - 0.5 = 1; A_0 = 1 + 0.5 * 3 = 2.5
    assert adv[:, 0].tolist() == [2.5, 3.0] and ret[:, 0].tolist() == [3.0, 4.0]


def test_config_refuses_bad_settings():
    with pytest.raises(ModelError, match=r"LatEntConfig.methods = \('latent', 'dreamer'\)"):
        LatEntConfig(methods=("latent", "dreamer"))
    with pytest.raises(ModelError, match=r"LatEntConfig.knn_k = 20: must be below the "
                                         r"batch's 20 points"):
        LatEntConfig(num_envs=2, horizon=10, knn_k=20)
    with pytest.raises(ModelError, match=r"LatEntConfig.gamma = 1.5: must be in \[0, 1\]"):
        LatEntConfig(gamma=1.5)
