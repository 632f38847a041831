"""Convergence study of the ICLR 2026 TM paper: AND / OR / XOR, noise, irrelevant bits, k bits.

Each setting trains the single-output, positive-polarity machine of the paper (m clauses,
target T, s, N = 128) on uniform i.i.d. draws of the operator's input patterns, checks for
an absorbing state exactly (:meth:`models.tsetlin.TsetlinMachine.is_absorbing`) every
``check_every`` updates, and reports over seeds the fraction that absorbed within the budget,
the median updates needed, and the fraction of absorbed machines whose clauses compute the
operator (every y = 1 pattern makes some clause fire, no y = 0 pattern does) and, for AND /
XOR, have exactly the paper's clause form. ``predicted`` is the paper's statement for the
setting (``absorb`` / ``no``), so the table shows where simulation and theorem agree.

The digest marks the AND condition "u1 > 0, u2 > 0" as ambiguous: (a) every sample type
has positive probability (then Thm 1 holds for every T), or (b) no sample type is blocked
by T (the (1,1) sample keeps a positive selection probability, i.e. T > v at the fixed
point, T >= m here). Rows ``and`` with T < m test it: if machines absorb with clauses
other than x1 AND x2 there, reading (b) is the one the results support.
"""
from __future__ import annotations

import numpy as np

from models.tsetlin import TsetlinConfig, TsetlinMachine, operator_patterns

# (op, k, irrelevant, m, T, noise, predicted)
QUICK_SETTINGS = [
    ("and", 2, 0, 2, 1, 0.0, "absorb"), ("and", 2, 0, 2, 2, 0.0, "absorb"),
    ("and", 2, 0, 2, 3, 0.0, "absorb"), ("and", 2, 0, 4, 1, 0.0, "absorb"),
    ("and", 2, 0, 4, 4, 0.0, "absorb"),
    ("or", 2, 0, 4, 1, 0.0, "absorb"), ("or", 2, 0, 4, 2, 0.0, "absorb"),
    ("or", 2, 0, 4, 3, 0.0, "no"), ("or", 2, 0, 4, 4, 0.0, "no"),
    ("xor", 2, 0, 4, 1, 0.0, "absorb"), ("xor", 2, 0, 4, 2, 0.0, "absorb"),
    ("xor", 2, 0, 4, 3, 0.0, "no"),
    ("and", 2, 0, 2, 2, 0.1, "no"), ("or", 2, 0, 4, 2, 0.1, "no"), ("xor", 2, 0, 4, 2, 0.1, "no"),
    ("and", 2, 2, 2, 2, 0.0, "absorb"), ("or", 2, 2, 4, 2, 0.0, "absorb"),
    ("xor", 2, 2, 4, 2, 0.0, "absorb"),
    ("and", 3, 0, 2, 2, 0.0, "absorb"), ("and", 4, 0, 2, 2, 0.0, "absorb"),
]
FULL_EXTRA = [
    ("and", 2, 4, 2, 2, 0.0, "absorb"), ("or", 2, 4, 4, 2, 0.0, "absorb"),
    ("xor", 2, 4, 4, 2, 0.0, "absorb"), ("or", 2, 0, 6, 3, 0.0, "absorb"),
    ("or", 2, 0, 6, 4, 0.0, "no"), ("and", 5, 0, 2, 2, 0.0, "absorb"),
]


def _clause_form(op: str, k: int, inc: np.ndarray) -> bool:
    """Do the absorbed clauses have the paper's exact form? (AND: x1..xk; XOR: x1 NOT x2 /
    NOT x1 x2; OR: no single form, True)."""
    n = inc.shape[1] // 2
    if op == "and":
        want = np.zeros(2 * n, bool)
        want[:k] = True
        return bool(np.all(inc == want))
    if op == "xor" and k == 2:
        a, b = np.zeros(2 * n, bool), np.zeros(2 * n, bool)
        a[[0, n + 1]] = True
        b[[1, n]] = True
        return bool(all(np.array_equal(c, a) or np.array_equal(c, b) for c in inc))
    return True


def run_setting(op, k, irrelevant, m, T, noise, seeds, max_updates, s=3.9, check_every=100):
    """One row of the table: absorption over ``seeds`` for one setting."""
    import sim
    x, y = operator_patterns(op, irrelevant, k)
    absorbed, updates, computes, form = 0, [], 0, 0
    for seed in seeds:
        tm = TsetlinMachine(x.shape[1], 1, TsetlinConfig(clauses=m, T=T, s=s,
                                                         polarity="positive", seed=seed),
                            sim.device("cortex-m4"))
        n = tm.run_until_absorbed(x, y, max_updates, check_every, noise=noise)
        if n is None:
            continue
        absorbed += 1
        updates.append(n)
        v = tm.scores(x, scope="check")[:, 0]      # positive clauses only: v = # firing
        computes += bool(np.all((v > 0) == (y == 1)))
        form += _clause_form(op, k, tm.include()[0])
    n_s = len(seeds)
    return {"op": op, "k": k, "irrelevant": irrelevant, "m": m, "T": T, "noise": noise,
            "seeds": n_s, "absorbed": absorbed / n_s,
            "median_updates": float(np.median(updates)) if updates else None,
            "max_updates_needed": int(max(updates)) if updates else None,
            "computes_op": computes / absorbed if absorbed else None,
            "exact_form": form / absorbed if absorbed else None}


def study(quick: bool = True, seed: int = 0, progress=None) -> dict:
    """All settings; quick: 20 seeds and 100,000 updates each, full: 40 seeds, 400,000."""
    settings = QUICK_SETTINGS + ([] if quick else FULL_EXTRA)
    n_seeds, budget = (20, 100_000) if quick else (40, 400_000)
    seeds = range(seed, seed + n_seeds)
    rows = []
    for i, (op, k, q, m, T, noise, pred) in enumerate(settings):
        row = run_setting(op, k, q, m, T, noise, seeds, budget)
        row["predicted"] = pred
        row["agrees"] = (row["absorbed"] > 0) == (pred == "absorb") and \
            (pred != "absorb" or row["absorbed"] == 1.0)
        rows.append(row)
        if progress is not None:
            progress(i + 1, len(settings), row)
    return {"rows": rows, "budget_updates": budget, "seeds": n_seeds}
