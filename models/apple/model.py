"""APPLE: active perception policy learning (Schneider et al., ICLR 2026, arXiv 2505.06182).

One causal transformer over the episode's observations feeds three heads: the actor (a
tanh-squashed Gaussian over sensor moves), the predictor (class logits or the target's
coordinates) and the critic (2 Q networks on [feature, action]). The reward of Sec. 3 is
``r~_t = r(h_t, a_t) - loss(y*_t, yhat_t)``, so the return's gradient splits into an RL term
(where to look) and a supervised term (what to predict), Sec. 3 "Objective". The RL
algorithm is CrossQ (Bhatt et al., ICLR 2024; APPLE-CrossQ, Sec. 4): no target networks,
BatchNorm in the critic, the current and next (state, action) pairs through the critic in
one joint pass. Update, per the released code's ``sac.py`` as the paper's Sec. 4 describes:

* critic step: ``feats = backbone(o_{0:T})``; ``r~_t = r_base_t - loss(pred(feats_t), y*)``
  recomputed from the replayed ``r_base`` and ``y*`` with the *current* predictor (never
  stored); ``a' ~ pi(.|feats_{t+1})``; target ``sg(r~_t + gamma (1 - done_t)(min_k Q_k(
  feats_{t+1}, a') - alpha log pi(a')))``; ``L_Q = sum_k mean_t (Q_k(feats_t, a_t) -
  target)^2``; updates the backbone and the Q heads only;
* every ``policy_interval`` critic steps, ``policy_steps`` actor steps: ``L_pi = a_coef
  mean(alpha log pi(a~_t) - min_k Q_k(sg(feats_t), a~_t)) + p_coef mean(loss(yhat_t, y*))``;
  updates the backbone, actor and predictor (Q heads frozen, BatchNorm on running stats);
  ``alpha`` minimises ``-log alpha (log pi + H_target)``, ``H_target = -dim(A) = -2``.

Baselines (Sec. 5): ``random`` (APPLE-RND: uniform random moves, the same backbone and
predictor trained by the supervised term alone) and ``scan`` (APPLE-GRID: a fixed serpentine
raster of waypoints, the sensor steered toward the next one, same predictor).

Readings at this scale (the digest's small-scale plan): a dense glimpse encoder (the paper
skips the ViT for glimpses under 101 px), 2 layers of width 64 with 4 heads (paper: 3 x 128,
8 heads), no dropout, Adam (not AdamW) at 1e-3 (backbone, actor, predictor) and 3e-4
(critic; the released ratio is 1/5 to 1/10), batch 32 episodes, a fixed number of updates
per rollout of ``n_envs`` episodes instead of the UTD warm-up schedule, updates from the
first full batch, BatchNorm momentum 0.1 (running statistics for the actor step, as CrossQ
evaluates the critic there), alpha initialised to 1.

How far the RL losses reach into the shared backbone (issue 33, item 3): in the paper both
``L_Q`` and the SAC term train it. Here the critic's Adam steps the backbone at
``critic_backbone_lr x lr_critic`` (0: the critic reads detached features) and the SAC
term's gradient into the backbone is multiplied by ``sac_backbone_grad`` inside the actor's
loss (0: detached). The critic's reach is a learning rate, not a gradient scale, because
the critic has an Adam of its own: Adam divides each step by the running RMS of the
gradients it sees, so a scaled critic gradient would give the same backbone step. The SAC
term shares its Adam with the prediction term, so there a gradient scale does weigh one
against the other. :func:`into_backbone` builds both routes and keeps each loss's gradient
at the features for the run's log (``grad_norm_*``).

Ledger scopes (TorchDevice): ``rollout`` (acting: the backbone on each prefix),
``train/critic`` and ``train/actor`` (forward, backward, Adam), ``eval``.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from models.apple.env import GlimpseTask

POLICIES = ("apple", "random", "scan")
LOG_STD = (-5.0, 2.0)   # the released actor's log-std range
H_TARGET = -2.0         # entropy target -dim(A), scale 1 (released config)


def sinusoid(steps: int, d: int) -> torch.Tensor:
    """The transformer's sinusoidal encoding of the step index (T, d)."""
    pos = torch.arange(steps, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(1e4) / d))
    pe = torch.zeros(steps, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    return pe


class CausalBlock(nn.Module):
    """Pre-LayerNorm transformer block with causal self-attention."""

    def __init__(self, d: int, heads: int, ffn: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, ffn), nn.ReLU(), nn.Linear(ffn, d))

    def forward(self, x, mask):                                      # x (B, T, d)
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)  # (B, h, T, T)
        att = torch.softmax(att + mask[:t, :t], -1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)                # (B, T, d)
        x = x + self.proj(y)
        return x + self.ff(self.ln2(x))


