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
from dataclasses import asdict, dataclass, replace
from itertools import pairwise

import numpy as np
import torch

from models.fs_kan import tasks
from models.fs_kan.groups import Action, cyclic, fixed, natural, symmetric
from models.fs_kan.layers import FSLayer
from models.registry import ModelCard, Progress, RunResult, register
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

TASKS = ("signal-sets", "fashion-points")


@dataclass
class FSConfig:
    """Hyper-parameters (:func:`default_config` sets the widths per task; the plans set steps)."""

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
        gen = torch.Generator().manual_seed(cfg.seed)
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
        yt = self.device.tensor(y, dtype=torch.int64)
        return {"accuracy": float((logits.argmax(1) == yt).float().mean()),
                "loss": float(torch.nn.functional.cross_entropy(logits, yt))}

    @property
    def n_parameters(self) -> int:
        return n_parameters(self.net)


# --- tasks --------------------------------------------------------------------------
SIGNAL = {"n": 6, "length": 12, "noise": 1.0}   # 6 copies x 12 samples: S_6 x C_12, 24 orbits
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
            progress: Progress | None = None, devices=None, count: bool = True,
            **overrides) -> dict:
    """Train FS-KAN and its parameter-matched baseline on one training set; test both.

    ``devices``: (FS-KAN's, baseline's) TorchDevices to count on (new ones by default).
    Returns accuracies, parameter counts, wall seconds, configs, models and devices.
    """
    action, d_in, n_classes = task_action(task)
    x_tr, y_tr, x_te, y_te = load_task(task, n_train, n_test, seed)
    cfg = default_config(task, seed=seed, **overrides)
    devices = devices or (TorchDevice(profile), TorchDevice(profile))
    out = {"task": task, "n_train": n_train, "seed": seed}
    pairs = (("fskan", cfg), ("baseline", matched_baseline(action, d_in, n_classes, cfg)))
    for (label, c), dev in zip(pairs, devices):
        model = FSClassifier(action, d_in, n_classes, c, dev)
        t0 = time.perf_counter()
        model.fit(x_tr, y_tr, progress=progress if label == "fskan" else None, count=count)
        out[f"{label}_train_s"] = time.perf_counter() - t0
        res = model.evaluate(x_te, y_te, count=count)
        out.update({f"{label}_accuracy": res["accuracy"], f"{label}_loss": res["loss"],
                    f"{label}_parameters": model.n_parameters, f"{label}_config": c,
                    f"{label}_device": dev, f"{label}_model": model})
    return out


# --- the registered experiment ----------------------------------------------------------
QUICK = {"signal-sets": {"n_train": 60, "steps": 150, "n_test": 500},
         "fashion-points": {"n_train": 100, "steps": 150, "n_test": 500}}
FULL = {"signal-sets": {"n_train": 240, "steps": 300, "n_test": 1000},
        "fashion-points": {"n_train": 1000, "steps": 300, "n_test": 2000}}


def _macs(dev: TorchDevice, scope: str) -> int:
    return int(sum(v for k, v in dev.ledger.total_ops(scope).items() if k.startswith("mac_")))


def simulate(profile="a100", dataset="fashion-points", seed: int = 0, quick: bool = True,
             progress: Progress | None = None, **overrides) -> RunResult:
    """FS-KAN and its parameter-matched baseline on one low-data training set of ``dataset``.

    The ledger is FS-KAN's (scopes ``train`` and ``infer``); the baseline's accuracy,
    parameters and MACs are in the metrics for comparison.
    """
    if dataset not in TASKS:
        task_action(dataset)
    size = dict((QUICK if quick else FULL)[dataset])
    size.update({k: overrides.pop(k) for k in list(overrides) if k in size})
    steps = size.pop("steps")
    r = compare(dataset, seed=seed, profile=profile, progress=progress, steps=steps,
                **size, **overrides)
    fk, base = r["fskan_device"], r["baseline_device"]
    metrics = {"test_accuracy": r["fskan_accuracy"], "test_loss": r["fskan_loss"],
               "baseline_test_accuracy": r["baseline_accuracy"],
               "accuracy_gain": r["fskan_accuracy"] - r["baseline_accuracy"],
               "parameters": float(r["fskan_parameters"]),
               "baseline_parameters": float(r["baseline_parameters"]),
               "train_macs": float(_macs(fk, "train")), "infer_macs": float(_macs(fk, "infer")),
               "baseline_train_macs": float(_macs(base, "train")),
               "train_s": r["fskan_train_s"], "baseline_train_s": r["baseline_train_s"],
               "footprint_bytes": float(fk.footprint_bytes)}
    cfg, bcfg = r["fskan_config"], r["baseline_config"]
    config = {**asdict(cfg), "widths": list(cfg.widths), "task": dataset,
              "group": task_action(dataset)[0].name, "n_train": size["n_train"],
              "n_test": size["n_test"], "baseline_widths": list(bcfg.widths),
              "baseline_inv_width": bcfg.inv_width, "torch_device": str(fk.torch_device)}
    model = r["fskan_model"]
    traces = {"train_loss": np.array([h["train_loss"] for h in model.history])}
    return RunResult("fs-kan", fk.profile, dataset, config, metrics, fk.ledger, traces)


