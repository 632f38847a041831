"""Plain backprop MLP classifier on TorchDevice: the baseline later methods compare against.

Fully connected layers with ReLU between them, softmax cross-entropy, Adam (Kingma & Ba
2015, arXiv:1412.6980) on mini-batches. Every op of training (forward, backward and the
optimizer step) and of inference is counted in the device's ledger under the scopes
``train/...`` and ``infer/...``, so its cost can be priced on any GPU or CPU profile.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from hw_profiles.errors import ModelError
from models import datasets
from models.registry import ModelCard, Progress, RunResult, register
from sim.torch_engine import TorchDevice


@dataclass
class MLPConfig:
    """Hyperparameters. Defaults are the quick digits setting (64-32-10, as DiffPC's issue)."""

    hidden: tuple[int, ...] = (32,)   # one hidden layer of 32: the paper-comparison size
    epochs: int = 30                  # digits converges in ~20 epochs with Adam at 1e-3
    batch_size: int = 32
    lr: float = 1e-3                  # Adam's default step size
    weight_decay: float = 0.0
    seed: int = 0

    def __post_init__(self):
        self.hidden = tuple(int(h) for h in self.hidden)
        if any(h < 1 for h in self.hidden):
            raise ModelError(f"MLPConfig.hidden = {self.hidden}: every layer needs >= 1 unit")
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ModelError(f"MLPConfig.{name} = {getattr(self, name)}: must be >= 1")
        if not self.lr > 0:
            raise ModelError(f"MLPConfig.lr = {self.lr}: must be > 0")


class MLPClassifier:
    """Backprop MLP on a TorchDevice.

    Parameters
    ----------
    n_inputs, n_classes : int
    config : MLPConfig
    device : TorchDevice
    """

    def __init__(self, n_inputs: int, n_classes: int, config: MLPConfig, device: TorchDevice):
        self.config, self.device = config, device
        self.n_inputs, self.n_classes = n_inputs, n_classes
        sizes = (n_inputs, *config.hidden, n_classes)
        layers: list[torch.nn.Module] = []
        with torch.random.fork_rng(devices=[]):  # seeded init without touching global state
            torch.manual_seed(config.seed)
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
                layers.append(torch.nn.Linear(a, b))
                if i < len(sizes) - 2:
                    layers.append(torch.nn.ReLU())
            self.net = device.compile(torch.nn.Sequential(*layers))
        self.history: list[dict] = []

    def _check(self, x: np.ndarray, y: np.ndarray | None, what: str):
        if x.ndim != 2 or x.shape[1] != self.n_inputs:
            raise ModelError(f"MLPClassifier.{what}: x has shape {x.shape}, expected "
                             f"(N, {self.n_inputs})")
        if y is not None:
            if y.shape != (x.shape[0],):
                raise ModelError(f"MLPClassifier.{what}: y has shape {y.shape}, expected "
                                 f"({x.shape[0]},) to match x")
            if y.size and (y.min() < 0 or y.max() >= self.n_classes):
                raise ModelError(f"MLPClassifier.{what}: labels span {y.min()}..{y.max()}, "
                                 f"expected 0..{self.n_classes - 1}")

    def fit(self, x: np.ndarray, y: np.ndarray, progress: Progress | None = None,
            x_val: np.ndarray | None = None, y_val: np.ndarray | None = None):
        """Train with Adam; ops counted under ``train``. Returns self."""
        self._check(x, y, "fit")
        cfg, dev = self.config, self.device
        xt, yt = dev.tensor(x), dev.tensor(y, dtype=torch.int64)
        opt = torch.optim.Adam(self.net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                               foreach=True)
        gen = torch.Generator().manual_seed(cfg.seed)
        self.net.train()
        for epoch in range(cfg.epochs):
            order = torch.randperm(len(xt), generator=gen).to(dev.torch_device)
            total = 0.0
            with dev.count("train", samples=len(xt)):
                for start in range(0, len(xt), cfg.batch_size):
                    idx = order[start:start + cfg.batch_size]
                    loss = torch.nn.functional.cross_entropy(self.net(xt[idx]), yt[idx])
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    total += float(loss.detach()) * len(idx)
            record = {"epoch": epoch + 1, "train_loss": total / len(xt)}
            if x_val is not None:
                record["val_accuracy"] = self.evaluate(x_val, y_val, scope="validate")["accuracy"]
            self.history.append(record)
            if progress:
                progress(epoch + 1, cfg.epochs, record)
        return self

    def predict_logits(self, x: np.ndarray, scope: str = "infer") -> torch.Tensor:
        self._check(x, None, "predict")
        self.net.eval()
        return self.device.run(self.net, self.device.tensor(x), scope=scope)

    def evaluate(self, x: np.ndarray, y: np.ndarray, scope: str = "infer") -> dict[str, float]:
        """Accuracy and mean cross-entropy; the forward pass is counted under ``scope``."""
        self._check(x, y, "evaluate")
        logits = self.predict_logits(x, scope=scope)
        yt = self.device.tensor(y, dtype=torch.int64)
        loss = torch.nn.functional.cross_entropy(logits, yt)
        acc = (logits.argmax(dim=1) == yt).float().mean()
        return {"accuracy": float(acc), "loss": float(loss)}

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.net.parameters())


def simulate(profile="a100", dataset="digits", seed: int = 0, quick: bool = True,
             progress: Progress | None = None, **overrides) -> RunResult:
    """Train and test the MLP on ``dataset`` on a TorchDevice for ``profile``.

    ``quick`` keeps the digits defaults; ``quick=False`` on Fashion-MNIST uses 784-1000-10
    for 20 epochs with batch 128 (the architecture of the DiffPC comparison).
    """
    data = datasets.load(dataset)
    if quick or dataset == "digits":
        cfg = MLPConfig(seed=seed, **overrides)
    else:
        cfg = MLPConfig(hidden=(1000,), epochs=20, batch_size=128, seed=seed, **overrides)
    dev = TorchDevice(profile)
    model = MLPClassifier(data.n_features, data.n_classes, cfg, dev)
    model.fit(data.x_train, data.y_train, progress=progress)
    metrics = model.evaluate(data.x_test, data.y_test, scope="infer")
    metrics = {"test_accuracy": metrics["accuracy"], "test_loss": metrics["loss"],
               "train_loss": model.history[-1]["train_loss"],
               "parameters": float(model.n_parameters),
               "footprint_bytes": float(dev.footprint_bytes)}
    config = {**asdict(cfg), "hidden": list(cfg.hidden), "n_inputs": data.n_features,
              "n_classes": data.n_classes, "torch_device": str(dev.torch_device)}
    traces = {"train_loss": np.array([h["train_loss"] for h in model.history])}
    return RunResult("mlp", dev.profile, data.name, config, metrics, dev.ledger, traces)


def experiment(quick: bool = True, profile="a100", seed: int = 0) -> RunResult:
    """The baseline's claim at small scale: backprop learns digits (>= 95% test accuracy)."""
    return simulate(profile=profile, dataset="digits" if quick else "fashion-mnist",
                    seed=seed, quick=quick)


CARD = register(ModelCard(
    name="mlp",
    title="Backprop multilayer perceptron (baseline)",
    reference="Rumelhart, Hinton & Williams 1986, doi:10.1038/323533a0; Adam: arXiv:1412.6980",
    claim="backprop baseline: the accuracy and cost every other method is compared with",
    device_kinds=("gpu", "cpu", "bitwise"),  # bitwise: float kernels on an MCU (sim/execution/mcu)
    datasets=("digits", "fashion-mnist"),
    default_dataset="digits",
    default_profile="a100",
    simulate=simulate,
))
