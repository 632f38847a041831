"""FS-KAN networks and their parameter-matched parameter-sharing baselines, on TorchDevice.

Paper: "FS-KAN: Permutation Equivariant Kolmogorov-Arnold Networks via
Function Sharing", ICLR 2026, arXiv:2509.24472. Claim checked (Figs. 4-5): with
few training examples FS-KAN beats a parameter-sharing MLP (DeepSets / DSS) of the same
parameter count; the gap closes as data grows. What our small-scale runs show (FS-KAN wins
on Fashion-MNIST point sets at every size, loses on the signal-set task) is recorded with
the commands in bench/RESULTS.md.

Architecture (the paper's point-cloud setup, App. C, at small width): equivariant FS
layers, each followed by BatchNorm over channels (shared by all points, so equivariant),
an invariant FS layer (one function per orbit of points, summed), BatchNorm and a linear
head. The baseline is the same network with ``phi="linear"`` (shared linear maps + bias)
and ReLU after every BatchNorm: DeepSets for ``S_n``, DSS for ``S_n x C_T``; its widths
are scaled until its parameter count is the closest to FS-KAN's. Both train with AdamW,
cross-entropy (+ Efficient-KAN's regulariser x ``eta`` for FS-KAN), a fixed number of
optimizer steps whatever the training-set size (so small sets are not under-trained),
no validation split and no early stopping: the last model is tested.
"""
from __future__ import annotations

import math
import time
from contextlib import nullcontext
from dataclasses import replace
from itertools import pairwise

import numpy as np
import torch

from models.fs_kan.card import FSConfig
from models.fs_kan.data import FASHION_POINTS, SIGNAL, TASKS
from models.fs_kan.groups import Action, cyclic, fixed, natural, symmetric
from models.fs_kan.layers import FSLayer
from models.registry import Progress, Trained
from models.shared.checks import check_xy
from models.shared.training import seeded
from sim import seeds
from sim.artifacts import TorchArtifact
from sim.errors import ModelError
from sim.torch_engine import TorchDevice


class FSNet(torch.nn.Module):
    """Equivariant FS layers + BatchNorm, invariant FS layer, linear head.

    Shapes: (B, N, d) -> (B, classes).
    """

    def __init__(self, action: Action, d_in: int, n_classes: int, cfg: FSConfig):
        super().__init__()
        self.n_points, self.d_in = action.n_points, d_in
        kw = {"phi": cfg.phi, "efficient": cfg.efficient, "grid": cfg.grid}
        dims = (d_in, *cfg.widths)
        self.layers = torch.nn.ModuleList(FSLayer(action, action, a, b, **kw)
                                          for a, b in pairwise(dims))
        self.norms = torch.nn.ModuleList(torch.nn.BatchNorm1d(w) for w in cfg.widths)
        self.pool = FSLayer(fixed(action.group), action, dims[-1], cfg.inv_width, **kw)
        self.pool_norm = torch.nn.BatchNorm1d(cfg.inv_width)
        self.head = torch.nn.Linear(cfg.inv_width, n_classes)
        self.relu = cfg.phi == "linear"    # KA layers are their own nonlinearity

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer, norm in zip(self.layers, self.norms, strict=True):
            x = layer(x)                                                  # (B, N, w)
            x = norm(x.reshape(-1, x.shape[-1])).reshape(x.shape)
            if self.relu:
                x = torch.relu(x)
        x = self.pool_norm(self.pool(x).squeeze(1))                            # (B, w_inv)
        if self.relu:
            x = torch.relu(x)
        return self.head(x)

    def regularization_loss(self) -> torch.Tensor:
        return sum(m.regularization_loss() for m in [*self.layers, self.pool])


