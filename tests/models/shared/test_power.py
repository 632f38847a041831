"""models/shared/power.py: paired t power against textbook values, the normal approximation
and a Monte Carlo of the test itself; the paired tests by hand; the refusals."""
import math

import numpy as np
import pytest
from scipy import stats

from models.shared import power as P
from sim.errors import ModelError


@pytest.mark.parametrize("d, two_sided, n", [
    (0.5, True, 34),    # Cohen's medium effect, paired t, two-sided 0.05, power 0.8: 34
    (0.8, True, 15),    # large effect: 15 (G*Power, matched pairs)
    (0.2, True, 199),   # small effect: 199
    (0.5, False, 27),   # one-sided 0.05: 27
])
def test_seeds_needed_matches_the_textbook(d, two_sided, n):
    assert P.seeds_needed(d, 1.0, two_sided=two_sided) == n
    # the smallest such n: one pair fewer falls short of 0.8
    assert P.power(n - 1, d, 1.0, two_sided=two_sided) < 0.8 <= P.power(n, d, 1.0,
                                                                        two_sided=two_sided)


def test_only_the_ratio_effect_over_sd_matters():
    # d = 0.05 / 0.1 = 0.5 again: 34 seeds; the effect's sign is ignored (two-sided)
    assert P.seeds_needed(0.05, 0.1) == P.seeds_needed(-0.05, 0.1) == 34
    assert P.power(34, 0.5, 1.0) == pytest.approx(0.8078, abs=1e-4)   # G*Power: 0.8078


def test_power_tends_to_alpha_and_to_the_normal_approximation():
    # no effect: the test rejects at its level, 0.05
    assert P.power(10, 1e-9, 1.0) == pytest.approx(0.05, abs=1e-6)
    # large n: Phi(d sqrt(n) - z_0.975) = Phi(0.2 * sqrt(400) - 1.96) = Phi(2.04) = 0.979
    approx = stats.norm.cdf(0.2 * math.sqrt(400) - stats.norm.ppf(0.975))
    assert P.power(400, 0.2, 1.0) == pytest.approx(approx, abs=0.003)


def test_power_at_a_huge_effect_is_finite():
    """d = 8.37 (an effect 8x its noise): scipy's nct.cdf lower tail is nan at n = 3; the
    power equals E_V[Phi(nc - tc sqrt(V/df)) + Phi(-nc - tc sqrt(V/df))], V ~ chi2(df), the
    t statistic's definition integrated directly."""
    from scipy import integrate
    d, n = 8.37, 3
    df, nc, tc = n - 1, d * math.sqrt(n), stats.t.ppf(0.975, n - 1)
    exact = integrate.quad(lambda v: (stats.norm.cdf(nc - tc * math.sqrt(v / df))
                                      + stats.norm.cdf(-nc - tc * math.sqrt(v / df)))
                           * stats.chi2.pdf(v, df), 0, np.inf)[0]
    assert P.power(n, d, 1.0) == pytest.approx(exact, abs=1e-9)       # 0.99993
    # n = 2 has power 0.647 (< 0.8), n = 3 0.9999: 3 pairs
    assert P.seeds_needed(d, 1.0) == 3


def test_power_is_the_rejection_rate_of_the_test():
    """40,000 simulated studies of n = 10 pairs with true d = 0.5: the paired t-test rejects
    in the share power() predicts (0.293), to within 4 standard errors
    (sqrt(0.29 * 0.71 / 40000) = 0.0023)."""
    rng = np.random.default_rng(0)
    diffs = rng.normal(0.5, 1.0, size=(40_000, 10))
    t = diffs.mean(1) / (diffs.std(1, ddof=1) / math.sqrt(10))
    rate = np.mean(np.abs(t) > stats.t.ppf(0.975, 9))
    assert rate == pytest.approx(P.power(10, 0.5, 1.0), abs=4 * 0.0023)


def test_paired_by_hand():
    # diffs 0.5, 1.0, 0.2, 1.5: mean 0.8; sd^2 = (0.09 + 0.04 + 0.36 + 0.49) / 3 = 0.98 / 3
    r = P.paired([1, 2, 3, 4.5], [0.5, 1, 2.8, 3])
    assert r["n"] == 4 and r["mean"] == pytest.approx(0.8)
    assert r["sd"] == pytest.approx(math.sqrt(0.98 / 3))
    assert r["t"] == pytest.approx(0.8 / (math.sqrt(0.98 / 3) / 2))          # 2.799
    # two-sided t p at 3 df
    assert r["p_t"] == pytest.approx(2 * stats.t.sf(0.8 / (math.sqrt(0.98 / 3) / 2), 3))
    # 95 % interval: 0.8 -+ t_0.975(3) sd / 2 = 0.8 -+ 3.182 * 0.2858 = [-0.109, 1.709]
    assert r["ci95"] == pytest.approx([-0.1094, 1.7094], abs=1e-3)
    # Wilcoxon, exact: all 4 signs positive is 1 of 2^4 sign patterns, two-sided 2/16
    assert r["p_wilcoxon"] == pytest.approx(0.125)


def test_analyse_powers_the_given_effect_at_the_measured_sd():
    a, b = [1, 2, 3, 4.5], [0.5, 1, 2.8, 3]
    r = P.analyse(a, b, effect=0.5)
    sd = math.sqrt(0.98 / 3)
    assert r["d"] == pytest.approx(0.5 / sd)                                  # 0.875
    assert r["power"] == pytest.approx(P.power(4, 0.5, sd))
    assert r["seeds_needed"] == P.seeds_needed(0.5, sd) == 13
    # the sd's 80 % upper limit at 3 df: chi2_0.2(3) = 1.005, sd sqrt(3 / 1.005) = 1.728 sd
    assert r["sd_upper80"] == pytest.approx(sd * math.sqrt(3 / 1.0052), rel=1e-3)
    assert r["seeds_needed_upper80"] == P.seeds_needed(0.5, r["sd_upper80"]) > 13
    # every difference equal: sd 0, power undefined, not a crash
    flat = P.analyse([1, 2, 3], [0, 1, 2], effect=0.5)
    assert flat["sd"] == 0 and flat["power"] is None and flat["seeds_needed"] is None


def test_refusals_name_the_input():
    with pytest.raises(ModelError, match="effect = 0"):
        P.seeds_needed(0, 1.0)
    with pytest.raises(ModelError, match="sd = 0"):
        P.power(5, 0.5, 0.0)
    with pytest.raises(ModelError, match="n = 1"):
        P.power(1, 0.5, 1.0)
    with pytest.raises(ModelError, match="alpha = 1.5"):
        P.power(5, 0.5, 1.0, alpha=1.5)
    with pytest.raises(ModelError, match="more than"):
        P.seeds_needed(1e-6, 1.0)
    with pytest.raises(ModelError, match="equal-length"):
        P.paired([1, 2, 3], [1, 2])


def test_seeds_to_hold_is_two_thirds_rounded_up():
    # ceil(2n/3): 2*3/3 = 2; 2*5/3 = 3.33 -> 4; 2*8/3 = 5.33 -> 6; 2*1/3 = 0.67 -> 1
    assert [P.seeds_to_hold(n) for n in (3, 5, 8, 1)] == [2, 4, 6, 1]
    with pytest.raises(ModelError, match="0 seeds"):
        P.seeds_to_hold(0)
