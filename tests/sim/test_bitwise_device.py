"""BitwiseDevice: every kernel against a naive +/-1 integer twin, exact counts, bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hw_profiles.loader import DATA_DIR
from sim import device
from sim.bitwise import BitwiseDevice, pack_bits, pack_signs, unpack_bits, unpack_signs
from sim.errors import ModelError

PROFILE = {32: "cortex-m4", 64: "fpga-bnn"}


def _signs(rng, *shape):
    return rng.choice(np.array([-1, 1], np.int8), size=shape)


def test_registered_for_bitwise_profiles():
    dev = device("cortex-m4")
    assert isinstance(dev, BitwiseDevice) and dev.word_bits == 32
    assert device("fpga-bnn").word_bits == 64


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 70), k=st.integers(1, 150),
       wb=st.sampled_from([32, 64]), seed=st.integers(0, 2**31))
def test_sign_matmul_equals_integer_products(n, m, k, wb, seed):
    rng = np.random.default_rng(seed)
    a, b = _signs(rng, n, k), _signs(rng, m, k)
    dev = BitwiseDevice(PROFILE[wb])
    out = dev.sign_matmul(pack_signs(a, wb), pack_signs(b, wb), k)
    assert out.dtype == np.int32
    assert np.array_equal(out, a.astype(np.int64) @ b.T.astype(np.int64))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 5), m=st.integers(1, 70), k=st.integers(1, 150),
       wb=st.sampled_from([32, 64]), mask_of=st.sampled_from(["a", "b"]),
       seed=st.integers(0, 2**31))
def test_masked_sign_matmul_equals_gated_products(n, m, k, wb, mask_of, seed):
    rng = np.random.default_rng(seed)
    a, b = _signs(rng, n, k), _signs(rng, m, k)
    g = rng.integers(0, 2, size=(n if mask_of == "a" else m, k))
    dev = BitwiseDevice(PROFILE[wb])
    got = dev.masked_sign_matmul(pack_signs(a, wb), pack_signs(b, wb), pack_bits(g, wb),
                                 mask_of=mask_of, k=k)
    ai, bi = a.astype(np.int64), b.astype(np.int64)
    want = (ai * g) @ bi.T if mask_of == "a" else ai @ (bi * g).T
    assert np.array_equal(got, want)
    # k_eff given explicitly gives the same result
    again = dev.masked_sign_matmul(pack_signs(a, wb), pack_signs(b, wb), pack_bits(g, wb),
                                   k_eff=g.sum(1), mask_of=mask_of)
    assert np.array_equal(again, want)


def test_all_zero_mask_and_all_zero_words():
    dev = BitwiseDevice("cortex-m4")
    a = pack_signs(-np.ones((2, 40), np.int8), 32)     # all-zero words
    b = pack_signs(np.ones((3, 40), np.int8), 32)
    assert (dev.sign_matmul(a, b, 40) == -40).all()
    zero = np.zeros((2, 2), np.uint32)
    assert (dev.masked_sign_matmul(a, b, zero) == 0).all()


def test_nested_count_records_under_outer_inner():
    """Device.count's rule (inherited): an inner block records under outer/inner."""
    dev = BitwiseDevice("cortex-m4")
    a = pack_signs(np.array([[1, -1, 1]], np.int8), 32)
    b = pack_signs(np.array([[1, 1, 1], [-1, 1, -1]], np.int8), 32)
    with dev.count("train", samples=3):
        with dev.count("a", samples=2):
            dev.sign_matmul(a, b, 3)
        dev.popcount(a)
    # 1 x 2 outputs x 1 word: 1 xor, 1 popcount, 1 + 1 int_add each
    assert dev.ledger.ops("train/a") == {"xor_word": 2, "popcount_word": 2, "int_add": 4}
    assert dev.ledger.ops("train") == {"popcount_word": 1, "int_add": 1}   # 1 word
    assert dev.ledger.samples() == {"train": 3, "train/a": 2}


