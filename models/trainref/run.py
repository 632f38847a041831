"""TrainRef's run (ICLR 2026, Sec. 3-5): one noise setting end to end, on a TorchDevice.

Split, pre-train (``model.pretrain``) or reuse an encoder, the baselines (CE, label
smoothing, CE + temperature scaling), TrainRef's phases II-III with soft labels and the
hard-relabel variant on the same D*_ref. The method's parts are in ``model.py``.

Random streams, each a named child of ``cfg.seed`` (``sim.seeds``): ``"split"`` and
``"noise"`` (``data.split``), ``("init", ...)`` and ``("pretrain", ...)`` (``model.py``),
``("init", "head")`` (one head start for every classifier: the baselines and TrainRef are a
paired comparison), ``("baseline", "order")`` (CE and label smoothing), ``("augment",
"order")`` and ``("finetune", <round>)``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch.nn import functional as F

from models.trainref.model import (
    Classifier,
    evaluate,
    features,
    fit,
    fit_temperature,
    influence,
    pretrain,
    probe_checkpoints,
    select,
    sharpen_finite,
    vote,
)
from sim import seeds

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice


def to_device(sp, dev: TorchDevice) -> dict:
    """The split's arrays as device tensors (labels int64)."""
    out = {}
    for k, v in vars(sp).items():
        if isinstance(v, np.ndarray):
            out[k] = dev.tensor(v, dtype=torch.int64 if k.startswith("y") else torch.float32)
    return out


def trainref(enc, s, cfg, dev: TorchDevice, keep=None, prefix: str = "",
             oracle: bool = False) -> dict:
    """Phases II and III on the split ``s`` (``to_device``) from encoder ``enc``; given
    ``keep`` (the soft run's D*_ref), the hard-relabel variant on the same D*_ref.

    ``oracle``: a diagnostic, not the method: D*_ref keeps its selected images but with
    their *true* labels, so phase III's relabelling is measured without selection errors.
    """
    hard = keep is not None
    classes = 10
    res = {}
    h_pool = features(enc, s["x_pool"])
    mu = h_pool.mean(0)                     # centred: see the module docstring (phase III)
    h_ref, h_pool = features(enc, s["x_ref"]) - mu, h_pool - mu
    if not hard:
        heads = probe_checkpoints(h_ref, s["y_ref"], cfg, dev)
        with dev.count("influence", samples=len(h_pool)):
            y_c = F.one_hot(s["y_noisy"], classes).float()
            y_r = F.one_hot(s["y_ref"], classes).float()
            scores = torch.zeros(len(h_pool), device=h_pool.device)
            for i in range(0, len(h_pool), 8192):
                inf = influence(h_pool[i:i + 8192], y_c[i:i + 8192], h_ref, y_r, heads)
                same = y_c[i:i + 8192] @ y_r.T                    # 1 where classes match
                scores[i:i + 8192] = (inf * same).sum(1) / same.sum(1).clamp_min(1)
            keep, _ = select(scores, s["y_noisy"], cfg.delta_if)
        res["keep"] = keep
    keep = keep if hard else res["keep"]
    sel_true = s["y_true"][keep] == s["y_noisy"][keep]
    res["dstar_size"] = int(keep.sum())
    res["dstar_precision"] = float(sel_true.float().mean()) if keep.any() else 0.0
    x_aug = torch.cat([s["x_ref"], s["x_pool"][keep]])
    y_aug = torch.cat([s["y_ref"], (s["y_true"] if oracle else s["y_noisy"])[keep]])
    model = dev.compile(Classifier(enc, cfg.dim, classes, seeds.child(cfg.seed, "init", "head")))
    fit(model, x_aug, y_aug, cfg, dev, f"{prefix}augment", cfg.aug_epochs,
        seed=seeds.child(cfg.seed, "augment", "order"))
    res["after_augment"] = evaluate(model, s, dev, f"{prefix}augment")
    for rnd in range(1, cfg.rounds + 1):
        with dev.count(f"{prefix}vote/round{rnd}", samples=len(s["x_pool"])):
            model.eval()
            f_all = features(model.enc, torch.cat([x_aug, s["x_pool"]]))
            model.train()
            mu = f_all[len(x_aug):].mean(0)
            f_x, f_r = f_all[len(x_aug):] - mu, f_all[:len(x_aug)] - mu
            soft = vote(f_x, f_r, y_aug, cfg.k, cfg.quantile, cfg.sharpen, pool=cfg.pool,
                        relevance=cfg.relevance)
        soft = sharpen_finite(soft, f_x, f_r, y_aug, cfg, dev, f"{prefix}vote/round{rnd}/log")
        if hard:
            soft = F.one_hot(soft.argmax(1), classes).float()
        res[f"relabel_accuracy_round{rnd}"] = float((soft.argmax(1) == s["y_true"]).float().mean())
        x_ft = torch.cat([s["x_ref"], s["x_pool"]])
        y_ft = torch.cat([F.one_hot(s["y_ref"], classes).float(), soft])
        fit(model, x_ft, y_ft, cfg, dev, f"{prefix}finetune/round{rnd}", cfg.ft_epochs,
            seed=seeds.child(cfg.seed, "finetune", rnd))
    res["model"] = model
    res["test"] = evaluate(model, s, dev, f"{prefix}trainref")
    model.eval()
    t = fit_temperature(dev.run(model, s["x_val"], scope=f"infer/{prefix}val"), s["y_val"], dev)
    model.train()
    res["temperature"] = t
    res["test_ts"] = evaluate(model, s, dev, f"{prefix}trainref_ts", t)
    return res


