"""numba kernels of the Tsetlin machine: bit-plane automata, clause evaluation, Type I/II feedback.

Layout (as cair/fast-tsetlin-machine-with-mnist-demo, TsetlinMachineBits.c): the states of
the automata of one clause are ``B`` bit-planes ``st[c, j, w, b]`` (planes of one word
contiguous) of packed words over the
2o literals; the state of literal ``k`` is the integer whose bit ``b`` is bit ``k`` of plane
``b``. The top plane ``b = B - 1`` is the include mask (state >= N = 2^(B-1)). Increment and
decrement of every automaton selected by a mask word are a ripple-carry over the planes,
then a saturation fix-up at 2^B - 1 (all ones) and 0.

Following the engine convention, kernels take arrays and scalars only, check nothing and add
their op counts into ``counts`` (indexed by ``hw_profiles.ops.OP_CODES``) and word reads /
writes into ``mem`` ([0] words read, [1] words written). Counting conventions:

- ripple-carry inc/dec per plane visited: 1 ``and_word`` (carry AND / AND-NOT), 1
  ``xor_word`` (toggle), 1 ``int_cmp`` (carry == 0: early exit), plane read + written;
  saturation: 1 ``or_word`` (inc) / ``and_word`` (dec, BIC) per plane, read + written;
- clause evaluation per word visited: 1 ``and_word`` (include AND NOT literals: BIC on Arm),
  1 ``int_cmp`` (== 0, early exit at the first violated word), include and literal words read;
- vote: 1 ``int_add`` per firing clause, 2 ``int_cmp`` for the clip to [-T, T];
- a random draw is one xorshift step: 3 ``xor_word`` + 3 shifts, counted as ``int_add``
  (single-cycle ALU ops; the vocabulary has no shift op), plus 1 ``int_cmp`` against the
  integer threshold of the probability; a bit set into a feedback mask: 1 ``or_word``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from hw_profiles.ops import OP_CODES

XOR, AND, OR, ADD, CMP = (OP_CODES[k] for k in ("xor_word", "and_word", "or_word", "int_add",
                                                "int_cmp"))
U64_TO_UNIT = 1.0 / 18446744073709551616.0


@njit(cache=True, inline="always")
def _draw(rng, counts):
    """Uniform in [0, 1) from xorshift64 (Marsaglia 2003) state ``rng[0]`` (never 0)."""
    x = rng[0]
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    rng[0] = x
    counts[XOR] += 3
    counts[ADD] += 3
    counts[CMP] += 1
    return x * U64_TO_UNIT


@njit(cache=True, inline="always")
def plane_inc(planes, active, counts, mem):
    """Add 1 (saturating at all ones) to the automata whose bit is set in ``active``.

    ``planes`` [B] words of one column of automata."""
    carry = active
    nb = planes.shape[0]
    for b in range(nb):
        counts[CMP] += 1
        if carry == 0:
            break
        nxt = planes[b] & carry        # bits that were 1 carry on
        planes[b] ^= carry
        carry = nxt
        counts[AND] += 1
        counts[XOR] += 1
        mem[0] += 1
        mem[1] += 1
    if carry != 0:                     # overflowed past 2^B - 1: those automata back to all ones
        for b in range(nb):
            planes[b] |= carry
            counts[OR] += 1
            mem[0] += 1
            mem[1] += 1


@njit(cache=True, inline="always")
def plane_dec(planes, active, counts, mem):
    """Subtract 1 (saturating at 0) from the automata whose bit is set in ``active``."""
    carry = active
    nb = planes.shape[0]
    for b in range(nb):
        counts[CMP] += 1
        if carry == 0:
            break
        nxt = (~planes[b]) & carry     # bits that were 0 borrow on (AND-NOT: BIC)
        planes[b] ^= carry
        carry = nxt
        counts[AND] += 1
        counts[XOR] += 1
        mem[0] += 1
        mem[1] += 1
    if carry != 0:                     # borrowed below 0: those automata back to 0
        for b in range(nb):
            planes[b] &= ~carry
            counts[AND] += 1
            mem[0] += 1
            mem[1] += 1


@njit(cache=True)
def planes_add(st, masks, delta, counts, mem):
    """Test/utility entry: ``st`` [R, W, B], ``masks`` [R, W]; +1 (delta > 0) or -1 per
    masked automaton."""
    for r in range(st.shape[0]):
        for w in range(st.shape[1]):
            if delta > 0:
                plane_inc(st[r, w], masks[r, w], counts, mem)
            else:
                plane_dec(st[r, w], masks[r, w], counts, mem)


@njit(cache=True, inline="always")
def _clause_fires(st_cj, lit, top, counts, mem):
    """Training-time clause output: 1 iff every included literal is 1 (an empty clause fires)."""
    for w in range(lit.shape[0]):
        counts[AND] += 1
        counts[CMP] += 1
        mem[0] += 2
        if st_cj[w, top] & ~lit[w]:
            return 0
    return 1


@njit(cache=True, inline="always")
def _uniform(rng):
    """xorshift64 step, uncounted: the host-side sampler of :func:`_feedback_mask`."""
    x = rng[0]
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    rng[0] = x
    return x * U64_TO_UNIT


@njit(cache=True, inline="always")
def _feedback_mask(nbits, p, log_q, bit, rng, counts):
    """A word whose first ``nbits`` bits are each set independently with probability ``p`` (1/s).

    The device draws one number per literal (TsetlinMachineC): ``nbits`` draws and compares
    are counted, plus one ``or_word`` per set bit. The host samples the same distribution
    by geometric skipping (gaps between set bits ~ Geometric(p), ``log_q = log(1 - p)``):
    about ``nbits * p`` draws instead of ``nbits``, the same masks in law, not bit for bit.
    ``bit[b]`` is the word with only bit b set.
    """
    counts[XOR] += 3 * nbits
    counts[ADD] += 3 * nbits
    counts[CMP] += nbits
    m = bit[0] ^ bit[0]
    if p >= 1.0:
        for b in range(nbits):
            m |= bit[b]
        counts[OR] += nbits
        return m
    pos = 0
    while True:
        pos += int(np.log(1.0 - _uniform(rng)) / log_q)   # 1 - u in (0, 1]
        if pos >= nbits:
            break
        m |= bit[pos]
        counts[OR] += 1
        pos += 1
    return m


@njit(cache=True)
def update_class(st, c, y, lit, valid, nbits, bit, sign, T, s_inv, log_q, boost, fired, rng,
                 counts, mem):
    """One TM update of class ``c`` toward output ``y`` (1: the sample's class; 0: another).

    Clause selection with probability (T - v)/(2T) (y = 1) or (T + v)/(2T) (y = 0), v the
    clipped vote; Type I to clauses whose polarity agrees with y, Type II to the others
    (Granmo 2018, Algorithm 1; TsetlinMachineC ``tm_update``). Returns the clipped vote.
    """
    m, nw, nb = st.shape[1], st.shape[2], st.shape[3]
    top = nb - 1
    v = 0
    for j in range(m):
        fired[j] = _clause_fires(st[c, j], lit, top, counts, mem)
        if fired[j]:
            v += sign[j]
            counts[ADD] += 1
    counts[CMP] += 2
    if v > T:
        v = T
    elif v < -T:
        v = -T
    p = (T - v) / (2.0 * T) if y == 1 else (T + v) / (2.0 * T)
    for j in range(m):
        if _draw(rng, counts) >= p:
            continue
        if (sign[j] > 0) == (y == 1):                       # Type I: recognise
            for w in range(nw):
                fb = _feedback_mask(nbits[w], s_inv, log_q, bit, rng, counts)   # each bit w.p. 1/s
                if fired[j]:
                    inc = lit[w] if boost else lit[w] & ~fb            # w.p. (s-1)/s
                    dec = ~lit[w] & fb & valid[w]
                    counts[AND] += 2 if boost else 3
                    mem[0] += 1
                    plane_inc(st[c, j, w], inc, counts, mem)
                    plane_dec(st[c, j, w], dec, counts, mem)
                else:
                    plane_dec(st[c, j, w], fb, counts, mem)
        elif fired[j]:                                        # Type II: discriminate
            for w in range(nw):
                inc = ~lit[w] & ~st[c, j, w, top] & valid[w]    # excluded literals that are 0
                counts[AND] += 2
                mem[0] += 2
                plane_inc(st[c, j, w], inc, counts, mem)
    return v


@njit(cache=True)
def train_multiclass(lit, y, order, st, valid, nbits, bit, sign, T, s_inv, log_q, boost, rng,
                     counts, mem):
    """One epoch of the multiclass TM: per sample, its class toward 1 and one uniformly
    drawn other class toward 0 (pyTsetlinMachine / MultiClassTsetlinMachine.c)."""
    n_cls = st.shape[0]
    fired = np.zeros(st.shape[1], np.int64)
    for i in order:
        update_class(st, y[i], 1, lit[i], valid, nbits, bit, sign, T, s_inv, log_q, boost, fired,
                     rng, counts, mem)
        if n_cls > 1:
            other = int(_draw(rng, counts) * (n_cls - 1))
            counts[CMP] += 1
            counts[ADD] += 1
            if other >= y[i]:
                other += 1
            update_class(st, other, 0, lit[i], valid, nbits, bit, sign, T, s_inv, log_q, boost,
                         fired, rng, counts, mem)


@njit(cache=True)
def train_single(lit, y, order, st, valid, nbits, bit, sign, T, s_inv, log_q, boost, rng, counts,
                 mem):
    """One pass of the single-output TM of the convergence paper: class 0 toward y[i]."""
    fired = np.zeros(st.shape[1], np.int64)
    for i in order:
        update_class(st, 0, y[i], lit[i], valid, nbits, bit, sign, T, s_inv, log_q, boost, fired,
                     rng, counts, mem)
