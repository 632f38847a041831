"""Binary data for BEP and its baselines: bit-coded static sets and procedural sequence sets.

Every loader returns a :class:`models.shared.datasets.Dataset` whose inputs are already bits
(uint8 0/1, bit 1 <-> +1 activation), so the bitwise engine never sees a float. Static sets
have ``x`` of shape (N, F); sequence sets (N, T, F), one F-bit vector per time step
(:func:`is_sequence`, :func:`bits_per_step`). Encodings follow the paper's experimental
setup (Colombo et al., arXiv:2512.04189):

- ``random-prototypes``: the generator of the precursor paper's Random Prototypes task
  (Colombo et al. 2025): 10 random +/-1 prototypes of 1000 bits; each sample is a prototype with
  every bit flipped independently with probability 0.44; 12,000 samples, seed 42.
- ``fashion-mnist``: per-pixel median of the training images as threshold (bit = pixel >
  median), the "median binarisation" of the paper.
- ``digits``: scikit-learn digits, 4-level thermometer code per pixel (64 x 4 = 256 bits).

Recurrent sets:

- ``cylinder-bell-funnel``: Saito (1994), "Local feature extraction and its applications
  using a library of bases", PhD thesis, Yale; the generator as used for the UCR "CBF"
  set: length 128, ``a ~ U{16..32}``, ``b - a ~ U{32..96}``, ``eta, eps ~ N(0, 1)``;
  cylinder ``(6 + eta) 1[a, b](t) + eps(t)``, bell ``... (t - a) / (b - a)``, funnel
  ``... (b - t) / (b - a)``.
- ``synthetic-control``: Alcock & Manolopoulos (1999), "Time-series similarity queries
  employing a feature-based approach" (UCI "Synthetic Control Chart Time Series"; Pham &
  Chan 1998): length 60, ``m = 30``, ``s = 2``, ``r ~ U(-3, 3)``; normal ``m + r s``;
  cyclic ``+ a sin(2 pi t / T)``, ``a, T ~ U(10, 15)``; increasing / decreasing trend
  ``+/- g t``, ``g ~ U(0.2, 0.5)``; upward / downward shift ``+/- k 1[t >= t3]``,
  ``t3 ~ U(n/3, 2n/3)``, ``k ~ U(7.5, 20)``.
- ``digits-rows``: digits read row by row: 8 steps of 8 pixels x 4-level thermometer.

The sequence sets stand in for the paper's 30 UCR archives, which cannot be downloaded
here. Each series is mean-pooled over ``pool`` consecutive points (CBF: 4 -> 32 steps,
Synthetic Control: 2 -> 30 steps) to keep BEP-TT's chains short, min-max scaled with the
training set's range and thermometer coded (8 levels per step).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from models.errors import DatasetError
from models.shared import datasets, encoders
from models.shared.datasets import Dataset
from sim import seeds


def is_sequence(data: Dataset) -> bool:
    """True for the recurrent sets: inputs (N, T, F)."""
    return data.x_train.ndim == 3


def bits_per_step(data: Dataset) -> int:
    """Bits per sample (static sets) or per time step (sequences): the last axis of ``x``."""
    return int(data.x_train.shape[-1])


def _bits(name, x_tr, y_tr, x_te, y_te, n_classes, source) -> Dataset:
    return Dataset(name, x_tr, y_tr, x_te, y_te, n_classes, tuple(x_tr.shape[1:]), source)


def random_prototypes(n_samples: int = 12000, n_features: int = 1000, n_classes: int = 10,
                      flip: float = 0.44, seed: int = 42, test_fraction: float = 1 / 6) -> Dataset:
    """Random Prototypes: noisy copies of ``n_classes`` random bit prototypes.

    Balanced classes (sizes differ by at most one); each bit of a sample is its class
    prototype's bit flipped with probability ``flip``. ``seed`` fixes prototypes, noise and
    the stratified split (10,000 train / 2,000 test by default).
    """
    n_samples = datasets.check_int("random_prototypes: n_samples", n_samples, 1)
    n_features = datasets.check_int("random_prototypes: n_features", n_features, 1)
    n_classes = datasets.check_int("random_prototypes: n_classes", n_classes, 2)
    if not 0.0 <= flip <= 0.5:
        raise DatasetError(f"random_prototypes: flip = {flip}: must lie in [0, 0.5] "
                           "(0.5 erases the class)")
    g = datasets.rng(seed)
    protos = g.integers(0, 2, size=(n_classes, n_features), dtype=np.uint8)  # (C, F)
    y = g.permutation(np.arange(n_samples) % n_classes).astype(np.int64)     # (N,)
    noise = (g.random((n_samples, n_features)) < flip).astype(np.uint8)     # (N, F)
    x = protos[y] ^ noise
    x_tr, x_te, y_tr, y_te = datasets._split(x, y, n_classes, test_fraction, seed,
                                             "random_prototypes")
    return _bits("random-prototypes", x_tr, y_tr, x_te, y_te, n_classes,
                 f"procedural: random_prototypes(n_samples={n_samples}, n_features="
                 f"{n_features}, n_classes={n_classes}, flip={flip}, seed={seed})")


def fashion_mnist_bits(limit_train: int | None = None, limit_test: int | None = None) -> Dataset:
    """Fashion-MNIST, 784 bits per image by per-pixel median threshold."""
    d = datasets.fashion_mnist(limit_train=limit_train, limit_test=limit_test)
    x_tr, x_te = encoders.median_binarize(d.x_train, d.x_test)
    return Dataset("fashion-mnist", x_tr, d.y_train, x_te, d.y_test, 10, d.input_shape,
                   d.source + ", per-pixel median binarised")


def digits_bits(seed: int = 0, levels: int = 4) -> Dataset:
    """scikit-learn digits, ``levels``-bit thermometer per pixel (64 x levels bits)."""
    d = datasets.digits(seed=seed)
    return _bits("digits", encoders.thermometer(d.x_train, levels), d.y_train,
                 encoders.thermometer(d.x_test, levels), d.y_test, 10,
                 d.source + f", {levels}-level thermometer")


def digits_rows(seed: int = 0, levels: int = 4) -> Dataset:
    """Digits read row by row: 8 time steps of 8 pixels x ``levels`` thermometer bits."""
    d = datasets.digits(seed=seed)

    def enc(x):  # (N, 64) -> (N, 8, 8 * levels), row r is step r
        return encoders.thermometer(x.reshape(-1, 8), levels).reshape(len(x), 8, 8 * levels)

    return _bits("digits-rows", enc(d.x_train), d.y_train, enc(d.x_test), d.y_test, 10,
                 d.source + f", rows as 8 steps, {levels}-level thermometer")


def cbf_series(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` raw Cylinder-Bell-Funnel series (n, 128) float64 and labels 0/1/2 (balanced)."""
    g = datasets.rng(seed)
    t = np.arange(1, 129)[None, :]                                   # (1, 128)
    y = g.permutation(np.arange(n) % 3).astype(np.int64)
    a = g.integers(16, 33, size=(n, 1))
    b = a + g.integers(32, 97, size=(n, 1))
    amp = 6.0 + g.standard_normal((n, 1))
    box = ((t >= a) & (t <= b)).astype(np.float64)                   # (n, 128)
    shape = np.where(y[:, None] == 0, 1.0,
                     np.where(y[:, None] == 1, (t - a) / (b - a), (b - t) / (b - a)))
    return amp * box * shape + g.standard_normal((n, 128)), y


