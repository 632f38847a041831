"""PPL's parts at small scale (Wang, Han & Zhang, ICLR 2026, arXiv:2410.03858, Sec. 3).

* the prior ``V = (T, W)``: ``N`` template keypoints and symmetric link weights
  ``W = sym(triu(softplus(sklr * S)))`` (Sec. 3.1);
* the pose regressor: per template keypoint an attention map, an attention-pooled feature,
  and an affine ``Theta_i`` with ``P'_i = Theta_i [P_i; 1]`` (Sec. 3.2);
* the renderer: ``S = max_ij w_ij exp(-dist(u, P'_i P'_j)^2 / thick)`` (Sec. 3.2);
* the reconstruction UNet from ``[I_ref ⊕ S]``, ``I_ref`` a block-masked image times a
  learnable scalar (Sec. 3.2);
* the hierarchical memory: MLP-Mixer encoder to ``m`` bank vectors, per-bank vector
  quantisation with EMA codebooks, Mixer decoder back to ``N`` points; the template is
  distilled as the decoding of the bank means (Sec. 3.3);
* iterative inference: reconstruct from the memory's pose and regress again (Sec. 3.4).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from models.shared.training import seeded
from sim import seeds


def link_pairs(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices (i, j), i < j, of the ``n (n - 1) / 2`` links."""
    i, j = torch.triu_indices(n, n, 1)
    return i, j


