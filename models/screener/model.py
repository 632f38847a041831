"""Screener's three parts, small: dense-SSL descriptor f, masking-invariant condition g,
conditional density q(y|c) per voxel (Goncharov et al., ICLR 2026, Sec. 3-4).

- ``UNet3d``: 2-level 3D UNet, full-resolution output (the paper's f and g are 3D UNets
  with full-res output, d_desc = 32; here d = 16).
- ``vicreg_loss`` on voxel pairs: two overlapping crops of one volume, jittered; positives
  are the same volume voxel seen in both (Sec. 3.1 DenseVICReg; VICReg 25/25/1, the
  digest's default since the paper does not state them).
- condition g: the same net and loss, input (masked image, mask) with random block masking
  per view (Sec. 3.2), so g must agree across views whose masks differ: it keeps context.
- ``GaussianDensity``: mu(c), diagonal log-variance(c) from 3x3x3 convs over the pooled
  condition map (Sec. 3.3); ``FlowDensity``: per-voxel conditional affine couplings
  (CFLOW-style, c enters every coupling). Score = -log q(y|c); trained with f, g frozen on
  2x2x2-pooled features with sigma = 0.1 noise on y and c (Sec. 3.3, App. D).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from sim.errors import ModelError


class UNet3d(nn.Module):
    """Two halvings, ``w`` -> ``2w`` -> ``4w`` channels, skip joins, ``d`` output channels."""

    def __init__(self, cin: int = 1, d: int = 16, w: int = 8):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv3d(i, o, 3, padding=1), nn.GroupNorm(1, o), nn.GELU(),
                                 nn.Conv3d(o, o, 3, padding=1), nn.GELU())
        self.e0, self.e1, self.e2 = block(cin, w), block(w, 2 * w), block(2 * w, 4 * w)
        self.d1, self.d0 = block(6 * w, 2 * w), block(3 * w, w)
        self.out = nn.Conv3d(w, d, 1)

    def forward(self, x):
        a = self.e0(x)
        b = self.e1(F.avg_pool3d(a, 2))
        c = self.e2(F.avg_pool3d(b, 2))
        b = self.d1(torch.cat([F.interpolate(c, scale_factor=2.0), b], 1))
        a = self.d0(torch.cat([F.interpolate(b, scale_factor=2.0), a], 1))
        return self.out(a)


def expander(d: int, width: int) -> nn.Sequential:
    """VICReg expander d -> width -> width (BN-MLP)."""
    return nn.Sequential(nn.Linear(d, width), nn.BatchNorm1d(width), nn.ReLU(),
                         nn.Linear(width, width))


def vicreg_loss(z1: torch.Tensor, z2: torch.Tensor, a=25.0, b=25.0, g=1.0) -> torch.Tensor:
    """VICReg (Bardes et al. 2022): a * MSE invariance + b * hinge on per-dim std (target 1)
    + g * off-diagonal covariance squared / dim, summed over both branches."""
    inv = F.mse_loss(z1, z2)
    var = cov = 0.0
    for z in (z1, z2):
        z = z - z.mean(0)
        std = torch.sqrt(z.var(0) + 1e-4)
        var = var + F.relu(1 - std).mean()
        c = (z.T @ z) / (len(z) - 1)
        off = c - torch.diag(torch.diag(c))
        cov = cov + (off ** 2).sum() / z.shape[1]
    return a * inv + b * var + g * cov


def block_mask(gen: torch.Generator, n: int, shape, ratio=(0.3, 0.5), size=(2, 5)):
    """(n, 1, *shape) float masks of random cubes (side ``size``) until ``ratio`` of voxels
    are covered (the digest's 4-8 voxel blocks, scaled to the smaller crops here)."""
    out = torch.zeros(n, 1, *shape)
    for i in range(n):
        target = float(torch.empty(1).uniform_(*ratio, generator=gen))
        while out[i].mean() < target:
            s = int(torch.randint(size[0], size[1] + 1, (1,), generator=gen))
            c = [int(torch.randint(0, max(1, L - s + 1), (1,), generator=gen)) for L in shape]
            out[i, 0, c[0]:c[0] + s, c[1]:c[1] + s, c[2]:c[2] + s] = 1.0
    return out


def crop_pairs(gen, vols: torch.Tensor, crop, max_shift: int):
    """Two crops per volume whose origins differ by at most ``max_shift`` per axis; returns
    (x1, x2, o1, o2) with o the crop origins (so voxel p of the volume sits at p - o)."""
    n, shape = len(vols), vols.shape[-3:]
    x1, x2, o1s, o2s = [], [], [], []
    for i in range(n):
        o1 = [int(torch.randint(0, L - c + 1, (1,), generator=gen))
              for L, c in zip(shape, crop, strict=True)]
        o2 = [min(max(0, a + int(torch.randint(-max_shift, max_shift + 1, (1,), generator=gen))),
                  L - c) for a, L, c in zip(o1, shape, crop, strict=True)]
        sl = [tuple(slice(a, a + c) for a, c in zip(o, crop, strict=True)) for o in (o1, o2)]
        x1.append(vols[i][(slice(None), *sl[0])])
        x2.append(vols[i][(slice(None), *sl[1])])
        o1s.append(o1)
        o2s.append(o2)
    return torch.stack(x1), torch.stack(x2), torch.tensor(o1s), torch.tensor(o2s)


def jitter(gen, x: torch.Tensor) -> torch.Tensor:
    """Brightness / contrast / noise jitter per crop (the paper's colour jitter)."""
    n = len(x)
    c = torch.empty(n, 1, 1, 1, 1).uniform_(0.8, 1.2, generator=gen)
    b = torch.empty(n, 1, 1, 1, 1).uniform_(-0.1, 0.1, generator=gen)
    return x * c + b + 0.03 * torch.randn(x.shape, generator=gen)


def overlap_pairs(gen, o1, o2, crop, n_pairs: int):
    """``n_pairs`` voxels per crop pair inside both crops: (index in batch, p1, p2)."""
    idx, p1s, p2s = [], [], []
    crop = torch.tensor(crop)
    for i in range(len(o1)):
        lo, hi = torch.maximum(o1[i], o2[i]), torch.minimum(o1[i], o2[i]) + crop
        p = lo + (torch.rand(n_pairs, 3, generator=gen) * (hi - lo)).long()
        idx.append(torch.full((n_pairs,), i))
        p1s.append(p - o1[i])
        p2s.append(p - o2[i])
    return torch.cat(idx), torch.cat(p1s), torch.cat(p2s)


def gather(y: torch.Tensor, idx, p) -> torch.Tensor:
    """Rows y[idx, :, p] -> (len(idx), d)."""
    return y[idx, :, p[:, 0], p[:, 1], p[:, 2]]


def masked_input(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """Condition-net input: the image with masked voxels zeroed, and the mask channel."""
    return torch.cat([x * (1 - m), m], 1)


def counted_steps(dev, scope: str, n: int, counted: int, step, samples_per_step: int,
                  on_step=None):
    """Run ``step()`` ``n`` times; the first ``counted`` inside ``dev.count(scope)`` (every
    step costs the same ops, so a few counted steps price the loop: the runner scales
    energy per sample), the rest uncounted (counting costs ~20x the step's own time).
    ``on_step(loss)`` after each step (progress)."""
    if on_step is not None:
        inner = step

        def step():
            loss = inner()
            on_step(loss)
            return loss
    k = min(counted, n)
    losses = []
    if k:
        with dev.count(scope, samples=k * samples_per_step):
            losses += [step() for _ in range(k)]
    return losses + [step() for _ in range(n - k)]


def train_ssl(net: nn.Module, head: nn.Module, vols: torch.Tensor, cfg, dev, masked: bool,
              seed: int, scope: str = "train/ssl", on_step=None) -> list[float]:
    """DenseVICReg on voxel pairs of overlapping crops (``masked``: block masking too); the
    first ``cfg.count_steps`` steps are counted under ``scope``."""
    gen = torch.Generator().manual_seed(seed)
    params = list(net.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=1e-6)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, cfg.lr, total_steps=cfg.ssl_steps,
                                                pct_start=0.1)
    crop = tuple(cfg.crop)

    def step():
        pick = torch.randint(0, len(vols), (cfg.batch,), generator=gen)
        x1, x2, o1, o2 = crop_pairs(gen, vols[pick].cpu(), crop, cfg.max_shift)
        x1, x2 = jitter(gen, x1), jitter(gen, x2)
        if masked:
            x1 = masked_input(x1, block_mask(gen, len(x1), crop))
            x2 = masked_input(x2, block_mask(gen, len(x2), crop))
        y1, y2 = net(x1.to(dev.torch_device)), net(x2.to(dev.torch_device))
        i, p1, p2 = overlap_pairs(gen, o1, o2, crop, cfg.pairs)
        loss = vicreg_loss(head(gather(y1, i, p1)), head(gather(y2, i, p2)))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        return float(loss.detach())
    return counted_steps(dev, scope, cfg.ssl_steps, cfg.count_steps, step, 2 * cfg.batch,
                         on_step)


# --- conditions other than g (the paper's Tab. 3 rows) -------------------------------------
def sincos(shape, n_freq: int = 2) -> torch.Tensor:
    """(1, 6 n_freq, D, H, W) sin-cos codes of the voxel's position in the volume."""
    axes = torch.meshgrid(*[torch.linspace(0, 1, s) for s in shape], indexing="ij")
    feats = [f(2 ** k * math.pi * a) for a in axes for k in range(n_freq)
             for f in (torch.sin, torch.cos)]
    return torch.stack(feats)[None]


# --- densities ------------------------------------------------------------------------------
LOG2PI = math.log(2 * math.pi)


class GaussianDensity(nn.Module):
    """q(y|c) = N(mu(c), diag exp(logvar(c))), mu/logvar from two 3x3x3 convs over c.
    ``dc = 0``: the marginal Gaussian (learned constant mu, logvar)."""

    def __init__(self, d: int, dc: int, hidden: int = 32, min_logvar: float = -6.0):
        super().__init__()
        self.d, self.dc, self.min_logvar = d, dc, min_logvar
        if dc:
            self.net = nn.Sequential(nn.Conv3d(dc, hidden, 3, padding=1), nn.GELU(),
                                     nn.Conv3d(hidden, 2 * d, 3, padding=1))
        else:
            self.const = nn.Parameter(torch.zeros(1, 2 * d, 1, 1, 1))

    def nll(self, y: torch.Tensor, c: torch.Tensor | None) -> torch.Tensor:
        """-log q(y|c) per voxel, (N, D, H, W), nats."""
        out = self.net(c) if self.dc else self.const.expand(len(y), -1, *y.shape[2:])
        mu, logvar = out[:, :self.d], out[:, self.d:]
        logvar = self.min_logvar + F.softplus(logvar - self.min_logvar)   # a smooth floor
        return 0.5 * (((y - mu) ** 2) * torch.exp(-logvar) + logvar + LOG2PI).sum(1)


class Coupling(nn.Module):
    """A fixed random rotation of the channels (Glow's invertible 1x1 conv, here frozen
    orthogonal: log|det| = 0), then an affine coupling on channel halves:
    y_b <- y_b * exp(s) + t, (s, t) = net(y_a, c), 1x1x1 convs (per voxel); s through tanh
    for stability. ``rotate=False``: the halves as they come (a plain coupling)."""

    def __init__(self, d: int, dc: int, hidden: int, rotate: bool = True, seed: int = 0):
        super().__init__()
        self.h = d // 2
        q = torch.linalg.qr(torch.randn(d, d, generator=torch.Generator().manual_seed(seed)))[0]
        self.register_buffer("rot", q if rotate else torch.eye(d))
        self.net = nn.Sequential(nn.Conv3d(self.h + dc, hidden, 1), nn.GELU(),
                                 nn.Conv3d(hidden, 2 * (d - self.h), 1))
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, y, c):
        y = torch.einsum("ij,nj...->ni...", self.rot, y)
        a, b = y[:, :self.h], y[:, self.h:]
        st = self.net(torch.cat([a, c], 1) if c is not None else a)
        s, t = torch.tanh(st[:, :b.shape[1]]), st[:, b.shape[1]:]
        return torch.cat([a, b * torch.exp(s) + t], 1), s.sum(1)


