"""DINO self-distillation with jointly learned or decoupled (online-GMM) prototypes.

The paper (arXiv:2510.20108, Sec. 3-4): in prototypical SSL the encoder theta and the
prototypes C minimise one loss jointly, and the prototypes take a shortcut: they drift to
near-duplicates early. The fix alternates (i) C^t from an online EM step of a diagonal
Gaussian mixture on the teacher's features (no gradient) and (ii) an encoder step on the
unchanged DINO loss against C^t held fixed. Here, at Fashion-MNIST scale:

* ``joint``: DINO's head, the prototypes a weight-normalised ``Linear`` trained by Adam with
  the encoder; the teacher is the EMA of the whole student, prototypes included.
* ``decoupled``: the same encoder and head; the prototypes are the normalised means of
  :class:`OnlineGMM`, a buffer the optimizer never sees, updated from teacher features.

Readings where the paper is silent (the exact EM schedule was not retrieved):

* E-step ``gamma = softmax_k(beta_t * l_ik)``, ``l_ik`` the diagonal-Gaussian log-density
  plus ``log pi_k``; ``beta_t`` linear from ``beta0`` to 1 over ``beta_epochs`` epochs.
* Statistics with forgetting ``N <- eta_k N + sum gamma``, ``S <- eta_k S + gamma^T h``,
  ``Q <- eta_k Q + gamma^T h^2``. The paper names "responsibility forgetting": the default
  ``responsibility`` decays component k by ``eta_k = eta ** (n_k K / B)`` (its share of the
  batch against the uniform share), so a component that receives no responsibility keeps
  its statistics. Option ``global`` (``eta_k = eta``) forgets every component at the same
  rate, lightly used ones included, so all the means follow the moving teacher features
  and merge where they crowd (the README's collapse run compares the two). M-step
  ``pi = N / sum N``, ``mu = S / N``, ``var = max(Q / N - mu^2, var_min)``.
* Init: the means are K distinct teacher features (one augmented view of K random training
  images, before the first step), the
  variances ``1 / D`` (unit vectors in D dimensions), one pseudo-count per component
  (``N = 1``, so the first M-step has no 0/0).
* The GMM sees both views' teacher features (L2-normalised bottleneck outputs); the loss
  uses ``c_k = mu_k / |mu_k|`` for student and teacher.
* DINO's last layer as DINOHead builds it: weight-normalised with the norm frozen at 1
  (``norm_last_layer``: rows ``v_k / |v_k|``), ``v`` from ``nn.Linear``'s default init, and
  frozen for the first ``freeze_last_layer`` epochs (DINO's ``cancel_gradients_last_layer``,
  default 1 epoch): the prototypes get no gradient and no Adam update then.
* DINO otherwise: teacher temperature 0.04 fixed (no warm-up to 0.07), EMA 0.996 fixed, Adam
  at a fixed lr (no AdamW weight decay, warm-up, cosine schedule or gradient clipping), two
  global views only (no multi-crop), batch norm in the head (DINO's ``use_bn_in_head``,
  off by default there).
* Unique prototypes (Definition 2.1): greedy cover in index order at cosine distance < eps.
* k-NN: the teacher backbone's 128-d features, cosine, k = 20, votes weighted by
  ``exp(sim / 0.07)`` (DINO's k-NN); the memory bank is the training subset.

Every op (training, EM, measurements, k-NN) runs inside ``dev.count`` blocks (``count=False``
skips the ledger: the bench's long collapse runs, thousands of steps). The run (both
variants trained and measured) is in ``run.py``.
"""
from __future__ import annotations

import contextlib
import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from models.decoupled_prototypes.card import DecoupledPrototypesConfig
from models.shared.training import seeded
from sim import seeds
from sim.errors import ModelError


