"""Images for the glimpse tasks: scikit-learn digits and Fashion-MNIST (``models.shared.
datasets``), as (N, h, w) arrays in [0, 1], per dataset name of the card.

``digits``/``fashion-mnist`` are classification (the image is the canvas);
``digits-locate``/``fashion-locate`` place the image as an object on a larger empty canvas
and the target is its centre (Fashion-MNIST 2x2-mean-pooled to 14x14 first, so the object
covers a fifth of the 32 x 32 canvas as the 8 x 8 digit covers a sixth of 20 x 20).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.shared import datasets

DATASETS = ("digits", "fashion-mnist", "digits-locate", "fashion-locate")


@dataclass(frozen=True)
class GlimpseData:
    """Train/test images (N, h, w) float32 in [0, 1] and labels, and the task they serve."""

    task: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    source: str


def load(dataset: str, n_train: int, n_test: int, seed: int) -> GlimpseData:
    """The images of ``dataset`` (one of :data:`DATASETS`); at most ``n_train``/``n_test``."""
    task = "locate" if dataset.endswith("-locate") else "classify"
    base = dataset.removesuffix("-locate")
    base = "fashion-mnist" if base == "fashion" else base
    if base == "digits":
        d = datasets.digits(seed=seed, flatten=False)
    else:
        d = datasets.fashion_mnist(limit_train=n_train, limit_test=n_test, flatten=False)
    xtr, xte = d.x_train[:n_train], d.x_test[:n_test]
    if base == "fashion-mnist" and task == "locate":
        def pool(x):   # (N, 28, 28) -> (N, 14, 14), 2 x 2 means
            return x.reshape(len(x), 14, 2, 14, 2).mean((2, 4)).astype(np.float32)
        xtr, xte = pool(xtr), pool(xte)
    return GlimpseData(task, np.ascontiguousarray(xtr, np.float32), d.y_train[:n_train],
                       np.ascontiguousarray(xte, np.float32), d.y_test[:n_test], d.n_classes,
                       d.source)
