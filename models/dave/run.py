"""DAVE's run at small scale (Huang et al., ICLR 2026): Stage 1 (MAE on raw pixels, Sec.
3.1), the generalist (trained, then frozen), Stage 2 (one encoder copy per decoder, each
decoder reading concat(frozen generalist, copy), Sec. 3.2), the learned merge against the
plain average (Sec. 3.3) and the fused encoder (Sec. 3.4), each under a fresh decoder D;
with ``cfg.checks`` the probes of check b and the fine-tuned generalist (e). The parts are
in ``model.py``.

Random streams, each a named child of ``cfg.seed`` (``sim.seeds``): ``("stage1", ...)``,
``("stage2", <decoder>, ...)``, ``"merge"``, ``("generalist", ...)``, ``("heldout", ...)``
(one decoder D start and batch order for every encoder: a paired comparison),
``"finetune"``, ``("probe", ...)``, each with ``"init"`` and ``"order"`` below it.
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from models.dave import data as D
from models.dave.card import STAGE2_DECODERS, DaveConfig
from models.dave.model import (
    DECODERS,
    MAE,
    Fused,
    Merged,
    clone_vit,
    greedy,
    new_vit,
    patchify,
    seq_loss,
)
from models.dave.pictures import parsed_pages
from models.shared.energy import counted_training
from models.shared.training import seeded
from sim import seeds
from sim.traces import Trace, curve

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice


def _ctx(dev, scope, samples=0):
    return dev.count(scope, samples=samples) if dev is not None else contextlib.nullcontext()


def _batches(n, bs, steps, gen):
    for _ in range(steps):
        yield torch.randint(0, n, (bs,), generator=gen)


def train_mae(cfg, pages, dev, norm_pix=False, scope="train/stage1", counted_steps=None):
    """Stage 1: MAE on unlabeled pages; returns (encoder, losses). Only the first
    ``counted_steps`` steps (default ``cfg.counted_steps``) run inside ``dev.count``: the
    steps after the first cost the same (the first also builds AdamW's state), so the ledger
    holds a few counted steps (their samples) and the rest train at full speed (dispatch
    counting is ~3x slower); the run's metrics say which and scale them
    (``models.shared.energy``)."""
    with seeded(seeds.child(cfg.seed, "stage1", "init")):
        enc = new_vit(cfg)
        mae = MAE(enc, cfg.mae_dec_width, cfg.mae_dec_depth)
    opt = torch.optim.AdamW(mae.parameters(), lr=cfg.mae_lr, betas=(0.9, 0.95),
                            weight_decay=0.05)
    sched = warmup_cosine(opt, cfg.mae_steps, max(1, cfg.mae_steps // 20))
    x = torch.as_tensor(pages.images)
    # masks and batches: the same for the pixel and the norm-pix MAE (a paired comparison)
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "stage1", "order"))
    k = min(cfg.mae_steps, cfg.counted_steps if counted_steps is None else counted_steps)
    losses = []

    def step(idx):
        loss = mae.loss(x[idx], cfg.mask_ratio, gen, norm_pix)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    batches = list(_batches(len(x), cfg.batch_size, cfg.mae_steps, gen))
    with _ctx(dev if k else None, scope, k * cfg.batch_size):
        for idx in batches[:k]:
            step(idx)
    for idx in batches[k:]:
        step(idx)
    return enc, losses


def warmup_cosine(opt, steps: int, warmup: int):
    """Linear warm-up over ``warmup`` steps, then cosine decay to 0 (MAE's schedule, He et
    al. 2022 Sec. A.1; a short run diverges less with it)."""
    import math

    def f(i):
        if i < warmup:
            return (i + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (i - warmup) / max(1, steps - warmup)))
    return torch.optim.lr_scheduler.LambdaLR(opt, f)


@torch.no_grad()
def features(enc, images, chunk: int = 256):
    """Frozen-encoder features of ``images`` (N, n, d), in chunks."""
    x = torch.as_tensor(images)
    return torch.cat([enc(x[i:i + chunk]) for i in range(0, len(x), chunk)])


def train_parser(cfg, enc, dec_name, pages, dev, steps, train_encoder=True,
                 scope="train/stage2",
                 stream: tuple = ("stage2",), frozen: nn.Module | None = None):
    """Stage 2: encoder (+ decoder) trained by next-token cross-entropy on the page parse,
    teacher-forced. With ``train_encoder=False`` (a fresh decoder on a frozen encoder) the
    encoder's features are computed once and the steps train the decoder alone. With
    ``frozen`` (Stage 2's generalist) the decoder reads concat(frozen(x), enc(x)) on the
    same token grid, the paper's concat(SigLIP2_frozen, phi_i) (Sec. 3.2): ``frozen``'s
    features are computed once (no gradient: its weights never change) and its channels
    come first, as in ``model.Fused``. The decoder's start and the batch order come from
    the streams ``(*stream, "init")`` and ``(*stream, "order")`` of ``cfg.seed``."""
    build, order = DECODERS[dec_name]
    x = torch.as_tensor(pages.images)
    with torch.no_grad():
        feat = enc(x[:1]).shape[-1] + (0 if frozen is None else frozen(x[:1]).shape[-1])
    with seeded(seeds.child(cfg.seed, *stream, "init")):
        dec = build(feat, cfg.dec_width)
    params = list(dec.parameters())
    if train_encoder:
        params += list(enc.parameters())
    else:
        for p in enc.parameters():
            p.requires_grad_(False)
    opt = torch.optim.AdamW(params, lr=cfg.stage2_lr, weight_decay=0.0)
    sched = warmup_cosine(opt, steps, max(1, steps // 10))
    s = torch.as_tensor(pages.seqs[order])
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, *stream, "order"))
    losses = []
    with _ctx(dev, scope, steps * cfg.batch_size):
        cached = None if train_encoder else features(enc, x)
        fixed = None if frozen is None else features(frozen, x)       # (N, n, d_g)
        for idx in _batches(len(x), cfg.batch_size, steps, gen):
            mem = enc(x[idx]) if train_encoder else cached[idx]        # (B, n, d)
            if fixed is not None:
                mem = torch.cat([fixed[idx], mem], -1)                 # (B, n, d_g + d)
            loss = seq_loss(dec, mem, s[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
    return dec, losses


def train_merge(cfg, template, copies, pages, dev):
    """Learned merge: L = (1/n) sum_i ||phi_merge(x) - phi_i(x)||^2 on unlabeled pages."""
    merged = Merged(template, copies)
    opt = torch.optim.Adam(merged.logits.parameters(), lr=cfg.merge_lr)
    x = torch.as_tensor(pages.images)
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "merge", "order"))
    losses = []
    with _ctx(dev, "train/merge", cfg.merge_steps * cfg.batch_size):
        for idx in _batches(len(x), cfg.batch_size, cfg.merge_steps, gen):
            with torch.no_grad():
                teach = [c(x[idx]) for c in copies]
            z = merged(x[idx])
            loss = sum((z - t).pow(2).mean() for t in teach) / len(teach)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    return merged, losses


def loss_spikes(losses, factor: float = 10.0, window: int = 20) -> int:
    """Steps whose loss exceeds ``factor`` x the median of the ``window`` steps before it
    (the digest's divergence count for norm-pix MAE, Sec. 3.1 / Fig. 4)."""
    a = np.asarray(losses, float)
    return int(sum(a[i] > factor * np.median(a[max(0, i - window):i])
                   for i in range(1, len(a))))


@torch.no_grad()
def distill_mse(enc, copies, images) -> float:
    x = torch.as_tensor(images)
    z = enc(x)
    return float(sum((z - c(x)).pow(2).mean() for c in copies) / len(copies))


def train_generalist(cfg, x28, y, dev):
    """A ViT classifying Fashion items pasted at a random place on blank 64 px pages."""
    rng = seeds.rng(cfg.seed, "generalist", "pages")
    n = len(x28)
    pages = np.ones((n, cfg.side, cfg.side), np.float32)
    f = cfg.side * 24 // 64
    big = torch.nn.functional.interpolate(torch.as_tensor(x28)[:, None], size=(f, f),
                                          mode="bilinear")[:, 0].numpy()
    for i in range(n):
        ox, oy = rng.integers(0, cfg.side - f, 2)
        pages[i, oy:oy + f, ox:ox + f] = 1.0 - big[i]
    with seeded(seeds.child(cfg.seed, "generalist", "init")):
        enc = new_vit(cfg)
        head = nn.Linear(cfg.width, 10)
    opt = torch.optim.AdamW([*enc.parameters(), *head.parameters()], lr=cfg.generalist_lr)
    x, yt = torch.as_tensor(pages), torch.as_tensor(y)
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "generalist", "order"))
    with _ctx(dev, "train/generalist", cfg.generalist_steps * cfg.batch_size):
        for idx in _batches(n, cfg.batch_size, cfg.generalist_steps, gen):
            loss = F.cross_entropy(head(enc(x[idx]).mean(1)), yt[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    for p in enc.parameters():    # frozen from here on: Stage 2, the fusion (Sec. 3.2, 3.4)
        p.requires_grad_(False)
    return enc.eval()


@torch.no_grad()
def evaluate_parser(enc, dec, pages, order="reading", chunk=256) -> dict:
    """Box F1 at IoU 0.5 (same class, bins) and figure-class accuracy from greedy parses
    (and the parsed token sequences, ``seqs``)."""
    tp = npred = ntrue = 0
    correct = 0
    out = []
    for i in range(0, len(pages.images), chunk):
        x = torch.as_tensor(pages.images[i:i + chunk])
        seqs = greedy(dec, enc(x))
        out.append(seqs)
        for j, s in enumerate(seqs):
            boxes, fcls = D.decode(s)
            a, b, c = D.box_f1(boxes, pages.boxes[i + j])
            tp, npred, ntrue = tp + a, npred + b, ntrue + c
            correct += int(fcls == pages.fashion[i + j])
    f1 = 2 * tp / (npred + ntrue) if npred + ntrue else 0.0
    return {"box_f1": f1, "figure_accuracy": correct / len(pages.images),
            "seqs": np.concatenate(out)}


@torch.no_grad()
def probe_accuracy(cfg, enc, train_pages, test_pages, steps=300) -> float:
    """Linear probe of per-patch element class (majority class of the patch's pixels) on
    frozen features."""
    def feats_labels(p):
        z = enc(torch.as_tensor(p.images))
        cm = patchify(torch.as_tensor(p.classmap).float(), cfg.patch).long()
        lab = F.one_hot(cm, len(D.CLASSES)).sum(2).argmax(-1)
        return z.reshape(-1, z.shape[-1]), lab.reshape(-1)
    ztr, ytr = feats_labels(train_pages)
    zte, yte = feats_labels(test_pages)
    mu, sd = ztr.mean(0), ztr.std(0) + 1e-6
    ztr, zte = (ztr - mu) / sd, (zte - mu) / sd
    with torch.enable_grad(), seeded(seeds.child(cfg.seed, "probe", "init")):
        head = nn.Linear(ztr.shape[1], len(D.CLASSES))
        opt = torch.optim.Adam(head.parameters(), lr=1e-2)
        for _ in range(steps):
            loss = F.cross_entropy(head(ztr), ytr)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return float((head(zte).argmax(1) == yte).float().mean())


def run(cfg: DaveConfig, device: TorchDevice, data: D.DaveData, progress=None) -> dict:
    """One DAVE run: every stage, then each encoder under a fresh decoder D on the test pages.

    Order (the paper's): Stage 1; the generalist, trained and then frozen; Stage 2, each
    copy's decoder reading concat(frozen generalist, copy) (Sec. 3.2: the generalist
    carries the semantics, so the copy is free to learn layout); the merge of the copies.

    Returns ``{"metrics", "traces", "facts"}``. Ledger scopes: ``train/stage1`` (its first
    ``counted_steps`` MAE steps) and ``infer`` (the fused encoder + decoder D parsing the
    test pages, the deployed inference) always; with ``cfg.count_all`` also, in this
    order, ``train/generalist``, ``train/stage2/<decoder>`` (each holds the frozen
    generalist's one pass over the labelled pages that its decoder reads),
    ``train/merge``, ``train/finetune_generalist``, ``train/heldout/<encoder>`` and
    ``eval/<encoder>``. Every training stage sits under ``train``, so the report's energy
    per training sample is that of every counted training step.
    """
    torch.set_num_threads(1)      # 2 shared cores: a second thread only spins
    total = 7
    tick = (lambda i, m: progress(i, total, m)) if progress else (lambda i, m: None)
    cdev = device if cfg.count_all else None      # the stages counted only on request
    enc0, mae_losses = train_mae(cfg, data.unlabeled, device)
    tick(1, {"mae_loss": mae_losses[-1]})
    gen_enc = train_generalist(cfg, data.fashion_x, data.fashion_y, cdev)   # frozen now
    tick(2, {})
    names = STAGE2_DECODERS[:cfg.decoders]
    copies, s2 = [], {}
    for name in names:
        enc = clone_vit(cfg, enc0)
        _, s2[name] = train_parser(cfg, enc, name, data.labeled, cdev, cfg.stage2_steps,
                                     scope=f"train/stage2/{name}", stream=("stage2", name),
                                     frozen=gen_enc)
        enc.eval()
        copies.append(enc)
    tick(3, {"stage2_loss": sum(v[-1] for v in s2.values()) / len(s2)})
    merged, merge_losses = train_merge(cfg, clone_vit(cfg, enc0), copies,
                                         data.unlabeled, cdev)
    with torch.no_grad():
        avg = Merged(clone_vit(cfg, enc0), copies)      # logits 0: the plain average
    tick(4, {"merge_loss": merge_losses[-1]})
    encoders = {"fused": Fused(gen_enc, merged), "merged": merged, "average": avg,
                "generalist": gen_enc}
    encoders.update({f"copy_{n}": c for n, c in zip(names, copies, strict=True)})
    m = {}
    if cfg.checks:       # check e: the generalist fine-tuned on the labelled pages alone
        ft = clone_vit(cfg, gen_enc)
        for p in ft.parameters():
            p.requires_grad_(True)
        train_parser(cfg, ft, "tf2", data.labeled, cdev, cfg.stage2_steps,
                       scope="train/finetune_generalist", stream=("finetune",))
        encoders["finetuned_generalist"] = ft
    seqs = {}
    for name, enc in encoders.items():
        for p in enc.parameters():
            p.requires_grad_(False)
        enc.eval()
        dec, _ = train_parser(cfg, enc, "heldout", data.labeled, cdev, cfg.heldout_steps,
                                train_encoder=False, scope=f"train/heldout/{name}",
                              stream=("heldout",))
        counted = name == "fused" or cfg.count_all
        scope = "infer" if name == "fused" else f"eval/{name}"
        with (device.count(scope, samples=len(data.test.images)) if counted
              else contextlib.nullcontext()):
            r = evaluate_parser(enc, dec, data.test)
        if name == "fused":   # NeuroBench's model: the deployed encoder + decoder D only
            device.deploy(enc)
            device.deploy(dec)
        m[f"{name}_box_f1"] = r["box_f1"]
        m[f"{name}_figure_accuracy"] = r["figure_accuracy"]
        seqs[name] = r["seqs"]
    tick(5, {"fused_box_f1": m["fused_box_f1"]})
    singles = [m[f"copy_{n}_box_f1"] for n in names]
    m["mean_single_box_f1"] = sum(singles) / len(singles)
    m["merge_minus_average_box_f1"] = m["merged_box_f1"] - m["average_box_f1"]
    m["merge_minus_single_box_f1"] = m["merged_box_f1"] - m["mean_single_box_f1"]
    m["distill_mse_merged"] = distill_mse(merged, copies, data.test.images)
    m["distill_mse_average"] = distill_mse(avg, copies, data.test.images)
    m["fused_minus_specialist_figure_accuracy"] = (m["fused_figure_accuracy"]
                                                   - m["merged_figure_accuracy"])
    m["fused_minus_specialist_box_f1"] = m["fused_box_f1"] - m["merged_box_f1"]
    m["fused_minus_generalist_box_f1"] = m["fused_box_f1"] - m["generalist_box_f1"]
    m["mae_final_loss"] = mae_losses[-1]
    m["box_f1"] = m["fused_box_f1"]
    if not cfg.count_all:   # only stage 1's first MAE steps are counted: say so, scale them
        m.update(counted_training(device, "train/stage1", cfg.counted_steps, cfg.mae_steps))
    traces = {"mae_loss": curve(mae_losses), "merge_loss": curve(merge_losses)}
    if cfg.checks:
        m["fused_minus_finetuned_generalist_box_f1"] = (m["fused_box_f1"]
                                                        - m["finetuned_generalist_box_f1"])
        with seeded(seeds.child(cfg.seed, "probe", "random_init")):
            rand = new_vit(cfg)
        enc_np, np_losses = train_mae(cfg, data.unlabeled, None, norm_pix=True)
        for name, enc in (("mae_pixel", enc0), ("random_init", rand), ("norm_pix", enc_np)):
            enc.eval()
            m[f"probe_{name}"] = probe_accuracy(cfg, enc, data.labeled, data.test)
        m["probe_pixel_minus_random"] = m["probe_mae_pixel"] - m["probe_random_init"]
        m["probe_pixel_minus_norm_pix"] = m["probe_mae_pixel"] - m["probe_norm_pix"]
        m["norm_pix_loss_spikes"] = loss_spikes(np_losses)
        m["pixel_loss_spikes"] = loss_spikes(mae_losses)
        traces["mae_norm_pix_loss"] = curve(np_losses)
    tick(6, m)
    traces.update({f"stage2_{k}_loss": curve(v) for k, v in s2.items()})
    n_pic = min(cfg.pictures, len(data.test.images))
    for name in ("fused", "merged"):
        traces[f"pictures_{name}"] = Trace("pictures", parsed_pages(
            data.test.images, data.test.boxes, data.test.fashion, seqs[name], n_pic))
    tick(7, {})
    facts = {"torch_device": str(device.torch_device), "data_source": data.source,
             "decoders": list(names), "tokens_per_page": (cfg.side // cfg.patch) ** 2,
             "counted": f"train/stage1: the first {min(cfg.counted_steps, cfg.mae_steps)} of "
                        f"{cfg.mae_steps} MAE steps; infer: the fused encoder + decoder D on "
                        f"{len(data.test.images)} test pages"
                        + ("; every other stage too" if cfg.count_all else ""),
             "pictures": "test pages, ground-truth boxes (left) and the boxes decoder D "
                         "parsed (right); N nav, T title, x text, B button, F figure"}
    return {"metrics": m, "traces": traces, "facts": facts}