def test_sign_matmul_counts_follow_the_formula():
    rng = np.random.default_rng(0)
    n, m, k = 3, 5, 70
    for wb, w in ((32, 3), (64, 2)):                     # ceil(70/32) = 3, ceil(70/64) = 2
        dev = BitwiseDevice(PROFILE[wb])
        with dev.count("fwd", samples=n):
            dev.sign_matmul(pack_signs(_signs(rng, n, k), wb), pack_signs(_signs(rng, m, k), wb), k)
        # 3 x 5 = 15 outputs x w words: w xor, w popcount, w + 1 int_add each
        assert dev.ledger.total_ops("fwd") == {"xor_word": 15 * w, "popcount_word": 15 * w,
                                               "int_add": 15 * (w + 1)}
        # each output streams its two rows (2 w words of wb/8 bytes), writes one int32
        assert dev.ledger.total_bytes("fwd") == {("local", "read"): 15 * 2 * w * wb // 8,
                                                 ("local", "write"): 15 * 4}
        assert dev.ledger.samples() == {"fwd": n}


def test_masked_counts_include_the_mask_popcounts():
    dev = BitwiseDevice("cortex-m4")
    rng = np.random.default_rng(1)
    a, b = pack_signs(_signs(rng, 2, 40), 32), pack_signs(_signs(rng, 4, 40), 32)
    g = pack_bits(rng.integers(0, 2, (2, 40)), 32)
    dev.masked_sign_matmul(a, b, g)
    # 8 outputs x 2 words: 16 xor, 16 and, 16 popcount, 8 x 3 = 24 adds;
    # k_eff: 2 mask rows x 2 words = 4 popcounts + 4 adds
    assert dev.ledger.total_ops() == {"xor_word": 16, "and_word": 16, "popcount_word": 20,
                                      "int_add": 28}
    # reads: 8 outputs x 3 rows x 2 words x 4 B = 192, + the 2 mask rows once more (16 B)
    assert dev.ledger.total_bytes() == {("local", "read"): 208, ("local", "write"): 32}


def test_sign_ties_go_to_plus_one_and_thresholds_broadcast():
    dev = BitwiseDevice("cortex-m4")
    z = np.array([[-1, 0, 1, 5], [2, 2, 2, 2]], np.int32)
    assert unpack_signs(dev.sign(z), 4).tolist() == [[-1, 1, 1, 1], [1, 1, 1, 1]]
    thr = np.array([0, 1, 2, 6])
    assert unpack_signs(dev.sign(z, thr), 4).tolist() == [[-1, -1, -1, -1], [1, 1, 1, -1]]
    # 8 elements x (1 compare + 1 OR) per call
    assert dev.ledger.total_ops() == {"int_cmp": 16, "or_word": 16}


def test_flip_bits_and_xor_words():
    dev = BitwiseDevice("fpga-bnn")
    x = np.zeros((2, 100), np.uint8)
    words = pack_bits(x, 64)
    flipped = dev.flip_bits(words, np.array([[0, 3], [1, 99], [1, 70], [1, 70]]))
    bits = unpack_bits(flipped, 100)
    assert bits.sum() == 2 and bits[0, 3] == 1 and bits[1, 99] == 1   # 70 flipped twice
    assert words.sum() == 0                                            # input untouched
    assert np.array_equal(dev.xor_words(flipped, flipped), words)
    # 4 single-bit flips + 2 x 2 words xor'ed
    assert dev.ledger.total_ops() == {"xor_word": 8}


def test_counter_add_saturates_in_place():
    dev = BitwiseDevice("cortex-m4")
    h = np.array([[32760, -5, 0], [1, 2, 3]], np.int16)
    out = dev.counter_add(h, np.array([[10, -2, 2]]), -32768, 32767, rows=np.array([0]))
    assert out is h and h.tolist() == [[32767, -7, 2], [1, 2, 3]]
    dev.counter_add(h, -4, -3, 3)
    assert h.tolist() == [[3, -3, -2], [-3, -2, -1]]
    # 3 + 6 updated counters: one add and two compares each
    assert dev.ledger.total_ops() == {"int_add": 9, "int_cmp": 18}
    # reads: 3 int16 + delta (3 int64) + 6 int16; writes 9 int16
    assert dev.ledger.total_bytes() == {("local", "read"): 6 + 24 + 12, ("local", "write"): 18}


