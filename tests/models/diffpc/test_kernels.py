"""DiffPC's kernel: Theorem 4.1 over randomised inputs, the spiking ReLU, the schedules."""
import numpy as np
import pytest

from models.diffpc.kernels import KERNEL, PARAMS, STATE, diffpc_update, threshold


def _params(h, n, m, gamma=0.0, clamped=0.0, emit_err=1.0, sched=0, a=1.0, T_iter=None,
            c=0.01):
    vals = {"gamma": gamma, "ncyc": n, "m": m, "clamped": clamped, "emit_err": emit_err,
            "sched": sched, "a": a, "T_iter": T_iter or n, "c": c}
    return np.array([[vals[p]] * 2 * h for p in PARAMS], float)


@pytest.mark.parametrize("seed", range(5))
def test_one_cycle_meets_theorem_4_1(seed):
    # |xT - xA| < 2^(m+1), xT > 0 and fixed in the cycle => after n steps < 2^(m+1-n);
    # the error compartment (eT fixed: no input) obeys the same bound
    rng = np.random.default_rng(seed)
    h = 500
    for n in (1, 3, 6, 10):
        m = int(rng.integers(-3, 3))
        state = np.zeros((len(STATE), 2 * h))
        xT = rng.uniform(1e-3, 3.0, h) * 2.0 ** m
        gap = rng.uniform(-1, 1, h) * 2.0 ** (m + 1) * 0.999
        state[0, :h] = xT
        state[1, :h] = np.maximum(xT - gap, 0.0)      # announced copy >= 0
        state[2, :h] = xT - rng.uniform(-1, 1, h) * 2.0 ** (m + 1) * 0.999   # xF
        state[4, :h] = 0.0
        eT = xT - state[2, :h]
        inp = np.zeros((2 * h, 2))
        pl = np.zeros(2 * h, np.int32)
        sent = np.zeros(h)
        for _ in range(n):
            pl[:] = 0
            diffpc_update(inp, state, _params(h, n, m), pl)
            k = int(state[6, 0]) - 1
            sent += pl[:h] * 2.0 ** (m - k)        # sign x the sender's threshold T(t)
            # ternary spikes: a spike carries its sign only (the paper's 2 bits)
            assert set(np.unique(pl)) <= {-1, 0, 1}
        bound = 2.0 ** (m + 1 - n)
        assert np.all(state[0, :h] == xT)                           # gamma = 0: fixed
        assert np.max(np.abs(state[0, :h] - state[1, :h])) <= bound
        assert np.max(np.abs(eT - state[4, :h])) <= bound
        # the announced copy is exactly the start value plus the spikes sent, each worth T
        np.testing.assert_allclose(state[1, :h], np.maximum(xT - gap, 0.0) + sent)


def test_spiking_relu_never_announces_negative():
    h = 64
    state = np.zeros((len(STATE), 2 * h))
    state[0, :h] = -np.linspace(0.01, 1.5, h)   # negative targets
    state[1, :h] = np.linspace(0.0, 0.5, h)
    pl = np.zeros(2 * h, np.int32)
    for _ in range(8):
        diffpc_update(np.zeros((2 * h, 2)), state, _params(h, 8, 0), pl)
        assert np.all(state[1, :h] >= 0.0)
    assert np.max(state[1, :h]) < 2.0 ** -7 + 1e-12   # driven to (almost) 0


def test_threshold_schedules_by_hand():
    # cyclic: T = 2^(m - t mod n); n = 4, m = 1: steps 0..4 -> 2, 1, 0.5, 0.25, 2
    assert [threshold(t, 4, 1, 0, 1.0, 8, 0.01) for t in range(5)] == [2.0, 1.0, 0.5, 0.25, 2.0]
    # cyclic-decay with a = 0.5, T_iter = 8: d(tau) = 1 - 0.5 tau / 8; step 2: d = 0.875,
    # T = 0.875 x 2^(1 - 2) = 0.4375
    assert threshold(2, 4, 1, 1, 0.5, 8, 0.01) == 0.4375
    # constant-decay: T = c d(tau); c = 0.01, step 4: d = 1 - 0.5 x 4 / 8 = 0.75 -> 0.0075
    assert threshold(4, 4, 1, 2, 0.5, 8, 0.01) == pytest.approx(0.0075, rel=1e-15)
    assert KERNEL.state_names == STATE and KERNEL.param_names == PARAMS
    assert KERNEL.n_channels == 2                 # forward (activity) and feedback (error)


