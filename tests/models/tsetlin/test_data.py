"""The Tsetlin machine's data: booleanised sets, Noisy XOR, operator patterns."""
import numpy as np
import pytest

from models.errors import DatasetError
from models.shared.datasets import Dataset
from models.tsetlin import data
from sim import seeds


def test_k_bit_operator_patterns():
    x, y = data.operator_patterns("and", irrelevant=1, k=3)
    assert x.shape == (16, 4) and y.sum() == 2               # x1 x2 x3 = 1, x4 free
    x, y = data.operator_patterns("xor", k=3)
    assert np.array_equal(y, x.sum(1) % 2)                   # 3-bit parity


def test_noisy_xor_flips_a_share_of_training_labels_only():
    x_tr, y_tr, x_te, y_te = data.noisy_xor(seed=0)
    assert x_tr.shape == (5000, 12) and x_te.shape == (5000, 12) and x_tr.dtype == np.uint8
    assert np.array_equal(y_te, x_te[:, 0] ^ x_te[:, 1])     # the test set is clean
    flipped = np.mean(y_tr != (x_tr[:, 0] ^ x_tr[:, 1]))
    # 40% flipped: binomial standard deviation sqrt(0.4 * 0.6 / 5000) = 0.0069; 3 sd = 0.021
    assert abs(flipped - 0.4) < 0.021


def test_card_sets_are_datasets_of_booleans():
    d = data.load("digits")
    assert isinstance(d, Dataset) and d.n_classes == 10
    # 64 pixels x 3 thermometer levels; the split of models.shared.datasets.digits()
    assert d.x_train.shape == (1347, 192) and d.n_features == 192 and d.x_test.shape == (450, 192)
    assert d.x_train.dtype == np.uint8 and set(np.unique(d.x_train)) == {0, 1}
    xor = data.load("noisy_xor", seed=3)
    assert xor.name == "noisy-xor" and xor.n_features == 12 and xor.n_classes == 2
    # the card draws Noisy XOR from the run seed's "data" stream (issue 28)
    assert np.array_equal(xor.x_train, data.noisy_xor(seed=seeds.child(3, "data"))[0])
    cut = data.load("digits", limit_train=10, limit_test=3)
    assert np.array_equal(cut.x_train, d.x_train[:10]) and cut.y_test.tolist() == \
        d.y_test[:3].tolist()
    with pytest.raises(DatasetError, match="one of digits, fashion-mnist, noisy-xor"):
        data.load("cifar")


def test_fashion_threshold_is_75_of_255(fashion_mnist):
    from models.shared import datasets
    d = data.load("fashion-mnist", limit_train=20, limit_test=5)
    raw = datasets.fashion_mnist(limit_train=20, limit_test=5)
    assert d.x_train.shape == (20, 784)
    assert np.array_equal(d.x_train, (raw.x_train > 75 / 255).astype(np.uint8))
