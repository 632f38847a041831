"""The training kernel against a plain integer-state Tsetlin machine written from the paper
(Granmo 2018, Algorithm 1) and the counting conventions of ``kernels.py``: same random
decisions (the host sampler is called in the kernel's order), same states, same counts."""
import numpy as np
import pytest

import sim
from hw_profiles.ops import OP_NAMES
from models.tsetlin import kernels as K
from models.tsetlin.card import TsetlinConfig
from models.tsetlin.model import TsetlinMachine
from sim.bitwise.packing import pack_bits, unpack_bits


def _ripple(st, active, up, nb, wb, tally):
    """+1 / -1 (saturating) on the integer states ``st`` [2o] where ``active``; the device's
    early-exit ripple counted word by word: a bit of state s carries through the planes
    where s has a 1 (inc) / 0 (dec), so the word visits max(trailing run + 1) planes, capped
    at nb; a bit at the end state makes the word saturate (fix-up of all nb planes)."""
    top = 2 ** nb - 1
    for w0 in range(0, len(st), wb):
        idx = [k for k in range(w0, min(w0 + wb, len(st))) if active[k]]
        n, sat = 0, False
        for k in idx:
            s, run = int(st[k]), 0
            while run < nb and ((s >> run) & 1) == (1 if up else 0):
                run += 1
            n = max(n, min(run + 1, nb))
            sat |= s == (top if up else 0)
        tally["and"] += n + (nb if sat and not up else 0)
        tally["xor"] += n
        tally["or"] += nb if sat and up else 0
        tally["cmp"] += n + 1 if n < nb else nb
        tally["rd"] += n + (nb if sat else 0)
        tally["wr"] += n + (nb if sat else 0)
        tally["sat_up" if up else "sat_down"] += sat
        for k in idx:
            st[k] = min(st[k] + 1, top) if up else max(st[k] - 1, 0)


def _reference_update(st, c, y, lit, tm, h, tally):
    """One update of class ``c`` toward ``y`` on integer states ``st`` [C, m, 2o]."""
    cfg, wb, nb = tm.config, tm.device.word_bits, tm.config.state_bits
    n_lit, nw, m = tm.n_lit, tm.n_w, cfg.clauses
    inc = st[c] >= 2 ** (nb - 1)
    fired, v = np.zeros(m, bool), 0
    for j in range(m):
        bad = inc[j] & (lit == 0)
        words = [bad[w0:w0 + wb].any() for w0 in range(0, n_lit, wb)]
        first = words.index(True) if any(words) else nw
        wv = nw if first == nw else first + 1          # the device stops after word `first`
        tally["and"] += wv
        tally["cmp"] += wv
        tally["rd"] += 2 * wv
        fired[j] = first == nw                          # an empty clause fires in training
        if fired[j]:
            v += tm.sign[j]
            tally["add"] += 1
    tally["cmp"] += 2
    v = int(np.clip(v, -cfg.T, cfg.T))
    p = (cfg.T - v) / (2.0 * cfg.T) if y == 1 else (cfg.T + v) / (2.0 * cfg.T)
    n_sel = (m + 63) // 64
    sel_valid = np.array([(1 << min(64, m - 64 * k)) - 1 if m - 64 * k < 64 else 2 ** 64 - 1
                          for k in range(n_sel)], np.uint64)
    smask, und = np.zeros(n_sel, np.uint64), np.zeros(n_sel, np.uint64)
    if p >= 1.0:
        smask[:] = sel_valid
    else:
        h = np.uint64(K._mask_rows(h, K.probability_digits(p), sel_valid, smask, und))
    selected = np.flatnonzero(unpack_bits(smask[None], m)[0])
    tally["xor"] += 3 * m                               # the device draws per clause
    tally["add"] += 3 * m
    tally["cmp"] += m
    fb_w, und_w = np.zeros(nw, np.uint64), np.zeros(nw, np.uint64)
    for j in selected:
        if (tm.sign[j] > 0) == (y == 1):               # Type I
            tally["xor"] += 3 * n_lit
            tally["add"] += 3 * n_lit
            tally["cmp"] += n_lit
            h = np.uint64(K._mask_rows(h, tm._pdig, tm.valid, fb_w, und_w))
            fb = unpack_bits(fb_w[None].astype(tm.device.word_dtype), n_lit)[0].astype(bool)
            tally["or"] += int(fb.sum())
            if fired[j]:
                up = (lit == 1) if cfg.boost_true_positive else (lit == 1) & ~fb
                tally["and"] += (2 if cfg.boost_true_positive else 3) * nw
                tally["rd"] += nw
                _ripple(st[c, j], up, True, nb, wb, tally)
                _ripple(st[c, j], (lit == 0) & fb, False, nb, wb, tally)
            else:
                _ripple(st[c, j], fb, False, nb, wb, tally)
        elif fired[j]:                                  # Type II
            tally["and"] += 2 * nw
            tally["rd"] += 2 * nw
            _ripple(st[c, j], (lit == 0) & (st[c, j] < 2 ** (nb - 1)), True, nb, wb, tally)
    return h


