"""bench/filter_heads_settle.py: the rules fixed before the run (set-size limit, existence,
eager, seed verdict, the L1 weight's tuning pick) and the figures rendered from its stored
RESULT (bench/out/filter_heads_settle.json)."""
import json
from pathlib import Path

import pytest

from bench import filter_heads_settle as fs

ROOT = Path(__file__).resolve().parents[2]


def rec(**kw):
    base = {"n_heads": 10, "causality": 0.8, "causality_random_mean": 0.05,
            "before_causality_all_heads": 0.1, "before_flag_patch_best": 0.9}
    return {**base, **kw}


def test_limit_is_a_quarter_of_the_heads():
    # 8 layers x 8 heads = 64; 25% = 16 (the digest's "<= 25% of heads")
    assert (fs.N_HEADS, fs.HEAD_LIMIT) == (64, 16)


def test_existence_rule():
    assert fs.existence(rec())
    assert fs.existence(rec(n_heads=16)) and not fs.existence(rec(n_heads=17))
    assert not fs.existence(rec(n_heads=0))                 # an empty set is no set
    assert not fs.existence(rec(causality=0.69))
    assert not fs.existence(rec(causality_random_mean=0.11))
    assert not fs.existence(rec(causality_random_mean=None))  # no baseline drawn


def test_eager_rule():
    assert fs.eager(rec())
    assert not fs.eager(rec(before_causality_all_heads=0.3))   # needs < 0.3
    assert not fs.eager(rec(before_flag_patch_best=0.69))


def test_verdict_needs_two_of_three():
    # ceil(2 * 3 / 3) = 2; ceil(2 * 5 / 3) = 4
    assert fs.seeds_to_hold(3) == 2 and fs.seeds_to_hold(5) == 4
    assert fs.verdict([True, False, True]) == {"seeds_holding": 2, "seeds": 3, "needed": 2,
                                               "holds": True}
    assert not fs.verdict([True, False, False])["holds"]


def test_lambda_pick():
    table = [{"lambda": 0.05, "n_heads": 20, "causality": 0.9},
             {"lambda": 0.1, "n_heads": 14, "causality": 0.75},
             {"lambda": 0.2, "n_heads": 8, "causality": 0.6}]
    # the best causality among sets within 16 heads: 0.1 (0.05's set is too large)
    assert fs.pick_lambda(table) == 0.1
    # none fits (or only empty sets): the largest weight
    assert fs.pick_lambda([{**r, "n_heads": 30} for r in table]) == 0.2
    assert fs.pick_lambda([{**r, "n_heads": 0} for r in table]) == 0.2


@pytest.mark.skipif(not fs.RESULT_FILE.exists(), reason="no stored filter_heads_settle RESULT")
def test_figures_are_the_stored_run():
    """RESULTS.md and the room README show the table rendered from the stored RESULT,
    docs/claims.md its claim text, and the stored verdicts follow the rules."""
    result = json.loads(fs.RESULT_FILE.read_text())
    table = fs.render(result)
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    assert table in (ROOT / "models" / "filter_heads" / "README.md").read_text()
    assert fs.claim_text(result) in (ROOT / "docs" / "claims.md").read_text()
    assert len(result["seeds"]) >= 3 and result["tuning"]["seed"] not in \
        [r["seed"] for r in result["seeds"]]
    assert result["tuning"]["lambda"] == fs.pick_lambda(result["tuning"]["table"])
    assert result["steps"] == fs.STEPS and result["model"] == fs.MODEL
    for r in result["seeds"]:
        assert r["existence"] == fs.existence(r) and r["eager"] == fs.eager(r)
        assert len(r["heads"]) == r["n_heads"]
        assert len(r["before_flag_rates"]) == fs.MODEL["n_layer"]
    for key in ("existence", "eager"):
        assert result["verdict"][key] == fs.verdict([r[key] for r in result["seeds"]])
