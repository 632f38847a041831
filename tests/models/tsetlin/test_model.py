"""Tsetlin machine: bit-plane automata vs integers, feedback, Noisy XOR, absorbing states, C export."""
import numpy as np
import pytest

import sim
from models import tsetlin_kernels as K
from models.tsetlin import TsetlinConfig, TsetlinMachine, booleanise, noisy_xor, operator_patterns
from sim.bitwise.packing import pack_bits, unpack_bits
from sim.errors import ModelError


def _planes(states, b, wb):
    """Integer states [R, L] -> bit-planes [R, W, b] (naive twin of the machine's layout)."""
    return np.stack([pack_bits((states >> p) & 1, wb) for p in range(b)], axis=-1)


def _ints(planes, n):
    return sum(unpack_bits(planes[..., p], n).astype(np.int64) << p
               for p in range(planes.shape[-1]))


@pytest.mark.parametrize("wb,b,n", [(32, 8, 70), (64, 3, 64), (64, 8, 130)])
@pytest.mark.parametrize("delta", [1, -1])
def test_bit_plane_increments_equal_integer_increments(wb, b, n, delta):
    rng = np.random.default_rng(wb + b + n)
    st = rng.integers(0, 2 ** b, size=(20, n))
    st[0] = 0
    st[1] = 2 ** b - 1                                   # both saturation ends
    mask = rng.integers(0, 2, size=(20, n))
    planes = _planes(st, b, wb)
    counts = np.zeros(len(K.OP_CODES), np.int64)
    mem = np.zeros(2, np.int64)
    K.planes_add(planes, pack_bits(mask, wb), delta, counts, mem)
    want = np.clip(st + delta * mask, 0, 2 ** b - 1)
    assert np.array_equal(_ints(planes, n), want)
    assert counts[K.XOR] > 0 and mem[0] == mem[1]        # every plane read is written back


def test_plane_counts_are_exact():
    # one word, 4 planes, all automata at 0b0011, +1 on all: carry through planes 0, 1, stops
    # at plane 2 (carry AND 0b0011 -> plane 2 gets the carry, carry becomes 0), then exit
    # test at plane 3: 3 planes toggled (3 and + 3 xor), 4 zero tests, no saturation
    planes = np.zeros((1, 1, 4), np.uint32)
    planes[0, 0, :2] = np.uint32(0xFFFFFFFF)
    counts = np.zeros(len(K.OP_CODES), np.int64)
    mem = np.zeros(2, np.int64)
    K.planes_add(planes, np.full((1, 1), 0xFFFFFFFF, np.uint32), 1, counts, mem)
    assert _ints(planes, 32).tolist() == [[4] * 32]
    assert (counts[K.AND], counts[K.XOR], counts[K.CMP], counts[K.OR]) == (3, 3, 4, 0)
    assert mem.tolist() == [3, 3]


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


def test_noisy_xor_demo_reaches_100_percent():
    # pyTsetlinMachine's NoisyXORDemo: 12 bits, 5000 training samples with 40% labels
    # flipped, 5000 clean test samples, 10 clauses, T = 15, s = 3.9, 200 epochs -> 100.00%.
    # Not every seed gets there (bench/RESULTS.md: 27 of 40 machine seeds here, 20 of 24
    # pyTsetlinMachine runs on the same data); machine seed 2 does.
    x_tr, y_tr, x_te, y_te = noisy_xor(seed=0)
    dev = sim.device("cortex-m4")
    tm = TsetlinMachine(12, 2, TsetlinConfig(seed=2), dev).fit(x_tr, y_tr)
    assert tm.evaluate(x_te, y_te)["accuracy"] == 1.0
    ops = dev.ledger.total_ops("train")
    assert ops["xor_word"] > 0 and "popcount_word" not in ops   # training needs no popcount


@pytest.mark.parametrize("seed", range(4))
def test_and_absorbs_to_exactly_x1_and_x2(seed):
    x, y = operator_patterns("and")
    tm = TsetlinMachine(2, 1, TsetlinConfig(clauses=2, T=2, polarity="positive", seed=seed),
                        sim.device("cortex-m4"))
    n = tm.run_until_absorbed(x, y, 100_000)
    assert n is not None
    # literals [x1, x2, NOT x1, NOT x2]: every clause includes x1, x2 and nothing else
    assert tm.include()[0].tolist() == [[True, True, False, False]] * 2
    assert tm.predict(x).tolist() == [1, 1, 1, 1]          # v >= 0 always; see scores:
    assert tm.scores(x)[:, 0].tolist() == [0, 0, 0, 2]


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
    with pytest.raises(ModelError, match="thermometer"):
        booleanise(np.zeros((1, 2)), method="gray")


def test_booleanise_uses_the_dataset_helpers():
    x = np.array([[0.1, 0.6]])
    assert booleanise(x, "thermometer", levels=3).tolist() == [[0, 0, 0, 1, 1, 0]]
    assert booleanise(x, "threshold", threshold=0.5).tolist() == [[0, 1]]


@pytest.mark.parametrize("profile", ["cortex-m4", "fpga-bnn"])
def test_simulate_digits_prices_training_and_inference(profile):
    from models.tsetlin_card import simulate
    r = simulate(profile, "digits", epochs=3, clauses=40)
    assert r.metrics["test_accuracy"] > 0.8              # 10 classes: chance is 0.1
    assert r.metrics["energy_per_train_sample_j"] > 0
    assert r.metrics["energy_per_inference_j"] > 0
    assert r.config["word_bits"] == (32 if profile == "cortex-m4" else 64)


@pytest.mark.parametrize("target", ["host", "cortex-m4"])
def test_c_export_is_bit_exact(tmp_path, target):
    from deploy.c_export import check_c_project, missing_tools
    from models.tsetlin_card import export, load
    if missing_tools(target):
        pytest.skip(f"C target {target}: {missing_tools(target)}")
    out = export("c", tmp_path / "tm", n_golden=24)
    _, _, x_te, _, _ = load("digits")
    dev = sim.device("cortex-m4")
    # retrain the same seed: the exported machine is reproducible
    from models.tsetlin_card import QUICK
    tm = TsetlinMachine(x_te.shape[1], 10, TsetlinConfig(**QUICK["digits"]), dev)
    x_tr, y_tr, _, _, _ = load("digits")
    tm.fit(x_tr, y_tr)
    want = dev.run([tm.clause_layer()], pack_bits(x_te[:24], 32))
    assert np.ptp(want.scores) > 0
    run = check_c_project(out, want, target=target)
    assert np.array_equal(run.labels, want.labels)


def test_convergence_rows_report_absorption_and_clause_form():
    from models.tsetlin_convergence import run_setting
    row = run_setting("and", 2, 0, 2, 2, 0.0, seeds=range(2), max_updates=20_000)
    assert row["absorbed"] == 1.0 and row["exact_form"] == 1.0 and row["computes_op"] == 1.0
    row = run_setting("or", 2, 0, 4, 3, 0.0, seeds=range(2), max_updates=2_000)
    assert row["absorbed"] == 0.0 and row["median_updates"] is None


def test_k_bit_operator_patterns():
    x, y = operator_patterns("and", irrelevant=1, k=3)
    assert x.shape == (16, 4) and y.sum() == 2               # x1 x2 x3 = 1, x4 free
    x, y = operator_patterns("xor", k=3)
    assert np.array_equal(y, x.sum(1) % 2)                   # 3-bit parity
