"""The GEB card through the runner and the CLI: a short counted run (scopes, seed bands,
paired tests), the presets, ``neuroedge simulate`` writing a run file and an HTML report."""
import pytest
import torch
from conftest import TOY_GPU

import models
from models import runner
from models.geb.card import GebConfig
from sim import phases

SHORT = {"seeds": 2, "iterations": 2, "steps": 3, "sft_samples": 256, "sft_steps": 10}
"""2 seeds x 3 arms x 2 iterations of 3 steps, from a reference trained 10 steps."""


@pytest.fixture(scope="module")
def short_run():
    torch.set_num_threads(1)
    return runner.run("geb", profile=TOY_GPU, overrides=SHORT)


def test_registered_card_and_presets():
    card = models.get("geb").card
    assert card.datasets == ("toy", "chars", "reach") and card.main_metric == "reward_geb"
    assert runner.make_config("geb", "quick", "toy", 0) == GebConfig()
    # reach: the reference mass that puts ln pi_ref(y*) near -6 (data.COMMON_MASS)
    assert runner.make_config("geb", "quick", "reach", 0).common_mass == 0.4
    full = runner.make_config("geb", "full", "chars", 3)
    assert (full.seeds, full.steps, full.bonus_logp, full.pairs, full.seed) == (
        10, 30, "per_token", 16, 3)


def test_short_run_counts_every_arm_and_draws_seed_bands(short_run):
    m = short_run.metrics
    assert m["seeds"] == 2
    assert 0.0 <= m["reward_geb"] <= 1.0 and m["reference_logp_ref_optimum"] < 0
    # everything is training: the report prices every op per training sample (issue 33)
    assert {s.split("/")[0] for s in short_run.ledger.scopes()} == {"train"}
    scopes = {s.split("/")[1] for s in short_run.ledger.scopes() if "/" in s}
    assert {"pretrain", "passive", "prior", "geb"} <= scopes
    # train samples: steps x pairs so far = 3 x 64 + 3 x 128 = 576 per seed and arm; the
    # drawn responses record none
    samples = short_run.ledger.samples()
    assert samples["train/passive/train"] == 2 * 576
    assert not any(n for s, n in samples.items() if s.endswith("/sample"))
    # the report's training scope holds every op, over the SFT steps' samples (10 steps x
    # 256 sft_samples) and the f-DPO steps' (3 arms x 576): 2 seeds x (2560 + 1728) = 8576
    assert phases.train_scope(samples) == "train" and phases.inference_scope(samples) is None
    assert phases.scope_samples(samples, "train") == 2 * (10 * 256 + 3 * 576)
    band = short_run.traces["true_reward"]
    # 3 arms x 2 seeds x (2 iterations + the final policy)
    assert (band.kind, band.data.shape, band.columns) == ("bands", (3, 2, 3),
                                                          ("passive", "prior", "geb"))
    assert short_run.traces["per_seed"].data.shape == (2, 7)
    tests = short_run.facts["paired_tests"]["reward_gain_geb_vs_passive"]
    assert tests["n"] == 2 and 0.0 <= tests["wilcoxon_p"] <= 1.0


def test_cli_simulate_writes_run_file_and_report(tmp_path):
    from deploy.cli import main
    out = tmp_path / "geb.h5"
    sets = [x for k, v in SHORT.items() for x in ("--set", f"{k}={v}")]
    assert main(["simulate", "geb", "--profile", str(TOY_GPU), *sets, "--set", "iterations=1",
                 "--out", str(out), "--quiet"]) == 0
    assert out.stat().st_size > 0
    html = next(tmp_path.glob("*.html")).read_text()
    assert html.count("data:image/png") >= 4                # the four seed-band curves


def test_diverged_policy_is_a_config_error_not_a_multinomial_traceback():
    # forward KL at lr 1: exp(-r) overflows in the f-DPO logits, inf - inf = nan weights
    # after iteration 1's training, and iteration 2's torch.multinomial raised on them
    from sim.errors import ModelError
    with pytest.raises(ModelError, match=r"the passive arm's policy diverged \(nan "
                                         r"probabilities at iteration 2\) at lr = 1.0, "
                                         r"beta = 0.1, f_div = fkl; use a smaller lr"):
        runner.run("geb", profile=TOY_GPU, overrides={**SHORT, "f_div": "fkl", "lr": 1.0})


def test_policy_diverged_in_its_last_steps_is_refused_not_nan():
    # Hellinger at beta 1e6, lr 1: the first arm's weights go nan during its last
    # iteration's training, so no later sampling raises; its final measures (and metrics)
    # were all nan. Which arm's weights go nan first depends on the seed streams and on the
    # CPU's rounding (the passive arm on the AMD EPYC build host, the prior arm on an Intel
    # Xeon one): either is refused
    from sim.errors import ModelError
    with pytest.raises(ModelError, match=r"the (passive|prior) arm's policy diverged \(nan in "
                                         r"its final measures\) at lr = 1.0, beta = 1000000.0"):
        runner.run("geb", profile=TOY_GPU, overrides={**SHORT, "f_div": "hel", "beta": 1e6,
                                                      "lr": 1.0})
