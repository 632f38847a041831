"""APPLE's glimpse tasks: the sensor reads what a naive loop reads, moves stay in the disc,
targets and losses are the paper's, and the gymnasium env follows the ap_gym format."""
import math

import gymnasium
import numpy as np
import pytest
import torch

from models.apple.env import ENV_ID, LOCATE_STD, GlimpseTask
from sim.errors import ModelError


def naive_glimpse(img, offset, canvas, g, pos):
    """The glimpse by a plain loop: canvas pixel (row, col) holds img[row - r0, col - c0]."""
    cx, cy = (round((p + 1) / 2 * (canvas - 1)) for p in pos)
    out = np.zeros((g, g), np.float32)
    for i in range(g):
        for j in range(g):
            r, c = cy + i - g // 2 - offset[0], cx + j - g // 2 - offset[1]
            if 0 <= r < img.shape[0] and 0 <= c < img.shape[1]:
                out[i, j] = img[r, c]
    return out


def test_glimpse_matches_naive_loop_including_edges():
    rng = np.random.default_rng(0)
    imgs = rng.random((4, 6, 5), dtype=np.float32)
    task = GlimpseTask(torch.tensor(imgs), torch.zeros(4, dtype=torch.int64), "locate",
                       canvas=11, glimpse=3, steps=4, max_step=0.3)
    ep, obs = task.reset(64, torch.Generator().manual_seed(1))
    for k in range(64):
        want = naive_glimpse(imgs[int(ep.index[k])], ep.offset[k].tolist(), 11, 3,
                             ep.pos[k].tolist())
        np.testing.assert_array_equal(obs[k, :9].reshape(3, 3).numpy(), want)
    # offsets cover 0..canvas - h rows and 0..canvas - w cols: 11 - 6 = 5, 11 - 5 = 6
    assert int(ep.offset[:, 0].max()) <= 5 and int(ep.offset[:, 1].max()) <= 6
    np.testing.assert_array_equal(obs[:, 9:11].numpy(), ep.pos.numpy())
    assert (obs[:, 11] == -1.0).all()   # time of step 0 of 4: 2 * 0 / 3 - 1


def test_moves_are_projected_into_the_disc_and_clipped():
    task = GlimpseTask(torch.zeros(1, 8, 8), torch.zeros(1, dtype=torch.int64), "classify",
                       canvas=8, glimpse=3, steps=3, max_step=0.5)
    ep, _ = task.reset(3, torch.Generator().manual_seed(0))
    ep.pos = torch.tensor([[0.0, 0.0], [0.0, 0.0], [0.9, 0.0]])
    base = task.move(ep, torch.tensor([[1.0, 1.0], [0.3, 0.4], [1.0, 0.0]]))
    s = 0.5 / math.sqrt(2)   # (1, 1) has norm sqrt 2 -> unit disc -> x 0.5
    np.testing.assert_allclose(ep.pos.numpy(), [[s, s], [0.15, 0.2], [1.0, 0.0]], atol=1e-6)
    # base reward -1e-3 ||a|| of the raw move: sqrt 2, 0.5 and 1
    np.testing.assert_allclose(base.numpy(), [-1e-3 * math.sqrt(2), -5e-4, -1e-3], rtol=1e-6)
    assert ep.t == 1


def test_locate_target_is_the_standardised_centre():
    task = GlimpseTask(torch.zeros(1, 4, 4), None, "locate", canvas=9, glimpse=3, steps=2,
                       max_step=0.2)
    ep, _ = task.reset(1, torch.Generator().manual_seed(0))
    ep.offset = torch.tensor([[5, 0]])   # rows 5..8, cols 0..3: centre x 1.5, y 6.5
    want = np.array([1.5 / 8 * 2 - 1, 6.5 / 8 * 2 - 1]) / LOCATE_STD
    np.testing.assert_allclose(task.target(ep)[0].numpy(), want, rtol=1e-6)
    # a prediction 1 standardised unit off in x is LOCATE_STD * 8 / 2 = 2.31 px off
    pred = task.target(ep) + torch.tensor([[1.0, 0.0]])
    assert float(task.error_px(pred, task.target(ep))[0]) == pytest.approx(4 * LOCATE_STD)
    assert float(task.loss(pred, task.target(ep))[0]) == pytest.approx(1.0)


def test_gymnasium_env_reward_is_base_reward_minus_prediction_loss():
    imgs = torch.rand(5, 8, 8, generator=torch.Generator().manual_seed(0))
    task = GlimpseTask(imgs, torch.arange(5) % 3, "classify", canvas=8, glimpse=3, steps=3,
                       max_step=0.5, n_classes=3)
    env = gymnasium.make(ENV_ID, task=task, disable_env_checker=True)
    obs, info = env.reset(seed=4)
    assert obs["glimpse"].shape == (3, 3) and obs["time"][0] == -1.0
    pred = np.zeros(3, np.float32)   # uniform logits: cross-entropy ln 3
    done, n = False, 0
    while not done:
        obs, r, done, trunc, info = env.step({"action": np.array([0.6, 0.8]),
                                              "prediction": pred})
        n += 1
        assert info["base_reward"] == pytest.approx(-1e-3)   # ||(0.6, 0.8)|| = 1
        assert r == pytest.approx(-1e-3 - math.log(3), rel=1e-6)
    assert n == 3 and not trunc


def test_bad_task_settings_are_refused():
    with pytest.raises(ModelError, match="glimpse = 4"):
        GlimpseTask(torch.zeros(1, 8, 8), None, "classify", 8, 4, 3, 0.2)
    with pytest.raises(ModelError, match="canvas = image side"):
        GlimpseTask(torch.zeros(1, 8, 8), None, "classify", 9, 3, 3, 0.2)
    with pytest.raises(ModelError, match="task = 'find'"):
        GlimpseTask(torch.zeros(1, 8, 8), None, "find", 8, 3, 3, 0.2)