def baselines(enc, s, cfg, dev: TorchDevice) -> dict:
    """CE (to the end of ``ce_epochs``), label smoothing 0.1, CE + temperature scaling."""
    out = {}
    for name, smooth in (("ce", 0.0), ("label_smoothing", 0.1)):
        model = dev.compile(Classifier(enc, cfg.dim, 10, seeds.child(cfg.seed, "init", "head")))
        fit(model, s["x_pool"], s["y_noisy"], cfg, dev, name, cfg.ce_epochs, smoothing=smooth,
            seed=seeds.child(cfg.seed, "baseline", "order"))
        out[name] = evaluate(model, s, dev, name)
        if name == "ce":
            model.eval()
            t = fit_temperature(dev.run(model, s["x_val"], scope="infer/val"), s["y_val"], dev)
            out["ce_ts"] = evaluate(model, s, dev, "ce_ts", t)
            out["ce_ts"]["temperature"] = t
    return out


def run_all(data, cfg, dev: TorchDevice, enc=None, progress=None, oracle: bool = False) -> dict:
    """One setting: split, pre-train (or reuse ``enc``), baselines, TrainRef soft and hard
    (``oracle``: the diagnostic of :func:`trainref`, D*_ref with its true labels)."""
    from models.trainref.data import split
    sp = split(data.x_train, data.y_train, data.x_test, data.y_test, cfg.refs_per_class,
               cfg.val, cfg.noise, cfg.noise_rate, cfg.seed, data.source)
    s = to_device(sp, dev)
    if enc is None:
        enc = pretrain(torch.cat([s["x_ref"], s["x_val"], s["x_pool"]]), cfg, dev)
    for p in enc.parameters():
        p.requires_grad_(True)
    if progress:
        progress(1, 4, {"phase": "pretrained"})
    base = baselines(enc, s, cfg, dev)
    if progress:
        progress(2, 4, {"phase": "baselines"})
    soft = trainref(enc, s, cfg, dev, oracle=oracle)
    if progress:
        progress(3, 4, {"phase": "trainref"})
    hard = trainref(enc, s, cfg, dev, keep=soft["keep"], prefix="hard/", oracle=oracle)
    if progress:
        progress(4, 4, {"phase": "hard relabel"})
    return {"split": sp, "enc": enc, "base": base, "soft": soft, "hard": hard}


def metrics_of(r) -> dict:
    b, so, ha = r["base"], r["soft"], r["hard"]
    m = {"realised_noise": r["split"].realised_noise}
    for name in ("ce", "label_smoothing", "ce_ts"):
        m[f"{name}_accuracy"], m[f"{name}_ece"] = b[name]["accuracy"], b[name]["ece"]
    m["trainref_accuracy"], m["trainref_ece"] = so["test"]["accuracy"], so["test"]["ece"]
    ts = so["test_ts"]
    m["trainref_ts_accuracy"], m["trainref_ts_ece"] = ts["accuracy"], ts["ece"]
    m["hard_accuracy"], m["hard_ece"] = ha["test"]["accuracy"], ha["test"]["ece"]
    m["augment_accuracy"] = so["after_augment"]["accuracy"]
    m["dstar_size"], m["dstar_precision"] = so["dstar_size"], so["dstar_precision"]
    for k, v in so.items():
        if k.startswith("relabel_accuracy"):
            m[k] = v
    m["test_accuracy"] = m["trainref_accuracy"]
    return m
