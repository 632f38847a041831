"""The shifted target transforms of models/conformal_hashing/data.py (no Fashion files
needed: they act on any (N, 1, 28, 28) images)."""
import numpy as np

from models.conformal_hashing import data


def _images():
    x = np.zeros((4, 1, 28, 28), np.float32)
    x[:, :, 8:20, 10:18] = 1.0          # a bright block on black: what Fashion items look like
    return x


def test_mild_shift_is_seeded_and_keeps_polarity():
    x = _images()
    a, b = data.shift_fashion_mild(x, 3), data.shift_fashion_mild(x, 3)
    assert np.array_equal(a, b)                              # same seed, same images
    assert not np.array_equal(a, data.shift_fashion_mild(x, 4))
    assert a.shape == x.shape and a.min() >= 0 and a.max() <= 1
    # no inversion: the corners stay black, the centre bright (the hard shift inverts half)
    assert a[:, 0, :3, :3].max() < 0.05 and a[:, 0, 13, 14].min() > 0.5
    # the block's brightness is kept up to the blur and a <= 10% rescale: 96 px of 1.0
    # (12 x 8) spread by the blur, scaled by 0.9-1.1 in both axes: 96 * 0.81 .. 96 * 1.21
    assert np.all((a.sum((1, 2, 3)) > 96 * 0.8) & (a.sum((1, 2, 3)) < 96 * 1.22))


def test_hard_shift_inverts_some_images():
    a = data.shift_fashion(np.repeat(_images(), 8, 0), 3)      # 32 images, p = 0.5 each
    inverted = a[:, 0, :3, :3].mean((1, 2)) > 0.5              # black corners turned white
    assert 0 < inverted.sum() < len(a)
