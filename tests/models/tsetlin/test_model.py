"""Tsetlin machine: initial state, feedback, Noisy XOR over seeds, absorbing states."""
import numpy as np
import pytest

import sim
from models.tsetlin.card import TsetlinConfig
from models.tsetlin.data import noisy_xor, operator_patterns
from models.tsetlin.model import TsetlinMachine, clause_layer
from sim.bitwise.packing import pack_bits, unpack_bits
from sim.errors import ModelError


def _planes(states, b, wb):
    """Integer states [R, L] -> bit-planes [R, b, W] (naive twin of the machine's layout)."""
    return np.stack([pack_bits((states >> p) & 1, wb) for p in range(b)], axis=-2)


def _ints(planes, n):
    return sum(unpack_bits(planes[..., p, :], n).astype(np.int64) << p
               for p in range(planes.shape[-2]))


def test_initial_state_and_literal_layout():
    dev = sim.device("cortex-m4")
    tm = TsetlinMachine(40, 3, TsetlinConfig(clauses=4, state_bits=8), dev)
    assert np.all(tm.states() == 127)                    # N - 1: exclude, next to include
    assert not tm.include().any()
    lit = unpack_bits(tm.literals(np.eye(40, dtype=np.uint8)[:2]), 80)
    assert lit[0, 0] == 1 and lit[0, 40] == 0 and lit[0, 41] == 1 and lit[1, 1] == 1
    assert tm.clause_layer().weights.tolist() == [0] * 12   # empty clauses vote nothing


def test_type_ii_feedback_includes_the_zero_literals_of_firing_clauses():
    # y = 0 on an empty (firing) positive clause with T = 1: v = 1 -> selection p = 1; Type II
    # steps every excluded literal that is 0 up by one, N - 1 -> N: exactly those include
    dev = sim.device("cortex-m4")
    tm = TsetlinMachine(5, 1, TsetlinConfig(clauses=1, T=1, polarity="positive"), dev)
    x = np.array([[1, 0, 1, 1, 0]], np.uint8)
    tm.train_steps(tm.literals(x), np.array([0]), np.array([0]))
    want = np.concatenate([x[0] == 0, x[0] == 1])        # literals x_k = 0 and NOT x_k = 0
    assert np.array_equal(tm.include()[0, 0], want)


def test_same_seed_same_machine_and_counts():
    x, y, _, _ = noisy_xor(n_train=300, n_test=1, seed=3)
    runs = []
    for _ in range(2):
        dev = sim.device("cortex-m4")
        tm = TsetlinMachine(12, 2, TsetlinConfig(epochs=3, seed=9), dev).fit(x, y)
        runs.append((tm.states(), dev.ledger.total_ops()))
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]


@pytest.mark.parametrize("seed", range(4))
def test_and_absorbs_to_exactly_x1_and_x2(seed):
    x, y = operator_patterns("and")
    tm = TsetlinMachine(2, 1, TsetlinConfig(clauses=2, T=2, polarity="positive", seed=seed),
                        sim.device("cortex-m4"))
    n = tm.run_until_absorbed(x, y, 100_000)
    assert n is not None
    # literals [x1, x2, NOT x1, NOT x2]: every clause includes x1, x2 and nothing else
    assert tm.include()[0].tolist() == [[True, True, False, False]] * 2
    assert tm.scores(x)[:, 0].tolist() == [0, 0, 0, 2]
    # output 1 iff v >= T = 2: the AND (before, v >= 0 predicted 1 for every input: 25%)
    assert tm.predict(x).tolist() == [0, 0, 0, 1]
    assert tm.evaluate(x, y)["accuracy"] == 1.0


def test_is_absorbing_is_exact_on_hand_built_states():
    x, y = operator_patterns("and")
    tm = TsetlinMachine(2, 1, TsetlinConfig(clauses=2, T=2, polarity="positive"),
                        sim.device("cortex-m4"))
    assert not tm.is_absorbing(x, y)                      # empty clauses fire on y = 0 samples
    b = tm.config.state_bits
    st = np.full((2, 4), 2 ** (b - 1) - 1)
    st[:, :2] = 2 ** b - 1                                # both clauses x1 AND x2
    tm.state[0] = _planes(st, b, 32)
    assert tm.is_absorbing(x, y)
    assert not tm.is_absorbing(x, np.array([0, 0, 0, -1]))   # label noise on (1, 1)


@pytest.mark.parametrize("seed", range(3))
def test_or_with_t_above_the_bound_never_absorbs(seed):
    # m = 4: OR needs T <= floor(m/2) = 2 (Thm 2); T = 3 keeps moving, T = 2 absorbs
    x, y = operator_patterns("or")
    runs = {}
    for T in (2, 3):
        tm = TsetlinMachine(2, 1, TsetlinConfig(clauses=4, T=T, polarity="positive",
                                                seed=seed), sim.device("cortex-m4"))
        runs[T] = tm.run_until_absorbed(x, y, 30_000)
    assert runs[2] is not None and runs[3] is None


