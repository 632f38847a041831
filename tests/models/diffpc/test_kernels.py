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
            sent += pl[:h] * 2.0 ** (m - n + 1)    # payload x weight scale = s T(t)
            assert set(np.unique(np.abs(pl[pl != 0]))) <= {2 ** (n - 1 - k)}
        bound = 2.0 ** (m + 1 - n)
        assert np.all(state[0, :h] == xT)                           # gamma = 0: fixed
        assert np.max(np.abs(state[0, :h] - state[1, :h])) <= bound
        assert np.max(np.abs(eT - state[4, :h])) <= bound
        # the announced copy is exactly the start value plus the graded spikes sent
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
    # one hidden neuron (h = 1), n = 2, m = 0, step 0: T = 1, grade 2^(n-1-0) = 2.
    # xT = 2.5, xA = 0, xF = 0.5 -> eT = 2; gamma = 0 keeps xT. dx = 2.5 > 1 -> s = +1,
    # xA = 1; de = eT - eA = 2 > 1 -> se = +1, eA = 1; payloads +2 (activity), +2 (error)
    state = np.zeros((len(STATE), 2))
    state[0, 0], state[2, 0] = 2.5, 0.5
    pl = np.zeros(2, np.int32)
    diffpc_update(np.zeros((2, 2)), state, _params(1, 2, 0), pl)
    assert pl.tolist() == [2, 2]
    assert state[:6, 0].tolist() == [2.5, 1.0, 0.5, 2.0, 1.0, 0.0]
    assert state[6].tolist() == [1.0, 1.0]        # both compartments' clocks advance
    # step 1: T = 0.5, grade 1; input 0.25 on the forward channel (no decay: d = 1):
    # xF = 0.75, eT = 1.75; dx = 1.5 > 0.5 -> s = +1, xA = 1.5; de = 0.75 > 0.5 -> eA = 1.5
    inp = np.zeros((2, 2))
    inp[0, 0] = 0.25
    diffpc_update(inp, state, _params(1, 2, 0), pl)
    assert pl.tolist() == [1, 1]
    assert state[:6, 0].tolist() == [2.5, 1.5, 0.75, 1.75, 1.5, 0.0]