class Backbone(nn.Module):
    """Dense glimpse encoder, step embedding and causal transformer: o_{0:t} -> feature_t."""

    def __init__(self, glimpse: int, steps: int, d: int, layers: int, heads: int, ffn: int):
        super().__init__()
        self.g2 = glimpse * glimpse
        self.glimpse_enc = nn.Sequential(nn.Linear(self.g2, d), nn.ReLU())
        self.embed = nn.Linear(d + 3, d)
        self.blocks = nn.ModuleList(CausalBlock(d, heads, ffn) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.scale = math.sqrt(d)   # the released code scales the embedding by sqrt(width)
        self.register_buffer("pe", sinusoid(steps, d), persistent=False)
        self.register_buffer("mask", torch.triu(torch.full((steps, steps), -1e9), 1),
                             persistent=False)

    def forward(self, obs):                                          # (B, T, G^2 + 3)
        t = obs.shape[1]
        g = self.glimpse_enc(obs[..., :self.g2])
        x = self.embed(torch.cat([g, obs[..., self.g2:]], -1)) * self.scale + self.pe[:t]
        for block in self.blocks:
            x = block(x, self.mask)
        return self.ln(x)                                            # (B, T, d)


class Critic(nn.Module):
    """An ensemble of Q networks on [feature, action], BatchNorm after each hidden layer
    (CrossQ: no target networks)."""

    def __init__(self, d: int, hidden: int, n: int = 2, momentum: float = 0.1):
        super().__init__()
        self.qs = nn.ModuleList(nn.Sequential(
            nn.Linear(d + 2, hidden), nn.BatchNorm1d(hidden, momentum=momentum), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden, momentum=momentum), nn.ReLU(),
            nn.Linear(hidden, 1)) for _ in range(n))

    def forward(self, feat, action):                                 # (N, d), (N, 2)
        x = torch.cat([feat, action], -1)
        return torch.stack([q(x).squeeze(-1) for q in self.qs])      # (n, N)


