"""The glimpse active-perception tasks of APPLE (arXiv 2505.06182, Sec. 5: glimpse image
tasks in the ``ap_gym`` format), batched in torch, with a gymnasium ``Env`` over one episode.

A scene is one image placed on a ``canvas`` x ``canvas`` grid at an offset (classification:
the image fills the canvas, offset 0; localisation: a smaller object at a random offset).
A ``glimpse`` x ``glimpse`` sensor sits at position ``p`` in [-1, 1]^2 (pixel centre
``round((p + 1) / 2 * (canvas - 1))``; outside the canvas reads 0). Each step the agent
emits a move ``a`` in [-1, 1]^2, projected into the unit disc and scaled by ``max_step``
(ap_gym's glimpse envs: disc x 0.2), and a prediction of the hidden target:

* ``classify``: class logits; loss = cross-entropy (nats);
* ``locate``: the object's centre, standardised (each coordinate uniform on [-1, 1] over
  the offsets, divided by its std 1/sqrt(3)); loss = squared error summed over x, y.

Reward (Sec. 3, "Objective"): ``r_t = -1e-3 ||a_t|| - loss(y*, yhat_t)``; the prediction never
changes the dynamics. The observation of step t is the glimpse, the position and the time
``2 t / (T - 1) - 1``, flattened to ``G^2 + 3`` numbers. An episode has ``steps`` observations
``o_0 .. o_{T-1}``; after the T-th action it ends (``terminated``).

:class:`GlimpseTask` is the vectorised core the learner uses (B episodes at once, no Python
loop over samples); :class:`GlimpseEnv` is the gymnasium API over it for one episode
(``gymnasium.make("neuroedge/APPLEGlimpse-v0", task=...)``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import gymnasium
import numpy as np
import torch
from torch.nn import functional as F  # noqa: N812

from sim.errors import ModelError

TASKS = ("classify", "locate")
BASE_REWARD_SCALE = 1e-3   # ap_gym's control reward -1e-3 ||a||
LOCATE_STD = 1.0 / math.sqrt(3.0)   # std of a coordinate uniform on [-1, 1]


@dataclass
class Episodes:
    """The hidden state of B episodes: which image, where it sits, where the sensor is."""

    index: torch.Tensor    # (B,) image index
    offset: torch.Tensor   # (B, 2) object's top-left (row, col) on the canvas, pixels
    pos: torch.Tensor      # (B, 2) sensor position (x, y) in [-1, 1]
    t: int = 0             # step of the next observation


class GlimpseTask:
    """B glimpse episodes at once over ``images`` (N, h, w) in [0, 1].

    Parameters
    ----------
    images : tensor (N, h, w), float32
    labels : tensor (N,), int64 (``classify``; ignored by ``locate``)
    task : ``classify`` or ``locate``
    canvas : canvas side, pixels (``classify``: must equal h = w)
    glimpse : sensor side G, pixels (odd)
    steps : observations per episode T
    max_step : largest move per step, in position units ([-1, 1] spans the canvas)
    n_classes : classes of ``classify``
    """

    def __init__(self, images, labels, task: str, canvas: int, glimpse: int, steps: int,
                 max_step: float, n_classes: int = 10):
        if task not in TASKS:
            raise ModelError(f"GlimpseTask: task = {task!r}; must be one of {', '.join(TASKS)}")
        if images.ndim != 3:
            raise ModelError(f"GlimpseTask: images have shape {tuple(images.shape)}; expected "
                             "(N, h, w)")
        h, w = int(images.shape[1]), int(images.shape[2])
        if task == "classify" and not canvas == h == w:
            raise ModelError(f"GlimpseTask: classify needs canvas = image side; got canvas "
                             f"{canvas}, images {h}x{w}")
        if task == "locate" and (h > canvas or w > canvas):
            raise ModelError(f"GlimpseTask: locate object {h}x{w} does not fit canvas {canvas}")
        if glimpse < 1 or glimpse % 2 == 0:
            raise ModelError(f"GlimpseTask: glimpse = {glimpse}; must be an odd side >= 1")
        if steps < 2:
            raise ModelError(f"GlimpseTask: steps = {steps}; an episode needs >= 2 steps")
        if not max_step > 0:
            raise ModelError(f"GlimpseTask: max_step = {max_step}; must be > 0")
        self.images, self.labels, self.task = images, labels, task
        self.canvas, self.glimpse, self.steps, self.max_step = canvas, glimpse, steps, max_step
        self.obj = (h, w)
        self.n_classes = n_classes
        self.pred_dim = n_classes if task == "classify" else 2
        self.obs_dim = glimpse * glimpse + 3
        r = torch.arange(glimpse, device=images.device) - glimpse // 2
        self._dy, self._dx = torch.meshgrid(r, r, indexing="ij")   # (G, G) sensor offsets

    # --- episodes ----------------------------------------------------------------------------
    def reset(self, n: int, gen: torch.Generator, index=None) -> tuple[Episodes, torch.Tensor]:
        """``n`` new episodes (images drawn uniformly unless ``index`` is given); their o_0."""
        dev = self.images.device
        # drawn on the generator's device (the CPU) and moved: a CPU generator cannot draw
        # on CUDA, and the draws stay the same on either device
        if index is None:
            index = torch.randint(len(self.images), (n,), generator=gen).to(dev)
        if self.task == "locate":
            span = torch.tensor([self.canvas - self.obj[0], self.canvas - self.obj[1]],
                                device=dev)
            offset = torch.floor(torch.rand(n, 2, generator=gen).to(dev) * (span + 1))
        else:
            offset = torch.zeros(n, 2, device=dev)
        pos = torch.rand(n, 2, generator=gen).to(dev) * 2 - 1
        ep = Episodes(index, offset.long(), pos, 0)
        return ep, self.observe(ep)

    def move(self, ep: Episodes, action: torch.Tensor) -> torch.Tensor:
        """Apply moves (B, 2) in [-1, 1]^2 (disc projection x max_step); the base reward
        (B,) and ``ep`` advanced in place."""
        norm = action.norm(dim=-1, keepdim=True)
        step = action / norm.clamp(min=1.0) * self.max_step   # into the unit disc
        ep.pos = (ep.pos + step).clamp(-1.0, 1.0)
        ep.t += 1
        return -BASE_REWARD_SCALE * norm.squeeze(-1)

    def observe(self, ep: Episodes) -> torch.Tensor:
        """The observation (B, G^2 + 3) of the current step: glimpse, position, time."""
        centre = torch.round((ep.pos + 1) / 2 * (self.canvas - 1)).long()   # (B, 2) x, y
        rows = centre[:, 1, None, None] + self._dy - ep.offset[:, 0, None, None]  # (B, G, G)
        cols = centre[:, 0, None, None] + self._dx - ep.offset[:, 1, None, None]
        h, w = self.obj
        inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
        flat = rows.clamp(0, h - 1) * w + cols.clamp(0, w - 1)            # (B, G, G)
        img = self.images.reshape(len(self.images), -1)[ep.index]          # (B, h * w)
        g = torch.gather(img, 1, flat.reshape(len(flat), -1)) * inside.reshape(len(flat), -1)
        time = torch.full((len(g), 1), 2.0 * ep.t / (self.steps - 1) - 1.0, device=g.device)
        return torch.cat([g, ep.pos, time], 1)                             # (B, G^2 + 3)

    def target(self, ep: Episodes) -> torch.Tensor:
        """y*: class (B,) int64, or the standardised object centre (B, 2) as (x, y)."""
        if self.task == "classify":
            return self.labels[ep.index]
        h, w = self.obj
        centre = ep.offset.flip(-1).float() + torch.tensor([(w - 1) / 2, (h - 1) / 2],
                                                            device=ep.offset.device)
        return (centre / (self.canvas - 1) * 2 - 1) / LOCATE_STD

    # --- the differentiable prediction loss and its scores -------------------------------------
    def loss(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Per-sample loss of predictions (..., P) against targets (...,) or (..., 2)."""
        if self.task == "classify":
            lead = pred.shape[:-1]
            return F.cross_entropy(pred.reshape(-1, self.pred_dim), target.reshape(-1),
                                   reduction="none").reshape(lead)
        return (pred - target).pow(2).sum(-1)

    def error_px(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``locate``: Euclidean distance between predicted and true centre, canvas pixels."""
        return ((pred - target) * LOCATE_STD * (self.canvas - 1) / 2).norm(dim=-1)

    def correct(self, pred: torch.Tensor, target: torch.Tensor, hit_px: float) -> torch.Tensor:
        """1.0 where the prediction is right: the argmax class, or (``locate``) a centre
        within ``hit_px`` pixels."""
        if self.task == "classify":
            return (pred.argmax(-1) == target).float()
        return (self.error_px(pred, target) <= hit_px).float()


class GlimpseEnv(gymnasium.Env):
    """One glimpse episode in the ``ap_gym`` action format: ``{"action", "prediction"}``.

    ``info`` carries ``target`` (y*) and ``base_reward`` (the control part), as ap_gym's does,
    so a learner can recompute the prediction loss itself.
    """

    metadata = {"render_modes": []}

    def __init__(self, task: GlimpseTask):
        self.core = task
        g = task.glimpse
        self.observation_space = gymnasium.spaces.Dict({
            "glimpse": gymnasium.spaces.Box(0.0, 1.0, (g, g), np.float32),
            "position": gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32),
            "time": gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)})
        self.action_space = gymnasium.spaces.Dict({
            "action": gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32),
            "prediction": gymnasium.spaces.Box(-np.inf, np.inf, (task.pred_dim,), np.float32)})
        self._ep: Episodes | None = None
        self._gen = torch.Generator()

    def _obs(self, o: torch.Tensor) -> dict:
        g = self.core.glimpse
        o = o[0].numpy().astype(np.float32)
        return {"glimpse": o[:g * g].reshape(g, g), "position": o[g * g:g * g + 2],
                "time": o[-1:]}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self._gen.manual_seed(int(seed))
        self._ep, o = self.core.reset(1, self._gen)
        return self._obs(o), {"target": self.core.target(self._ep)[0].numpy()}

    def step(self, action):
        if self._ep is None:
            raise ModelError("GlimpseEnv.step: call reset() first")
        a = torch.as_tensor(np.asarray(action["action"], np.float32)).reshape(1, 2)
        pred = torch.as_tensor(np.asarray(action["prediction"], np.float32)).reshape(1, -1)
        y = self.core.target(self._ep)
        base = float(self.core.move(self._ep, a)[0])
        loss = float(self.core.loss(pred, y)[0])
        done = self._ep.t >= self.core.steps
        obs = self._obs(self.core.observe(self._ep))
        return obs, base - loss, done, False, {"target": y[0].numpy(), "base_reward": base,
                                               "prediction_loss": loss}


ENV_ID = "neuroedge/APPLEGlimpse-v0"
if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point=GlimpseEnv, max_episode_steps=None)
