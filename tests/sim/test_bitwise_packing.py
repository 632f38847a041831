"""Packing +/-1 and 0/1 arrays into words: layout, round trips, padding, bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.bitwise.packing import (
    n_words,
    pack_bits,
    pack_signs,
    transpose_packed,
    unpack_bits,
    unpack_signs,
)
from sim.errors import ModelError


def test_layout_is_lsb_first_with_zero_padding():
    # elements 0 and 2 are +1: bits 0 and 2 of word 0 -> 0b101 = 5; element 33 -> word 1 bit 1
    x = -np.ones(34, np.int8)
    x[[0, 2, 33]] = 1
    w32 = pack_signs(x, 32)
    assert w32.dtype == np.uint32 and w32.tolist() == [5, 2]
    w64 = pack_signs(x, 64)
    assert w64.dtype == np.uint64 and w64.tolist() == [5 | (1 << 33)]
    # all +1 over 3 bits: only the 3 low bits set, padding stays 0
    assert pack_signs(np.ones(3, np.int8), 32).tolist() == [7]


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 200), rows=st.integers(1, 4), wb=st.sampled_from([32, 64]),
       seed=st.integers(0, 2**31))
def test_round_trips(k, rows, wb, seed):
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([-1, 1], np.int8), size=(rows, k))
    words = pack_signs(x, wb)
    assert words.shape == (rows, n_words(k, wb))
    assert np.array_equal(unpack_signs(words, k), x)
    b = rng.integers(0, 2, size=(rows, k)).astype(np.uint8)
    assert np.array_equal(unpack_bits(pack_bits(b, wb), k), b)
    # popcount of the packed bits equals the number of ones: padding is zero
    assert np.array_equal(np.bitwise_count(pack_bits(b, wb)).sum(-1), b.sum(-1))


@pytest.mark.parametrize("wb", [32, 64])
def test_transpose_packed(wb):
    rng = np.random.default_rng(2)
    x = rng.choice(np.array([-1, 1], np.int8), size=(70, 33))
    t = transpose_packed(pack_signs(x, wb), 33)
    assert t.shape == (33, n_words(70, wb)) and t.dtype == pack_signs(x, wb).dtype
    assert np.array_equal(unpack_signs(t, 70), x.T)


def test_leading_axes_are_kept():
    x = np.ones((2, 3, 70), np.int8)
    assert pack_signs(x, 32).shape == (2, 3, 3)
    assert pack_bits(np.zeros((4, 1), np.uint8), 64).shape == (4, 1)


@pytest.mark.parametrize("call, match", [
    (lambda: pack_signs(np.array([1.0, -1.0]), 32), "integer"),
    (lambda: pack_signs(np.array([1, 0, -1], np.int8), 32), r"value 0 at index \(1,\)"),
    (lambda: pack_signs(np.ones(4, np.int8), 16), "word_bits = 16"),
    (lambda: pack_signs(np.ones((2, 0), np.int8), 32), "empty"),
    (lambda: pack_bits(np.array([0, 2]), 32), "value 2"),
    (lambda: unpack_signs(np.zeros(2, np.uint32), 70), "k = 70 bits do not match 2 words"),
    (lambda: unpack_bits(np.zeros(2, np.int32), 40), "uint32 or uint64"),
])
def test_bad_input_is_refused(call, match):
    with pytest.raises(ModelError, match=match):
        call()


def test_big_endian_words_unpack_as_their_values():
    # '>u4' was refused with "expected packed uint32 ... got dtype >u4" (the byte-order
    # conversion after the check could not be reached), while BitwiseDevice takes it
    from sim.bitwise import pack_signs, unpack_signs
    x = np.array([[1, -1, 1, 1, -1]], np.int8)
    w = pack_signs(x, 32)
    assert np.array_equal(unpack_signs(w.astype(">u4"), 5), x)
    assert np.array_equal(unpack_signs(w.astype(np.uint64).astype(">u8"), 5), x)
