"""DiffPC's neuron kernel: the threshold schedule and one step of a layer (numba).

Karlsson, Fianda & Kamarainen, "Difference Predictive Coding for Training Spiking Neural
Networks", ICLR 2026: the DiffPC neuron (Algorithm 1) and Theorem 4.1. The step, per hidden
neuron of layer l (state ``xT`` target, ``xA`` announced activity, ``xF`` prediction
rebuilt from spikes, ``eT`` target error, ``eA`` announced error, ``b`` feedback sum),
with threshold ``T(t)``:

1. receive: ``xF += T W_l s_A^{l-1}``, ``b += T W_{l+1}^T s_e^{l+1}`` (spikes of step t-1,
   scaled by the sender's threshold ``T(t-1)``, which the receiver knows from the shared
   clock: a spike carries its sign only, the paper's ternary spike);
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

import numpy as np
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

    Written for speed without changing a bit of the result: each state row is a 1-D view,
    the spike signs are selects (-1, 0, +1 as floats, exact) rather than nested branches
    (the signs are data-dependent and mispredicted), and the loop-invariant tests (cycle
    start, clamped, emits errors) are hoisted.
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
    # and the power-of-two part of the sender's threshold, T(t-1) = 2^(m - (t-1) mod n):
    # with synapse weights W 2^(m-n+1), W s T(t-1) = (W 2^(m-n+1) s) 2^(n-1-(t-1) mod n).
    # A spike carries its sign alone (the paper's ternary spike, 2 bits); scaling the sum
    # by a power of two is exact, so this is bit for bit what a spike carrying that power
    # of two (a graded payload) delivered
    grade_prev = float(1 if sched == 2 else 1 << (n - 1 - (clk - 1) % n))
    sxT, sxA, sxF = state[0, :h], state[1, :h], state[2, :h]
    seT, seA, sb = state[3, :h], state[4, :h], state[5, :h]
    f_in, b_in = inp[:h, 0], inp[:h, 1]
    p_act, p_err = payload[:h], payload[h:2 * h]
    cycle_start = k == 0 and clamped == 0.0
    free = clamped == 0.0
    emit = emit_err != 0.0
    for i in range(h):
        xT = sxT[i]
        xA = sxA[i]
        xF = sxF[i] + d_prev * (grade_prev * f_in[i])
        b = sb[i] + d_prev * (grade_prev * b_in[i])
        eT = xT - xF
        if cycle_start:
            xT += gamma * (-eT + (1.0 if xT > 0.0 else 0.0) * b)
        s = 0.0
        if free:
            dx = xT - xA
            s = (1.0 if dx > T else 0.0) - (1.0 if dx < -T else 0.0)
            s = 0.0 if xA + T * s < 0.0 else s      # spiking ReLU (>= 0 reading)
            xA += T * s
        eA = seA[i]
        de = eT - eA
        se = (1.0 if de > T else 0.0) - (1.0 if de < -T else 0.0)
        seA[i] = eA + T * se
        p_act[i] = np.int32(s)
        if emit:
            p_err[i] = np.int32(se)
        sxT[i] = xT
        sxA[i] = xA
        sxF[i] = xF
        seT[i] = eT
        sb[i] = b
    clock = state[6]
    for i in range(clock.size):
        clock[i] = clk + 1


KERNEL = NeuronKernel("diffpc", diffpc_update, state_names=STATE, param_names=PARAMS,
                      n_channels=2)