class FlowDensity(nn.Module):
    """Per-voxel conditional flow: actnorm from c (scale/shift), then ``k`` (rotation,
    coupling) steps, each coupling seeing c through a shared 3x3x3 context conv;
    -log q = 0.5 |z|^2 + d/2 log 2pi - log|det|."""

    def __init__(self, d: int, dc: int, k: int = 8, hidden: int = 64):
        super().__init__()
        self.d, self.dc = d, dc
        ctx = hidden // 2 if dc else 0
        self.ctx = nn.Conv3d(dc, ctx, 3, padding=1) if dc else None
        self.act = nn.Conv3d(ctx, 2 * d, 1) if dc else None
        self.loc = nn.Parameter(torch.zeros(1, d, 1, 1, 1))
        self.logs = nn.Parameter(torch.zeros(1, d, 1, 1, 1))
        self.layers = nn.ModuleList(Coupling(d, ctx, hidden, seed=i) for i in range(k))

    def nll(self, y, c):
        h = F.gelu(self.ctx(c)) if self.dc else None
        logs, loc = self.logs, self.loc
        if self.dc:
            st = self.act(h)
            logs, loc = logs + torch.tanh(st[:, :self.d]), loc + st[:, self.d:]
        z = (y - loc) * torch.exp(-logs)
        logdet = (-logs).expand_as(z).sum(1)
        for layer in self.layers:
            z, ld = layer(z, h)
            logdet = logdet + ld
        return 0.5 * (z ** 2).sum(1) + 0.5 * self.d * LOG2PI - logdet