def n_parameters(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def matched_baseline(action: Action, d_in: int, n_classes: int, cfg: FSConfig) -> FSConfig:
    """The ``phi="linear"`` config whose widths (FS-KAN's times a common factor) give the
    parameter count closest to FS-KAN's."""
    target = n_parameters(FSNet(action, d_in, n_classes, cfg))

    def make(scale):
        return replace(cfg, phi="linear", widths=[max(1, round(w * scale)) for w in cfg.widths],
                       inv_width=max(1, round(cfg.inv_width * scale)))

    def count(scale):
        return n_parameters(FSNet(action, d_in, n_classes, make(scale)))
    lo, hi = 0.1, 1.0
    while count(hi) < target:
        hi *= 2
    for _ in range(30):                   # bisection on the (monotone) count
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if count(mid) < target else (lo, mid)
    return min((make(lo), make(hi)), key=lambda c: abs(n_parameters(
        FSNet(action, d_in, n_classes, c)) - target))


class FSClassifier:
    """An :class:`FSNet` trained and evaluated on a TorchDevice (ops counted in its ledger).

    ``device`` is the engine the runner resolved (``sim.device``); its ledger gets the counts.
    """

    def __init__(self, action: Action, d_in: int, n_classes: int, cfg: FSConfig,
                 device: TorchDevice):
        self.action, self.d_in, self.n_classes = action, d_in, n_classes
        self.config, self.device = cfg, device
        with seeded(seeds.child(cfg.seed, "init")):   # seeded init, global RNG untouched
            self.net = device.compile(FSNet(action, d_in, n_classes, cfg))
        self.history: list[dict] = []

    def _check(self, x, y, what):
        check_xy(x, y, (self.action.n_points, self.d_in), self.n_classes,
                 f"FSClassifier.{what} ({self.action.name})")

    def fit(self, x: np.ndarray, y: np.ndarray, progress: Progress | None = None,
            count: bool = True):
        """``config.steps`` AdamW steps on mini-batches of reshuffled epochs.

        Counted under ``train`` unless ``count=False`` (the benchmark's repeated runs skip
        the ~2x counting overhead; one counted run gives the per-step counts).
        """
        self._check(x, y, "fit")
        cfg, dev = self.config, self.device
        xt, yt = dev.tensor(x), dev.tensor(y, dtype=torch.int64)
        opt = torch.optim.AdamW(self.net.parameters(), lr=cfg.lr,
                                weight_decay=cfg.weight_decay, foreach=True)
        gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "order"))
        per_epoch = math.ceil(len(x) / cfg.batch_size)
        epochs = math.ceil(cfg.steps / per_epoch)
        self.net.train()
        step = 0
        counting = dev.count("train", samples=len(x) * epochs) if count else nullcontext()
        with counting:
            for epoch in range(epochs):
                order = torch.randperm(len(x), generator=gen).to(dev.torch_device)
                total = torch.zeros((), device=dev.torch_device)
                for start in range(0, len(x), cfg.batch_size):
                    idx = order[start:start + cfg.batch_size]
                    if len(idx) < 2:          # BatchNorm needs two sets in a batch
                        continue
                    loss = torch.nn.functional.cross_entropy(self.net(xt[idx]), yt[idx])
                    if cfg.phi == "kan" and cfg.eta:
                        loss = loss + cfg.eta * self.net.regularization_loss()
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    total += loss.detach() * len(idx)
                    step += 1
                self.history.append({"epoch": epoch + 1, "train_loss": float(total) / len(x)})
                if progress:
                    progress(step, per_epoch * epochs, self.history[-1])
        return self

    def evaluate(self, x: np.ndarray, y: np.ndarray, scope: str = "infer",
                 batch_size: int = 500, count: bool = True) -> dict[str, float]:
        """Accuracy and cross-entropy; the forward passes are counted under ``scope``."""
        self._check(x, y, "evaluate")
        self.net.eval()
        logits = []
        counting = self.device.count(scope, samples=len(x)) if count else nullcontext()
        with torch.no_grad(), counting:
            for start in range(0, len(x), batch_size):
                logits.append(self.net(self.device.tensor(x[start:start + batch_size])))
        logits = torch.cat(logits)
        # outside the count block (no ledger change): NaN weights give NaN logits, whose
        # argmax 'accuracy' and NaN loss would be reported as a result
        if not bool(torch.isfinite(logits).all()):
            raise ModelError(f"FSClassifier.evaluate ({self.action.name}, phi = "
                             f"{self.config.phi!r}): the network's class scores are not "
                             f"finite: training diverged (lr = {self.config.lr}); lower lr")
        yt = self.device.tensor(y, dtype=torch.int64)
        return {"accuracy": float((logits.argmax(1) == yt).float().mean()),
                "loss": float(torch.nn.functional.cross_entropy(logits, yt))}

    @property
    def n_parameters(self) -> int:
        return n_parameters(self.net)


