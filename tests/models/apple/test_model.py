"""APPLE's unified objective: each loss reaches only its heads, the reward is recomputed
from the current predictor, the baselines' moves, the replay ring."""
import copy

import numpy as np
import pytest
import torch

from models.apple import model as M
from models.apple.card import AppleConfig
from models.apple.env import GlimpseTask
from models.shared.training import seeded


def small(task_kind="classify"):
    cfg = AppleConfig(width=16, heads=2, ffn=16, critic_hidden=32, count=False)
    imgs = torch.rand(20, 8, 8, generator=torch.Generator().manual_seed(0))
    task = GlimpseTask(imgs, torch.arange(20) % 10, task_kind, 8, 3, 5, 0.5)
    with seeded(0):   # never torch's global RNG
        agent = M.Agent(task, cfg)
    gen = torch.Generator().manual_seed(1)
    batch = M.rollout(agent, task, "apple", 8, gen)
    return cfg, task, agent, batch


def snapshot(module):
    return [p.detach().clone() for p in module.parameters()]


def same(before, module):
    return all(torch.equal(a, b) for a, b in zip(before, module.parameters(), strict=True))


def opts(agent):
    heads = list(agent.actor.parameters()) + list(agent.predictor.parameters())
    actor = torch.optim.Adam(list(agent.backbone.parameters()) + heads, lr=1e-2)
    critic = torch.optim.Adam(list(agent.backbone.parameters())
                              + list(agent.critic.parameters()), lr=1e-2)
    return actor, critic


def test_critic_step_moves_backbone_and_q_heads_only():
    _, task, agent, batch = small()
    actor_opt, critic_opt = opts(agent)
    keep = {k: snapshot(getattr(agent, k)) for k in ("backbone", "actor", "predictor", "critic")}
    loss, _, _ = M.critic_loss(agent, task, batch, torch.randn(8, 4, 2), 0.99)
    critic_opt.zero_grad()
    loss.backward()
    assert agent.actor.weight.grad is None and agent.predictor.weight.grad is None
    critic_opt.step()
    assert same(keep["actor"], agent.actor) and same(keep["predictor"], agent.predictor)
    assert not same(keep["backbone"], agent.backbone)
    assert not same(keep["critic"], agent.critic)


def test_actor_step_moves_backbone_actor_predictor_not_q_heads():
    _, task, agent, batch = small()
    actor_opt, _ = opts(agent)
    keep = {k: snapshot(getattr(agent, k)) for k in ("backbone", "actor", "predictor", "critic")}
    stats = agent.critic.qs[0][1].running_mean.clone()
    loss, logp, _ = M.actor_loss(agent, task, batch, torch.randn(8, 5, 2), 1.0, 1.0)
    actor_opt.zero_grad()
    loss.backward()
    assert all(p.grad is None for p in agent.critic.parameters())   # Q frozen in the step
    actor_opt.step()
    assert same(keep["critic"], agent.critic)
    torch.testing.assert_close(agent.critic.qs[0][1].running_mean, stats, rtol=0, atol=0)
    for k in ("backbone", "actor", "predictor"):
        assert not same(keep[k], getattr(agent, k)), k
    assert agent.critic.training   # back in train mode for the next joint pass
    assert logp.shape == (8, 5)


def test_supervised_term_alone_leaves_actor_and_critic():
    """a_coef = 0 (the baselines' update): only the backbone and the predictor learn."""
    _, task, agent, batch = small()
    actor_opt, _ = opts(agent)
    keep = snapshot(agent.actor)
    loss, logp, _ = M.actor_loss(agent, task, batch, torch.randn(8, 5, 2), 0.0, 1.0)
    actor_opt.zero_grad()
    loss.backward()
    actor_opt.step()
    assert logp is None and same(keep, agent.actor)


@pytest.mark.parametrize("kind", ["classify", "locate"])
def test_targets_change_when_only_the_predictor_changes(kind):
    _, task, agent, batch = small(kind)
    eps = torch.randn(8, 4, 2, generator=torch.Generator().manual_seed(3))
    r0, *_ = M.recomputed_reward(agent, task, batch, eps)
    _, t0, _ = M.critic_loss(agent, task, batch, eps, 0.99)
    other = copy.deepcopy(agent)
    with torch.no_grad():
        other.predictor.weight.add_(torch.randn(other.predictor.weight.shape,
                                                  generator=torch.Generator().manual_seed(4)))
    r1, *_ = M.recomputed_reward(other, task, batch, eps)
    _, t1, _ = M.critic_loss(other, task, batch, eps, 0.99)
    assert not torch.allclose(r0, r1) and not torch.allclose(t0, t1)
    # r~ = r_base - loss: the stored base reward is untouched, the loss term moved
    torch.testing.assert_close(r1 - r0, task.loss(agent.predictor(agent.backbone(batch["obs"])),
                                                  _expand(task, batch))
                               - task.loss(other.predictor(agent.backbone(batch["obs"])),
                                           _expand(task, batch)))
    # perturbing the actor alone leaves r~ bit-identical (only a' and so V' move)
    actor = copy.deepcopy(agent)
    with torch.no_grad():
        actor.actor.weight.add_(torch.randn(actor.actor.weight.shape,
                                              generator=torch.Generator().manual_seed(5)))
    r2, _, a2, _ = M.recomputed_reward(actor, task, batch, eps)
    _, _, a0, _ = M.recomputed_reward(agent, task, batch, eps)
    torch.testing.assert_close(r2, r0, rtol=0, atol=0)
    assert not torch.allclose(a2, a0)


