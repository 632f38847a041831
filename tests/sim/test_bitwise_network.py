"""Packed networks on BitwiseDevice: forward equals the integer +/-1 network, counts per layer."""
import itertools
import re

import numpy as np
import pytest

from sim.bitwise import (
    BitwiseDevice,
    ClauseLayer,
    ScoresLayer,
    SignLayer,
    pack_signs,
    unpack_signs,
)
from sim.errors import HardwareLimitError, ModelError


def _naive(ws, thrs, bias, x):
    """Plain integer +/-1 network: a = sign(W a - thr) with sign(0) = +1, then W a + bias."""
    a = x.astype(np.int64)
    for w, t in zip(ws[:len(thrs)], thrs, strict=True):   # a w past thrs: the scores layer
        a = np.where(a @ w.T.astype(np.int64) >= t, 1, -1)
    scores = a @ ws[-1].T.astype(np.int64) + bias if bias is not None else None
    return a, scores


def test_forward_equals_naive_integer_network():
    rng = np.random.default_rng(0)
    sizes, wb = (37, 64, 20, 5), 32
    ws = [rng.choice(np.array([-1, 1], np.int8), size=(m, k)) for k, m in itertools.pairwise(sizes)]
    thrs = [rng.integers(-4, 5, size=m) for m in sizes[1:-1]]
    bias = rng.integers(-3, 4, size=sizes[-1])
    layers = [SignLayer(pack_signs(w, wb), w.shape[1], t)
              for w, t in zip(ws[:-1], thrs, strict=True)]
    layers.append(ScoresLayer(pack_signs(ws[-1], wb), sizes[-2], bias))
    x = rng.choice(np.array([-1, 1], np.int8), size=(9, sizes[0]))
    dev = BitwiseDevice("cortex-m4")
    out = dev.run(layers, pack_signs(x, wb))
    _, scores = _naive(ws[:-1] + [ws[-1]], thrs, bias, x)
    assert np.array_equal(out.scores, scores)
    assert np.array_equal(out.labels, np.argmax(scores, axis=1))
    # hidden 1 x 9 samples: 9 x 64 outputs x ceil(37/32) = 2 words -> 1152 popcounts
    assert dev.ledger.total_ops("infer/L0_sign")["popcount_word"] == 9 * 64 * 2
    # sign: 9 x 64 compares; the scores layer: 9 x 5 bias adds + 9 x 4 argmax compares
    assert dev.ledger.total_ops("infer/L0_sign")["int_cmp"] == 9 * 64
    assert dev.ledger.total_ops("infer/L2_scores")["int_cmp"] == 9 * 4
    assert dev.ledger.samples() == {"infer": 9}


def test_sign_layer_last_returns_bits():
    rng = np.random.default_rng(1)
    w = rng.choice(np.array([-1, 1], np.int8), size=(70, 10))
    x = rng.choice(np.array([-1, 1], np.int8), size=(3, 10))
    out = BitwiseDevice("fpga-bnn").run([SignLayer(pack_signs(w, 64), 10, np.zeros(70, int))],
                                        pack_signs(x, 64))
    assert out.scores is None and out.n_bits == 70
    assert np.array_equal(unpack_signs(out.bits, 70), _naive([w], [0], None, x)[0])


def test_compile_checks_the_network():
    w = pack_signs(np.ones((4, 8), np.int8), 32)
    dev = BitwiseDevice("cortex-m4")
    with pytest.raises(ModelError, match="expects k = 8 input bits but layer 0 gives 4"):
        dev.compile([SignLayer(w, 8, np.zeros(4, int)), ScoresLayer(w, 8)])
    with pytest.raises(ModelError, match="ScoresLayer must be last"):
        dev.compile([ScoresLayer(w, 8), SignLayer(w, 8, np.zeros(4, int))])
    with pytest.raises(ModelError, match="64-bit words"):
        BitwiseDevice("fpga-bnn").compile([ScoresLayer(w, 8)])
    with pytest.raises(ModelError, match="thresholds: expected an integer vector of shape"):
        SignLayer(w, 8, np.zeros(3, int))
    with pytest.raises(ModelError, match="k = 40 input bits do not match 1 words"):
        ScoresLayer(w, 40)
    # 300,000 rows x (1 word + 1 bias) x 4 B = 2.4 MB > the 1 MB Flash, the largest memory
    big = np.zeros((300_000, 1), np.uint32)
    with pytest.raises(HardwareLimitError, match="exceeds cortex-m4"):
        dev.compile([ScoresLayer(big, 8)])


def test_clause_layer_silences_empty_clauses():
    from sim.bitwise import ClauseLayer, pack_bits
    pos = np.zeros((3, 5), np.uint8)
    neg = np.zeros((3, 5), np.uint8)
    pos[1, 0] = 1                      # clause 1: x0
    neg[2, 4] = 1                      # clause 2: NOT x4
    layer = ClauseLayer(pack_bits(pos, 32), pack_bits(neg, 32), 5, np.array([0, 0, 1]),
                        np.array([5, 1, 1]), 2)
    assert layer.weights.tolist() == [0, 1, 1]                 # clause 0 is empty: weight 0
    x = np.array([[1, 0, 0, 0, 0], [0, 0, 0, 0, 1], [1, 0, 0, 0, 1]], np.uint8)
    out = BitwiseDevice("cortex-m4").run([layer], pack_bits(x, 32))
    assert out.scores.tolist() == [[1, 1], [0, 0], [1, 0]]
    assert out.labels.tolist() == [0, 0, 0]
    with pytest.raises(ModelError, match="ClauseLayer must be last"):
        BitwiseDevice("cortex-m4").compile([layer, layer])


@pytest.mark.parametrize("kind", ["sign", "scores", "clauses"])
@pytest.mark.parametrize("name", ["a b", "a*/b", "", "L0/x", 3])
def test_layer_name_outside_the_pattern_is_refused_when_built(kind, name):
    # smallest failing input: SignLayer(..., name="a b") was accepted and BitwiseDevice.run
    # failed later with a LedgerError about the scope 'L0_a b'
    w = pack_signs(np.ones((2, 5), np.int8), 32)
    build = {"sign": lambda: SignLayer(w, 5, np.zeros(2, np.int32), name=name),
             "scores": lambda: ScoresLayer(w, 5, name=name),
             "clauses": lambda: ClauseLayer(w, w, 5, np.zeros(2, np.int32),
                                            np.ones(2, np.int32), 1, name=name)}[kind]
    cls = {"sign": "SignLayer", "scores": "ScoresLayer", "clauses": "ClauseLayer"}[kind]
    with pytest.raises(ModelError, match="^" + re.escape(
            f"{cls} name {name!r}: layer names must match [A-Za-z0-9_.-]+ (they become "
            "ledger scopes and C identifiers)") + "$"):
        build()


def test_every_name_in_the_pattern_runs():
    # the pattern's whole alphabet in one name reaches the ledger as scope L0_<name>
    name = "Az09_.-"
    layer = ScoresLayer(pack_signs(np.ones((2, 5), np.int8), 32), 5, name=name)
    dev = BitwiseDevice("cortex-m4")
    dev.run([layer], pack_signs(np.ones((1, 5), np.int8), 32))
    assert dev.ledger.total_ops(f"infer/L0_{name}")["int_cmp"] == 1   # argmax of 2 scores
