"""GEB's study: the verdict per divergence and the sweep through the runner."""
import torch

from models.geb.experiment import judge


def _row(f_div, bonus, kappa, reward_gain, prior_gain, explore_gain, p_explore):
    return {"f_div": f_div, "bonus": bonus, "kappa": kappa, "reward_geb": 0.5 + reward_gain,
            "reward_gain_geb_vs_passive": reward_gain, "reward_gain_geb_vs_prior": prior_gain,
            "explore_gain_geb_vs_passive": explore_gain, "wilcoxon_p_explore": p_explore}


def test_judge_needs_exploration_and_a_reward_gain_per_divergence():
    rows = [_row("rkl", "geb_p", 0.1, 0.06, 0.01, 0.5, 0.01),
            _row("rkl", "geb_f", 0.1, 0.01, 0.00, 0.9, 0.20),
            _row("fkl", "geb_p", 0.1, 0.08, 0.02, 0.3, 0.04)]
    v = judge(rows, ("rkl", "fkl"))
    assert v["claim_met"] and v["per_divergence"]["rkl"]["best"] == "geb_p kappa 0.1"
    # exploration without significance fails the divergence, so the claim
    rows[2]["wilcoxon_p_explore"] = 0.06
    assert not judge(rows, ("rkl", "fkl"))["claim_met"]
    # a gain of 0.04 (< 5 % of the reward range) fails too
    rows[2].update(wilcoxon_p_explore=0.01, reward_gain_geb_vs_passive=0.04)
    assert not judge(rows, ("rkl", "fkl"))["claim_met"]


def test_sweep_runs_one_card_run_per_cell():
    from conftest import TOY_GPU

    from models.geb.experiment import sweep
    torch.set_num_threads(1)   # two threads on the shared cores run ~10x slower here
    plan = {"f_divs": ("fkl",), "bonuses": ("geb_f", "geb_tanh"), "kappas": (0.01,),
            "seeds": 2}
    tiny = {"iterations": 1, "steps": 2, "sft_samples": 128, "sft_steps": 5}
    rows, runs = sweep(plan, 3, profile=TOY_GPU, overrides=tiny)
    assert sorted(runs) == ["toy/fkl/geb_f/k0.01", "toy/fkl/geb_tanh/k0.01"]
    run = runs["toy/fkl/geb_f/k0.01"]
    assert (run.config["f_div"], run.config["bonus"], run.config["seed"]) == ("fkl", "geb_f", 3)
    assert [r["bonus"] for r in rows] == ["geb_f", "geb_tanh"] and rows[0]["seeds"] == 2
    # the passive arm does not depend on the GEB form: same seeds, same loop
    assert rows[0]["reward_passive"] == rows[1]["reward_passive"]
