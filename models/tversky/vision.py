"""Frozen image encoders, data-domain prototypes, and the prototype plot for Tversky heads.

The paper's frozen-backbone claim uses an ImageNet ResNet-50; offline we stand in a small
conv encoder that is either *random and fixed* (``random``: seeded He-uniform conv weights,
never trained) or *trained once* (``trained``: one epoch with a linear probe on a slice of
the training set, then frozen). Both end in a fixed standardisation (train-set mean and
std per feature), so features are signed and the bank's "x has feature k" test
``x . f_k > 0`` is not trivially true for every non-negative ReLU feature.

Prototype visualisation (the paper's "unified interpretation" of both layers): the exact
parameterisation was not retrievable, so we use this reading: each prototype is the
encoder's image of a learned input-space picture, ``pi_i = g(sigmoid(z_i))`` with ``z_i``
(1, 28, 28), trained through the frozen encoder ``g`` against the trained head's frozen
bank and contrast weights. The same is done for a linear head (weight rows
``g(sigmoid(z_i))`` plus a bias), and :func:`plot_prototypes` draws both rows of pictures
as their change from their start (the mean training image): what training learned.
"""
from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure
from torch import nn

from models.shared.training import seeded
from models.tversky.card import ENCODERS
from sim.errors import ModelError

__all__ = ["ENCODERS", "BlockMean", "DataDomainPrototypes", "PrototypeLinear", "Standardize",
           "conv_encoder", "plot_prototypes"]


class Standardize(nn.Module):
    """``(x - mean) / std`` with fixed buffers (set once from training features)."""

    def __init__(self, width: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(width))
        self.register_buffer("inv_std", torch.ones(width))

    def fit(self, feats: torch.Tensor) -> Standardize:
        self.mean.copy_(feats.mean(0))
        self.inv_std.copy_(1.0 / (feats.std(0) + 1e-6))
        return self

    def forward(self, x):
        return (x - self.mean) * self.inv_std


class BlockMean(nn.Module):
    """(N, C, H, W) -> (N, C, 2, 2): the mean of each quadrant (H, W even).

    A view and a mean, rather than ``AdaptiveAvgPool2d``, because the ledger prices means
    (a reduction) but has no formula for aten's pooling kernels.
    """

    def forward(self, x):
        _, c, h, w = x.shape
        # -1, not n: the batch size stays dynamic in the ONNX graph
        return x.reshape(-1, c, 2, h // 2, 2, w // 2).mean(dim=(3, 5))


def conv_encoder(seed: int, width: int = 32) -> nn.Sequential:
    """(N, 784) pixels -> (N, 8 * width) features: two strided convs, ReLU, quadrant means.

    28x28 -> conv5 s2 p2 -> 14x14 -> conv3 s2 p2 -> 8x8 -> quadrant means 2x2: ~1.4 M MACs
    per image at width 32, small enough to encode 60k images in a CPU minute.
    """
    with seeded(seed):  # seeded init without touching global state
        return nn.Sequential(
            nn.Unflatten(1, (1, 28, 28)),
            nn.Conv2d(1, width, 5, stride=2, padding=2), nn.ReLU(),          # (N, w, 14, 14)
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=2), nn.ReLU(),  # (N, 2w, 8, 8)
            BlockMean(), nn.Flatten(),                                        # (N, 8w)
            Standardize(8 * width))


class DataDomainPrototypes(nn.Module):
    """``P`` prototypes that live in input space: ``forward() = encoder(sigmoid(z))`` (P, d).

    The encoder is frozen (its parameters do not train) but gradients pass through it to
    ``z``; ``images()`` returns the pictures (P, 28, 28) in [0, 1].

    ``z`` starts at the logit of the mean training image (the same for every prototype,
    so no class is favoured) plus small seeded noise to break the tie. A uniform grey start
    left the prototypes with no bank feature (``pi . f_k <= 0`` for all k), where the
    Tversky layer has no gradient; a start at random training images kept those images
    visible in the result, whatever class the prototype came to stand for.
    """

    def __init__(self, encoder: nn.Module, n: int, seed: int, pool: torch.Tensor):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        mean = pool.detach().reshape(len(pool), 784).mean(0).cpu().clamp(0.05, 0.95)
        noise = 0.1 * torch.randn(n, 784, generator=gen)
        self.z = nn.Parameter(torch.logit(mean).expand(n, 784) + noise)
        # each picture's start, so the plot can show only what training changed
        self.register_buffer("start", torch.sigmoid(self.z.detach()).reshape(n, 28, 28))
        self.encoder = [encoder]  # a list: not registered, so its weights are not ours

    def images(self) -> torch.Tensor:
        return torch.sigmoid(self.z).reshape(-1, 28, 28)

    def forward(self) -> torch.Tensor:
        return self.encoder[0](torch.sigmoid(self.z))  # (P, d)


class PrototypeLinear(nn.Module):
    """A linear layer whose weight rows are given prototypes: ``x @ pi^T + b``."""

    def __init__(self, prototypes: nn.Module, out_features: int):
        super().__init__()
        self.prototypes = prototypes
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        return x @ self.prototypes().T + self.bias


def plot_prototypes(rows: dict[str, np.ndarray], class_names=None, title: str = "") -> Figure:
    """One row of pictures per head: ``rows[name]`` is (P, 28, 28) of changes in [-1, 1].

    Red: pixels training made brighter than the prototype's start; blue: darker.
    """
    if not rows:
        raise ModelError("plot_prototypes: rows is empty; expected {head name: (P, 28, 28)}")
    n = max(len(v) for v in rows.values())
    fig = Figure(figsize=(1.1 * n + 1.2, 1.25 * len(rows) + 0.5), layout="constrained")
    axes = fig.subplots(len(rows), n, squeeze=False)
    for r, (name, imgs) in enumerate(rows.items()):
        imgs = np.asarray(imgs)
        if imgs.ndim != 3:
            raise ModelError(f"plot_prototypes: rows[{name!r}] has shape {imgs.shape}, "
                             "expected (P, H, W)")
        for c in range(n):
            ax = axes[r, c]
            ax.set_xticks([])
            ax.set_yticks([])
            if c < len(imgs):
                lim = max(float(np.abs(imgs).max()), 1e-6)
                ax.imshow(imgs[c], cmap="RdBu_r", vmin=-lim, vmax=lim)
            if r == 0 and class_names:
                ax.set_title(class_names[c], fontsize=7)
        axes[r, 0].set_ylabel(name, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig
