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


def test_bep_tt_stability_and_update_are_summed_over_every_step():
    """The paper's time sum (model_tt's docstring): S_j = sum_t s*_t z_t over every step,
    wrong iff S_j < 0, and the update sums every step's term. Before stop 53 both summed
    only the steps where the neuron was wrong at that step: neuron 0 below (wrong at t = 0
    only, right by far at t = 1) was selected with S = -3, though S = -3 + 5 = 2 >= 0.
    T = 2, one sample, K = 2 neurons, K_in = 3."""
    from sim.bitwise.device import OP_CODES
    z = np.array([[[-3, 4]], [[5, -1]]], np.int32)          # (T, B, K)
    target = np.array([[[1, 1]], [[1, 1]]], np.int8)
    stab = np.zeros((1, 2), np.int32)
    wrong = np.zeros((1, 2), np.uint8)
    counts = np.zeros(len(OP_CODES), np.int64)
    K.time_stability(z, target, stab, wrong, counts)
    # neuron 0: -3 + 5 = 2 (right); neuron 1: 4 - 1 = 3 (right)
    assert stab.tolist() == [[2, 3]] and wrong.tolist() == [[0, 0]]
    target[1, 0, 1] = -1                                     # neuron 1: 4 + 1 = 5
    target[0, 0, 1] = -1                                     # -4 + 1 = -3: wrong
    K.time_stability(z, target, stab, wrong, counts)
    assert stab.tolist() == [[2, -3]] and wrong.tolist() == [[0, 1]]
    # T x B x K = 4 adds and B x K = 2 compares per call
    assert counts[OP_CODES["int_add"]] == 8 and counts[OP_CODES["int_cmp"]] == 4
    # the update of selected neuron 1: 2 sum_t s*_t x_t over both steps
    x = np.array([[[1, -1, 1]], [[-1, -1, 1]]], np.int8)     # (T, B, K_in)
    delta = np.zeros((2, 3), np.int32)
    touched = np.zeros(2, np.uint8)
    K.accumulate_time(np.array([[1]], np.int32), target, x, delta, touched, counts)
    # 2 (-1 * [1, -1, 1] + -1 * [-1, -1, 1]) = 2 [0, 2, -2]
    assert delta.tolist() == [[0, 0, 0], [0, 4, -4]] and touched.tolist() == [0, 1]
