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
    counts, mem = np.zeros(64, np.int64), np.zeros(2, np.int64)
    hits = K.reinforce(h, thr, state, -32768, 32767, counts, mem)
    assert np.array_equal(h, want) and state[0] == x
    assert hits == want_hits and 0 < hits < 6  # this seed draws some but not all
    assert counts[K.XOR] == 3 * 6  # 3 xorshift EORs per counter
    # only the reinforced counters are loaded and stored: 2 B each way per hit
    assert mem.tolist() == [2 * hits, 2 * hits]


def test_trigger_counts_and_margin():
    # logits of 2 samples, 3 classes; thr = 2: sample 0 (y = 0) margin 5 - 5 = 0 < 2 triggers,
    # sample 1 (y = 2) margin 9 - 1 = 8 does not; argmax is the first maximum
    logits = np.array([[5, 4, 5], [1, 0, 9]], np.int32)
    trig, pred = np.zeros(2, np.bool_), np.zeros(2, np.int64)
    counts, mem = np.zeros(64, np.int64), np.zeros(2, np.int64)
    K.trigger(logits, np.array([0, 2]), 2, trig, pred, counts, mem)
    assert trig.tolist() == [True, False] and pred.tolist() == [0, 2]
    # per sample 2 C + 1 = 7 int_cmp and 1 int_add
    assert counts[K.CMP] == 14 and counts[K.ADD] == 2
    # per sample 3 int32 logits + a 1 B label read = 13 B; trigger flag + class written = 2 B
    assert mem.tolist() == [2 * 13, 2 * 2]


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
    counts, mem = np.zeros(len(OP_CODES), np.int64), np.zeros(2, np.int64)
    K.time_stability(z, target, stab, wrong, counts, mem)
    # neuron 0: -3 + 5 = 2 (right); neuron 1: 4 - 1 = 3 (right)
    assert stab.tolist() == [[2, 3]] and wrong.tolist() == [[0, 0]]
    target[1, 0, 1] = -1                                     # neuron 1: 4 + 1 = 5
    target[0, 0, 1] = -1                                     # -4 + 1 = -3: wrong
    K.time_stability(z, target, stab, wrong, counts, mem)
    assert stab.tolist() == [[2, -3]] and wrong.tolist() == [[0, 1]]
    # T x B x K = 4 adds and B x K = 2 compares per call
    assert counts[OP_CODES["int_add"]] == 8 and counts[OP_CODES["int_cmp"]] == 4
    # per call: T x B x K = 4 (int32 z + int8 target) = 20 B read, B x K = 2 (int32 S + flag)
    # = 10 B written
    assert mem.tolist() == [2 * 20, 2 * 10]
    # the update of selected neuron 1: 2 sum_t s*_t x_t over both steps
    x = np.array([[[1, -1, 1]], [[-1, -1, 1]]], np.int8)     # (T, B, K_in)
    delta = np.zeros((2, 3), np.int32)
    touched = np.zeros(2, np.uint8)
    mem[:] = 0
    K.accumulate_time(np.array([[1]], np.int32), target, x, delta, touched, counts, mem)
    # 2 (-1 * [1, -1, 1] + -1 * [-1, -1, 1]) = 2 [0, 2, -2]
    assert delta.tolist() == [[0, 0, 0], [0, 4, -4]] and touched.tolist() == [0, 1]
    # read: the int32 index 4 + T = 2 targets + T x K_in = 6 inputs + the int32 row 3 x 4 =
    # 24 B (the time sum stays in a register: the row is read once, not per step);
    # written: the row 12 + the touched flag 1 + the row's zeroing at its first touch 12 = 25
    assert mem.tolist() == [24, 25]


def test_per_element_kernels_count_their_bytes():
    """Each kernel reads and writes its values at the width the device holds them: int32
    z / u / stabilities, int8 +/-1 values, a byte per flag, int32 selected indices.
    2 samples x 5 neurons = 10 elements."""
    rng = np.random.default_rng(0)
    z = rng.integers(-9, 10, size=(2, 5)).astype(np.int32)
    t = rng.choice(np.array([-1, 1], np.int8), size=(2, 5))
    flags = np.empty((2, 5), np.uint8)
    counts = np.zeros(64, np.int64)

    def mem_of(kernel, *args):
        mem = np.zeros(2, np.int64)
        kernel(*args, counts, mem)
        return mem.tolist()
    # gate: 10 int32 read (40 B), 10 flags written
    assert mem_of(K.gate, z, 4, flags) == [40, 10]
    # desired: 10 x (int32 u + int8 current) = 50 B read, 10 int8 written
    assert mem_of(K.desired, z, t, np.empty((2, 5), np.int8)) == [50, 10]
    # wrong_bits: 10 x (int32 z + int8 target) = 50 B read, 10 flags written
    assert mem_of(K.wrong_bits, z, t, flags) == [50, 10]
    # select, groups of 2: 10 x (int32 z + flag) = 50 B read; ceil(5 / 2) = 3 groups x 2
    # samples = 6 int32 indices written (24 B)
    assert mem_of(K.select, z, flags, 2, np.empty((2, 3), np.int32)) == [50, 24]


def test_accumulate_counts_its_rows_and_zeroes_each_row_once():
    """2 samples, 3 groups (-1: none); row 1 selected by both samples, row 2 by one.
    K_in = 4 int8 inputs, int32 accumulator rows of 16 B."""
    sel = np.array([[1, -1, 2], [1, -1, -1]], np.int32)
    target = np.array([[1, -1, 1], [1, 1, -1]], np.int8)
    x = np.array([[1, 1, -1, -1], [1, -1, 1, -1]], np.int8)
    delta, touched = np.zeros((3, 4), np.int32), np.zeros(3, np.uint8)
    counts, mem = np.zeros(64, np.int64), np.zeros(2, np.int64)
    K.accumulate(sel, target, x, delta, touched, counts, mem)
    # row 1: 2 (-1) [1, 1, -1, -1] + 2 (+1) [1, -1, 1, -1] = [0, -4, 4, 0] (target[b, 1]);
    # row 2: 2 (+1) [1, 1, -1, -1]
    assert delta.tolist() == [[0, 0, 0, 0], [0, -4, 4, 0], [2, 2, -2, -2]]
    assert touched.tolist() == [0, 1, 1] and counts[K.ADD] == 3 * 4
    # read: 6 int32 indices (24 B) + 3 selections x (target 1 + 4 inputs + row 16 = 21 B) = 87;
    # written: 3 x (row 16 + flag 1) = 51 + 2 rows zeroed at their first touch x 16 = 83
    assert mem.tolist() == [24 + 3 * 21, 3 * 17 + 2 * 16]
