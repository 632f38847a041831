"""DiffPC's neuron kernel: the threshold schedule and one step of a layer (numba).

Karlsson, Fianda & Kamarainen, "Difference Predictive Coding for Training Spiking Neural
Networks", ICLR 2026: the DiffPC neuron (Algorithm 1) and Theorem 4.1. The step, per hidden
neuron of layer l (state ``xT`` target, ``xA`` announced activity, ``xF`` prediction
rebuilt from spikes, ``eT`` target error, ``eA`` announced error, ``b`` feedback sum),
with threshold ``T(t)``:

1. receive: ``xF += T W_l s_A^{l-1}``, ``b += T W_{l+1}^T s_e^{l+1}`` (spikes of step t-1);
2. ``eT = xT - xF``;
3. at cycle starts (t mod n == 0): ``xT += gamma (-eT + 1[xT > 0] b)``;
4. activity spike ``s_A = sign(xT - xA) 1[|xT - xA| > T]``, spiking ReLU
   ``s_A *= 1[xA + T s_A >= 0]``, ``xA += T s_A``;
5. error spike ``s_e = sign(eT - eA) 1[|eT - eA| > T]``, ``eA += T s_e``;
6. emit ``s_A`` up and ``s_e`` down.

Schedules: cyclic ``T = 2^m / 2^(t mod n)`` (default); cyclic-decay multiplies it by
``d(tau) = 1 - (1 - a) tau / T_iter``, tau = step within the training iteration; constant-
decay is ``T = c d(tau)``. The readings chosen where the paper is unclear are listed in
``model.py``'s docstring.
"""
from __future__ import annotations

from numba import njit

from sim.neuromorphic import NeuronKernel

STATE = ("xT", "xA", "xF", "eT", "eA", "b", "clk")
PARAMS = ("gamma", "ncyc", "m", "clamped", "emit_err", "sched", "a", "T_iter", "c")


@njit(cache=True)
def threshold(clk, n, m, sched, a, T_iter, c):
    """T_theta at global step ``clk`` of the iteration (float)."""
    d = 1.0 - (1.0 - a) * (clk % T_iter) / T_iter
    if sched == 2:
        return c * d
    return d * 2.0 ** (m - clk % n)


@njit(cache=True)
def diffpc_update(inp, state, params, payload):
    """One DiffPC step for a layer of B*K two-compartment neurons (module docstring).

    inp (2BK, 2): channel 0 = forward (activity) input, channel 1 = feedback (error) input,
    both already W x payload; only rows [0, BK) receive. state (7, 2BK); params (9, 2BK).
    """
    h = state.shape[1] // 2
    gamma, n, m = params[0, 0], int(params[1, 0]), params[2, 0]
    clamped, emit_err, sched = params[3, 0], params[4, 0], int(params[5, 0])
    a, T_iter, c = params[6, 0], int(params[7, 0]), params[8, 0]
    clk = int(state[6, 0])
    k = clk % n
    T = threshold(clk, n, m, sched, a, T_iter, c)
    # the receiver undoes the decay factor of the sender's step (clk - 1): known schedule
    d_prev = 1.0 - (1.0 - a) * ((clk - 1) % T_iter) / T_iter if clk > 0 else 0.0
    grade = 1 if sched == 2 else 1 << (n - 1 - k)
    for i in range(h):
        xT, xA, xF = state[0, i], state[1, i], state[2, i]
        eA, b = state[4, i], state[5, i]
        xF += d_prev * inp[i, 0]
        b += d_prev * inp[i, 1]
        eT = xT - xF
        if k == 0 and clamped == 0.0:
            xT += gamma * (-eT + (1.0 if xT > 0.0 else 0.0) * b)
        s = 0
        if clamped == 0.0:
            dx = xT - xA
            s = 1 if dx > T else (-1 if dx < -T else 0)
            if xA + T * s < 0.0:             # spiking ReLU (>= 0 reading)
                s = 0
            xA += T * s
        de = eT - eA
        se = 1 if de > T else (-1 if de < -T else 0)
        eA += T * se
        payload[i] = s * grade
        if emit_err != 0.0:
            payload[h + i] = se * grade
        state[0, i], state[1, i], state[2, i] = xT, xA, xF
        state[3, i], state[4, i], state[5, i] = eT, eA, b
    for i in range(state.shape[1]):
        state[6, i] = clk + 1


KERNEL = NeuronKernel("diffpc", diffpc_update, state_names=STATE, param_names=PARAMS,
                      n_channels=2)
