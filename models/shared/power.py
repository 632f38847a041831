"""Paired comparisons over seeds: the paired t and Wilcoxon tests, and the power analysis
that says how many seeds a paired t-test needs to see a given effect.

A study runs two arms on the same seeds (same data, same steps), so the quantity tested is
the per-seed difference ``d_s = a_s - b_s``. Under H0 its mean is 0. The paired t-test's
statistic ``t = mean(d) / (sd(d) / sqrt(n))`` has, when the true mean difference is
``delta`` and the true sd is ``sigma``, a noncentral t distribution with ``n - 1`` degrees of
freedom and noncentrality ``delta / sigma * sqrt(n)`` (Cohen 1988, Ch. 2; G*Power's
"t tests - means: difference from zero, matched pairs"). The power of a two-sided test at
level ``alpha`` is therefore

    P(|T'| > t_{1 - alpha/2, n-1}) = sf(t_c; n-1, nc) + cdf(-t_c; n-1, nc),

computed exactly with ``scipy.stats.nct``. :func:`seeds_needed` is the smallest ``n`` whose
power reaches the target (power grows with ``n``, so a bisection finds it).

Reading chosen: ``sigma`` is the sample sd of the measured differences (a plug-in, as a
pilot study is used), so the answer is only as good as that sd; ``delta`` is the effect one
wants to detect (here the paper's, rescaled to this scale's units), not the effect measured.

Examples
--------
>>> seeds_needed(effect=0.5, sd=1.0)          # Cohen's d = 0.5, two-sided 0.05, power 0.8
34
>>> round(power(34, effect=0.5, sd=1.0), 3)
0.808
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from sim.errors import ModelError

ALPHA = 0.05        # the conventional two-sided level
TARGET_POWER = 0.8  # Cohen's convention
UPPER_CONFIDENCE = 0.8  # the sd's upper limit that analyse() plans with as well
N_MAX = 1_000_000   # seeds_needed gives up above this (an effect ~0 against its noise)


def _check_effect(effect: float, sd: float, alpha: float, what: str) -> None:
    if not (math.isfinite(effect) and effect != 0):
        raise ModelError(f"[power.{what}] effect = {effect}: give the nonzero difference to "
                         "detect, in the units of the paired differences")
    if not (math.isfinite(sd) and sd > 0):
        raise ModelError(f"[power.{what}] sd = {sd}: the sd of the paired differences must "
                         "be finite and > 0 (with sd 0 the t statistic is undefined)")
    if not 0 < alpha < 1:
        raise ModelError(f"[power.{what}] alpha = {alpha}: must be in (0, 1), e.g. 0.05")


def power(n: int, effect: float, sd: float, alpha: float = ALPHA,
          two_sided: bool = True) -> float:
    """Power of a paired t-test with ``n`` pairs to detect a mean difference ``effect``
    when the differences have sd ``sd``.

    Parameters
    ----------
    n : int
        Pairs (seeds), >= 2.
    effect : float
        The true mean difference to detect (units of the differences); its sign is ignored
        for a two-sided test.
    sd : float
        The sd of the per-seed differences (same units), > 0.
    alpha : float
        Level of the test.
    two_sided : bool
        Two-sided test (default); one-sided in the direction of ``effect`` otherwise.

    Returns
    -------
    float
        The probability that the test rejects H0: mean difference = 0.
    """
    _check_effect(effect, sd, alpha, "power")
    if int(n) != n or n < 2:
        raise ModelError(f"[power.power] n = {n}: a paired t-test needs >= 2 pairs")
    df = n - 1
    nc = abs(effect) / sd * math.sqrt(n)
    if two_sided:
        tc = stats.t.ppf(1 - alpha / 2, df)
        # the lower tail P(T' < -tc) written as P(T'(-nc) > tc) (T'(nc) = -T'(-nc)):
        # scipy's nct.cdf(-tc, df, nc) returns nan for large nc at few df (nc 12, df 2)
        p = stats.nct.sf(tc, df, nc) + stats.nct.sf(tc, df, -nc)
    else:
        p = stats.nct.sf(stats.t.ppf(1 - alpha, df), df, nc)
    if not math.isfinite(p):
        raise ModelError(f"[power.power] n = {n}, d = {abs(effect) / sd:.3g}: scipy's "
                         "noncentral t gave no finite tail probability")
    return float(min(p, 1.0))


def seeds_needed(effect: float, sd: float, alpha: float = ALPHA,
                 target: float = TARGET_POWER, two_sided: bool = True) -> int:
    """The smallest number of pairs whose paired t-test has power >= ``target`` for
    ``effect`` at sd ``sd`` (:func:`power`). Raises when more than :data:`N_MAX` are needed.
    """
    _check_effect(effect, sd, alpha, "seeds_needed")
    if not 0 < target < 1:
        raise ModelError(f"[power.seeds_needed] target = {target}: a power in (0, 1), "
                         "e.g. 0.8")
    lo, hi = 2, 2                  # invariant: power(hi) >= target, power(< lo) < target
    while power(hi, effect, sd, alpha, two_sided) < target:
        lo, hi = hi + 1, hi * 2
        if hi > N_MAX:
            raise ModelError(f"[power.seeds_needed] effect {effect:g} at sd {sd:g} "
                             f"(d = {abs(effect) / sd:.2g}) needs more than {N_MAX} pairs")
    while lo < hi:                 # bisection: power grows with n
        mid = (lo + hi) // 2
        if power(mid, effect, sd, alpha, two_sided) >= target:
            hi = mid
        else:
            lo = mid + 1
    return hi


def seeds_to_hold(n: int) -> int:
    """Seeds of ``n`` on which a paired claim must hold: ceil(2n/3) (2 of 3, 4 of 5, 6 of 8),
    the rule the settling benches fix before their runs."""
    if n < 1:
        raise ModelError(f"[power.seeds_to_hold] {n} seeds: give at least one")
    return math.ceil(2 * n / 3)


def paired(a, b) -> dict:
    """The paired comparison of arms ``a`` and ``b`` measured on the same seeds.

    Returns the differences ``a - b`` (list), their mean and sd (ddof 1), the 95 % t
    confidence interval of the mean difference, the paired t statistic and its two-sided p,
    and the two-sided Wilcoxon signed-rank p (exact for
    small n without ties, scipy's default; 1.0 when every difference is 0). With every
    difference equal (sd 0) t and its p are nan.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ModelError(f"[power.paired] arms of shapes {a.shape} and {b.shape}: give two "
                         "equal-length 1-D per-seed lists with >= 2 seeds")
    d = a - b
    sd = float(d.std(ddof=1))
    # all differences equal: t is undefined (nan), not scipy's precision-loss warning
    t = stats.ttest_rel(a, b) if sd > 0 else None
    w = stats.wilcoxon(d) if np.any(d != 0) else None
    half = stats.t.ppf(0.975, d.size - 1) * sd / math.sqrt(d.size)
    return {"n": int(d.size), "diffs": d.tolist(), "mean": float(d.mean()), "sd": sd,
            "ci95": [float(d.mean() - half), float(d.mean() + half)],
            "t": float(t.statistic) if t else math.nan, "p_t": float(t.pvalue) if t else math.nan,
            "p_wilcoxon": float(w.pvalue) if w is not None else 1.0}


def analyse(a, b, effect: float, alpha: float = ALPHA, target: float = TARGET_POWER) -> dict:
    """:func:`paired` plus, for ``effect`` (the difference to detect, in the units of
    ``a - b``): Cohen's d at the measured sd, the power these seeds have, and the seeds a
    paired t-test would need for ``target`` power; and, since an sd from few seeds is itself
    uncertain, the seeds needed at the sd's one-sided 80 % upper confidence limit
    ``sd sqrt((n - 1) / chi2_0.2(n - 1))`` (the pilot-study rule of Browne 1995, Stat. Med.
    14:1933). When every difference is the same (sd 0) the power figures are None: a plug-in
    sd of 0 says nothing about the noise."""
    out = paired(a, b)
    n, sd = out["n"], out["sd"]
    sd_upper = sd * math.sqrt((n - 1) / stats.chi2.ppf(1 - UPPER_CONFIDENCE, n - 1))
    out.update({"effect": float(effect), "alpha": alpha, "target_power": target,
                "d": None, "power": None, "seeds_needed": None,
                "sd_upper80": float(sd_upper), "seeds_needed_upper80": None})
    if sd > 0:
        out.update({"d": abs(effect) / sd, "power": power(n, effect, sd, alpha),
                    "seeds_needed": seeds_needed(effect, sd, alpha, target),
                    "seeds_needed_upper80": seeds_needed(effect, sd_upper, alpha, target)})
    return out
