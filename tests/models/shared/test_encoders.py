"""Bit encoders (models/shared/encoders.py): hand examples and the refused inputs."""
import re

import numpy as np
import pytest

from models.errors import DatasetError
from models.shared import encoders as ds


def test_thermometer_hand_example():
    x = np.array([[0.0, 0.3, 1.0], [0.5, 0.76, 0.2]], dtype=np.float32)
    # levels = 3: thresholds 1/4, 2/4, 3/4; bit k set iff x > (k + 1) / 4
    expected = [[0, 0, 0, 1, 0, 0, 1, 1, 1],
                [1, 0, 0, 1, 1, 1, 0, 0, 0]]
    out = ds.thermometer(x, 3)
    assert out.dtype == np.uint8 and out.shape == (2, 9)
    np.testing.assert_array_equal(out, expected)
    # one level = the threshold 1/2
    np.testing.assert_array_equal(ds.thermometer(x, 1), ds.binarize(x, 0.5))


@pytest.mark.parametrize("x, levels, pattern", [
    ([[0.5]], 0, "levels = 0"),
    ([[1.5]], 2, r"\[0, 1\]"),
    ([[np.nan]], 2, "NaN"),
    ([0.5, 0.2], 2, r"shape \(2,\)"),
])
def test_thermometer_rejects(x, levels, pattern):
    with pytest.raises(DatasetError, match=pattern):
        ds.thermometer(np.asarray(x), levels)


def test_binarize_hand_example():
    x = np.array([[0.2, 0.5], [0.51, 1.0]])
    out = ds.binarize(x)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [[0, 0], [1, 1]])  # 0.5 is not > 0.5
    np.testing.assert_array_equal(ds.binarize(x, threshold=0.0), [[1, 1], [1, 1]])
    with pytest.raises(DatasetError, match="threshold = 2"):
        ds.binarize(x, threshold=2)
    with pytest.raises(DatasetError, match=re.escape("[-0.1, 1.0]")):
        ds.binarize(np.array([-0.1, 1.0]))


def test_median_binarize_uses_the_training_median():
    x_tr = np.array([[0.1, 0.9], [0.3, 0.5], [0.6, 0.2]])   # medians 0.3 and 0.5
    x_te = np.array([[0.3, 0.51], [0.31, 0.5]])
    b_tr, b_te = ds.median_binarize(x_tr, x_te)
    assert b_tr.tolist() == [[0, 1], [0, 0], [1, 0]]         # strictly above the median
    assert b_te.tolist() == [[0, 1], [1, 0]] and b_te.dtype == np.uint8


def test_booleanise_uses_the_encoders():
    x = np.array([[0.1, 0.6]])
    assert ds.booleanise(x, "thermometer", levels=3).tolist() == [[0, 0, 0, 1, 1, 0]]
    assert ds.booleanise(x, "threshold", threshold=0.5).tolist() == [[0, 1]]
    img = np.zeros((2, 2, 2))
    img[1, 0, 1] = 0.9
    assert ds.booleanise(img, "threshold").tolist() == [[0, 0, 0, 0], [0, 1, 0, 0]]  # flattened
    with pytest.raises(DatasetError, match="'gray'; use 'threshold' or 'thermometer'"):
        ds.booleanise(np.zeros((1, 2)), method="gray")
