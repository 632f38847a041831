"""Phase-I embeddings other than the masked autoencoder, for the embedding-quality study.

Issue 33: with the small MAE (``model.pretrain``) the enlarged reference set D*_ref is 0.53
clean at sym-80 %, 1 reference per class (claim >= 0.90), and a 1-nearest-neighbour
classifier from the 10 references is 0.52 accurate on its features (0.56 on raw pixels). The
question is the embedding, so ``bench/trainref_embedding.py`` runs the same phases II-III on
three encoders of the same output width (``cfg.dim``):

* ``model.pretrain``: the room's MAE (label-free, MLP);
* :func:`contrastive`: a label-free SimCLR-style CNN (Chen et al. 2020, arXiv:2002.05709)
  trained on the same images: two augmented views per image (random resized crop, scale
  0.6-1, by ``affine_grid``/``grid_sample``; horizontal flip; brightness x U(0.6, 1.4)), a
  projection MLP dim -> dim -> 32 on the encoder's features, NT-Xent loss at temperature
  ``CONTRASTIVE_TEMPERATURE`` over the 2B views of a batch; the features before the
  projection are the embedding (as in SimCLR);
* :func:`supervised`: the same CNN with a linear head trained with cross-entropy on a
  *disjoint clean split* (Fashion-MNIST training images that are not among the run's
  references, validation, pool or test images; true labels): an upper bound on what phase I
  could give, not a label-free method.

Every training is counted on the device under ``train/pretrain/<name>``.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from models.shared.training import seeded, train_minibatch
from sim import seeds
from sim.errors import ModelError

CONTRASTIVE_TEMPERATURE = 0.2
"""NT-Xent temperature (SimCLR's Table 5 sweeps 0.05-1; 0.1-0.5 are its better values)."""


def cnn(seed: int, dim: int) -> nn.Sequential:
    """(N, 784) -> (N, dim): two 3x3 conv layers (16, 32 channels) with 2x2 max-pooling,
    then a linear map of the 32 x 7 x 7 features to ``dim`` (no final activation: signed
    features for the cosines, like the MAE's)."""
    with seeded(seed):
        return nn.Sequential(
            nn.Unflatten(1, (1, 28, 28)),
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 7 * 7, dim))


def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One random view of each image (N, 784): resized crop (scale 0.6-1 of the side, at a
    random place inside the image), horizontal flip with probability 1/2, brightness x
    U(0.6, 1.4), clamped to [0, 1]. Parameters drawn on the host from ``gen``."""
    n = len(x)
    scale = 0.6 + 0.4 * torch.rand(n, generator=gen)
    flip = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0)
    shift = (1 - scale)[:, None] * (2 * torch.rand(n, 2, generator=gen) - 1)  # stays inside
    bright = 0.6 + 0.8 * torch.rand(n, 1, generator=gen)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0] = scale * flip
    theta[:, 1, 1] = scale
    theta[:, :, 2] = shift
    dev = x.device
    grid = F.affine_grid(theta.to(dev), [n, 1, 28, 28], align_corners=False)
    views = F.grid_sample(x.view(n, 1, 28, 28), grid, align_corners=False)
    return (views.reshape(n, 784) * bright.to(dev)).clamp(0.0, 1.0)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """SimCLR's loss: for each of the 2B views, cross-entropy of picking its partner among
    the other 2B - 1 views by cosine / temperature."""
    z = F.normalize(torch.cat([z1, z2]), dim=1)                 # (2B, p)
    b = len(z1)
    sim = z @ z.T / temperature
    sim = sim.masked_fill(torch.eye(2 * b, dtype=torch.bool, device=z.device), float("-inf"))
    partner = torch.cat([torch.arange(b, 2 * b), torch.arange(0, b)]).to(z.device)
    return F.cross_entropy(sim, partner)


def contrastive(x: torch.Tensor, cfg, dev, epochs: int, batch_size: int = 256):
    """The label-free SimCLR-style CNN (module docstring) on images ``x`` (N, 784); returns
    the encoder and the per-epoch records (``train_loss``: the mean NT-Xent). Streams:
    ``("init", "contrastive")``, ``("pretrain", "contrastive", ...)``."""
    if len(x) < 2:
        raise ModelError(f"trainref contrastive: {len(x)} image(s); NT-Xent needs >= 2")
    enc = cnn(seeds.child(cfg.seed, "init", "contrastive"), cfg.dim)
    with seeded(seeds.child(cfg.seed, "init", "projection")):
        proj = nn.Sequential(nn.Linear(cfg.dim, cfg.dim), nn.ReLU(), nn.Linear(cfg.dim, 32))
    net = dev.compile(nn.Sequential(enc, proj))
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "pretrain", "contrastive",
                                                    "augment"))

    def loss(idx):
        if len(idx) < 2:      # a last batch of one image has no negative: skip its pair
            return net(x[idx]).sum() * 0.0
        return nt_xent(net(augment(x[idx], gen)), net(augment(x[idx], gen)),
                       CONTRASTIVE_TEMPERATURE)

    history = train_minibatch(dev, net.parameters(), loss, len(x), epochs=epochs,
                              batch_size=batch_size, lr=1e-3,
                              seed=seeds.child(cfg.seed, "pretrain", "contrastive", "order"),
                              scope="train/pretrain/contrastive")
    return enc, history


def supervised(x: torch.Tensor, y: torch.Tensor, cfg, dev, epochs: int) -> nn.Module:
    """The same CNN trained with a linear head on a clean labelled split ``(x, y)``; returns
    the encoder (an upper bound, module docstring)."""
    enc = cnn(seeds.child(cfg.seed, "init", "supervised"), cfg.dim)
    with seeded(seeds.child(cfg.seed, "init", "supervised_head")):
        head = nn.Linear(cfg.dim, int(y.max()) + 1)
    net = dev.compile(nn.Sequential(enc, head))
    train_minibatch(dev, net.parameters(), lambda idx: F.cross_entropy(net(x[idx]), y[idx]),
                    len(x), epochs=epochs, batch_size=cfg.batch_size, lr=1e-3,
                    seed=seeds.child(cfg.seed, "pretrain", "supervised", "order"),
                    scope="train/pretrain/supervised")
    return enc


def disjoint_split(x: np.ndarray, y: np.ndarray, used: int, size: int):
    """Images ``used .. used + size - 1`` of a training set whose first ``used`` images feed
    the run (references, validation, pool): the supervised encoder's clean split, disjoint
    from them and from the test set (a separate file)."""
    if size < 1 or used + size > len(x):
        raise ModelError(f"trainref supervised split: images {used}..{used + size - 1} asked, "
                         f"the training set has {len(x)}; lower its size or the run's train")
    return x[used:used + size], y[used:used + size]


@torch.no_grad()
def nearest_reference_accuracy(h_ref: torch.Tensor, y_ref: torch.Tensor, h: torch.Tensor,
                               y: torch.Tensor) -> float:
    """Accuracy of labelling each row of ``h`` with its most cosine-similar reference's
    class (features centred on the mean of ``h``, as phase II-III centre them)."""
    mu = h.mean(0)
    s = F.normalize(h - mu, dim=1) @ F.normalize(h_ref - mu, dim=1).T
    return float((y_ref[s.argmax(1)] == y).float().mean())
