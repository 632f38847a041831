"""DiffPC's card: its config, presets and the contract functions.

Light (no torch, no numba): ``neuroedge models`` imports every card. The method is in
``model.py``, its neuron kernel in ``kernels.py`` and the paper's comparison (DiffPC vs
float PC vs backprop) in ``experiment.py``; each is imported only when something runs.

Presets: float PC's (``models.baselines.pc.card.PRESETS``), the one copy both cards use.
``quick`` is the config's defaults on either dataset (64-32-10 on digits: 30 epochs, batch
32, AdamW 1e-3 at a constant step, 15 cycles of n = 8 spike steps); ``full`` on
Fashion-MNIST is the training protocol of the comparison (on digits it is the quick
setting, digits being small already): DiffPC-M's 784-1000-10 (the paper's Fashion-MNIST
architecture), 6 epochs, batch 100, AdamW (the paper's optimiser) at step 5e-4 annealed to
0 over the run by a cosine (``models.shared.schedules``), weight decay 1e-4; float PC
trains the same way and BP with the same epochs, batch and schedule (``experiment.SHARED``).
The paper gives no epochs, batch, step size or schedule; how these were chosen, with the
measurements, is in the room's README ("How the settings were chosen"). No dropout: it
would have to mask hidden neurons inside DiffPC's spiking iteration too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

# DiffPC trains with float PC's protocol (the comparison shares it), so PC's presets are
# the one copy: the same keys (hidden, epochs, batch_size, lr, lr_schedule) in both configs
from models.baselines.pc.card import PRESETS
from models.registry import Card, Outcome, Study, register
from models.shared.checks import check_at_least
from models.shared.schedules import check_schedule
from sim.errors import ModelError
from sim.traces import curve

if TYPE_CHECKING:   # the engine, imported only for the annotation (cards stay light)
    from sim.neuromorphic.engine import NeuromorphicDevice

SCHEDULES = ("cyclic", "cyclic-decay", "constant-decay")
M_RANGE = 32
"""``|m| <= 32``. ``m`` is the exponent of the cyclic threshold ``T = 2^m / 2^(t mod n)``:
2^(m+1) bounds the change a neuron's value may make in one n-step cycle, and 2^(m+1-n) is
the resolution the cycle reaches (the paper's Theorem 4.1; it does not define m: our
reading, ``model.py``'s docstring). The values are activities and errors of a PC
network on inputs in [0, 1], of order 1 (hence m = 0): a per-cycle change of 2^33 ~ 8.6e9 is
past any of them and a resolution of 2^-32 below float32's precision at 1 (2^-24), so no m
outside is of use. Inside it the model's own arithmetic holds: the synapses store
W 2^(m-n+1) in float32 (``model.py``), finite for |W| < 2^95 and normal (not 0) for
n <= 95, where m = 200 overflowed to inf ("non-finite weight"), m = 100000 overflowed
``2.0 ** m`` and a huge negative m made the scale 0 (NaN weights in ``push_weights``)."""


@dataclass
class DiffPCConfig:
    """Hyperparameters; defaults are the quick digits setting (64-32-10)."""

    hidden: tuple[int, ...] = (32,)
    n: int = 8                 # steps per threshold cycle (DiffPC-L: 120 = 15 x 8)
    cycles: int = 15           # threshold cycles per iteration (PC-SE's 15 steps; the
    #                            first cycle's gamma update moves nothing: eT = b = 0 then)
    m: int = 0                 # 2^(m+1) bounds a per-cycle change; |m| <= M_RANGE
    gamma: float = 0.1         # target step (PC's eta)
    schedule: str = "cyclic"
    decay_a: float = 1.0       # d(tau) floor of the decay schedules (1 = no decay)
    const_c: float = 0.01      # constant-decay threshold scale
    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4
    lr_schedule: str = "constant"   # or "cosine" (models.shared.schedules.lr_factor)
    seed: int = 0

    def __post_init__(self):
        self.hidden = tuple(int(h) for h in self.hidden)
        if not self.hidden or any(h < 1 for h in self.hidden):
            raise ModelError(f"DiffPCConfig.hidden = {self.hidden}: need >= 1 hidden layer")
        for name in ("n", "cycles", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ModelError(f"DiffPCConfig.{name} = {getattr(self, name)}: must be >= 1")
        if not -M_RANGE <= self.m <= M_RANGE:
            raise ModelError(f"DiffPCConfig.m = {self.m}: must be in -{M_RANGE}..{M_RANGE}; "
                             "2^(m+1) bounds a neuron's change per threshold cycle, and the "
                             "activities are of order 1 (default 0)")
        if self.schedule not in SCHEDULES:
            raise ModelError(f"DiffPCConfig.schedule = {self.schedule!r}; expected one of "
                             f"{SCHEDULES}")
        if not 0 < self.decay_a <= 1:
            raise ModelError(f"DiffPCConfig.decay_a = {self.decay_a}: must be in (0, 1]")
        if not (self.gamma > 0 and self.lr > 0 and self.const_c > 0):
            raise ModelError("DiffPCConfig: gamma, lr and const_c must be > 0")
        check_at_least(self, weight_decay=0)
        check_schedule("DiffPCConfig", self.lr_schedule)

    @property
    def steps(self) -> int:
        return self.n * self.cycles




def simulate(cfg: DiffPCConfig, device: NeuromorphicDevice, data, progress=None) -> Outcome:
    """Train DiffPC on ``device`` (a NeuromorphicDevice) and test it.

    The learning step's torch counts (the host reading, ``model.py``'s docstring) come back
    as ``facts["host_ledger"]`` (a serialised Ledger), for the comparison to price.
    """
    import torch

    from models.diffpc.model import DiffPCClassifier
    torch.set_num_threads(1)   # the counts do not depend on it; one thread, as measured
    model = DiffPCClassifier(data.n_features, data.n_classes, cfg, device)
    model.fit(data.x_train, data.y_train, progress=progress)
    acc = model.evaluate(data.x_test, data.y_test)["accuracy"]
    metrics = {"test_accuracy": acc, **model.comm(),
               "output_energy": model.history[-1]["output_energy"]}
    traces = {"output_energy": curve([h["output_energy"] for h in model.history])}
    facts = {"sizes": list(model.sizes), "steps": cfg.steps,
             "host_profile": model.host.profile.name,
             "host_ledger": model.host_ledger.to_dict()}
    return Outcome(metrics, traces, model.trained(), facts)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """The paper's comparison (``experiment.py``): DiffPC on ``profiles["neuromorphic"]``,
    float PC and BP on ``profiles["gpu"]`` (default a100), the same architecture and epochs;
    ``quick`` on digits, ``full`` on Fashion-MNIST (784-1000-10, 6 epochs)."""
    from models.diffpc.experiment import run
    dataset = "digits" if preset == "quick" else "fashion-mnist"
    return run(dataset, preset, seed, profiles, progress=progress)


METRICS = {"test_accuracy": "1", "spikes_per_neuron_per_sample": "spikes",
           "error_spikes_per_neuron_per_sample": "spikes",
           "ff_messages_per_neuron_per_sample": "messages",
           "spike_bits_per_neuron_per_sample": "bits", "bits_per_neuron_per_sample": "bits",
           "output_energy": "a.u. (squared prediction error)"}
"""Metric units: ``output_energy`` is half the output layer's squared prediction error per
sample (a loss), not joules; the per-neuron counts are per neuron and per training sample."""

CARD = Card(
    name="diffpc",
    title="DiffPC: difference predictive coding with ternary spikes",
    reference="Karlsson, Fianda & Kamarainen, ICLR 2026, openreview.net/forum?id=iu9dbz2lB9",
    claim="PC-level accuracy with >100x less data movement than float PC (ternary spikes)",
    device_kinds=("neuromorphic",),
    datasets=("digits", "fashion-mnist"),
    config=DiffPCConfig,
    presets=PRESETS,
    default_profile="loihi2",
    default_dataset="digits",
    # the baselines' GPU profile cannot be named here: register() takes only kinds the
    # method runs on; experiment.py defaults it to a100 (pc's and mlp's study profile)
    study_profiles={"neuromorphic": "loihi2", "gpu": "a100"},   # gpu: float PC and BP
    metrics=METRICS,
    main_metric="test_accuracy",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment)
