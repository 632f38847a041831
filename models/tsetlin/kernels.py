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
:func:`_mask_rows`), the same law, not the same stream; the plane ripple runs over all
words of a clause at once, branch-free, and its early-exit tallies are counted word by word.
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
_ZERO, _ONE = np.uint64(0), np.uint64(1)
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


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


LEVELS = 10
"""Digit levels of the 1/s mask drawn for every word of a clause at once (vectorised); a
64-bit word still has an undecided bit after 10 levels with probability 6%, finished one
word at a time (:func:`_mask_rows`)."""


@njit(cache=True, inline="always")
def _mix(z):
    """splitmix64's output function (Steele, Lea, Flood 2014) of counter ``z``."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def _mask_rows(h, dm, valid, fb, und):
    """``fb[w]`` = a word whose bits in ``valid[w]`` are each 1 independently with probability
    p, for every word of a clause; returns the new counter ``h``.

    Bit-parallel inversion: bit i is 1 iff U_i < p, U_i = 0.r1 r2 r3 ... (bit i of
    independent random words) compared with p = 0.d1 d2 d3 ... digit by digit (``dm[k]`` =
    all ones where d_k = 1); a bit is decided at the first digit where r differs from d
    (r = 0 < d = 1: U < p), so each level decides half the open bits. Exact for p's
    ``len(dm)`` digits (a bit whose U matches all of them has U >= p: 0). The first
    :data:`LEVELS` levels run over all words (independent splitmix counters: a loop the
    compiler vectorises), then each word with open bits goes on alone.
    """
    nw = fb.shape[0]
    for w in range(nw):
        und[w] = np.uint64(valid[w])
        fb[w] = _ZERO
    for k in range(LEVELS):
        d = dm[k]
        base = h + np.uint64(k * nw) * _GOLD
        for w in range(nw):
            r = _mix(base + np.uint64(w + 1) * _GOLD)
            u = und[w]
            fb[w] |= u & ~r & d
            und[w] = u & ~(r ^ d)
    h += np.uint64(LEVELS * nw) * _GOLD
    for w in range(nw):
        u = und[w]
        k = LEVELS
        while u != _ZERO and k < dm.shape[0]:
            h += _GOLD
            r = _mix(h)
            fb[w] |= u & ~r & dm[k]
            u &= ~(r ^ dm[k])
            k += 1
    return h


@njit(cache=True, inline="always")
def _ripple_rows(sj, act, car, up):
    """+1 (``up``) or -1, saturating, on the automata of clause planes ``sj`` [B, W] selected
    by ``act`` [W]: the ripple-carry of every word at once, plane by plane (branch-free: a
    word whose carry is spent is toggled by 0, a loop the compiler vectorises).

    Returns the device's tallies of its early-exit ripple, word by word: (planes toggled,
    zero tests, words saturated). A word's ripple tests once more than it toggles unless
    its carry entered the top plane (then it tests every plane and stops)."""
    nb, nw = sj.shape[0], sj.shape[1]
    tog = 0
    full = 0
    for w in range(nw):
        car[w] = act[w]
    for b in range(nb):
        row = sj[b]
        if b == nb - 1:
            for w in range(nw):
                full += car[w] != _ZERO
        if up:
            for w in range(nw):
                c = car[w]
                p = np.uint64(row[w])
                tog += c != _ZERO
                row[w] = p ^ c
                car[w] = p & c                    # bits that were 1 carry on
        else:
            for w in range(nw):
                c = car[w]
                p = np.uint64(row[w])
                tog += c != _ZERO
                row[w] = p ^ c
                car[w] = ~p & c                   # bits that were 0 borrow on
    sat = 0
    for w in range(nw):
        sat += car[w] != _ZERO
    if sat:                        # past 2^B - 1 (inc) or below 0 (dec): back to the end state
        for b in range(nb):
            row = sj[b]
            for w in range(nw):
                c = car[w]
                row[w] = (np.uint64(row[w]) | c) if up else (np.uint64(row[w]) & ~c)
    return tog, tog + nw - full, sat


@njit(cache=True)
def planes_add(st, masks, delta, counts, mem):
    """Test/utility entry: ``st`` [R, B, W], ``masks`` [R, W]; +1 (delta > 0) or -1 per
    masked automaton, counted as in the training kernels."""
    nb, nw = st.shape[1], st.shape[2]
    car = np.zeros(nw, np.uint64)
    act = np.zeros(nw, np.uint64)
    for r in range(st.shape[0]):
        for w in range(nw):
            act[w] = masks[r, w]
        tog, tests, sat = _ripple_rows(st[r], act, car, delta > 0)
        counts[CMP] += tests
        counts[AND] += tog + (sat * nb if delta <= 0 else 0)
        counts[XOR] += tog
        counts[OR] += sat * nb if delta > 0 else 0
        mem[0] += tog + sat * nb
        mem[1] += tog + sat * nb


@njit(cache=True, inline="always")
def _ctz(x):
    """Index of the lowest set bit of a non-zero uint64 (popcount of the bits below it)."""
    return popc((x & (~x + _ONE)) - _ONE)


@njit(cache=True, inline="always")
def _first_violation(row, lit):
    """Index of the first word where an included literal is 0 (``row[w] AND NOT lit[w]``
    non-zero), or ``len(row)`` when the clause fires: the words the device's early exit
    visits are known exactly."""
    for w in range(row.shape[0]):
        if row[w] & ~lit[w]:
            return w
    return row.shape[0]


@njit(cache=True, inline="always")
def _digits(p, pd):
    """The binary digits of p in [0, 1] as all-zero / all-one words into ``pd``."""
    q = p
    for k in range(pd.shape[0]):
        q *= 2.0
        if q >= 1.0:
            pd[k] = _ONES
            q -= 1.0
        else:
            pd[k] = _ZERO


@njit(cache=True)
def update_class(st, c, y, lit, valid, n_lit, sign, T, dm, p_one, boost, fired, scratch, sel,
                 pd, incT, first, rng, counts, mem):
    """One TM update of class ``c`` toward output ``y`` (1: the sample's class; 0: another).

    Clause selection with probability (T - v)/(2T) (y = 1) or (T + v)/(2T) (y = 0), v the
    clipped vote; Type I to clauses whose polarity agrees with y, Type II to the others
    (Granmo 2018, Algorithm 1; TsetlinMachineC ``tm_update``). ``dm`` are the binary
    digits of 1/s as all-zero / all-one words (``p_one``: s = 1, every literal).
    ``scratch`` [5, W] uint64 work rows; ``sel`` [3, ceil(m / 64)] the selection mask
    rows (row 2: the valid clause bits); ``pd`` [64] the digits of the selection
    probability. ``incT`` [C, W, m]: the include rows transposed (clause index innermost)
    when the clause test runs word-major over all clauses, else [C, 0, m] (then clause by
    clause, early exit); ``first`` [m] int64 scratch. ``rng`` = [xorshift state of the
    counted draws, splitmix counter of the host's sampler]. Returns the clipped vote.

    The device draws one number per clause for the selection (counted); the host draws the
    selected set as one Bernoulli mask over the clauses (:func:`_mask_rows`: same law) and
    visits only the selected clauses.
    """
    m, nb, nw = st.shape[1], st.shape[2], st.shape[3]
    top = nb - 1
    fb, und, car, inc, dec = scratch[0], scratch[1], scratch[2], scratch[3], scratch[4]
    # local tallies, flushed once per update
    c_and = c_xor = c_or = c_add = c_cmp = rd = 0
    tog = tests = sat_i = sat_d = 0           # ripple: planes toggled, zero tests, fix-ups
    v = 0
    word_major = incT.shape[1] == nw
    if word_major:                 # all clauses at once, word by word (vectorised over j)
        it = incT[c]
        for j in range(m):
            first[j] = nw
        for w in range(nw):
            lw = ~np.uint64(lit[w])
            row = it[w]
            for j in range(m):
                f = first[j]
                first[j] = w if (f == nw) and (np.uint64(row[j]) & lw) != _ZERO else f
    for j in range(m):
        fw = first[j] if word_major else _first_violation(st[c, j, top], lit)
        wv = nw if fw == nw else fw + 1           # words the device's early exit visits
        c_and += wv
        c_cmp += wv
        rd += 2 * wv
        f = 1 if fw == nw else 0
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
    h = rng[1]
    smask = sel[0]
    if p >= 1.0:
        for k in range(smask.shape[0]):
            smask[k] = sel[2, k]
    else:
        _digits(p, pd)
        h = _mask_rows(h, pd, sel[2], smask, sel[1])
    for k in range(smask.shape[0]):
        bits = smask[k]
        while bits != _ZERO:
            j = k * 64 + _ctz(bits)
            bits &= bits - _ONE
            sj = st[c, j]
            if (sign[j] > 0) == (y == 1):                       # Type I: recognise
                c_xor += 3 * n_lit                              # one device draw per literal
                c_add += 3 * n_lit
                c_cmp += n_lit
                if p_one:
                    for w in range(nw):
                        fb[w] = np.uint64(valid[w])
                else:
                    h = _mask_rows(h, dm, valid, fb, und)       # each literal w.p. 1/s
                for w in range(nw):
                    c_or += popc(fb[w])
                if fired[j]:
                    for w in range(nw):
                        lw = np.uint64(lit[w])
                        inc[w] = lw if boost else lw & ~fb[w]       # w.p. (s-1)/s
                        dec[w] = ~lw & fb[w] & np.uint64(valid[w])
                    c_and += (2 if boost else 3) * nw
                    rd += nw
                    t, e, s_ = _ripple_rows(sj, inc, car, True)
                    tog += t
                    tests += e
                    sat_i += s_
                    t, e, s_ = _ripple_rows(sj, dec, car, False)
                else:
                    t, e, s_ = _ripple_rows(sj, fb, car, False)
                tog += t
                tests += e
                sat_d += s_
            elif fired[j]:                                        # Type II: discriminate
                trow = sj[top]
                for w in range(nw):                               # excluded literals that are 0
                    inc[w] = ~np.uint64(lit[w]) & ~np.uint64(trow[w]) & np.uint64(valid[w])
                c_and += 2 * nw
                rd += 2 * nw
                t, e, s_ = _ripple_rows(sj, inc, car, True)
                tog += t
                tests += e
                sat_i += s_
            if word_major:                                        # the include copy follows
                trow = sj[top]
                for w in range(nw):
                    incT[c, w, j] = trow[w]
    rng[1] = h
    counts[XOR] += c_xor + 3 * m + tog                # the device's m selection draws
    counts[ADD] += c_add + 3 * m
    counts[CMP] += c_cmp + m + tests
    counts[AND] += c_and + tog + sat_d * nb
    counts[OR] += c_or + sat_i * nb
    mem[0] += rd + tog + (sat_i + sat_d) * nb
    mem[1] += tog + (sat_i + sat_d) * nb
    return v


WORD_MAJOR_MAX = 64
"""Clauses of at most this many literal words are tested word-major over all clauses of a
class (vectorised, no early exit on the host); longer ones clause by clause with early
exit. Either way the device's early-exit words are what is counted."""


@njit(cache=True)
def _work(st):
    """Scratch of one machine: feedback words, selection mask rows, digits, the include
    rows transposed (clause index innermost) and the first violated word per clause."""
    n_cls, m, nb, nw = st.shape
    scratch = np.zeros((5, nw), np.uint64)
    mw = (m + 63) // 64
    sel = np.zeros((3, mw), np.uint64)
    for j in range(m):
        sel[2, j // 64] |= _ONE << np.uint64(j % 64)
    incT = np.zeros((n_cls, nw if nw <= WORD_MAJOR_MAX else 0, m), np.uint64)
    if nw <= WORD_MAJOR_MAX:
        for c in range(n_cls):
            for j in range(m):
                for w in range(nw):
                    incT[c, w, j] = st[c, j, nb - 1, w]
    return scratch, sel, np.zeros(64, np.uint64), incT, np.zeros(m, np.int64)


@njit(cache=True)
def train_multiclass(lit, y, order, st, valid, n_lit, sign, T, dm, p_one, boost, rng, counts,
                     mem):
    """One epoch of the multiclass TM: per sample, its class toward 1 and one uniformly
    drawn other class toward 0 (pyTsetlinMachine / MultiClassTsetlinMachine.c)."""
    n_cls = st.shape[0]
    fired = np.zeros(st.shape[1], np.int64)
    scratch, sel, pd, incT, first = _work(st)
    for i in order:
        update_class(st, y[i], 1, lit[i], valid, n_lit, sign, T, dm, p_one, boost, fired,
                     scratch, sel, pd, incT, first, rng, counts, mem)
        if n_cls > 1:
            other = int(_draw(rng, counts) * (n_cls - 1))
            counts[CMP] += 1
            counts[ADD] += 1
            if other >= y[i]:
                other += 1
            update_class(st, other, 0, lit[i], valid, n_lit, sign, T, dm, p_one, boost,
                         fired, scratch, sel, pd, incT, first, rng, counts, mem)


@njit(cache=True)
def train_single(lit, y, order, st, valid, n_lit, sign, T, dm, p_one, boost, rng, counts,
                 mem):
    """One pass of the single-output TM of the convergence paper: class 0 toward y[i]."""
    fired = np.zeros(st.shape[1], np.int64)
    scratch, sel, pd, incT, first = _work(st)
    for i in order:
        update_class(st, 0, y[i], lit[i], valid, n_lit, sign, T, dm, p_one, boost, fired,
                     scratch, sel, pd, incT, first, rng, counts, mem)


def probability_digits(p: float, n: int = 64) -> np.ndarray:
    """The first ``n`` binary digits of p in [0, 1) (d1 = the 1/2 digit) as words: all ones
    where the digit is 1, 0 where it is 0 (uint64), what :func:`_mask_rows` compares with."""
    d = np.zeros(n, np.uint64)
    for k in range(n):
        p *= 2.0
        if p >= 1.0:
            d[k] = _ONES
            p -= 1.0
    return d
