"""A character-level GPT whose projections are Tversky layers, and its linear twin.

The paper trains GPT-2 on PTB with Tversky projections and one shared feature bank, the
LM head's prototypes tied to the token embeddings (PPL 112.81 -> 103.99, parameters
124.4M -> 81.1M). Which matrices were replaced is not spelled out in what we could read;
the project page says Tversky projections replace "fully connected layer stacks". Our
reading: in every block the MLP stack ``Linear(d, 4d) -> GELU -> Linear(4d, d)`` becomes
one ``TverskyProjection(d, d)``, and the LM head becomes ``TverskyProjection(d, V)`` with
prototypes = token embeddings; all Tversky layers share one bank (K, d). Attention's
q/k/v/out projections stay linear. (Our parameter arithmetic reproduces the paper's
saving this way: GPT-2's 12 MLP stacks hold 56.6M parameters, 12 d x d prototype
matrices 7.1M.) The linear twin is nanoGPT-style: pre-LN blocks, GELU MLP, tied head.

Corpus: any offline text; ``bench/tversky.py`` uses the license texts in
``/usr/share/common-licenses`` (Debian ``base-files``), see :func:`license_corpus`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from models.errors import DatasetError
from models.shared.training import seeded
from models.tversky.layer import TverskyProjection
from sim import seeds
from sim.errors import ModelError

VARIANTS = ("none", "head", "all")
LICENSES = Path("/usr/share/common-licenses")


def license_corpus(directory: Path = LICENSES) -> str:
    """The regular files of ``directory`` (symlinks skipped: they duplicate), sorted, joined."""
    files = sorted(p for p in Path(directory).glob("*") if p.is_file() and not p.is_symlink())
    if not files:
        raise DatasetError(f"license corpus: no text files in {directory}; install Debian's "
                           "base-files package or pass another directory of plain text")
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)


@dataclass
class CharGPTConfig:
    vocab: int
    block: int = 64          # context length in characters
    layers: int = 2
    heads: int = 4
    width: int = 64          # d
    tversky: str = "none"    # "head": LM head only; "all": MLP stacks and LM head (shared bank)
    bank_size: int = 64      # K of the shared bank
    # bank U(0, bank_scale): the official U(0, 1) starts the tied head with logits of std
    # ~17, 0.125 with ~0.2 (too flat to learn from); 0.35 lies between
    bank_scale: float = 0.35
    embed_scale: float = 0.125  # Tversky variants: token embeddings (= prototypes) U(0, this)

    def __post_init__(self):
        for name in ("vocab", "block", "layers", "heads", "width", "bank_size"):
            if getattr(self, name) < 1:
                raise ModelError(f"CharGPTConfig.{name} = {getattr(self, name)}: must be >= 1")
        if self.tversky not in VARIANTS:
            raise ModelError(f"CharGPTConfig.tversky = {self.tversky!r}: must be one of {VARIANTS}")
        if self.width % self.heads:
            raise ModelError(f"CharGPTConfig: width {self.width} is not divisible by "
                             f"heads {self.heads}")


class Attention(nn.Module):
    """Causal multi-head self-attention written out (every op is priced by the ledger)."""

    def __init__(self, cfg: CharGPTConfig):
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width)
        self.out = nn.Linear(cfg.width, cfg.width)
        mask = torch.tril(torch.ones(cfg.block, cfg.block, dtype=torch.bool))
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))  # (B, H, T, T)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)                       # (B, T, d)
        return self.out(y)


class Block(nn.Module):
    def __init__(self, cfg: CharGPTConfig, bank: nn.Parameter | None):
        super().__init__()
        d = cfg.width
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(d), Attention(cfg), nn.LayerNorm(d)
        if bank is None:
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        else:  # the whole fully connected stack becomes one Tversky projection d -> d
            self.mlp = TverskyProjection(d, d, feature_bank=bank, init_scale=d ** -0.5)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class CharGPT(nn.Module):
    """(B, T) character ids -> (B, T, V) next-character logits."""

    def __init__(self, cfg: CharGPTConfig, seed: int = 0):
        super().__init__()
        self.cfg = cfg
        d = cfg.width
        with seeded(seeds.child(seed, "init")):   # torch's global RNG state restored after
            self.tok = nn.Embedding(cfg.vocab, d)
            self.pos = nn.Embedding(cfg.block, d)
            for emb in (self.tok, self.pos):  # N(0, 1/d): unit-variance tied-head logits
                nn.init.normal_(emb.weight, std=d ** -0.5)
            if cfg.tversky != "none":
                # The token embeddings are the head's prototypes: they start like the
                # official prototypes, uniform and non-negative. Signed embeddings against a
                # non-negative bank leave about half the vocabulary with no feature at all
                # (e_v . f_k <= 0 for every k), and those tokens get no gradient.
                nn.init.uniform_(self.tok.weight, 0.0, cfg.embed_scale)
            self.bank = (nn.Parameter(cfg.bank_scale * torch.rand(cfg.bank_size, d))
                         if cfg.tversky != "none" else None)
            mlp_bank = self.bank if cfg.tversky == "all" else None
            self.blocks = nn.ModuleList(Block(cfg, mlp_bank) for _ in range(cfg.layers))
            self.ln = nn.LayerNorm(d)
            if self.bank is not None:   # prototypes tied to the token embeddings, bank shared
                self.head = TverskyProjection(d, cfg.vocab, feature_bank=self.bank,
                                              prototypes=self.tok.weight)
            else:             # tied linear head, as GPT-2
                self.head = None

    def forward(self, idx):
        t = idx.shape[1]
        if t > self.cfg.block:
            raise ModelError(f"CharGPT: sequence length {t} exceeds the context {self.cfg.block}")
        x = self.tok(idx) + self.pos.weight[:t]                   # (B, T, d)
        for blk in self.blocks:
            x = blk(x)
        x = self.ln(x)
        return self.head(x) if self.head is not None else x @ self.tok.weight.T  # (B, T, V)

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # shared/tied tensors count once


def encode(text: str) -> tuple[torch.Tensor, list[str]]:
    chars = sorted(set(text))
    lookup = {c: i for i, c in enumerate(chars)}
    return torch.tensor([lookup[c] for c in text], dtype=torch.int64), chars


def train_lm(model: CharGPT, train_ids, val_ids, *, steps: int, batch: int = 32, lr: float = 3e-3,
             seed: int = 0, device=None, log_every: int = 0):
    """AdamW with cosine decay on random windows; returns (validation PPL, loss curve).

    Validation: every non-overlapping window of the held-out text, mean cross-entropy per
    character, ``PPL = exp(mean)``.
    """
    t = model.cfg.block
    if len(train_ids) <= t + 1 or len(val_ids) <= t + 1:
        raise ModelError(f"train_lm: corpus splits of {len(train_ids)} / {len(val_ids)} "
                         f"characters are too short for context {t}")
    dev = device or torch.device("cpu")
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    gen = torch.Generator().manual_seed(seeds.child(seed, "windows"))
    offsets = torch.arange(t + 1)
    curve = []
    model.train()
    for step in range(steps):
        start = torch.randint(0, len(train_ids) - t - 1, (batch,), generator=gen)
        win = train_ids[start[:, None] + offsets].to(dev)               # (B, T+1)
        logits = model(win[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                           win[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        curve.append(float(loss.detach()))
        if log_every and (step + 1) % log_every == 0:
            print(f"  step {step + 1}/{steps} loss {sum(curve[-log_every:]) / log_every:.3f}",
                  flush=True)
    return validation_ppl(model, val_ids, dev), curve


@torch.no_grad()
def validation_ppl(model: CharGPT, val_ids, dev) -> float:
    t = model.cfg.block
    n = (len(val_ids) - 1) // t
    x = val_ids[:n * t].reshape(n, t).to(dev)
    y = val_ids[1:n * t + 1].reshape(n, t).to(dev)
    model.eval()
    total = 0.0
    for i in range(0, n, 64):
        logits = model(x[i:i + 64])
        total += float(nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                   y[i:i + 64].reshape(-1), reduction="sum"))
    model.train()
    return math.exp(total / (n * t))
