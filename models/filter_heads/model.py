"""A tiny decoder-only transformer with per-head hooks, trained from scratch on SelectOne.

Pre-LayerNorm GPT blocks with rotary position embedding (RoPE) applied *after* the query
and key projections, as in Llama: the query a head computes at a position before RoPE
(``q``) is the state the paper caches and transplants (Sec. 3, "we patch the query states
before the rotary embedding, so RoPE re-applies the destination position"). The loss is
cross-entropy on the answer token only; the model reads out only the last position.

Every attention layer passes its per-head states through a :class:`Hook` at four sites:
``q`` and ``k`` (pre-RoPE), ``v``, and ``z`` (the head's output before the output
projection, used for ablation). The residual stream entering each block passes a fifth
site, ``resid`` (used by the eager-flag test). A hook caches and/or patches them; with no
hook the model is a plain transformer.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from models.filter_heads import data
from models.filter_heads.card import FilterLMConfig
from models.registry import Progress, Trained
from models.shared.training import seeded
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

HEAD_SITES = ("q", "k", "v", "z")


class Hook:
    """Caches and patches per-head states during one forward pass.

    Parameters
    ----------
    positions : sequence of int or None
        Token positions the head sites are cached/patched at, counted from the end when
        negative (the paper patches the last token: ``(-1,)``); ``None`` = every position.
    cache : sites to record (from ``HEAD_SITES``, ``"attn"`` for attention weights at
        ``positions``, ``"resid"`` for the full residual stream entering each block).
    patch : ``{site: (donor, mask)}``: ``donor[layer]`` is a tensor (B or 1, H, P, d_head)
        of states at ``positions``; ``mask`` (L, H) in [0, 1]. The patched state is
        ``x + mask * (donor - x)`` (the paper's mask interpolation; 1 = full transplant,
        0 = untouched). Gradients flow into ``mask``.
    resid_patch : ``(layer, donor, where)``: replace the residual stream entering block
        ``layer`` by ``donor`` (B, T, d) at the positions where ``where`` (B, T) is True.
    """

    def __init__(self, positions=(-1,), cache=(), patch=None, resid_patch=None):
        self.positions = None if positions is None else tuple(int(p) for p in positions)
        self.cache_sites = set(cache)
        self.cached: dict[tuple[str, int], torch.Tensor] = {}
        self.patch = patch or {}
        self.resid_patch = resid_patch

    def _index(self, t: int) -> list[int]:
        if self.positions is None:
            return list(range(t))
        idx = [p + t if p < 0 else p for p in self.positions]
        if any(not 0 <= i < t for i in idx):
            raise ModelError(f"Hook positions {self.positions}: out of range for prompts of "
                             f"{t} tokens")
        return idx

    def site(self, name: str, layer: int, x: torch.Tensor) -> torch.Tensor:
        """x: (B, H, T, d_head) (or (B, H, T, T) for "attn"); returns it, maybe patched."""
        if name not in self.cache_sites and name not in self.patch:
            return x
        idx = self._index(x.shape[2])
        sel = x[:, :, idx]                                           # (B, H, P, .)
        if name in self.cache_sites:
            self.cached[(name, layer)] = sel.detach()
        if name in self.patch:
            donor, mask = self.patch[name]
            m = mask[layer].to(x.dtype).view(1, -1, 1, 1)
            x = x.clone()
            x[:, :, idx] = sel + m * (donor[layer] - sel)
        return x

    def resid(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        """x: (B, T, d) residual stream entering block ``layer``."""
        if "resid" in self.cache_sites:
            self.cached[("resid", layer)] = x.detach()
        if self.resid_patch is not None and self.resid_patch[0] == layer:
            _, donor, where = self.resid_patch
            x = torch.where(where[..., None], donor, x)
        return x


_NO_HOOK = Hook(cache=())


def rope_tables(t: int, d_head: int, base: float = 10000.0):
    inv = 1.0 / base ** (torch.arange(0, d_head, 2, dtype=torch.float32) / d_head)
    ang = torch.outer(torch.arange(t, dtype=torch.float32), inv)    # (T, d_head/2)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x[..., :d/2], x[..., d/2:]) by position-dependent angles (GPT-NeoX)."""
    a, b = x.chunk(2, dim=-1)
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


class Attention(nn.Module):
    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.n_head, self.d_head = n_head, d_model // n_head
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, layer: int, hook: Hook, cos, sin):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_head, self.d_head).permute(2, 0, 3, 1, 4)
        q, k, v = (hook.site(s, layer, u) for s, u in (("q", q), ("k", k), ("v", v)))
        q, k = apply_rope(q, cos[:t], sin[:t]), apply_rope(k, cos[:t], sin[:t])  # (B,H,T,dh)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.d_head)                  # (B,H,T,T)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = torch.softmax(att.masked_fill(~causal, float("-inf")), dim=-1)
        hook.site("attn", layer, att)
        z = hook.site("z", layer, att @ v)                                         # (B,H,T,dh)
        return self.proj(z.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d_model: int, n_head: int, d_mlp: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_head)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_mlp), nn.GELU(), nn.Linear(d_mlp, d_model))

    def forward(self, x, layer, hook, cos, sin):
        x = x + self.attn(self.ln1(x), layer, hook, cos, sin)
        return x + self.mlp(self.ln2(x))


