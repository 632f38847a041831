"""Frozen-encoder image classification with a Tversky head against a linear head.

The paper's claim at small scale: on top of a frozen encoder, a Tversky projection head
(``TverskyProjection(d, classes)``) classifies better than a linear head ``Linear(d,
classes)`` (NABirds, frozen ResNet-50: 36.0% -> 44.9%). Here: Fashion-MNIST, a frozen conv
encoder (``vision.py``: random-and-fixed by default, or trained once), both heads trained
with Adam on the same precomputed features, then evaluated end to end (encoder + head) on
the test set. A third pair of heads with data-domain prototypes is trained for the
prototype picture (``visualise``).

Ledger scopes: ``encode`` (training-set features, once), ``train/tversky``,
``train/linear`` (head training: forward, backward, Adam), ``infer`` (encoder + Tversky
head on the test set: the deployed model), ``infer_linear`` (the linear model's inference),
``visualise`` (data-domain heads).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from models.registry import ModelCard, Progress, RunResult, register
from models.shared import datasets
from models.tversky.layer import (
    DIFFERENCES,
    INTERSECTIONS,
    SIMILARITIES,
    TverskyProjection,
)
from models.tversky.vision import (
    ENCODERS,
    DataDomainPrototypes,
    PrototypeLinear,
    conv_encoder,
    plot_prototypes,
)
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

FASHION_CLASSES = ("T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                   "Sneaker", "Bag", "Boot")


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
        for name in ("width", "bank_size", "train", "test", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ModelError(f"TverskyHeadConfig.{name} = {getattr(self, name)}: must be >= 1")
        if self.init_scale < 0:
            raise ModelError(f"TverskyHeadConfig.init_scale = {self.init_scale}: must be >= 0 "
                             "(0 picks 1/sqrt(d))")
        if not self.lr > 0:
            raise ModelError(f"TverskyHeadConfig.lr = {self.lr}: must be > 0")


def make_head(kind: str, d: int, classes: int, cfg: TverskyHeadConfig, prototypes=None):
    """``tversky`` or ``linear`` head of width d -> classes (seeded)."""
    if kind == "tversky":
        return TverskyProjection(d, classes, cfg.bank_size, prototypes=prototypes,
                                 similarity=cfg.similarity, intersection_reduction=cfg.intersection,
                                 difference_reduction=cfg.difference, seed=cfg.seed,
                                 init_scale=cfg.init_scale or d ** -0.5)
    if kind == "linear":
        if prototypes is not None:
            return PrototypeLinear(prototypes, classes)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            return nn.Linear(d, classes)
    raise ModelError(f"head kind {kind!r}: must be 'tversky' or 'linear'")


def _check_xy(x: np.ndarray, y: np.ndarray | None, what: str):
    if x.ndim != 2 or x.shape[1] != 784:
        raise ModelError(f"{what}: x has shape {x.shape}, expected (N, 784) Fashion-MNIST pixels")
    if y is not None and y.shape != (x.shape[0],):
        raise ModelError(f"{what}: y has shape {y.shape}, expected ({x.shape[0]},) to match x")


def train_encoder(encoder: nn.Sequential, xt, yt, cfg: TverskyHeadConfig, dev: TorchDevice):
    """``trained`` encoder: ``encoder_epochs`` of Adam with a linear probe, then frozen."""
    probe = make_head("linear", encoder[-1].mean.numel(), 10, cfg)
    net = dev.compile(nn.Sequential(encoder, probe))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    with dev.count("train/encoder", samples=len(xt) * cfg.encoder_epochs):
        for _ in range(cfg.encoder_epochs):
            order = torch.randperm(len(xt), generator=gen).to(dev.torch_device)
            for start in range(0, len(xt), cfg.batch_size):
                idx = order[start:start + cfg.batch_size]
                loss = nn.functional.cross_entropy(net(xt[idx]), yt[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()


@torch.no_grad()
def encode(module: nn.Module, x: torch.Tensor, chunk: int = 2048) -> torch.Tensor:
    """``module(x)`` in chunks: whole-set conv activations would take GBs at 60k images."""
    return torch.cat([module(x[i:i + chunk]) for i in range(0, len(x), chunk)])


def build_encoder(xt, yt, cfg: TverskyHeadConfig, dev: TorchDevice) -> nn.Sequential:
    """The frozen encoder, its standardisation fitted on the training features."""
    enc = dev.compile(conv_encoder(cfg.seed, cfg.width))
    if cfg.encoder == "trained":
        enc[-1].fit(encode(enc[:-1], xt))  # standardise first: the probe starts centred
        train_encoder(enc, xt, yt, cfg, dev)
    for p in enc.parameters():
        p.requires_grad_(False)
    enc.eval()
    with torch.no_grad():
        enc[-1].mean.zero_()
        enc[-1].inv_std.fill_(1.0)
    enc[-1].fit(encode(enc, xt))
    return enc


def train_head(head: nn.Module, feats, yt, cfg: TverskyHeadConfig, dev: TorchDevice, scope: str,
               progress: Progress | None = None, epochs: int | None = None) -> list[float]:
    """Adam on cross-entropy of ``head(feats)``; counted under ``scope``. Returns losses."""
    epochs = epochs or cfg.epochs
    opt = torch.optim.Adam([p for p in head.parameters() if p.requires_grad], lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    losses = []
    for epoch in range(epochs):
        order = torch.randperm(len(feats), generator=gen).to(dev.torch_device)
        total = 0.0
        with dev.count(scope, samples=len(feats)):
            for start in range(0, len(feats), cfg.batch_size):
                idx = order[start:start + cfg.batch_size]
                loss = nn.functional.cross_entropy(head(feats[idx]), yt[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
        losses.append(total / len(feats))
        if progress:
            progress(epoch + 1, epochs, {"head": scope, "train_loss": losses[-1]})
    return losses


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    return float((logits.argmax(1) == y).float().mean())


def run_heads(data, cfg: TverskyHeadConfig, dev: TorchDevice, progress: Progress | None = None):
    """Encode, train both heads (and the data-domain pair), evaluate; returns everything."""
    _check_xy(data.x_train, data.y_train, "tversky heads: training set")
    _check_xy(data.x_test, data.y_test, "tversky heads: test set")
    xt, yt = dev.tensor(data.x_train), dev.tensor(data.y_train, dtype=torch.int64)
    xs, ys = dev.tensor(data.x_test), dev.tensor(data.y_test, dtype=torch.int64)
    enc = build_encoder(xt, yt, cfg, dev)
    with dev.count("encode", samples=len(xt)):
        feats = encode(enc, xt)                                   # (N, d)
    d = feats.shape[1]
    out = {"encoder": enc, "d": d, "heads": {}, "losses": {}, "metrics": {}}
    for kind in ("tversky", "linear"):
        head = dev.compile(make_head(kind, d, 10, cfg))
        out["losses"][kind] = train_head(head, feats, yt, cfg, dev, f"train/{kind}", progress)
        model = nn.Sequential(enc, head).eval()                  # the deployed classifier
        logits = dev.run(model, xs, scope="infer" if kind == "tversky" else "infer_linear")
        out["heads"][kind] = head
        out["metrics"][f"{kind}_test_accuracy"] = accuracy(logits, ys)
        out["metrics"][f"{kind}_head_parameters"] = float(sum(p.numel() for p in head.parameters()))
    if cfg.visualise:
        out["prototype_images"] = {}
        for kind in ("tversky", "linear"):
            acc, imgs = visualise(kind, out["heads"][kind], enc, feats, yt, xt, fs_ys=(xs, ys),
                                  cfg=cfg, dev=dev)
            out["metrics"][f"{kind}_data_domain_test_accuracy"] = acc
            out["prototype_images"][kind] = imgs
    return out


def visualise(kind: str, head: nn.Module, enc, feats, yt, xt, fs_ys, cfg, dev):
    """Data-domain prototypes for a trained head: pictures whose encodings act as its prototypes.

    Tversky: the trained head's bank, theta, alpha, beta are kept (frozen) and only the
    pictures ``z`` train; learning bank and pictures together from scratch collapsed every
    time we tried (all prototypes lose all bank features, after which the layer has no
    gradient). Linear: weight rows ``g(sigmoid(z))`` and a bias train from scratch.
    Returns (test accuracy with the data-domain prototypes, the change training made to
    each picture, (10, 28, 28) in [-1, 1]).
    """
    protos = DataDomainPrototypes(enc, 10, cfg.seed, xt).to(dev.torch_device)
    if kind == "tversky":
        dd = TverskyProjection(head.in_features, 10, feature_bank=head.feature_bank,
                               prototypes=protos)
        for name in ("theta", "alpha", "beta"):
            getattr(dd, name).data.copy_(getattr(head, name).data)
        frozen = [dd.feature_bank, dd.theta, dd.alpha, dd.beta]
    else:
        dd, frozen = PrototypeLinear(protos, 10), []
    was = [p.requires_grad for p in frozen]
    for p in frozen:
        p.requires_grad_(False)
    # pictures live behind a sigmoid and a frozen encoder: a 10x larger step than the heads'
    vis = TverskyHeadConfig(**{**asdict(cfg), "lr": 10 * cfg.lr, "epochs": max(1, cfg.epochs // 2)})
    train_head(dev.compile(dd), feats, yt, vis, dev, f"visualise/{kind}")
    for p, w in zip(frozen, was):
        p.requires_grad_(w)
    xs, ys = fs_ys
    with torch.no_grad(), dev.count(f"visualise/{kind}/infer", samples=len(xs)):
        acc = accuracy(dd(enc(xs)), ys)
        imgs = (protos.images() - protos.start).cpu().numpy()   # learned change, (10, 28, 28)
    return acc, imgs


def simulate(profile="a100", dataset="fashion-mnist", seed: int = 0, quick: bool = True,
             progress: Progress | None = None, **overrides) -> RunResult:
    """Tversky vs linear head on a frozen encoder; ``quick=False``: 60k/10k images, 10 epochs."""
    if dataset not in ("fashion-mnist", "fashion_mnist"):
        raise ModelError(f"tversky: dataset {dataset!r}: only 'fashion-mnist' is supported")
    size = {} if quick else {"train": 60000, "test": 10000, "epochs": 10}
    cfg = TverskyHeadConfig(seed=seed, **{**size, **overrides})
    data = datasets.fashion_mnist(limit_train=cfg.train, limit_test=cfg.test)
    dev = TorchDevice(profile)
    res = run_heads(data, cfg, dev, progress)
    m = res["metrics"]
    m["test_accuracy"] = m["tversky_test_accuracy"]
    m["accuracy_gain_vs_linear"] = m["tversky_test_accuracy"] - m["linear_test_accuracy"]
    m["footprint_bytes"] = float(dev.footprint_bytes)
    tv = res["heads"]["tversky"]
    for name in ("alpha", "beta", "theta"):                     # learned contrast weights
        m[name] = float(getattr(tv, name).detach())
    config = {**asdict(cfg), "feature_dim": res["d"], "torch_device": str(dev.torch_device)}
    traces = {f"{k}_train_loss": np.array(v) for k, v in res["losses"].items()}
    for kind, imgs in res.get("prototype_images", {}).items():
        traces[f"{kind}_prototypes"] = imgs                       # (10, 28, 28) changes
    return RunResult("tversky", dev.profile, data.name, config, m, dev.ledger, traces)


def prototype_figure(result: RunResult):
    """The data-domain prototype pictures of a run (Tversky row, linear row) as a Figure."""
    rows = {k: result.traces[f"{k}_prototypes"] for k in ("tversky", "linear")
            if f"{k}_prototypes" in result.traces}
    return plot_prototypes(rows, FASHION_CLASSES, "data-domain prototypes: change from their "
                           "start (mean training image), frozen encoder")


def experiment(quick: bool = True, profile="a100", seed: int = 0) -> RunResult:
    """Frozen-encoder claim at small scale: the Tversky head vs the linear head, same features."""
    return simulate(profile=profile, seed=seed, quick=quick)


def export(target: str, out, *, seed: int = 0, quick: bool = True, progress=None,
           force: bool = False, **overrides):
    """Train the quick encoder + Tversky head and write it as ONNX, checked by onnxruntime.

    The exported graph maps pixels (N, 784) to similarities (N, 10) to the class prototypes.
    """
    from deploy.onnx_export import export_onnx  # deploy imports models, not back
    if target != "onnx":
        raise ModelError(f"tversky export: target {target!r}: only 'onnx' is supported")
    size = {} if quick else {"train": 60000}
    cfg = TverskyHeadConfig(seed=seed, **{**size, "visualise": False, **overrides})
    data = datasets.fashion_mnist(limit_train=cfg.train, limit_test=256)
    dev = TorchDevice("a100")
    res = run_heads(data, cfg, dev, progress)
    model = nn.Sequential(res["encoder"], res["heads"]["tversky"]).cpu().eval()
    x = torch.as_tensor(data.x_test)
    return export_onnx(model, x[:8], out, input_names=["pixels"], output_names=["similarity"],
                       check_inputs=x, force=force)


CARD = register(ModelCard(
    name="tversky",
    title="Tversky Neural Networks: differentiable Tversky similarity and projection layers",
    reference="Doumbouya, Jurafsky & Manning, ICLR 2026, arXiv:2506.11035",
    claim="a Tversky projection head on a frozen encoder beats a linear head "
          "(NABirds/ResNet-50: 36.0% -> 44.9%); one Tversky layer fits XOR",
    device_kinds=("gpu", "cpu"),
    datasets=("fashion-mnist",),
    default_dataset="fashion-mnist",
    default_profile="a100",
    simulate=simulate,
    exports=("onnx",),
    export=export,
    export_dataset="fashion-mnist",
))
