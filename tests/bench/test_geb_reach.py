"""bench/geb_reach.py: the reachable task, arms fixed on tuning seeds the test never reads,
the seed rule, and the figures rendered from its stored RESULT (bench/out/geb_reach.json)."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from bench import geb_reach as gr

ROOT = Path(__file__).resolve().parents[2]


def test_reach_optimum_is_reachable_under_the_task_reference():
    from models.geb.data import COMMON_MASS, make_task
    task = make_task("reach", 0, COMMON_MASS["reach"])
    q_opt = np.take_along_axis(task.q, task.target[..., None], 2)[..., 0]     # (P, L)
    # 2 common tokens share 0.4, the 4 rare ones 0.6: 0.15 each; y* is rare at all 3
    # positions: ln pi(y*) = 3 ln 0.15 = -5.69 (the toy's: 4 ln 0.025 = -14.8)
    assert np.log(q_opt).sum(1) == pytest.approx(np.full(16, 3 * math.log(0.15)))
    x = np.arange(16)
    assert np.allclose(task.reward(x, task.target), 1.0)      # the optimum earns 1


def test_wins_follows_the_seed_rule():
    # 8 of 8 seeds ahead: Wilcoxon two-sided p = 2 / 2^8 = 0.0078 < 0.05: holds
    v = gr.wins([.6 + .01 * k for k in range(8)], [.5] * 8)
    assert (v["ahead"], v["needed"], v["holds"]) == (8, 6, True)
    assert v["wilcoxon_p"] == pytest.approx(2 / 256)
    # 5 of 8 ahead (needs ceil(16/3) = 6): does not hold, whatever the mean
    assert not gr.wins([.9] * 5 + [.49] * 3, [.5] * 8)["holds"]
    # behind: does not hold
    assert not gr.wins([.4] * 8, [.5] * 8)["holds"]


class FakeRunner:
    """Stands in for seed_runs: records (seed, arms) and returns a reward that is a fixed
    function of the arm (kappa 0.1 best for every form, geb_f best of the forms), plus a
    per-seed offset, so the fixed arms are known."""

    def __init__(self):
        self.calls = []

    def __call__(self, seed, f_divs, arms):
        self.calls.append((seed, {f: list(a) for f, a in arms.items()}))

        def reward(lab):
            bonus, k = gr.arm_of(lab)
            base = {"none": .50, "prior": .52, "geb_p": .55, "geb_f": .60, "geb_tanh": .54}
            return base[bonus] - abs(k - 0.1) * (bonus != "none") + 0.001 * seed
        return {"reference": {"logp_ref_optimum": -6.0, "reward": .4},
                **{f: {lab: {"reward": reward(lab), "p_optimum": .1,
                             "explore": -5.0 - (lab != "passive")} for lab in arms[f]}
                   for f in f_divs}}


def test_arms_are_fixed_on_tuning_seeds_and_only_they_are_tested():
    run = FakeRunner()
    out = gr.settle((100, 101), (0, 1, 2), ("rkl", "hel"), gr.FORMS, gr.KAPPAS,
                    runner=run, progress=lambda s: None)
    tune = [c for c in run.calls if c[0] >= 100]
    test = [c for c in run.calls if c[0] < 100]
    assert [c[0] for c in run.calls] == [100, 101, 0, 1, 2]   # tuning first, then the test
    for _, arms in tune:   # tuning: the whole grid, 1 + 3 prior + 3 x 3 GEB = 13 arms
        assert arms["rkl"] == gr.grid(gr.FORMS, gr.KAPPAS) and len(arms["rkl"]) == 13
    fx = out["fixed"]["rkl"]
    assert fx["primary"] == "geb_f k0.1" and fx["prior"] == "prior k0.1"
    assert fx["forms"] == ["geb_p k0.1", "geb_f k0.1", "geb_tanh k0.1"]
    for _, arms in test:   # the test runs the 5 fixed arms only
        assert arms["rkl"] == ["passive", "geb_f k0.1", "prior k0.1", "geb_p k0.1",
                               "geb_tanh k0.1"]
    v = out["verdicts"]["per_divergence"]["rkl"]
    # +0.10 on 3 of 3 seeds, but Wilcoxon's smallest two-sided p at n = 3 is 2/8 = 0.25
    assert v["reward"]["ahead"] == 3 and v["reward"]["wilcoxon_p"] == pytest.approx(0.25)
    assert not v["holds"] and out["verdicts"]["reward_holds"] == 0
    with pytest.raises(ValueError, match="both tuning and test seeds"):
        gr.settle((1, 2), (2, 3), ("rkl",), gr.FORMS, gr.KAPPAS, runner=run)


@pytest.mark.skipif(not gr.RESULT_FILE.exists(), reason="no stored geb_reach RESULT")
def test_figures_are_the_stored_run():
    """RESULTS.md, the room README and docs/claims.md show what the stored RESULT renders;
    the stored run kept the protocol (fixed arms = the tuning argmax, disjoint seeds)."""
    result = json.loads(gr.RESULT_FILE.read_text())
    table = gr.render(result)
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    assert table in (ROOT / "models" / "geb" / "README.md").read_text()
    assert gr.claim_text(result) in (ROOT / "docs" / "claims.md").read_text()
    assert not set(result["tuning"]["seeds"]) & set(result["test"]["seeds"])
    assert len(result["test"]["seeds"]) >= 6      # Wilcoxon p < 0.05 needs >= 6 seeds
    assert result["fixed"] == gr.fix_arms(result["tuning"], result["forms"], result["kappas"])
    assert result["verdicts"] == gr.judge(result["test"], result["fixed"])