def synthetic_control_series(n: int, seed: int, length: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """``n`` raw Synthetic Control Chart series (n, length) and labels 0..5 (balanced).

    Classes: 0 normal, 1 cyclic, 2 increasing trend, 3 decreasing trend, 4 upward shift,
    5 downward shift.
    """
    g = datasets.rng(seed)
    t = np.arange(length)[None, :].astype(np.float64)
    y = g.permutation(np.arange(n) % 6).astype(np.int64)[:, None]
    x = 30.0 + g.uniform(-3, 3, (n, length)) * 2.0
    a, period = g.uniform(10, 15, (n, 1)), g.uniform(10, 15, (n, 1))
    grad = g.uniform(0.2, 0.5, (n, 1))
    t3 = g.uniform(length / 3, 2 * length / 3, (n, 1))
    k = g.uniform(7.5, 20, (n, 1))
    x += np.where(y == 1, a * np.sin(2 * np.pi * t / period), 0.0)
    x += np.where(y == 2, grad * t, 0.0) - np.where(y == 3, grad * t, 0.0)
    step = (t >= t3).astype(np.float64)
    x += np.where(y == 4, k * step, 0.0) - np.where(y == 5, k * step, 0.0)
    return x, y[:, 0]


def _sequence_bits(name, series, y_tr_te, pool, levels, source) -> Dataset:
    (x_tr, x_te), (y_tr, y_te) = series, y_tr_te

    def pooled(x):  # (N, L) -> (N, L // pool)
        return x[:, :x.shape[1] // pool * pool].reshape(len(x), -1, pool).mean(axis=2)

    p_tr, p_te = pooled(x_tr), pooled(x_te)
    lo, hi = p_tr.min(), p_tr.max()  # the training set's range scales both splits

    def enc(p):  # (N, T) -> (N, T, levels)
        u = np.clip((p - lo) / (hi - lo), 0.0, 1.0)
        return encoders.thermometer(u.reshape(-1, 1), levels).reshape(len(p), p.shape[1],
                                                                      levels)

    n_classes = int(max(y_tr.max(), y_te.max())) + 1
    return _bits(name, enc(p_tr), y_tr, enc(p_te), y_te, n_classes,
                 f"{source}; mean-pooled by {pool}, {levels}-level thermometer per step")


def cylinder_bell_funnel(n_train: int = 600, n_test: int = 300, seed: int = 0, pool: int = 4,
                         levels: int = 8) -> Dataset:
    """Cylinder-Bell-Funnel sequences (Saito 1994), bit coded; 3 classes."""
    x_tr, y_tr = cbf_series(n_train, seeds.child(seed, "train"))
    x_te, y_te = cbf_series(n_test, seeds.child(seed, "test"))
    return _sequence_bits("cylinder-bell-funnel", (x_tr, x_te), (y_tr, y_te), pool, levels,
                          f"procedural: Saito 1994 CBF generator, seed={seed}")


def synthetic_control(n_train: int = 600, n_test: int = 300, seed: int = 0, pool: int = 2,
                      levels: int = 8) -> Dataset:
    """Synthetic Control Chart sequences (Alcock & Manolopoulos 1999), bit coded; 6 classes."""
    x_tr, y_tr = synthetic_control_series(n_train, seeds.child(seed, "train"))
    x_te, y_te = synthetic_control_series(n_test, seeds.child(seed, "test"))
    return _sequence_bits("synthetic-control", (x_tr, x_te), (y_tr, y_te), pool, levels,
                          f"procedural: Alcock & Manolopoulos 1999 generator, seed={seed}")


LOADERS = {"random-prototypes": random_prototypes, "fashion-mnist": fashion_mnist_bits,
           "digits": digits_bits, "digits-rows": digits_rows,
           "cylinder-bell-funnel": cylinder_bell_funnel, "synthetic-control": synthetic_control}
STATIC = ("random-prototypes", "fashion-mnist", "digits")
SEQUENCES = ("cylinder-bell-funnel", "synthetic-control", "digits-rows")


def load(name: str, **kwargs) -> Dataset:
    """A bit-coded dataset by name (``_`` and ``-`` both work); ``kwargs`` go to its loader."""
    key = name.lower().replace("_", "-") if isinstance(name, str) else name
    if key not in LOADERS:
        raise DatasetError(f"unknown bit dataset {name!r}; known: {', '.join(sorted(LOADERS))}")
    return LOADERS[key](**kwargs)


@functools.lru_cache(maxsize=4)
def cached(name: str, **kwargs) -> Dataset:
    """:func:`load`, memoised (a study or a bench reloads the same set for every seed; the
    arrays are shared, and nothing here writes to them)."""
    return load(name, **kwargs)


def limited(data: Dataset, limit_train: int | None, limit_test: int | None) -> Dataset:
    """The first ``limit_train`` training and ``limit_test`` test samples (None: all)."""
    if limit_train is None and limit_test is None:
        return data
    tr, te = slice(limit_train), slice(limit_test)
    return dataclasses.replace(data, x_train=data.x_train[tr], y_train=data.y_train[tr],
                               x_test=data.x_test[te], y_test=data.y_test[te],
                               source=f"{data.source}; first {limit_train or 'all'} train / "
                                      f"{limit_test or 'all'} test samples")


def for_config(name: str, limit_train: int | None = None,
               limit_test: int | None = None) -> Dataset:
    """What the card loads for a config: ``name`` with its limits. Fashion-MNIST passes them
    to the file reader (so its median threshold comes from the kept training images, as the
    quick preset has always done); the other sets are cut after coding."""
    key = name.lower().replace("_", "-")
    if key == "fashion-mnist":
        return cached(key, limit_train=limit_train, limit_test=limit_test)
    return limited(cached(key), limit_train, limit_test)
