"""LatEnt's pieces: k-NN estimators, the latent loss's stop-gradients, GAE, replayed counts,
the paired test, the config's checks."""
import math
import types

import numpy as np
import pytest
import torch

import sim
from models.latent import envs
from models.latent import model as M
from models.latent.card import LatEntConfig
from models.latent.experiment import paired
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


def _cfg(**kw):
    base = dict(latent_dim=4, hidden=8, log_std=-0.5, model_lr=1e-3, policy_lr=1e-3,
                warmup_batches=1, warmup_steps=2, alpha=1.0, beta=0.1, model_buffer=2,
                iterations=3, model_every=2, model_steps=2, knn_k=3, knn_c=1.0, gamma=0.99,
                gae_lambda=0.95, minibatches=2, ppo_epochs=1, clip=0.2, vf_coef=0.5,
                ent_coef=0.0, finetune_iterations=2)
    return types.SimpleNamespace(**{**base, **kw})


def test_replayed_counts_equal_counting_every_block(toy_gpu_path):
    """The replay (count once per block kind, merge the counts at each repeat) records the
    same ledger as counting every block: the blocks' ops do not depend on the data."""
    ledgers, finals = [], []
    for exact in (True, False):
        dev = sim.device(toy_gpu_path)
        rep = M.Replay(dev, exact=exact)
        env = envs.make("noisy-puck", 4, 3, seed=0)
        # 3 iterations: the policy's fresh and warm optimiser blocks both repeat; the
        # model's update at iteration 2; fine-tuning's first and second updates
        res = M.pretrain(env, "latent", _cfg(model_every=1, model_steps=1), rep, 0)
        M.finetune(env, _cfg(), rep, 0, res)
        ledgers.append(dev.ledger.to_dict())
        finals.append(res.final)
    assert ledgers[0] == ledgers[1]
    assert finals[0] == finals[1]              # and counting changes no number
    scopes = {s.split("/")[0] + "/" + s.split("/")[1] for s in
              sim.ledger.Ledger.from_dict(ledgers[1]).scopes()}
    assert scopes == {"pretrain/latent", "finetune/pretrained"}


def test_warm_up_is_shared_by_the_methods_of_a_seed(toy_gpu_path):
    dev = sim.device(toy_gpu_path)
    rep, warm = M.Replay(dev), {}
    env = envs.make("masked-pendulum", 4, 5, seed=0)
    a = M.pretrain(env, "latent", _cfg(iterations=1), rep, 0, warm=warm)
    b = M.pretrain(env, "observation", _cfg(iterations=1), rep, 0, warm=warm)
    # the same warmed-up model: the same held-out prediction error, one warm-up counted
    assert a.final["model_mse"] == b.final["model_mse"]
    assert not any("observation/warmup" in s for s in dev.ledger.scopes())
    assert any("latent/warmup/model" in s for s in dev.ledger.scopes())


def test_paired_wilcoxon_and_sign_test():
    out = paired([2, 3, 4, 5, 6], [1, 1, 1, 1, 1])
    # all 5 differences positive: one-sided exact Wilcoxon p = 1/32, sign test p = 1/32
    assert out["wins"] == 5 and out["wilcoxon_p"] == pytest.approx(1 / 32)
    assert out["sign_p"] == pytest.approx(1 / 32) and out["holds"]
    mixed = paired([2, 0, 4, 5, 6], [1, 1, 1, 1, 1])
    # ranks of |d| = 1,1,3,4,5 -> 1.5,1.5,3,4,5; W+ = 13.5 of 15: p > 0.05
    assert mixed["wins"] == 4 and not mixed["holds"]


def test_config_refuses_bad_settings():
    with pytest.raises(ModelError, match=r"LatEntConfig.methods = \('latent', 'dreamer'\)"):
        LatEntConfig(methods=("latent", "dreamer"))
    with pytest.raises(ModelError, match=r"LatEntConfig.knn_k = 20: must be below the "
                                         r"batch's 20 points"):
        LatEntConfig(num_envs=2, horizon=10, knn_k=20)
    with pytest.raises(ModelError, match=r"LatEntConfig.gamma = 1.5: must be in \[0, 1\]"):
        LatEntConfig(gamma=1.5)


def test_warm_up_trains_the_model_to_predict_the_next_observation(toy_gpu_path):
    """Acceptance check 1 in its weak form: the warm-up at least halves the held-out
    next-observation error of the untrained model (the digest's < 50 % of copying the last
    observation is measured by the bench; at this budget it is not reached)."""
    dev = sim.device(toy_gpu_path)
    env = envs.make("masked-pendulum", 4, 20, seed=0)
    cfg = _cfg(latent_dim=8, hidden=16, warmup_batches=2, warmup_steps=40, model_lr=3e-3)
    model, mopt, _, _ = M.build(env, cfg, dev, 0)
    held = M.rollout(env, model, None, dev, torch.Generator().manual_seed(5), 999)
    before, _ = M.next_obs_mse(model, held)
    _, facts = M.warm_up(env, model, mopt, cfg, M.Replay(dev), torch.Generator(), 0)
    after, _ = M.next_obs_mse(model, held)
    assert after < 0.5 * before and facts["model_mse"] < 0.5 * before


def test_summarise_pairs_seeds_per_claim():
    from models.latent.experiment import summarise
    from sim.traces import Trace

    def table(rows, cols):
        return Trace("table", np.array(rows, float), "", cols)

    cols = ("seed", "latent", "observation", "random", "latent_noreg")
    ent = [[s, 1.0 + s, 0.5 + s, 0.0, 0.9 + s] for s in range(5)]
    far = [[s, 0.3, 1.2, 0.8, 0.4] for s in range(5)]
    run = types.SimpleNamespace(metrics={}, traces={
        "final_state_entropy_per_seed": table(ent, cols),
        "final_observed_puck_entropy_per_seed": table(far, cols),
        "final_puck_distance_per_seed": table(far, cols),
        "finetune_success_per_seed": table([[s, 0.5, 0.5 - 0.1 * (s % 2)] for s in range(5)],
                                           ("seed", "pretrained", "scratch"))})
    out = summarise({"noisy-puck": run})
    assert out["noisy-puck/latent_gt_observation"]["holds"]          # +0.5 on every seed
    assert out["noisy-puck/latent_gt_noreg"]["wins"] == 5
    assert out["noisy-puck/observation_gt_latent_puck_distance"]["mean_diff"] == \
        pytest.approx(0.9)
    # fine-tune: 2 wins, 3 ties (ties dropped): not a claim that holds
    ft = out["noisy-puck/finetune_pretrained_gt_scratch"]
    assert ft["wins"] == 2 and not ft["holds"]


@pytest.mark.slow
def test_quick_study_runs_every_claim(toy_gpu_path):
    """The quick study (3 environments x 5 seeds; ~25 min on the shared cores): one paired
    test per claim, each over 5 seeds."""
    from models import runner
    study = runner.study("latent", preset="quick", profiles={"gpu": toy_gpu_path})
    assert set(study.runs) == {"masked-pendulum", "noisy-puck", "four-rooms"}
    tests = {k: v for k, v in study.summary.items() if isinstance(v, dict)}
    # pendulum 3 (vs obs, obs vs random, vs no-regulariser), puck 3 + the trap 2, rooms 2 +
    # the fine-tune 1
    assert len(tests) == 11 and all(t["n"] == 5 for t in tests.values())
