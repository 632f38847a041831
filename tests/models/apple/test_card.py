"""The APPLE card: registration, presets, a small run through the runner with its traces,
the run file and the HTML report (seed bands, glimpse trajectories)."""
import numpy as np
import pytest

import models
from models import runner
from models.apple.card import AppleConfig
from sim.errors import ModelError

TINY = {"iterations": 2, "n_envs": 8, "batch": 8, "updates_per_rollout": 2, "eval_every": 1,
        "eval_episodes": 16, "width": 16, "heads": 2, "ffn": 16, "critic_hidden": 32,
        "seeds": 2, "trajectories": 3, "n_train": 200, "n_test": 50}


@pytest.fixture(scope="module")
def tiny_run():
    return runner.run("apple", profile="tests/data/toy-gpu.toml", dataset="digits-locate",
                      preset="quick", seed=0, overrides=TINY)


def test_registered_card_and_presets():
    card = models.get("apple").card
    assert card.datasets == ("digits", "fashion-mnist", "digits-locate", "fashion-locate")
    full = runner.make_config("apple", "full", "fashion-mnist", seed=1)
    assert (full.canvas, full.glimpse, full.seeds, full.iterations) == (28, 5, 5, 150)
    quick = runner.make_config("apple", "quick", "digits", seed=0)
    assert (quick.canvas, quick.glimpse, quick.steps, quick.iterations) == (8, 3, 6, 12)


def test_config_refuses_unknown_policy_and_bad_width():
    with pytest.raises(ModelError, match="policies"):
        AppleConfig(policies="apple,oracle")
    with pytest.raises(ModelError, match="not a multiple of heads"):
        AppleConfig(width=30, heads=4)


def test_run_metrics_traces_and_ledger(tiny_run):
    m = tiny_run.metrics
    finals = tiny_run.facts["per_seed_final"]
    for p in ("apple", "random", "scan"):
        # each seed's final accuracy is a count of its 16 evaluation episodes / 16; the
        # metric is their mean, the spread their population std (measured: 2/16 and 0/16
        # for every policy, mean 0.0625, std |0.125 - 0.0625| = 0.0625)
        assert len(finals[p]) == 2 and all(16 * v == int(16 * v) for v in finals[p])
        assert m[f"final_accuracy_{p}"] == pytest.approx(np.mean(finals[p]))
        assert m[f"final_accuracy_std_{p}"] == pytest.approx(np.std(finals[p]))
        # a hit is a final error <= hit_px = 2 px, so the (1 - accuracy) of the episodes
        # that missed each erred by more than 2 px: mean error >= (1 - accuracy) x 2 px
        # (measured 5.5-5.9 px >= 0.9375 x 2 = 1.875)
        assert m[f"final_error_px_{p}"] >= (1 - m[f"final_accuracy_{p}"]) * 2.0
        band = tiny_run.traces[f"learning_curve_{p}"]
        assert band.kind == "bands" and band.data.shape == (1, 2, 2)  # series, seeds, evals
        traj = tiny_run.traces[f"trajectories_{p}"]
        assert traj.kind == "images" and traj.data.shape == (3, 80, 80)   # canvas 20 x zoom 4
        assert tiny_run.traces[f"glance_{p}"].data.shape == (8,)   # one score per step
    # wins: the seeds on which APPLE's final accuracy is strictly above random's (measured:
    # a tie on both, 0.125 = 0.125 and 0 = 0, so 0 wins and a gain of 0)
    assert m["wins_vs_random"] == sum(a > b for a, b in zip(finals["apple"], finals["random"],
                                                            strict=True))
    assert m["gain_vs_random"] == pytest.approx(np.mean(finals["apple"])
                                                - np.mean(finals["random"]))
    assert m["seeds"] == 2
    # each loss's pull on the backbone: (critic, sac, predictor) x 2 seeds x 2 evaluations;
    # the default keeps both RL losses off the backbone, yet their gradients are logged
    norms = tiny_run.traces["grad_norms_apple"]
    assert norms.kind == "bands" and norms.data.shape == (3, 2, 2)
    assert norms.columns == ("critic", "sac", "predictor") and (norms.data > 0).all()
    assert m["grad_norm_critic_apple"] == pytest.approx(norms.data[0, :, -1].mean())
    on_random = tiny_run.facts["per_seed_predictor_on_random"]
    assert len(on_random) == 2 and all(0.0 <= v <= 1.0 for v in on_random)
    assert m["env_steps"] == 2 * 8 * 8   # 2 rollouts x 8 episodes x 8 steps
    seeds = tiny_run.facts["per_seed_final"]["apple"]
    assert m["final_accuracy_apple"] == pytest.approx(np.mean(seeds))
    scopes = {s.split("/")[0] for s in tiny_run.ledger.scopes()}
    assert scopes == {"train", "eval"}          # the rollouts are training (issue 33)
    samples = tiny_run.ledger.samples()
    assert "train/rollout" in tiny_run.ledger.scopes() and not samples.get("train/rollout")
    assert tiny_run.facts["counted_seed"] == 0