def test_popcount_and_argmax():
    dev = BitwiseDevice("cortex-m4")
    b = np.zeros((2, 40), np.uint8)
    b[0, [0, 31, 32]] = 1
    words = pack_bits(b, 32)
    assert dev.popcount(words).tolist() == [3, 0]
    assert dev.popcount(words, per_word=True).tolist() == [[2, 1], [0, 0]]
    assert dev.argmax(np.array([[1, 5, 5], [7, 0, 7]])).tolist() == [1, 0]   # ties -> lowest


def test_price_on_the_profile():
    dev = BitwiseDevice("cortex-m4")
    a = pack_signs(np.ones((1, 32), np.int8), 32)
    dev.sign_matmul(a, a, 32)
    # 1 xor (785.4 pJ) + 1 popcount (14,137.2 pJ) + 2 adds (2 x 785.4) + 8 B read x 196.35
    # + 4 B written x 196.35
    want = 785.4 + 14137.2 + 2 * 785.4 + 12 * 196.35
    assert dev.report().total_j == pytest.approx(want * 1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda d: d.sign_matmul(np.zeros((1, 2), np.uint64), np.zeros((1, 2), np.uint64), 40),
     "expected packed uint32"),
    (lambda d: d.sign_matmul(np.zeros((1, 2), np.uint32), np.zeros((1, 3), np.uint32), 40),
     r"\(1, 2\) and b_words \(1, 3\)"),
    (lambda d: d.sign_matmul(np.zeros((1, 2), np.uint32), np.zeros((1, 2), np.uint32), 70),
     "k = 70 bits need 3 words"),
    (lambda d: d.sign_matmul(np.full((1, 2), 2**31, np.uint32), np.zeros((1, 2), np.uint32),
                             40), "a_words has padding bits set"),
    (lambda d: d.sign_matmul(np.zeros(2, np.uint32), np.zeros((1, 2), np.uint32), 40), "2-D"),
    (lambda d: d.masked_sign_matmul(np.zeros((2, 1), np.uint32), np.zeros((3, 1), np.uint32),
                                    np.zeros((3, 1), np.uint32)), r"must be \[2, 1\]"),
    (lambda d: d.masked_sign_matmul(np.zeros((2, 1), np.uint32), np.zeros((3, 1), np.uint32),
                                    np.zeros((2, 1), np.uint32), mask_of="c"), "mask_of"),
    (lambda d: d.sign(np.zeros(3, np.float32)), "integer array"),
    (lambda d: d.sign(np.zeros(3, np.int32), 0.5), "no float"),
    (lambda d: d.sign(np.zeros((2, 3), np.int32), np.zeros(2, np.int32)), "broadcast"),
    (lambda d: d.counter_add(np.zeros(3, np.float32), 1, -1, 1), "signed int8/16/32"),
    (lambda d: d.counter_add(np.zeros(3, np.int16), 1, -40000, 1), "lo = -40000"),
    (lambda d: d.flip_bits(np.zeros((1, 1), np.uint32), np.array([[0, 32]])), "outside"),
    (lambda d: d.argmax(np.zeros((2, 0), np.int32)), r"\[N, C>=1\]"),
])
def test_bad_input_is_refused(call, match):
    with pytest.raises(ModelError, match=match):
        call(BitwiseDevice("cortex-m4"))


def test_profile_with_16_bit_words_is_refused(tmp_path):
    text = (DATA_DIR / "cortex-m4.toml").read_text()
    assert 'word_bits = { value = 32,' in text
    path = tmp_path / "m16.toml"
    path.write_text(text.replace('word_bits = { value = 32,', 'word_bits = { value = 16,'))
    with pytest.raises(ModelError, match=r"limits.word_bits = 16; the bitwise engine needs "
                                         r"32 or 64$"):
        BitwiseDevice(path)


def test_gpu_profile_is_refused_by_kind(toy_gpu_path):
    with pytest.raises(ModelError, match=r"^\[BitwiseDevice\] profile 'toy-gpu \(file: .*"
                                         r"toy-gpu.toml\)' is of kind 'gpu'; BitwiseDevice "
                                         r"models bitwise and cpu profiles"):
        BitwiseDevice(toy_gpu_path)


