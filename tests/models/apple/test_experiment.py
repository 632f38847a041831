"""The paired seed comparison behind APPLE's claims: differences, wins, Wilcoxon, sign test."""
import pytest

from models.apple.experiment import paired


def test_all_seeds_one_way_gives_the_smallest_p_of_five_seeds():
    a = [0.5, 0.6, 0.7, 0.8, 0.9]
    b = [0.4, 0.4, 0.4, 0.4, 0.4]   # differences 0.1 .. 0.5: 5 wins, ranks 1..5 all positive
    t = paired(a, b)
    assert (t["wins"], t["losses"], t["n"]) == (5, 0, 5)
    assert t["diff"]["mean"] == pytest.approx(0.3)
    assert t["wilcoxon_p_greater"] == pytest.approx(1 / 32)   # exact: one of 2^5 sign sets
    assert t["wilcoxon_p_two_sided"] == pytest.approx(2 / 32)
    assert t["sign_p_greater"] == pytest.approx(1 / 32)       # binomial: 0.5^5
    assert t["holds"]


def test_one_loss_breaks_the_claim():
    a = [0.5, 0.6, 0.7, 0.8, 0.3]
    b = [0.4, 0.4, 0.4, 0.4, 0.4]   # differences 0.1, 0.2, 0.3, 0.4, -0.1
    t = paired(a, b)
    assert (t["wins"], t["losses"]) == (4, 1) and not t["holds"]
    # W+ = ranks of 0.2, 0.3, 0.4 (3, 4, 5) + 0.1 tied with -0.1 (1.5) = 13.5 of 15
    assert 1 / 32 < t["wilcoxon_p_greater"] < 0.2
    assert t["sign_p_greater"] == pytest.approx(6 / 32)       # P(X >= 4), X ~ B(5, 1/2)


def test_equal_runs_give_p_one():
    t = paired([0.5, 0.5], [0.5, 0.5])
    assert t["wilcoxon_p_greater"] == 1.0 and t["wins"] == 0 and not t["holds"]


def test_readiness_needs_two_thirds_of_the_seeds_within_the_margin():
    from models.apple.experiment import READY_MARGIN, predictor_ready, verdict
    rnd = [0.47, 0.50, 0.45]
    # differences -0.02, -0.04, -0.10: the first two within 0.05, so 2 of 3 >= ceil(2) ready
    r = predictor_ready([0.45, 0.46, 0.35], rnd)
    assert READY_MARGIN == 0.05 and (r["seeds_at_level"], r["needed"], r["ready"]) == (2, 2, True)
    # -0.06, -0.04, -0.10: one of 3 -> not ready, and the verdict is void whatever the policy
    r = predictor_ready([0.41, 0.46, 0.35], rnd)
    assert (r["seeds_at_level"], r["ready"]) == (1, False)
    assert verdict(r, paired([0.9] * 5, [0.1] * 5)).startswith("void")
    # 5 seeds need ceil(10 / 3) = 4
    assert predictor_ready([0.5] * 5, [0.5, 0.5, 0.5, 0.6, 0.6])["ready"] is False
    ok = predictor_ready([0.5] * 5, [0.5] * 5)
    assert verdict(ok, paired([0.5, 0.6, 0.7, 0.8, 0.9], [0.4] * 5)) == "beats random"
    assert verdict(ok, paired([0.5] * 5, [0.5] * 5)) == "does not beat random"
