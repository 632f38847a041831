"""The decoupled-prototypes run: joint and decoupled DINO trained from the same seed on the
same data, measured (unique prototypes every ``measure_every`` steps, usage, k-NN per
epoch) into the card's Outcome. The method (augmentations, student, online GMM, the
alternating trainer) is in ``model.py``.

Random streams, named children of ``cfg.seed`` (``sim.seeds``): ``"init"`` (the student,
``model.py``) and ``"train"`` (the mixture's start, the epoch order and the augmentations);
both variants draw the same streams, so they see the same images in the same order.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from models.decoupled_prototypes.card import EPSILONS, DecoupledPrototypesConfig
from models.decoupled_prototypes.model import (
    Student,
    Trainer,
    counted,
    knn_accuracy,
    unique_count,
    usage_entropy,
)
from models.registry import Outcome, Progress
from models.shared.checks import check_xy
from sim import seeds
from sim.traces import Trace, curve

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice


@torch.no_grad()
def features(module: Student, x: torch.Tensor, given=None, chunk: int = 1024):
    """(backbone features, prototype assignments) of ``x`` in chunks."""
    fs, assign = [], []
    protos = module.protos(given)
    was = module.training
    module.eval()                      # batch norm on running statistics, not per chunk
    for i in range(0, len(x), chunk):
        f = module.backbone(x[i:i + chunk])
        z = F.normalize(module.head(f), dim=1)
        fs.append(f)
        assign.append((z @ protos.T).argmax(1))
    module.train(was)
    return torch.cat(fs), torch.cat(assign)


def train_variant(variant: str, cfg: DecoupledPrototypesConfig, dev: TorchDevice, xt, yt, xs, ys,
                  progress: Progress | None = None) -> dict:
    """Train one variant; unique fractions every ``measure_every`` steps, k-NN per epoch."""
    n = len(xt)
    starts = list(range(0, n, cfg.batch_size))
    if len(starts) > 1 and n - starts[-1] == 1:
        # a last batch of one image: the head's batch norm in training refuses it, so the
        # batch before takes it (batch_size + 1 images); every image still trains each epoch
        starts.pop()
    ends = starts[1:] + [n]
    per_epoch = len(starts)
    tr = Trainer(cfg, variant, dev, per_epoch)
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "train"))
    hist = {"step": [], **{f"unique_eps{e}": [] for e in EPSILONS}}
    losses, knn = [], []
    if variant == "decoupled":         # seeded from K training images, so any batch size
        with counted(dev, cfg, f"train/{variant}/init"):
            tr.init_gmm(xt, gen)

    def measure():
        with counted(dev, cfg, f"{variant}/measure"):
            protos = tr.prototypes()
            hist["step"].append(tr.steps)
            for e in EPSILONS:
                hist[f"unique_eps{e}"].append(unique_count(protos, e) / cfg.prototypes)

    if variant == "joint":
        measure()                                  # step 0: the initial prototypes
    for epoch in range(cfg.epochs):
        order = torch.randperm(n, generator=gen).to(dev.torch_device)
        total = 0.0
        with counted(dev, cfg, f"train/{variant}", samples=n):
            for start, end in zip(starts, ends, strict=True):
                total += tr.step(xt[order[start:end]], gen)
                if tr.steps % cfg.measure_every == 0 or tr.steps == 1:
                    measure()
        losses.append(total / per_epoch)
        with counted(dev, cfg, f"{variant}/knn", samples=len(xs)):
            ft, _ = features(tr.teacher, xt, tr.teacher_protos())
            fs, assign = features(tr.teacher, xs, tr.teacher_protos())
            knn.append(knn_accuracy(ft, yt, fs, ys, cfg.knn_k))
        if progress:
            progress(epoch + 1, cfg.epochs, {"variant": variant, "loss": losses[-1],
                                             "knn": knn[-1]})
    measure()
    return {"hist": hist, "losses": losses, "knn": knn, "assign": assign, "trainer": tr,
            "entropy": usage_entropy(assign, cfg.prototypes)}


def run_both(cfg: DecoupledPrototypesConfig, dev: TorchDevice, data,
             progress: Progress | None = None) -> Outcome:
    """Both variants from the same seed and data; the card's Outcome."""
    check_xy(data.x_train, data.y_train, 784, 10, "decoupled_prototypes: training set")
    check_xy(data.x_test, data.y_test, 784, 10, "decoupled_prototypes: test set")
    xt = dev.tensor(data.x_train).reshape(-1, 1, 28, 28)
    xs = dev.tensor(data.x_test).reshape(-1, 1, 28, 28)
    yt = dev.tensor(data.y_train, dtype=torch.int64)
    ys = dev.tensor(data.y_test, dtype=torch.int64)
    metrics, traces, res = {}, {}, {}
    for variant in ("joint", "decoupled"):
        r = res[variant] = train_variant(variant, cfg, dev, xt, yt, xs, ys, progress)
        metrics[f"{variant}_knn_accuracy"] = r["knn"][-1]
        metrics[f"{variant}_usage_entropy"] = r["entropy"]
        metrics[f"{variant}_usage_effective"] = math.exp(r["entropy"])
        metrics[f"{variant}_final_loss"] = r["losses"][-1]
        for e in EPSILONS:
            vals = r["hist"][f"unique_eps{e}"]
            metrics[f"{variant}_unique_eps{e}"] = vals[-1]
            metrics[f"{variant}_min_unique_eps{e}"] = min(vals)
            traces[f"{variant}_unique_eps{e}"] = curve(vals)
        traces[f"{variant}_loss"] = curve(r["losses"])
        traces[f"{variant}_knn"] = curve(r["knn"])
        traces[f"{variant}_usage"] = curve(
            np.bincount(r["assign"].cpu().numpy(), minlength=cfg.prototypes).astype(float))
    metrics["knn_accuracy"] = metrics["decoupled_knn_accuracy"]
    if cfg.count:   # NeuroBench's model: the decoupled teacher (k-NN features), not all four
        dev.deploy(res["decoupled"]["trainer"].teacher)
    traces["measure_steps"] = curve(res["joint"]["hist"]["step"])
    facts = {"torch_device": str(dev.torch_device), "data_source": data.source,
             "measure_steps_decoupled": res["decoupled"]["hist"]["step"]}
    return Outcome(metrics, {k: v if isinstance(v, Trace) else curve(v)
                             for k, v in traces.items()}, None, facts)
