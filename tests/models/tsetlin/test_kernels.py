"""Tsetlin kernels: bit-plane increments and decrements equal integer ones, counted exactly."""
import numpy as np
import pytest

from models.tsetlin import kernels as K
from sim.bitwise.packing import pack_bits, unpack_bits


def _planes(states, b, wb):
    """Integer states [R, L] -> bit-planes [R, b, W] (naive twin of the machine's layout)."""
    return np.stack([pack_bits((states >> p) & 1, wb) for p in range(b)], axis=-2)


def _ints(planes, n):
    return sum(unpack_bits(planes[..., p, :], n).astype(np.int64) << p
               for p in range(planes.shape[-2]))


@pytest.mark.parametrize("wb,b,n", [(32, 8, 70), (64, 3, 64), (64, 8, 130)])
@pytest.mark.parametrize("delta", [1, -1])
def test_bit_plane_increments_equal_integer_increments(wb, b, n, delta):
    rng = np.random.default_rng(wb + b + n)
    st = rng.integers(0, 2 ** b, size=(20, n))
    st[0] = 0
    st[1] = 2 ** b - 1                                   # both saturation ends
    mask = rng.integers(0, 2, size=(20, n))
    planes = _planes(st, b, wb)
    words = pack_bits(mask, wb)
    want_ops = _ripple_counts(planes, words, delta, wb)
    counts = np.zeros(len(K.OP_CODES), np.int64)
    mem = np.zeros(2, np.int64)
    K.planes_add(planes, words, delta, counts, mem)
    want = np.clip(st + delta * mask, 0, 2 ** b - 1)
    assert np.array_equal(_ints(planes, n), want)
    assert (counts[K.XOR], counts[K.AND], counts[K.OR], counts[K.CMP]) == want_ops[:4]
    assert mem.tolist() == [want_ops[4]] * 2             # every plane read is written back


def _ripple_counts(planes, words, delta, wb):
    """The kernel's counting convention, replayed in Python on one word at a time: per plane
    visited 1 zero test, and (while a carry is left) 1 AND + 1 XOR + 1 read/write; when the
    carry runs past the top plane, 1 OR (inc) or AND (dec, BIC) + 1 read/write per plane."""
    full = (1 << wb) - 1
    xor = and_ = or_ = cmp = rw = 0
    for r in range(planes.shape[0]):
        for w in range(planes.shape[2]):
            carry = int(words[r, w])
            nb = planes.shape[1]
            for p in range(nb):
                cmp += 1
                if carry == 0:
                    break
                plane = int(planes[r, p, w])
                carry = (plane & carry) if delta > 0 else ((~plane & full) & carry)
                and_, xor, rw = and_ + 1, xor + 1, rw + 1
            if carry:
                rw += nb
                if delta > 0:
                    or_ += nb
                else:
                    and_ += nb
    return xor, and_, or_, cmp, rw


def test_plane_counts_are_exact():
    # one word, 4 planes, all automata at 0b0011, +1 on all: carry through planes 0, 1, stops
    # at plane 2 (carry AND 0b0011 -> plane 2 gets the carry, carry becomes 0), then exit
    # test at plane 3: 3 planes toggled (3 and + 3 xor), 4 zero tests, no saturation
    planes = np.zeros((1, 4, 1), np.uint32)
    planes[0, :2, 0] = np.uint32(0xFFFFFFFF)
    counts = np.zeros(len(K.OP_CODES), np.int64)
    mem = np.zeros(2, np.int64)
    K.planes_add(planes, np.full((1, 1), 0xFFFFFFFF, np.uint32), 1, counts, mem)
    assert _ints(planes, 32).tolist() == [[4] * 32]
    assert (counts[K.AND], counts[K.XOR], counts[K.CMP], counts[K.OR]) == (3, 3, 4, 0)
    assert mem.tolist() == [3, 3]




@pytest.mark.parametrize("p", [0.1, 1 / 3.9, 0.5])
def test_feedback_masks_are_independent_bits_of_probability_p(p):
    # 20,000 masks of 3 words, the last one 16 valid bits (144 bits each): the sampler must
    # set each valid bit with probability p (mean and every position within 5 standard
    # errors), independently (per-mask count variance = binomial n p (1 - p) within 5%),
    # and never a bit outside ``valid``
    valid = np.array([2 ** 64 - 1, 2 ** 64 - 1, 2 ** 16 - 1], np.uint64)
    fb, und = np.zeros(3, np.uint64), np.zeros(3, np.uint64)
    h = np.uint64(12345)
    dm = K.probability_digits(p)
    masks = np.zeros((20000, 3), np.uint64)
    for i in range(len(masks)):
        h = np.uint64(K._mask_rows(h, dm, valid, fb, und))
        masks[i] = fb
    assert not np.any(masks & ~valid)
    bits = unpack_bits(masks, 192)[:, :144].astype(float)
    se = np.sqrt(p * (1 - p) / bits.size)
    assert abs(bits.mean() - p) < 5 * se
    assert np.all(np.abs(bits.mean(0) - p) < 5 * np.sqrt(p * (1 - p) / len(bits)))
    assert abs(bits.sum(1).var() / (144 * p * (1 - p)) - 1) < 0.05
