"""TrainRef (ICLR 2026): noisy labels curated into label distributions with a reference set.

Three phases of the paper (Sec. 3), at Fashion-MNIST scale:

I. Label-free pre-training (Sec. 3.2, masked image modelling). The paper trains a BEiT-v2
   ViT-B/16; here a small masked autoencoder: the 28x28 image as 16 patches of 7x7, a
   fraction ``mask_ratio`` of them zeroed, an MLP encoder 784 -> hidden -> dim (no final
   activation: signed features for the cosines) and an MLP decoder back to 784, mean squared
   error on the masked pixels only. Labels are never read.
II. Reference augmentation (Sec. 3.3). A random linear head on the frozen encoder is trained
   on D_ref for ``probe_epochs`` (checkpoints at 1/3, 2/3 and 3/3 of them). The influence of
   candidate s_i on reference s_r is the TracIn-style gradient cosine
   IF = cos(grad_phi L(s_i), grad_phi L(s_r)), averaged over checkpoints. For a linear head
   with bias the per-sample gradient of cross-entropy is the outer product (p - y) x [h; 1],
   so cos = cos(p_i - y_i, p_r - y_r) * cos([h_i; 1], [h_r; 1]) (``influence``): two small
   GEMMs instead of N x R full gradients. Each candidate's score is its mean IF over the
   references of its *given* class; readings where the paper is silent: the score is
   min-max normalised within each given class, and a candidate enters D*_ref when it is
   >= ``delta_if`` = 0.8 (the paper's delta_IF). The probe sees encoder features centred on
   the pool mean (the same reading as in phase III; the README says why). The classifier
   (encoder + head) is then trained on D_ref + D*_ref (given labels) for ``aug_epochs`` (no
   RandAugment/MixUp: not run here).
III. Co-evolution (Sec. 3.4), ``rounds`` = 2 rounds. C-step: every pool image x gets
   y_hat(x) = (1/Z) sum_{r in V(x)} y_r cos(f(x), f(x_r)) over D_ref + D*_ref, V(x) the
   voting pool: the references above the 75th percentile tau of x's similarities, then the
   ``k`` = 10 most mutually diverse of them. The paper gives neither k nor the diversity
   rule. Reading: maximal marginal relevance (Carbonell & Goldstein 1998), greedy from the
   most similar, each next reference maximising 0.5 s(x, r) - 0.5 max_{c in V} s(r, c):
   diverse among the relevant. Pure farthest-point (max-min distance, similarity ignored)
   was the first reading and is kept as the ``farthest`` ablation: within a top quartile of
   hundreds of references it picks the far edge, other classes. Then sharpened
   y_hat^(1/t), t = 0.5. Negative cosines vote 0 (reading).
   Features are centred on the pool mean before cosines (reading: the paper's ViT features
   are not centred, but an MLP's are all of one sign and every cosine is near 1).
   P-step: the classifier fine-tuned ``ft_epochs`` on the soft labels with cross-entropy
   (AdamW, weight decay 5e-4: the digest's lambda). The hard-relabel variant takes the
   argmax of y_hat instead (the paper's Sec. 5 ablation).

Baselines (Sec. 5): cross-entropy on the given labels for ``ce_epochs`` without early
stopping ("trained to convergence"), the same with label smoothing 0.1, and temperature
scaling (Guo et al. 2017) of the CE model fitted on the clean validation set; TrainRef + TS
too. Every baseline starts from the same pre-trained encoder (reading: the paper's baselines
train their own backbones). ECE: 15 equal-width confidence bins.

The run (phases II-III in order, the baselines, one setting end to end) is in ``run.py``.
Ledger scopes: ``pretrain``, ``probe``, ``influence``, ``augment``, ``vote/round{n}``,
``finetune/round{n}``, ``ce``, ``label_smoothing``, ``calibrate``, ``infer/...``, one
``hard/...`` set for the hard-relabel variant.
"""
from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from models.shared.training import seeded, train_minibatch
from sim import seeds
from sim.errors import ModelError

PATCH = 7


def patch_mask(n: int, ratio: float, gen: torch.Generator, device) -> torch.Tensor:
    """(n, 784) 0/1 mask: 1 where a 7x7 patch is masked, ``round(16 ratio)`` per image."""
    k = round(16 * ratio)
    scores = torch.rand(n, 16, generator=gen)
    masked = torch.zeros(n, 16)
    masked.scatter_(1, scores.argsort(1)[:, :k], 1.0)
    grid = masked.view(n, 4, 1, 4, 1).expand(n, 4, PATCH, 4, PATCH)
    return grid.reshape(n, 784).to(device)


def encoder(seed: int, hidden: int, dim: int) -> nn.Sequential:
    with seeded(seed):
        return nn.Sequential(nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, dim))


