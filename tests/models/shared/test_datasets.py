"""Tests of models/datasets.py: loaders, the IDX reader, procedural data, encoders and batching."""

import gzip
import math

import numpy as np
import pytest

from models.errors import DatasetError
from models.shared import datasets as ds

IDX_CODES = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D,
             np.float64: 0x0E}


def write_idx(path, array, compress=True, magic=None, payload=None):
    """Write ``array`` as an IDX file (gzipped by default); ``magic``/``payload`` override to
    corrupt it."""
    array = np.asarray(array)
    code = IDX_CODES[array.dtype.type]
    magic = (code << 8 | array.ndim) if magic is None else magic
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    body = array.astype(array.dtype.newbyteorder(">")).tobytes() if payload is None else payload
    with (gzip.open(path, "wb", compresslevel=1) if compress else open(path, "wb")) as f:
        f.write(header + body)
    return path


def write_fashion(directory, n_train, n_test, label_fn=lambda i: (7 * i) % 10):
    """Fake Fashion-MNIST files: image i is constant 25 * label(i)."""
    directory.mkdir(parents=True, exist_ok=True)
    for part, n in (("train", n_train), ("t10k", n_test)):
        labels = label_fn(np.arange(n)).astype(np.uint8)
        images = np.broadcast_to((labels * 25)[:, None, None], (n, 28, 28)).astype(np.uint8)
        write_idx(directory / f"{part}-images-idx3-ubyte.gz", images)
        write_idx(directory / f"{part}-labels-idx1-ubyte.gz", labels)
    return directory


@pytest.fixture(autouse=True)
def _fresh_cache():
    ds.clear_cache()
    yield
    ds.clear_cache()


# ---------------------------------------------------------------- digits

def test_digits_shapes_types_and_range():
    d = ds.digits()
    assert d.x_train.shape[0] + d.x_test.shape[0] == 1797
    assert d.x_test.shape == (450, 64)  # ceil(0.25 * 1797) = 450
    assert d.x_train.shape == (1347, 64)
    assert (d.n_classes, d.input_shape, d.n_features) == (10, (8, 8), 64)
    assert d.x_train.dtype == np.float32 and d.y_train.dtype == np.int64
    x = np.concatenate([d.x_train, d.x_test])
    assert x.min() == 0.0 and x.max() == 1.0  # raw pixels span 0..16
    np.testing.assert_allclose(x * 16, np.round(x * 16), atol=1e-5)  # 17 grey levels
    assert set(np.unique(d.y_train)) == set(range(10))
    assert ds.digits(flatten=False).x_test.shape == (450, 8, 8)


def test_digits_split_is_stratified():
    from sklearn.datasets import load_digits

    totals = np.bincount(load_digits().target, minlength=10)
    d = ds.digits(test_fraction=0.3, seed=5)
    n_test = len(d.y_test)
    assert n_test == math.ceil(0.3 * 1797)
    test_counts = np.bincount(d.y_test, minlength=10)
    assert np.all(np.abs(test_counts - totals * n_test / 1797) <= 1)
    np.testing.assert_array_equal(test_counts + np.bincount(d.y_train, minlength=10), totals)


def test_digits_same_seed_same_split_other_seed_other_split():
    a, b, c = ds.digits(seed=1), ds.digits(seed=1), ds.digits(seed=2)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.y_test, c.y_test)


@pytest.mark.parametrize("fraction", [0.0, 1.0, 0.001])
def test_digits_bad_test_fraction(fraction):
    with pytest.raises(DatasetError, match="test_fraction"):
        ds.digits(test_fraction=fraction)


# ---------------------------------------------------------------- IDX reader

@pytest.mark.parametrize("array", [
    np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4),
    np.array([[1, -2, 70000], [2**31 - 1, 0, -(2**31)]], dtype=np.int32),
    np.array([0.5, -1.25, 3e9], dtype=np.float32),
])
@pytest.mark.parametrize("compress", [True, False])
def test_read_idx_round_trip(tmp_path, array, compress):
    path = write_idx(tmp_path / ("a.idx.gz" if compress else "a.idx"), array, compress=compress)
    out = ds.read_idx(path)
    assert out.shape == array.shape and out.dtype == array.dtype and out.dtype.isnative
    np.testing.assert_array_equal(out, array)
    assert not out.flags.writeable


