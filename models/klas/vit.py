"""Tiny Vision Transformer anchors for KLAS stitching (DeiT layout, scaled down for a CPU).

Same structure as DeiT (Touvron et al. 2021, arXiv:2012.12877) and SN-Net's anchors: patch
embedding + CLS token + learned positions, pre-norm blocks (multi-head self-attention, MLP),
final LayerNorm and a linear head on the CLS token. The pieces a stitch needs are separate
modules (``embed``, ``blocks``, ``norm``, ``head``) so a stitched network can reuse them.
Attention is written with plain matmuls so every op is priced by TorchDevice and exported
to ONNX as standard operators.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from sim.errors import ModelError


def cls_token(h: torch.Tensor) -> torch.Tensor:
    """(B, T, D) -> (B, D), token 0. ``split`` rather than ``h[:, 0]``: the engine has no cost
    formula for ``select_backward``, while split's backward (zeros + cat) is counted."""
    return h.split([1, h.shape[1] - 1], dim=1)[0].squeeze(1)


class PatchEmbed(nn.Module):
    """(B, H*W) pixels -> (B, 1 + (H/p)*(W/p), dim) tokens: CLS + linear patch projections."""

    def __init__(self, dim: int, patch: int = 7, image: int = 28):
        super().__init__()
        if image % patch:
            raise ModelError(f"PatchEmbed: image size {image} is not a multiple of patch {patch}")
        self.patch, self.image, self.grid = patch, image, image // patch
        self.proj = nn.Linear(patch * patch, dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, 1 + self.grid ** 2, dim) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, g, p = x.shape[0], self.grid, self.patch
        x = x.reshape(b, g, p, g, p).permute(0, 1, 3, 2, 4).reshape(b, g * g, p * p)  # (B, N, p*p)
        tok = self.proj(x)                                                          # (B, N, D)
        return torch.cat([self.cls.expand(b, -1, -1), tok], dim=1) + self.pos       # (B, 1+N, D)


class Block(nn.Module):
    """Pre-norm transformer block: x + MHSA(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, dim: int, heads: int, mlp_ratio: int = 2):
        super().__init__()
        if dim % heads:
            raise ModelError(f"Block: width {dim} is not divisible by heads {heads}")
        self.heads, self.scale = heads, 1.0 / math.sqrt(dim // heads)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, mlp_ratio * dim), nn.Linear(mlp_ratio * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)            # each (B, H, T, d/H)
        att = torch.softmax((q @ k.transpose(-2, -1)) * self.scale, dim=-1)  # (B, H, T, T)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))


class TinyViT(nn.Module):
    """A small DeiT-style classifier: ``embed`` -> ``blocks`` -> ``norm`` -> ``head`` (CLS token).

    Parameters
    ----------
    dim, depth, heads : width, number of blocks, attention heads
    patch, image : patch side and image side in pixels (square, one channel)
    n_classes : output classes
    """

    def __init__(self, dim: int, depth: int, heads: int, patch: int = 7, image: int = 28,
                 n_classes: int = 10, mlp_ratio: int = 2):
        super().__init__()
        if depth < 2:
            raise ModelError(f"TinyViT: depth = {depth}: stitching needs >= 2 blocks")
        self.dim, self.depth, self.n_inputs, self.n_classes = dim, depth, image * image, n_classes
        self.embed = PatchEmbed(dim, patch, image)
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio) for _ in range(depth))
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, n_classes)

    @property
    def n_tokens(self) -> int:
        return 1 + self.embed.grid ** 2

    def classify(self, h: torch.Tensor) -> torch.Tensor:
        """Tokens (B, T, D) -> logits (B, C) from the CLS token, as DeiT."""
        return self.head(self.norm(cls_token(h)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        for blk in self.blocks:
            h = blk(h)
        return self.classify(h)

    def block_outputs(self, x: torch.Tensor) -> list[torch.Tensor]:
        """[A_1, ..., A_n]: the token activations after each block, (B, T, D) each."""
        out, h = [], self.embed(x)
        for blk in self.blocks:
            h = blk(h)
            out.append(h)
        return out
