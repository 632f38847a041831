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

from dataclasses import asdict

import numpy as np
import torch
from torch import nn

from models.registry import Progress, Trained
from models.shared.checks import check_xy
from models.shared.training import seeded
from models.tversky.card import TverskyHeadConfig
from models.tversky.layer import TverskyProjection
from models.tversky.vision import (
    DataDomainPrototypes,
    PrototypeLinear,
    conv_encoder,
    plot_prototypes,
)
from sim import seeds
from sim.artifacts import TorchArtifact
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

FASHION_CLASSES = ("T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                   "Sneaker", "Bag", "Boot")


def make_head(kind: str, d: int, classes: int, cfg: TverskyHeadConfig, prototypes=None):
    """``tversky`` or ``linear`` head of width d -> classes (seeded)."""
    if kind == "tversky":
        return TverskyProjection(d, classes, cfg.bank_size, prototypes=prototypes,
                                 similarity=cfg.similarity, intersection_reduction=cfg.intersection,
                                 difference_reduction=cfg.difference,
                                 seed=seeds.child(cfg.seed, "head", "init"),
                                 init_scale=cfg.init_scale or d ** -0.5)
    if kind == "linear":
        if prototypes is not None:
            return PrototypeLinear(prototypes, classes)
        with seeded(seeds.child(cfg.seed, "head", "init")):
            return nn.Linear(d, classes)
    raise ModelError(f"head kind {kind!r}: must be 'tversky' or 'linear'")


def train_encoder(encoder: nn.Sequential, xt, yt, cfg: TverskyHeadConfig, dev: TorchDevice):
    """``trained`` encoder: ``encoder_epochs`` of Adam with a linear probe, then frozen."""
    probe = make_head("linear", encoder[-1].mean.numel(), 10, cfg)
    net = dev.compile(nn.Sequential(encoder, probe))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "encoder", "order"))
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
    enc = dev.compile(conv_encoder(seeds.child(cfg.seed, "encoder", "init"), cfg.width))
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


def train_head(head: nn.Module, feats, yt, cfg: TverskyHeadConfig, dev: TorchDevice,
               scope: str, progress: Progress | None = None,
               epochs: int | None = None) -> list[float]:
    """Adam on cross-entropy of ``head(feats)``; counted under ``scope``. Returns losses."""
    epochs = epochs or cfg.epochs
    opt = torch.optim.Adam([p for p in head.parameters() if p.requires_grad], lr=cfg.lr)
    # the same order for every head trained on ``cfg`` (the comparison's heads see one order)
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "head", "order"))
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
    check_xy(data.x_train, data.y_train, 784, 10, "tversky heads: training set")
    check_xy(data.x_test, data.y_test, 784, 10, "tversky heads: test set")
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
        if kind == "tversky":   # NeuroBench's model: this classifier, not the linear one
            dev.deploy(model)
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


def visualise(kind: str, head: nn.Module, enc, feats, yt, xt, fs_ys, cfg,
              dev: TorchDevice):
    """Data-domain prototypes for a trained head: pictures whose encodings act as its prototypes.

    Tversky: the trained head's bank, theta, alpha, beta are kept (frozen) and only the
    pictures ``z`` train; learning bank and pictures together from scratch collapsed every
    time we tried (all prototypes lose all bank features, after which the layer has no
    gradient). Linear: weight rows ``g(sigmoid(z))`` and a bias train from scratch.
    Returns (test accuracy with the data-domain prototypes, the change training made to
    each picture, (10, 28, 28) in [-1, 1]).
    """
    protos = DataDomainPrototypes(enc, 10, seeds.child(cfg.seed, "prototypes", "init"),
                                  xt).to(dev.torch_device)
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
    vis = TverskyHeadConfig(**{**asdict(cfg), "lr": 10 * cfg.lr,
                               "epochs": max(1, cfg.epochs // 2)})
    train_head(dev.compile(dd), feats, yt, vis, dev, f"visualise/{kind}")
    for p, w in zip(frozen, was, strict=True):
        p.requires_grad_(w)
    xs, ys = fs_ys
    with torch.no_grad(), dev.count(f"visualise/{kind}/infer", samples=len(xs)):
        acc = accuracy(dd(enc(xs)), ys)
        imgs = (protos.images() - protos.start).cpu().numpy()   # learned change, (10, 28, 28)
    return acc, imgs


def prototype_figure(result):
    """The data-domain prototype pictures of a run (Tversky row, linear row) as a Figure."""
    rows = {k: np.asarray(result.traces[f"{k}_prototypes"].data) for k in ("tversky", "linear")
            if f"{k}_prototypes" in result.traces}
    return plot_prototypes(rows, FASHION_CLASSES, "data-domain prototypes: change from their "
                           "start (mean training image), frozen encoder")


# --- the deployed model as plain data, and back (exports never retrain) -------------------
ARCHITECTURE = ("width", "bank_size", "similarity", "intersection", "difference", "init_scale")
"""The config fields that shape encoder + Tversky head (the rest only steer training)."""


def trained(res: dict, cfg: TverskyHeadConfig, example_x: np.ndarray) -> Trained:
    """Encoder (with its standardisation) and Tversky head weights of a :func:`run_heads` result."""
    arrays = {f"encoder/{k}": v.detach().cpu().numpy()
              for k, v in res["encoder"].state_dict().items()}
    arrays.update({f"head/{k}": v.detach().cpu().numpy()
                   for k, v in res["heads"]["tversky"].state_dict().items()})
    arrays["example_x"] = np.asarray(example_x, dtype=np.float32)
    meta = {"architecture": {k: getattr(cfg, k) for k in ARCHITECTURE}, "feature_dim": res["d"],
            "classes": 10}
    return Trained(arrays, meta)


def rebuild(trained_: Trained) -> nn.Sequential:
    """``Sequential(encoder, Tversky head)`` from its arrays, eval mode, CPU (no training)."""
    arch, d = trained_.meta["architecture"], int(trained_.meta["feature_dim"])
    cfg = TverskyHeadConfig(**arch)
    enc = conv_encoder(0, cfg.width)       # the init is overwritten by the state below
    head = make_head("tversky", d, int(trained_.meta["classes"]), cfg)
    for prefix, module in (("encoder/", enc), ("head/", head)):
        module.load_state_dict({k.removeprefix(prefix): torch.as_tensor(v)
                                for k, v in trained_.arrays.items() if k.startswith(prefix)})
    return nn.Sequential(enc, head).eval()


def torch_artifact(trained_: Trained) -> TorchArtifact:
    """The deployed classifier for the ONNX exporter: pixels (N, 784) -> similarities (N, 10)."""
    x = torch.as_tensor(trained_.arrays["example_x"])
    return TorchArtifact(rebuild(trained_), x[:8], input_names=("pixels",),
                         output_names=("similarity",), check_inputs=x)
