"""LatEnt's study: the paired tests over seeds and the claims they judge."""
import types

import numpy as np
import pytest

from models.latent.experiment import paired


def test_paired_wilcoxon_and_sign_test():
    out = paired([2, 3, 4, 5, 6], [1, 1, 1, 1, 1])
    # all 5 differences positive: one-sided exact Wilcoxon p = 1/32, sign test p = 1/32
    assert out["wins"] == 5 and out["wilcoxon_p"] == pytest.approx(1 / 32)
    assert out["sign_p"] == pytest.approx(1 / 32) and out["holds"]
    mixed = paired([2, 0, 4, 5, 6], [1, 1, 1, 1, 1])
    # ranks of |d| = 1,1,3,4,5 -> 1.5,1.5,3,4,5; W+ = 13.5 of 15: p > 0.05
    assert mixed["wins"] == 4 and not mixed["holds"]


def test_summarise_pairs_seeds_per_claim():
    from models.latent.experiment import summarise
    from sim.traces import Trace

    def table(rows, cols):
        return Trace("table", np.array(rows, float), "", cols)

    cols = ("seed", "latent", "observation", "random", "latent_noreg")
    ent = [[s, 1.0 + s, 0.5 + s, 0.0, 0.9 + s] for s in range(5)]
    far = [[s, 0.3, 1.2, 0.8, 0.4] for s in range(5)]
    run = types.SimpleNamespace(metrics={}, traces={
        "final_state_entropy_per_seed": table(ent, cols),
        "final_observed_puck_entropy_per_seed": table(far, cols),
        "final_puck_distance_per_seed": table(far, cols),
        "finetune_success_per_seed": table([[s, 0.5, 0.5 - 0.1 * (s % 2)] for s in range(5)],
                                           ("seed", "pretrained", "scratch"))})
    out = summarise({"noisy-puck": run})
    assert out["noisy-puck/latent_gt_observation"]["holds"]          # +0.5 on every seed
    assert out["noisy-puck/latent_gt_noreg"]["wins"] == 5
    assert out["noisy-puck/observation_gt_latent_puck_distance"]["mean_diff"] == \
        pytest.approx(0.9)
    # fine-tune: 2 wins, 3 ties (ties dropped): not a claim that holds
    ft = out["noisy-puck/finetune_pretrained_gt_scratch"]
    assert ft["wins"] == 2 and not ft["holds"]


@pytest.mark.slow
def test_quick_study_runs_every_claim(toy_gpu_path):
    """The quick study (3 environments x 5 seeds; ~25 min on the shared cores): one paired
    test per claim, each over 5 seeds."""
    from models import runner
    study = runner.study("latent", preset="quick", profiles={"gpu": toy_gpu_path})
    assert set(study.runs) == {"masked-pendulum", "noisy-puck", "four-rooms"}
    tests = {k: v for k, v in study.summary.items() if isinstance(v, dict)}
    # pendulum 3 (vs obs, obs vs random, vs no-regulariser), puck 3 + the trap 2, rooms 2 +
    # the fine-tune 1
    assert len(tests) == 11 and all(t["n"] == 5 for t in tests.values())


def test_settling_verdicts_are_k_of_n_and_void_without_a_ready_model():
    from models.latent.experiment import k_of_n, verdict
    assert [k_of_n(n) for n in (3, 5, 10)] == [3, 4, 8]     # ceil(0.8 n)
    t = {"n": 5, "wins": 4, "ties": 0, "mean_diff": 0.3}
    assert verdict(t, True) == "holds" and verdict(t, False) == "void"
    # 3 of 5: neither side reaches 4
    assert verdict({**t, "wins": 3}, True) == "not separated"
    # 1 win, 4 losses and a negative mean: the other way round
    assert verdict({**t, "wins": 1, "mean_diff": -0.2}, True) == "reversed"
    # 4 wins but a negative mean (one large loss): not a claim that holds
    assert verdict({**t, "mean_diff": -0.1}, True) == "not separated"
    # ties are not losses: 1 win, 4 ties
    assert verdict({**t, "wins": 1, "ties": 4, "mean_diff": 0.01}, True) == "not separated"
