"""The APPLE card (active perception policy learning): config, presets, contract functions.

Light on purpose (no torch at import): ``neuroedge models`` imports every card. The tasks
are in ``env.py``, the agent and its updates in ``model.py``, the training loop and the
card's run over policies and seeds in ``run.py``, the images in ``data.py``, the paired
comparison over seeds in ``experiment.py``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, register
from sim.errors import ModelError

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice

DATASETS = ("digits", "fashion-mnist", "digits-locate", "fashion-locate")   # = data.DATASETS
POLICIES = ("apple", "random", "scan")   # = model.POLICIES


@dataclass
class AppleConfig:
    """One simulate run: APPLE-CrossQ and its two baselines over ``seeds`` seeds."""

    canvas: int = 8               # canvas side (classify: the image side)
    glimpse: int = 3              # sensor side G (ap_gym glimpse envs: 5)
    steps: int = 6                # observations per episode T (ap_gym: 16)
    max_step: float = 0.5         # largest move in position units (ap_gym: 0.2 of [-1, 1])
    width: int = 64               # backbone width (paper 128; the digest's small plan 64)
    layers: int = 2               # causal transformer layers (paper 3)
    heads: int = 4                # attention heads (paper 8)
    ffn: int = 64                 # FFN width (paper 64)
    critic_hidden: int = 256      # Q MLP 2 x 256 (paper)
    n_envs: int = 32              # episodes per rollout
    iterations: int = 150         # rollouts
    updates_per_rollout: int = 8  # critic steps per rollout (UTD ~ 8 x 16 / (32 x T))
    batch: int = 32               # episodes per gradient step (paper 8, dense config 32)
    replay_episodes: int = 4096
    gamma: float = 0.99
    lr_actor: float = 1e-3        # the plan: actor 3e-4, critic 1e-4; 3x both (short runs:
                                  # 480 steps at 3e-4 left even the predictor at chance)
    lr_critic: float = 3e-4
    lr_alpha: float = 3e-4
    policy_interval: int = 2      # released config: 2 and 2
    policy_steps: int = 2
    a_coef: float = 1.0           # released config: 1 and 1
    p_coef: float = 1.0
    critic_backbone_lr: float = 0.0   # the critic's Adam steps the shared backbone at this
                                    # x lr_critic (paper: 1; 0: L_Q trains the Q heads only)
    sac_backbone_grad: float = 0.0  # the SAC term's gradient into the backbone x this
                                    # (paper: 1; 0: it trains the actor head only). Both 0:
                                    # only the prediction loss trains the backbone (README)
    eval_every: int = 5           # rollouts between evaluations (the learning curve)
    eval_episodes: int = 256
    hit_px: float = 2.0           # locate: a final prediction within this many px is a hit
    n_train: int = 5000           # images the episodes draw from (digits: all 1347)
    n_test: int = 1000
    seeds: int = 3                # seeds per policy: seed, seed + 1, ...
    policies: str = "apple,random,scan"   # comma-separated subset of POLICIES
    trajectories: int = 6         # test episodes drawn per policy in the report
    count: bool = True            # count the first seed's torch ops (False: the bench)
    seed: int = 0

    @property
    def policy_list(self) -> tuple[str, ...]:
        return tuple(p.strip() for p in self.policies.split(",") if p.strip())

    def __post_init__(self):
        bad = [p for p in self.policy_list if p not in POLICIES]
        if bad or not self.policy_list:
            raise ModelError(f"AppleConfig.policies = {self.policies}: must be a non-empty "
                             f"subset of {', '.join(POLICIES)}")
        for name in ("canvas", "glimpse", "width", "layers", "heads", "ffn", "critic_hidden",
                     "n_envs", "iterations", "updates_per_rollout", "batch", "replay_episodes",
                     "policy_interval", "policy_steps", "eval_every", "eval_episodes",
                     "n_train", "n_test", "seeds"):
            if getattr(self, name) < 1:
                raise ModelError(f"AppleConfig.{name} = {getattr(self, name)}: must be >= 1")
        if self.steps < 2:
            raise ModelError(f"AppleConfig.steps = {self.steps}: an episode needs >= 2 steps")
        if self.updates_per_rollout < self.policy_interval:
            # the actor and predictor step every policy_interval-th critic update of a
            # rollout: with fewer updates they never trained, and the run said nothing
            raise ModelError(f"AppleConfig.updates_per_rollout = {self.updates_per_rollout} < "
                             f"policy_interval = {self.policy_interval}: the actor and the "
                             "predictor would never step; give updates_per_rollout >= "
                             "policy_interval")
        if self.width % self.heads:
            raise ModelError(f"AppleConfig.width = {self.width} is not a multiple of heads = "
                             f"{self.heads}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ModelError(f"AppleConfig.gamma = {self.gamma}: must lie in [0, 1]")
        if not 0.0 < self.max_step < math.inf:
            raise ModelError(f"AppleConfig.max_step = {self.max_step}: must be a finite move "
                             "> 0 in position units (the canvas spans 2; default 0.5)")
        for name in ("lr_actor", "lr_critic", "lr_alpha"):
            if not 0.0 <= getattr(self, name) < math.inf:   # torch's Adam refuses lr < 0
                raise ModelError(f"AppleConfig.{name} = {getattr(self, name)}: must be a "
                                 "finite learning rate >= 0")
        for name in ("critic_backbone_lr", "sac_backbone_grad"):
            if not 0.0 <= getattr(self, name) < math.inf:
                raise ModelError(f"AppleConfig.{name} = {getattr(self, name)}: must be a "
                                 "finite factor >= 0 (1: the paper, 0: off the backbone)")
        if not self.hit_px >= 0:
            raise ModelError(f"AppleConfig.hit_px = {self.hit_px}: must be a distance >= 0 px")
        if self.trajectories < 0:
            raise ModelError(f"AppleConfig.trajectories = {self.trajectories}: must be >= 0 "
                             "(test episodes drawn per policy)")
        if self.replay_episodes < self.batch:
            # the replay never holds a batch: not one gradient step would run
            raise ModelError(f"AppleConfig.replay_episodes = {self.replay_episodes}: must be "
                             f">= batch = {self.batch} (else no update ever runs)")


_FASHION = {"canvas": 28, "glimpse": 5, "steps": 10, "max_step": 0.3}
_DLOC = {"canvas": 20, "glimpse": 5, "steps": 8, "max_step": 0.3}
_FLOC = {"canvas": 32, "glimpse": 5, "steps": 10, "max_step": 0.3}
PRESETS = {
    # quick: 3 seeds x 3 policies, 12 rollouts of 32 episodes (a demo, too short to learn
    # a policy: every score is near chance)
    "quick": {d: {**extra, "iterations": 12, "eval_every": 4, "eval_episodes": 128}
              for d, extra in (("digits", {}), ("fashion-mnist", _FASHION),
                               ("digits-locate", _DLOC), ("fashion-locate", _FLOC))},
    # full: 5 seeds, 150 rollouts (the bench's scale)
    "full": {"digits": {"seeds": 5}, "fashion-mnist": {**_FASHION, "seeds": 5,
                                                       "n_train": 20000},
             "digits-locate": {**_DLOC, "seeds": 5},
             "fashion-locate": {**_FLOC, "seeds": 5, "n_train": 20000}},
}


def load_data(dataset: str, cfg: AppleConfig):
    """Train/test images of ``dataset`` (``data.load``)."""
    from models.apple import data
    return data.load(dataset, cfg.n_train, cfg.n_test, cfg.seed)


def simulate(cfg: AppleConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """Train APPLE-CrossQ and the random-glimpse and fixed-scan baselines for ``cfg.seeds``
    seeds each on the training images, evaluate each on the test images (``run.py``)."""
    from models.apple.run import run_policies
    return run_policies(cfg, device, data, progress)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """APPLE against random glimpses and a fixed scan over seeds, with paired tests."""
    from models.apple.experiment import experiment as run_experiment
    return run_experiment(preset, seed, profiles, progress)


METRICS = {"final_accuracy_apple": "1", "final_accuracy_*": "1", "final_accuracy_std_*": "1",
           "final_loss_*": "nats",
           "final_error_px_*": "px", "gain_vs_*": "1", "wins_vs_*": "count",
           "alpha_final": "1", "env_steps": "count", "seeds": "count",
           "grad_norm_*": "1", "predictor_on_random_apple": "1"}
"""Final-step accuracy (``locate``: the fraction of final predictions within ``hit_px``)
per policy, mean and std over seeds; final loss (nats for classify, squared standardised
error for locate: a.u. in the same column); gains are mean paired differences over seeds
(APPLE minus baseline), wins the number of seeds APPLE beats the baseline on;
``grad_norm_{critic,sac,predictor}_apple``: each loss's gradient norm at the backbone's
output (before the scale into the backbone), mean over the last evaluation interval's
updates and the seeds; ``predictor_on_random_apple``: APPLE's predictor on the random-glimpse
test episodes (the readiness check of ``experiment.py``)."""

CARD = Card(
    name="apple",
    title="APPLE: toward general active perception via reinforcement learning",
    reference="Schneider, de Farias, Calandra, Chen, Peters; ICLR 2026, arXiv 2505.06182",
    claim="one transformer with actor, predictor and critic heads trained on reward minus "
          "prediction loss (SAC/CrossQ) beats random glimpses: CircleSquare 0.991 vs 0.696, "
          "TactileMNIST 0.880 vs 0.691 final-step accuracy",
    device_kinds=("gpu", "cpu"),
    datasets=DATASETS,
    config=AppleConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="digits",
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    main_metric="final_accuracy_apple",
    # bench/quick_presets.py: APPLE behind random glimpses on 3 of 3 seeds at 2.3k env steps;
    # bench/out/apple_routing_300it.json: at 57.6k env steps (card routing) it is ahead 5/5
    preset_notes={"quick": "smoke run: shows nothing of the claim (2.3k env steps); `python "
                           "bench/apple.py --datasets digits --seeds 5 --iterations 300 "
                           "--readings ''` shows it (digits, the card's routing; see "
                           "docs/claims.md)"},
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, load_data=load_data)
