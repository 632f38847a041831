"""Bit encoders, written once: real features in [0, 1] -> uint8 bits for the bitwise rooms.

``binarize`` (one threshold), ``thermometer`` (``levels`` thresholds per feature),
``median_binarize`` (the training set's per-feature median: the image code of BEP,
arXiv:2512.04189) and ``booleanise`` (the Tsetlin machine's choice between the first two). Each
returns uint8 0/1 arrays; a loader wraps them in a ``models.shared.datasets.Dataset``.
"""
from __future__ import annotations

import numpy as np

from models.errors import DatasetError
from models.shared.datasets import check_int


def _unit_interval(x, what: str) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":
        raise DatasetError(f"{what}: x has dtype {x.dtype}; expected real numbers in [0, 1]")
    if not np.all(np.isfinite(x)):
        raise DatasetError(f"{what}: x holds {np.count_nonzero(~np.isfinite(x))} NaN/inf values; "
                           f"expected finite values in [0, 1]")
    if x.size and not (x.min() >= 0 and x.max() <= 1):
        raise DatasetError(f"{what}: x spans [{x.min()}, {x.max()}]; expected values in [0, 1] "
                           f"(scale the data first)")
    return x


def binarize(x, threshold: float = 0.5) -> np.ndarray:
    """One bit per value, set where ``x > threshold``: uint8, same shape as ``x`` (in [0, 1])."""
    x = _unit_interval(x, "binarize")
    if not (np.isfinite(threshold) and 0 <= threshold <= 1):
        raise DatasetError(f"binarize: threshold = {threshold}: must lie in [0, 1]")
    return (x > threshold).astype(np.uint8)


def thermometer(x, levels: int) -> np.ndarray:
    """Thermometer code: ``levels`` bits per feature; bit ``k`` is set iff
    ``x > (k + 1) / (levels + 1)``.

    ``x`` is (N, features) in [0, 1], ``levels >= 1``. Returns uint8 (N, features * levels);
    feature ``f`` fills columns ``f * levels`` to ``f * levels + levels - 1``.

    Examples
    --------
    >>> thermometer([[0.1, 0.6]], levels=3)  # thresholds 0.25, 0.5, 0.75
    array([[0, 0, 0, 1, 1, 0]], dtype=uint8)
    """
    x = _unit_interval(x, "thermometer")
    if x.ndim != 2:
        raise DatasetError(f"thermometer: x has shape {x.shape}; expected (N, features)")
    levels = check_int("thermometer: levels", levels, 1)
    thresholds = np.arange(1, levels + 1) / (levels + 1)  # (L,)
    return (x[:, :, None] > thresholds).reshape(x.shape[0], -1).astype(np.uint8)  # (N, F * L)



def median_binarize(x_train: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bit = value > the training set's per-feature median (the paper's image binarisation)."""
    med = np.median(x_train, axis=0)  # (F,)
    return (x_train > med).astype(np.uint8), (x_test > med).astype(np.uint8)


def booleanise(x, method: str = "threshold", threshold: float = 0.5, levels: int = 3):
    """Booleans (N, bits) from features in [0, 1]: ``threshold`` (x > t, flattened per
    sample) or ``thermometer`` (``levels`` bits per feature)."""
    if method == "threshold":
        return binarize(x, threshold).reshape(len(x), -1)
    if method == "thermometer":
        return thermometer(np.asarray(x).reshape(len(x), -1), levels)
    raise DatasetError(f"booleanise: method {method!r}; use 'threshold' or 'thermometer'")
