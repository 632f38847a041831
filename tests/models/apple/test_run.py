"""APPLE's run: training is deterministic per seed; one temperature step per actor step."""
import numpy as np
import torch

from models.apple import run as R
from models.apple.card import AppleConfig
from models.apple.env import GlimpseTask
from sim.torch_engine.engine import TorchDevice


def small():
    """test_model.small()'s task and config: 20 random 8x8 images, 3x3 glimpses, 5 steps;
    3 rollouts of 8 episodes, 2 critic steps each."""
    cfg = AppleConfig(width=16, heads=2, ffn=16, critic_hidden=32, count=False)
    dev = TorchDevice("tests/data/toy-gpu.toml")
    # the task's images and labels on the engine's device, as run.tasks() puts them
    imgs = torch.rand(20, 8, 8, generator=torch.Generator().manual_seed(0)).to(dev.torch_device)
    task = GlimpseTask(imgs, (torch.arange(20) % 10).to(dev.torch_device), "classify", 8, 3, 5,
                       0.5)
    cfg.iterations, cfg.n_envs, cfg.batch, cfg.updates_per_rollout = 3, 8, 8, 2
    cfg.eval_every, cfg.eval_episodes = 3, 16
    return cfg, dev, task


def test_training_is_deterministic_per_seed():
    cfg, dev, task = small()
    a = R.train(task, task, "apple", cfg, 5, dev)
    b = R.train(task, task, "apple", cfg, 5, dev)
    assert a["history"] == b["history"]
    np.testing.assert_array_equal(a["eval"]["pos"], b["eval"]["pos"])


def test_alpha_takes_one_step_per_actor_step(monkeypatch):
    # the temperature's update sat inside the loop over the logged gradient norms ("sac",
    # "predictor") and took two Adam steps per actor step (12 here)
    cfg, dev, task = small()
    made = []

    class CountingAdam(torch.optim.Adam):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.steps = 0
            made.append(self)

        def step(self, *a, **k):
            self.steps += 1
            return super().step(*a, **k)

    monkeypatch.setattr(torch.optim, "Adam", CountingAdam)
    agent = R.train(task, task, "apple", cfg, 5, dev)["agent"]
    actor, critic, alpha = made   # train() builds them in this order
    assert alpha.param_groups[0]["params"] == [agent.log_alpha]
    # 3 rollouts x 2 critic steps (the replay holds a batch from the first rollout on) = 6
    # critic steps; the actor steps on every policy_interval = 2nd: 3 x 1 x policy_steps 2 = 6
    assert critic.steps == 6
    assert actor.steps == 6
    assert alpha.steps == actor.steps
