"""LatEnt (Ashlag et al., "Probing in the Dark: State Entropy Maximization for POMDPs",
ICLR 2026): a deterministic recurrent latent model, a k-NN entropy reward in its latent
space, a PPO policy, and the paper's Algorithm 1 schedule; counted on a ``TorchDevice``.

Latent model (Section 4, Def. 2 "predictive latent"): MLP encoders of ``o_t`` and
``a_{t-1}`` feed a GRU cell, ``l_t = f(o_t, a_{t-1}, l_{t-1})`` (a fixed null action,
zeros, for ``a_{-1}``); no stochastic state, which would inflate the entropy. Heads: the
observation decoder ``p(l_t, a_t) ~ o_{t+1}`` and the latent predictor ``g(l_t, a_t) ~
l_{t+1}``. Loss over trajectories::

    sum_t |p(l_t, a_t) - o_{t+1}|^2 + alpha |g(l_t, a_t) - sg(l_{t+1})|^2
                                   + beta  |l_{t+1} - sg(g(l_t, a_t))|^2

(sg: stop-gradient). The two predictability terms push unpredictable components (the
noise of the noisy-puck environment) out of the latent.

Reward (Section 4, after Singh et al. 2003): over all ``N T`` latents ``z_i`` of the batch,
``r_i = ln(|z_i - z_i^(k)| + c)``, ``z^(k)`` the k-th nearest neighbour in the batch.
The same pipeline with ``z = o`` is the observation-entropy baseline (RE3/APT style), with
``z`` = the oracle state the state-entropy oracle.

Policy: a Markov feed-forward Gaussian ``pi(a | l_t, o_t)`` (the current observation beside
the latent, as the paper does while the latent is still moving), PPO on-policy with GAE.
Schedule (Algorithm 1): warm-up data from a uniform random policy pre-trains the latent
model; then every iteration rolls out N trajectories, computes the rewards, updates the
policy, and updates the latent model only every ``model_every`` iterations.

Evaluation (oracle, never learned from): the Kozachenko-Leonenko k-NN entropy of the true
states, ``H = d/N sum_i ln eps_i + ln V_d + ln(N - 1) - psi(k)``, and the fraction of
occupied cells of a grid over them.

This module is the method; ``run.py`` runs it (the warm-up, pre-training and fine-tuning
loops of Algorithm 1, and the card's run over seeds).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import digamma, gammaln
from torch import nn

from models.latent import envs as envs_mod
from models.shared.training import seeded
from sim.errors import ModelError

METHODS = ("latent", "observation", "random", "state", "latent_noreg")
"""Reward spaces: LatEnt, observation entropy, a uniform random policy, the state-entropy
oracle (k-NN on the true state; an upper reference) and LatEnt without the predictability
terms (alpha = beta = 0, the paper's ablation)."""


# -- networks ---------------------------------------------------------------------------------
def mlp(inp: int, hidden: int, out: int, act=nn.Tanh) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, hidden), act(), nn.Linear(hidden, hidden), act(),
                         nn.Linear(hidden, out))


