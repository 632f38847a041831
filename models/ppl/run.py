"""PPL's run: build the model, train it on the procedural figures, evaluate it, counted
on a TorchDevice (the parts are in ``model.py``; Wang, Han & Zhang, ICLR 2026, Sec. 3-4).

Random streams, each a named child of ``cfg.seed`` (``sim.seeds``): ``init`` (``model.py``),
``("train", "masks")``, ``("train", "order")`` and ``("train", "restarts")`` (block masks;
batches and flips; the memory's dead-code restarts, ``model.py``),
``"occlusion"`` (RandomMasking's blocks) and ``("infer", "masks")`` (the iterative pass's
block masks).

Ledger scopes: ``train`` (the first ``counted_steps`` Adam steps on reconstruction +
boundary + memory + commitment losses; every step runs the same ops), ``infer/test`` (one
pass over the test split), ``infer/iterative`` (iterative inference on occluded test
images). The pass over the training split that fits the metrics' regression map is not
counted.
"""
from __future__ import annotations

import dataclasses
from contextlib import nullcontext
from typing import TYPE_CHECKING

import numpy as np
import torch

from models.ppl import data as figs
from models.ppl import metrics as M
from models.ppl.model import PPL, block_mask, parameters, thick_for
from sim import seeds

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice


def occlude(images: np.ndarray, kind: str, seed: int) -> np.ndarray:
    """CenterMasking (zero the central 25% of the area) or RandomMasking (zero 30% of the
    8 x 8 blocks, drawn from ``seed``), the paper's two occlusions (App. Figs. A4/A5)."""
    x = images.copy()
    size = x.shape[-1]
    if kind == "center":
        a, b = size // 4, size - size // 4
        x[..., a:b, a:b] = 0
    else:
        rng = np.random.default_rng(seed)
        nb = size // 8
        drop = rng.random((len(x), nb, nb)) < 0.3
        x *= 1 - np.kron(drop, np.ones((8, 8)))[:, None]
    return x


def references(model: PPL, img: torch.Tensor, pair: torch.Tensor, gen) -> torch.Tensor:
    """I_ref: the block-masked image itself (the release) or the pair image (another
    'frame' of the same figure, the paper's H36M/Taichi setting)."""
    cfg = model.cfg
    if cfg.reference == "pair":
        return pair
    return img * block_mask(len(img), img.shape[-1], cfg.mask_blocks, cfg.missing, gen,
                            img.device)


def fit(model: PPL, tr: figs.Figures, cfg, dev: TorchDevice, progress=None) -> list[float]:
    """Adam on the summed losses; the memory's EMA codebook follows each batch."""
    links = [model.prior.s]
    rest = [p for p in model.parameters() if p.requires_grad and p is not model.prior.s]
    opt = torch.optim.Adam([{"params": rest}, {"params": links, "lr": cfg.link_lr}], lr=cfg.lr)
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "train", "masks"))
    rng = seeds.rng(cfg.seed, "train", "order")
    x_all = torch.as_tensor(tr.images)
    r_all = torch.as_tensor(tr.refs)
    losses = []
    model.train()
    for step in range(cfg.steps):
        # the ledger counts the first ``counted_steps`` steps (every step is the same ops;
        # counting costs a Python call per aten op, ~30x a step here); the rest run plain
        counted = cfg.count and step < cfg.counted_steps
        scope = dev.count("train", samples=cfg.batch_size) if counted else nullcontext()
        with scope:
            idx = torch.as_tensor(rng.integers(0, len(x_all), cfg.batch_size))
            img, pair = x_all[idx].to(dev.torch_device), r_all[idx].to(dev.torch_device)
            if rng.random() < 0.5:                                   # random horizontal flip
                img, pair = img.flip(-1), pair.flip(-1)
            parts = model.losses(img, references(model, img, pair, gen))
            loss = sum(parts.values())
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        if progress is not None and (step + 1) % 10 == 0:
            progress(step + 1, cfg.steps, {"loss": losses[-1]})
    return losses


@torch.no_grad()
def detect(model: PPL, images: np.ndarray, dev: TorchDevice, scope: str | None, chunk: int = 256):
    """One regressor pass and the memory's reconstruction: (T', T'_rec, codes) as numpy.
    ``scope`` None: not counted (the metrics' own passes)."""
    model.eval()
    raw, mem, codes = [], [], []
    with dev.count(scope, samples=len(images)) if scope and model.cfg.count else nullcontext():
        for s in range(0, len(images), chunk):
            x = torch.as_tensor(images[s:s + chunk]).to(dev.torch_device)
            pts, _ = model.regressor(x, model.template())
            raw.append(pts.cpu())
            if model.memory is not None:
                rec, _, idx = model.memory(pts)
                mem.append(rec.cpu())
                codes.append(idx.cpu())
    raw = torch.cat(raw).numpy()
    return raw, (torch.cat(mem).numpy() if mem else raw), \
        (torch.cat(codes) if codes else None)


@torch.no_grad()
def iterative(model: PPL, images: np.ndarray, dev: TorchDevice, steps: int, seed: int,
              chunk: int = 256):
    """Iterative inference on ``images`` (the test-time reading of Sec. 3.4): per
    iteration, regressed and memory poses (steps, n, N, 2). I_ref is what training fed the
    UNet: the block-masked image (``masked_self``), or, for a model trained on pairs, the
    (occluded) image itself, the only frame at hand."""
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    raw, mem = [], []
    with dev.count("infer/iterative", samples=len(images) * steps) if model.cfg.count \
            else nullcontext():
        for s in range(0, len(images), chunk):
            x = torch.as_tensor(images[s:s + chunk]).to(dev.torch_device)
            ref = x if model.cfg.reference == "pair" else x * block_mask(
                len(x), x.shape[-1], model.cfg.mask_blocks, model.cfg.missing, gen, x.device)
            r, m = model.iterate(x, ref, steps)
            raw.append(r.cpu())
            mem.append(m.cpu())
    return torch.cat(raw, 1).numpy(), torch.cat(mem, 1).numpy()


