"""DAVE at small scale (Huang et al., ICLR 2026): a ViT trained with MAE on raw pixels
(Stage 1, Sec. 3.1), copies trained with different autoregressive decoders on page parses,
each decoder reading concat(frozen generalist, copy) (Stage 2, Sec. 3.2), merged with
learned per-tensor coefficients distilled on unlabeled pages (Sec. 3.3), and fused
channel-wise with the frozen generalist encoder (Sec. 3.4).

Readings (the paper leaves them open): merge coefficients are a softmax over the copies
per tensor, initialised uniform, so the merge starts as the plain average; the generalist
is a ViT of the same shape trained to classify Fashion-MNIST items pasted on blank pages,
before Stage 2, and the same frozen generalist feeds Stage 2 and the fused encoder; the
paper's MLP projector is each decoder's input ``nn.Linear`` (``mem``), discarded with the
Stage-2 decoder.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F  # noqa: N812

from models.dave import data as D
from models.dave.card import visible_patches


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
    """phi_DAVE(x) = concat(generalist(x), specialist(x)) on the same token grid (the
    order Stage 2's decoders read, ``run.train_parser(frozen=)``)."""

    def __init__(self, generalist: nn.Module, specialist: nn.Module | None):
        super().__init__()
        self.g, self.s = generalist, specialist

    def forward(self, x):
        parts = [m(x) for m in (self.g, self.s) if m is not None]
        return torch.cat(parts, -1)


def new_vit(cfg):
    return ViT(cfg.side, cfg.patch, cfg.width, cfg.depth, cfg.heads)


def clone_vit(cfg, enc):
    c = new_vit(cfg)
    c.load_state_dict(enc.state_dict())
    return c