class LatentModel(nn.Module):
    """The deterministic recurrent latent model with its decoder and latent predictor."""

    def __init__(self, obs_dim: int, act_dim: int, latent: int = 32, hidden: int = 64):
        super().__init__()
        self.obs_dim, self.act_dim, self.latent = obs_dim, act_dim, latent
        self.obs_enc = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ELU(),
                                     nn.Linear(hidden, hidden))
        self.act_enc = nn.Linear(act_dim, hidden)
        self.cell = nn.GRUCell(2 * hidden, latent)
        self.decoder = mlp(latent + act_dim, hidden, obs_dim, nn.ELU)
        self.predictor = mlp(latent + act_dim, hidden, latent, nn.ELU)

    def initial(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(null action, zero latent) for ``n`` trajectories."""
        w = self.act_enc.weight
        return (torch.zeros(n, self.act_dim, device=w.device),
                torch.zeros(n, self.latent, device=w.device))

    def step(self, obs, prev_action, prev_latent):
        """``l_t = f(o_t, a_{t-1}, l_{t-1})`` (IS2a, the recursion)."""
        return self.cell(torch.cat([self.obs_enc(obs), self.act_enc(prev_action)], -1),
                         prev_latent)

    def unroll(self, obs, act):
        """Latents ``(T + 1, N, d)`` of observations ``(T + 1, N, o)`` and actions ``(T, N, a)``."""
        a0, latent = self.initial(obs.shape[1])
        out = [self.step(obs[0], a0, latent)]
        for t in range(act.shape[0]):
            out.append(self.step(obs[t + 1], act[t], out[-1]))
        return torch.stack(out)

    def loss(self, obs, act, alpha: float, beta: float):
        """The trajectory loss of the module docstring (means over steps and trajectories,
        sums over dimensions); returns (loss, reconstruction, predictability)."""
        lat = self.unroll(obs, act)
        x = torch.cat([lat[:-1], act], -1)
        rec = ((self.decoder(x) - obs[1:]) ** 2).sum(-1).mean()
        g = self.predictor(x)
        pred_a = ((g - lat[1:].detach()) ** 2).sum(-1).mean()
        pred_b = ((lat[1:] - g.detach()) ** 2).sum(-1).mean()
        return rec + alpha * pred_a + beta * pred_b, rec, pred_a


class ActorCritic(nn.Module):
    """Gaussian actor ``pi(a | l, o)`` with a state-independent log std, and a critic."""

    def __init__(self, in_dim: int, act_dim: int, hidden: int = 64, log_std: float = -0.5):
        super().__init__()
        self.actor = mlp(in_dim, hidden, act_dim)
        self.log_std = nn.Parameter(torch.full((act_dim,), float(log_std)))
        self.critic = mlp(in_dim, hidden, 1)

    def reset_critic(self, seed: int) -> None:
        """A freshly initialised critic (fine-tuning keeps the actor only)."""
        with seeded(seed):
            self.critic = mlp(self.critic[0].in_features, self.critic[0].out_features, 1).to(
                self.log_std.device)

    def log_prob(self, x, a):
        mean = self.actor(x)
        std = self.log_std.exp()
        return (-0.5 * ((a - mean) / std) ** 2 - self.log_std
                - 0.5 * math.log(2 * math.pi)).sum(-1)

    def entropy(self) -> torch.Tensor:
        return (self.log_std + 0.5 * math.log(2 * math.pi * math.e)).sum()


# -- k-NN estimators --------------------------------------------------------------------------
def knn_distance(z: torch.Tensor, k: int, chunk: int = 1024) -> torch.Tensor:
    """Distance of each row of ``z`` (M, d) to its k-th nearest other row (the batch is the
    sample: the row itself, at distance 0, is skipped). Rows in chunks, so memory is
    ``chunk x M`` floats; squared distances from ``|a|^2 + |b|^2 - 2 a.b`` (matmuls)."""
    m = z.shape[0]
    if not 1 <= k < m:
        raise ModelError(f"knn k = {k}: must be in 1..{m - 1} for a batch of {m} points")
    sq = (z * z).sum(1)
    out = []
    for i in range(0, m, chunk):
        block = z[i:i + chunk]
        d2 = (sq[i:i + chunk, None] + sq[None, :] - 2.0 * block @ z.T).clamp_min(0.0)
        kth = d2.topk(k + 1, dim=1, largest=False).values[:, k]   # index 0 is the row itself
        out.append(kth.sqrt())
    return torch.cat(out)


def knn_reward(z: torch.Tensor, k: int, c: float) -> torch.Tensor:
    """``r_i = ln(|z_i - z_i^(k)| + c)`` (the particle entropy reward)."""
    return torch.log(knn_distance(z, k) + c)


def kl_entropy(points: np.ndarray, k: int = 10, dev=None) -> float:
    """Kozachenko-Leonenko entropy (nats) of ``points`` (M, d):
    ``d/M sum ln eps_i + ln V_d + ln(M - 1) - psi(k)``, ``V_d = pi^(d/2) / Gamma(d/2 + 1)``.
    Distances below 1e-6 are floored there (exact duplicates would give ln 0)."""
    pts = torch.as_tensor(np.asarray(points, dtype=np.float32))
    if dev is not None:
        pts = pts.to(dev.torch_device)
    m, d = pts.shape
    eps = knn_distance(pts, k).clamp_min(1e-6).double().cpu().numpy()
    log_vd = 0.5 * d * math.log(math.pi) - float(gammaln(0.5 * d + 1))
    return float(d * np.log(eps).mean() + log_vd + math.log(m - 1) - digamma(k))


def coverage(points: np.ndarray, bins: int) -> float:
    """Fraction of the ``bins^d`` cells of ``[-1, 1]^d`` holding at least one point."""
    pts = np.asarray(points, dtype=float)
    idx = np.clip(((pts + 1.0) * 0.5 * bins).astype(np.int64), 0, bins - 1)
    flat = np.ravel_multi_index(idx.T, (bins,) * pts.shape[1])
    return float(np.unique(flat).size / bins ** pts.shape[1])


# -- rollouts and updates ---------------------------------------------------------------------
@dataclass
class Batch:
    """One iteration's N trajectories of T steps (time first)."""

    obs: torch.Tensor        # (T + 1, N, o)
    raw_act: torch.Tensor    # (T, N, a) the policy's samples (for log-probabilities)
    act: torch.Tensor        # (T, N, a) clipped to [-1, 1] (what the environment ran)
    logp: torch.Tensor       # (T, N)
    value: torch.Tensor      # (T + 1, N), the last is the bootstrap at the horizon
    latent: torch.Tensor     # (T + 1, N, d)
    states: np.ndarray       # (T + 1, N, s) oracle states, for evaluation only
    extrinsic: np.ndarray    # (T, N) the downstream sparse reward

    @property
    def policy_input(self) -> torch.Tensor:
        return torch.cat([self.latent, self.obs], -1)


def rollout(env, model: LatentModel, ac: ActorCritic | None, dev, gen: torch.Generator,
            seed: int) -> Batch:
    """N trajectories of ``env.horizon`` steps; ``ac=None``: uniform random actions."""
    n, horizon = env.num_envs, env.horizon
    obs_np, info = env.reset(seed=seed)
    states, ext = [info["state"]], []
    with torch.no_grad():
        o = dev.tensor(obs_np)
        a_prev, latent = model.initial(n)
        latent = model.step(o, a_prev, latent)
        obs, lats, raws, acts, logps, values = [o], [latent], [], [], [], []
        for _ in range(horizon):
            x = torch.cat([latent, o], -1)
            if ac is None:
                raw = (torch.rand(n, env.act_dim, generator=gen) * 2.0 - 1.0).to(o.device)
                logp, value = torch.zeros(n, device=o.device), torch.zeros(n, device=o.device)
            else:
                mean = ac.actor(x)
                raw = mean + ac.log_std.exp() * torch.randn(mean.shape, generator=gen).to(o.device)
                logp, value = ac.log_prob(x, raw), ac.critic(x)[:, 0]
            a = raw.clamp(-1.0, 1.0)
            obs_np, r, _, _, info = env.step(a.cpu().numpy())
            o = dev.tensor(obs_np)
            latent = model.step(o, a, latent)
            obs.append(o)
            lats.append(latent)
            raws.append(raw)
            acts.append(a)
            logps.append(logp)
            values.append(value)
            states.append(info["state"])
            ext.append(r)
        x = torch.cat([latent, o], -1)
        values.append(ac.critic(x)[:, 0] if ac is not None else torch.zeros(n, device=o.device))
    return Batch(torch.stack(obs), torch.stack(raws), torch.stack(acts), torch.stack(logps),
                 torch.stack(values), torch.stack(lats), np.stack(states), np.stack(ext))


def gae(reward, value, gamma: float, lam: float):
    """Generalised advantage estimates and returns over time-first tensors (T, N); the last
    value is the bootstrap (the horizon truncates, it does not terminate)."""
    adv = torch.zeros_like(reward)
    last = torch.zeros_like(reward[0])
    for t in range(reward.shape[0] - 1, -1, -1):
        delta = reward[t] + gamma * value[t + 1] - value[t]
        last = delta + gamma * lam * last
        adv[t] = last
    return adv, adv + value[:-1]


def ppo_update(ac, opt, batch: Batch, reward, cfg, gen) -> dict:
    """Clipped PPO (epochs x minibatches over the flattened batch), advantages normalised."""
    with torch.no_grad():
        adv, ret = gae(reward, batch.value, cfg.gamma, cfg.gae_lambda)
    x = batch.policy_input[:-1].reshape(-1, batch.policy_input.shape[-1])
    a = batch.raw_act.reshape(-1, batch.raw_act.shape[-1])
    old, adv, ret = batch.logp.reshape(-1), adv.reshape(-1), ret.reshape(-1)
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    m = x.shape[0]
    size = max(1, m // cfg.minibatches)
    stats = {}
    for _ in range(cfg.ppo_epochs):
        perm = torch.randperm(m, generator=gen).to(x.device)
        for i in range(0, m - size + 1, size):
            j = perm[i:i + size]
            ratio = (ac.log_prob(x[j], a[j]) - old[j]).exp()
            pg = -torch.min(ratio * adv[j], ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * adv[j])
            vf = (ac.critic(x[j])[:, 0] - ret[j]) ** 2
            loss = pg.mean() + cfg.vf_coef * vf.mean() - cfg.ent_coef * ac.entropy()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(ac.parameters(), 0.5)
            opt.step()
            stats = {"policy_loss": float(pg.mean().detach()),
                     "value_loss": float(vf.mean().detach())}
    return stats


def model_update(model, opt, batches: list[Batch], steps: int, alpha: float, beta: float):
    """``steps`` Adam steps of the latent-model loss on the buffered trajectories; the mean
    (loss, reconstruction) of the last step."""
    obs = torch.cat([b.obs for b in batches], 1)
    act = torch.cat([b.act for b in batches], 1)
    loss = rec = torch.zeros(())
    for _ in range(steps):   # the floats below are read after the last step only
        loss, rec, _ = model.loss(obs, act, alpha, beta)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
    return float(loss.detach()), float(rec.detach())


def next_obs_mse(model: LatentModel, batch: Batch) -> tuple[float, float]:
    """(model, copy-last-observation) mean squared next-observation error on ``batch``."""
    with torch.no_grad():
        lat = model.unroll(batch.obs, batch.act)
        pred = model.decoder(torch.cat([lat[:-1], batch.act], -1))
        mse = float(((pred - batch.obs[1:]) ** 2).sum(-1).mean())
        copy = float(((batch.obs[:-1] - batch.obs[1:]) ** 2).sum(-1).mean())
    return mse, copy


# -- oracle evaluation ------------------------------------------------------------------------
def evaluate(env, batch: Batch, dev=None) -> dict[str, float]:
    """Oracle evaluation of the states a batch visited (all T steps after the reset)."""
    states = batch.states[1:].reshape(-1, env.state_dim)
    pts = env.oracle(states)
    out = {"state_entropy": kl_entropy(pts, 10, dev),
           "coverage": coverage(pts, env.coverage_bins)}
    if isinstance(env, envs_mod.NoisyPuck):
        # the trap: entropy of the observed puck position against the true state's
        obs = batch.obs[1:].reshape(-1, env.obs_dim).cpu().numpy()
        out["observed_puck_entropy"] = kl_entropy(obs[:, 4:6], 10, dev)
        out["puck_distance"] = float(np.linalg.norm(states[:, :2] - states[:, 4:], axis=1).mean())
        out["puck_travel"] = float(np.linalg.norm(states[:, 4:], axis=1).mean())
    return out
