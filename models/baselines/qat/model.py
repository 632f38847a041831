"""QAT baseline of BEP: the same binary networks trained with float latent weights, the
straight-through estimator and Adam (the paper's Larq baseline), on a TorchDevice.

Forward = BEP's network exactly: +/-1 inputs, weights ``sign(w_latent)``, activations
``sign(z)`` (sign(0) = +1), logits ``P a_L`` with the same fixed +/-1 frame P
(``models.bep.model.output_frame``). Backward: Larq's ``ste_sign`` (gradient passed where
``|input| <= 1``, zero outside; Courbariaux et al. 2016, arXiv:1602.02830) for activations
and weights; latent weights are clipped to [-1, 1] after each Adam step (Larq's
``weight_clip``). Without batch norm the pre-activation is divided by ``sqrt(K_in)``
before the sign: a positive scale that leaves the binary forward unchanged but brings
``z`` into the STE's window (the only float op the fully binary inference would not
need). With ``batch_norm=True`` a BatchNorm1d sits before each sign instead (the
paper's "QAT with BN", which is not fully binary at inference). Logits are divided by
``sqrt(K_L)`` for the cross-entropy.

Not a registered method: ``bench/bep.py`` runs it beside BEP on a TorchDevice. Its
training loop stays its own (not ``models.shared.training.train_minibatch``): it clips the
latent weights after every step and can skip counting for benchmark repeats.
"""
from __future__ import annotations

import contextlib
import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch

from models.bep.model import output_frame
from models.shared.training import seeded
from sim import seeds
from sim.errors import ModelError
from sim.torch_engine import TorchDevice


class SignSTE(torch.autograd.Function):
    """sign with sign(0) = +1; gradient 1[|x| <= 1] (Larq ste_sign)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x >= 0, 1.0, -1.0).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1).to(g.dtype)


class BinaryLinear(torch.nn.Module):
    """``sign(W_latent) a``, optionally followed by batch norm, then scaled for the STE."""

    def __init__(self, k_in: int, k_out: int, batch_norm: bool):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(k_out, k_in).uniform_(-1, 1))
        self.bn = torch.nn.BatchNorm1d(k_out) if batch_norm else None
        self.scale = 1.0 / math.sqrt(k_in)

    def forward(self, a):
        z = a @ SignSTE.apply(self.weight).t()
        return self.bn(z) if self.bn is not None else z * self.scale


class QATMLP(torch.nn.Module):
    def __init__(self, sizes, frame: np.ndarray, batch_norm: bool):
        super().__init__()
        self.layers = torch.nn.ModuleList(BinaryLinear(a, b, batch_norm)
                                          for a, b in itertools.pairwise(sizes))
        self.register_buffer("frame", torch.as_tensor(frame, dtype=torch.float32))

    def forward(self, x):  # x (B, K_0) +/-1
        a = x
        for lay in self.layers:
            a = SignSTE.apply(lay(a))
        return a @ self.frame.t() / math.sqrt(self.frame.shape[1])


class QATRNN(torch.nn.Module):
    """s_t = sign(W_xs x_t + W_ss s_{t-1}) (s_0 = +1), s_y = sign(W_sy s_T), logits P s_y."""

    def __init__(self, k_x: int, k_s: int, k_y: int, frame: np.ndarray, batch_norm: bool):
        super().__init__()
        self.cell = BinaryLinear(k_x + k_s, k_s, batch_norm)
        self.readout = BinaryLinear(k_s, k_y, batch_norm)
        self.k_s = k_s
        self.register_buffer("frame", torch.as_tensor(frame, dtype=torch.float32))

    def forward(self, x):  # x (B, T, K_x) +/-1
        s = torch.ones(x.shape[0], self.k_s, dtype=x.dtype, device=x.device)
        for t in range(x.shape[1]):
            s = SignSTE.apply(self.cell(torch.cat([x[:, t], s], dim=1)))
        s_y = SignSTE.apply(self.readout(s))
        return s_y @ self.frame.t() / math.sqrt(self.frame.shape[1])


@dataclass
class QATConfig:
    hidden: tuple[int, ...] = (64, 64)   # MLP widths, or (K_s, K_y) for the RNN
    epochs: int = 20
    batch_size: int = 100
    lr: float = 1e-3                     # Adam's default (the Larq baseline uses Adam)
    batch_norm: bool = False
    seed: int = 0

    def __post_init__(self):
        self.hidden = tuple(int(h) for h in self.hidden)
        if not self.hidden or any(h < 1 for h in self.hidden) or self.epochs < 1 \
                or self.batch_size < 1 or not self.lr > 0:
            raise ModelError(f"QATConfig: hidden {self.hidden}, epochs {self.epochs}, batch "
                             f"{self.batch_size}, lr {self.lr}: need widths/epochs/batch >= 1, "
                             "lr > 0")


class QAT:
    """Train/evaluate a QAT binary MLP (2-D inputs) or RNN (3-D inputs) from bit data."""

    def __init__(self, n_inputs: int, n_classes: int, config: QATConfig, device: TorchDevice,
                 recurrent: bool = False):
        self.config, self.dev, self.recurrent = config, device, recurrent
        frame = output_frame(n_classes, config.hidden[-1], config.seed)   # BEP's frame
        with seeded(seeds.child(config.seed, "init")):
            net = QATRNN(n_inputs, *config.hidden, frame, config.batch_norm) if recurrent \
                else QATMLP((n_inputs, *config.hidden), frame, config.batch_norm)
        self.net = device.compile(net)

    def _x(self, bits):
        return self.dev.tensor(2.0 * bits.astype(np.float32) - 1.0)

    def fit(self, x, y, progress=None, count: bool = True):
        """Adam + STE training. ``count=False`` skips the op counting (a ~4x speed-up, for
        benchmark repeats whose cost was counted once already)."""
        cfg, dev = self.config, self.dev
        xt, yt = self._x(x), dev.tensor(y, dtype=torch.int64)
        opt = torch.optim.Adam(self.net.parameters(), lr=cfg.lr)
        gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "order"))
        self.net.train()
        for epoch in range(cfg.epochs):
            order = torch.randperm(len(xt), generator=gen).to(dev.torch_device)
            with dev.count("train", samples=len(xt)) if count else contextlib.nullcontext():
                for s in range(0, len(xt), cfg.batch_size):
                    idx = order[s:s + cfg.batch_size]
                    loss = torch.nn.functional.cross_entropy(self.net(xt[idx]), yt[idx])
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    with torch.no_grad():  # Larq weight_clip: latent weights stay in [-1, 1]
                        for lay in self.net.modules():
                            if isinstance(lay, BinaryLinear):
                                lay.weight.clamp_(-1, 1)
            if progress:
                progress(epoch + 1, cfg.epochs, {"epoch": epoch + 1, "loss": float(loss.detach())})
        return self

    def evaluate(self, x, y, scope: str = "infer") -> dict[str, float]:
        self.net.eval()
        out = self.dev.run(self.net, self._x(x), scope=scope)
        return {"accuracy": float((out.argmax(1).cpu().numpy() == y).mean())}

    @property
    def n_weights(self) -> int:
        return sum(m.weight.numel() for m in self.net.modules() if isinstance(m, BinaryLinear))
