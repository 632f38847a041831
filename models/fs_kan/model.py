"""FS-KAN networks and their parameter-matched parameter-sharing baselines, on TorchDevice.

Paper: Elbaz, ..., Maron, "FS-KAN: Permutation Equivariant Kolmogorov-Arnold Networks via
Function Sharing", ICLR 2026, arXiv:2509.24472. Claim checked (Sec. 6, Figs. 4-5): with
few training examples FS-KAN beats a parameter-sharing MLP (DeepSets / DSS) of the same
parameter count; the gap closes as data grows.

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
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from hw_profiles.errors import ModelError
from models.fs_kan import tasks
from models.fs_kan.groups import Action, cyclic, fixed, natural, symmetric
from models.fs_kan.layers import FSLayer
from models.registry import Progress, RunResult
from sim.torch_engine import TorchDevice

TASKS = ("signal-sets", "fashion-points")


@dataclass
class FSConfig:
    """Hyper-parameters; defaults are the quick signal-set setting."""

    phi: str = "kan"                  # "kan" (FS-KAN) or "linear" (parameter-sharing MLP)
    widths: tuple[int, ...] = (8, 8)  # equivariant layers (paper: 16/16/8 signals, 36/36 points)
    inv_width: int = 8                # invariant layer width
    efficient: bool = False           # eq. (13) instead of eq. (12)
    grid: int = 5                     # Efficient-KAN default grid size G
    steps: int = 300                  # optimizer steps, whatever the training-set size
    batch_size: int = 32              # paper: 32 for point clouds, 64 for signals
    lr: float = 3e-3                  # between the paper's 1e-3 (signals) and 1e-2 (points)
    weight_decay: float = 1e-2        # AdamW's default
    eta: float = 1e-5                 # regulariser weight (paper: 1e-5 point clouds)
    seed: int = 0

    def __post_init__(self):
        self.widths = tuple(int(w) for w in self.widths)
        if self.phi not in ("kan", "linear"):
            raise ModelError(f"FSConfig.phi = {self.phi!r}: expected 'kan' or 'linear'")
        if not self.widths or min(self.widths) < 1 or self.inv_width < 1:
            raise ModelError(f"FSConfig.widths = {self.widths}, inv_width = {self.inv_width}: "
                             "need at least one layer and widths >= 1")
        for name in ("steps", "batch_size", "grid"):
            if getattr(self, name) < 1:
                raise ModelError(f"FSConfig.{name} = {getattr(self, name)}: must be >= 1")
        if not self.lr > 0:
            raise ModelError(f"FSConfig.lr = {self.lr}: must be > 0")


class FSNet(torch.nn.Module):
    """Equivariant FS layers + BatchNorm, invariant FS layer, linear head: (B, N, d) -> (B, classes)."""

    def __init__(self, action: Action, d_in: int, n_classes: int, cfg: FSConfig):
        super().__init__()
        self.n_points, self.d_in = action.n_points, d_in
        kw = dict(phi=cfg.phi, efficient=cfg.efficient, grid=cfg.grid)
        dims = (d_in, *cfg.widths)
        self.layers = torch.nn.ModuleList(FSLayer(action, action, a, b, **kw)
                                          for a, b in zip(dims[:-1], dims[1:]))
        self.norms = torch.nn.ModuleList(torch.nn.BatchNorm1d(w) for w in cfg.widths)
        self.pool = FSLayer(fixed(action.group), action, dims[-1], cfg.inv_width, **kw)
        self.pool_norm = torch.nn.BatchNorm1d(cfg.inv_width)
        self.head = torch.nn.Linear(cfg.inv_width, n_classes)
        self.relu = cfg.phi == "linear"    # KA layers are their own nonlinearity

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer, norm in zip(self.layers, self.norms):
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
    """An :class:`FSNet` trained and evaluated on a TorchDevice (ops counted in its ledger)."""

    def __init__(self, action: Action, d_in: int, n_classes: int, cfg: FSConfig,
                 device: TorchDevice):
        self.action, self.d_in, self.n_classes = action, d_in, n_classes
        self.config, self.device = cfg, device
        with torch.random.fork_rng(devices=[]):   # seeded init, global RNG untouched
            torch.manual_seed(cfg.seed)
            self.net = device.compile(FSNet(action, d_in, n_classes, cfg))
        self.history: list[dict] = []

    def _check(self, x, y, what):
        shape = (self.action.n_points, self.d_in)
        if not isinstance(x, np.ndarray) or x.ndim != 3 or x.shape[1:] != shape:
            raise ModelError(f"FSClassifier.{what}: x has shape {getattr(x, 'shape', None)}, "
                             f"expected (N, {shape[0]}, {shape[1]}) for {self.action.name}")
        if y is not None:
            if y.shape != (len(x),):
                raise ModelError(f"FSClassifier.{what}: y has shape {y.shape}, expected "
                                 f"({len(x)},) to match x")
            if y.size and (y.min() < 0 or y.max() >= self.n_classes):
                raise ModelError(f"FSClassifier.{what}: labels span {y.min()}..{y.max()}, "
                                 f"expected 0..{self.n_classes - 1}")

    def fit(self, x: np.ndarray, y: np.ndarray, progress: Progress | None = None):
        """``config.steps`` AdamW steps on mini-batches of reshuffled epochs; counted under ``train``."""
        self._check(x, y, "fit")
        cfg, dev = self.config, self.device
        xt, yt = dev.tensor(x), dev.tensor(y, dtype=torch.int64)
        opt = torch.optim.AdamW(self.net.parameters(), lr=cfg.lr,
                                weight_decay=cfg.weight_decay, foreach=True)
        gen = torch.Generator().manual_seed(cfg.seed)
        per_epoch = math.ceil(len(x) / cfg.batch_size)
        epochs = math.ceil(cfg.steps / per_epoch)
        self.net.train()
        step = 0
        with dev.count("train", samples=len(x) * epochs):
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
                 batch_size: int = 500) -> dict[str, float]:
        """Accuracy and cross-entropy; the forward passes are counted under ``scope``."""
        self._check(x, y, "evaluate")
        self.net.eval()
        logits = []
        with torch.no_grad(), self.device.count(scope, samples=len(x)):
            for start in range(0, len(x), batch_size):
                logits.append(self.net(self.device.tensor(x[start:start + batch_size])))
        logits = torch.cat(logits)
        yt = self.device.tensor(y, dtype=torch.int64)
        return {"accuracy": float((logits.argmax(1) == yt).float().mean()),
                "loss": float(torch.nn.functional.cross_entropy(logits, yt))}

    @property
    def n_parameters(self) -> int:
        return n_parameters(self.net)


# --- tasks --------------------------------------------------------------------------
SIGNAL = dict(n=8, length=16, noise=1.0)   # 8 copies x 16 samples: S_8 x C_16, 32 orbits
FASHION_POINTS = 64
TEST_SEED = 12345                          # one fixed test set for every run


def task_action(task: str) -> tuple[Action, int, int]:
    """(action, channels per point, classes) of a task."""
    if task == "signal-sets":
        return natural(symmetric(SIGNAL["n"]) * cyclic(SIGNAL["length"])), 1, 3
    if task == "fashion-points":
        return natural(symmetric(FASHION_POINTS)), 3, 10
    raise ModelError(f"unknown FS-KAN task {task!r}; tasks are {', '.join(TASKS)}")


def load_task(task: str, n_train: int, n_test: int, seed: int):
    """``(x_train, y_train, x_test, y_test)``; the test set does not depend on ``seed``."""
    if task == "signal-sets":
        x_tr, y_tr = tasks.signal_sets(n_train, seed=seed, **SIGNAL)
        x_te, y_te = tasks.signal_sets(n_test, seed=TEST_SEED, **SIGNAL)
        return x_tr, y_tr, x_te, y_te
    if task == "fashion-points":
        return tasks.fashion_point_sets(n_train, n_test, FASHION_POINTS, seed=seed)
    task_action(task)  # raises the unknown-task error


def default_config(task: str, **overrides) -> FSConfig:
    """FS-KAN's config for a task: width 8 for signals, 16 for Fashion point sets."""
    width = 8 if task == "signal-sets" else 16
    return FSConfig(**{"widths": (width, width), "inv_width": width, **overrides})