def test_read_idx_checks_expected_magic(tmp_path):
    labels = write_idx(tmp_path / "labels.gz", np.zeros(5, np.uint8))
    assert ds.read_idx(labels, expected_magic=0x00000801).shape == (5,)
    with pytest.raises(DatasetError, match=r"magic number 0x00000801, expected 0x00000803"):
        ds.read_idx(labels, expected_magic=0x00000803)


@pytest.mark.parametrize("magic", [0x12340803, 0x00000703, 0x00000800])
def test_read_idx_bad_magic(tmp_path, magic):
    path = write_idx(tmp_path / "bad.gz", np.zeros((2, 2, 2), np.uint8), magic=magic)
    with pytest.raises(DatasetError, match=f"bad.gz.*magic.*0x{magic:08X}"):
        ds.read_idx(path)


@pytest.mark.parametrize("n_bytes, word", [(20, "truncated"), (26, "trailing")])
def test_read_idx_payload_size(tmp_path, n_bytes, word):
    # dims (2, 3, 4) of uint8 need 2 * 3 * 4 = 24 bytes
    path = write_idx(tmp_path / "x.gz", np.zeros((2, 3, 4), np.uint8), payload=bytes(n_bytes))
    with pytest.raises(DatasetError, match=f"x.gz.*{word}.*need 24 bytes, found {n_bytes}"):
        ds.read_idx(path)


def test_read_idx_truncated_header(tmp_path):
    path = tmp_path / "h.idx"
    path.write_bytes(bytes([0, 0, 8, 3, 0, 0, 0, 2]))  # 3 dims declared, 1 given
    with pytest.raises(DatasetError, match="need 16 bytes, found 8"):
        ds.read_idx(path)


