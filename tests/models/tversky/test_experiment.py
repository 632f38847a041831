"""The paper's XOR test as a count over seeds, and the study through the runner."""
import pytest
import torch
from torch import nn

from models import runner
from models.shared.training import seeded
from models.tversky import experiment as tv_experiment
from models.tversky.experiment import fit_xor
from models.tversky.layer import TverskyProjection


def test_one_tversky_layer_fits_xor_for_some_seeds_linear_for_none():
    torch.set_num_threads(1)
    # how many of 10 seeds fit all four points with K = 4 bank features (measured: 3 of 10,
    # seeds 1, 3 and 8; the claim is that one layer can, so at least 2 of 10 must)
    fits = {s: fit_xor(TverskyProjection(2, 2, 4, seed=s)) for s in range(10)}
    solved = [s for s, (acc, _) in fits.items() if acc == 1.0]
    assert len(solved) >= 2, solved
    # the count docs/claims.md and the room README state is this sweep's (issue 33)
    import doc_figures
    assert doc_figures.absent([
        ("docs/claims.md", f"XOR yes ({len(solved)}/10 seeds fit it at K = 4;"),
        ("models/tversky/README.md", f"one Tversky layer fits XOR ({len(solved)}/10 seeds at K=4")
    ]) == []
    for s in solved:     # a confident fit: cross-entropy far below a tie's ln 2 = 0.69
        assert fits[s][1] < 0.2
    for seed in range(10):  # XOR is not linearly separable: at most 3 of 4 points, any seed
        with seeded(seed):
            layer = nn.Linear(2, 2)
        lin_acc, lin_loss = fit_xor(layer, steps=500)          # converged by then
        assert lin_acc <= 0.75 and lin_loss > 0.4


@pytest.mark.slow
def test_study_summarises_xor_and_heads(monkeypatch, toy_gpu_path, fashion_mnist):
    monkeypatch.setitem(tv_experiment.PLANS, "quick", {"bank_sizes": (4,), "seeds": 3})
    study = runner.study("tversky", seed=0, profiles={"gpu": toy_gpu_path})
    s = study.summary
    # seeds 0, 1, 2 at K = 4: of the 10-seed sweep above only seeds 1, 3 and 8 fit XOR, so
    # here seed 1 alone (the study fits the same TverskyProjection(2, 2, 4, seed=s))
    assert s["xor_seeds"] == 3 and s["tversky_K4_solved"] == 1
    assert s["xor_solved_needed"] == 1            # ceil(0.2 x 3) = 1 of 3 seeds
    assert s["xor_linear_best_accuracy"] <= 0.75 and s["xor_linear_solved"] == 0
    assert set(study.runs) == {"heads-seed0", "heads-seed1", "heads-seed2"}
    tv = [r.metrics["tversky_test_accuracy"] for r in study.runs.values()]
    lin = [r.metrics["linear_test_accuracy"] for r in study.runs.values()]
    assert s["tversky_test_accuracy"] == pytest.approx(sum(tv) / 3)
    assert s["head_wins"] == sum(a > b for a, b in zip(tv, lin, strict=True))
    # k of n, never "any seed": XOR on >= 1 of 3 seeds (Linear on none), heads on >= 2 of 3
    assert s["claim_met"] == (s["tversky_K4_solved"] >= 1 and s["head_wins"] >= 2)


def test_xor_needs_a_fifth_of_the_seeds():
    # ceil(0.2 n): 10 seeds -> 2 (the measured 3 of 10 at K = 4 passes; 1 of 10 does not)
    assert [tv_experiment.xor_needed(n) for n in (1, 3, 5, 10, 11)] == [1, 1, 1, 2, 3]