def test_run_file_and_report_show_bands_and_trajectories(tiny_run, tmp_path):
    from deploy.report import html_report
    from deploy.runfile import read_run, write_run
    run = read_run(write_run(tmp_path / "apple.h5", tiny_run))
    assert run.traces["learning_curve_apple"].kind == "bands"
    np.testing.assert_array_equal(run.traces["trajectories_scan"].data,
                                  tiny_run.traces["trajectories_scan"].data)
    html = html_report(run, [run.ledger.price(run.profile)], tmp_path / "a.html").read_text()
    assert 'alt="learning_curve_apple"' in html and 'alt="trajectories_apple"' in html


def test_neurobench_counts_the_deployed_agent_not_every_policy(tiny_run, tmp_path):
    from deploy.runfile import read_run, write_run
    led = tiny_run.ledger
    # the counted seed's agents of the three policies (apple, random, scan), one architecture
    models = led.models()
    assert sorted(models) == ["Agent", "Agent#2", "Agent#3"]
    sizes = {(f["parameters"], f["parameter_bytes"] + f["buffer_bytes"]) for f in models.values()}
    assert len(sizes) == 1
    # NeuroBench's model is APPLE's agent (marked): one agent, not 3 x its size as before
    assert led.deployed() == ["Agent"]
    nb = tiny_run.neurobench
    assert {(nb["ParameterCount"], nb["Footprint"])} == sizes
    back = read_run(write_run(tmp_path / "apple.h5", tiny_run))     # the mark in the run file
    assert back.ledger.deployed() == ["Agent"]
    assert back.neurobench["ParameterCount"] == nb["ParameterCount"]


@pytest.mark.parametrize("field, value, message", [
    # torch's Adam raised ValueError("Invalid learning rate: -1.0") with a traceback
    ("lr_actor", -1.0, "lr_actor = -1.0: must be a finite learning rate >= 0"),
    # an infinite move: 0 x inf = nan positions, the scan baseline's loss nan
    ("max_step", float("inf"), "max_step = inf: must be a finite move > 0"),
    ("hit_px", -1.0, "hit_px = -1.0: must be a distance >= 0 px"),
    # min(-2, n) sliced ev["index"][:-2]: n - 2 trajectories drawn, not none
    ("trajectories", -2, "trajectories = -2: must be >= 0"),
    # a 4-episode replay never holds a batch of 32: not one update ran, silently
    ("replay_episodes", 4, "replay_episodes = 4: must be >= batch = 32"),
])
def test_config_refuses_values_that_crashed_or_ran_nothing(field, value, message):
    with pytest.raises(ModelError, match=message):
        AppleConfig(**{field: value})


def test_diverged_training_is_a_config_error_not_nan_metrics():
    # lr_actor 1e6: the predictor's weights go nan in the first rollout's updates; the test
    # cross-entropy was nan (final_loss_random = nan) and the run finished
    with pytest.raises(ModelError, match=r"the random agent's training diverged \(test loss "
                                         r"nan, alpha 1.0 at rollout 1\) at lr_actor = "
                                         r"1000000.0"):
        runner.run("apple", profile="tests/data/toy-gpu.toml", dataset="digits",
                   overrides={**TINY, "policies": "random", "seeds": 1, "lr_actor": 1e6})


def test_a_policy_interval_above_the_updates_is_refused():
    """One critic update per rollout with the actor every 2nd: the actor and predictor never
    stepped (their gradient norms read 0), silently."""
    with pytest.raises(ModelError, match="updates_per_rollout = 1 < policy_interval = 2"):
        AppleConfig(updates_per_rollout=1, policy_interval=2)