def test_read_idx_corrupt_gzip(tmp_path):
    good = write_idx(tmp_path / "good.gz", np.arange(4000, dtype=np.int32)).read_bytes()
    (tmp_path / "junk.gz").write_bytes(b"this is not gzip at all")
    (tmp_path / "cut.gz").write_bytes(good[: len(good) // 2])
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0xFF
    (tmp_path / "flip.gz").write_bytes(bytes(flipped))
    for name in ("junk.gz", "cut.gz", "flip.gz"):
        with pytest.raises(DatasetError, match=f"{name}: corrupt gzip"):
            ds.read_idx(tmp_path / name)


def test_read_idx_missing_file(tmp_path):
    with pytest.raises(DatasetError, match="nothere.gz: IDX file not found"):
        ds.read_idx(tmp_path / "nothere.gz")


# ------------------------------------------------------ Fashion-MNIST: errors and discovery

def test_fashion_missing_directory_says_how_to_get_it(tmp_path):
    with pytest.raises(DatasetError) as info:
        ds.fashion_mnist(data_dir=tmp_path / "nowhere")
    msg = str(info.value)
    for needle in ("dataset-fashion-mnist", "apt-get install", "NEUROEDGE_DATA",
                   str(tmp_path / "nowhere" / "t10k-labels-idx1-ubyte.gz")):
        assert needle in msg


def test_fashion_names_only_the_missing_file(tmp_path):
    write_fashion(tmp_path, 3, 2)
    (tmp_path / "t10k-images-idx3-ubyte.gz").unlink()
    with pytest.raises(DatasetError, match="missing [^ ]*t10k-images-idx3-ubyte.gz\\. ") as info:
        ds.fashion_mnist(data_dir=tmp_path)
    assert "train-images" not in str(info.value)


@pytest.mark.parametrize("label_fn, pattern", [
    (lambda i: i % 10, "train-images-idx3-ubyte.gz: 6 samples, expected 60000"),
    (lambda i: i + 5, "train-labels-idx1-ubyte.gz: label 10 found; labels must be in 0..9"),
])
def test_fashion_checks_contents(tmp_path, label_fn, pattern):
    write_fashion(tmp_path, 6, 4, label_fn)
    with pytest.raises(DatasetError, match=pattern):
        ds.fashion_mnist(data_dir=tmp_path)


def test_fashion_counts_must_agree_and_files_not_swapped(tmp_path):
    write_fashion(tmp_path, 6, 4)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.zeros(5, np.uint8))
    with pytest.raises(DatasetError, match="6 images but .* 5 labels"):
        ds.fashion_mnist(data_dir=tmp_path)
    ds.clear_cache()
    labels = (tmp_path / "train-labels-idx1-ubyte.gz").read_bytes()
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(labels)
    with pytest.raises(DatasetError, match="expected 0x00000803"):
        ds.fashion_mnist(data_dir=tmp_path)


def test_fashion_default_directory_without_env(monkeypatch):
    monkeypatch.delenv("NEUROEDGE_DATA", raising=False)
    assert ds._fashion_dir(None) == ds.FASHION_DEFAULT_DIR


@pytest.fixture(scope="module")
def fake_root(tmp_path_factory):
    """A full-size fake Fashion-MNIST under <root>/fashion-mnist (label i = 7 i mod 10)."""
    root = tmp_path_factory.mktemp("neuroedge_data")
    write_fashion(root / "fashion-mnist", 60000, 10000)
    return root


@pytest.mark.parametrize("sub", ["", "fashion-mnist"])
def test_fashion_honours_neuroedge_data(monkeypatch, fake_root, sub):
    monkeypatch.setenv("NEUROEDGE_DATA", str(fake_root / sub))
    d = ds.fashion_mnist(limit_test=50)
    assert str(fake_root / "fashion-mnist") in d.source
    assert d.x_train.shape == (60000, 784) and d.x_test.shape == (50, 784)
    assert (d.n_features, d.input_shape) == (784, (28, 28))
    np.testing.assert_array_equal(d.y_train[:4], [0, 7, 4, 1])  # 7 i mod 10
    np.testing.assert_allclose(d.x_train[:, 123], d.y_train * 25 / 255, rtol=1e-6)


def test_data_dir_beats_env_and_load_alias(monkeypatch, tmp_path, fake_root):
    monkeypatch.setenv("NEUROEDGE_DATA", str(tmp_path))  # empty: would fail if used
    d = ds.load("fashion_mnist", data_dir=fake_root / "fashion-mnist", limit_train=3, flatten=False)
    assert d.x_train.shape == (3, 28, 28) and d.name == "fashion-mnist"


# ---------------------------------------------------------------- Fashion-MNIST: the real files

@pytest.fixture(scope="module")
def real_fashion():
    if not ds.FASHION_DEFAULT_DIR.is_dir():
        pytest.skip(f"{ds.FASHION_DEFAULT_DIR} absent: apt-get install dataset-fashion-mnist")
    return ds.fashion_mnist(data_dir=ds.FASHION_DEFAULT_DIR)


def test_real_fashion_shapes_labels_range(real_fashion):
    d = real_fashion
    assert d.x_train.shape == (60000, 784) and d.x_test.shape == (10000, 784)
    assert d.x_train.dtype == np.float32 and d.y_train.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(d.y_train, minlength=10), [6000] * 10)
    np.testing.assert_array_equal(np.bincount(d.y_test, minlength=10), [1000] * 10)
    assert d.x_train.min() == 0.0 and d.x_train.max() == 1.0
    assert d.x_test.min() == 0.0 and d.x_test.max() == 1.0
    assert d.y_train[0] == 9 and d.y_test[0] == 9  # both files start with an ankle boot


def test_real_fashion_limits_and_cache_protection(real_fashion):
    small = ds.fashion_mnist(data_dir=ds.FASHION_DEFAULT_DIR, limit_train=500, limit_test=20)
    assert small.x_train.shape == (500, 784) and small.y_test.shape == (20,)
    np.testing.assert_array_equal(small.x_train, real_fashion.x_train[:500])
    np.testing.assert_array_equal(small.y_test, real_fashion.y_test[:20])
    small.x_train[:] = 7.0  # a caller scribbling on its copy must not reach the cache
    again = ds.fashion_mnist(data_dir=ds.FASHION_DEFAULT_DIR, limit_train=500, limit_test=20)
    assert ds._read_fashion.cache_info().hits == 1
    np.testing.assert_array_equal(again.x_train, real_fashion.x_train[:500])
    with pytest.raises(DatasetError, match="limit_train = 60001"):
        ds.fashion_mnist(data_dir=ds.FASHION_DEFAULT_DIR, limit_train=60001)


# ---------------------------------------------------------------- load

def test_load_dispatches_and_lists_known_names():
    assert ds.load("digits", seed=3).y_test.tolist() == ds.digits(seed=3).y_test.tolist()
    assert ds.LOADERS["fashion-mnist"] is ds.fashion_mnist
    with pytest.raises(DatasetError, match="'cifar'.*digits, fashion-mnist"):
        ds.load("cifar")


# ---------------------------------------------------------------- procedural data and encoders

