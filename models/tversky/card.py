"""The Tversky card: its config, presets and the three contract functions.

Light on purpose (no torch at import): ``neuroedge models`` imports every card. The layer
is in ``layer.py``, the frozen-encoder heads in ``model.py``, the XOR and head comparison
in ``experiment.py``. The names of the layer's variants live here so the config can check
them without importing torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, Trained, register
from models.shared.checks import check_at_least
from sim.errors import ModelError
from sim.traces import Trace, curve

if TYPE_CHECKING:   # the engine, imported only for the annotation (cards stay light)
    from sim.torch_engine.engine import TorchDevice

INTERSECTIONS = ("product", "min", "max", "mean", "gmean", "softmin")
DIFFERENCES = ("ignorematch", "substractmatch")
SIMILARITIES = ("contrast", "ratio")
ENCODERS = ("random", "trained")


@dataclass
class TverskyHeadConfig:
    """Quick Fashion-MNIST setting; defaults say why."""

    encoder: str = "random"         # random-and-fixed conv features: the head does all learning
    width: int = 32                 # conv channels; features d = 8 * width = 256
    bank_size: int = 64             # K; the official MNIST test used K = d, we keep K < d
    similarity: str = "contrast"    # the paper's default model
    intersection: str = "product"   # best in the paper's XOR study
    difference: str = "ignorematch"
    # bank and prototypes U(0, init_scale); 0 picks 1/sqrt(d), which starts the logits at
    # O(10) where the official U(0, 1) gives ~1e4 at d = 256 (products grow like K d^2)
    init_scale: float = 0.0
    train: int = 10000              # first N training images (quick run)
    test: int = 2000
    epochs: int = 10
    batch_size: int = 256           # the official MNIST test's batch
    lr: float = 3e-3                # Adam; 1e-3 (official) is slow on random features
    encoder_epochs: int = 1         # only for encoder="trained"
    visualise: bool = True          # train data-domain prototype heads for the picture
    seed: int = 0

    def __post_init__(self):
        for name, allowed in (("encoder", ENCODERS), ("similarity", SIMILARITIES),
                              ("intersection", INTERSECTIONS), ("difference", DIFFERENCES)):
            if getattr(self, name) not in allowed:
                raise ModelError(f"TverskyHeadConfig.{name} = {getattr(self, name)!r}: "
                                 f"must be one of {allowed}")
        for name in ("width", "bank_size", "test", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ModelError(f"TverskyHeadConfig.{name} = {getattr(self, name)}: "
                                 "must be >= 1")
        if self.train < 2:   # one image has no feature std: the standardised features were NaN
            raise ModelError(f"TverskyHeadConfig.train = {self.train}: must be >= 2 (the "
                             "encoder's standardisation needs a feature std)")
        if self.init_scale < 0:
            raise ModelError(f"TverskyHeadConfig.init_scale = {self.init_scale}: must be >= 0 "
                             "(0 picks 1/sqrt(d))")
        if not self.lr > 0:
            raise ModelError(f"TverskyHeadConfig.lr = {self.lr}: must be > 0")
        check_at_least(self, encoder_epochs=0)


PRESETS = {
    # quick: the defaults (10k/2k images, 10 epochs); full: the whole split
    "quick": {"fashion-mnist": {}},
    "full": {"fashion-mnist": {"train": 60000, "test": 10000, "epochs": 10}},
}


def load_data(dataset: str, cfg: TverskyHeadConfig):
    """The first ``cfg.train`` / ``cfg.test`` Fashion-MNIST images (``data.load``)."""
    from models.tversky import data
    return data.load(dataset, cfg)


def simulate(cfg: TverskyHeadConfig, device: TorchDevice, data, progress=None) -> Outcome:
    """Tversky head against linear head on one frozen encoder, trained and tested on ``data``.

    Ledger scopes: ``encode``, ``train/tversky``, ``train/linear``, ``infer`` (the deployed
    encoder + Tversky head), ``infer_linear``, ``visualise/...`` (data-domain prototypes).
    """
    from models.tversky.model import run_heads, trained
    res = run_heads(data, cfg, device, progress)
    m = res["metrics"]
    m["test_accuracy"] = m["tversky_test_accuracy"]
    m["accuracy_gain_vs_linear"] = m["tversky_test_accuracy"] - m["linear_test_accuracy"]
    # the deployed model's (encoder + Tversky head, as stored): the device's own figure is
    # that of its last compile() (the linear baseline's head, or a visualise module)
    import torch

    from sim.torch_engine.activity import model_facts
    deployed = model_facts(torch.nn.Sequential(res["encoder"], res["heads"]["tversky"]))
    m["footprint_bytes"] = float(deployed["parameter_bytes"] + deployed["buffer_bytes"])
    tv = res["heads"]["tversky"]
    for name in ("alpha", "beta", "theta"):                     # learned contrast weights
        m[name] = float(getattr(tv, name).detach())
    traces = {f"{k}_train_loss": curve(v) for k, v in res["losses"].items()}
    for kind, imgs in res.get("prototype_images", {}).items():
        traces[f"{kind}_prototypes"] = Trace("images", imgs)   # (10, 28, 28) changes
    facts = {"feature_dim": res["d"], "torch_device": str(device.torch_device),
             "data_source": data.source}
    return Outcome(m, traces, trained(res, cfg, data.x_test[:64]), facts)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """The paper's two small claims: one Tversky layer fits XOR (Linear never does), and a
    Tversky head on a frozen encoder beats a linear head (``experiment.py``)."""
    from models.tversky.experiment import experiment as run_experiment
    return run_experiment(preset, seed, profiles, progress)


def artifact(trained: Trained, target: str):
    """Encoder + Tversky head as one torch module, pixels (N, 784) -> similarities (N, 10)."""
    from models.tversky.model import torch_artifact
    return torch_artifact(trained)


METRICS = {"test_accuracy": "1", "tversky_test_accuracy": "1", "linear_test_accuracy": "1",
           "tversky_data_domain_test_accuracy": "1", "linear_data_domain_test_accuracy": "1",
           "accuracy_gain_vs_linear": "1", "tversky_head_parameters": "count",
           "linear_head_parameters": "count", "footprint_bytes": "B", "alpha": "1",
           "beta": "1", "theta": "1"}
"""Metric units: accuracies are fractions; alpha, beta, theta are the learned
(dimensionless) weights of the Tversky contrast."""

CARD = Card(
    name="tversky",
    title="Tversky Neural Networks: differentiable Tversky similarity and projection layers",
    reference="Doumbouya, Jurafsky & Manning, ICLR 2026, arXiv:2506.11035",
    claim="a Tversky projection head on a frozen encoder beats a linear head "
          "(NABirds/ResNet-50: 36.0% -> 44.9%); one Tversky layer fits XOR",
    device_kinds=("gpu", "cpu"),
    datasets=("fashion-mnist",),
    config=TverskyHeadConfig,
    presets=PRESETS,
    default_profile="a100",
    default_dataset="fashion-mnist",
    exports=("onnx",),
    study_profiles={"gpu": "a100"},
    metrics=METRICS,
    main_metric="test_accuracy",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, artifact=artifact,
                  load_data=load_data)