# --- tasks ------------------------------------------------------------------------------
def task_action(task: str) -> tuple[Action, int, int]:
    """(action, channels per point, classes) of a task."""
    if task == "signal-sets":
        return natural(symmetric(SIGNAL["n"]) * cyclic(SIGNAL["length"])), 1, 3
    if task == "fashion-points":
        return natural(symmetric(FASHION_POINTS)), 3, 10
    raise ModelError(f"unknown FS-KAN task {task!r}; tasks are {', '.join(TASKS)}")


def compare(data, cfg: FSConfig, devices, progress: Progress | None = None,
            count: bool = True) -> dict:
    """Train FS-KAN (``cfg``) and its parameter-matched baseline on ``data``; test both.

    ``data`` is a task's ``Dataset`` (``data.load``); ``devices`` = (FS-KAN's, baseline's)
    engines, each counting its model's ops. Returns accuracies, parameter counts, wall
    seconds, both configs and both classifiers.
    """
    action, d_in, n_classes = task_action(data.name)
    out = {"task": data.name, "n_train": len(data.y_train), "seed": cfg.seed}
    pairs = (("fskan", cfg), ("baseline", matched_baseline(action, d_in, n_classes, cfg)))
    for (label, c), dev in zip(pairs, devices, strict=True):
        model = FSClassifier(action, d_in, n_classes, c, dev)
        t0 = time.perf_counter()
        model.fit(data.x_train, data.y_train, progress=progress if label == "fskan" else None,
                  count=count)
        out[f"{label}_train_s"] = time.perf_counter() - t0
        res = model.evaluate(data.x_test, data.y_test, count=count)
        out.update({f"{label}_accuracy": res["accuracy"], f"{label}_loss": res["loss"],
                    f"{label}_parameters": model.n_parameters, f"{label}_config": c,
                    f"{label}_model": model})
    return out


def macs(dev: TorchDevice, scope: str) -> int:
    """Multiply-accumulates of every precision the ledger recorded under ``scope``."""
    return int(sum(v for k, v in dev.ledger.total_ops(scope).items() if k.startswith("mac_")))


# --- the trained network as plain data, and back (exports never retrain) ----------------
ARCHITECTURE = ("phi", "widths", "inv_width", "efficient", "grid")
"""The config fields that shape the network (the rest only steer training)."""


def trained(model: FSClassifier, task: str, example_x: np.ndarray) -> Trained:
    """The network's state (parameters, BatchNorm statistics, orbit tables) as arrays."""
    arrays = {f"param/{k}": v.detach().cpu().numpy() for k, v in model.net.state_dict().items()}
    arrays["example_x"] = np.asarray(example_x, dtype=np.float32)
    cfg = model.config
    arch = {k: getattr(cfg, k) for k in ARCHITECTURE}
    arch["widths"] = list(cfg.widths)
    return Trained(arrays, {"task": task, "d_in": model.d_in, "n_classes": model.n_classes,
                            "architecture": arch})


def rebuild(trained_: Trained) -> FSNet:
    """The trained :class:`FSNet` from its arrays, in eval mode on the CPU (no training)."""
    meta = trained_.meta
    action, d_in, n_classes = task_action(meta["task"])
    cfg = FSConfig(**{**meta["architecture"], "widths": tuple(meta["architecture"]["widths"])})
    with seeded(0):      # the init is overwritten by the state below; keep the global RNG
        net = FSNet(action, d_in, n_classes, cfg)
    state = {k.removeprefix("param/"): torch.as_tensor(v) for k, v in trained_.arrays.items()
             if k.startswith("param/")}
    net.load_state_dict(state)
    return net.eval()


def torch_artifact(trained_: Trained) -> TorchArtifact:
    """The trained network for the ONNX exporter: orbit terms placed by plain indexing
    (``plain_gather``, equal to the embedding bag used in training; the tests check both)."""
    net = rebuild(trained_)
    for m in net.modules():
        if isinstance(m, FSLayer):
            m.plain_gather = True
    x = torch.as_tensor(trained_.arrays["example_x"])
    return TorchArtifact(net, x[:2], input_names=("points",), output_names=("logits",),
                         check_inputs=x)