def compare(task: str, n_train: int, seed: int, profile="a100", n_test: int = 1000,
            progress: Progress | None = None, **overrides) -> dict:
    """Train FS-KAN and its parameter-matched baseline on one training set; test both.

    Returns accuracies, parameter counts, wall seconds and both devices (ledgers).
    """
    import time
    action, d_in, n_classes = task_action(task)
    x_tr, y_tr, x_te, y_te = load_task(task, n_train, n_test, seed)
    cfg = default_config(task, seed=seed, **overrides)
    out = {"task": task, "n_train": n_train, "seed": seed}
    for label, c in (("fskan", cfg), ("baseline", matched_baseline(action, d_in, n_classes, cfg))):
        dev = TorchDevice(profile)
        model = FSClassifier(action, d_in, n_classes, c, dev)
        t0 = time.perf_counter()
        model.fit(x_tr, y_tr, progress=progress if label == "fskan" else None)
        out[f"{label}_train_s"] = time.perf_counter() - t0
        res = model.evaluate(x_te, y_te)
        out.update({f"{label}_accuracy": res["accuracy"], f"{label}_loss": res["loss"],
                    f"{label}_parameters": model.n_parameters, f"{label}_config": c,
                    f"{label}_device": dev, f"{label}_model": model})
    return out
