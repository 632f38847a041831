"""The PROBE-style environments: registration, dynamics, masks, noise, walls."""
import gymnasium as gym
import numpy as np
import pytest

from models.latent import envs
from sim.errors import ModelError


def test_registered_with_gymnasium_single_and_vector():
    for name, gid in envs.GYM_IDS.items():
        assert gid in gym.registry
        vec = envs.make(name, 3, 7, seed=0)
        assert type(vec) is envs.ENVS[name] and isinstance(vec, gym.vector.VectorEnv)
        obs, info = vec.reset(seed=1)
        assert obs.shape == (3, vec.obs_dim) and info["state"].shape == (3, vec.state_dim)
        single = gym.make(gid)
        o, _ = single.reset(seed=1)
        assert o.shape == (vec.obs_dim,)
    with pytest.raises(ModelError, match="environment 'maze': known environments are"):
        envs.make("maze", 1, 1)


def test_horizon_truncates_every_copy_at_T():
    env = envs.make("four-rooms", 2, 3, seed=0)
    env.reset(seed=0)
    flags = [env.step(np.zeros((2, 2)))[3].tolist() for _ in range(3)]
    assert flags == [[False, False], [False, False], [True, True]]


def test_masked_pendulum_steps_like_pendulum_v1():
    """One step from the same state and torque lands where gymnasium's Pendulum-v1 does."""
    ref = gym.make("Pendulum-v1").unwrapped
    ref.reset(seed=0)
    env = envs.MaskedPendulum(4, 10, seed=0)
    env.reset(seed=0)
    start = np.array([[0.3, -1.0], [2.5, 4.0], [-1.0, 7.9], [np.pi, 0.0]])
    u = np.array([[0.5], [-1.0], [1.0], [0.0]])          # x 2 = torque in N m
    env.state = start.copy()
    env.step(u)
    for i in range(4):
        ref.state = start[i].copy()
        ref.step(2.0 * u[i])
        np.testing.assert_allclose(env.state[i], ref.state, rtol=1e-12, atol=1e-12)


def test_masked_pendulum_hides_velocity_and_blanks_the_upper_half():
    env = envs.MaskedPendulum(3, 10)
    env.reset(seed=0)
    # theta = 0 is upright (cos 1 > 0: blanked), pi hanging (seen), 2 pi / 3 (cos -0.5: seen)
    env.state = np.array([[0.0, 3.0], [np.pi, 3.0], [2 * np.pi / 3, -3.0]])
    obs = env._observe()
    np.testing.assert_allclose(obs, [[0, 0], [-1, 0], [-0.5, np.sqrt(0.75)]], atol=1e-12)
    # oracle: theta wrapped to [-pi, pi) over pi, theta_dot over 8
    np.testing.assert_allclose(env.oracle(np.array([[3 * np.pi / 2, 4.0]])), [[-0.5, 0.5]])
    # swing-up success: cos > 0.95 and |theta_dot| < 1
    assert env.sparse_reward(np.array([[0.1, 0.5], [0.1, 1.5], [0.4, 0.0]])).tolist() == \
        [1.0, 0.0, 0.0]   # cos 0.4 = 0.921


def test_noisy_puck_noise_grows_with_distance_and_contact_pushes():
    env = envs.NoisyPuck(20000, 10, seed=3)
    env.reset(seed=3)
    far = np.tile([[-0.6, -0.8, 0, 0, 0.0, 0.0]], (20000, 1))        # |p - q| = 1
    env.state = far
    noise = env._observe()[:, 4:] - far[:, 4:]
    # std 0.05 + 0.5 * 1 = 0.55 per axis; 20000 draws: the std's s.e. is 0.55/sqrt(40000)
    np.testing.assert_allclose(noise.std(0), [0.55, 0.55], atol=0.01)
    near = envs.NoisyPuck(1, 10)
    near.reset(seed=0)
    near.state = np.array([[0.0, 0.0, 0.0, 0.0, 0.2, 0.0]])
    near.step(np.array([[1.0, 0.0]]))
    # v = 0.7 * 0 + 0.03 * 1; p = (0.03, 0); |q - p| = 0.17 >= 0.15: no contact yet
    np.testing.assert_allclose(near.state[0], [0.03, 0, 0.03, 0, 0.2, 0], atol=1e-12)
    near.step(np.array([[1.0, 0.0]]))
    # v = 0.021 + 0.03 = 0.051; p = 0.081; |q - p| = 0.119 < 0.15: q pushed to p + 0.15
    np.testing.assert_allclose(near.state[0], [0.081, 0, 0.051, 0, 0.231, 0], atol=1e-12)


def test_four_rooms_walls_block_doors_pass_and_sensors_alias():
    env = envs.FourRooms(3, 10)
    env.reset(seed=0)
    # moving +x by 0.04 across x = 0.5: blocked at y = 0.45 (wall), through at y = 0.25 (door)
    env.state = np.array([[0.48, 0.45], [0.48, 0.25], [0.3, 0.4]])
    env.step(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    np.testing.assert_allclose(env.state, [[0.48, 0.45], [0.52, 0.25], [0.3, 0.44]])
    # range readings (+x, -x, +y, -y), clipped at 0.1 and scaled by 1/0.1
    env.state = np.array([[0.45, 0.05], [0.25, 0.25], [0.75, 0.75]])
    obs = env._observe()
    np.testing.assert_allclose(obs[0], [0.5, 1.0, 1.0, 0.5])
    # the middle of a room reads all ones, in every room: the aliasing of the task
    np.testing.assert_allclose(obs[1:], np.ones((2, 4)))