# --- augmentations ----------------------------------------------------------------------
def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One view of a batch (B, 1, 28, 28), vectorised (plan item 1): random resized crop of
    20-28 px back to 28 (an affine grid: per-sample scale and shift), horizontal flip,
    Gaussian noise sigma 0.1, random erasing with p 0.3 (a rectangle of 2-20% of the area)."""
    b, dev = len(x), x.device

    def u(*shape):
        return torch.rand(*shape, generator=gen).to(dev)
    scale = 20 / 28 + (1 - 20 / 28) * u(b)
    shift = (1 - scale) * (2 * u(2, b) - 1)
    flip = torch.where(u(b) < 0.5, -1.0, 1.0)
    theta = torch.zeros(b, 2, 3, device=dev)
    theta[:, 0, 0] = scale * flip
    theta[:, 1, 1] = scale
    theta[:, 0, 2], theta[:, 1, 2] = shift[0], shift[1]
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    v = F.grid_sample(x, grid, align_corners=False)
    v = v + 0.1 * torch.randn(v.shape, generator=gen).to(dev)
    area = 0.02 + 0.18 * u(b)
    aspect = torch.exp((2 * u(b) - 1) * math.log(3.0))
    h = (torch.sqrt(area * aspect) * 28).clamp(1, 28)
    w = (torch.sqrt(area / aspect) * 28).clamp(1, 28)
    top, left = u(b) * (28 - h), u(b) * (28 - w)
    r = torch.arange(28, device=dev, dtype=torch.float32)
    rows = (r[None] >= top[:, None]) & (r[None] < (top + h)[:, None])
    cols = (r[None] >= left[:, None]) & (r[None] < (left + w)[:, None])
    erase = (rows[:, :, None] & cols[:, None, :]) & (u(b) < 0.3)[:, None, None]
    return v * (~erase[:, None]).to(v.dtype)          # a multiply: counted (masked_fill_ is not)


# --- networks -----------------------------------------------------------------------------
def encoder(width: int = 16) -> nn.Sequential:
    """4-layer CNN to a 128-d backbone feature (about 100k parameters at width 16)."""
    w = width
    layers, c_in = [], 1
    for c_out, stride in ((w, 1), (2 * w, 2), (4 * w, 2), (128, 2)):
        # batch norm (as in DINO's ResNet runs): without it a random ReLU net maps every
        # image into one narrow cone, the first teacher features (the GMM's init) coincide
        layers += [nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False),
                   nn.BatchNorm2d(c_out), nn.ReLU()]
        c_in = c_out
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())


class Student(nn.Module):
    """Backbone, head MLP 128 -> 256 -> D (L2-normalised); ``prototypes`` a (K, D)
    parameter for ``joint`` (DINO's weight-normalised last layer), absent for ``decoupled``
    (the prototypes are then passed to :meth:`forward`)."""

    def __init__(self, cfg: DecoupledPrototypesConfig, joint: bool):
        super().__init__()
        self.backbone = encoder(cfg.width)
        self.head = nn.Sequential(nn.Linear(128, 256), nn.BatchNorm1d(256), nn.GELU(),
                                  nn.Linear(256, cfg.bottleneck))
        if joint:       # DINOHead builds its last layer after its trunc_normal(0.02) init,
            #             so the prototypes get nn.Linear's own init, U(-1/sqrt D, 1/sqrt D):
            #             under Adam the angular step scales as 1 / |row|, 3.6x smaller than
            #             from a 0.02-std init at D = 64
            last = nn.Linear(cfg.bottleneck, cfg.prototypes, bias=False)
            self.prototypes = nn.Parameter(last.weight.detach().clone())
        else:
            self.prototypes = None

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.head(self.backbone(x)), dim=1)

    def protos(self, given: torch.Tensor | None = None) -> torch.Tensor:
        return F.normalize(self.prototypes if given is None else given, dim=1)

    def forward(self, x: torch.Tensor, given: torch.Tensor | None = None):
        """(bottleneck z, logits z . c_k) of a batch."""
        z = self.embed(x)
        return z, z @ self.protos(given).T


# --- the online Gaussian mixture ----------------------------------------------------------
_TINY = torch.finfo(torch.float32).tiny


class OnlineGMM:
    """Diagonal Gaussian mixture fitted by online EM with forgetting and annealing.

    Plain tensors, no autograd: the mixture is outside every loss and optimizer.
    """

    def __init__(self, means: torch.Tensor, forget: float = 0.99, var_min: float = 1e-4,
                 forgetting: str = "responsibility", var0: float | None = None):
        k, d = means.shape
        self.forget, self.var_min, self.forgetting = forget, var_min, forgetting
        self.mu = means.detach().clone()
        self.var = torch.full_like(self.mu, var0 if var0 is not None else 1.0 / d)
        self.pi = torch.full((k,), 1.0 / k, device=means.device)
        self.n = torch.ones(k, device=means.device)          # one pseudo-count each
        self.s = self.mu.clone()
        self.q = self.var + self.mu ** 2

    def log_joint(self, h: torch.Tensor) -> torch.Tensor:
        """``log pi_k + log N(h_i | mu_k, diag var_k)`` (B, K), as 2 GEMMs (no B x K x D)."""
        inv = 1.0 / self.var
        quad = (h * h) @ inv.T - 2.0 * h @ (self.mu * inv).T + (self.mu ** 2 * inv).sum(1)
        logdet = torch.log(self.var).sum(1)
        d = h.shape[1]
        return torch.log(self.pi) - 0.5 * (quad + logdet + d * math.log(2 * math.pi))

    def mean_log_likelihood(self, h: torch.Tensor) -> float:
        return float(torch.logsumexp(self.log_joint(h), dim=1).mean())

    @torch.no_grad()
    def step(self, h: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
        """One E-step on batch ``h`` (B, D) and the incremental M-step; returns gamma."""
        gamma = torch.softmax(beta * self.log_joint(h), dim=1)
        nk = gamma.sum(0)
        if self.forgetting == "global":
            eta = torch.full_like(nk, self.forget)
            # a component with no responsibility decays by eta each step, and its N, S, Q
            # reach float32 0 (a 0/0 mean: NaN prototypes) after ~ -103 / ln(eta) steps; the
            # decay leaves their ratios (mean, variance) as they are, so it stops at the
            # smallest normal float32 (never reached in 2820 steps at eta 0.99: 5e-13)
            eta = torch.where(eta * self.n + nk < _TINY, 1.0, eta)
        else:          # decay in proportion to the batch mass received (uniform share: B / K)
            eta = self.forget ** (nk * len(nk) / len(h))
        self.n = eta * self.n + nk
        self.s = eta[:, None] * self.s + gamma.T @ h
        self.q = eta[:, None] * self.q + gamma.T @ (h * h)
        self.pi = self.n / self.n.sum()
        self.mu = self.s / self.n[:, None]
        self.var = (self.q / self.n[:, None] - self.mu ** 2).clamp_min(self.var_min)
        return gamma

    def prototypes(self) -> torch.Tensor:
        return F.normalize(self.mu, dim=1)


def kmeanspp(h: torch.Tensor, k: int, gen: torch.Generator) -> torch.Tensor:
    """k-means++ seeding (Arthur & Vassilvitskii 2007): k rows of ``h``, each drawn with
    probability proportional to its squared distance to the rows already drawn."""
    first = int(torch.randint(len(h), (1,), generator=gen))
    picked = [first]
    d2 = ((h - h[first]) ** 2).sum(1)
    for _ in range(k - 1):
        i = int(torch.multinomial((d2 / d2.sum()).cpu(), 1, generator=gen))
        picked.append(i)
        d2 = torch.minimum(d2, ((h - h[i]) ** 2).sum(1))
    return h[picked].clone()


# --- collapse measures --------------------------------------------------------------------
@torch.no_grad()
def unique_count(protos: torch.Tensor, eps: float) -> int:
    """Definition 2.1 read as a greedy cover in index order: take the first prototype not
    yet covered as a representative, cover every prototype within cosine distance < eps."""
    c = F.normalize(protos, dim=1)
    close = (1.0 - c @ c.T) < eps                                 # (K, K)
    covered = torch.zeros(len(c), dtype=torch.bool, device=c.device)
    groups = 0
    while groups < len(c):          # at most K groups: the same ops as an unbounded loop
        if bool(covered.all()):
            return groups
        i = int(torch.argmax((~covered).to(torch.uint8)))   # first uncovered (argmax: a
        #                                                     counted op; nonzero is not)
        covered |= close[i]
        groups += 1
    if not bool(covered.all()):     # a NaN row is not within eps of itself: it never got
        #                             covered, and the loop would have run forever
        bad = int((~torch.isfinite(c).all(1)).sum())
        raise ModelError(f"decoupled_prototypes: {bad} of {len(c)} "
                         "prototypes are not finite (training diverged: lower lr, or raise "
                         "var_min)")
    return groups


def usage_entropy(assign: torch.Tensor, k: int) -> float:
    """Entropy (nats) of the histogram of prototype assignments."""
    p = torch.bincount(assign, minlength=k).float()
    p = p[p > 0] / p.sum()
    return float(-(p * p.log()).sum()) + 0.0   # + 0.0: one prototype's -0.0 reads 0


@torch.no_grad()
def knn_accuracy(train_f, train_y, test_f, test_y, k: int = 20, temp: float = 0.07,
                 classes: int = 10, chunk: int = 1024) -> float:
    """DINO's weighted k-NN: cosine neighbours, votes weighted by exp(sim / temp)."""
    tr, te = F.normalize(train_f, dim=1), F.normalize(test_f, dim=1)
    k = min(k, len(tr))
    right = 0
    for i in range(0, len(te), chunk):
        sim, idx = (te[i:i + chunk] @ tr.T).topk(k, dim=1)
        votes = torch.zeros(len(sim), classes, device=te.device)
        votes.scatter_add_(1, train_y[idx], torch.exp(sim / temp))
        right += int((votes.argmax(1) == test_y[i:i + chunk]).sum())
    return right / len(te)


def counted(dev, cfg: DecoupledPrototypesConfig, scope: str, samples: int = 0):
    """``dev.count(scope)``, or no block when ``cfg.count`` is off."""
    return dev.count(scope, samples=samples) if cfg.count else contextlib.nullcontext()


# --- training -----------------------------------------------------------------------------
def dino_loss(s_logits, t_logits, center, cfg):
    """Cross-view cross-entropy between sharpened, centred teacher and student (2 views)."""
    t = [torch.softmax((tl - center) / cfg.teacher_temp, dim=1).detach() for tl in t_logits]
    s = [F.log_softmax(sl / cfg.student_temp, dim=1) for sl in s_logits]
    return -0.5 * ((t[0] * s[1]).sum(1).mean() + (t[1] * s[0]).sum(1).mean())


class Trainer:
    """One variant's student, teacher, optimizer, centre and (decoupled) mixture."""

    def __init__(self, cfg: DecoupledPrototypesConfig, variant: str, dev, steps_per_epoch: int):
        self.cfg, self.variant, self.dev = cfg, variant, dev
        # both variants start from the same student (a paired comparison)
        with seeded(seeds.child(cfg.seed, "init")):
            student = Student(cfg, joint=variant == "joint")
        self.student = dev.compile(student)
        self.teacher = copy.deepcopy(self.student)
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        self.opt = torch.optim.Adam(self.student.parameters(), lr=cfg.lr)
        self.center = torch.zeros(1, cfg.prototypes, device=dev.torch_device)
        self.gmm: OnlineGMM | None = None
        self.steps, self.steps_per_epoch = 0, steps_per_epoch

    def frozen(self) -> bool:
        """DINO's ``freeze_last_layer``: no prototype update in the first epochs."""
        return self.steps < self.cfg.freeze_last_layer * self.steps_per_epoch

    def beta(self) -> float:
        ramp = self.cfg.beta_epochs * self.steps_per_epoch
        frac = 1.0 if ramp == 0 else min(1.0, self.steps / ramp)
        return self.cfg.beta0 + (1.0 - self.cfg.beta0) * frac

    def prototypes(self) -> torch.Tensor:
        if self.variant == "joint":
            return F.normalize(self.student.prototypes.detach(), dim=1)
        return self.gmm.prototypes()

    def teacher_protos(self):
        return None if self.variant == "joint" else self.gmm.prototypes()

    def init_gmm(self, x: torch.Tensor, gen: torch.Generator) -> None:
        """Means: K distinct teacher features of one augmented view of ``x`` (>= K images)."""
        k = self.cfg.prototypes
        if len(x) < k:
            raise ModelError(f"decoupled_prototypes: {len(x)} images to seed the mixture; "
                             f"needs >= prototypes = {k} (raise train or lower prototypes)")
        with torch.no_grad():
            pick = torch.randperm(len(x), generator=gen)[:k].to(x.device)
            h = self.teacher.embed(augment(x[pick], gen))
        self.gmm = OnlineGMM(h, self.cfg.forget, self.cfg.var_min, self.cfg.forgetting)

    def em_step(self, views, gen: torch.Generator) -> None:
        """Step (i): the mixture on the teacher's features of both views (no gradient)."""
        with torch.no_grad():
            h = torch.cat([self.teacher.embed(v) for v in views])
            if self.gmm is None:
                self.init_gmm(views[0], gen)
            with counted(self.dev, self.cfg, "em"):
                self.gmm.step(h, self.beta())

    def encoder_step(self, views) -> float:
        """Step (ii): DINO's loss against fixed prototypes, Adam, teacher EMA, centring."""
        cfg, given = self.cfg, self.teacher_protos()
        with torch.no_grad():
            t_logits = [self.teacher(v, given)[1] for v in views]
        s_logits = [self.student(v, given)[1] for v in views]
        loss = dino_loss(s_logits, t_logits, self.center, cfg)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.variant == "joint" and self.frozen():
            self.student.prototypes.grad = None    # Adam skips a parameter with no grad
        self.opt.step()
        with torch.no_grad():
            for pt, ps in zip(self.teacher.parameters(), self.student.parameters(), strict=True):
                pt.mul_(cfg.ema).add_(ps.detach(), alpha=1 - cfg.ema)
            for bt, bs in zip(self.teacher.buffers(), self.student.buffers(), strict=True):
                bt.copy_(bs)           # running statistics (and counts): the student's
            batch_center = torch.cat(t_logits).mean(0, keepdim=True)
            self.center.mul_(cfg.center_momentum).add_(batch_center, alpha=1 - cfg.center_momentum)
        self.steps += 1
        return float(loss.detach())

    def step(self, x, gen) -> float:
        views = [augment(x, gen), augment(x, gen)]
        if self.variant == "decoupled":
            self.em_step(views, gen)
        return self.encoder_step(views)
