"""PROBE-style partially observed environments, batched in numpy and registered with gymnasium.

Each environment is a :class:`gymnasium.vector.VectorEnv` stepping ``num_envs`` copies with
array arithmetic (no Python loop over copies). The true state is kept in ``info["state"]``
for evaluation only (the paper's Assumption 1: the oracle is used to measure, never to
learn). Episodes have a fixed horizon ``T``: ``truncated`` is true for every copy at step
``T`` and the learner resets all copies together (no autoreset).

Actions are in ``[-1, 1]^a`` for every environment (clipped here), so one Gaussian policy
serves all three. Each environment also gives:

* ``oracle(state)``: the true-state coordinates the entropy and coverage are measured in,
  each scaled to about ``[-1, 1]`` so one k-NN estimator treats every dimension alike;
* ``coverage_bins``: cells per oracle dimension of the coverage grid;
* ``sparse_reward(state)``: the downstream task's reward (1 on success, else 0).

The three, after the paper's PROBE benchmark (Section 5 and Appendix C):

``MaskedPendulum`` (PROBE's Masked Pendulum)
    Pendulum-v1's dynamics (g = 10, m = l = 1, dt = 0.05, |u| <= 2, |theta_dot| <= 8);
    the observation is ``(cos theta, sin theta)`` with the velocity dropped, and blanked to
    ``(0, 0)`` on the upper half circle (``cos theta > 0``, theta = 0 upright): many
    states, one observation. Starts hanging down at rest (small noise), so coverage is
    the policy's. Downstream: swing-up (reward 1 iff ``cos theta > 0.95`` and
    ``|theta_dot| < 1``), inside the blanked half.
``NoisyPuck`` (the cheap stand-in for PROBE's Delusional Pusher the digest proposes)
    A point mass (position p in ``[-1, 1]^2``, velocity v, damped, force a) and a puck q
    it pushes on contact (radius 0.15). The observation is ``(p, 10 v, q + noise)`` with
    noise ``N(0, (0.05 + 0.5 |p - q|)^2)`` per axis: one state, many observations, and
    the noise grows with distance, so an observation-entropy agent is paid to run away
    from the puck. Downstream: push the puck into the corner cell ``q > 0.5`` (both axes).
``FourRooms`` (a small partially observed navigation task)
    A point in the unit square split into four rooms by a cross of walls with one door in
    each wall half; the observation is four range readings (+x, -x, +y, -y) clipped at 0.1
    and scaled to ``[0, 1]``: every room looks the same and the open floor reads all ones.
    Starts in the lower-left room. Downstream: reach the upper-right corner ``x, y > 0.85``.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from sim.errors import ModelError


class _BatchEnv(VectorEnv):
    """Shared plumbing: spaces, the horizon counter and the fixed-horizon truncation."""

    obs_dim: int
    act_dim: int
    state_dim: int
    coverage_bins: int
    title: str
    # the learner resets every copy together at the horizon
    metadata = {"autoreset_mode": AutoresetMode.DISABLED}

    def __init__(self, num_envs: int = 16, horizon: int = 100, seed: int | None = None):
        if int(num_envs) < 1 or int(horizon) < 1:
            raise ModelError(f"{type(self).__name__}(num_envs={num_envs}, horizon={horizon}): "
                             "both must be >= 1")
        self.num_envs, self.horizon = int(num_envs), int(horizon)
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (self.obs_dim,), np.float32)
        self.single_action_space = spaces.Box(-1.0, 1.0, (self.act_dim,), np.float32)
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.num_envs, self.obs_dim),
                                            np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (self.num_envs, self.act_dim), np.float32)
        self.rng = np.random.default_rng(seed)
        self.t = 0
        self.state = np.zeros((self.num_envs, self.state_dim))

    def reset(self, *, seed: int | None = None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.state = self._initial()
        return self._observe().astype(np.float32), {"state": self.state.copy()}

    def step(self, actions):
        a = np.clip(np.asarray(actions, dtype=float).reshape(self.num_envs, self.act_dim),
                    -1.0, 1.0)
        self.state = self._advance(a)
        self.t += 1
        obs = self._observe().astype(np.float32)
        reward = self.sparse_reward(self.state)
        done = np.zeros(self.num_envs, bool)
        truncated = np.full(self.num_envs, self.t >= self.horizon)
        return obs, reward, done, truncated, {"state": self.state.copy()}

    # per environment
    def _initial(self) -> np.ndarray:
        raise NotImplementedError

    def _advance(self, a: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _observe(self) -> np.ndarray:
        raise NotImplementedError

    def oracle(self, state: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def sparse_reward(self, state: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class MaskedPendulum(_BatchEnv):
    obs_dim, act_dim, state_dim, coverage_bins = 2, 1, 2, 20
    title = "masked pendulum (velocity hidden, upper half blanked)"
    G, DT, MAX_SPEED, MAX_TORQUE = 10.0, 0.05, 8.0, 2.0   # Pendulum-v1's constants

    def _initial(self):
        theta = np.pi + self.rng.uniform(-0.1, 0.1, self.num_envs)
        return np.stack([theta, self.rng.uniform(-0.1, 0.1, self.num_envs)], 1)

    def _advance(self, a):
        theta, thdot = self.state[:, 0], self.state[:, 1]
        u = self.MAX_TORQUE * a[:, 0]
        # Pendulum-v1 (m = l = 1): thdot += (3 g / 2 sin theta + 3 u) dt, semi-implicit Euler
        thdot = np.clip(thdot + (1.5 * self.G * np.sin(theta) + 3.0 * u) * self.DT,
                        -self.MAX_SPEED, self.MAX_SPEED)
        theta = theta + thdot * self.DT
        return np.stack([theta, thdot], 1)

    def _observe(self):
        theta = self.state[:, 0]
        c, s = np.cos(theta), np.sin(theta)
        seen = c <= 0.0                       # lower half circle only
        return np.stack([np.where(seen, c, 0.0), np.where(seen, s, 0.0)], 1)

    def oracle(self, state):
        wrapped = (state[:, 0] + np.pi) % (2 * np.pi) - np.pi   # theta in [-pi, pi)
        return np.stack([wrapped / np.pi, state[:, 1] / self.MAX_SPEED], 1)

    def sparse_reward(self, state):
        return ((np.cos(state[:, 0]) > 0.95) & (np.abs(state[:, 1]) < 1.0)).astype(float)


class NoisyPuck(_BatchEnv):
    obs_dim, act_dim, state_dim, coverage_bins = 6, 2, 6, 6
    title = "noisy puck (observation noise grows with distance to the puck)"
    DAMP, FORCE, RADIUS = 0.7, 0.03, 0.15      # steady speed 0.03 / 0.3 = 0.1 per step
    NOISE0, NOISE_SLOPE = 0.05, 0.5

    def _initial(self):
        p = np.array([-0.7, -0.7]) + self.rng.uniform(-0.05, 0.05, (self.num_envs, 2))
        q = np.zeros((self.num_envs, 2))
        return np.concatenate([p, np.zeros((self.num_envs, 2)), q], 1)

    def _advance(self, a):
        p, v, q = self.state[:, :2], self.state[:, 2:4], self.state[:, 4:]
        v = self.DAMP * v + self.FORCE * a
        p = np.clip(p + v, -1.0, 1.0)
        d = q - p
        dist = np.linalg.norm(d, axis=1, keepdims=True)
        touch = dist < self.RADIUS
        # on contact the puck is pushed out to the contact radius along the line of centres
        pushed = p + self.RADIUS * d / np.maximum(dist, 1e-9)
        q = np.clip(np.where(touch, pushed, q), -1.0, 1.0)
        return np.concatenate([p, v, q], 1)

    def noise_std(self, state):
        return self.NOISE0 + self.NOISE_SLOPE * np.linalg.norm(state[:, :2] - state[:, 4:], axis=1)

    def _observe(self):
        s = self.state
        noise = self.rng.standard_normal((self.num_envs, 2)) * self.noise_std(s)[:, None]
        return np.concatenate([s[:, :2], 10.0 * s[:, 2:4], s[:, 4:] + noise], 1)

    def oracle(self, state):
        return np.concatenate([state[:, :2], state[:, 4:]], 1)   # agent and puck positions

    def sparse_reward(self, state):
        return ((state[:, 4] > 0.5) & (state[:, 5] > 0.5)).astype(float)


class FourRooms(_BatchEnv):
    obs_dim, act_dim, state_dim, coverage_bins = 4, 2, 2, 20
    title = "four rooms (range sensors only)"
    SPEED, RANGE = 0.04, 0.1
    DOORS = ((0.2, 0.3), (0.7, 0.8))   # door intervals in each wall half (both walls)

    def _initial(self):
        return np.array([0.15, 0.15]) + self.rng.uniform(-0.05, 0.05, (self.num_envs, 2))

    @classmethod
    def _in_door(cls, u):
        return ((u >= cls.DOORS[0][0]) & (u <= cls.DOORS[0][1])) | \
               ((u >= cls.DOORS[1][0]) & (u <= cls.DOORS[1][1]))

    def _advance(self, a):
        x, y = self.state[:, 0], self.state[:, 1]
        nx = np.clip(x + self.SPEED * a[:, 0], 0.0, 1.0)
        # the wall x = 0.5 stops a move across it unless the crossing height is in a door
        blocked = ((x - 0.5) * (nx - 0.5) < 0) & ~self._in_door(y)
        nx = np.where(blocked, x, nx)
        ny = np.clip(y + self.SPEED * a[:, 1], 0.0, 1.0)
        blocked = ((y - 0.5) * (ny - 0.5) < 0) & ~self._in_door(nx)
        ny = np.where(blocked, y, ny)
        return np.stack([nx, ny], 1)

    def _observe(self):
        x, y = self.state[:, 0], self.state[:, 1]
        # distance to the nearest wall along each axis; the cross wall counts unless the
        # ray runs through one of its doors
        wall_x = ~self._in_door(y)
        wall_y = ~self._in_door(x)
        px = np.where(wall_x & (x < 0.5), 0.5 - x, 1.0 - x)
        mx = np.where(wall_x & (x > 0.5), x - 0.5, x)
        py = np.where(wall_y & (y < 0.5), 0.5 - y, 1.0 - y)
        my = np.where(wall_y & (y > 0.5), y - 0.5, y)
        return np.minimum(np.stack([px, mx, py, my], 1), self.RANGE) / self.RANGE

    def oracle(self, state):
        return 2.0 * state - 1.0

    def sparse_reward(self, state):
        return ((state[:, 0] > 0.85) & (state[:, 1] > 0.85)).astype(float)


ENVS = {"masked-pendulum": MaskedPendulum, "noisy-puck": NoisyPuck, "four-rooms": FourRooms}
"""Dataset name (the card's) -> environment class."""

GYM_IDS = {"masked-pendulum": "neuroedge/MaskedPendulum-v0",
           "noisy-puck": "neuroedge/NoisyPuck-v0", "four-rooms": "neuroedge/FourRooms-v0"}


class SingleEnv(gym.Env):
    """One copy as a plain ``gymnasium.Env`` (for ``gym.make``): a batch of one."""

    def __init__(self, name: str = "masked-pendulum", horizon: int = 100):
        self.batch = ENVS[name](1, horizon)
        self.observation_space = self.batch.single_observation_space
        self.action_space = self.batch.single_action_space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs, info = self.batch.reset(seed=seed)
        return obs[0], {"state": info["state"][0]}

    def step(self, action):
        obs, r, term, trunc, info = self.batch.step(np.asarray(action)[None])
        return obs[0], float(r[0]), bool(term[0]), bool(trunc[0]), {"state": info["state"][0]}


def _vector(name):
    def make(num_envs: int = 16, horizon: int = 100, seed: int | None = None, **_):
        return ENVS[name](num_envs, horizon, seed)
    return make


for _name, _id in GYM_IDS.items():
    if _id not in gym.registry:
        gym.register(_id, entry_point=SingleEnv, kwargs={"name": _name},
                     vector_entry_point=_vector(_name))


def make(name: str, num_envs: int, horizon: int, seed: int | None = None) -> _BatchEnv:
    """The batched environment ``name`` through gymnasium's registry (``gym.make_vec``)."""
    if name not in ENVS:
        raise ModelError(f"environment {name!r}: known environments are {', '.join(ENVS)}")
    env = gym.make_vec(GYM_IDS[name], num_envs=num_envs, vectorization_mode="vector_entry_point",
                       horizon=horizon, seed=seed)
    return env.unwrapped if hasattr(env, "unwrapped") else env