def evaluate(model: PPL, tr: figs.Figures, te: figs.Figures, cfg, dev: TorchDevice,
             template0: np.ndarray) -> dict:
    """Every metric of the digest's checks a-e on the test split (GT used only here)."""
    # the pass over the training split only fits the metrics' regression map: not counted
    raw_tr, mem_tr, _ = detect(model, tr.images, dev, None)
    raw_te, mem_te, codes = detect(model, te.images, dev, "infer/test")
    err, coef = M.regression_error(raw_tr, tr.joints, raw_te, te.joints)
    out = {"keypoint_error": err,
           "matching_error": M.matching_error(raw_tr, tr.joints, raw_te, te.joints)}
    mean_gt = tr.joints.mean(0)
    tpl = model.template().cpu().numpy()
    out["template_procrustes"] = M.procrustes(M.apply_regression(coef, tpl)[0], mean_gt)
    out["template_procrustes_init"] = M.procrustes(M.apply_regression(coef, template0)[0],
                                                   mean_gt)
    w = model.prior.weights().detach().cpu().numpy()
    out["link_recall"] = M.link_recall(w, M.nearest_joint(raw_tr, tr.joints), figs.EDGES)
    if model.memory is not None:
        out["memory_gap"] = float(np.linalg.norm(mem_te - raw_te, axis=-1).mean())
        out["min_bank_perplexity"] = float(model.memory.perplexity(codes).min())
        out["memory_keypoint_error"] = M.l2_error(M.apply_regression(coef, mem_te), te.joints)
    # occlusion and iteration (check d): errors of the one-pass regression and of each
    # iteration's memory pose, through the clean-image regression map
    protos = np.stack([raw_tr[tr.family == f].mean(0) for f in range(len(figs.FAMILIES))
                       if (tr.family == f).any()])
    n_occ = min(cfg.occluded, len(te.images))
    occ = occlude(te.images[:n_occ], cfg.occlusion, seeds.child(cfg.seed, "occlusion"))
    r_it, m_it = iterative(model, occ, dev, cfg.iterations,
                           seeds.child(cfg.seed, "infer", "masks"))
    gt = te.joints[:n_occ]
    out["occluded_one_pass_error"] = M.l2_error(M.apply_regression(coef, r_it[0]), gt)
    out["clean_error_same_images"] = M.l2_error(M.apply_regression(coef, raw_te[:n_occ]), gt)
    per_iter = [M.l2_error(M.apply_regression(coef, m), gt) for m in m_it]
    # the regressor's pose at the last iteration (on the reconstruction), the other reading
    raw_iter = [M.l2_error(M.apply_regression(coef, r), gt) for r in r_it]
    out["occluded_iterative_raw_error"] = raw_iter[-1]
    # distance to the nearest family prototype: the one-pass pose, then each iteration's
    # memory pose (check d wants it to shrink at every iteration)
    dist = [float(np.linalg.norm(m[:, None] - protos[None], axis=-1).mean(-1).min(1).mean())
            for m in (r_it[0], *m_it)]
    out["prototype_distance_shrinks"] = float(all(b < a for a, b in zip(dist, dist[1:],
                                                                        strict=False)))
    out["occluded_iterative_error"] = per_iter[-1]
    out["iteration_gain"] = out["occluded_iterative_error"] / out["occluded_one_pass_error"]
    out["mean_pose_error"] = M.l2_error(np.broadcast_to(mean_gt, te.joints.shape), te.joints)
    show = min(8, n_occ)
    return {"metrics": out, "per_iteration_error": per_iter, "prototype_distance": dist,
            "per_iteration_raw_error": raw_iter, "detections": raw_te, "coef": coef,
            "joints_pred": M.apply_regression(coef, raw_te),
            "occluded": occ[:show], "occluded_one_pass": M.apply_regression(coef, r_it[0, :show]),
            "occluded_iterated": M.apply_regression(coef, m_it[-1, :show])}


def run(cfg, dev: TorchDevice, data: figs.FigureData, progress=None) -> dict:
    """One PPL run: build the model on ``dev``, train it on ``data.train`` (images only),
    evaluate it on ``data.test`` with the GT joints (:func:`evaluate`'s dict), plus
    ``cfg`` (``thick`` filled in), ``model``, ``template0`` (the template before training)
    and ``losses``. The metrics gain ``parameters`` and ``final_loss``."""
    if not cfg.thick:
        cfg = dataclasses.replace(cfg, thick=thick_for(cfg.size))
    model = PPL(cfg).to(dev.torch_device)
    template0 = model.template().cpu().numpy()
    losses = fit(model, data.train, cfg, dev, progress)
    res = evaluate(model, data.train, data.test, cfg, dev, template0)
    if cfg.count:   # NeuroBench's model: the whole PPL (its parts run one by one)
        dev.deploy(model)
    res["metrics"]["parameters"] = float(parameters(model))
    res["metrics"]["final_loss"] = losses[-1]
    return {**res, "cfg": cfg, "model": model, "template0": template0, "losses": losses}
