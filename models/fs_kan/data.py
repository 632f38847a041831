"""The two low-data tasks of the FS-KAN benchmark, generated from a seed, and their loader.

- :func:`signal_sets`: sets of noisy copies of one periodic signal (sine, square or
  sawtooth), the synthetic signal task of DSS (Maron et al. 2020) that FS-KAN's Fig. 4
  uses, at reduced size. Symmetry ``S_n x C_T``: the copies are unordered and the class
  does not depend on a circular shift in time.
- :func:`fashion_point_sets`: Fashion-MNIST images as point sets: ``n`` pixels sampled
  among those brighter than a threshold, each a point ``(col, row, intensity)`` in
  [-1, 1]^3. Symmetry ``S_n``. (Our stand-in for the paper's ModelNet40 point clouds,
  which cannot ship.)

Both return ``(x, y)`` with ``x`` float32 ``(N, points, channels)`` and ``y`` int64 ``(N,)``;
:func:`load` wraps a task's train/test split in the shared ``Dataset`` (what the card's
``load_data`` hands to ``simulate``).
"""
from __future__ import annotations

import numpy as np

from models.errors import DatasetError
from models.shared import datasets
from models.shared.datasets import Dataset
from sim import seeds

SIGNAL_CLASSES = ("sine", "square", "sawtooth")
TASKS = ("signal-sets", "fashion-points")
SIGNAL = {"n": 6, "length": 12, "noise": 1.0}   # 6 copies x 12 samples: S_6 x C_12, 24 orbits
FASHION_POINTS = 64                        # bright pixels per image
TEST_SEED = 12345                          # one fixed signal test set for every run


def _positive(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise DatasetError(f"{name} = {v!r}: must be an integer >= 1")
    return int(v)


def signal_sets(n_sets: int, n: int = 8, length: int = 16, noise: float = 1.0,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n_sets`` sets of ``n`` noisy copies of a random signal of ``length`` samples.

    Each set: a class (uniform over sine/square/sawtooth), a frequency of 1..3 cycles per
    window, a phase in [0, 2pi) and an amplitude in [0.5, 1]; every copy adds its own
    Gaussian noise of std ``noise`` (the set must be pooled to see the class). Balanced
    classes are not enforced; the draw is seeded.

    Returns ``x`` (n_sets, n * length, 1), points flattened element-major (i * length + t),
    and ``y`` (n_sets,).
    """
    n_sets, n, length = (_positive(k, v) for k, v in
                         (("n_sets", n_sets), ("n", n), ("length", length)))
    if not noise >= 0:
        raise DatasetError(f"signal_sets: noise = {noise}: must be >= 0")
    rng = np.random.default_rng(seed)
    y = rng.integers(3, size=n_sets)
    freq = rng.integers(1, 4, size=n_sets)[:, None]
    phase = rng.uniform(0, 2 * np.pi, size=n_sets)[:, None]
    amp = rng.uniform(0.5, 1.0, size=n_sets)[:, None]
    angle = 2 * np.pi * freq * np.arange(length)[None, :] / length + phase   # (N, T)
    saw = 2 * ((angle / (2 * np.pi)) % 1.0) - 1
    clean = np.select([y[:, None] == 0, y[:, None] == 1],
                      [np.sin(angle), np.where(np.sin(angle) >= 0, 1.0, -1.0)], saw) * amp
    x = clean[:, None, :] + noise * rng.standard_normal((n_sets, n, length))  # (N, n, T)
    return x.reshape(n_sets, n * length, 1).astype(np.float32), y.astype(np.int64)


def images_to_point_sets(images: np.ndarray, n_points: int = 64, threshold: float = 0.3,
                         seed: int = 0) -> np.ndarray:
    """(N, H, W) images in [0, 1] -> (N, n_points, 3) points (col, row, intensity) in [-1, 1].

    ``n_points`` pixels brighter than ``threshold`` are drawn without replacement (with
    replacement when an image has fewer; all pixels when it has none), vectorised over
    images: random keys, bright pixels sorted first, then cyclic reuse of the bright ones.
    """
    if images.ndim != 3:
        raise DatasetError(f"images_to_point_sets: images have shape {images.shape}; "
                           "expected (N, H, W)")
    n_points = _positive("n_points", n_points)
    N, h, w = images.shape
    flat = images.reshape(N, -1)
    bright = flat > threshold
    bright[~bright.any(axis=1)] = True
    keys = np.random.default_rng(seed).random(flat.shape) + (~bright)   # dark pixels last
    order = np.argsort(keys, axis=1)                                    # (N, H*W)
    count = bright.sum(axis=1)                                          # (N,)
    pick = order[np.arange(N)[:, None], np.arange(n_points)[None, :] % count[:, None]]
    rows, cols = np.divmod(pick, w)
    val = np.take_along_axis(flat, pick, axis=1)
    pts = np.stack([cols / (w - 1), rows / (h - 1), val], axis=-1) * 2 - 1
    return pts.astype(np.float32)


def fashion_point_sets(n_train: int, n_test: int, n_points: int = 64, seed: int = 0,
                       data_dir=None):
    """Train/test Fashion-MNIST point sets: the first ``n_train`` of a seeded shuffle of
    the 60000 training images and the first ``n_test`` test images.

    Returns ``(x_train, y_train, x_test, y_test)``.
    """
    n_train = _positive("n_train", n_train)
    n_test = _positive("n_test", n_test)
    if n_train > 60000 or n_test > 10000:
        raise DatasetError(f"fashion_point_sets: n_train = {n_train}, n_test = {n_test}; "
                           "Fashion-MNIST has 60000 training and 10000 test images")
    d = datasets.fashion_mnist(data_dir=data_dir, limit_test=n_test, flatten=False)
    pick = seeds.rng(seed, "pick").permutation(len(d.y_train))[:n_train]
    train_points = seeds.child(seed, "train points")
    return (images_to_point_sets(d.x_train[pick], n_points, seed=train_points), d.y_train[pick],
            images_to_point_sets(d.x_test, n_points, seed=seeds.child(seed, "test points")),
            d.y_test)


def load(task: str, n_train: int, n_test: int, seed: int) -> Dataset:
    """Train/test split of ``task`` (one of :data:`TASKS`); the test set does not depend on
    ``seed`` (signal sets: drawn with :data:`TEST_SEED`; point sets: the first test images)."""
    if task == "signal-sets":
        x_tr, y_tr = signal_sets(n_train, seed=seed, **SIGNAL)
        x_te, y_te = signal_sets(n_test, seed=TEST_SEED, **SIGNAL)
        source = (f"procedural: signal_sets(n={SIGNAL['n']}, length={SIGNAL['length']}, "
                  f"noise={SIGNAL['noise']}, seed={seed}; test seed {TEST_SEED})")
        return Dataset(task, x_tr, y_tr, x_te, y_te, 3, tuple(x_tr.shape[1:]), source)
    if task == "fashion-points":
        x_tr, y_tr, x_te, y_te = fashion_point_sets(n_train, n_test, FASHION_POINTS, seed=seed)
        return Dataset(task, x_tr, y_tr, x_te, y_te, 10, tuple(x_tr.shape[1:]),
                       f"Fashion-MNIST images as {FASHION_POINTS}-point sets (seed {seed})")
    raise DatasetError(f"unknown FS-KAN task {task!r}; tasks are {', '.join(TASKS)}")
