"""The convergence study's rows and the card's experiment."""
import pytest

from models import runner
from models.tsetlin import experiment
from models.tsetlin.experiment import run_setting


def test_convergence_rows_report_absorption_and_clause_form():
    row = run_setting("and", 2, 0, 2, 2, 0.0, seeds=range(2), max_updates=20_000)
    assert row["absorbed"] == 1.0 and row["exact_form"] == 1.0 and row["computes_op"] == 1.0
    row = run_setting("or", 2, 0, 4, 3, 0.0, seeds=range(2), max_updates=2_000)
    assert row["absorbed"] == 0.0 and row["median_updates"] is None


def test_study_summarises_noisy_xor_runs_and_the_table(monkeypatch):
    # a small study: 1 Noisy XOR seed, two settings, 2 seeds each
    monkeypatch.setattr(experiment, "NOISY_XOR_SEEDS", {"quick": 1, "full": 1})
    monkeypatch.setattr(experiment, "SCALE", {"quick": (2, 20_000), "full": (2, 20_000)})
    monkeypatch.setattr(experiment, "QUICK_SETTINGS", [("and", 2, 0, 2, 2, 0.0, "absorb"),
                                                       ("or", 2, 0, 4, 3, 0.0, "no")])
    st = runner.study("tsetlin", preset="quick", seed=2)
    assert list(st.runs) == ["noisy-xor-seed2"]
    run = st.runs["noisy-xor-seed2"]
    assert run.dataset == "noisy-xor" and run.config["seed"] == 2
    s = st.summary
    assert s["noisy_xor_accuracy"] == [run.metrics["test_accuracy"]]
    assert s["settings"] == 2 and s["agree_with_paper"] == 2 and s["seeds"] == 2
    assert s["contradicting_rows"] == [] and s["budget_limited_rows"] == []
    # k of n: 1 seed -> ceil(0.5 x 1) = 1 must reach 100% (3 seeds: 2; 10: 5)
    assert s["noisy_xor_seeds_needed"] == 1
    assert s["claim_met"] == (s["noisy_xor_seeds_at_100"] >= 1)
    assert [experiment.noisy_xor_needed(n) for n in (1, 2, 3, 10)] == [1, 1, 2, 5]


@pytest.mark.slow
def test_quick_study_agrees_with_the_theorems():
    st = runner.study("tsetlin", preset="quick")        # ~2 min on 2 shared cores
    s = st.summary
    # 20 seeds, 100k updates: every row agrees except slow absorptions, which the theorems
    # (no time bound) allow: AND / OR / XOR with q = 2 irrelevant bits and the 4-bit AND
    # (rows 15-17, 19) absorb in 15-90% of the seeds, XOR m = 4, T = 2 (row 10) in 85-100%
    # (bench/RESULTS.md: 98% within 400k updates). Only those rows may fall short
    assert s["settings"] == 20 and s["contradicting_rows"] == []
    assert set(s["budget_limited_rows"]) <= {10, 15, 16, 17, 19}
    assert s["agree_with_paper"] == 20 - len(s["budget_limited_rows"]) >= 15
    # seeds 0-2 score 1.0, 1.0, 0.9958 (measured): 2 of 3 at 100% = the 2 needed
    assert s["noisy_xor_seeds_at_100"] >= s["noisy_xor_seeds_needed"] == 2
    assert s["claim_met"]
    # the room README states this study's counts as it gives them (issue 33): rows agreeing
    # "(quick: 15 of 20)", Noisy XOR accuracies to 4 decimals "1.0, 1.0, 0.9958"
    import doc_figures
    accs = ", ".join(str(round(a, 4)) for a in s["noisy_xor_accuracy"])
    assert doc_figures.absent([
        ("models/tsetlin/README.md", f"(quick: {s['agree_with_paper']} of {s['settings']})"),
        ("models/tsetlin/README.md", f"the quick seeds 0-2\ngive {accs})")]) == []
