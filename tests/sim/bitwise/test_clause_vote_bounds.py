"""Clause votes are int32 sums: a class whose clause weights could sum past int32 is refused
when the layer is built (the simulator wrapped silently and the exported C had undefined
behaviour: two firing clauses of weight 2^31 - 1 gave the score -2)."""
import numpy as np
import pytest

from sim.bitwise import BitwiseDevice, ClauseLayer, pack_bits
from sim.errors import ModelError

I32 = 2**31 - 1


def _layer(weights, classes=(0, 0), n_classes=2):
    pos = np.zeros((len(weights), 4), bool)
    pos[:, 0] = True                     # every clause includes x0: none is empty
    return ClauseLayer(pack_bits(pos, 32), pack_bits(np.zeros_like(pos), 32), 4,
                       np.array(classes), np.array(weights, np.int64), n_classes)


def test_two_clauses_of_the_largest_weight_are_refused():
    """The probe's input: 2 x (2^31 - 1) = 2^32 - 2 wraps to -2."""
    with pytest.raises(ModelError, match=r"class 0 .*sum to 4294967294 .*int32 .*wrap"):
        _layer([I32, I32])


def test_negative_weights_are_bounded_too():
    with pytest.raises(ModelError, match=r"class 1 .*sum to -2147483650 .*int32 .*wrap"):
        _layer([-2**30, -2**30 - 2], classes=(1, 1))


@pytest.mark.parametrize("weights,classes", [([I32 - 5, 5], (0, 0)),        # = 2^31 - 1
                                             ([I32, I32], (0, 1)),          # one per class
                                             ([-2**30, -2**30], (0, 0)),    # = -2^31
                                             ([I32, -2**31], (0, 0))])      # either sign alone
def test_sums_that_fit_int32_are_kept_and_computed_exactly(weights, classes):
    layer = _layer(weights, classes)
    x = pack_bits(np.array([[1, 0, 0, 0]]), 32)                   # every clause fires
    out = BitwiseDevice("cortex-m4").run([layer], x)
    want = [sum(w for w, c in zip(weights, classes, strict=True) if c == k) for k in (0, 1)]
    assert out.scores.tolist() == [want]


def test_an_empty_clause_votes_nothing_so_its_weight_does_not_count():
    pos = np.zeros((2, 4), bool)
    pos[0, 0] = True                                              # clause 1 includes nothing
    layer = ClauseLayer(pack_bits(pos, 32), pack_bits(np.zeros_like(pos), 32), 4,
                        np.array([0, 0]), np.array([I32, I32]), 1)
    assert layer.weights.tolist() == [I32, 0]


def test_the_device_refuses_weights_that_would_wrap():
    """BitwiseDevice.clause_votes takes raw arrays too (its empty clauses fire)."""
    dev = BitwiseDevice("cortex-m4")
    x = pack_bits(np.array([[1, 0, 0, 0]]), 32)
    inc = pack_bits(np.array([[1, 0, 0, 0]] * 2), 32)
    with pytest.raises(ModelError, match=r"class 0 .*int32 .*wrap"):
        dev.clause_votes(x, inc, np.zeros_like(inc), np.array([0, 0]), np.array([I32, I32]), 1)
