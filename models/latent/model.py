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
"""
from __future__ import annotations

import copy
import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.special import digamma, gammaln
from torch import nn

from models.latent import envs as envs_mod
from sim.errors import ModelError
from sim.ledger import Ledger

METHODS = ("latent", "observation", "random", "state", "latent_noreg")
"""Reward spaces: LatEnt, observation entropy, a uniform random policy, the state-entropy
oracle (k-NN on the true state; an upper reference) and LatEnt without the predictability
terms (alpha = beta = 0, the paper's ablation)."""


# -- counting ----------------------------------------------------------------------------------
class Replay:
    """Count a block once, replay its counts for each identical repeat.

    A rollout, a PPO update, a latent-model update and a k-NN reward run the same torch ops
    on the same shapes every iteration (N, T and the networks never change), so their
    counts do not depend on the data. ``TorchDevice.count`` intercepts every op in Python
    (about 80 times the op's own time on these small tensors), so counting every iteration
    would spend the quick preset's minutes on the counter. The first block of a ``key``
    is counted into a ledger of its own; that ledger is merged into the device's ledger
    under the open scope now and at every later block of the same key, which then runs
    uncounted. ``tests/models/latent`` checks that the replayed ledger equals counting
    every block. ``exact=True`` counts every block (the check's reference).
    """

    def __init__(self, dev, exact: bool = False):
        self.dev, self.exact = dev, exact
        self.recorded: dict[str, Ledger] = {}

    @contextmanager
    def count(self, scope: str, key: str, samples: int = 0):
        """Run the block under ``scope`` (relative to the open scope); ``key`` names what
        fixes its ops (the block's kind and shapes)."""
        dev = self.dev
        if self.exact:
            with dev.count(scope, samples):
                yield
            return
        full = f"{scope}|{key}"
        if full not in self.recorded:
            real = dev.ledger
            dev.ledger = Ledger()
            try:
                with dev.count(scope, samples):
                    yield
            finally:
                self.recorded[full], dev.ledger = dev.ledger, real
        else:
            yield
        dev.ledger.merge(self.recorded[full])


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
        with torch.random.fork_rng():
            torch.manual_seed(seed)
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


# -- the loop ---------------------------------------------------------------------------------
@dataclass
class PretrainResult:
    """One reward-free pre-training run: per-iteration curves and the final evaluation."""

    method: str
    curves: dict[str, list[float]]
    final: dict[str, float]
    model: LatentModel
    ac: ActorCritic | None
    last: Batch | None = None
    extra: dict = field(default_factory=dict)


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


def _rewards(method: str, env, batch: Batch, cfg) -> torch.Tensor:
    t, n = batch.act.shape[:2]
    if method in ("latent", "latent_noreg"):
        z = batch.latent[1:].reshape(t * n, -1)
    elif method == "observation":
        z = batch.obs[1:].reshape(t * n, -1)
    else:   # state-entropy oracle
        z = torch.as_tensor(env.oracle(batch.states[1:].reshape(t * n, -1)),
                            dtype=torch.float32, device=batch.obs.device)
    return knn_reward(z, cfg.knn_k, cfg.knn_c).reshape(t, n)


def build(env, cfg, dev, seed: int):
    """A seeded latent model and actor-critic compiled on ``dev``, with their optimisers."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LatentModel(env.obs_dim, env.act_dim, cfg.latent_dim, cfg.hidden)
        ac = ActorCritic(cfg.latent_dim + env.obs_dim, env.act_dim, cfg.hidden, cfg.log_std)
    model, ac = dev.compile(model), dev.compile(ac)
    return (model, torch.optim.Adam(model.parameters(), lr=cfg.model_lr), ac,
            torch.optim.Adam(ac.parameters(), lr=cfg.policy_lr))


def _finite(value: float, what: str, cfg, field: str, default: str) -> None:
    """Refuse a run whose training diverged (a nan would reach every metric) with the
    learning rate behind it."""
    if not math.isfinite(value):
        raise ModelError(f"LatEntConfig.{field} = {getattr(cfg, field)}: {what} diverged "
                         f"({value}); use a smaller {field} (default {default})")


def _fresh(opt) -> str:
    """Part of a block's key: an optimiser's first step creates its state (more ops)."""
    return "fresh" if not opt.state else "warm"


def _shape_key(env, cfg) -> str:
    return (f"{type(env).__name__}:n{env.num_envs}:T{env.horizon}:d{cfg.latent_dim}"
            f":h{cfg.hidden}")


def warm_up(env, model, mopt, cfg, rep: Replay, gen, seed: int) -> tuple[list[Batch], dict]:
    """Random-policy data pre-trains the latent model (Algorithm 1's warm-up); the held-out
    next-observation MSE of the model against copying the last observation."""
    dev, key, steps = rep.dev, _shape_key(env, cfg), env.num_envs * env.horizon
    data = []
    for i in range(cfg.warmup_batches):
        with rep.count("warmup/rollout", f"random:{key}", samples=steps):
            data.append(rollout(env, model, None, dev, gen, seed * 1000 + 900 + i))
    data = data[-cfg.model_buffer:]
    for _ in range(cfg.warmup_steps):
        with rep.count("warmup/model", f"{len(data)}:{_fresh(mopt)}:{key}",
                       samples=steps * len(data)):
            loss, _ = model_update(model, mopt, data, 1, cfg.alpha, cfg.beta)
        _finite(loss, "the latent model's warm-up loss", cfg, "model_lr", "3e-3")
    with rep.count("warmup/evaluate", f"mse:{key}"):
        held = rollout(env, model, None, dev, gen, seed * 1000 + 999)
        mse, copy = next_obs_mse(model, held)
    return data, {"model_mse": mse, "copy_last_mse": copy}


def pretrain(env, method: str, cfg, rep: Replay, seed: int, tick=None,
             warm: dict | None = None) -> PretrainResult:
    """Reward-free pre-training of ``method`` (one of :data:`METHODS`) on ``env``: warm-up,
    then ``cfg.iterations`` of rollout / reward / PPO, the latent model every
    ``cfg.model_every`` iterations (``cfg.model_steps`` Adam steps on the last
    ``cfg.model_buffer`` batches). Ledger scopes under ``pretrain/<method>/``.

    ``warm``: a dict shared by the methods of one seed. The warm-up (random data, the
    model's pre-training) does not depend on the method, so the first method's warm-up is
    kept there and the others start from a copy of it (the same latent model, optimiser
    state and data), which pairs the methods' seeds more tightly and saves its cost.
    """
    if method not in METHODS:
        raise ModelError(f"method {method!r}: methods are {', '.join(METHODS)}")
    dev, key = rep.dev, _shape_key(env, cfg)
    gen = torch.Generator().manual_seed(seed)
    model, mopt, ac, popt = build(env, cfg, dev, seed)
    alpha, beta = (0.0, 0.0) if method == "latent_noreg" else (cfg.alpha, cfg.beta)
    curves: dict[str, list[float]] = {"state_entropy": [], "coverage": [], "model_loss": []}
    steps = env.num_envs * env.horizon
    zdim = {"observation": env.obs_dim, "state": env.oracle(env.state).shape[1]}.get(
        method, cfg.latent_dim)
    with dev.ledger.scope(f"pretrain/{method}"):
        extra, buffer = {}, []
        if method != "random":
            if warm is not None and "model" in warm:
                model.load_state_dict(warm["model"])
                mopt.load_state_dict(warm["opt"])
                buffer, extra = list(warm["buffer"]), dict(warm["extra"])
                gen.set_state(warm["gen"])
            else:
                buffer, extra = warm_up(env, model, mopt, cfg, rep, gen, seed)
                if warm is not None:
                    warm.update(model=copy.deepcopy(model.state_dict()),
                                opt=copy.deepcopy(mopt.state_dict()), buffer=list(buffer),
                                extra=dict(extra), gen=gen.get_state())
        batch = None
        for it in range(cfg.iterations):
            policy = None if method == "random" else ac
            with rep.count("rollout", f"{'random' if policy is None else 'policy'}:{key}",
                           samples=steps):
                batch = rollout(env, model, policy, dev, gen, seed * 1000 + it)
            ev = evaluate(env, batch)
            # nan states come from nan actions: the policy (its log std) diverged
            _finite(ev["state_entropy"], f"{method}'s policy (state entropy)", cfg, "policy_lr",
                    "1e-3")
            loss = math.nan
            if method != "random":
                with rep.count("reward", f"z{zdim}:{key}", samples=steps):
                    reward = _rewards(method, env, batch, cfg)
                with rep.count("train/policy", f"ppo:{_fresh(popt)}:{key}",
                               samples=steps * cfg.ppo_epochs):
                    ppo_update(ac, popt, batch, reward, cfg, gen)
                buffer = (buffer + [batch])[-cfg.model_buffer:]
                if (it + 1) % cfg.model_every == 0 and method != "state":
                    for _ in range(cfg.model_steps):
                        with rep.count("train/model", f"{len(buffer)}:{_fresh(mopt)}:{key}",
                                       samples=steps * len(buffer)):
                            loss, _ = model_update(model, mopt, buffer, 1, alpha, beta)
                        _finite(loss, "the latent model's loss", cfg, "model_lr", "3e-3")
            for name in ("state_entropy", "coverage"):
                curves[name].append(ev[name])
            curves["model_loss"].append(loss)
            if tick is not None:
                tick()
        with rep.count("evaluate", f"eval:{key}", samples=steps):
            final = evaluate(env, batch, dev)
    final.update(extra)
    return PretrainResult(method, curves, final, model, None if method == "random" else ac,
                          batch, extra)


def finetune(env, cfg, rep: Replay, seed: int, init: PretrainResult | None,
             tick=None) -> list[float]:
    """Downstream PPO on the environment's sparse reward for ``cfg.finetune_iterations``:
    from a pre-trained actor with a fresh critic (``init``), or from scratch (a fresh
    actor-critic, its latent model warmed up on random data as in pre-training). The latent
    model is frozen. Returns the per-iteration success rate (fraction of the N episodes
    that reach the reward at least once)."""
    dev, key = rep.dev, _shape_key(env, cfg)
    gen = torch.Generator().manual_seed(seed + 7919)
    tag = "pretrained" if init is not None else "scratch"
    with dev.ledger.scope(f"finetune/{tag}"):
        if init is None:
            model, mopt, ac, _ = build(env, cfg, dev, seed + 7919)
            warm_up(env, model, mopt, cfg, rep, gen, seed + 7919)
        else:
            model = init.model
            ac = ActorCritic(cfg.latent_dim + env.obs_dim, env.act_dim, cfg.hidden)
            ac.load_state_dict(init.ac.state_dict())
            ac = dev.compile(ac)
            ac.reset_critic(seed + 7919)
        popt = torch.optim.Adam(ac.parameters(), lr=cfg.policy_lr)
        steps = env.num_envs * env.horizon
        success = []
        for it in range(cfg.finetune_iterations):
            with rep.count("rollout", f"policy:{key}", samples=steps):
                batch = rollout(env, model, ac, dev, gen, seed * 1000 + 500 + it)
            success.append(float((batch.extrinsic.max(0) > 0).mean()))
            reward = dev.tensor(batch.extrinsic)
            with rep.count("train/policy", f"ppo-sparse:{_fresh(popt)}:{key}",
                           samples=steps * cfg.ppo_epochs):
                stats = ppo_update(ac, popt, batch, reward, cfg, gen)
            _finite(stats["policy_loss"] + stats["value_loss"], "fine-tuning's PPO loss", cfg,
                    "policy_lr", "1e-3")
            if tick is not None:
                tick()
    return success
