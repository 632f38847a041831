"""The data of the Tversky experiments: Fashion-MNIST slices for the heads, XOR's four points.

The character GPT's corpus (the license texts) is read by ``gpt.license_corpus``.
"""
from __future__ import annotations

import torch

from models.shared import datasets
from sim.errors import ModelError

XOR_X = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
XOR_Y = torch.tensor([0, 1, 1, 0])
"""XOR: the paper's one-layer test (Sec. 4.1); not linearly separable."""


def load(dataset: str, cfg) -> datasets.Dataset:
    """The first ``cfg.train`` training and ``cfg.test`` test images of Fashion-MNIST."""
    if dataset not in ("fashion-mnist", "fashion_mnist"):
        raise ModelError(f"tversky: dataset {dataset!r}: only 'fashion-mnist' is supported")
    return datasets.fashion_mnist(limit_train=cfg.train, limit_test=cfg.test)
