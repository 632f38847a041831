"""Bit-coded data for BEP: the generators make what their definitions say."""
import numpy as np
import pytest

from models import bep_data
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
    assert d.recurrent and d.x_train.shape[1:] == shape and d.x_test.shape[1:] == shape
    levels = 8 if name != "digits-rows" else 4
    codes = d.x_train.reshape(-1, levels).astype(int)
    assert np.all(np.diff(codes, axis=1) <= 0)  # a thermometer code: 1...10...0


def test_unknown_and_bad_arguments():
    with pytest.raises(DatasetError, match="known: "):
        bep_data.load("cifar")
    with pytest.raises(DatasetError, match="flip = 0.7"):
        bep_data.random_prototypes(flip=0.7)