@pytest.mark.parametrize("profile,boost", [("cortex-m4", False), ("fpga-bnn", False),
                                           ("fpga-bnn", True)])
def test_kernel_equals_integer_reference_states_and_counts(profile, boost):
    # 3 classes, 6 clauses, 40 inputs (80 literals: 3 words of 32 / 2 of 64, the last
    # partial), 3 state bits so that both saturation ends are reached, 2 x 120 samples
    rs = np.random.default_rng(5)
    y = rs.integers(0, 3, 120)
    x = (rs.random((120, 40)) < 0.3).astype(np.uint8)
    for k in range(3):
        x[y == k, 10 * k:10 * k + 10] = 1              # a pattern per class: includes rise
    cfg = TsetlinConfig(clauses=6, T=3, s=3.9, state_bits=3, boost_true_positive=boost)
    tm = TsetlinMachine(40, 3, cfg, sim.device(profile))
    st0 = rs.integers(0, 8, (3, 6, 80))                 # random states: both ends in reach
    for b in range(3):
        tm.state[:, :, b] = pack_bits(((st0 >> b) & 1).reshape(18, 80),
                                      tm.device.word_bits).reshape(3, 6, -1)
    assert np.array_equal(tm.states(), st0)
    lit_words = tm.literals(x)
    lit = np.concatenate([x, 1 - x], axis=1)
    st = tm.states()
    rng = tm._rng.copy()
    tally = dict.fromkeys(("and", "xor", "or", "add", "cmp", "rd", "wr", "sat_up", "sat_down"),
                          0)
    draws = np.zeros(len(OP_NAMES), np.int64)
    h = rng[1]
    order = np.concatenate([rs.permutation(120), rs.permutation(120)])
    for i in order:
        h = _reference_update(st, y[i], 1, lit[i], tm, h, tally)
        other = int(K._draw(rng, draws) * 2)            # one of the 2 other classes
        tally["cmp"] += 1
        tally["add"] += 1
        other += other >= y[i]
        h = _reference_update(st, other, 0, lit[i], tm, h, tally)
    counts = np.zeros(len(OP_NAMES), np.int64)
    mem = np.zeros(2, np.int64)
    K.train_multiclass(lit_words, y, order, tm.state, tm.valid, tm.n_lit, tm.sign, cfg.T,
                       tm._pdig, False, boost, tm._rng, counts, mem)
    assert np.array_equal(tm.states(), st)
    got = {k: int(counts[K.OP_CODES[n]] - draws[K.OP_CODES[n]])
           for k, n in (("and", "and_word"), ("xor", "xor_word"), ("or", "or_word"),
                        ("add", "int_add"), ("cmp", "int_cmp"))}
    assert got == {k: tally[k] for k in got}
    assert mem.tolist() == [tally["rd"], tally["wr"]]
    assert tm._rng[1] == h and tm._rng[0] == rng[0]
    assert tally["sat_up"] > 0 and tally["sat_down"] > 0     # both fix-ups were exercised
