"""Packing +/-1 and 0/1 arrays into machine words and back: the bit layout of sim.bitwise.

Layout (the one the C exporter writes too): the last axis of length K is cut into
``W = ceil(K / word_bits)`` words; element ``k`` lives in word ``k // word_bits`` at bit
``k % word_bits`` counted from the least significant bit (LSB-first, as Larq/LCE and the
usual MCU headers do). For signs, bit 1 means +1 and bit 0 means -1. Padding bits (the
``W * word_bits - K`` high bits of the last word) are always 0, so ``popcount(a XOR b)``
over whole words counts exactly the disagreements of the K real elements and a product
``K - 2 popcount(a XOR b)`` needs no padding mask.

Words are little-endian ``uint32`` (``word_bits = 32``, Cortex-M) or ``uint64``
(``word_bits = 64``, x86 and the FPGA fabric).
"""
from __future__ import annotations

import numpy as np

from sim.errors import ModelError

WORD_DTYPES = {32: np.dtype("<u4"), 64: np.dtype("<u8")}
"""word_bits -> numpy dtype of one packed word"""


def word_dtype(word_bits: int) -> np.dtype:
    """The numpy dtype of a word of ``word_bits`` bits (32 or 64); anything else is an error."""
    try:
        return WORD_DTYPES[int(word_bits)]
    except (KeyError, TypeError, ValueError):
        raise ModelError(f"word_bits = {word_bits!r}: packed words are 32 or 64 bits "
                         "(32 on Cortex-M, 64 on x86 and FPGA profiles)") from None


def n_words(k: int, word_bits: int) -> int:
    """Words needed for ``k`` bits: ``ceil(k / word_bits)``."""
    return -(-int(k) // int(word_bits))


def _as_int_array(x, what: str) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind not in "iub":
        raise ModelError(f"{what}: expected an integer (int8) array, got dtype {x.dtype}")
    if x.ndim < 1:
        raise ModelError(f"{what}: expected at least 1 dimension (last axis = bits), got a scalar")
    return x


def pack_bool(bits: np.ndarray, word_bits: int) -> np.ndarray:
    """Pack a boolean array [..., K] into words [..., W] (LSB-first, zero padding)."""
    dt = word_dtype(word_bits)
    k = bits.shape[-1]
    w = n_words(k, word_bits)
    pad = w * word_bits - k
    if pad:
        bits = np.concatenate([bits, np.zeros(bits.shape[:-1] + (pad,), dtype=bool)], axis=-1)
    # packbits LSB-first gives bytes in element order; on a little-endian view consecutive
    # bytes form one word with element 0 in bit 0.
    packed = np.packbits(bits, axis=-1, bitorder="little")
    return np.ascontiguousarray(packed).view(dt).reshape(bits.shape[:-1] + (w,))


def _unpack(words, k: int, what: str) -> np.ndarray:
    words = np.asarray(words)
    # either byte order (a big-endian '>u4' array from a file is read as its values)
    if words.dtype.kind != "u" or words.dtype.itemsize not in (4, 8):
        raise ModelError(f"{what}: expected packed uint32 or uint64 words, got dtype {words.dtype}")
    if words.ndim < 1:
        raise ModelError(f"{what}: expected at least 1 dimension (last axis = words)")
    word_bits = words.dtype.itemsize * 8
    k = int(k)
    if not (words.shape[-1] - 1) * word_bits < k <= words.shape[-1] * word_bits:
        raise ModelError(f"{what}: k = {k} bits do not match {words.shape[-1]} words of "
                         f"{word_bits} bits (need ceil(k / {word_bits}) = {words.shape[-1]})")
    as_le = np.ascontiguousarray(words).astype(words.dtype.newbyteorder("<"), copy=False)
    bytes_ = as_le.view(np.uint8).reshape(words.shape[:-1] + (words.shape[-1] * word_bits // 8,))
    return np.unpackbits(bytes_, axis=-1, count=k, bitorder="little").astype(bool)


def pack_signs(x, word_bits: int) -> np.ndarray:
    """Pack a +/-1 array ``x`` [..., K] into words [..., ceil(K / word_bits)]; bit 1 = +1.

    Parameters
    ----------
    x : integer array of -1 and +1 (int8 recommended), last axis K >= 1
    word_bits : 32 or 64

    Returns
    -------
    uint32 or uint64 array [..., W], padding bits 0.

    Raises
    ------
    ModelError
        ``x`` is not integer, holds a value other than -1/+1, or ``word_bits`` is not 32/64.
    """
    x = _as_int_array(x, "pack_signs x")
    if x.shape[-1] < 1:
        raise ModelError("pack_signs x: the last axis (K) is empty; need K >= 1")
    bad = (x != 1) & (x != -1)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ModelError(f"pack_signs x: value {x[idx]} at index {idx}; signs must be -1 or +1")
    return pack_bool(x > 0, word_bits)


def unpack_signs(words, k: int) -> np.ndarray:
    """Inverse of :func:`pack_signs`: int8 +/-1 array [..., k]."""
    bits = _unpack(words, k, "unpack_signs words")
    return np.where(bits, np.int8(1), np.int8(-1))


def pack_bits(b, word_bits: int) -> np.ndarray:
    """Pack a 0/1 (or bool) array ``b`` [..., K] into words [..., ceil(K / word_bits)]."""
    b = _as_int_array(b, "pack_bits b")
    if b.shape[-1] < 1:
        raise ModelError("pack_bits b: the last axis (K) is empty; need K >= 1")
    if b.dtype != bool:
        bad = (b != 0) & (b != 1)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ModelError(f"pack_bits b: value {b[idx]} at index {idx}; bits must be 0 or 1")
    return pack_bool(b.astype(bool, copy=False), word_bits)


def unpack_bits(words, k: int) -> np.ndarray:
    """Inverse of :func:`pack_bits`: uint8 0/1 array [..., k]."""
    return _unpack(words, k, "unpack_bits words").astype(np.uint8)


def transpose_packed(words, k: int) -> np.ndarray:
    """Transpose a packed bit matrix: words [M, ceil(k / wb)] -> [k, ceil(M / wb)].

    Row ``j`` of the result holds column ``j`` of the unpacked [M, k] matrix, in the same
    word width. Backward passes need it: ``W^T`` rows are the columns of ``W``. A layout
    change only, so nothing is counted; a device that keeps both layouts stores both.
    """
    words = np.asarray(words)
    if words.ndim != 2:
        raise ModelError(f"transpose_packed words: expected 2-D [M, W], got shape {words.shape}")
    bits = _unpack(words, k, "transpose_packed words")
    return pack_bool(np.ascontiguousarray(bits.T), words.dtype.itemsize * 8)
