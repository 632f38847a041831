"""Function-sharing KA layers (FS-KAN, arXiv:2509.24472) and the parameter-sharing MLP layer.

One :class:`FSLayer` implements both of the paper's equivariant layers for any pair of
actions of one group (``groups.pair_orbits`` gives the orbits ``O_1..O_H`` of index pairs):

- standard, eq. (12): ``Phi(x)_q = sum_h sum_p 1[(q,p) in O_h] Phi^(h)(x_p)``;
- efficient, eq. (13): ``Phi(x)_q = sum_h Phi^(h)(alpha_h x_q + sum_p 1[(q,p) in O_h] x_p)``.

Each ``Phi^(h)`` is a whole KA sub-layer R^{d_in} -> R^{d_out} ("external sharing")
with Efficient-KAN's univariate functions (App. C):
``phi(x) = w_b SiLU(x) + s * sum_i c_i B_i(x)``, cubic B-splines on a uniform grid of
``grid`` intervals over [-1, 1] extended by ``order`` knots each side; parameters per
sub-layer ``d_in d_out (grid + order + 2)``. With ``phi="linear"`` the same layer is the
parameter-sharing linear layer (``Phi^(h)(z) = W_h z`` plus one bias per output orbit):
DeepSets for ``S_n``, DSS for ``S_n x C_T``, a circular convolution for ``C_n``.

Readings chosen where the paper leaves freedom:
- ``alpha_h`` ("chosen to reuse computations"): alpha_h = 1 when adding ``x_q`` leaves
  fewer distinct aggregates than not adding it (orbit rows of ``M_h + I`` vs ``M_h``);
  this gives the paper's ``Phi_1(x_q) + Phi_2(sum_p x_p)`` for ``S_n``. It is only
  allowed when input and output are the same action (``x_q`` must exist).
  For ``S_n x S_m`` this gives Phi_4 of the sum over the other rows and columns (eq. 13's
  form), not of the total sum.
- An output index that no pair of orbit ``h`` reaches gets no ``Phi^(h)`` term (eq. 12's
  empty sum), rather than ``Phi^(h)(0)``.
- Efficient-KAN's grid update (``update_grid``) is not implemented: the grid stays fixed.

Evaluation is vectorised: only the (input, orbit) pairs that occur are evaluated (all of
them in one GEMM when every pair occurs, as for ``S_n``, ``C_n`` and products), then a
gather and a sum place them on the outputs.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from models.fs_kan.groups import Action, pair_orbits, point_orbits
from sim.errors import ModelError


def bspline_basis(x: torch.Tensor, knots: torch.Tensor, order: int) -> torch.Tensor:
    """B-spline bases of degree ``order`` on ``knots`` by Cox-de Boor.

    Shapes: (...,) -> (..., n_knots - order - 1).
    """
    x = x.unsqueeze(-1)
    b = ((x >= knots[:-1]) & (x < knots[1:])).to(x.dtype)
    for j in range(1, order + 1):   # reciprocals of the (small) knot gaps: multiply, not divide
        left = 1.0 / (knots[j:-1] - knots[:-(j + 1)])
        right = 1.0 / (knots[j + 1:] - knots[1:-j])
        b = ((x - knots[:-(j + 1)]) * left * b[..., :-1]
             + (knots[j + 1:] - x) * right * b[..., 1:])
    return b


def distinct_rows(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a 0/1 matrix (U, inverse) with ``m == U[inverse]``."""
    u, inv = np.unique(m, axis=0, return_inverse=True)
    return u, inv.ravel()