def make_density(kind: str, d: int, dc: int) -> nn.Module:
    return GaussianDensity(d, dc) if kind == "gaussian" else FlowDensity(d, dc)


def train_density(dens: nn.Module, ys: torch.Tensor, cs: torch.Tensor | None, cfg, seed: int,
                  dev, scope: str = "train/density", counted: int | None = None,
                  on_step=None) -> list[float]:
    """Mean per-voxel -log q on pooled (f, g frozen) features; noise sigma on y and c; the
    first ``counted`` steps (default ``cfg.count_steps``) are counted under ``scope``."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(dens.parameters(), lr=cfg.density_lr, weight_decay=1e-6)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, cfg.density_lr,
                                                total_steps=cfg.density_steps, pct_start=0.1)

    def step():
        pick = torch.randint(0, len(ys), (cfg.batch,), generator=gen)
        y = ys[pick] + cfg.noise * torch.randn(ys[pick].shape, generator=gen).to(ys.device)
        c = None
        if cs is not None:
            c = cs[pick] + cfg.noise * torch.randn(cs[pick].shape, generator=gen).to(cs.device)
        loss = dens.nll(y, c).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(dens.parameters(), 1.0)
        opt.step()
        sched.step()
        return float(loss.detach())
    k = cfg.count_steps if counted is None else counted
    return counted_steps(dev, scope, cfg.density_steps, k, step, cfg.batch, on_step)


@torch.no_grad()
def features(net: nn.Module, x: torch.Tensor, chunk: int = 8) -> torch.Tensor:
    """Full-volume features (the nets are fully convolutional; no sliding window needed at
    this size), in chunks of volumes."""
    return torch.cat([net(x[i:i + chunk]) for i in range(0, len(x), chunk)])


def pool(t: torch.Tensor) -> torch.Tensor:
    return F.avg_pool3d(t, 2)


@torch.no_grad()
def score_maps(dens: nn.Module, y: torch.Tensor, c: torch.Tensor | None) -> torch.Tensor:
    """-log q on the pooled grid, upsampled (trilinear) to voxels: (N, D, H, W)."""
    s = dens.nll(y, c)[:, None]
    return F.interpolate(s, scale_factor=2.0, mode="trilinear", align_corners=False)[:, 0]


def auroc(scores: np.ndarray, lesion: np.ndarray, body: np.ndarray,
          max_fpr: float | None = None) -> float:
    """Voxel AUROC over the body only: lesion voxels against the non-lesion voxels inside
    ``body`` (the paper crops CT to voxels > -500 HU, Sec. 5, so air outside the patient is
    never a negative; ``data.Volumes.body``). ``max_fpr``: sklearn's McClish-standardised
    partial AUC, not the paper's raw area up to FPR 0.3."""
    from sklearn.metrics import roc_auc_score
    body = np.asarray(body, bool)
    if body.shape != lesion.shape or (lesion & ~body).any():
        raise ModelError(f"auroc: body mask {body.shape} must match the lesion mask "
                         f"{lesion.shape} and hold every lesion voxel")
    return float(roc_auc_score(lesion[body], scores[body], max_fpr=max_fpr))