class Prior(nn.Module):
    """Link weights over the template (the template itself lives in the memory, or frozen)."""

    def __init__(self, n: int, sklr: float = 512.0, seed: int = 0, start: float = -4.0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.sklr = sklr
        # (N(0,1) + start) / sklr: W starts at softplus(start + noise); the release's start
        # is -4 (W ~ 0.02)
        self.s = nn.Parameter((torch.randn(n, n, generator=g) + start) / sklr)

    def weights(self) -> torch.Tensor:
        w = torch.triu(F.softplus(self.sklr * self.s), 1)
        return w + w.T


def _link_logits(ux, uy, ax, ay, abx, aby, logw, thick):
    """``log w - d^2 / thick`` of each pixel (ux, uy) to segments a -> a + ab, broadcast."""
    dx, dy = ux - ax, uy - ay
    t = ((dx * abx + dy * aby) / (abx * abx + aby * aby + 1e-8)).clamp(0, 1)
    ex, ey = dx - t * abx, dy - t * aby
    return logw - (ex * ex + ey * ey) / thick


def render(points: torch.Tensor, w: torch.Tensor, size: int, thick: float) -> torch.Tensor:
    """Link heatmap (B, 1, size, size): the max over links of ``w_ij exp(-d^2 / thick)``,
    ``d`` the distance of each pixel centre (in [-1, 1] units) to segment ``P_i P_j``.

    ``max_l w_l exp(-d_l^2 / thick) = exp(max_l (log w_l - d_l^2 / thick))``. The winning
    link of each pixel is found without autograd over all (B, links, pixels); the value is
    then recomputed with autograd for the winner only, (B, pixels): the same value and the
    same gradient as a max (which reaches only the winner), at 1/links of the backward
    cost that dominated a training step."""
    b, n, _ = points.shape
    i, j = link_pairs(n)
    c = (torch.arange(size, device=points.device, dtype=points.dtype) + 0.5) / size * 2 - 1
    ux, uy = c.repeat(size).view(1, -1), c.repeat_interleave(size).view(1, -1)   # (1, HW)
    ax, ay = points[:, i, 0], points[:, i, 1]                              # (B, L)
    abx, aby = points[:, j, 0] - ax, points[:, j, 1] - ay
    logw = torch.log(w[i, j])[None]                                        # (1, L)
    with torch.no_grad():
        win = _link_logits(ux[:, None], uy[:, None], ax[..., None], ay[..., None],
                           abx[..., None], aby[..., None], logw[..., None], thick).argmax(1)
    pick = lambda v: v.expand(b, -1).gather(1, win)                        # (B, HW)  # noqa: E731
    logit = _link_logits(ux, uy, pick(ax), pick(ay), pick(abx), pick(aby), pick(logw), thick)
    return torch.exp(logit).reshape(b, 1, size, size)


def block_mask(b: int, size: int, blocks: int, missing: float, gen: torch.Generator,
               device=None) -> torch.Tensor:
    """(B, 1, size, size) keep-mask of a ``blocks`` x ``blocks`` grid, each block kept with
    probability ``1 - missing``."""
    keep = (torch.rand(b, 1, blocks, blocks, generator=gen) >= missing).float()
    return F.interpolate(keep, size=(size, size), mode="nearest").to(device)


def _conv(ci: int, co: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(ci, co, 3, stride, 1), nn.GroupNorm(4, co), nn.ReLU())


class Regressor(nn.Module):
    """Image -> one affine transform per template keypoint (the digest's 16-32-64 CNN).

    Attention maps live at a quarter of the input size. Per keypoint: attention-pooled
    feature (64) ⊕ embedding of the attended grid coordinate (32) ⊕ embedding of the
    template point (32) -> MLP -> 6 numbers, initialised to the identity transform so
    training starts from ``P' = P``.
    """

    def __init__(self, n: int, width: int = 16, anchor: str = "template"):
        super().__init__()
        c = 4 * width
        self.n, self.anchor = n, anchor
        self.cnn = nn.Sequential(_conv(3, width), _conv(width, 2 * width, 2),
                                 _conv(2 * width, c, 2), _conv(c, c))
        self.att = nn.Conv2d(c, n, 1)
        self.coord = nn.Linear(2, 32)
        self.point = nn.Linear(2, 32)
        self.mlp = nn.Sequential(nn.Linear(c + 64, 64), nn.ReLU(), nn.Linear(64, 6))
        nn.init.zeros_(self.mlp[2].weight)
        with torch.no_grad():
            self.mlp[2].bias.copy_(torch.tensor([1.0, 0, 0, 0, 1.0, 0]))

    def forward(self, img: torch.Tensor, template: torch.Tensor):
        f = self.cnn(img)                                                  # (B, C, h, w)
        b, c, h, w = f.shape
        a = self.att(f).flatten(2).softmax(-1)                             # (B, N, hw)
        feat = torch.einsum("bnp,bcp->bnc", a, f.flatten(2))
        g = (torch.arange(h, device=img.device, dtype=img.dtype) + 0.5) / h * 2 - 1
        yy, xx = torch.meshgrid(g, g, indexing="ij")
        grid = torch.stack([xx, yy], -1).reshape(-1, 2)
        where = a @ grid                                                   # (B, N, 2)
        tp = template.expand(b, -1, -1)
        z = torch.cat([feat, self.coord(where), self.point(tp)], -1)
        theta = self.mlp(z).view(b, self.n, 2, 3)
        # the translation column adds the attended coordinate (the centroid of map i), so
        # the pose depends on the image from step 0: from the release's identity start
        # the regressor's output stayed the same for every image (std < 1e-3 after 300
        # steps at 32 px). anchor "template": P'_i = P_i + where_i at the start (the
        # template's layout kept); "centroid": P'_i = where_i (every keypoint starts at
        # the image centre)
        shift = where if self.anchor == "template" else where - tp
        theta = theta + F.pad(shift[..., None], (2, 0))
        homog = torch.cat([tp, torch.ones_like(tp[..., :1])], -1)          # (B, N, 3)
        return torch.einsum("bnij,bnj->bni", theta, homog), theta


class UNet(nn.Module):
    """[I_ref ⊕ S] -> image: two down and two up blocks with skips (the paper's four)."""

    def __init__(self, width: int = 16):
        super().__init__()
        w = width
        self.e1, self.e2, self.e3 = _conv(4, w), _conv(w, 2 * w, 2), _conv(2 * w, 4 * w, 2)
        self.d2 = _conv(4 * w + 2 * w, 2 * w)
        self.d1 = _conv(2 * w + w, w)
        self.out = nn.Conv2d(w, 3, 1)

    def forward(self, ref: torch.Tensor, heat: torch.Tensor) -> torch.Tensor:
        x1 = self.e1(torch.cat([ref, heat], 1))
        x2 = self.e2(x1)
        x3 = self.e3(x2)
        y = self.d2(torch.cat([F.interpolate(x3, scale_factor=2.0), x2], 1))
        y = self.d1(torch.cat([F.interpolate(y, scale_factor=2.0), x1], 1))
        return torch.sigmoid(self.out(y))


class Mixer(nn.Module):
    """One MLP-Mixer layer over (B, tokens, channels)."""

    def __init__(self, tokens: int, channels: int, token_hidden: int, channel_hidden: int):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(channels), nn.LayerNorm(channels)
        self.tok = nn.Sequential(nn.Linear(tokens, token_hidden), nn.GELU(),
                                 nn.Linear(token_hidden, tokens))
        self.ch = nn.Sequential(nn.Linear(channels, channel_hidden), nn.GELU(),
                                nn.Linear(channel_hidden, channels))

    def forward(self, x):
        x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.n2(x))


