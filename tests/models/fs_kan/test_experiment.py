"""FS-KAN's low-data sweep: the summary's arithmetic and the study through the runner."""
import pytest
import torch

from models import runner
from models.fs_kan import experiment as fs_experiment
from models.fs_kan.experiment import summarize


def test_summarize_means_and_wins():
    rows = [{"n_train": 10, "fskan_accuracy": a, "baseline_accuracy": b}
            for a, b in ((0.5, 0.4), (0.3, 0.4), (0.7, 0.4))]
    rows.append({"n_train": 40, "fskan_accuracy": 0.9, "baseline_accuracy": 0.8})
    s = summarize(rows)
    assert list(s) == [10, 40]
    assert s[10]["fskan_mean"] == pytest.approx(0.5) and s[10]["wins"] == 2
    assert s[10]["gain"] == pytest.approx(0.1) and s[10]["seeds"] == 3
    assert s[40]["wins"] == 1 and s[40]["baseline_std"] == 0.0


def test_wins_claim_needs_k_of_n_seeds_and_the_mean():
    # 3 seeds need ceil(2) = 2 wins: 2 of 3 ahead, mean +0.01 holds
    assert fs_experiment.wins_claim({"wins": 2, "seeds": 3, "gain": 0.01})
    # one large win lifts the mean (+0.05) but 1 of 3 seeds is not enough
    assert not fs_experiment.wins_claim({"wins": 1, "seeds": 3, "gain": 0.05})
    # 2 of 3 ahead but behind in the mean
    assert not fs_experiment.wins_claim({"wins": 2, "seeds": 3, "gain": -0.01})
    assert fs_experiment.wins_claim({"wins": 1, "seeds": 1, "gain": 0.2})   # ceil(2/3) = 1


def test_study_runs_the_sweep_through_the_runner(monkeypatch, toy_gpu_path):
    torch.set_num_threads(1)
    monkeypatch.setitem(fs_experiment.PLANS, "quick",
                        {"signal-sets": {"sizes": (20, 40), "seeds": 2, "steps": 3,
                                         "n_test": 30}})
    study = runner.study("fs_kan", seed=5, profiles={"gpu": toy_gpu_path})
    assert list(study.runs) == ["signal-sets/n20/seed5", "signal-sets/n20/seed6",
                                "signal-sets/n40/seed5", "signal-sets/n40/seed6"]
    # 20 sets: 1 batch per epoch -> 3 epochs; 40 sets: 2 batches -> 2 epochs
    for key, run in study.runs.items():
        n = run.config["n_train"]
        assert run.ledger.samples() == {"train": n * (3 if n == 20 else 2), "infer": 30}, key
        assert run.ledger.uncounted() == {} and run.profile.name == "toy-gpu"
    entry = study.summary["signal-sets"]
    for n in (20, 40):
        runs = [study.runs[f"signal-sets/n{n}/seed{s}"] for s in (5, 6)]
        fk = sum(r.metrics["test_accuracy"] for r in runs) / 2
        bl = sum(r.metrics["baseline_test_accuracy"] for r in runs) / 2
        assert entry[f"fskan_n{n}"] == pytest.approx(fk)
        assert entry[f"gain_n{n}"] == pytest.approx(fk - bl)
    # 2 seeds: ahead on ceil(4/3) = 2 of 2 and in the mean
    assert entry["fskan_wins_at_smallest"] == (entry["wins_n20"] == 2 and entry["gain_n20"] > 0)
    assert study.summary["claim_met"] == entry["fskan_wins_at_smallest"]


def test_uncounted_sweep_leaves_the_ledgers_empty(toy_gpu_path):
    torch.set_num_threads(1)
    rows, runs = fs_experiment.sweep("signal-sets", (20,), (0,), 2, 10, profile=toy_gpu_path,
                                     count=False)
    assert runs["signal-sets/n20/seed0"].ledger.is_empty()
    assert rows[0]["n_train"] == 20 and 0 <= rows[0]["fskan_accuracy"] <= 1
