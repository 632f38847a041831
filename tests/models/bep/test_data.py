"""Bit-coded data for BEP: the generators make what their definitions say."""
import numpy as np
import pytest

from models.bep import data as bep_data
from models.errors import DatasetError


def test_random_prototypes_flip_rate_and_balance():
    d = bep_data.random_prototypes(n_samples=3000, n_features=400, flip=0.3, seed=7)
    x = np.concatenate([d.x_train, d.x_test])
    y = np.concatenate([d.y_train, d.y_test])
    assert x.dtype == np.uint8 and set(np.unique(x)) <= {0, 1}
    assert np.bincount(y).tolist() == [300] * 10
    # the per-class majority recovers the prototype; samples disagree with it at rate ~flip
    protos = np.stack([x[y == c].mean(0) > 0.5 for c in range(10)])
    assert abs((x != protos[y]).mean() - 0.3) < 0.01
    assert bep_data.random_prototypes(seed=7, n_samples=100, n_features=20).x_train.tolist() == \
        bep_data.random_prototypes(seed=7, n_samples=100, n_features=20).x_train.tolist()


def test_cbf_shapes_follow_saito():
    x, y = bep_data.cbf_series(600, seed=0)
    # inside [a, b] the cylinder is flat, the bell rises, the funnel falls: compare halves of
    # the mean series over t in 40..60 (inside every event, since a <= 32 and b >= a + 32)
    mid = x[:, 40:60]
    slope = mid[:, 10:].mean(1) - mid[:, :10].mean(1)
    assert abs(slope[y == 0].mean()) < 0.5
    assert slope[y == 1].mean() > 0.5 and slope[y == 2].mean() < -0.5
    assert abs(x[:, :15].mean()) < 0.2  # before a >= 16 only N(0, 1) noise


def test_synthetic_control_classes():
    x, y = bep_data.synthetic_control_series(600, seed=0)
    trend = x[:, -10:].mean(1) - x[:, :10].mean(1)
    assert trend[y == 2].min() > 0 and trend[y == 3].max() < 0     # increasing / decreasing
    assert trend[y == 4].mean() > 7 and trend[y == 5].mean() < -7   # shifts of k >= 7.5
    assert abs(x[y == 0].mean() - 30) < 0.2 and x[y == 0].std() < 3.6  # m + r s, r ~ U(-3, 3)


@pytest.mark.parametrize("name,shape", [("cylinder-bell-funnel", (32, 8)),
                                        ("synthetic-control", (30, 8)),
                                        ("digits-rows", (8, 32))])
def test_sequence_sets_are_thermometer_bits(name, shape):
    d = bep_data.load(name)
    assert bep_data.is_sequence(d) and d.x_train.shape[1:] == shape and d.x_test.shape[1:] == shape
    assert d.input_shape == shape and bep_data.bits_per_step(d) == shape[1]
    assert d.x_train.dtype == np.uint8
    levels = 8 if name != "digits-rows" else 4
    codes = d.x_train.reshape(-1, levels).astype(int)
    assert np.all(np.diff(codes, axis=1) <= 0)  # a thermometer code: 1...10...0


def test_unknown_and_bad_arguments():
    with pytest.raises(DatasetError, match="known: "):
        bep_data.load("cifar")
    with pytest.raises(DatasetError, match="flip = 0.7"):
        bep_data.random_prototypes(flip=0.7)


def test_static_sets_are_datasets_of_bits():
    from models.shared.datasets import Dataset
    d = bep_data.digits_bits()
    assert isinstance(d, Dataset) and not bep_data.is_sequence(d)
    # 64 pixels x 4 thermometer levels; the split of models.shared.datasets.digits()
    assert d.x_train.shape == (1347, 256) and d.x_test.shape == (450, 256)
    assert d.n_features == 256 and d.input_shape == (256,) and d.n_classes == 10
    assert d.x_train.dtype == np.uint8 and set(np.unique(d.x_train)) == {0, 1}


def test_fashion_limits_set_the_median(fashion_mnist):
    # the quick preset reads the first 10,000 images and thresholds at their median
    from models.shared import datasets, encoders
    d = bep_data.for_config("fashion-mnist", 300, 50)
    raw = datasets.fashion_mnist(limit_train=300, limit_test=50)
    want_tr, want_te = encoders.median_binarize(raw.x_train, raw.x_test)
    assert np.array_equal(d.x_train, want_tr) and np.array_equal(d.x_test, want_te)
    assert d.input_shape == (28, 28) and d.n_features == 784
