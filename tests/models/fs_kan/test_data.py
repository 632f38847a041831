"""FS-KAN's tasks: signal sets, Fashion-MNIST point sets, the loader's split."""
import numpy as np
import pytest

from models.errors import DatasetError
from models.fs_kan import data as tasks


def test_signal_sets():
    x, y = tasks.signal_sets(30, n=4, length=10, noise=0.0, seed=1)
    assert x.shape == (30, 40, 1) and x.dtype == np.float32 and y.shape == (30,)
    sets = x.reshape(30, 4, 10)
    assert np.array_equal(sets, np.repeat(sets[:, :1], 4, axis=1))    # no noise: equal copies
    sq = sets[y == 1]
    assert np.allclose(np.abs(sq), np.abs(sq[:, :, :1]))              # square: +-amplitude
    x2, y2 = tasks.signal_sets(30, n=4, length=10, noise=0.5, seed=1)
    assert np.array_equal(y, y2) and not np.allclose(x, x2)            # same draw plus noise
    with pytest.raises(DatasetError, match="n = 0"):
        tasks.signal_sets(5, n=0)


def test_images_to_point_sets():
    img = np.zeros((2, 4, 5), np.float32)
    img[0, 1, 2], img[0, 3, 4] = 0.9, 0.5                              # two bright pixels
    img[1] = np.linspace(0, 1, 20).reshape(4, 5)
    pts = tasks.images_to_point_sets(img, n_points=6, threshold=0.3, seed=0)
    assert pts.shape == (2, 6, 3) and pts.min() >= -1 and pts.max() <= 1
    # image 0: only its two bright pixels, reused cyclically; (col, row) scaled to [-1, 1]
    # (row 1, col 2, 0.9) -> (2/4*2-1, 1/3*2-1, 0.9*2-1); (row 3, col 4, 0.5) -> (1, 1, 0)
    got = {tuple(round(float(v), 4) for v in p) for p in pts[0]}
    assert got == {(0.0, -0.3333, 0.8), (1.0, 1.0, 0.0)}
    # image 1: 6 distinct pixels, all brighter than the threshold
    assert len({tuple(p) for p in pts[1]}) == 6 and (pts[1][:, 2] > 2 * 0.3 - 1).all()
    with pytest.raises(DatasetError, match="expected \\(N, H, W\\)"):
        tasks.images_to_point_sets(np.zeros((3, 4)))


def test_load_keeps_one_test_set_whatever_the_seed():
    a, b = tasks.load("signal-sets", 12, 7, seed=1), tasks.load("signal-sets", 12, 7, seed=2)
    assert a.name == "signal-sets" and a.n_classes == 3 and a.input_shape == (72, 1)
    assert a.x_train.shape == (12, 72, 1) and a.x_test.shape == (7, 72, 1)
    np.testing.assert_array_equal(a.x_test, b.x_test)                # TEST_SEED, not the seed
    assert not np.array_equal(a.x_train, b.x_train)
    with pytest.raises(DatasetError, match="unknown FS-KAN task 'cifar'"):
        tasks.load("cifar", 1, 1, 0)


def test_load_fashion_points(fashion_mnist):
    d = tasks.load("fashion-points", 5, 4, seed=0)
    assert d.x_train.shape == (5, 64, 3) and d.n_classes == 10 and d.input_shape == (64, 3)
    assert d.x_test.min() >= -1 and d.x_test.max() <= 1
