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
