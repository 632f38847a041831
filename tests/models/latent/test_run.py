"""LatEnt's run: replayed counts equal counting every block, the warm-up shared by the
methods of a seed and trained to predict the next observation."""
import types

import torch

import sim
from models.latent import envs
from models.latent import model as M
from models.latent import run as R


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
        rep = R.Replay(dev, exact=exact)
        env = envs.make("noisy-puck", 4, 3, seed=0)
        # 3 iterations: the policy's fresh and warm optimiser blocks both repeat; the
        # model's update at iteration 2; fine-tuning's first and second updates
        res = R.pretrain(env, "latent", _cfg(model_every=1, model_steps=1), rep, 0)
        R.finetune(env, _cfg(), rep, 0, res)
        ledgers.append(dev.ledger.to_dict())
        finals.append(res.final)
    assert ledgers[0] == ledgers[1]
    assert finals[0] == finals[1]              # and counting changes no number
    scopes = {s.split("/")[0] + "/" + s.split("/")[1] for s in
              sim.ledger.Ledger.from_dict(ledgers[1]).scopes()}
    assert scopes == {"pretrain/latent", "finetune/pretrained"}


def test_warm_up_is_shared_by_the_methods_of_a_seed(toy_gpu_path):
    dev = sim.device(toy_gpu_path)
    rep, warm = R.Replay(dev), {}
    env = envs.make("masked-pendulum", 4, 5, seed=0)
    a = R.pretrain(env, "latent", _cfg(iterations=1), rep, 0, warm=warm)
    b = R.pretrain(env, "observation", _cfg(iterations=1), rep, 0, warm=warm)
    # the same warmed-up model: the same held-out prediction error, one warm-up counted
    assert a.final["model_mse"] == b.final["model_mse"]
    assert not any("observation/warmup" in s for s in dev.ledger.scopes())
    assert any("latent/warmup/model" in s for s in dev.ledger.scopes())


def test_warm_up_trains_the_model_to_predict_the_next_observation(toy_gpu_path):
    """Acceptance check 1 in its weak form: the warm-up at least halves the held-out
    next-observation error of the untrained model (the digest's < 50 % of copying the last
    observation is measured by the bench; at this budget it is not reached)."""
    dev = sim.device(toy_gpu_path)
    env = envs.make("masked-pendulum", 4, 20, seed=0)
    cfg = _cfg(latent_dim=8, hidden=16, warmup_batches=2, warmup_steps=40, model_lr=3e-3)
    model, mopt, _, _ = R.build(env, cfg, dev, 0)
    held = M.rollout(env, model, None, dev, torch.Generator().manual_seed(5), 999)
    before, _ = M.next_obs_mse(model, held)
    _, facts = R.warm_up(env, model, mopt, cfg, R.Replay(dev), torch.Generator(), 0)
    after, _ = M.next_obs_mse(model, held)
    assert after < 0.5 * before and facts["model_mse"] < 0.5 * before
