"""BEP's integer kernels against plain Python twins."""
import itertools

import numpy as np

from models.bep import kernels as K


def test_reinforce_kernel_matches_python_xorshift():
    h = np.array([[0, -4, 7], [-32768, 32767, 2]], np.int16)
    thr = 2 ** 31  # probability 1/2
    state = np.array([12345], np.uint32)
    want, x, want_hits = h.astype(np.int64).copy(), 12345, 0
    for j, i in itertools.product(range(2), range(3)):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        if x < thr:
            want_hits += 1
            want[j, i] = np.clip(want[j, i] + (2 if want[j, i] >= 0 else -2), -32768, 32767)
    counts = np.zeros(64, np.int64)
    hits = K.reinforce(h, thr, state, -32768, 32767, counts)
    assert np.array_equal(h, want) and state[0] == x
    assert hits == want_hits and 0 < hits < 6  # this seed draws some but not all
    assert counts[K.XOR] == 3 * 6  # 3 xorshift EORs per counter


def test_trigger_counts_and_margin():
    # logits of 2 samples, 3 classes; thr = 2: sample 0 (y = 0) margin 5 - 5 = 0 < 2 triggers,
    # sample 1 (y = 2) margin 9 - 1 = 8 does not; argmax is the first maximum
    logits = np.array([[5, 4, 5], [1, 0, 9]], np.int32)
    trig, pred = np.zeros(2, np.bool_), np.zeros(2, np.int64)
    counts = np.zeros(64, np.int64)
    K.trigger(logits, np.array([0, 2]), 2, trig, pred, counts)
    assert trig.tolist() == [True, False] and pred.tolist() == [0, 2]
    # per sample 2 C + 1 = 7 int_cmp and 1 int_add
    assert counts[K.CMP] == 14 and counts[K.ADD] == 2