class Memory(nn.Module):
    """The hierarchical pose memory: ``m`` banks of ``k`` codes of width ``d`` (Sec. 3.3).

    Encoder: Linear(2 -> d) per keypoint, ``layers`` Mixers, LN, token Linear(N -> m),
    Linear(d -> d). Each bank vector snaps to its bank's nearest code (straight-through);
    codes follow an EMA of their assigned vectors (VQ-VAE-EMA, decay 0.9, Laplace 1e-5).
    Decoder: token Linear(m -> N), Linear(d -> 32), one Mixer, LN, Linear(32 -> 2).
    Dead-code restarts draw from their own generator, seeded with ``seed``.
    """

    def __init__(self, n: int, banks: int = 8, codes: int = 8, dim: int = 64, layers: int = 2,
                 decay: float = 0.9, eps: float = 1e-5, restart: float = 0.1,
                 spread: float = 0.3, seed: int = 0):
        super().__init__()
        self.banks, self.codes, self.dim, self.decay, self.eps = banks, codes, dim, decay, eps
        self.restart = restart
        self.restart_gen = torch.Generator().manual_seed(seed)   # CPU: draws moved after
        self.inp = nn.Linear(2, dim)
        self.enc = nn.Sequential(*[Mixer(n, dim, 32, dim) for _ in range(layers)])
        self.enc_norm = nn.LayerNorm(dim)
        self.to_banks = nn.Linear(n, banks)
        self.enc_out = nn.Linear(dim, dim)
        self.from_banks = nn.Linear(banks, n)
        self.dec_in = nn.Linear(dim, 32)
        self.dec = Mixer(n, 32, 32, 32)
        self.dec_norm = nn.LayerNorm(32)
        self.dec_out = nn.Linear(32, 2)
        self.register_buffer("codebook", torch.randn(banks, codes, dim))
        self.register_buffer("ema_count", torch.ones(banks, codes))
        self.register_buffer("ema_sum", self.codebook.clone())
        self.register_buffer("usage", torch.zeros(banks, codes))
        self.register_buffer("started", torch.zeros((), dtype=torch.bool))
        if spread:
            self._spread_template(spread)

    @torch.no_grad()
    def _spread_template(self, spread: float) -> None:
        """Rescale the decoder's last layer so the initial template is centred with
        per-axis std ``spread``, like the frozen random template (U(-0.5, 0.5): std 0.29).
        The random decoder alone puts template points outside [-1, 1], where the boundary
        loss, the same for every image, drowned the reconstruction gradient."""
        y = self.decode(self.codebook.mean(1)[None])[0]                    # (N, 2)
        k = spread / y.std(0)
        self.dec_out.weight.mul_(k[:, None])
        self.dec_out.bias.copy_((self.dec_out.bias - y.mean(0)) * k)

    @torch.no_grad()
    def start_from(self, g: torch.Tensor) -> None:
        """Data-dependent codebook start: each bank's codes are bank vectors of the first
        training batch (cycled when the batch is smaller than ``codes``). A deviation from
        the release, whose N(0, 1) codes sit far from the encoder's outputs, so that every
        vector picks the same code and the banks collapse (perplexity 1 in our runs)."""
        pick = torch.arange(self.codes, device=g.device) % len(g)
        self.codebook.copy_(g[pick].transpose(0, 1))                       # (m, k, d)
        self.ema_sum.copy_(self.codebook)
        self.ema_count.fill_(1.0)
        self.started.fill_(True)

    def encode(self, pts: torch.Tensor) -> torch.Tensor:
        x = self.enc_norm(self.enc(self.inp(pts)))                         # (B, N, d)
        return self.enc_out(self.to_banks(x.transpose(1, 2)).transpose(1, 2))   # (B, m, d)

    def decode(self, g: torch.Tensor) -> torch.Tensor:
        x = self.dec_in(self.from_banks(g.transpose(1, 2)).transpose(1, 2))      # (B, N, 32)
        return self.dec_out(self.dec_norm(self.dec(x)))

    def quantise(self, g: torch.Tensor):
        """Nearest code per bank: (codes (B, m, d), indices (B, m))."""
        d2 = (g.pow(2).sum(-1, keepdim=True) - 2 * torch.einsum("bmd,mkd->bmk", g, self.codebook)
              + self.codebook.pow(2).sum(-1)[None])
        idx = d2.argmin(-1)
        q = self.codebook[torch.arange(self.banks, device=g.device)[None], idx]
        return q, idx

    @torch.no_grad()
    def ema_update(self, g: torch.Tensor, idx: torch.Tensor) -> None:
        onehot = F.one_hot(idx, self.codes).float()                        # (B, m, k)
        count = onehot.sum(0)
        self.usage.copy_(count)
        self.ema_count.mul_(self.decay).add_(count, alpha=1 - self.decay)
        self.ema_sum.mul_(self.decay).add_(torch.einsum("bmk,bmd->mkd", onehot, g),
                                           alpha=1 - self.decay)
        tot = self.ema_count.sum(1, keepdim=True)
        smoothed = (self.ema_count + self.eps) / (tot + self.codes * self.eps) * tot
        self.codebook.copy_(self.ema_sum / smoothed[..., None])
        # dead-code restart (not in the release): a code whose EMA count falls below
        # ``restart`` x its uniform share of the batch moves to a random vector of this
        # batch plus noise, so a bank cannot stay at one code (the release's banks
        # collapsed to perplexity 1 here)
        dead = self.ema_count < self.restart * len(g) / self.codes             # (m, k)
        if self.restart and bool(dead.any()):
            pick = torch.randint(len(g), dead.shape, generator=self.restart_gen).to(g.device)
            new = g[pick, torch.arange(self.banks, device=g.device)[:, None]]   # (m, k, d)
            spread = g.std(0).mean() if len(g) > 1 else g.new_zeros(())   # one vector: none
            noise = torch.randn(new.shape, generator=self.restart_gen).to(new)
            new = new + 0.1 * spread * noise
            self.codebook.copy_(torch.where(dead[..., None], new, self.codebook))
            self.ema_sum.copy_(torch.where(dead[..., None], new, self.ema_sum))
            self.ema_count.copy_(torch.where(dead, torch.ones_like(self.ema_count),
                                             self.ema_count))

    def forward(self, pts: torch.Tensor, update: bool = False):
        """Reconstruct poses through the memory: (T'_rec, commitment loss, indices)."""
        g = self.encode(pts)
        if update and not bool(self.started):
            self.start_from(g.detach())
        q, idx = self.quantise(g)
        if update:
            self.ema_update(g.detach(), idx)
        commit = F.mse_loss(g, q.detach())
        q_st = g + (q - g).detach()                                        # straight-through
        return self.decode(q_st), commit, idx

    def template(self) -> torch.Tensor:
        """Prior distillation: the decoding of every bank's mean code, (1, N, 2), detached."""
        with torch.no_grad():
            return self.decode(self.codebook.mean(1)[None])

    def perplexity(self, idx: torch.Tensor) -> torch.Tensor:
        """Per-bank code perplexity ``exp(H(p))`` of the code frequencies in ``idx``."""
        p = F.one_hot(idx, self.codes).float().mean(0)                     # (m, k)
        return torch.exp(-(p * torch.log(p + 1e-12)).sum(-1))


