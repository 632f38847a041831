"""APPLE's run: training is deterministic per seed."""
import numpy as np
import torch

from models.apple import run as R
from models.apple.card import AppleConfig
from models.apple.env import GlimpseTask
from sim.torch_engine.engine import TorchDevice


def test_training_is_deterministic_per_seed():
    # test_model.small()'s task and config: 20 random 8x8 images, 3x3 glimpses, 5 steps
    cfg = AppleConfig(width=16, heads=2, ffn=16, critic_hidden=32, count=False)
    dev = TorchDevice("tests/data/toy-gpu.toml")
    # the task's images and labels on the engine's device, as run.tasks() puts them
    imgs = torch.rand(20, 8, 8, generator=torch.Generator().manual_seed(0)).to(dev.torch_device)
    task = GlimpseTask(imgs, (torch.arange(20) % 10).to(dev.torch_device), "classify", 8, 3, 5,
                       0.5)
    cfg.iterations, cfg.n_envs, cfg.batch, cfg.updates_per_rollout = 3, 8, 8, 2
    cfg.eval_every, cfg.eval_episodes = 3, 16
    a = R.train(task, task, "apple", cfg, 5, dev)
    b = R.train(task, task, "apple", cfg, 5, dev)
    assert a["history"] == b["history"]
    np.testing.assert_array_equal(a["eval"]["pos"], b["eval"]["pos"])