def test_rng_is_seeded():
    np.testing.assert_array_equal(ds.rng(4).random(5), ds.rng(4).random(5))
    assert not np.array_equal(ds.rng(4).random(5), ds.rng(5).random(5))


def test_gaussian_blobs_shapes_balance_determinism():
    b = ds.gaussian_blobs(103, 7, 4, seed=1)
    assert b.x_test.shape == (26, 7) and b.x_train.shape == (77, 7)  # ceil(0.25 * 103) = 26
    assert (b.n_classes, b.input_shape, b.n_features) == (4, (7,), 7)
    x = np.concatenate([b.x_train, b.x_test])
    assert x.dtype == np.float32 and x.min() == 0.0 and x.max() == 1.0
    # 103 = 4 * 25 + 3: three classes get 26, one gets 25
    assert sorted(np.bincount(np.concatenate([b.y_train, b.y_test]))) == [25, 26, 26, 26]
    again, other = ds.gaussian_blobs(103, 7, 4, seed=1), ds.gaussian_blobs(103, 7, 4, seed=2)
    np.testing.assert_array_equal(b.x_train, again.x_train)
    assert not np.array_equal(b.x_train, other.x_train)


def nearest_mean_accuracy(d):
    means = np.stack([d.x_train[d.y_train == c].mean(0) for c in range(d.n_classes)])
    pred = np.argmin(((d.x_test[:, None, :] - means) ** 2).sum(-1), axis=1)
    return (pred == d.y_test).mean()


def test_gaussian_blobs_separation_controls_difficulty():
    # neighbours 8 sigma apart: error ~ 2 * Phi(-4) ~ 6e-5; separation 0: chance (1/4)
    assert nearest_mean_accuracy(ds.gaussian_blobs(1600, 5, 4, separation=8.0)) > 0.99
    assert nearest_mean_accuracy(ds.gaussian_blobs(1600, 5, 4, separation=0.0)) < 0.4


def test_gaussian_blobs_separation_is_in_noise_standard_deviations():
    b = ds.gaussian_blobs(6000, 3, 3, separation=5.0, seed=7)
    x, y = np.concatenate([b.x_train, b.x_test]), np.concatenate([b.y_train, b.y_test])
    means = np.stack([x[y == c].mean(0) for c in range(3)])  # (3, 3)
    sigma = np.mean([x[y == c].std(0) for c in range(3)])  # unit noise after the same affine map
    step = np.diff(means, axis=0)  # neighbouring means, equal steps along one line
    np.testing.assert_allclose(np.linalg.norm(step, axis=1) / sigma, [5.0, 5.0], rtol=0.05)
    np.testing.assert_allclose(step[0], step[1], atol=0.05 * np.linalg.norm(step[0]))


def test_gaussian_blobs_bad_arguments():
    with pytest.raises(DatasetError, match="n_classes = 1"):
        ds.gaussian_blobs(10, 2, 1)
    with pytest.raises(DatasetError, match="separation = -1"):
        ds.gaussian_blobs(10, 2, 2, separation=-1.0)
    with pytest.raises(DatasetError, match="each side needs >= 5"):
        ds.gaussian_blobs(12, 2, 5)  # ceil(0.25 * 12) = 3 test samples < 5 classes


# ---------------------------------------------------------------- batches

@pytest.mark.parametrize("seed", [None, 3])
def test_batches_cover_every_index_once(seed):
    x = np.arange(10)
    y = x * 10
    out = list(ds.batches(x, y, 4, seed=seed))
    assert [len(bx) for bx, _ in out] == [4, 4, 2]  # last batch partial
    order = np.concatenate([bx for bx, _ in out])
    np.testing.assert_array_equal(np.sort(order), x)
    for bx, by in out:
        np.testing.assert_array_equal(by, bx * 10)  # pairs stay together
    if seed is None:
        np.testing.assert_array_equal(order, x)
    else:
        np.testing.assert_array_equal(order, ds.rng(seed).permutation(10))
        assert not np.array_equal(order, x)


def test_batches_exact_multiple_and_errors():
    assert [len(b) for b, _ in ds.batches(np.zeros(8), np.zeros(8), 4)] == [4, 4]
    with pytest.raises(DatasetError, match="batch_size = 0"):
        ds.batches(np.zeros(3), np.zeros(3), 0)  # raised at the call, before iteration
    with pytest.raises(DatasetError, match="3 samples but y has 2"):
        ds.batches(np.zeros(3), np.zeros(2), 1)
