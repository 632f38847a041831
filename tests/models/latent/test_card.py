"""Config errors and diverged training through the runner: each is a one-line ModelError
naming the field, not a knn traceback or nan metrics."""
import pytest
from conftest import TOY_GPU

from models import runner
from models.latent.card import LatEntConfig
from sim.errors import ModelError

TINY = {"methods": ("latent", "observation"), "seeds": 1, "num_envs": 4, "horizon": 8,
        "iterations": 2, "latent_dim": 4, "hidden": 8, "knn_k": 3, "warmup_steps": 2,
        "model_steps": 2, "model_every": 1, "ppo_epochs": 1, "minibatches": 2}
"""4 x 8 = 32 steps per batch, 2 iterations: about a second per run."""


def test_batch_too_small_for_the_evaluation_entropy():
    # the oracle's Kozachenko-Leonenko estimate takes the 10th neighbour: 4 x 2 = 8 points
    # passed the old checks (knn_k 3 < 8) and raised inside knn_distance; 11 points suffice
    with pytest.raises(ModelError, match=r"num_envs x horizon = 4 x 2 = 8 points per batch; "
                                         r"need >= 11"):
        LatEntConfig(**{**TINY, "horizon": 2})
    assert LatEntConfig(**{**TINY, "num_envs": 6, "horizon": 2}).num_envs == 6   # 12 points


def test_log_std_outside_fp32_and_repeated_methods_are_refused():
    # exp(100) overflows fp32 (max e^88.7): the actions were inf, every entropy nan
    for bad in (100.0, -100.0, float("nan")):
        with pytest.raises(ModelError, match=r"log_std = .*: must be a number in \[-20, 20\]"):
            LatEntConfig(log_std=bad)
    assert LatEntConfig(log_std=20.0).log_std == 20.0
    with pytest.raises(ModelError, match=r"methods = \('latent', 'latent'\): each method at "
                                         "most once"):
        LatEntConfig(methods=("latent", "latent"))


@pytest.mark.parametrize("field, where", [
    ("model_lr", "the latent model's warm-up loss diverged"),    # inf at the warm-up
    ("policy_lr", "latent's policy \\(state entropy\\) diverged"),   # nan actions, 2nd batch
])
def test_diverged_training_names_its_learning_rate(field, where):
    with pytest.raises(ModelError, match=rf"LatEntConfig.{field} = 1000000.0: {where} "
                                         rf"\((nan|inf)\); use a smaller {field}"):
        runner.run("latent", profile=TOY_GPU, overrides={**TINY, field: 1e6})


def test_diverged_finetuning_names_policy_lr():
    # one pre-training iteration evaluates its batch before its only PPO update (finite
    # numbers); that update sends the log std to inf, so fine-tuning's rollouts and PPO loss
    # are nan
    with pytest.raises(ModelError, match=r"policy_lr = 1000000.0: fine-tuning's PPO loss "
                                         r"diverged \(nan\)"):
        runner.run("latent", profile=TOY_GPU, overrides={**TINY, "iterations": 1,
                                                         "finetune_iterations": 1,
                                                         "policy_lr": 1e6})
