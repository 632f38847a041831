"""numba kernels of BEP's learning steps that are specific to the method (not generic word ops).

The generic word ops (XOR-popcount products, gated products, sign, saturating counter add)
belong to :class:`~sim.bitwise.device.BitwiseDevice`; these kernels do the rest of a BEP
step with integer arithmetic only: the trigger, the gate, the tie rule of the desired
activations, the per-group choice of the neuron nearest to flipping, the sum of the +/-2
Hebbian steps, and the reinforcement draws. Following the project style they take arrays
and scalars only, check nothing, and add what they execute into an int64 count array
indexed by ``hw_profiles.ops.OP_CODES``; the caller flushes it to the device's ledger.

Counting convention (one count = one instruction on a 32-bit MCU): a compare, a select or
an abs is ``int_cmp``; an add/subtract ``int_add``; the xorshift32 generator is three
``EOR Rd, Rn, Rn, LSL/LSR #s`` = three ``xor_word`` (Thumb-2 folds the shift in).

Memory: each kernel also adds the bytes it reads and writes into ``mem`` (int64 (2,):
[0] bytes read, [1] bytes written), at the width the device holds each value in
(:data:`I32`, :data:`I16`, :data:`I8`): int32 products, logits, stabilities, Hebbian
accumulators and selected indices; int16 counters ``H``; int8 +/-1 activations, targets and
inputs; a byte per 0/1 flag (gate, wrong, trigger, touched), per label and per predicted
class (<= 256 classes). The caller adds them to the ledger at the device's memory level,
where the state is placed, as the bitwise engine's own ops do. A read is counted where the
op count has an op that uses the value (the ops are counted branch-free, so are the reads).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from hw_profiles.ops import OP_CODES

ADD, CMP, XOR, AND, OR = (OP_CODES[k] for k in ("int_add", "int_cmp", "xor_word", "and_word",
                                                "or_word"))
I32, I16, I8 = 4, 2, 1
"""Bytes of an int32 (products, accumulators, indices), an int16 counter, an int8 value or flag."""


@njit(cache=True, nogil=True)
def trigger(logits, y, thr, trig, pred, counts, mem):
    """Eq. 1: ``trig[b] = logits[b, y] - max_{c != y} logits[b, c] < thr`` (thr = ceil(r K_L)).

    Also ``pred[b]`` = argmax (first maximum). Per sample: 2 C int_cmp (two running
    maxima) + 1 int_add (the margin) + 1 int_cmp (against thr); reads C int32 logits and the
    label (1 B), writes the trigger flag and the predicted class (1 B each).
    """
    n, c = logits.shape
    for b in range(n):
        best = logits[b, 0]
        arg = 0
        other = -2147483647
        for k in range(c):
            v = logits[b, k]
            if v > best:
                best = v
                arg = k
            if k != y[b] and v > other:
                other = v
        pred[b] = arg
        trig[b] = logits[b, y[b]] - other < thr
    counts[CMP] += n * (2 * c + 1)
    counts[ADD] += n
    mem[0] += n * (c * I32 + I8)
    mem[1] += n * 2 * I8


@njit(cache=True, nogil=True)
def gate(z, thr, out, counts, mem):
    """Eq. 5: ``out[b, i] = 1 if |z[b, i]| <= thr`` (thr = floor(nu K_in)). 2 int_cmp each;
    reads the int32 z, writes a flag byte."""
    n, k = z.shape
    for b in range(n):
        for i in range(k):
            v = z[b, i]
            out[b, i] = 1 if -thr <= v <= thr else 0
    counts[CMP] += 2 * n * k
    mem[0] += n * k * I32
    mem[1] += n * k * I8


@njit(cache=True, nogil=True)
def desired(u, current, out, counts, mem):
    """Eq. 7's sign with the tie rule: ``out = sign(u)``, and ``current`` where ``u == 0``.

    ``u`` is the gated sum ``W^T (g * a*)``: where it is 0 (every gate closed, or the open
    ones cancel) every choice of the bit maximises the relaxed objective, so keeping the
    forward activation is an exact maximiser that asks for no change. 2 int_cmp each; reads
    the int32 u and the int8 current bit (a branch-free select), writes an int8.
    """
    n, k = u.shape
    for b in range(n):
        for i in range(k):
            v = u[b, i]
            out[b, i] = 1 if v > 0 else (-1 if v < 0 else current[b, i])
    counts[CMP] += 2 * n * k
    mem[0] += n * k * (I32 + I8)
    mem[1] += n * k * I8


@njit(cache=True, nogil=True)
def select(stab, wrong, gamma, sel, counts, mem):
    """Eq. 9's mask: per sample and group of ``gamma`` consecutive neurons, the wrong neuron
    with the smallest ``|stab|`` (first on ties), or -1 when the group has none.

    ``stab`` int32 (B, K) (the pre-activation, or its time sum in BEP-TT), ``wrong`` uint8
    (B, K). ``sel`` int32 (B, ceil(K / gamma)). Per neuron: abs + test + running min = 3
    int_cmp, reading its int32 stability and its flag; one int32 index written per group.
    """
    n, k = stab.shape
    for b in range(n):
        for g in range(sel.shape[1]):
            best = -1
            bestv = 2147483647
            for j in range(g * gamma, min(g * gamma + gamma, k)):
                if wrong[b, j]:
                    v = abs(stab[b, j])
                    if v < bestv:
                        bestv = v
                        best = j
            sel[b, g] = best
    counts[CMP] += 3 * n * k
    mem[0] += n * k * (I32 + I8)
    mem[1] += sel.size * I32


@njit(cache=True, nogil=True)
def wrong_bits(z, target, out, counts, mem):
    """``out = target != sign(z)`` with sign(0) = +1 (the forward's convention). 2 int_cmp
    each; reads the int32 z and the int8 target, writes a flag byte."""
    n, k = z.shape
    for b in range(n):
        for j in range(k):
            s = 1 if z[b, j] >= 0 else -1
            out[b, j] = 1 if s != target[b, j] else 0
    counts[CMP] += 2 * n * k
    mem[0] += n * k * (I32 + I8)
    mem[1] += n * k * I8


@njit(cache=True, nogil=True)
def accumulate(sel, target, inputs, delta, touched, counts, mem):
    """Eq. 8: ``delta[j] += 2 target[b, j] inputs[b]`` for every selected (b, j).

    ``target`` int8 (B, K), ``inputs`` int8 (B, K_in); ``delta`` int32 (K, K_in) starts at 0;
    ``touched`` uint8 (K,) marks rows with an update. K_in int_add per selected neuron.
    Memory: every int32 index of ``sel`` read; per selected neuron its int8 target, the
    K_in int8 inputs and the int32 accumulator row read, the row and the touched flag
    written; a row is zeroed (K_in int32 written) when the mini-batch first selects it (the
    host allocates every row zeroed; a device zeroes only the rows it uses).
    """
    n, g = sel.shape
    k_in = inputs.shape[1]
    picked = 0
    fresh = 0
    for b in range(n):
        for q in range(g):
            j = sel[b, q]
            if j >= 0:
                picked += 1
                if touched[j] == 0:
                    fresh += 1
                touched[j] = 1
                s = 2 * target[b, j]
                for i in range(k_in):
                    delta[j, i] += s * inputs[b, i]
                counts[ADD] += k_in
    mem[0] += sel.size * I32 + picked * (I8 + k_in * (I8 + I32))
    mem[1] += picked * (k_in * I32 + I8) + fresh * k_in * I32


@njit(cache=True, nogil=True)
def accumulate_time(sel, target, inputs, delta, touched, counts, mem):
    """BEP-TT's Eq. 8 summed over time: ``delta[j] += 2 sum_t target[t, b, j] inputs[t, b]``
    over every step t (the paper's time sum: the mask ``sel`` (B, G) is shared by all
    steps, so masking commutes with the sum and the tied weights get one update).

    ``target`` int8 (T, B, K), ``inputs`` int8 (T, B, K_in). T K_in int_add per selected
    neuron. Memory as :func:`accumulate`, with T targets and T K_in inputs read per
    selected neuron; the time sum is kept in a register, so the int32 accumulator row is
    read and written once per selected neuron, not once per step.
    """
    n, g = sel.shape
    steps, _, k_in = inputs.shape
    picked = 0
    fresh = 0
    for b in range(n):
        for q in range(g):
            j = sel[b, q]
            if j >= 0:
                picked += 1
                if touched[j] == 0:
                    fresh += 1
                touched[j] = 1
                for i in range(k_in):
                    acc = delta[j, i]
                    for t in range(steps):
                        acc += 2 * target[t, b, j] * inputs[t, b, i]
                    delta[j, i] = acc
                counts[ADD] += steps * k_in
    mem[0] += sel.size * I32 + picked * (steps * I8 + k_in * (steps * I8 + I32))
    mem[1] += picked * (k_in * I32 + I8) + fresh * k_in * I32


@njit(cache=True, nogil=True)
def time_stability(z, target, out, wrong, counts, mem):
    """BEP-TT's shared-mask stability, the model's reading (model_tt's docstring): the
    time-summed ``out[b, j] = S_j = sum_t target[t, b, j] z[t, b, j]`` over every step, and
    ``wrong[b, j] = S_j < 0``. ``z`` int32 (T, B, K), ``target`` int8 (T, B, K): +-1, or 0
    for a step with no target (an ablation's), which neither votes nor updates. Per
    (t, b, j): 1 int_add (a +/-1 multiply is a conditional negate, counted with the add),
    reading the int32 z and the int8 target; + 1 int_cmp per (b, j), writing the int32 sum
    and the flag. (Until stop 53 the kernel summed only the steps where the neuron was
    wrong, and the update only those steps: not the paper's time sum.)
    """
    steps, n, k = z.shape
    for b in range(n):
        for j in range(k):
            s = 0
            for t in range(steps):
                s += target[t, b, j] * z[t, b, j]   # a target of 0 (no target) adds 0
            out[b, j] = s
            wrong[b, j] = 1 if s < 0 else 0
    counts[ADD] += steps * n * k
    counts[CMP] += n * k
    mem[0] += steps * n * k * (I32 + I8)
    mem[1] += n * k * (I32 + I8)


@njit(cache=True, nogil=True)
def reinforce(h, thr, state, lo, hi, counts, mem):
    """CP+R reinforcement: each counter, with probability thr / 2^32, moves 2 away from 0.

    ``h`` int16 (K, K_in) in place; ``state`` uint32 (1,) is the xorshift32 state (Marsaglia
    2003, shifts 13/17/5), advanced once per counter (kept in a register). sign(0) = +1 as
    in the forward. Per counter: 3 xor_word + 1 int_cmp (the draw against thr); per
    reinforced counter: 1 int_add + 1 int_cmp (clip), and the int16 counter read and
    written (a counter the draw passes over is not loaded). Returns the number of
    reinforced counters.
    """
    x = np.uint32(state[0])
    k, k_in = h.shape
    hits = 0
    for j in range(k):
        for i in range(k_in):
            x ^= np.uint32(x << np.uint32(13))
            x ^= np.uint32(x >> np.uint32(17))
            x ^= np.uint32(x << np.uint32(5))
            if np.int64(x) < thr:
                v = np.int32(h[j, i])
                v = v + 2 if v >= 0 else v - 2
                h[j, i] = min(max(v, lo), hi)
                hits += 1
    state[0] = x
    n = k * k_in
    counts[XOR] += 3 * n
    counts[CMP] += n + hits
    counts[ADD] += hits
    mem[0] += hits * I16
    mem[1] += hits * I16
    return hits
