"""The summary of a filter-heads run (experiment.checks) on constructed metrics."""
import math

from models.filter_heads.experiment import ROWS, check, checks


def test_check():
    assert check(0.7, (">=", 0.7)) is True and check(0.69, (">=", 0.7)) is False
    assert check(0.3, ("<", 0.3)) is False and check(0.1, ("<=", 0.1)) is True
    assert check(math.nan, (">=", 0.0)) is None and check(1.0, None) is None


def test_checks():
    m = {"n_heads": 2.0, "head_fraction": 0.125, "causality": 0.8,
         "causality_random_mean": 0.05, "accuracy_clean": 1.0,
         "accuracy_heads_ablated": 0.3, "accuracy_random_ablated": 0.95,
         "before_causality_heads": 0.5, "causality_cross_format_mean": math.nan}
    s = checks(m)
    # drops: 1.0 - 0.3 = 0.7 (>= 0.5: pass), 1.0 - 0.95 = 0.05 (<= 0.1: pass)
    assert s["metrics"]["ablation_drop_heads"] == 0.7
    assert s["checks"] == {"head_fraction": True, "causality": True,
                           "causality_random_mean": True, "ablation_drop_heads": True,
                           "ablation_drop_random": True, "before_causality_heads": False}
    assert s["claim_met"] is False                       # question-before 0.5 >= 0.3
    assert s["paper"]["causality"] == 0.863 and len(s["paper"]) == sum(
        p is not None for _, p, _ in ROWS)
