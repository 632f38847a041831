"""Datasets for every method: bundled digits, Fashion-MNIST IDX files, procedural data.

Every loader returns a :class:`Dataset` with float32 inputs in [0, 1] and int64 labels, so
a method never needs to know where its data came from (the bit-coded sets of the bitwise
rooms are Datasets too, of uint8 bits; their encoders are in ``models/shared/encoders.py``).
Nothing here uses the network: digits ships with scikit-learn, Fashion-MNIST comes from the
Debian package ``dataset-fashion-mnist`` (or ``NEUROEDGE_DATA``), and the rest is generated
from a seed.
"""

from __future__ import annotations

import functools
import gzip
import math
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.errors import DatasetError

FASHION_DEFAULT_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
FASHION_COUNTS = {"train": 60000, "test": 10000}  # the published split sizes
# IDX type code (byte 2 of the magic number) -> big-endian numpy dtype.
IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


@dataclass(frozen=True)
class Dataset:
    """A train/test split of one dataset.

    Attributes
    ----------
    x_train, x_test : ndarray, float32, shape (N, n_features) or (N, *input_shape), values in [0, 1]
        (bit-coded sets: uint8 0/1, e.g. ``models/bep/data.py``)
    y_train, y_test : ndarray, int64, shape (N,), values in ``0 .. n_classes - 1``
    input_shape : tuple of int
        Shape of one sample before flattening, e.g. ``(28, 28)``.
    source : str
        Where the data came from (directory, package, or generator call).
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    input_shape: tuple[int, ...]
    source: str

    @property
    def n_features(self) -> int:
        """Input values per sample: the product of ``input_shape``."""
        return math.prod(self.input_shape)


def check_int(name: str, value, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``low..high``, or a one-line :class:`DatasetError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DatasetError(f"{name} = {value!r}: must be an integer")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in {low}..{high}"
        raise DatasetError(f"{name} = {value}: must be {bound}")
    return int(value)


def _split(x, y, n_classes: int, test_fraction: float, seed: int, what: str):
    """Stratified train/test split, after checking that every class fits on both sides."""
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise DatasetError(f"{what}: test_fraction = {test_fraction}: must lie strictly "
                           "between 0 and 1")
    n_test = math.ceil(test_fraction * len(y))  # scikit-learn's rounding
    if min(n_test, len(y) - n_test) < n_classes:
        raise DatasetError(f"{what}: test_fraction = {test_fraction} of {len(y)} samples gives "
                           f"{n_test} test / {len(y) - n_test} train; each side needs >= "
                           f"{n_classes} (one per class)")
    return train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=y)


def digits(test_fraction: float = 0.25, seed: int = 0, flatten: bool = True) -> Dataset:
    """scikit-learn's bundled 8x8 handwritten digits: 1797 samples, 10 classes, pixels
    0..16 -> [0, 1].

    ``test_fraction`` (in (0, 1)) is held out by a split stratified by class and seeded by
    ``seed``; ``flatten`` gives inputs as (N, 64), else (N, 8, 8).

    Examples
    --------
    >>> d = digits()
    >>> d.x_train.shape, d.x_test.shape, d.n_classes
    ((1347, 64), (450, 64), 10)
    """
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = (bunch.data / 16.0).astype(np.float32)  # (N, 64); raw pixels are 0..16
    x_tr, x_te, y_tr, y_te = _split(x, bunch.target.astype(np.int64), 10, test_fraction, seed,
                                    "digits")
    if not flatten:
        x_tr, x_te = x_tr.reshape(-1, 8, 8), x_te.reshape(-1, 8, 8)
    return Dataset("digits", x_tr, y_tr, x_te, y_te, 10, (8, 8),
                   "scikit-learn load_digits (UCI optical recognition of handwritten digits)")


def read_idx(path: str | os.PathLike, expected_magic: int | None = None) -> np.ndarray:
    """Read an IDX file (the MNIST format), gunzipping it when its name ends in ``.gz``.

    Parameters
    ----------
    path : path-like
    expected_magic : int, optional
        Required magic: ``0x00000803`` for uint8 images (N, rows, cols), ``0x00000801`` for
        labels (N,).

    Returns
    -------
    ndarray, read-only, native byte order, shaped by the header's dimensions.

    Raises
    ------
    DatasetError
        Missing file, corrupt gzip, bad magic, or a payload that is not
        product(dims) * itemsize bytes.

    Notes
    -----
    Layout (LeCun's MNIST page): magic = two zero bytes, a type code, the number of
    dimensions; one big-endian uint32 per dimension; the data, big-endian, row-major.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: IDX file not found")
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetError(f"{path}: corrupt gzip stream ({exc}); re-download or reinstall "
                           "it") from exc
    magic = int.from_bytes(raw[:4], "big")
    code, ndim = (raw[2], raw[3]) if len(raw) >= 4 else (-1, 0)
    if len(raw) < 4 or raw[:2] != b"\0\0" or code not in IDX_DTYPES or ndim == 0:
        raise DatasetError(f"{path}: bad IDX magic number 0x{magic:08X}; expected 0x0000TTDD "
                           f"with type code TT in {[f'0x{c:02X}' for c in IDX_DTYPES]} and "
                           "DD >= 1 dimensions")
    if expected_magic is not None and magic != expected_magic:
        raise DatasetError(f"{path}: IDX magic number 0x{magic:08X}, expected "
                           f"0x{expected_magic:08X}")
    header, dtype = 4 + 4 * ndim, np.dtype(IDX_DTYPES[code])
    if len(raw) < header:
        raise DatasetError(f"{path}: truncated header: {ndim} dims need {header} bytes, "
                           f"found {len(raw)}")
    dims = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    expected, actual = math.prod(dims) * dtype.itemsize, len(raw) - header
    if actual != expected:
        what = "truncated" if actual < expected else "has trailing bytes"
        raise DatasetError(f"{path}: payload {what}: dimensions {dims} of {dtype.itemsize}-byte "
                           f"items need {expected} bytes, found {actual}")
    data = np.frombuffer(raw, dtype, offset=header).reshape(dims)  # read-only view of `raw`
    if dtype.itemsize > 1:
        data = data.astype(dtype.newbyteorder("="))
        data.flags.writeable = False
    return data


def _fashion_dir(data_dir) -> Path:
    """``data_dir``, else ``$NEUROEDGE_DATA`` or its ``fashion-mnist/``, else the Debian
    directory."""
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get("NEUROEDGE_DATA")
    if not env:
        return FASHION_DEFAULT_DIR
    for cand in (Path(env), Path(env) / "fashion-mnist"):
        if all((cand / f).is_file() for f in FASHION_FILES.values()):
            return cand
    return Path(env)


def _require_fashion_files(d: Path) -> None:
    missing = [str(d / f) for f in FASHION_FILES.values() if not (d / f).is_file()]
    if missing:
        raise DatasetError(f"Fashion-MNIST: missing {', '.join(missing)}. Install the Debian "
                           "package with `apt-get install dataset-fashion-mnist` (files go to "
                           f"{FASHION_DEFAULT_DIR}), or set NEUROEDGE_DATA to a directory holding "
                           "the four IDX .gz files "
                           f"(directly or in a fashion-mnist/ subdirectory)")


@functools.lru_cache(maxsize=4)
def _read_fashion(directory: str) -> dict[str, np.ndarray]:
    """Parse and check the four files once per directory (~1 s); the arrays are read-only uint8."""
    d = Path(directory)
    _require_fashion_files(d)
    out = {}
    for part, n in FASHION_COUNTS.items():
        img_path = d / FASHION_FILES[f"{part}_images"]
        lab_path = d / FASHION_FILES[f"{part}_labels"]
        images = read_idx(img_path, expected_magic=0x00000803)  # (N, 28, 28) uint8
        labels = read_idx(lab_path, expected_magic=0x00000801)  # (N,) uint8
        if images.shape[1:] != (28, 28):
            raise DatasetError(f"{img_path}: images are {images.shape[1:]}, expected (28, 28)")
        if images.shape[0] != labels.shape[0]:
            raise DatasetError(f"{img_path} has {images.shape[0]} images but {lab_path} has "
                               f"{labels.shape[0]} labels; the counts must agree")
        if labels.size and labels.max() > 9:
            raise DatasetError(f"{lab_path}: label {int(labels.max())} found; labels must be "
                               "in 0..9")
        if images.shape[0] != n:
            raise DatasetError(f"{img_path}: {images.shape[0]} samples, expected {n} for the "
                               f"{part} split")
        out[f"{part}_images"], out[f"{part}_labels"] = images, labels
    return out


def clear_cache() -> None:
    """Forget the parsed Fashion-MNIST arrays (after the files changed on disk, or in tests)."""
    _read_fashion.cache_clear()


def fashion_mnist(data_dir: str | os.PathLike | None = None, limit_train: int | None = None,
                  limit_test: int | None = None, flatten: bool = True) -> Dataset:
    """Fashion-MNIST (Xiao et al. 2017, arXiv:1708.07747): 60000/10000 28x28 images, 10 classes.

    Parameters
    ----------
    data_dir : path-like, optional
        Directory of the four gzipped IDX files. Default: ``$NEUROEDGE_DATA`` (itself or
        its ``fashion-mnist/``), else ``/usr/share/datasets/fashion-mnist`` (Debian package
        ``dataset-fashion-mnist``).
    limit_train, limit_test : int, optional
        Keep the first this many samples of a split (the files are in shuffled class order).
    flatten : bool
        Inputs as (N, 784) when True, else (N, 28, 28).

    Returns
    -------
    Dataset
        Pixels 0..255 scaled to [0, 1]; fresh arrays, while the parsed files stay cached.

    Raises
    ------
    DatasetError
        Files missing (the message says how to get them), corrupt, or of the wrong sizes.
    """
    d = _fashion_dir(data_dir)
    arrays = _read_fashion(str(d.resolve()))
    n_tr = 60000 if limit_train is None else \
        check_int("fashion_mnist: limit_train", limit_train, 1, 60000)
    n_te = 10000 if limit_test is None else \
        check_int("fashion_mnist: limit_test", limit_test, 1, 10000)
    shape = (-1, 784) if flatten else (-1, 28, 28)

    def scale(images):  # uint8 (N, 28, 28) -> new float32 (N, *shape) in [0, 1]
        return (images.reshape(shape) / np.float32(255.0)).astype(np.float32)

    return Dataset("fashion-mnist", scale(arrays["train_images"][:n_tr]),
                   arrays["train_labels"][:n_tr].astype(np.int64),
                   scale(arrays["test_images"][:n_te]),
                   arrays["test_labels"][:n_te].astype(np.int64), 10, (28, 28),
                   f"Fashion-MNIST IDX files in {d}")


LOADERS = {"digits": digits, "fashion-mnist": fashion_mnist}

NEEDS_FASHION_FILES = ("fashion-mnist", "fashion-points")
"""Dataset names (of any model) built from the Fashion-MNIST files: fs_kan's point sets too."""


def check_available(name: str) -> None:
    """Raise DatasetError, saying how to get them, when dataset ``name`` needs files that
    are missing; reads nothing, so the CLI calls it before any training. Generated and
    bundled sets (digits, random prototypes, ...) are always available.
    """
    key = name.lower().replace("_", "-") if isinstance(name, str) else name
    if key in NEEDS_FASHION_FILES:
        _require_fashion_files(_fashion_dir(None))


def load(name: str, **kwargs) -> Dataset:
    """Load a dataset by name (``"fashion_mnist"`` also works); ``kwargs`` go to its loader."""
    key = name.lower().replace("_", "-") if isinstance(name, str) else name
    if key not in LOADERS:
        raise DatasetError(f"unknown dataset {name!r}; known datasets: "
                           f"{', '.join(sorted(LOADERS))}")
    return LOADERS[key](**kwargs)


def rng(seed) -> np.random.Generator:
    """``np.random.default_rng(seed)``: pass the generator on, never use numpy's global state."""
    return np.random.default_rng(seed)


def gaussian_blobs(n_samples: int, n_features: int, n_classes: int, separation: float = 3.0,
                   seed: int = 0, test_fraction: float = 0.25) -> Dataset:
    """Balanced Gaussian classes along one random direction, for methods whose data cannot ship.

    Class ``c`` has mean ``(c - (n_classes - 1) / 2) * separation * u`` (``u`` a random unit
    vector) and unit isotropic noise, so neighbouring means lie ``separation`` noise standard
    deviations apart. One affine map (global min and max) then puts every value in [0, 1],
    keeping the noise isotropic. Class sizes differ by at most one; ``seed`` fixes the
    direction, the noise and the stratified split.
    """
    n_samples = check_int("gaussian_blobs: n_samples", n_samples, 1)
    n_features = check_int("gaussian_blobs: n_features", n_features, 1)
    n_classes = check_int("gaussian_blobs: n_classes", n_classes, 2)
    if not (np.isfinite(separation) and separation >= 0):
        raise DatasetError(f"gaussian_blobs: separation = {separation}: must be finite and >= 0")
    g = rng(seed)
    u = g.standard_normal(n_features)
    u /= np.linalg.norm(u)
    y = g.permutation(np.arange(n_samples) % n_classes).astype(np.int64)  # (N,)
    means = (np.arange(n_classes) - (n_classes - 1) / 2)[:, None] * separation * u  # (K, F)
    x = means[y] + g.standard_normal((n_samples, n_features))  # (N, F)
    span = x.max() - x.min()
    x = ((x - x.min()) / (span if span > 0 else 1.0)).astype(np.float32)
    x_tr, x_te, y_tr, y_te = _split(x, y, n_classes, test_fraction, seed, "gaussian_blobs")
    return Dataset("gaussian-blobs", x_tr, y_tr, x_te, y_te, n_classes, (n_features,),
                   f"procedural: gaussian_blobs(n_samples={n_samples}, n_features={n_features}, "
                   f"n_classes={n_classes}, separation={separation}, seed={seed})")


def batches(x: np.ndarray, y: np.ndarray, batch_size: int, seed: int | None = None
            ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Mini-batches ``(x[idx], y[idx])`` that cover every sample once; the last may be short.

    Arguments are checked at the call, not at the first ``next``. With a ``seed`` the order
    is ``rng(seed).permutation(N)``, else the stored order.
    """
    batch_size = check_int("batches: batch_size", batch_size, 1)
    if len(x) != len(y):
        raise DatasetError(f"batches: x has {len(x)} samples but y has {len(y)}; they must agree")
    order = np.arange(len(x)) if seed is None else rng(seed).permutation(len(x))
    chunks = (order[i:i + batch_size] for i in range(0, len(order), batch_size))
    return ((x[idx], y[idx]) for idx in chunks)
