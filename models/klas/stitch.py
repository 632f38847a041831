"""Stitching primitive of SN-Net (Pan et al. 2023, arXiv:2302.06586), reused unchanged by KLAS.

A stitched network runs the patch embedding and blocks 1..i of the cheaper anchor f, maps
the tokens with a token-wise linear layer T (d_f -> d_g), then runs blocks j+1..n_g, the
final norm and the head of the costlier anchor g:  y = g_{>j} . T . f_{<=i}(x).
T is initialised by least squares on a batch, (W, b) = argmin sum ||A^g_j - (W A^f_i + b)||^2,
through the pseudo-inverse as SN-Net's ``ps_inv`` does. Reading chosen here: one stitching
layer per (i, j) configuration (SN-Net shares one layer between neighbouring positions and
averages their LS solutions; with the handful of blocks of a tiny anchor the sharing saves
nothing worth its approximation, so each configuration keeps its own exact LS solution).
"""
from __future__ import annotations

import torch
from torch import nn

from models.klas.vit import TinyViT, cls_token
from sim.errors import ModelError


def least_squares(src: torch.Tensor, dst: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Weight (d_dst, d_src) and bias (d_dst,) minimising ||dst - (src W^T + b)||^2 token-wise.

    ``src`` (..., d_src) and ``dst`` (..., d_dst) must have the same leading shape (samples
    and tokens); the solve runs in float64 through the pseudo-inverse (SN-Net's ``ps_inv``).
    """
    if src.shape[:-1] != dst.shape[:-1]:
        raise ModelError(f"least_squares: src has shape {tuple(src.shape)} and dst "
                         f"{tuple(dst.shape)}; their leading (sample, token) dims must match")
    x = src.reshape(-1, src.shape[-1]).double()                   # (N*T, d_src)
    y = dst.reshape(-1, dst.shape[-1]).double()                   # (N*T, d_dst)
    if x.shape[0] < x.shape[1] + 1:
        raise ModelError(f"least_squares: {x.shape[0]} rows cannot determine {x.shape[1]} "
                         f"weights + 1 bias per output; give >= {x.shape[1] + 1} tokens")
    x1 = torch.cat([x, torch.ones_like(x[:, :1])], dim=1)        # (N*T, d_src + 1)
    sol = torch.linalg.pinv(x1) @ y                               # (d_src + 1, d_dst)
    return sol[:-1].T.to(src.dtype).contiguous(), sol[-1].to(src.dtype).contiguous()


class StitchLayer(nn.Linear):
    """Token-wise linear map d_f -> d_g (SN-Net's ``StitchingLayer``)."""

    def ls_init(self, src: torch.Tensor, dst: torch.Tensor) -> StitchLayer:
        """Set weight and bias to the least-squares map from ``src`` to ``dst`` activations."""
        if src.shape[-1] != self.in_features or dst.shape[-1] != self.out_features:
            raise ModelError(f"StitchLayer.ls_init: layer maps {self.in_features} -> "
                             f"{self.out_features} but src has width {src.shape[-1]} and dst "
                             f"{dst.shape[-1]}")
        w, b = least_squares(src.detach(), dst.detach())
        with torch.no_grad():
            self.weight.copy_(w)
            self.bias.copy_(b)
        return self


def check_stitch(f: TinyViT, g: TinyViT, i: int, j: int) -> None:
    """Raise ModelError unless (i, j) is a valid stitch from f to g.

    i = blocks of f that run (1..n_f); j = blocks of g skipped (1..n_g - 1, so that g
    keeps at least one block and its probe P^g_j exists).
    """
    if f.n_tokens != g.n_tokens or f.n_inputs != g.n_inputs:
        raise ModelError(f"stitch f -> g: f has {f.n_tokens} tokens of {f.n_inputs} inputs, g "
                         f"{g.n_tokens} of {g.n_inputs}; anchors must share the patch layout")
    if isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= f.depth:
        raise ModelError(f"stitch f -> g: i = {i!r}; expected an int in 1..{f.depth} "
                         "(blocks of f that run)")
    if isinstance(j, bool) or not isinstance(j, int) or not 1 <= j <= g.depth - 1:
        raise ModelError(f"stitch f -> g: j = {j!r}; expected an int in 1..{g.depth - 1} "
                         "(blocks of g skipped)")


class StitchedViT(nn.Module):
    """g_{>j} . T . f_{<=i}: a plain feed-forward module (shares parameters with f and g).

    Parameters
    ----------
    f, g : anchors (f the cheaper one)
    i : blocks of f that run, 1..f.depth
    j : blocks of g skipped, 1..g.depth - 1
    stitch : StitchLayer mapping f.dim -> g.dim (a fresh one if None)
    """

    def __init__(self, f: TinyViT, g: TinyViT, i: int, j: int, stitch: StitchLayer | None = None):
        super().__init__()
        check_stitch(f, g, i, j)
        stitch = stitch if stitch is not None else StitchLayer(f.dim, g.dim)
        if (stitch.in_features, stitch.out_features) != (f.dim, g.dim):
            raise ModelError(f"StitchedViT: stitch maps {stitch.in_features} -> "
                             f"{stitch.out_features}; expected {f.dim} -> {g.dim} (f.dim -> g.dim)")
        self.i, self.j, self.n_inputs = i, j, f.n_inputs
        self.embed = f.embed
        self.front = nn.ModuleList(f.blocks[:i])
        self.stitch = stitch
        self.back = nn.ModuleList(g.blocks[j:])
        self.norm, self.head = g.norm, g.head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)                 # (B, T, d_f)
        for blk in self.front:
            h = blk(h)
        h = self.stitch(h)                # (B, T, d_g)
        for blk in self.back:
            h = blk(h)
        return self.head(self.norm(cls_token(h)))
