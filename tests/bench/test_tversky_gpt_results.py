"""The Tversky GPT figures the room README, bench/RESULTS.md and docs/claims.md state are
those of the results file the bench wrote (bench/out/tversky_gpt.json, written by
``python bench/tversky_gpt.py``): rendered by its own functions and looked up in the text."""
import json
from pathlib import Path

from bench.tversky_gpt import PLOT_FILE, RESULT_FILE, render_claim, render_table, summarise

ROOT = Path(__file__).resolve().parents[2]


def _result() -> dict:
    return json.loads(RESULT_FILE.read_text())


def test_readme_and_results_tables_are_the_results_file():
    rows = render_table(_result())
    assert len(rows) == 4
    for doc in (ROOT / "models" / "tversky" / "README.md", ROOT / "bench" / "RESULTS.md"):
        text = doc.read_text()
        for row in rows:
            assert row in text, f"{doc.name} lacks the row {row!r}"


def test_claims_table_states_the_results_file():
    assert render_claim(_result()) in (ROOT / "docs" / "claims.md").read_text()


def test_recorded_run_is_the_issue_s_experiment():
    """Issue 33 item 5: >= 5,000 steps and >= 3 seeds per model, a curve to the last step,
    and the summary the file carries is the one its runs give (nothing edited by hand)."""
    result = _result()
    assert result["config"]["steps"] >= 5000
    for name, by_seed in result["runs"].items():
        assert len(by_seed) >= 3, name
        for seed, run in by_seed.items():
            assert run["val_curve"][-1] == [result["config"]["steps"], run["val_ppl"]]
            assert len(run["val_curve"]) >= 10, (name, seed)
    assert summarise(result) == result["summary"]
    assert PLOT_FILE.exists()


def test_verdict_rule_is_k_of_n_seeds():
    """k = ceil(2n/3): 2 of 3, 4 of 5; a seed counts only beyond x1 -+ 0.01."""
    from bench.tversky_gpt import verdict
    assert verdict([1.43, 0.98, 1.10]).startswith("worse (2 of 3")
    assert verdict([0.90, 0.95, 1.20]).startswith("better (2 of 3")
    assert verdict([1.005, 0.995, 1.20]).startswith("tie (0 better, 1 worse")  # within x1 -+ 0.01
    assert verdict([1.43, 0.98, 1.10, 1.44, 1.51]).startswith("worse (4 of 5")
    assert verdict([1.43, 0.98, 1.10, 1.00, 1.51]).startswith("tie")       # 3 of 5 < 4


def test_ratios_use_only_the_seeds_both_sides_ran():
    """Tversky ran seeds 0-2, the twin 0-1: two ratios, 6/5 and 9/6 -> mean 1.35."""
    runs = {"tversky": {str(s): {"parameters": 10, "val_ppl": p} for s, p in
                        enumerate([6.0, 9.0, 7.0])},
            "linear": {str(s): {"parameters": 8, "val_ppl": p} for s, p in enumerate([5.0, 6.0])}}
    s = summarise({"runs": runs})
    assert s["tversky_vs_linear"]["ratios"] == [1.2, 1.5]
    assert abs(s["tversky_vs_linear"]["ppl_ratio"]["mean"] - 1.35) < 1e-12
    assert s["tversky"]["final_ppl"]["n"] == 3 and s["linear"]["final_ppl"]["n"] == 2
