"""Plain backprop MLP classifier on TorchDevice: the baseline later methods compare against.

Fully connected layers with ReLU between them, softmax cross-entropy, Adam (Kingma & Ba
2015, arXiv:1412.6980) on mini-batches. Every op of training (forward, backward and the
optimizer step) and of inference is counted in the device's ledger under the scopes
``train/...`` and ``infer/...``, so its cost can be priced on any GPU or CPU profile.
"""
from __future__ import annotations

import numpy as np
import torch

from models.baselines.mlp.card import MLPConfig
from models.registry import Progress, Trained
from models.shared.checks import all_finite, check_xy, optimizer_overflow_is_config_error
from models.shared.training import seeded, train_minibatch
from sim import seeds
from sim.artifacts import TorchArtifact
from sim.errors import ModelError
from sim.torch_engine import TorchDevice


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
        self.sizes = (n_inputs, *config.hidden, n_classes)
        with seeded(seeds.child(config.seed, "init")):  # global RNG state untouched
            self.net = device.compile(build(self.sizes))
        self.on_microcontroller = device.profile.kind == "bitwise"
        self.history: list[dict] = []

    def fit(self, x: np.ndarray, y: np.ndarray, progress: Progress | None = None,
            x_val: np.ndarray | None = None, y_val: np.ndarray | None = None):
        """Train with Adam; ops counted under ``train``. Returns self."""
        check_xy(x, y, self.n_inputs, self.n_classes, "MLPClassifier.fit")
        cfg, dev = self.config, self.device
        xt, yt = dev.tensor(x), dev.tensor(y, dtype=torch.int64)
        if self.on_microcontroller:
            check_training_fits(dev.profile, self.n_parameters,
                                xt.nelement() * xt.element_size()
                                + yt.nelement() * yt.element_size())
        self.net.train()

        def batch_loss(idx):
            return torch.nn.functional.cross_entropy(self.net(xt[idx]), yt[idx])

        def validate(record):
            if x_val is not None:
                record["val_accuracy"] = self.evaluate(x_val, y_val, scope="validate")["accuracy"]

        with optimizer_overflow_is_config_error("MLPConfig", cfg.lr, "Adam"):
            self.history += train_minibatch(dev, self.net.parameters(), batch_loss, len(xt),
                                            epochs=cfg.epochs, batch_size=cfg.batch_size,
                                            lr=cfg.lr, weight_decay=cfg.weight_decay,
                                            lr_schedule=cfg.lr_schedule,
                                            seed=seeds.child(cfg.seed, "order"),
                                            progress=progress,
                                            after_epoch=validate)
        # a diverged run (e.g. lr = 1e20) has NaN weights, and its NaN losses would be
        # reported as metrics
        if not all_finite(self.net.parameters()):
            raise ModelError(f"MLPConfig.lr = {cfg.lr}: training diverged (non-finite "
                             "weights); expected a smaller lr")
        return self

    def predict_logits(self, x: np.ndarray, scope: str = "infer") -> torch.Tensor:
        check_xy(x, None, self.n_inputs, self.n_classes, "MLPClassifier.predict")
        return self._forward(x, scope)

    def _forward(self, x: np.ndarray, scope: str) -> torch.Tensor:
        self.net.eval()
        if not self.on_microcontroller:
            return self.device.run(self.net, self.device.tensor(x), scope=scope)
        # a microcontroller holds one batch at a time, not the whole test set: 10,000
        # Fashion-MNIST samples are 31 MB of input and 400 kB of logits, which no MCU's SRAM
        # and flash take (the run trained, then failed to price); each batch is a block of
        # its own, and the logits are gathered off the counted device
        step = self.config.batch_size
        return torch.cat([self.device.run(self.net, self.device.tensor(x[i:i + step]),
                                          scope=scope)
                          for i in range(0, len(x), step)])

    def evaluate(self, x: np.ndarray, y: np.ndarray, scope: str = "infer") -> dict[str, float]:
        """Accuracy and mean cross-entropy; the forward pass is counted under ``scope``."""
        check_xy(x, y, self.n_inputs, self.n_classes, "MLPClassifier.evaluate")
        logits = self._forward(x, scope)   # checked once, above
        yt = self.device.tensor(y, dtype=torch.int64)
        loss = torch.nn.functional.cross_entropy(logits, yt)
        acc = (logits.argmax(dim=1) == yt).float().mean()
        return {"accuracy": float(acc), "loss": float(loss)}

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.net.parameters())

    def trained(self, example_x: np.ndarray) -> Trained:
        """The weights as plain arrays (what a run file stores and an export rebuilds from)."""
        arrays = {f"param/{k}": v.detach().cpu().numpy()
                  for k, v in self.net.state_dict().items()}
        arrays["example_x"] = np.asarray(example_x, dtype=np.float32)
        return Trained(arrays, {"sizes": list(self.sizes)})


# float32 training state per parameter with Adam: the weight, its gradient and the two moments
ADAM_STATE_BYTES = 4 * 4


def check_training_fits(profile, n_parameters: int, data_bytes: int) -> None:
    """Refuse, before any training, an MLP whose training cannot be placed on a
    microcontroller: its Adam state in the writable memories, the training set (only read)
    in what is left and flash. Pricing places at least these bytes and would refuse them
    after the training (the Fashion-MNIST quick MLP, 25,450 parameters: 407 kB of state
    against a Cortex-M4's 192 kB of SRAM; any MLP: 60,000 samples are 188 MB of data)."""
    from sim.execution.mcu import place
    place(profile, n_parameters * ADAM_STATE_BYTES, data_bytes, who="MLPClassifier",
          subject=f"training the MLP's {n_parameters:,} parameters with Adam",
          writable_what="weights, gradients and Adam's two moments, 16 B per parameter",
          read_only_what="the training set")


def build(sizes) -> torch.nn.Sequential:
    """Linear layers of ``sizes`` with ReLU between them (none after the last)."""
    layers: list[torch.nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(torch.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def torch_artifact(trained: Trained) -> TorchArtifact:
    """Rebuild the trained network from its arrays (no training) for the ONNX exporter."""
    net = build(trained.meta["sizes"])
    state = {k.removeprefix("param/"): torch.as_tensor(v) for k, v in trained.arrays.items()
             if k.startswith("param/")}
    net.load_state_dict(state)
    x = torch.as_tensor(trained.arrays["example_x"])
    return TorchArtifact(net.eval(), x[:2], input_names=("features",),
                         output_names=("logits",), check_inputs=x)