def sweep(task: str, sizes, seeds, steps: int, n_test: int, profile="a100",
          progress: Progress | None = None, count: bool = True, **overrides) -> list[dict]:
    """:func:`compare` at every training-set size and seed: one row of plain values each.

    FS-KAN's counts accumulate in one device's ledger and the baseline's in another; the
    last row carries both devices under ``devices``.
    """
    devices = (TorchDevice(profile), TorchDevice(profile))
    rows = []
    total, done = len(sizes) * len(seeds), 0
    for n in sizes:
        for seed in seeds:
            r = compare(task, n, seed, profile=profile, n_test=n_test, devices=devices,
                        steps=steps, count=count, **overrides)
            rows.append({k: v for k, v in r.items()
                         if not k.endswith(("_device", "_model", "_config"))})
            done += 1
            if progress:
                progress(done, total, rows[-1])
    rows[-1]["devices"] = devices
    return rows


def summarize(rows: list[dict]) -> dict[int, dict[str, float]]:
    """Per training-set size: mean and std of both accuracies over seeds, and wins."""
    out = {}
    for n in sorted({r["n_train"] for r in rows}):
        fk = np.array([r["fskan_accuracy"] for r in rows if r["n_train"] == n])
        bl = np.array([r["baseline_accuracy"] for r in rows if r["n_train"] == n])
        out[n] = {"fskan_mean": float(fk.mean()), "fskan_std": float(fk.std()),
                  "baseline_mean": float(bl.mean()), "baseline_std": float(bl.std()),
                  "gain": float(fk.mean() - bl.mean()), "wins": int((fk > bl).sum()),
                  "seeds": len(fk)}
    return out


EXPERIMENT_QUICK = {"sizes": (50, 200), "seeds": (0,), "steps": 100, "n_test": 500}
# the benchmark's plan (bench/fs_kan.py): sized to fit ~15-20 min on the shared 2-core CPU
EXPERIMENT_FULL = {"signal-sets": {"sizes": (30, 120, 480), "seeds": (0, 1, 2), "steps": 150,
                                   "n_test": 1000},
                   "fashion-points": {"sizes": (50, 200, 800), "seeds": (0, 1, 2),
                                      "steps": 150, "n_test": 2000}}


def experiment(quick: bool = True, profile="a100", task: str = "fashion-points",
               progress: Progress | None = None) -> RunResult:
    """The paper's low-data claim at small scale: FS-KAN vs the parameter-matched
    parameter-sharing MLP at several training-set sizes (mean over seeds).

    Metrics ``fskan_n<N>``, ``baseline_n<N>``, ``gain_n<N>``; ledger: every FS-KAN run.
    """
    plan = EXPERIMENT_QUICK if quick else EXPERIMENT_FULL[task]
    rows = sweep(task, profile=profile, progress=progress, **plan)
    fk_dev, base_dev = rows[-1].pop("devices")
    metrics = {}
    for n, s in summarize(rows).items():
        metrics.update({f"fskan_n{n}": s["fskan_mean"], f"baseline_n{n}": s["baseline_mean"],
                        f"gain_n{n}": s["gain"]})
    metrics["baseline_train_macs"] = float(_macs(base_dev, "train"))
    config = {"task": task, **{k: list(v) if isinstance(v, tuple) else v
                               for k, v in plan.items()}}
    return RunResult("fs-kan", fk_dev.profile, task, config, metrics, fk_dev.ledger)


def export(target: str, out, *, seed: int = 0, quick: bool = True, progress=None,
           force: bool = False):
    """Train FS-KAN on signal sets (quick size) and write it as ONNX, checked by onnxruntime.

    The ONNX graph places orbit terms by plain indexing (``plain_gather``), which equals
    the embedding-bag path used for training (tests check both agree).
    """
    from sim.errors import ModelError as ExportError
    from deploy.onnx_export import export_onnx
    if target != "onnx":
        raise ModelError(f"fs-kan exports to 'onnx' only, not {target!r}")
    task = "signal-sets"
    size = QUICK[task] if quick else FULL[task]
    r = compare(task, size["n_train"], seed, profile="a100", n_test=size["n_test"],
                progress=progress, steps=size["steps"])
    net = r["fskan_model"].net.cpu().eval()
    for m in net.modules():
        if isinstance(m, FSLayer):
            m.plain_gather = True
    x = torch.as_tensor(load_task(task, 8, 8, seed + 1)[2])
    path = export_onnx(net, x[:2], out, input_names=["points"], output_names=["logits"],
                       check_inputs=x, force=force)
    return path


CARD = register(ModelCard(
    name="fs-kan",
    title="FS-KAN: permutation-equivariant Kolmogorov-Arnold networks via function sharing",
    reference="arXiv:2509.24472 (ICLR 2026)",
    claim="in the low-data regime FS-KAN beats a parameter-matched parameter-sharing MLP "
          "(DeepSets / DSS)",
    device_kinds=("gpu", "cpu"),
    datasets=TASKS,
    default_dataset="fashion-points",   # where the claim reproduces (signal sets: it does not)
    default_profile="a100",
    simulate=simulate,
    exports=("onnx",),
    export=export,
    export_dataset="signal-sets",
))