class FSLayer(torch.nn.Module):
    """An FS layer from ``inp`` (N_in points, d_in channels) to ``out`` (N_out points, d_out).

    Parameters
    ----------
    out, inp : Action
        Actions of the same group on the output and input index sets.
    d_in, d_out : int
        Channels per point.
    phi : "kan" or "linear"
        Shared KA sub-layers (FS-KAN) or shared linear maps (parameter-sharing MLP).
    efficient : bool
        Eq. (13) instead of eq. (12).
    grid, order, grid_range : B-spline grid intervals, degree and domain (Efficient-KAN defaults).

    Input ``(B, N_in, d_in)``, output ``(B, N_out, d_out)``.
    """

    def __init__(self, out: Action, inp: Action, d_in: int, d_out: int, phi: str = "kan",
                 efficient: bool = False, grid: int = 5, order: int = 3,
                 grid_range: tuple[float, float] = (-1.0, 1.0)):
        super().__init__()
        if phi not in ("kan", "linear"):
            raise ModelError(f"FSLayer: phi = {phi!r}; expected 'kan' or 'linear'")
        for name, v in (("d_in", d_in), ("d_out", d_out), ("grid", grid), ("order", order)):
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ModelError(f"FSLayer: {name} = {v!r}; expected an integer >= 1")
        self.n_in, self.n_out, self.d_in, self.d_out = inp.n_points, out.n_points, d_in, d_out
        self.phi, self.efficient, self.order = phi, efficient, order
        orbits = pair_orbits(out, inp)                               # (N_out, N_in)
        self.n_orbits = H = int(orbits.max()) + 1
        self.all_pairs = False
        self.plain_gather = False  # True: place by indexing (ONNX export); else embedding_bag
        if efficient:
            rows, heads, index = self._efficient_plan(orbits, out, inp)
            self.register_buffer("aggregate", torch.as_tensor(rows, dtype=torch.float32))
        else:
            rows, heads, index = self._standard_plan(orbits)
            self.register_buffer("source", torch.as_tensor(rows, dtype=torch.int64))
        self.n_evaluations = len(heads)      # sub-layer evaluations per sample
        self.register_buffer("head", torch.as_tensor(heads, dtype=torch.int64))
        self.register_buffer("index", torch.as_tensor(index, dtype=torch.int64))
        self.register_buffer("orbits", torch.as_tensor(orbits))

        if phi == "kan":
            lo, hi = grid_range
            h = (hi - lo) / grid
            self.register_buffer("knots", torch.arange(-order, grid + order + 1,
                                                       dtype=torch.float32) * h + lo)
            self.base_weight = torch.nn.Parameter(torch.empty(H, d_out, d_in))
            self.spline_weight = torch.nn.Parameter(torch.empty(H, d_out, d_in, grid + order))
            self.spline_scaler = torch.nn.Parameter(torch.empty(H, d_out, d_in))
            self._init_kan(grid)
        else:
            bound = 1.0 / math.sqrt(d_in)   # torch.nn.Linear's default init
            self.weight = torch.nn.Parameter(torch.empty(H, d_out, d_in).uniform_(-bound, bound))
            out_orbits = point_orbits(out)            # one bias per orbit of outputs
            self.register_buffer("bias_index", torch.as_tensor(out_orbits))
            self.bias = torch.nn.Parameter(
                torch.empty(int(out_orbits.max()) + 1, d_out).uniform_(-bound, bound))

    # --- plans: which (aggregate, orbit) pairs to evaluate and where they go -------------
    def _standard_plan(self, orbits):
        n_out, n_in, H = *orbits.shape, self.n_orbits
        present = np.zeros((n_in, H), bool)
        present[np.arange(n_in)[None, :].repeat(n_out, 0), orbits] = True
        if present.all():                      # every orbit meets every input: one GEMM
            self.all_pairs = True
            row_of = np.arange(n_in * H).reshape(n_in, H)
            src, heads = np.nonzero(np.ones((n_in, H), bool))
        else:
            src, heads = np.nonzero(present)
            row_of = -np.ones((n_in, H), np.int64)
            row_of[src, heads] = np.arange(len(src))
        index = row_of[np.arange(n_in)[None, :], orbits]            # (N_out, N_in)
        return src, heads, index

    def _efficient_plan(self, orbits, out, inp):
        same = (out.n_points == inp.n_points
                and np.array_equal(out.generator_perms(), inp.generator_perms()))
        eye = np.eye(self.n_in, dtype=np.int8) if same else None
        rows, heads = [], []
        index = np.full((self.n_out, self.n_orbits), -1, np.int64)   # -1: no term
        for h in range(self.n_orbits):         # per orbit (not per sample): setup only
            m = (orbits == h).astype(np.int8)                        # (N_out, N_in)
            u, inv = distinct_rows(m)
            if eye is not None:
                u1, inv1 = distinct_rows(m + eye)
                if len(u1) < len(u):
                    u, inv = u1, inv1
            reached = m.any(axis=1)
            keep = np.unique(inv[reached])
            renum = -np.ones(len(u), np.int64)
            renum[keep] = np.arange(len(keep)) + len(heads)
            index[reached, h] = renum[inv[reached]]
            rows.extend(u[keep])
            heads.extend([h] * len(keep))
        return np.asarray(rows, np.float32), np.asarray(heads, np.int64), index

    # --- parameters ------------------------------------------------------------------
    def _init_kan(self, grid):
        """Efficient-KAN's init: Kaiming-uniform base and scaler, spline fitted to small noise."""
        H, d_out, d_in = self.base_weight.shape
        bound = 1.0 / math.sqrt(d_in)   # kaiming_uniform_(a=sqrt(5)) on a (d_out, d_in) weight
        with torch.no_grad():
            self.base_weight.uniform_(-bound, bound)
            self.spline_scaler.uniform_(-bound, bound)
            # noise at the G+1 grid points, scale 0.1/G, least-squares spline coefficients
            pts = self.knots[self.order:-self.order]                  # (G+1,)
            noise = (torch.rand(H, d_out, d_in, grid + 1) - 0.5) * 0.1 / grid
            a = bspline_basis(pts, self.knots, self.order).double()  # (G+1, G+k)
            # minimum-norm least squares (what Efficient-KAN's lstsq returns for this
            # under-determined system), written out: LAPACK's lstsq is not bit-reproducible
            coef = a.T @ torch.linalg.solve(a @ a.T, noise.reshape(-1, grid + 1).T.double())
            self.spline_weight.copy_(coef.T.reshape(H, d_out, d_in, -1))

    def _weights(self) -> torch.Tensor:
        """(H, d_out, F): the sub-layers' weights over the features of :meth:`_features`."""
        if self.phi == "linear":
            return self.weight
        spline = self.spline_weight * self.spline_scaler.unsqueeze(-1)   # (H, out, in, G+k)
        return torch.cat([self.base_weight, spline.flatten(2)], dim=2)

    def _features(self, z: torch.Tensor) -> torch.Tensor:
        """(B, K, d_in) -> (B, K, F): [SiLU(z), B-spline bases of z] for KAN, z for linear."""
        if self.phi == "linear":
            return z
        return torch.cat([F.silu(z), bspline_basis(z, self.knots, self.order).flatten(2)], 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or x.shape[1:] != (self.n_in, self.d_in):
            raise ModelError(f"FSLayer: input has shape {tuple(x.shape)}, expected "
                             f"(B, {self.n_in}, {self.d_in})")
        if self.efficient:
            z = torch.einsum("kp,bpi->bki", self.aggregate.to(x.dtype), x)   # (B, K, d_in)
        elif self.all_pairs:
            z = x                                                          # (B, N_in, d_in)
        else:
            z = x[:, self.source]                                          # (B, K, d_in)
        f = self._features(z)
        w = self._weights()                                                # (H, out, F)
        if self.all_pairs:                     # (B, N_in, F) x (F, H*out): rows p*H + h
            y = (f @ w.reshape(-1, w.shape[-1]).T).reshape(x.shape[0], -1, self.d_out)
        else:
            y = torch.einsum("bkf,kof->bko", f, w[self.head])              # (B, K, out)
        out = self._place(y)                                               # (B, N_out, out)
        if self.phi == "linear":
            out = out + self.bias[self.bias_index]
        return out

    def _place(self, y: torch.Tensor) -> torch.Tensor:
        """out[b, q] = sum_t y[b, index[q, t]] (index -1: nothing): (B, K, d) -> (B, N_out, d).

        One ``embedding_bag`` over rows of length B*d: a sum of gathered rows without
        materialising the (B, N_out, N_in, d) gather (5x faster on CPU than indexing).
        """
        B, K, d = y.shape
        if self.plain_gather:      # the same sum by indexing (exports to ONNX, slower)
            y = F.pad(y, (0, 0, 0, 1))                                     # row -1 = no term
            return y[:, self.index].sum(2)
        rows = torch.cat([y.permute(1, 0, 2).reshape(K, B * d),
                          y.new_zeros(1, B * d)])                          # row K (= -1): 0
        index = torch.where(self.index < 0, K, self.index)
        out = F.embedding_bag(index, rows, mode="sum")                     # (N_out, B*d)
        return out.reshape(-1, B, d).permute(1, 0, 2)

    def regularization_loss(self, activation: float = 1.0, entropy: float = 1.0) -> torch.Tensor:
        """Efficient-KAN's regulariser: L1 of mean |spline coefficient| plus its entropy."""
        if self.phi != "kan":
            return self.weight.new_zeros(())
        l1 = self.spline_weight.abs().mean(-1)                             # (H, out, in)
        total = l1.sum()
        p = l1 / total
        return activation * total - entropy * (p * p.log()).sum()
