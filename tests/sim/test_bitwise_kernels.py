"""The XOR-popcount kernels against word-by-word numpy on shapes that cut every block short.

The kernels block rows of b by 128 lanes, rows of a by 16, and words by 16 (64-bit; two
32-bit words make one): N = 1, 17, 37 and M = 1, 127, 129, 261 leave partial blocks of both,
W = 1, 3, 16, 17, 33 gives one word, odd word counts (a zero-padded half word on 32-bit),
exactly one chunk, one past it, and three chunks' worth.
"""
import numpy as np
import pytest

from hw_profiles.ops import OP_CODES
from sim.bitwise import kernels

SHAPES = [(1, 1), (17, 127), (37, 129), (16, 261)]
WORDS = [1, 3, 16, 17, 33]
DTYPES = [np.uint32, np.uint64]


def _words(rng, shape, dtype):
    """Random words over the full range: every bit, padding included, is data here."""
    return rng.integers(0, np.iinfo(dtype).max, shape, dtype=dtype, endpoint=True)


def _popcounts(x):
    """popcount per [..., word] summed over words, by numpy (no shared code with the kernel)."""
    return np.bitwise_count(x).sum(axis=-1, dtype=np.int64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("w", WORDS)
@pytest.mark.parametrize("n, m", SHAPES)
def test_xor_popcount_matmul_equals_word_by_word(n, m, w, dtype):
    rng = np.random.default_rng([n, m, w, np.dtype(dtype).itemsize])
    a, b = _words(rng, (n, w), dtype), _words(rng, (m, w), dtype)
    k = w * np.dtype(dtype).itemsize * 8
    out = np.full((n, m), -7, np.int32)                 # every entry must be overwritten
    counts = np.zeros(len(OP_CODES), np.int64)
    kernels.xor_popcount_matmul(a, b, k, out, counts)
    want = k - 2 * _popcounts(a[:, None, :] ^ b[None, :, :])
    np.testing.assert_array_equal(out, want)
    # per output W xor, W popcount, W + 1 add (the algorithm's, not the vector unit's)
    assert counts[kernels.XOR] == n * m * w
    assert counts[kernels.POPC] == n * m * w
    assert counts[kernels.ADD] == n * m * (w + 1)
    assert counts.sum() == n * m * (3 * w + 1)


@pytest.mark.parametrize("mask_of_a", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("w", WORDS)
@pytest.mark.parametrize("n, m", SHAPES)
def test_masked_xor_popcount_matmul_equals_word_by_word(n, m, w, dtype, mask_of_a):
    rng = np.random.default_rng([n, m, w, np.dtype(dtype).itemsize, mask_of_a])
    a, b = _words(rng, (n, w), dtype), _words(rng, (m, w), dtype)
    mask = _words(rng, (n if mask_of_a else m, w), dtype)
    keff = np.zeros(mask.shape[0], np.int64)
    counts = np.zeros(len(OP_CODES), np.int64)
    kernels.mask_popcount(mask, keff, counts)
    np.testing.assert_array_equal(keff, _popcounts(mask))
    counts[:] = 0
    out = np.full((n, m), -7, np.int32)
    kernels.masked_xor_popcount_matmul(a, b, mask, keff, mask_of_a, out, counts)
    gate = mask[:, None, :] if mask_of_a else mask[None, :, :]
    s = _popcounts((a[:, None, :] ^ b[None, :, :]) & gate)
    want = (keff[:, None] if mask_of_a else keff[None, :]) - 2 * s
    np.testing.assert_array_equal(out, want)
    # per output W xor, W and, W popcount, W + 1 add
    for op, per_output in ((kernels.XOR, w), (kernels.AND, w), (kernels.POPC, w),
                           (kernels.ADD, w + 1)):
        assert counts[op] == n * m * per_output
    assert counts.sum() == n * m * (4 * w + 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_rows_leave_out_and_counts_untouched(dtype):
    a, b = np.zeros((0, 3), dtype), np.ones((5, 3), dtype)
    out, counts = np.zeros((0, 5), np.int32), np.zeros(len(OP_CODES), np.int64)
    kernels.xor_popcount_matmul(a, b, 3 * 8 * np.dtype(dtype).itemsize, out, counts)
    kernels.xor_popcount_matmul(b, a, 3 * 8 * np.dtype(dtype).itemsize, out.T.copy(), counts)
    assert not counts.any()