class FilterLM(nn.Module):
    """Decoder-only transformer; ``forward(tokens, hook)`` -> last-position logits (B, V)."""

    def __init__(self, cfg: FilterLMConfig):
        super().__init__()
        self.cfg = cfg
        self.emb = nn.Embedding(data.VOCAB_SIZE, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model) if cfg.abs_pos else None
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_head, cfg.d_mlp)
                                    for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, data.VOCAB_SIZE, bias=False)
        if cfg.tie_embeddings:   # GPT-2 tying, GPT-2 init (tied logits must start small)
            self.head.weight = self.emb.weight
            nn.init.normal_(self.emb.weight, std=0.02)
        cos, sin = rope_tables(cfg.max_len, cfg.d_model // cfg.n_head)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, tokens: torch.Tensor, hook: Hook | None = None,
                tags: torch.Tensor | None = None) -> torch.Tensor:
        if tokens.dim() != 2 or tokens.shape[1] > self.cfg.max_len:
            raise ModelError(f"FilterLM: tokens have shape {tuple(tokens.shape)}, expected "
                             f"(B, T) with T <= {self.cfg.max_len}")
        if tags is not None and tags.shape != tokens.shape:
            raise ModelError(f"FilterLM: tags have shape {tuple(tags.shape)}, expected "
                             f"{tuple(tokens.shape)} like the tokens")
        hook = hook or _NO_HOOK
        x = self.emb(tokens)                                                  # (B, T, d)
        if tags is not None:   # option positions also carry their label token's embedding
            x = x + self.emb(tags) * (tags > 0).unsqueeze(-1).to(x.dtype)
        if self.pos is not None:
            x = x + self.pos.weight[:tokens.shape[1]]
        for layer, block in enumerate(self.blocks):
            x = block(hook.resid(layer, x), layer, hook, self.cos, self.sin)
        return self.head(self.ln_f(x[:, -1]))                                 # (B, V)


@dataclass
class TrainedLM:
    """A trained model with its device and training history."""

    model: FilterLM
    device: TorchDevice
    history: list[dict] = field(default_factory=list)

    def tokens(self, batch: data.Batch) -> torch.Tensor:
        return self.device.tensor(batch.tokens, dtype=torch.int64)

    def logits(self, batch: data.Batch, hook: Hook | None = None) -> torch.Tensor:
        return self.model(self.tokens(batch), hook,
                          self.device.tensor(batch.tags, dtype=torch.int64))

    def trained(self) -> Trained:
        """The weights as plain arrays and the model's settings (what a run file stores)."""
        arrays = {f"param/{k}": v.detach().cpu().numpy()
                  for k, v in self.model.state_dict().items()}
        return Trained(arrays, {"model": asdict(self.model.cfg)})


def from_trained(trained: Trained, device) -> TrainedLM:
    """Rebuild a trained model on ``device`` from its arrays (no training)."""
    cfg = FilterLMConfig(**trained.meta["model"])
    model = FilterLM(cfg)
    model.load_state_dict({k.removeprefix("param/"): torch.as_tensor(v)
                           for k, v in trained.arrays.items() if k.startswith("param/")})
    return TrainedLM(device.compile(model).eval(), device)


def _shapes(cfg: FilterLMConfig):
    return [(f, o, n, t) for f in cfg.formats for o in cfg.orders for t in cfg.task_kinds
            for n in range(data.MIN_OPTIONS, data.MAX_OPTIONS + 1)]


def train(cfg: FilterLMConfig, device: TorchDevice, progress: Progress | None = None,
          scope: str | None = "train") -> TrainedLM:
    """Train on fresh random SelectOne prompts (one random shape per step); ops counted
    under ``scope`` (``None``: not counted, for tests that only need a trained model).
    AdamW with linear warm-up and cosine decay."""
    with seeded(cfg.seed):   # seeded init without touching global state
        model = device.compile(FilterLM(cfg))
    rng = np.random.default_rng(cfg.seed)
    shapes = _shapes(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                            betas=(0.9, 0.98), foreach=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.warmup)
                                              * 0.5 * (1 + math.cos(math.pi * s / cfg.steps)))
    out = TrainedLM(model, device)
    model.train()
    every = max(1, cfg.steps // 20)
    run_loss, run_acc = 0.0, 0.0
    counting = (device.count(scope, samples=cfg.steps * cfg.batch_size) if scope
                else contextlib.nullcontext())
    with counting:
        for step in range(cfg.steps):
            fmt, order, n, task = shapes[rng.integers(len(shapes))]
            batch = data.select_one(rng, cfg.batch_size, n, fmt, order, task, cfg.per_item,
                                    cfg.pred_last)
            logits = out.logits(batch)
            target = device.tensor(batch.answer, dtype=torch.int64)
            loss = nn.functional.cross_entropy(logits, target)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            run_loss += float(loss.detach())
            run_acc += float((logits.detach().argmax(1) == target).float().mean())
            if (step + 1) % every == 0:
                rec = {"step": step + 1, "loss": run_loss / every, "accuracy": run_acc / every}
                out.history.append(rec)
                run_loss, run_acc = 0.0, 0.0
                if progress:
                    progress(step + 1, cfg.steps, rec)
    model.eval()
    return out


@torch.no_grad()
def accuracy(tr: TrainedLM, batch: data.Batch, hook: Hook | None = None) -> float:
    """Fraction of prompts whose top token over the whole vocabulary is the answer."""
    pred = tr.logits(batch, hook).argmax(1).cpu().numpy()
    return float(np.mean(pred == batch.answer))
