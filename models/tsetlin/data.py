"""The Tsetlin machine's data: booleanised digits and Fashion-MNIST, Noisy XOR, k-bit operators.

Every card data set is a :class:`models.shared.datasets.Dataset` of uint8 booleans (N, o):

- ``digits``: scikit-learn's digits, pixels 0..16 as a 3-level thermometer (64 x 3 = 192 bits);
- ``fashion-mnist``: pixel > 75 (of 255; the threshold of pyTsetlinMachine's MNIST demo),
  784 bits;
- ``noisy-xor``: the Noisy XOR set of the TM literature (Granmo 2018): y = x1 XOR x2
  over 12 random bits, 40% of the training labels flipped, a clean test set.

:func:`operator_patterns` gives the inputs of the convergence study (Jiao et al., ICLR 2026):
every pattern of k relevant and q irrelevant bits with its AND / OR / XOR label.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from models.errors import DatasetError
from models.shared import datasets
from models.shared.datasets import Dataset
from models.shared.encoders import booleanise
from sim import seeds
from sim.errors import ModelError

BOOLEANISE = {"digits": {"method": "thermometer", "levels": 3},
              "fashion-mnist": {"method": "threshold", "threshold": 75 / 255}}
"""How each image set becomes booleans (``models.shared.encoders.booleanise``)."""
DATASETS = ("digits", "fashion-mnist", "noisy-xor")
FEATURES = {"digits": (64 * 3, 10), "fashion-mnist": (28 * 28, 10), "noisy-xor": (12, 2)}
"""(booleans o, classes) of each data set as :func:`load` gives it (digits: 64 pixels x a
3-level thermometer; Noisy XOR: :func:`noisy_xor`'s 12 bits), known without loading it:
the machine's size is checked against the device before any data is read."""


def noisy_xor(n_train: int = 5000, n_test: int = 5000, n_bits: int = 12, noise: float = 0.4,
              seed: int = 0):
    """The Noisy XOR set of the TM literature: y = x1 XOR x2 over ``n_bits`` random bits, a
    ``noise`` share of training labels flipped, a clean test set. Returns
    ``(x_train, y_train, x_test, y_test)``."""
    rs = np.random.default_rng(seed)
    x = rs.integers(0, 2, (n_train + n_test, n_bits)).astype(np.uint8)
    y = (x[:, 0] ^ x[:, 1]).astype(np.int64)
    flip = rs.random(n_train) < noise
    y_tr = np.where(flip, 1 - y[:n_train], y[:n_train])
    return x[:n_train], y_tr, x[n_train:], y[n_train:]


def noisy_xor_set(seed: int = 0) -> Dataset:
    """:func:`noisy_xor` with its defaults as a Dataset (two classes, 12 booleans)."""
    x_tr, y_tr, x_te, y_te = noisy_xor(seed=seeds.child(seed, "data"))
    return Dataset("noisy-xor", x_tr, y_tr, x_te, y_te, 2, (x_tr.shape[1],),
                   f"procedural: noisy_xor(seed=seeds.child({seed}, 'data')), 40% training "
                   "labels flipped")


def load(dataset: str, seed: int = 0, limit_train: int | None = None,
         limit_test: int | None = None) -> Dataset:
    """Booleanised ``dataset``; ``seed`` draws Noisy XOR; the limits keep the first samples
    of each split (Fashion-MNIST: read from the files that way)."""
    name = dataset.replace("_", "-")
    if name == "noisy-xor":
        d = noisy_xor_set(seed)
    elif name in BOOLEANISE:
        kw = {"limit_train": limit_train, "limit_test": limit_test} \
            if name == "fashion-mnist" else {}
        raw = datasets.load(name, **kw)
        b = BOOLEANISE[name]
        x_tr, x_te = booleanise(raw.x_train, **b), booleanise(raw.x_test, **b)
        d = Dataset(name, x_tr, raw.y_train, x_te, raw.y_test, raw.n_classes,
                    (x_tr.shape[1],), f"{raw.source}; booleanised {b}")
    else:
        raise DatasetError(f"tsetlin: dataset {dataset!r}; one of {', '.join(DATASETS)}")
    if limit_train is None and limit_test is None:
        return d
    tr, te = slice(limit_train), slice(limit_test)
    return dataclasses.replace(d, x_train=d.x_train[tr], y_train=d.y_train[tr],
                               x_test=d.x_test[te], y_test=d.y_test[te])


OPERATORS = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}


def operator_patterns(op: str, irrelevant: int = 0, k: int = 2):
    """All inputs (x1..xk, + irrelevant bits) and their noise-free labels: the k-bit AND /
    OR / XOR (parity) of the first k bits."""
    if op not in OPERATORS:
        raise ModelError(f"operator_patterns: op {op!r}; one of {', '.join(OPERATORS)}")
    if k < 2 or irrelevant < 0 or k + irrelevant > 16:
        raise ModelError(f"operator_patterns: k = {k}, irrelevant = {irrelevant}; need k >= 2, "
                         "irrelevant >= 0, k + irrelevant <= 16")
    n = k + irrelevant
    x = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(np.uint8)
    y = x[:, 0].copy()
    for i in range(1, k):
        y = OPERATORS[op](y, x[:, i])
    return x, y.astype(np.int64)