def test_one_step_by_hand():
    # one hidden neuron (h = 1), n = 2, m = 0, step 0: T = 1.
    # xT = 2.5, xA = 0, xF = 0.5 -> eT = 2; gamma = 0 keeps xT. dx = 2.5 > 1 -> s = +1,
    # xA = 1; de = eT - eA = 2 > 1 -> se = +1, eA = 1; payloads +1 (activity), +1 (error):
    # signs only (they were +2, the sender's 2^(n-1-k))
    state = np.zeros((len(STATE), 2))
    state[0, 0], state[2, 0] = 2.5, 0.5
    pl = np.zeros(2, np.int32)
    diffpc_update(np.zeros((2, 2)), state, _params(1, 2, 0), pl)
    assert pl.tolist() == [1, 1]
    assert state[:6, 0].tolist() == [2.5, 1.0, 0.5, 2.0, 1.0, 0.0]
    assert state[6].tolist() == [1.0, 1.0]        # both compartments' clocks advance
    # step 1: T = 0.5. Input 0.125 on the forward channel (weight x sign, the weight scaled
    # 2^(m-n+1) = 0.5); the receiver scales it by the sender's 2^(n-1-(t-1) mod n) = 2
    # (no decay: d = 1): xF = 0.5 + 0.25 = 0.75, eT = 1.75; dx = 1.5 > 0.5 -> s = +1,
    # xA = 1.5; de = 0.75 > 0.5 -> eA = 1.5
    inp = np.zeros((2, 2))
    inp[0, 0] = 0.125
    diffpc_update(inp, state, _params(1, 2, 0), pl)
    assert pl.tolist() == [1, 1]
    assert state[:6, 0].tolist() == [2.5, 1.5, 0.75, 1.75, 1.5, 0.0]


def _naive_update(inp, state, params, payload):
    # the kernel's first form, plain Python with nested branches: the twin of diffpc_update
    h = state.shape[1] // 2
    gamma, n, m = params[0, 0], int(params[1, 0]), params[2, 0]
    clamped, emit_err, sched = params[3, 0], params[4, 0], int(params[5, 0])
    a, T_iter, c = params[6, 0], int(params[7, 0]), params[8, 0]
    clk = int(state[6, 0])
    k = clk % n
    T = threshold.py_func(clk, n, m, sched, a, T_iter, c)
    d_prev = 1.0 - (1.0 - a) * ((clk - 1) % T_iter) / T_iter if clk > 0 else 0.0
    grade_prev = 1 if sched == 2 else 1 << (n - 1 - (clk - 1) % n)
    for i in range(h):
        xT, xA, xF = state[0, i], state[1, i], state[2, i]
        eA, b = state[4, i], state[5, i]
        xF += d_prev * (grade_prev * inp[i, 0])
        b += d_prev * (grade_prev * inp[i, 1])
        eT = xT - xF
        if k == 0 and clamped == 0.0:
            xT += gamma * (-eT + (1.0 if xT > 0.0 else 0.0) * b)
        s = 0
        if clamped == 0.0:
            dx = xT - xA
            s = 1 if dx > T else (-1 if dx < -T else 0)
            if xA + T * s < 0.0:
                s = 0
            xA += T * s
        de = eT - eA
        se = 1 if de > T else (-1 if de < -T else 0)
        eA += T * se
        payload[i] = s
        if emit_err != 0.0:
            payload[h + i] = se
        state[0, i], state[1, i], state[2, i] = xT, xA, xF
        state[3, i], state[4, i], state[5, i] = eT, eA, b
    state[6, :] = clk + 1


@pytest.mark.parametrize("clamped", [0.0, 1.0])
@pytest.mark.parametrize("emit_err", [0.0, 1.0])
@pytest.mark.parametrize("sched", [0, 1, 2])
def test_kernel_equals_its_naive_twin_bit_for_bit(clamped, emit_err, sched):
    # 2 x 6 = 12 steps (a cycle start every 6, the iteration of 9 steps wraps) on random
    # states and sparse random input, including xT <= 0 (the ReLU gate) and xA near 0
    rng = np.random.default_rng(int(10 * clamped + 2 * emit_err + sched))
    h = 200
    states = [np.zeros((len(STATE), 2 * h)) for _ in range(2)]
    for st in states:
        st[0, :h] = np.random.default_rng(1).uniform(-0.3, 1.0, h)
        st[1, :h] = np.maximum(st[0, :h] + np.random.default_rng(2).normal(0, 0.1, h), 0)
        st[2, :h] = np.random.default_rng(3).uniform(0, 1, h)
    prm = _params(h, 6, 0, gamma=0.1, clamped=clamped, emit_err=emit_err, sched=sched,
                  a=0.3, T_iter=9, c=0.05)
    sent = 0
    for _ in range(12):
        inp = rng.normal(0, 0.05, (2 * h, 2)) * (rng.random((2 * h, 2)) < 0.3)
        pls = [np.zeros(2 * h, np.int32) for _ in range(2)]
        diffpc_update(inp, states[0], prm, pls[0])
        _naive_update(inp, states[1], prm, pls[1])
        np.testing.assert_array_equal(pls[0], pls[1])
        np.testing.assert_array_equal(states[0], states[1])
        sent += np.count_nonzero(pls[0])
    assert sent > 0 or clamped == 1.0 and emit_err == 0.0    # spikes were compared
