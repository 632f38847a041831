"""DAVE at small scale (Huang et al., ICLR 2026): a ViT trained with MAE on raw pixels
(Stage 1, Sec. 3.1), copies trained with different autoregressive decoders on page parses
(Stage 2, Sec. 3.2), merged with learned per-tensor coefficients distilled on unlabeled
pages (Sec. 3.3), and fused channel-wise with a frozen generalist encoder (Sec. 3.4).

Readings (the paper leaves them open): merge coefficients are a softmax over the copies
per tensor, initialised uniform, so the merge starts as the plain average; the generalist
is a ViT of the same shape trained to classify Fashion-MNIST items pasted on blank pages.
"""
from __future__ import annotations

import contextlib

import numpy as np
import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F  # noqa: N812

from models.dave import data as D
from models.dave.card import visible_patches
from models.shared.training import seeded


class ViT(nn.Module):
    """Patch embedding + learned positions + pre-norm transformer blocks (no CLS token)."""

    def __init__(self, side: int, patch: int, width: int, depth: int, heads: int):
        super().__init__()
        self.patch, self.n = patch, (side // patch) ** 2
        self.embed = nn.Linear(patch * patch, width)
        self.pos = nn.Parameter(torch.randn(1, self.n, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, heads, 2 * width, 0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)

    def tokens(self, x):           # (B, H, W) -> (B, n, p*p)
        return patchify(x, self.patch)

    def forward(self, x, keep=None):
        t = self.embed(self.tokens(x)) + self.pos
        if keep is not None:       # MAE: only the visible tokens enter the encoder
            t = torch.gather(t, 1, keep[..., None].expand(-1, -1, t.shape[-1]))
        return self.norm(self.blocks(t))


def patchify(x, p):
    b, h, w = x.shape
    return x.reshape(b, h // p, p, w // p, p).permute(0, 1, 3, 2, 4).reshape(b, -1, p * p)


def mae_target(patches, norm_pix: bool):
    """Raw pixels (DAVE, Sec. 3.1) or the per-patch normalised target of MAE."""
    if not norm_pix:
        return patches
    mu, var = patches.mean(-1, keepdim=True), patches.var(-1, keepdim=True)
    return (patches - mu) / (var + 1e-6).sqrt()


class MAE(nn.Module):
    def __init__(self, enc: ViT, dec_width: int, dec_depth: int):
        super().__init__()
        self.enc = enc
        w = enc.embed.out_features
        self.proj = nn.Linear(w, dec_width)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dec_width))
        self.pos = nn.Parameter(torch.randn(1, enc.n, dec_width) * 0.02)
        layer = nn.TransformerEncoderLayer(dec_width, 2, 2 * dec_width, 0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, dec_depth, enable_nested_tensor=False)
        self.out = nn.Linear(dec_width, enc.patch ** 2)

    def loss(self, x, ratio: float, gen: torch.Generator, norm_pix: bool = False):
        """L = (1/|M|) sum_{i in M} ||f(x~)_i - target_i||^2 over the masked patches M."""
        b, n = x.shape[0], self.enc.n
        n_keep = visible_patches(n, ratio)
        order = torch.rand(b, n, generator=gen).argsort(1).to(x.device)
        keep = order[:, :n_keep]
        z = self.proj(self.enc(x, keep))
        full = self.mask_token.expand(b, n, -1).clone()
        full.scatter_(1, keep[..., None].expand(-1, -1, z.shape[-1]), z)
        pred = self.out(self.blocks(full + self.pos))
        masked = torch.ones(b, n, device=x.device)
        masked.scatter_(1, keep, 0.0)
        err = (pred - mae_target(self.enc.tokens(x), norm_pix)).pow(2).mean(-1)
        return (err * masked).sum() / masked.sum()


class GRUDecoder(nn.Module):
    """Decoder A: one GRU layer with dot-product attention over the visual tokens."""

    def __init__(self, feat: int, width: int):
        super().__init__()
        self.emb = nn.Embedding(D.VOCAB, width)
        self.mem = nn.Linear(feat, width)
        self.gru = nn.GRU(width, width, batch_first=True)
        self.out = nn.Linear(2 * width, D.VOCAB)

    def forward(self, mem, seq):
        m = self.mem(mem)
        h, _ = self.gru(self.emb(seq), m.mean(1)[None].contiguous())
        ctx = torch.softmax(h @ m.transpose(1, 2) / m.shape[-1] ** 0.5, -1) @ m
        return self.out(torch.cat([h, ctx], -1))


class TransformerDecoder(nn.Module):
    """Decoders B, C, D: causal transformer decoders cross-attending to the visual tokens."""

    def __init__(self, feat: int, width: int, depth: int, heads: int = 4):
        super().__init__()
        self.emb = nn.Embedding(D.VOCAB, width)
        self.pos = nn.Parameter(torch.randn(1, D.SEQ_LEN, width) * 0.02)
        self.mem = nn.Linear(feat, width)
        layer = nn.TransformerDecoderLayer(width, heads, 2 * width, 0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerDecoder(layer, depth)
        self.out = nn.Linear(width, D.VOCAB)

    def forward(self, mem, seq):
        L = seq.shape[1]
        causal = torch.triu(torch.full((L, L), float("-inf"), device=seq.device), 1)
        h = self.blocks(self.emb(seq) + self.pos[:, :L], self.mem(mem), tgt_mask=causal)
        return self.out(h)


DECODERS = {   # name -> (builder(feat), target order); the digest's stand-ins for 3 LLMs
    "gru": (lambda f, w: GRUDecoder(f, w), "reading"),
    "tf2": (lambda f, w: TransformerDecoder(f, w, 2), "reading"),
    "tf1_class": (lambda f, w: TransformerDecoder(f, w // 2, 1, 2), "class"),
    "heldout": (lambda f, w: TransformerDecoder(f, 3 * w // 4, 1, 2), "reading"),
}


def seq_loss(dec, mem, seq):
    logits = dec(mem, seq[:, :-1])
    return F.cross_entropy(logits.reshape(-1, D.VOCAB), seq[:, 1:].reshape(-1),
                           ignore_index=D.PAD)


@torch.no_grad()
def greedy(dec, mem, steps: int = D.SEQ_LEN - 1):
    seq = torch.full((mem.shape[0], 1), D.BOS, dtype=torch.int64, device=mem.device)
    for _ in range(steps):
        nxt = dec(mem, seq)[:, -1].argmax(-1, keepdim=True)
        seq = torch.cat([seq, nxt], 1)
    return seq.cpu().numpy()


def merged_params(copies: list[dict], logits: dict) -> dict:
    """theta_merge^(j) = sum_i alpha_i^(j) theta_i^(j), alpha^(j) = softmax(logits^(j))."""
    out = {}
    for k in copies[0]:
        a = torch.softmax(logits[k], 0)
        out[k] = sum(a[i] * c[k] for i, c in enumerate(copies))
    return out


class Merged(nn.Module):
    """An encoder whose weights are the learned convex merge of frozen copies; only the
    per-tensor coefficients are parameters."""

    def __init__(self, template: ViT, copies: list[ViT]):
        super().__init__()
        self.template = template
        self.copies = [{k: v.detach() for k, v in c.named_parameters()} for c in copies]
        for p in template.parameters():
            p.requires_grad_(False)
        self.logits = nn.ParameterDict({k.replace(".", "__"): nn.Parameter(torch.zeros(len(copies)))
                                        for k in self.copies[0]})

    def params(self):
        return merged_params(self.copies, {k: self.logits[k.replace(".", "__")]
                                           for k in self.copies[0]})

    def forward(self, x):
        return functional_call(self.template, self.params(), (x,))


class Fused(nn.Module):
    """phi_DAVE(x) = concat(generalist(x), specialist(x)) on the same token grid."""

    def __init__(self, generalist: nn.Module, specialist: nn.Module | None):
        super().__init__()
        self.g, self.s = generalist, specialist

    def forward(self, x):
        parts = [m(x) for m in (self.g, self.s) if m is not None]
        return torch.cat(parts, -1)


def _ctx(dev, scope, samples=0):
    return dev.count(scope, samples=samples) if dev is not None else contextlib.nullcontext()


def _batches(n, bs, steps, gen):
    for _ in range(steps):
        yield torch.randint(0, n, (bs,), generator=gen)


def train_mae(cfg, pages, dev, norm_pix=False, scope="stage1", counted_steps=None):
    """Stage 1: MAE on unlabeled pages; returns (encoder, losses). Only the first
    ``counted_steps`` steps (default ``cfg.counted_steps``) run inside ``dev.count``: every
    step costs the same, so the ledger holds a few counted steps (their samples) and the
    rest train at full speed (dispatch counting is ~3x slower)."""
    with seeded(cfg.seed):
        enc = new_vit(cfg)
        mae = MAE(enc, cfg.mae_dec_width, cfg.mae_dec_depth)
    opt = torch.optim.AdamW(mae.parameters(), lr=cfg.mae_lr, betas=(0.9, 0.95),
                            weight_decay=0.05)
    sched = warmup_cosine(opt, cfg.mae_steps, max(1, cfg.mae_steps // 20))
    x = torch.as_tensor(pages.images)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
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


def new_vit(cfg):
    return ViT(cfg.side, cfg.patch, cfg.width, cfg.depth, cfg.heads)


def clone_vit(cfg, enc):
    c = new_vit(cfg)
    c.load_state_dict(enc.state_dict())
    return c


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


def train_parser(cfg, enc, dec_name, pages, dev, steps, train_encoder=True, scope="stage2",
                 seed_offset=0):
    """Stage 2: encoder (+ decoder) trained by next-token cross-entropy on the page parse,
    teacher-forced. With ``train_encoder=False`` (a fresh decoder on a frozen encoder) the
    encoder's features are computed once and the steps train the decoder alone."""
    build, order = DECODERS[dec_name]
    with torch.no_grad():
        feat = enc(torch.as_tensor(pages.images[:1])).shape[-1]
    with seeded(cfg.seed + 100 + seed_offset):
        dec = build(feat, cfg.dec_width)
    params = list(dec.parameters())
    x = torch.as_tensor(pages.images)
    if train_encoder:
        params += list(enc.parameters())
    else:
        for p in enc.parameters():
            p.requires_grad_(False)
    opt = torch.optim.AdamW(params, lr=cfg.stage2_lr, weight_decay=0.0)
    sched = warmup_cosine(opt, steps, max(1, steps // 10))
    s = torch.as_tensor(pages.seqs[order])
    gen = torch.Generator().manual_seed(cfg.seed + 2 + seed_offset)
    losses = []
    with _ctx(dev, scope, steps * cfg.batch_size):
        cached = None if train_encoder else features(enc, x)
        for idx in _batches(len(x), cfg.batch_size, steps, gen):
            mem = enc(x[idx]) if train_encoder else cached[idx]
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
    gen = torch.Generator().manual_seed(cfg.seed + 3)
    losses = []
    with _ctx(dev, "merge", cfg.merge_steps * cfg.batch_size):
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
    rng = np.random.default_rng(cfg.seed + 4)
    n = len(x28)
    pages = np.ones((n, cfg.side, cfg.side), np.float32)
    f = cfg.side * 24 // 64
    big = torch.nn.functional.interpolate(torch.as_tensor(x28)[:, None], size=(f, f),
                                          mode="bilinear")[:, 0].numpy()
    for i in range(n):
        ox, oy = rng.integers(0, cfg.side - f, 2)
        pages[i, oy:oy + f, ox:ox + f] = 1.0 - big[i]
    with seeded(cfg.seed + 5):
        enc = new_vit(cfg)
        head = nn.Linear(cfg.width, 10)
    opt = torch.optim.AdamW([*enc.parameters(), *head.parameters()], lr=cfg.generalist_lr)
    x, yt = torch.as_tensor(pages), torch.as_tensor(y)
    gen = torch.Generator().manual_seed(cfg.seed + 6)
    with _ctx(dev, "generalist", cfg.generalist_steps * cfg.batch_size):
        for idx in _batches(n, cfg.batch_size, cfg.generalist_steps, gen):
            loss = F.cross_entropy(head(enc(x[idx]).mean(1)), yt[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    for p in enc.parameters():
        p.requires_grad_(False)
    return enc


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
    with torch.enable_grad(), seeded(cfg.seed + 7):
        head = nn.Linear(ztr.shape[1], len(D.CLASSES))
        opt = torch.optim.Adam(head.parameters(), lr=1e-2)
        for _ in range(steps):
            loss = F.cross_entropy(head(ztr), ytr)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return float((head(zte).argmax(1) == yte).float().mean())
