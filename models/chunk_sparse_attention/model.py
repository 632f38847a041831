"""The networks: a SWA + chunk-encoder + hierarchical-sparse-attention (HSA) decoder, and a
baseline with the same SWA layer and full causal attention (RoPE) in place of HSA.

HSA model, after Leng et al. (arXiv:2510.17196, Sec. 3) and the authors' group
codebase (ant-research/long-context-modeling, ``model/hsa_layers.py``):

1. lower layer: sliding-window causal attention (window ``w``, RoPE) + MLP;
2. chunking layer (``ChunkEncoder``): the hidden states are cut into chunks of ``S`` tokens;
   a learnable CLS vector is appended to each chunk and a bidirectional Transformer encoder
   runs over the ``S + 1`` positions; the landmark is ``lmk_c = W_lmk h_cls`` (one per
   retrieval head) and the chunk memory is ``K_c = W_k E_c``, ``V_c = W_v E_c``;
3. upper layer (``HSALayer``): ``s_{t,c} = q^r_t . lmk_c / sqrt(d_r)`` over the chunks that
   end before ``t`` (``(c + 1) S <= t``), keep the top ``K``, weights ``w = softmax`` over the
   kept scores; ``o_t = sum_c w_{t,c} sum_{j in c} softmax_j(q_t . k_j / sqrt(d_h)) v_j``,
   no RoPE on this path; ``u = W_o o``;
4. bypassing residual: ``x + MLP(norm(x + u))`` (the ``standard`` ablation: ``x + u + MLP(...)``).

Readings chosen where the paper leaves room: one lower SWA layer and one upper HSA group
(no SWA layer after it: nothing above reads other positions); every attention head is a
retrieval head with its own top-K (no GQA: ``h_kv = h``); plain softmax weights (not stick
breaking), no off-by-one softmax; Gumbel noise only in the training-time choice of chunks
(``select_chunks``); the encoder adds a learned in-chunk
position vector (the chunk encoder has no other notion of order) and ends with an RMSNorm;
the SWA and encoder blocks start as the identity (zero output projections, ``zero_init``)
and initial weights have std 1/sqrt(fan_in) -- both only to leave the loss plateau sooner.
Landmark ablations: ``mean`` = the same encoder without CLS, landmark ``W_lmk mean(E_c)``;
``meanpool`` = no encoder (``E_c`` = the normalised hidden states), landmark ``W_lmk
mean(E_c)`` (NSA-style). The upper layer runs only at the positions asked for (``q_pos``),
so a query at the end of a 32K sequence costs O(L) in its own layer; ``q_pos=None`` runs
every position (what the time/memory scaling measures). Shapes: ``B`` batch, ``T`` length,
``P`` query positions, ``h`` heads, ``C`` complete chunks, ``S`` chunk size. Training and
testing on a device (``ChunkAttnLM``) are in ``run.py``.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from models.chunk_sparse_attention.card import ChunkAttnConfig
from models.shared.training import seeded
from sim import seeds
from sim.errors import ModelError

ROPE_BASE = 10000.0
QUERY_BLOCK = 1024   # queries per block in full/HSA attention: bounds score memory at O(L)


class RMSNorm(nn.Module):
    """x / rms(x) * g, written out so every op has a cost formula in the ledger."""

    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MLP(nn.Module):
    def __init__(self, d: int, d_ff: int):
        super().__init__()
        self.up, self.down = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


def rope(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding of ``x`` (B, h, P, d_h) at integer positions ``pos``
    (P,) or (B, P)."""
    half = x.shape[-1] // 2
    freqs = ROPE_BASE ** (-torch.arange(half, device=x.device, dtype=x.dtype) / half)
    ang = pos.to(x.dtype).unsqueeze(-1) * freqs                      # (.., P, half)
    if ang.dim() == 3:
        ang = ang.unsqueeze(1)                                       # (B, 1, P, half)
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def sliding_window_attention(q, k, v, window: int) -> torch.Tensor:
    """Causal attention of position i to j in (i - window, i]; O(T * window) time and memory.

    Queries are cut into blocks of ``window``; each block sees its own and the previous block.
    q, k, v: (B, h, T, d_h) -> (B, h, T, d_h).
    """
    B, h, T, dh = q.shape
    # a window of T or more is plain causal attention: blocks of the window's size would
    # only add masked padding (window = 100000 asked for 320 GB at T = 64)
    w = min(window, T)
    nb = -(-T // w)
    pad = nb * w - T
    if pad:
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    qb = q.view(B, h, nb, w, dh)
    kb, vb = k.view(B, h, nb, w, dh), v.view(B, h, nb, w, dh)
    kk = torch.cat((F.pad(kb, (0, 0, 0, 0, 1, 0))[:, :, :nb], kb), dim=3)   # (B, h, nb, 2w, dh)
    vv = torch.cat((F.pad(vb, (0, 0, 0, 0, 1, 0))[:, :, :nb], vb), dim=3)
    scores = qb @ kk.transpose(-1, -2) / math.sqrt(dh)                        # (B, h, nb, w, 2w)
    a = torch.arange(w, device=q.device)[:, None]
    b = torch.arange(2 * w, device=q.device)[None, :]
    allowed = (b > a) & (b <= a + w)                  # i - j = w + a - b in [0, w)
    first = allowed & (b >= w)                        # block 0 has no previous block
    mask = torch.stack([first] + [allowed] * (nb - 1)) if nb > 1 else first[None]
    scores = scores.masked_fill(~mask, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ vv                                  # (B, h, nb, w, dh)
    return out.reshape(B, h, nb * w, dh)[:, :, :T]


def causal_attention(q, k, v, q_pos) -> torch.Tensor:
    """Full causal attention of queries at positions ``q_pos`` (B, P) to keys ``0..q_pos``.

    q: (B, h, P, d_h); k, v: (B, h, T, d_h). Query blocks of ``QUERY_BLOCK`` keep the score
    matrix at O(QUERY_BLOCK * T); time stays O(P * T).
    """
    T, dh = k.shape[2], q.shape[-1]
    keys = torch.arange(T, device=q.device)
    out = []
    for s in range(0, q.shape[2], QUERY_BLOCK):
        pos = q_pos[:, s:s + QUERY_BLOCK]                                    # (B, b)
        end = int(pos.max()) + 1                       # later keys are all masked: skip them
        sc = q[:, :, s:s + QUERY_BLOCK] @ k[:, :, :end].transpose(-1, -2) / math.sqrt(dh)
        sc = sc.masked_fill((keys[:end] > pos[:, :, None]).unsqueeze(1), float("-inf"))
        out.append(torch.softmax(sc, dim=-1) @ v[:, :, :end])
    return torch.cat(out, dim=2)


class Attention(nn.Module):
    """Multi-head attention: ``swa`` (causal window, RoPE), ``full`` (causal, RoPE) or ``bidir``."""

    def __init__(self, d: int, heads: int, kind: str, window: int = 0):
        super().__init__()
        self.h, self.kind, self.window = heads, kind, window
        self.qkv, self.out = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)

    def forward(self, x, q_pos=None):
        """x: (B, T, d), normalised; ``q_pos`` (B, P): compute only those query rows (full only)."""
        B, T, d = x.shape
        h = self.h
        q, k, v = self.qkv(x).view(B, T, 3, h, d // h).permute(2, 0, 3, 1, 4)  # (B, h, T, dh)
        if self.kind == "bidir":
            o = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // h), dim=-1) @ v
        else:
            all_pos = torch.arange(T, device=x.device)
            k = rope(k, all_pos)
            if self.kind == "swa":
                o = sliding_window_attention(rope(q, all_pos), k, v, self.window)
            else:
                if q_pos is None:
                    q_pos = all_pos.expand(B, T)
                else:
                    q = q.gather(2, q_pos[:, None, :, None].expand(B, h, -1, d // h))
                o = causal_attention(rope(q, q_pos), k, v, q_pos)
        return self.out(o.transpose(1, 2).reshape(B, o.shape[2], d))


class Block(nn.Module):
    """Pre-norm Transformer block; with ``q_pos`` only those rows come out (B, P, d)."""

    def __init__(self, d: int, heads: int, d_ff: int, kind: str, window: int = 0):
        super().__init__()
        self.n1, self.attn, self.n2, self.mlp = (RMSNorm(d), Attention(d, heads, kind, window),
                                                 RMSNorm(d), MLP(d, d_ff))

    def zero_init(self):
        """Start as the identity (zero output projections; Goyal et al. 2017): a random
        encoder block smears each chunk's tokens together and stalls learning on a plateau."""
        nn.init.zeros_(self.attn.out.weight)
        nn.init.zeros_(self.mlp.down.weight)

    def forward(self, x, q_pos=None):
        a = self.attn(self.n1(x), q_pos)
        if q_pos is not None:
            x = x.gather(1, q_pos[..., None].expand(-1, -1, x.shape[-1]))
        x = x + a
        return x + self.mlp(self.n2(x))


class ChunkEncoder(nn.Module):
    """Chunking layer: landmarks (B, h, C, d_r) and chunk memory K, V (B, h, C, S, d_h)."""

    def __init__(self, d, heads, d_ff, chunk, layers, landmark):
        super().__init__()
        self.S, self.h, self.landmark = chunk, heads, landmark
        self.norm = RMSNorm(d)
        if landmark != "meanpool":
            n_pos = chunk + (landmark == "cls")
            self.pos = nn.Parameter(torch.randn(n_pos, d) * 0.02)
            self.layers = nn.ModuleList(Block(d, heads, d_ff, "bidir") for _ in range(layers))
            self.out_norm = RMSNorm(d)
        if landmark == "cls":
            self.cls = nn.Parameter(torch.randn(d) * 0.02)
        self.w_lmk = nn.Linear(d, d, bias=False)
        self.w_kv = nn.Linear(d, 2 * d, bias=False)

    def forward(self, hidden):
        B, T, d = hidden.shape
        S, h, C = self.S, self.h, T // self.S
        e = self.norm(hidden[:, :C * S]).reshape(B * C, S, d)           # (B*C, S, d)
        if self.landmark == "cls":
            e = torch.cat((e, self.cls.expand(B * C, 1, d)), dim=1)      # (B*C, S+1, d)
        if self.landmark != "meanpool":
            e = e + self.pos
            for layer in self.layers:
                e = layer(e)
            e = self.out_norm(e)
        if self.landmark == "cls":
            lm, e = e[:, S], e[:, :S]       # CLS output: retrieval apart from content
        else:
            lm = e.mean(dim=1)
        lmk = self.w_lmk(lm).view(B, C, h, d // h).transpose(1, 2)          # (B, h, C, d_r)
        kv = self.w_kv(e).view(B, C, S, 2, h, d // h).permute(3, 0, 4, 1, 2, 5)
        return lmk, kv[0], kv[1]                                            # (B, h, C, S, dh)


def select_chunks(qr, lmk, q_pos, chunk: int, top_k: int, gumbel: float = 0.0):
    """Top-K chunk selection for queries at ``q_pos``.

    qr: (B, h, P, d_r), lmk: (B, h, C, d_r), q_pos: (B, P). Only chunks that end before the
    query, ``(c + 1) * chunk <= t``, compete. Returns indices (B, h, P, K') and weights
    (softmax over the kept valid scores; 0 where fewer than K chunks exist), K' = min(K, C).
    ``gumbel`` > 0 chooses the chunks by scores plus Gumbel(0, gumbel) noise (training-time
    exploration, the codebase's option; the weights stay the softmax of the clean scores):
    a chunk that is never selected never gets a gradient, so without exploration the
    landmarks cannot learn to pick the needle's chunk.
    """
    C = lmk.shape[2]
    s = qr @ lmk.transpose(-1, -2) / math.sqrt(qr.shape[-1])                # (B, h, P, C)
    ends = (torch.arange(C, device=qr.device) + 1) * chunk
    s = s.masked_fill((ends > q_pos[:, :, None]).unsqueeze(1), float("-inf"))
    if gumbel > 0:    # noisy choice of chunks, clean weights on the chosen ones
        u = torch.rand(s.shape, device=s.device, dtype=s.dtype).clamp_(1e-9, 1 - 1e-9)
        idx = (s - gumbel * torch.log(-torch.log(u))).topk(min(top_k, C), dim=-1).indices
        top = s.gather(-1, idx)
    else:
        top, idx = s.topk(min(top_k, C), dim=-1)
    valid = torch.isfinite(top)
    w = torch.softmax(top.masked_fill(~valid, -1e30), dim=-1) * valid
    return idx, w


class HSALayer(nn.Module):
    """Retrieval + hierarchical sparse attention + MLP with the bypassing (or standard) residual."""

    def __init__(self, d, heads, d_ff, chunk, top_k, residual, gumbel=0.0):
        super().__init__()
        self.h, self.S, self.K, self.residual, self.gumbel = heads, chunk, top_k, residual, gumbel
        self.norm, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.w_r = nn.Linear(d, d, bias=False)
        self.w_q = nn.Linear(d, d, bias=False)
        self.w_o = nn.Linear(d, d, bias=False)
        self.mlp = MLP(d, d_ff)

    def forward(self, x, memory, q_pos):
        """x: (B, P, d) at positions q_pos (B, P). Returns (B, P, d), chunk indices, weights."""
        lmk, K, V = memory
        B, P, d = x.shape
        h, dh, C, S = self.h, d // self.h, lmk.shape[2], self.S
        xn = self.norm(x)
        qr = self.w_r(xn).view(B, P, h, dh).transpose(1, 2)                # (B, h, P, d_r)
        q = self.w_q(xn).view(B, P, h, dh).transpose(1, 2)                 # (B, h, P, dh)
        outs, sel, wts = [], [], []
        k_flat, v_flat = K.reshape(B * h * C, S, dh), V.reshape(B * h * C, S, dh)
        base = (torch.arange(B * h, device=x.device) * C).view(B, h, 1, 1)
        for s in range(0, P, QUERY_BLOCK):
            idx, w = select_chunks(qr[:, :, s:s + QUERY_BLOCK], lmk, q_pos[:, s:s + QUERY_BLOCK],
                                   S, self.K, self.gumbel if self.training else 0.0)
            flat = (base + idx).reshape(-1)
            kg = k_flat[flat].view(*idx.shape, S, dh)                      # (B, h, b, K, S, dh)
            vg = v_flat[flat].view(*idx.shape, S, dh)
            att = torch.einsum("bhpd,bhpksd->bhpks", q[:, :, s:s + QUERY_BLOCK], kg)
            p_in = torch.softmax(att / math.sqrt(dh), dim=-1)              # softmax inside a chunk
            o_c = torch.einsum("bhpks,bhpksd->bhpkd", p_in, vg)            # per-chunk outputs
            outs.append(torch.einsum("bhpk,bhpkd->bhpd", w, o_c))          # mixed by weights
            sel.append(idx)
            wts.append(w)
        u = self.w_o(torch.cat(outs, dim=2).transpose(1, 2).reshape(B, P, d))
        y = self.mlp(self.norm2(x + u))
        out = x + y if self.residual == "bypass" else x + u + y
        return out, torch.cat(sel, dim=2), torch.cat(wts, dim=2)


def _init(module):
    # unit-variance activations (std 1/sqrt(fan_in)): GPT-2's fixed 0.02 is ~1/sqrt(768);
    # at d = 32..64 it leaves attention logits ~0 and stalls learning on a plateau
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=module.in_features ** -0.5)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=1.0)


class HSAModel(nn.Module):
    """Embedding -> SWA block -> chunk encoder -> HSA layer -> norm -> logits."""

    def __init__(self, vocab, d, heads, d_ff, window, chunk, top_k, encoder_layers,
                 landmark, residual, gumbel=0.0):
        super().__init__()
        self.chunk = chunk
        self.emb = nn.Embedding(vocab, d)
        self.lower = Block(d, heads, d_ff, "swa", window)
        self.encoder = ChunkEncoder(d, heads, d_ff, chunk, encoder_layers, landmark)
        self.upper = HSALayer(d, heads, d_ff, chunk, top_k, residual, gumbel)
        self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)
        self.apply(_init)
        for block in (self.lower, *getattr(self.encoder, "layers", ())):
            block.zero_init()

    def forward(self, tokens, q_pos=None, return_selection: bool = False):
        """tokens (B, T) int64; q_pos (B, P) or None (every position). Logits (B, P, vocab)."""
        B, T = tokens.shape
        x = self.lower(self.emb(tokens))                                    # (B, T, d)
        memory = self.encoder(x)
        if q_pos is None:
            q_pos = torch.arange(T, device=tokens.device).expand(B, T)
        else:
            x = x.gather(1, q_pos[..., None].expand(-1, -1, x.shape[-1]))   # (B, P, d)
        y, idx, w = self.upper(x, memory, q_pos)
        logits = self.head(self.norm(y))
        return (logits, idx, w) if return_selection else logits


class FullAttentionModel(nn.Module):
    """Baseline: the same SWA block, then full causal attention (RoPE) in place of HSA."""

    def __init__(self, vocab, d, heads, d_ff, window):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lower = Block(d, heads, d_ff, "swa", window)
        self.upper = Block(d, heads, d_ff, "full")
        self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)
        self.apply(_init)
        for block in (self.lower, self.upper):
            block.zero_init()

    def forward(self, tokens, q_pos=None):
        x = self.lower(self.emb(tokens))
        return self.head(self.norm(self.upper(x, q_pos)))


def check_tokens(tokens: torch.Tensor, q_pos, vocab: int, what: str):
    """Errors naming the input for token/position tensors of the wrong shape or range."""
    if tokens.dim() != 2 or tokens.dtype != torch.int64:
        raise ModelError(f"{what}: tokens have shape {tuple(tokens.shape)} and dtype "
                         f"{tokens.dtype}, expected (B, T) int64")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
        raise ModelError(f"{what}: token ids span {int(tokens.min())}..{int(tokens.max())}, "
                         f"expected 0..{vocab - 1}")
    if q_pos is not None:
        B, T = tokens.shape
        if q_pos.dim() != 2 or q_pos.shape[0] != B:
            raise ModelError(f"{what}: q_pos has shape {tuple(q_pos.shape)}, expected "
                             f"({B}, P) to match tokens")
        if q_pos.numel() and (int(q_pos.min()) < 0 or int(q_pos.max()) >= T):
            raise ModelError(f"{what}: q_pos spans {int(q_pos.min())}..{int(q_pos.max())}, "
                             f"expected positions 0..{T - 1}")


def build(cfg: ChunkAttnConfig) -> nn.Module:
    """The network of ``cfg``, initial weights from the ``"init"`` stream of ``cfg.seed``
    (global RNG state untouched)."""
    with seeded(seeds.child(cfg.seed, "init")):
        if cfg.arch == "full":
            return FullAttentionModel(cfg.task.vocab, cfg.d_model, cfg.heads, cfg.d_ff,
                                      cfg.window)
        return HSAModel(cfg.task.vocab, cfg.d_model, cfg.heads, cfg.d_ff, cfg.window, cfg.chunk,
                        cfg.top_k, cfg.encoder_layers, cfg.landmark, cfg.residual, cfg.gumbel)
