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
matrices 7.1M.) The baseline is nanoGPT-style: pre-LN blocks, GELU MLP, tied head.

Issue 33: that baseline keeps each block's 4x MLP, so it compares the Tversky GPT with a
network twice its size, not with linear layers. Two linear twins keep the Tversky GPT's
architecture and swap only its Tversky projections:

- ``bank_linear`` (the equal-parameter twin): every Tversky projection becomes the linear
  map ``y = (x F^T)(Pi F^T)^T = x F^T F Pi^T`` with the *same parameter tensors* (shared
  bank F (K, d), per-layer prototypes Pi (d, d), head prototypes tied to the token
  embeddings): the Tversky product intersection without its membership masks and without
  the distinctive-feature terms. It lacks only theta, alpha, beta: 3 (layers + 1) scalars.
- ``linear``: every Tversky projection becomes a plain ``nn.Linear`` of the same shape (no
  bias, as the Tversky layer has none) and the head the tied linear head: K d + 3 (layers
  + 1) parameters fewer than the Tversky GPT (no bank).

Both twins start like linear layers (signed, N(0, 1/d) bank so that F^T F ~ (K/d) I, the
baseline's N(0, 1/d) embeddings), not with the Tversky GPT's non-negative initialisation.

Corpus: any offline text; ``bench/tversky.py`` uses the license texts in
``/usr/share/common-licenses`` (Debian ``base-files``), see :func:`license_corpus`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from models.errors import DatasetError
from models.shared.training import seeded
from models.tversky.layer import TverskyProjection
from sim import seeds
from sim.errors import ModelError

VARIANTS = ("none", "head", "all", "bank_linear", "linear")
"""none: GELU MLP stacks + tied linear head; head: Tversky head only; all: Tversky MLP
replacements + Tversky head, shared bank; bank_linear / linear: the two linear twins of all."""
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
    tversky: str = "none"    # one of VARIANTS ("all": MLP stacks and LM head, shared bank)
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


class BankLinear(nn.Module):
    """The linear twin of a Tversky projection: ``y = (x F^T)(Pi F^T)^T`` (a linear map).

    Same parameter tensors as ``TverskyProjection`` (a shared bank F (K, d) and prototypes
    Pi (P, d), which may be tied); the similarity is the dot product in the bank's feature
    space instead of Tversky's contrast of masked common and distinctive features.
    """

    def __init__(self, in_features: int, out_features: int, *, feature_bank: nn.Parameter,
                 prototypes: nn.Parameter | None = None):
        super().__init__()
        self.feature_bank = feature_bank
        if prototypes is None:   # nn.Linear's default scale, U(-1/sqrt(d), 1/sqrt(d))
            bound = in_features ** -0.5
            prototypes = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound,
                                                                                        bound))
        self.prototypes = prototypes
        self.in_features, self.out_features = in_features, out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.feature_bank.T) @ (self.prototypes @ self.feature_bank.T).T


class Block(nn.Module):
    def __init__(self, cfg: CharGPTConfig, bank: nn.Parameter | None):
        super().__init__()
        d = cfg.width
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(d), Attention(cfg), nn.LayerNorm(d)
        # "all" and its twins: the whole fully connected stack becomes one d -> d projection
        if cfg.tversky == "all":
            self.mlp = TverskyProjection(d, d, feature_bank=bank, init_scale=d ** -0.5)
        elif cfg.tversky == "bank_linear":
            self.mlp = BankLinear(d, d, feature_bank=bank)
        elif cfg.tversky == "linear":
            self.mlp = nn.Linear(d, d, bias=False)
        else:
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

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
            if cfg.tversky in ("head", "all"):
                # The token embeddings are the head's prototypes: they start like the
                # official prototypes, uniform and non-negative. Signed embeddings against a
                # non-negative bank leave about half the vocabulary with no feature at all
                # (e_v . f_k <= 0 for every k), and those tokens get no gradient.
                nn.init.uniform_(self.tok.weight, 0.0, cfg.embed_scale)
            self.bank = None
            if cfg.tversky in ("head", "all"):   # non-negative, like the official U(0, 1)
                self.bank = nn.Parameter(cfg.bank_scale * torch.rand(cfg.bank_size, d))
            elif cfg.tversky == "bank_linear":   # signed: F^T F ~ (K / d) I at the start
                self.bank = nn.Parameter(torch.randn(cfg.bank_size, d) * d ** -0.5)
            self.blocks = nn.ModuleList(Block(cfg, self.bank) for _ in range(cfg.layers))
            self.ln = nn.LayerNorm(d)
            # prototypes tied to the token embeddings, bank shared
            if cfg.tversky in ("head", "all"):
                self.head = TverskyProjection(d, cfg.vocab, feature_bank=self.bank,
                                              prototypes=self.tok.weight)
            elif cfg.tversky == "bank_linear":
                self.head = BankLinear(d, cfg.vocab, feature_bank=self.bank,
                                       prototypes=self.tok.weight)
            else:             # tied linear head, as GPT-2 ("none" and "linear")
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


class LMRun(NamedTuple):
    val_ppl: float                          # validation perplexity after the last step
    train_loss: list[float]                 # the training loss of every step
    val_curve: list[tuple[int, float]]      # (steps done, validation PPL) every eval_every


def train_lm(model: CharGPT, train_ids, val_ids, *, steps: int, batch: int = 32, lr: float = 3e-3,
             seed: int = 0, device=None, log_every: int = 0, eval_every: int = 0) -> LMRun:
    """AdamW with cosine decay on random windows.

    Validation: every non-overlapping window of the held-out text, mean cross-entropy per
    character, ``PPL = exp(mean)``; measured after the last step and, with ``eval_every``,
    after every ``eval_every`` steps (and before the first: step 0).
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
    curve, val_curve = [], []
    if eval_every:
        val_curve.append((0, validation_ppl(model, val_ids, dev)))
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
        if eval_every and (step + 1) % eval_every == 0 and step + 1 < steps:
            val_curve.append((step + 1, validation_ppl(model, val_ids, dev)))
    final = validation_ppl(model, val_ids, dev)
    if eval_every:
        val_curve.append((steps, final))
    return LMRun(final, curve, val_curve)


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