def _clauses(rng, n_clauses, k, p=0.08):
    """Sparse random include masks (a trained TM includes few literals); never both a
    literal and its negation in one clause half the time, to get clauses that can fire."""
    pos = rng.random((n_clauses, k)) < p
    neg = (rng.random((n_clauses, k)) < p) & ~pos
    pos[0] = neg[0] = False                                    # clause 0 includes nothing
    return pos, neg


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), c=st.integers(1, 40), k=st.integers(1, 100),
       wb=st.sampled_from([32, 64]), seed=st.integers(0, 2**31))
def test_clause_votes_equal_naive_clauses(n, c, k, wb, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, size=(n, k))
    pos, neg = _clauses(rng, c, k)
    cls = rng.integers(0, 3, size=c)
    wt = rng.choice([-1, 1, 2], size=c)
    dev = BitwiseDevice(PROFILE[wb])
    votes, fired = dev.clause_votes(pack_bits(x, wb), pack_bits(pos, wb), pack_bits(neg, wb),
                                    cls, wt, 3, k=k)
    # naive twin: a clause fires iff every included plain literal is 1 and every negated is 0
    want_fired = np.array([[np.all(x[i][pos[j]] == 1) and np.all(x[i][neg[j]] == 0)
                            for j in range(c)] for i in range(n)])
    want_votes = np.zeros((n, 3), np.int64)
    for j in range(c):
        want_votes[:, cls[j]] += wt[j] * want_fired[:, j]
    assert np.array_equal(unpack_bits(fired, c).astype(bool), want_fired)
    assert np.array_equal(votes, want_votes)
    assert want_fired[:, 0].all()                              # the empty clause fires
    w = -(-k // wb)
    assert dev.ledger.total_ops() == {"and_word": n * c * w * 2, "or_word": n * c * w * 2,
                                      "int_cmp": n * c, "int_add": int(want_fired.sum())}


def test_clause_votes_refuses_bad_input():
    dev = BitwiseDevice("cortex-m4")
    x, m = np.zeros((2, 1), np.uint32), np.zeros((3, 1), np.uint32)
    with pytest.raises(ModelError, match="clause_class values must lie in"):
        dev.clause_votes(x, m, m, np.array([0, 1, 2]), np.ones(3, int), 2)
    with pytest.raises(ModelError, match="must both be"):
        dev.clause_votes(x, m, np.zeros((2, 1), np.uint32), np.zeros(3, int), np.ones(3, int), 2)
    with pytest.raises(ModelError, match=r"clause_weight must be an integer array of shape \(3,\)"):
        dev.clause_votes(x, m, m, np.zeros(3, int), np.ones(3), 2)


def test_counter_add_saturates_without_wrapping():
    dev = BitwiseDevice("cortex-m4")
    # an int32 counter at its maximum plus 1 wrapped to -2**31 in int32 and was clipped to lo
    c = np.array([2**31 - 1], np.int32)
    dev.counter_add(c, 1, -(2**31), 2**31 - 1)
    assert c.tolist() == [2**31 - 1]
    # an int64 delta of 2**31 on an int16 counter was truncated to -2**31: clipped to lo
    c16 = np.array([5], np.int16)
    dev.counter_add(c16, np.array([2**31], np.int64), -100, 100)
    assert c16.tolist() == [100]
    c16 = np.array([5], np.int16)
    dev.counter_add(c16, np.array([2**64 - 1], np.uint64), -100, 100)
    assert c16.tolist() == [100]


def test_add_int_refuses_what_would_wrap_the_int32_accumulators():
    dev = BitwiseDevice("cortex-m4")
    assert dev.add_int(np.array([2**31 - 2]), np.array([1])).tolist() == [2**31 - 1]
    with pytest.raises(ModelError, match="outside the device's int32 range"):
        dev.add_int(np.array([2**31 - 2]), np.array([3]))      # was -2147483647
    with pytest.raises(ModelError, match="outside the device's int32 range"):
        dev.add_int(np.array([2**40]), np.array([1]))           # was 1: truncated
