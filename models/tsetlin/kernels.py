"""numba kernels of the Tsetlin machine: bit-plane automata, clause evaluation, Type I/II feedback.

Layout (as cair/fast-tsetlin-machine-with-mnist-demo, TsetlinMachineBits.c): the states of
the automata of one clause are ``B`` bit-planes ``st[c, j, b, w]`` of packed words over the
2o literals; the state of literal ``k`` is the integer whose bit ``b`` is bit ``k`` of plane
``b``. The top plane ``b = B - 1`` is the include mask (state >= N = 2^(B-1)); its words are
contiguous (``st[c, j, B - 1, :]``), so the clause test streams one row. Increment and
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

The counts are what the device does; the host computes the same machine more cheaply where
the result cannot differ: counters are local and flushed once per update, and the Type I
1/s mask (one device draw per literal, TsetlinMachineC) is sampled bit-parallel (see
:func:`_bernoulli_word`), the same law, not the same stream.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from hw_profiles.ops import OP_CODES
from sim.bitwise.kernels import popc

XOR, AND, OR, ADD, CMP = (OP_CODES[k] for k in ("xor_word", "and_word", "or_word", "int_add",
                                                "int_cmp"))
U64_TO_UNIT = 1.0 / 18446744073709551616.0
_S7, _S13, _S17 = np.uint64(7), np.uint64(13), np.uint64(17)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S27, _S30, _S31 = np.uint64(27), np.uint64(30), np.uint64(31)
_ZERO = np.uint64(0)


@njit(cache=True, inline="always")
def _xs(x):
    """One xorshift64 step (Marsaglia 2003) of state ``x`` (never 0): (new state, uniform)."""
    x ^= x << _S13
    x ^= x >> _S7
    x ^= x << _S17
    return x, x * U64_TO_UNIT


@njit(cache=True)
def _draw(rng, counts):
    """Uniform in [0, 1) from xorshift64 state ``rng[0]``, counted as one device draw."""
    x, u = _xs(rng[0])
    rng[0] = x
    counts[XOR] += 3
    counts[ADD] += 3
    counts[CMP] += 1
    return u


@njit(cache=True, inline="always")
def _sm(h):
    """One splitmix64 step (Steele, Lea, Flood 2014) of state ``h``: (new state, 64 bits)."""
    h += _GOLD
    z = h
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return h, z ^ (z >> _S31)


@njit(cache=True, inline="always")
def _bernoulli_word(h, pdig, keep):
    """A word whose bits in ``keep`` are each 1 independently with probability p.

    Bit-parallel inversion: bit i is 1 iff U_i < p, U_i = 0.r1 r2 r3 ... (bit i of
    successive random words) compared with p = 0.d1 d2 d3 ... (``pdig``) digit by digit;
    a bit is decided at the first digit where r differs from d (r = 0 < d = 1: U < p), so
    each level decides half the bits still open, ~8 levels per 64-bit word. Exact for p's
    ``len(pdig)`` digits (a bit whose U matches all of them has U >= p: 0).
    Returns (new splitmix state, mask)."""
    und = keep
    m = _ZERO
    k = 0
    while und != _ZERO and k < pdig.shape[0]:
        h, r = _sm(h)
        if pdig[k]:
            m |= und & ~r
            und &= r
        else:
            und &= ~r
        k += 1
    return h, m


@njit(cache=True, inline="always")
def _ripple(sj, w, active, up):
    """+1 (``up``) or -1, saturating, on the automata of column ``w`` of planes ``sj`` [B, W]
    selected by ``active``. Returns (planes toggled n, 1 if the saturation fix-up ran)."""
    carry = np.uint64(active)
    nb = sj.shape[0]
    n = 0
    while n < nb and carry != _ZERO:
        p = np.uint64(sj[n, w])
        nxt = (p & carry) if up else (~p & carry)    # bits that were 1 carry / 0 borrow on
        sj[n, w] = p ^ carry
        carry = nxt
        n += 1
    if carry == _ZERO:
        return n, 0
    for b in range(nb):          # past 2^B - 1 (inc) or below 0 (dec): back to the end state
        p = np.uint64(sj[b, w])
        sj[b, w] = (p | carry) if up else (p & ~carry)
    return n, 1


@njit(cache=True)
def planes_add(st, masks, delta, counts, mem):
    """Test/utility entry: ``st`` [R, B, W], ``masks`` [R, W]; +1 (delta > 0) or -1 per
    masked automaton, counted as in the training kernels."""
    nb = st.shape[1]
    for r in range(st.shape[0]):
        for w in range(st.shape[2]):
            n, sat = _ripple(st[r], w, masks[r, w], delta > 0)
            counts[CMP] += n + 1 if n < nb else nb
            counts[AND] += n + (sat * nb if delta <= 0 else 0)
            counts[XOR] += n
            counts[OR] += sat * nb if delta > 0 else 0
            mem[0] += n + sat * nb
            mem[1] += n + sat * nb


@njit(cache=True)
def update_class(st, c, y, lit, valid, n_lit, sign, T, pdig, p_one, boost, fired, rng,
                 counts, mem):
    """One TM update of class ``c`` toward output ``y`` (1: the sample's class; 0: another).

    Clause selection with probability (T - v)/(2T) (y = 1) or (T + v)/(2T) (y = 0), v the
    clipped vote; Type I to clauses whose polarity agrees with y, Type II to the others
    (Granmo 2018, Algorithm 1; TsetlinMachineC ``tm_update``). ``pdig`` are the binary
    digits of 1/s (``p_one``: s = 1, every literal). ``rng`` = [xorshift state of the
    counted draws, splitmix state of the host's mask sampler]. Returns the clipped vote.
    """
    m, nb, nw = st.shape[1], st.shape[2], st.shape[3]
    top = nb - 1
    # local tallies (flushed once: the arrays may alias nothing, but numba cannot know)
    c_and = c_xor = c_or = c_add = c_cmp = rd = 0
    tog = cmp_r = sat_i = sat_d = 0           # ripple: planes toggled, tests, fix-ups
    v = 0
    for j in range(m):
        row = st[c, j, top]
        f = 1
        wv = nw
        for w in range(nw):
            if row[w] & ~lit[w]:
                f = 0
                wv = w + 1
                break
        c_and += wv
        c_cmp += wv
        rd += 2 * wv
        fired[j] = f
        if f:
            v += sign[j]
            c_add += 1
    c_cmp += 2
    if v > T:
        v = T
    elif v < -T:
        v = -T
    p = (T - v) / (2.0 * T) if y == 1 else (T + v) / (2.0 * T)
    xs, h = rng[0], rng[1]
    n_sel = 0
    for j in range(m):
        xs, u = _xs(xs)
        n_sel += 1
        if u >= p:
            continue
        sj = st[c, j]
        if (sign[j] > 0) == (y == 1):                       # Type I: recognise
            c_xor += 3 * n_lit                              # one device draw per literal
            c_add += 3 * n_lit
            c_cmp += n_lit
            for w in range(nw):
                keep = np.uint64(valid[w])
                if p_one:
                    fb = keep
                else:
                    h, fb = _bernoulli_word(h, pdig, keep)  # each literal w.p. 1/s
                c_or += popc(fb)
                if fired[j]:
                    lw = np.uint64(lit[w])
                    inc = lw if boost else lw & ~fb             # w.p. (s-1)/s
                    dec = ~lw & fb & keep
                    c_and += 2 if boost else 3
                    rd += 1
                    n, s_ = _ripple(sj, w, inc, True)
                    tog += n
                    cmp_r += n + 1 if n < nb else nb
                    sat_i += s_
                    n, s_ = _ripple(sj, w, dec, False)
                else:
                    n, s_ = _ripple(sj, w, fb, False)
                tog += n
                cmp_r += n + 1 if n < nb else nb
                sat_d += s_
        elif fired[j]:                                        # Type II: discriminate
            for w in range(nw):
                inc = ~np.uint64(lit[w]) & ~np.uint64(sj[top, w]) & np.uint64(valid[w])
                c_and += 2
                rd += 2
                n, s_ = _ripple(sj, w, inc, True)             # excluded literals that are 0
                tog += n
                cmp_r += n + 1 if n < nb else nb
                sat_i += s_
    rng[0], rng[1] = xs, h
    counts[XOR] += c_xor + 3 * n_sel + tog
    counts[ADD] += c_add + 3 * n_sel
    counts[CMP] += c_cmp + n_sel + cmp_r
    counts[AND] += c_and + tog + sat_d * nb
    counts[OR] += c_or + sat_i * nb
    mem[0] += rd + tog + (sat_i + sat_d) * nb
    mem[1] += tog + (sat_i + sat_d) * nb
    return v


@njit(cache=True)
def train_multiclass(lit, y, order, st, valid, n_lit, sign, T, pdig, p_one, boost, rng, counts,
                     mem):
    """One epoch of the multiclass TM: per sample, its class toward 1 and one uniformly
    drawn other class toward 0 (pyTsetlinMachine / MultiClassTsetlinMachine.c)."""
    n_cls = st.shape[0]
    fired = np.zeros(st.shape[1], np.int64)
    for i in order:
        update_class(st, y[i], 1, lit[i], valid, n_lit, sign, T, pdig, p_one, boost, fired,
                     rng, counts, mem)
        if n_cls > 1:
            other = int(_draw(rng, counts) * (n_cls - 1))
            counts[CMP] += 1
            counts[ADD] += 1
            if other >= y[i]:
                other += 1
            update_class(st, other, 0, lit[i], valid, n_lit, sign, T, pdig, p_one, boost,
                         fired, rng, counts, mem)


@njit(cache=True)
def train_single(lit, y, order, st, valid, n_lit, sign, T, pdig, p_one, boost, rng, counts,
                 mem):
    """One pass of the single-output TM of the convergence paper: class 0 toward y[i]."""
    fired = np.zeros(st.shape[1], np.int64)
    for i in order:
        update_class(st, 0, y[i], lit[i], valid, n_lit, sign, T, pdig, p_one, boost, fired,
                     rng, counts, mem)


def probability_digits(p: float, n: int = 64) -> np.ndarray:
    """The first ``n`` binary digits of p in [0, 1) (d1 = the 1/2 digit), as uint8."""
    d = np.zeros(n, np.uint8)
    for k in range(n):
        p *= 2.0
        if p >= 1.0:
            d[k] = 1
            p -= 1.0
    return d
