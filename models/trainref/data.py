"""The TrainRef data: Fashion-MNIST split into D_ref, a clean validation set and a noisy pool.

Noise models of the paper's experiments (TrainRef, Sec. 5, CIFAR-100 protocol), read for
Fashion-MNIST: *symmetric* r: each pool label is replaced, with probability r, by one of the
other 9 classes drawn uniformly (so the realised noise rate is r); *asymmetric* r: with
probability r the label of T-shirt->Shirt, Pullover->Coat, Sneaker->Ankle boot,
Sandal->Sneaker, Shirt->T-shirt (the visually confusable pairs; other classes keep theirs).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.shared import datasets
from sim import seeds
from sim.errors import ModelError

ASYMMETRIC = {0: 6, 2: 4, 7: 9, 5: 7, 6: 0}
"""Fashion-MNIST flips of the asymmetric noise: T-shirt->Shirt, Pullover->Coat,
Sneaker->Boot, Sandal->Sneaker, Shirt->T-shirt."""

NOISES = ("symmetric", "asymmetric")


@dataclass
class NoisySplit:
    """D_ref (true labels), a clean validation set (for temperature scaling), the noisy pool
    (given labels ``y_noisy``, true labels ``y_true`` kept only to score), the test set."""

    x_ref: np.ndarray
    y_ref: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_pool: np.ndarray
    y_noisy: np.ndarray
    y_true: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    source: str

    @property
    def realised_noise(self) -> float:
        return float(np.mean(self.y_noisy != self.y_true))


def corrupt(y: np.ndarray, noise: str, rate: float, seed: int, classes: int = 10) -> np.ndarray:
    """``y`` with ``noise`` label noise at ``rate`` (module docstring), drawn from ``seed``."""
    if noise not in NOISES:
        raise ModelError(f"trainref: noise {noise!r}: must be one of {', '.join(NOISES)}")
    if not 0.0 <= rate < 1.0:
        raise ModelError(f"trainref: noise rate {rate}: must be in [0, 1)")
    rng = np.random.default_rng(seed)
    flip = rng.random(len(y)) < rate
    out = y.copy()
    if noise == "symmetric":
        # a shift of 1..C-1 classes: uniform over the other classes
        shift = rng.integers(1, classes, size=len(y))
        out[flip] = (y[flip] + shift[flip]) % classes
    else:
        mapped = np.array([ASYMMETRIC.get(c, c) for c in range(classes)])
        out[flip] = mapped[y[flip]]
    return out


def split(x: np.ndarray, y: np.ndarray, x_test, y_test, refs_per_class: int, val: int,
          noise: str, rate: float, seed: int, source: str = "") -> NoisySplit:
    """Draw ``refs_per_class`` references per class and ``val`` validation images (true
    labels) from ``x``, corrupt the rest (``corrupt``); the draws from the named streams
    ``"split"`` and ``"noise"`` of the run seed ``seed``."""
    classes = int(y.max()) + 1
    rng = seeds.rng(seed, "split")
    order = rng.permutation(len(y))
    ref = np.concatenate([order[y[order] == c][:refs_per_class] for c in range(classes)])
    rest = np.setdiff1d(order, ref, assume_unique=True)
    rest = rest[rng.permutation(len(rest))]
    if len(rest) <= val:
        raise ModelError(f"trainref: {len(y)} training images leave no noisy pool after "
                         f"{len(ref)} references and {val} validation images; use more")
    v, pool = rest[:val], rest[val:]
    return NoisySplit(x[ref], y[ref], x[v], y[v], x[pool],
                      corrupt(y[pool], noise, rate, seeds.child(seed, "noise"), classes), y[pool],
                      x_test, y_test, source)


def load(dataset: str, cfg) -> datasets.Dataset:
    """The first ``cfg.train`` / ``cfg.test`` Fashion-MNIST images (split per run)."""
    if dataset not in ("fashion-mnist", "fashion_mnist"):
        raise ModelError(f"trainref: dataset {dataset!r}: only 'fashion-mnist' is supported")
    return datasets.fashion_mnist(limit_train=cfg.train, limit_test=cfg.test)