def test_bad_input_is_named():
    dev = sim.device("cortex-m4")
    with pytest.raises(ModelError, match="clauses"):
        TsetlinConfig(clauses=3)
    with pytest.raises(ModelError, match="specificity"):
        TsetlinConfig(s=0.5)
    tm = TsetlinMachine(4, 2, TsetlinConfig(clauses=2), dev)
    with pytest.raises(ModelError, match=r"\(N, 4\)"):
        tm.fit(np.zeros((3, 5), np.uint8), np.zeros(3, int))
    with pytest.raises(ModelError, match="0/1"):
        tm.predict(np.full((1, 4), 2))




NOISY_XOR_FAST_SEEDS = range(3)


def _noisy_xor_accuracy(seed: int) -> float:
    """pyTsetlinMachine's NoisyXORDemo: 12 bits, 5000 training samples with 40% of the labels
    flipped, 5000 clean test samples, 10 clauses, T = 15, s = 3.9, 200 epochs. The data are
    drawn with seed 0, the machine with ``seed``."""
    x_tr, y_tr, x_te, y_te = noisy_xor(seed=0)
    tm = TsetlinMachine(12, 2, TsetlinConfig(seed=seed), sim.device("cortex-m4"))
    return tm.fit(x_tr, y_tr).evaluate(x_te, y_te)["accuracy"]


def test_noisy_xor_few_seed_mean():
    # machine seeds 0, 1, 2 reach 99.6%, 100% and 99.08%; over 40 seeds (the slow test
    # below) the mean is 99.5% and the worst 95.5% (named seed streams, issue 28; before them
    # 100%, 100%, 99.2%, mean 99.4%, worst 95.1%). A mean under 95% means the
    # machine learns worse on average, not one unlucky seed. Training needs no popcount
    # (clauses are AND + compare).
    accs = [_noisy_xor_accuracy(s) for s in NOISY_XOR_FAST_SEEDS]
    assert np.mean(accs) >= 0.95, accs
    dev = sim.device("cortex-m4")
    x_tr, y_tr, _, _ = noisy_xor(n_train=200, n_test=1, seed=0)
    TsetlinMachine(12, 2, TsetlinConfig(epochs=1), dev).fit(x_tr, y_tr)
    ops = dev.ledger.total_ops("train")
    assert ops["xor_word"] > 0 and "popcount_word" not in ops


@pytest.mark.slow
def test_noisy_xor_40_seed_count():
    # pyTsetlinMachine reaches 100.00% in 20 of its 24 runs on the same data (bench/RESULTS.md);
    # this machine in 30 of 40 seeds (mean 99.5%; 29 of 40 before named seed streams, issue
    # 28). At least 24 of 40 (60%) must reach it.
    accs = [_noisy_xor_accuracy(s) for s in range(40)]
    at_100 = sum(a == 1.0 for a in accs)
    assert at_100 >= 24 and np.mean(accs) >= 0.98, (at_100, np.mean(accs))


def test_clause_layer_is_built_from_include_and_polarity():
    # 1 class, 2 clauses over o = 3 features: clause 0 = x1 AND NOT x3 (+1), clause 1 = x2 (-1)
    include = np.zeros((1, 2, 6), bool)
    include[0, 0, [0, 5]] = True
    include[0, 1, 1] = True
    layer = clause_layer(include, np.array([1, -1]), 32)
    x = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1]], np.uint8)
    out = sim.device("cortex-m4").run([layer], pack_bits(x, 32))
    # row 0: clause 0 fires -> +1; row 1: both fire -> 0; row 2: clause 1 -> -1
    assert out.scores[:, 0].tolist() == [1, 0, -1]


def test_fit_refuses_labels_and_epochs_it_would_misread():
    tm = TsetlinMachine(5, 3, TsetlinConfig(clauses=2, T=1, epochs=1), sim.device("cortex-m4"))
    x = np.random.default_rng(0).integers(0, 2, (6, 5)).astype(np.uint8)
    # 0.7 and 1.9 were truncated to classes 0 and 1 without a word
    with pytest.raises(ModelError, match="y has dtype float64; expected integer class labels"):
        tm.fit(x, np.array([0.7, 1.9, 2.2, 0, 1, 1]))
    with pytest.raises(ModelError, match="epochs = -1; expected an integer >= 0"):
        tm.fit(x, np.zeros(6, int), epochs=-1)
    # a 1-D x was reported as a problem with y
    with pytest.raises(ModelError, match=r"x has shape \(5,\); expected \(N, 5\)"):
        tm.fit(x[0], np.zeros(1, int))


def test_a_single_output_machine_is_not_exported_as_an_argmax():
    # its label is v >= 0; the ClauseLayer the C export runs takes the argmax over its one
    # class, always 0 (the exported labels were [0, 0] where predict gave [1, 1])
    tm = TsetlinMachine(3, 1, TsetlinConfig(clauses=2, T=1, polarity="positive"),
                        sim.device("cortex-m4"))
    x = np.zeros((2, 3), np.uint8)
    with pytest.raises(ModelError, match="single-output machine"):
        tm.trained(x, tm.scores(x), tm.predict(x), "cortex-m4")