def pretrain(x: torch.Tensor, cfg, dev) -> nn.Sequential:
    """Phase I: the masked autoencoder (module docstring); returns the encoder."""
    enc = encoder(seeds.child(cfg.seed, "init", "encoder"), cfg.hidden, cfg.dim)
    with seeded(seeds.child(cfg.seed, "init", "decoder")):
        dec = nn.Sequential(nn.Linear(cfg.dim, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, 784))
    mae = dev.compile(nn.Sequential(enc, dec))
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "pretrain", "masks"))
    masks = patch_mask(len(x), cfg.mask_ratio, gen, dev.torch_device) if cfg.mae_epochs else None

    def loss(idx):
        m = masks[idx]
        rec = mae(x[idx] * (1 - m))
        return ((rec - x[idx]) ** 2 * m).sum() / m.sum()

    train_minibatch(dev, mae.parameters(), loss, len(x), epochs=cfg.mae_epochs,
                    batch_size=cfg.batch_size, lr=1e-3,
                    seed=seeds.child(cfg.seed, "pretrain", "order"), scope="train/pretrain")
    return enc


@torch.no_grad()
def features(module: nn.Module, x: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    return torch.cat([module(x[i:i + chunk]) for i in range(0, len(x), chunk)])


def influence(h_c, y_c, h_r, y_r, heads: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """Closed-form gradient cosines, (Nc, R), averaged over the head checkpoints.

    ``heads``: (W (C, d), b (C,)) per checkpoint; y one-hot (float). For a linear head the
    cross-entropy gradient w.r.t. [W, b] of one sample is (p - y) [h; 1]^T, and the Frobenius
    inner product of two outer products factorises: <a u^T, b v^T> = (a.b)(u.v).
    """
    one_c = torch.ones(len(h_c), 1, dtype=h_c.dtype, device=h_c.device)
    one_r = torch.ones(len(h_r), 1, dtype=h_r.dtype, device=h_r.device)
    u = F.normalize(torch.cat([h_c, one_c], 1), dim=1)
    v = F.normalize(torch.cat([h_r, one_r], 1), dim=1)
    feat_cos = u @ v.T                                         # same for every checkpoint
    total = torch.zeros_like(feat_cos)
    for w, b in heads:
        e_c = F.normalize(torch.softmax(h_c @ w.T + b, 1) - y_c, dim=1)
        e_r = F.normalize(torch.softmax(h_r @ w.T + b, 1) - y_r, dim=1)
        total += e_c @ e_r.T
    return total / len(heads) * feat_cos


def probe_checkpoints(h_ref, y_ref, cfg, dev, classes: int = 10):
    """Phase II's linear probe on D_ref: full-batch Adam, three checkpoints (W, b)."""
    with seeded(seeds.child(cfg.seed, "init", "probe")):
        head = dev.compile(nn.Linear(h_ref.shape[1], classes))
    opt = torch.optim.Adam(head.parameters(), lr=cfg.probe_lr)
    marks = {round(cfg.probe_epochs * f) for f in (1 / 3, 2 / 3, 1.0)}
    out = []
    with dev.count("train/probe", samples=len(h_ref) * cfg.probe_epochs):
        for epoch in range(1, cfg.probe_epochs + 1):
            loss = F.cross_entropy(head(h_ref), y_ref)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if epoch in marks:
                out.append((head.weight.detach().clone(), head.bias.detach().clone()))
    return out


def select(scores: torch.Tensor, y: torch.Tensor, delta: float, classes: int = 10):
    """Candidates whose min-max-normalised (within given class) score is >= ``delta``."""
    keep = torch.zeros(len(y), dtype=torch.bool, device=y.device)
    norm = torch.zeros_like(scores)
    for c in range(classes):
        m = y == c
        if m.sum() < 2:
            continue
        s = scores[m]
        norm[m] = (s - s.min()) / (s.max() - s.min()).clamp_min(1e-12)
    keep = norm >= delta
    return keep, norm


def vote(f_x, f_r, y_r, k: int, quantile: float, t: float, classes: int = 10,
         chunk: int = 2048, pool: str = "mmr", relevance: float = 0.5,
         log_space: bool = False) -> torch.Tensor:
    """C-step (module docstring): soft labels (N, C) from the references' similarity votes.

    The voting pool V(x) is grown greedily from x's most similar reference among those above
    tau. ``pool="mmr"`` (default, the paper's "k most mutually diverse" read as maximal
    marginal relevance): the next reference maximises ``relevance * s(x, r) - (1 -
    relevance) * max_{c in V} s(r, c)``; ``"farthest"``: pure farthest-point (max-min
    distance to V, similarity ignored); ``"nearest"``: the k most similar (the public code's
    top-10). The last two are ablations (README: farthest-point votes with the top
    quartile's far edge and loses 30 points of relabel accuracy even with a clean D*_ref).
    ``log_space``: sharpen as softmax(log y / t), the same distribution, finite where
    y^(1/t) under- or overflows float32 (t near 0; :func:`sharpen_finite`).
    """
    fr = F.normalize(f_r, dim=1)
    y1 = F.one_hot(y_r, classes).to(f_x.dtype)
    rr = fr @ fr.T                                             # reference-reference cosines
    out = []
    for i in range(0, len(f_x), chunk):
        s = F.normalize(f_x[i:i + chunk], dim=1) @ fr.T        # (n, R)
        tau = torch.quantile(s, quantile, dim=1, keepdim=True)
        cand = s >= tau
        kk = min(k, int(cand.sum(1).min()))
        first = torch.where(cand, s, torch.full_like(s, -2.0)).argmax(1)
        chosen = F.one_hot(first, len(fr)).bool()
        redundancy = rr[first]                                 # max cosine to the chosen set
        for _ in range(kk - 1):
            if pool == "mmr":
                key = relevance * s - (1 - relevance) * redundancy
            elif pool == "farthest":
                key = -redundancy                              # max-min cosine distance
            else:
                key = s
            nxt = torch.where(cand & ~chosen, key, torch.full_like(s, -9.0)).argmax(1)
            chosen |= F.one_hot(nxt, len(fr)).bool()
            redundancy = torch.maximum(redundancy, rr[nxt])
        w = torch.where(chosen, s.clamp_min(0), torch.zeros_like(s))
        y = w @ y1 + 1e-12
        if log_space:
            out.append(torch.softmax(torch.log(y) / t, 1))
            continue
        y = y ** (1 / t)
        out.append(y / y.sum(1, keepdim=True))
    return torch.cat(out)


def sharpen_finite(soft: torch.Tensor, f_x, f_r, y_r, cfg, dev, scope: str) -> torch.Tensor:
    """``soft`` with its non-finite rows voted again in log space.

    y^(1/t) of the vote sums y (1e-12 up to k + 1e-12) underflows float32 to 0 for every
    class of a row once t is small (0/0: a nan row), or overflows (inf/inf). The check runs
    outside any count block, so a run without such rows (the presets' t = 0.5: 1e-24 at
    worst) records the same ledger; the re-vote is counted under ``scope``.
    """
    bad = ~torch.isfinite(soft).all(1)
    if not bool(bad.any()):
        return soft
    with dev.count(scope, samples=int(bad.sum())):
        soft[bad] = vote(f_x[bad], f_r, y_r, cfg.k, cfg.quantile, cfg.sharpen, pool=cfg.pool,
                         relevance=cfg.relevance, log_space=True)
    return soft


def ece(probs: np.ndarray, y: np.ndarray, bins: int = 15) -> float:
    """Expected calibration error over ``bins`` equal-width confidence bins."""
    conf, pred = probs.max(1), probs.argmax(1)
    idx = np.minimum((conf * bins).astype(int), bins - 1)
    err = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            err += m.mean() * abs((pred[m] == y[m]).mean() - conf[m].mean())
    return float(err)


def fit_temperature(logits: torch.Tensor, y: torch.Tensor, dev) -> float:
    """Temperature scaling: the T of a log-spaced grid (0.05..20) minimising the NLL."""
    grid = torch.logspace(-1.3, 1.3, 200, device=logits.device)
    with dev.count("calibrate", samples=len(y)):
        nll = torch.stack([F.cross_entropy(logits / t, y) for t in grid])
    return float(grid[int(nll.argmin())])


class Classifier(nn.Module):
    def __init__(self, enc: nn.Module, dim: int, classes: int, seed: int):
        super().__init__()
        self.enc = copy.deepcopy(enc)
        with seeded(seed):
            self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.enc(x))


def fit(model: nn.Module, x, target, cfg, dev, scope: str, epochs: int, smoothing: float = 0.0,
        seed: int = 0, lr: float | None = None):
    """Mini-batch AdamW on cross-entropy; ``target`` int labels or soft (N, C) labels;
    counted under ``train/<scope>``, so the report prices every fit as training."""
    def loss(idx):
        return F.cross_entropy(model(x[idx]), target[idx], label_smoothing=smoothing)
    return train_minibatch(dev, model.parameters(), loss, len(x), epochs=epochs,
                           batch_size=cfg.batch_size, lr=lr or cfg.lr, seed=seed,
                           weight_decay=5e-4, optimizer="adamw", lr_schedule="cosine",
                           scope=f"train/{scope}")


def evaluate(model, sp, dev, scope: str, temperature: float = 1.0) -> dict:
    model.eval()
    logits = dev.run(model, sp["x_test"], scope=f"infer/{scope}")
    model.train()
    p = torch.softmax(logits / temperature, 1).cpu().numpy()
    if not np.isfinite(p).all():   # numpy, outside any count block: the ledger is unchanged
        # NaN weights: the accuracy would be an argmax of NaNs and the ECE 0 (no bin matches)
        raise ModelError(f"trainref: the {scope} model's test predictions are not finite: "
                         "its training diverged; lower lr")
    y = sp["y_test"].cpu().numpy()
    return {"accuracy": float((p.argmax(1) == y).mean()), "ece": ece(p, y)}