class Agent(nn.Module):
    """The shared backbone and the actor, predictor and critic heads, plus log alpha."""

    def __init__(self, task: GlimpseTask, cfg):
        super().__init__()
        d = cfg.width
        self.backbone = Backbone(task.glimpse, task.steps, d, cfg.layers, cfg.heads, cfg.ffn)
        self.actor = nn.Linear(d, 4)                 # mean and log-std of 2 action dims
        self.predictor = nn.Linear(d, task.pred_dim)
        self.critic = Critic(d, cfg.critic_hidden)
        self.log_alpha = nn.Parameter(torch.zeros(()))   # alpha init 1.0 (released config)

    def policy(self, feat, eps):
        """Squashed-Gaussian action and its log-probability for features (..., d) and
        standard-normal noise (..., 2) given by the caller (so a test can fix it)."""
        mu, raw = self.actor(feat).chunk(2, -1)
        lo, hi = LOG_STD
        log_std = lo + 0.5 * (hi - lo) * (torch.tanh(raw) + 1)
        u = mu + log_std.exp() * eps
        a = torch.tanh(u)
        logp = (-0.5 * eps.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        return a, logp - torch.log(1 - a.pow(2) + 1e-6).sum(-1)

    def mean_action(self, feat):
        return torch.tanh(self.actor(feat).chunk(2, -1)[0])


# --- the unified objective -----------------------------------------------------------------
class _ScaleGrad(torch.autograd.Function):
    """Identity forward; the gradient times ``scale`` backward."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


def into_backbone(feats, scale: float) -> torch.Tensor:
    """``feats`` as one loss's input: the same values, the loss's gradient passed into the
    backbone times ``scale`` (0: detached, nothing reaches it). The returned tensor keeps
    its ``.grad`` after ``backward`` (the loss's gradient at the features before the scale),
    so the run can log how hard each loss pulls on the shared backbone."""
    if scale == 0.0:
        return feats.detach().requires_grad_(True)
    out = _ScaleGrad.apply(feats, float(scale))
    out.retain_grad()
    return out


def grad_norm(branch: torch.Tensor | None) -> float:
    """The norm of a branch's gradient at the features after ``backward`` (0: none)."""
    return 0.0 if branch is None or branch.grad is None else float(branch.grad.norm())


def recomputed_reward(agent: Agent, task: GlimpseTask, batch: dict, eps_next, feats=None):
    """The reward ``r~`` (B, T) of a replay batch recomputed with the current predictor, and
    the next (feature, action, log pi) triples the target needs, next actions from noise
    ``eps_next`` (B, T - 1, 2); all without gradient."""
    with torch.no_grad():
        feats = agent.backbone(batch["obs"]) if feats is None else feats.detach()
        r = batch["r_base"] - task.loss(agent.predictor(feats), batch["y"][:, None]
                                        .expand(-1, task.steps, *batch["y"].shape[1:]))
        a_next, logp_next = agent.policy(feats[:, 1:], eps_next)    # (B, T - 1, 2)
    return r, feats[:, 1:], a_next, logp_next


def critic_loss(agent: Agent, task: GlimpseTask, batch: dict, eps_next, gamma: float,
                to_backbone: bool = True):
    """``L_Q`` of one batch, the targets and the critic's branch of the features (its
    ``.grad`` after ``backward``: the critic's gradient at the backbone's output). The
    gradient reaches the backbone and the Q heads; only the Q heads with
    ``to_backbone=False`` (the run passes ``critic_backbone_lr > 0``)."""
    feats = into_backbone(agent.backbone(batch["obs"]), 1.0 if to_backbone else 0.0)
    b, t, d = feats.shape
    r, f_next, a_next, logp_next = recomputed_reward(agent, task, batch, eps_next, feats)
    n_cur = b * t
    q = agent.critic(torch.cat([feats.reshape(n_cur, d), f_next.reshape(-1, d)]),
                     torch.cat([batch["act"].reshape(n_cur, 2), a_next.reshape(-1, 2)]))
    q_cur, q_next = q[:, :n_cur], q[:, n_cur:]                       # joint BN pass
    with torch.no_grad():
        alpha = agent.log_alpha.exp()
        v = (q_next.min(0).values - alpha * logp_next.reshape(-1)).reshape(b, t - 1)
        v = torch.cat([v, torch.zeros(b, 1, device=v.device)], 1)    # done after step T-1
        target = r + gamma * v                                       # (B, T)
    return (q_cur - target.reshape(1, -1)).pow(2).mean(1).sum(), target, feats


def actor_loss(agent: Agent, task: GlimpseTask, batch: dict, eps, a_coef: float,
               p_coef: float, sac_backbone_grad: float = 1.0):
    """``L_pi`` (gradient into backbone, actor, predictor; Q frozen), ``log pi`` and the two
    terms' branches of the features ``{"predictor", "sac"}`` (their ``.grad`` after
    ``backward``: each term's gradient at the backbone's output). The SAC term's gradient
    into the backbone is multiplied by ``sac_backbone_grad`` (0: it trains the actor head
    only)."""
    feats = agent.backbone(batch["obs"])                             # (B, T, d)
    y = batch["y"][:, None].expand(-1, task.steps, *batch["y"].shape[1:])
    f_pred = into_backbone(feats, 1.0)
    loss = p_coef * task.loss(agent.predictor(f_pred), y).mean()
    logp, f_sac = None, None
    if a_coef:
        f_sac = into_backbone(feats, sac_backbone_grad)
        a, logp = agent.policy(f_sac, eps)
        agent.critic.eval()
        agent.critic.requires_grad_(False)
        q = agent.critic(feats.detach().reshape(-1, feats.shape[-1]), a.reshape(-1, 2))
        agent.critic.requires_grad_(True)
        agent.critic.train()
        alpha = agent.log_alpha.exp().detach()
        loss = loss + a_coef * (alpha * logp.reshape(-1) - q.min(0).values).mean()
    return loss, logp, {"predictor": f_pred, "sac": f_sac}


# --- acting ---------------------------------------------------------------------------------
def scan_waypoints(steps: int, extent: float = 0.75) -> torch.Tensor:
    """A serpentine raster of ``steps`` points over [-extent, extent]^2 (T, 2)."""
    side = math.ceil(math.sqrt(steps))
    ticks = torch.linspace(-extent, extent, side)
    pts = [(ticks[c if r % 2 == 0 else side - 1 - c], ticks[r]) for r in range(side)
           for c in range(side)]
    return torch.tensor(pts[:steps])


def act(agent, task: GlimpseTask, policy: str, obs_prefix, ep, gen, deterministic: bool):
    """The move (B, 2) at the current step for ``policy``."""
    b = len(obs_prefix)
    if policy == "random":
        # the CPU generator's draws, moved (it cannot draw on CUDA; env.reset)
        return torch.rand(b, 2, generator=gen).to(obs_prefix.device) * 2 - 1
    if policy == "scan":
        wp = scan_waypoints(task.steps).to(obs_prefix.device)[min(ep.t + 1, task.steps - 1)]
        return ((wp - ep.pos) / task.max_step).clamp(-1.0, 1.0)
    feat = agent.backbone(obs_prefix)[:, -1]                         # (B, d)
    if deterministic:
        return agent.mean_action(feat)
    eps = torch.randn(b, 2, generator=gen).to(feat.device)
    return agent.policy(feat, eps)[0]


@torch.no_grad()
def rollout(agent, task: GlimpseTask, policy: str, n: int, gen, deterministic=False,
            index=None):
    """``n`` episodes at once; obs (n, T, D), moves (n, T, 2), base rewards (n, T), y*,
    sensor positions (n, T, 2)."""
    ep, o = task.reset(n, gen, index)
    obs = torch.zeros(n, task.steps, task.obs_dim, device=o.device)
    acts = torch.zeros(n, task.steps, 2, device=o.device)
    r_base = torch.zeros(n, task.steps, device=o.device)
    pos = torch.zeros(n, task.steps, 2, device=o.device)
    y = task.target(ep)
    for t in range(task.steps):
        obs[:, t], pos[:, t] = o, ep.pos
        acts[:, t] = act(agent, task, policy, obs[:, :t + 1], ep, gen, deterministic)
        r_base[:, t] = task.move(ep, acts[:, t])
        o = task.observe(ep)
    return {"obs": obs, "act": acts, "r_base": r_base, "y": y, "pos": pos, "index": ep.index,
            "offset": ep.offset}


class Replay:
    """Whole episodes in a ring buffer; stores ``r_base`` and ``y*``, never ``r~``."""

    def __init__(self, capacity: int):
        self.capacity, self.size, self.head, self.data = capacity, 0, 0, None

    def add(self, eps: dict) -> None:
        keys = ("obs", "act", "r_base", "y")
        if self.data is None:
            self.data = {k: torch.zeros(self.capacity, *eps[k].shape[1:], dtype=eps[k].dtype,
                                        device=eps[k].device) for k in keys}
        n = len(eps["obs"])
        idx = (self.head + torch.arange(n)) % self.capacity
        for k in keys:
            self.data[k][idx] = eps[k]
        self.head = (self.head + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, b: int, gen) -> dict:
        idx = torch.randint(self.size, (b,), generator=gen)
        return {k: v[idx] for k, v in self.data.items()}
