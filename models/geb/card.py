"""The GEB card (general exploratory bonus in online f-DPO): config, presets, contract.

Light on purpose (no torch at import): ``neuroedge models`` imports every card. The losses
are in ``losses.py``, the policy, the online loop and the card's run (``run_comparison``) in
``model.py``, the procedural tasks in ``data.py``, the study over divergences and bonus forms
in ``experiment.py``.

One run compares three arms over ``seeds`` seeds on the same tasks: passive f-DPO (no
bonus), the prior-form bonus (``-kappa g_f(pi / pi_ref)`` on the rejected response) and
GEB with the configured u (``bonus``); the traces are learning curves with seed bands.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, register
from models.shared.checks import check_at_least
from sim.errors import ModelError

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice

DATASETS = ("toy", "chars", "reach")   # = data.TASKS
F_DIVS = ("rkl", "fkl", "hel")         # = losses.F_DIVS
GEB_FORMS = ("geb_p", "geb_f", "geb_tanh")
REFS = ("previous", "fixed")
LOGP_FORMS = ("sequence", "per_token")
CREDITS = ("match", "prefix")
DTYPES = ("float32", "float64")


@dataclass
class GebConfig:
    """One three-arm comparison of the online loop; defaults say why."""

    f_div: str = "rkl"              # reverse KL: the paper's main divergence
    bonus: str = "geb_p"            # GEB's u = 1 + alpha - pi (Eq. 9), the simplest form
    kappa: float = 0.1              # bonus weight, for the prior form and GEB alike (the
                                    # digest's middle value; the paper tunes it)
    seeds: int = 5                  # seeds per run (the seed bands; claims need >= 5)
    iterations: int = 10            # T online iterations (digest: 10; paper: 3 at 20k prompts)
    pairs: int = 4                  # pairs per prompt and iteration (toy: 16 x 4 = 64)
    steps: int = 20                 # full-batch Adam steps per iteration on all pairs so far;
                                    # at 100 the passive policy's entropy fell 4.5 -> 0.1
                                    # nats by iteration 10 (2 seeds), reward not above 0.45
    lr: float = 1e-3
    beta: float = 0.1               # f-DPO beta (TRL's default, which the script keeps)
    bt_scale: float = 10.0          # Bradley-Terry: P(y1 > y2) = sigma(10 (r1 - r2)), r in [0,1]
    ref: str = "previous"           # the loop's reference: the previous iterate (the script)
                                    # or the pretrained policy throughout
    hidden: int = 32                # policy width (2,662 parameters on the toy)
    sft_samples: int = 1024         # reference-distribution samples pi_ref is trained on
    sft_steps: int = 200
    sft_lr: float = 3e-3
    common_mass: float = 0.9        # reference mass on the 2 common tokens per position
    credit: str = "match"           # reward credit: every token matching y*, or its prefix
    bonus_logp: str = "sequence"    # pi in the bonus: the sequence probability, or per-token
                                    # (exp(log pi / L): the character task's must)
    eval_samples: int = 512         # samples per evaluation where responses are not enumerated
    dtype: str = "float32"
    count: bool = True              # count torch ops (False: the bench's many runs)
    seed: int = 0

    def __post_init__(self):
        for name, allowed in (("f_div", F_DIVS), ("bonus", GEB_FORMS), ("ref", REFS),
                              ("bonus_logp", LOGP_FORMS), ("credit", CREDITS),
                              ("dtype", DTYPES)):
            if getattr(self, name) not in allowed:
                raise ModelError(f"GebConfig.{name} = {getattr(self, name)!r}: must be one of "
                                 f"{', '.join(allowed)}")
        for name in ("seeds", "iterations", "pairs", "steps", "hidden", "sft_samples",
                     "sft_steps", "eval_samples"):
            if getattr(self, name) < 1:
                raise ModelError(f"GebConfig.{name} = {getattr(self, name)}: must be >= 1")
        for name in ("lr", "beta", "sft_lr"):
            if not getattr(self, name) > 0:
                raise ModelError(f"GebConfig.{name} = {getattr(self, name)}: must be > 0")
        if not 0.0 < self.common_mass < 1.0:
            raise ModelError(f"GebConfig.common_mass = {self.common_mass}: must lie strictly "
                             "between 0 and 1")
        check_at_least(self, kappa=0, bt_scale=0)


PRESETS = {
    # quick: 5 seeds x 3 arms x 10 iterations of 20 steps on the 1,296-response toy
    "quick": {"toy": {}, "chars": {"bonus_logp": "per_token", "pairs": 16, "seeds": 5},
              "reach": {"common_mass": 0.4}},   # = data.COMMON_MASS: pi_ref(y*) ~ e^-5.7
    # full: 10 seeds (the digest's plan), 30 steps per iteration
    "full": {"toy": {"seeds": 10, "steps": 30},
             "chars": {"bonus_logp": "per_token", "pairs": 16, "seeds": 10, "steps": 30},
             "reach": {"common_mass": 0.4, "seeds": 10, "steps": 30}},
}


def load_data(dataset: str, cfg: GebConfig):
    """The task of every seed of the run (``data.make_task``), seeds ``cfg.seed`` on."""
    from models.geb.data import make_task
    return [make_task(dataset, cfg.seed + k, cfg.common_mass, credit=cfg.credit)
            for k in range(cfg.seeds)]


def simulate(cfg: GebConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """Per seed: pretrain pi_ref, run passive, prior-form and GEB loops from it (counted on
    ``device`` when ``cfg.count``); metrics are seed means and paired tests over seeds.

    Ledger scopes: ``train/pretrain`` (pi_ref's SFT) and ``train/<arm>/{sample,train}`` per
    arm (the pairs' responses drawn, the f-DPO steps): all of it is training, so the report's
    energy per training sample is every counted op over the SFT and f-DPO samples."""
    import torch

    from models.geb.model import run_comparison
    torch.set_num_threads(1)   # ~2k-parameter ops: a second thread only adds contention;
    return run_comparison(cfg, device, data, progress)   # the counts do not depend on it


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """Every divergence with its GEB forms against passive and prior-form loops
    (``experiment.py``)."""
    from models.geb.experiment import experiment as run_experiment
    return run_experiment(preset, seed, profiles, progress)


_ARM_METRICS = {"reward": "1", "p_optimum": "1", "expected_logp_ref": "nats",
                "explore_logp_ref": "nats", "entropy": "nats"}
METRICS = {f"{k}_{arm}": u for k, u in _ARM_METRICS.items()
           for arm in ("passive", "prior", "geb")}
METRICS.update({"reward_gain_geb_vs_passive": "1", "reward_gain_geb_vs_prior": "1",
                "explore_gain_geb_vs_passive": "nats", "wilcoxon_p_explore": "1",
                "wilcoxon_p_reward": "1", "reference_reward": "1",
                "reference_logp_ref_optimum": "nats", "seeds": "count"})
"""Units: rewards and P(y*) are in [0, 1]; log-probabilities and entropies in nats; the
gains are seed means of paired differences: the reward gains GEB minus the other arm, the
exploration gain passive minus GEB in ``explore_logp_ref`` (the reference log-probability of
the sampled responses; positive when GEB samples responses the reference finds less likely);
``wilcoxon_p_*`` the two-sided Wilcoxon signed-rank p-values of those differences over
seeds."""

CARD = Card(
    name="geb",
    title="General exploratory bonus for optimistic exploration in RLHF",
    reference="ICLR 2026 poster, arXiv:2510.03269",
    claim="GEB's u-functions make the bonus optimistic under every f-divergence (the prior "
          "bonus is constant under KL, anti-optimistic otherwise) and move online f-DPO's "
          "samples to low-pi_ref regions; in-domain win rate +1-2 points",
    device_kinds=("gpu", "cpu"),
    datasets=DATASETS,
    config=GebConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="toy",
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    main_metric="reward_geb",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, load_data=load_data)