def _expand(task, batch):
    return batch["y"][:, None].expand(-1, task.steps, *batch["y"].shape[1:])


def test_last_step_has_no_bootstrap():
    """done after step T - 1: its target is the recomputed reward itself."""
    _, task, agent, batch = small()
    eps = torch.randn(8, 4, 2)
    r, *_ = M.recomputed_reward(agent, task, batch, eps)
    _, target, _ = M.critic_loss(agent, task, batch, eps, 0.99)
    torch.testing.assert_close(target[:, -1], r[:, -1], rtol=0, atol=0)
    _, target0, _ = M.critic_loss(agent, task, batch, eps, 0.0)   # gamma 0: target = r~
    torch.testing.assert_close(target0, r, rtol=0, atol=0)


def test_scan_waypoints_and_moves():
    wp = M.scan_waypoints(6)   # side ceil(sqrt 6) = 3: rows -0.75, 0, 0.75, serpentine
    np.testing.assert_allclose(wp.numpy(), [[-0.75, -0.75], [0, -0.75], [0.75, -0.75],
                                            [0.75, 0], [0, 0], [-0.75, 0]])
    _, task, agent, _ = small()
    eps = M.rollout(agent, task, "scan", 4, torch.Generator().manual_seed(0))
    assert eps["act"].abs().max() <= 1.0
    # the same starts: the scan is a fixed function of the position, so equal runs
    again = M.rollout(agent, task, "scan", 4, torch.Generator().manual_seed(0))
    torch.testing.assert_close(eps["pos"], again["pos"], rtol=0, atol=0)


def test_replay_ring_keeps_the_newest_episodes():
    rep = M.Replay(5)
    for k in range(3):   # 3 x 2 episodes into 5 slots: the first one is overwritten
        rep.add({"obs": torch.full((2, 1, 1), float(k)), "act": torch.zeros(2, 1, 2),
                 "r_base": torch.zeros(2, 1), "y": torch.zeros(2, dtype=torch.int64)})
    assert rep.size == 5 and rep.head == 1
    assert rep.data["obs"].flatten().tolist() == [2.0, 0.0, 1.0, 1.0, 2.0]


# --- how far the RL losses reach into the shared backbone (issue 33, item 3) ---------------
def backbone_grads(agent):
    return [None if p.grad is None else p.grad.clone() for p in agent.backbone.parameters()]


def test_critic_off_the_backbone_still_logs_its_pull():
    """to_backbone=False: L_Q trains the Q heads only, yet its gradient at the features
    (what it would send into the backbone) is there for the log."""
    _, task, agent, batch = small()
    loss, _, f_q = M.critic_loss(agent, task, batch, torch.randn(8, 4, 2), 0.99,
                                 to_backbone=False)
    loss.backward()
    assert all(p.grad is None for p in agent.backbone.parameters())
    assert agent.critic.qs[0][0].weight.grad is not None
    assert f_q.grad is not None and M.grad_norm(f_q) > 0
    assert M.grad_norm(f_q) == pytest.approx(float(f_q.grad.norm()))


def test_sac_term_reaches_the_backbone_times_its_scale():
    """The backbone's gradient is linear in the SAC term's scale s: g(s) = g_pred + s g_sac,
    so g(0) is the prediction term's alone (a_coef = 0 gives the same) and
    g(0.5) = (g(0) + g(1)) / 2. The branches keep each term's own gradient at the features,
    the same for every s (the scale acts behind them)."""
    _, task, agent, batch = small()
    eps = torch.randn(8, 5, 2, generator=torch.Generator().manual_seed(6))
    grads, branches = {}, {}
    for s in (0.0, 0.5, 1.0):
        agent.zero_grad(set_to_none=True)
        loss, _, branches[s] = M.actor_loss(agent, task, batch, eps, 1.0, 1.0, s)
        loss.backward()
        grads[s] = backbone_grads(agent)
    agent.zero_grad(set_to_none=True)
    loss, _, alone = M.actor_loss(agent, task, batch, eps, 0.0, 1.0)
    loss.backward()
    assert alone["sac"] is None and M.grad_norm(alone["sac"]) == 0.0
    for g0, g5, g1, ga in zip(grads[0.0], grads[0.5], grads[1.0], backbone_grads(agent),
                              strict=True):
        torch.testing.assert_close(g0, ga)
        torch.testing.assert_close(g5, (g0 + g1) / 2)
    assert not all(torch.equal(a, b) for a, b in zip(grads[0.0], grads[1.0], strict=True))
    for k in ("sac", "predictor"):
        torch.testing.assert_close(branches[0.0][k].grad, branches[1.0][k].grad)


def test_a_scaled_gradient_under_its_own_adam_takes_the_same_step():
    """Why the critic's reach is a learning rate: Adam's step is m / (sqrt(v) + eps), so
    gradients 0.1 g give the step of g (to eps = 1e-8 against |g| ~ 1)."""
    g = torch.randn(5, generator=torch.Generator().manual_seed(7))
    steps = []
    for scale in (1.0, 0.1):
        w = torch.zeros(5, requires_grad=True)
        opt = torch.optim.Adam([w], lr=1e-3)
        for _ in range(3):
            w.grad = scale * g
            opt.step()
        steps.append(w.detach().clone())
    torch.testing.assert_close(steps[0], steps[1], rtol=1e-5, atol=1e-9)