def boundary_loss(p: torch.Tensor) -> torch.Tensor:
    """The paper's L_b: sum of ``max(0, |p| - 1)`` over coordinates, mean over the batch."""
    return (p.abs() - 1).clamp(min=0).sum((1, 2)).mean()


def recon_loss(x: torch.Tensor, y: torch.Tensor, scales: int = 3) -> torch.Tensor:
    """Multi-scale L1 (full, 1/2, 1/4): the digest's stand-in for the VGG perceptual loss,
    which needs pretrained ImageNet weights."""
    loss = 0.0
    for s in range(scales):
        if s:
            x, y = F.avg_pool2d(x, 2), F.avg_pool2d(y, 2)
        loss = loss + (x - y).abs().mean()
    return loss / scales


class PPL(nn.Module):
    """Regressor, renderer, UNet, memory and prior as one model.

    ``prior="learned"``: the template is the memory's distillation (the release's design);
    ``prior="frozen_random"``: a fixed random template and no memory (the Tab. 2 baseline).
    """

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        n = cfg.keypoints
        # every layer's initialisation from the run's "init" stream, torch's global RNG
        # untouched; the links and the frozen template from their own children of it
        with seeded(seeds.child(cfg.seed, "init")):
            self.prior = Prior(n, seed=seeds.child(cfg.seed, "init", "links"),
                               start=cfg.link_start)
            self.regressor = Regressor(n, cfg.width, cfg.anchor)
            self.unet = UNet(cfg.width)
            self.alpha = nn.Parameter(torch.ones(()))
            self.memory = Memory(n, cfg.banks, cfg.codes, cfg.memory_dim, restart=cfg.restart,
                                 seed=seeds.child(cfg.seed, "train", "restarts")) \
                if cfg.prior == "learned" else None
        g = torch.Generator().manual_seed(seeds.child(cfg.seed, "init", "template"))
        self.register_buffer("fixed_template", torch.rand(1, n, 2, generator=g) - 0.5)

    def template(self) -> torch.Tensor:
        return self.memory.template() if self.memory is not None else self.fixed_template

    def reconstruct(self, ref: torch.Tensor, pts: torch.Tensor) -> torch.Tensor:
        heat = render(pts, self.prior.weights(), ref.shape[-1], self.cfg.thick)
        return self.unet(self.alpha * ref, heat)

    def losses(self, img: torch.Tensor, ref: torch.Tensor) -> dict[str, torch.Tensor]:
        """One training step's losses (the release's sum, perceptual -> multi-scale L1)."""
        pts, _ = self.regressor(img, self.template())
        out = {"recon": recon_loss(self.reconstruct(ref, pts), img),
               "boundary": boundary_loss(pts)}
        if self.memory is not None:
            rec, commit, idx = self.memory(pts.detach(), update=self.training)
            out["memory"] = 100 * F.mse_loss(rec, pts.detach())
            out["commit"] = commit
        return out

    @torch.no_grad()
    def iterate(self, img: torch.Tensor, ref: torch.Tensor, steps: int):
        """Iterative inference (Sec. 3.4): regress, pass through memory, reconstruct from
        ``ref`` with the memory's pose, regress again. Returns per iteration the regressed
        poses and the memory's poses, each (steps, B, N, 2)."""
        x, raw, mem = img, [], []
        for _ in range(steps):
            pts, _ = self.regressor(x, self.template())
            rec = self.memory(pts)[0] if self.memory is not None else pts
            raw.append(pts)
            mem.append(rec)
            x = self.reconstruct(ref, rec)
        return torch.stack(raw), torch.stack(mem)


def parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def thick_for(size: int, px: float = 1.5) -> float:
    """``thick`` for ~``px``-pixel lines: ``(2 px / size)^2`` (the digest's rule)."""
    return (2 * px / size) ** 2 if size else math.nan
