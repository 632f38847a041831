"""Float predictive coding (PC) classifier on TorchDevice: DiffPC's float baseline ("PC-SE").

Discriminative PC (Whittington & Bogacz 2017, doi:10.1162/NECO_a_00949; Millidge et al.
arXiv:2006.04182; Rosenbaum 2022, arXiv:2106.13082), the "Strict" variant DiffPC
(Karlsson et al., ICLR 2026) compares with as its PC-SE baseline:

- prediction ``mu_l = W_l phi(x_{l-1}) + b_l`` (``phi`` = ReLU on hidden layers, identity
  on the input pixels, which are >= 0), error ``eps_l = x_l - mu_l``,
  energy ``F = 1/2 sum_l ||eps_l||^2``;
- per batch: feed-forward init ``x_l = mu_l``; clamp ``x_L = y`` (one-hot); ``steps``
  inference steps ``x_l += eta (-eps_l + phi'(x_l) * W_{l+1}^T eps_{l+1})`` on hidden
  layers, recomputing mu and eps every step;
- weight rule ``dW_l = eps_l phi(x_{l-1})^T``, ``db_l = eps_l`` (batch mean), fed as
  ``-dW`` to AdamW.

Every tensor op of training and inference runs inside ``TorchDevice.count`` so the ledger
holds its ops and bytes. The epoch loop is PC's own (no autograd: the weight rule and the
inference steps are explicit; the order is numpy's ``seeds.rng(seed, "order")``), so
``models.shared.training.train_minibatch`` (autograd, torch's generator) does not fit it.
Inference (test) is the feed-forward pass: argmax of ``mu_L``. Communication per neuron
and inference step is two dense 32-bit floats (``phi(x)`` up, ``eps`` down): 64 bits x
steps, the count the DiffPC paper charges PC with.
"""
from __future__ import annotations

import numpy as np
import torch

from models.baselines.pc.card import PCConfig
from models.registry import Progress, Trained
from models.shared.checks import all_finite, check_xy, optimizer_overflow_is_config_error
from models.shared.schedules import lr_factor
from sim import seeds
from sim.errors import ModelError
from sim.torch_engine import TorchDevice


def relu_prime(x: torch.Tensor) -> torch.Tensor:
    return (x > 0).to(x.dtype)


class PCNet:
    """Weights, AdamW and the float PC dynamics; DiffPC reuses the weights and optimizer.

    Parameters
    ----------
    sizes : (K_0, ..., K_L) layer widths, input first
    lr, weight_decay : AdamW settings
    seed : the init seed (callers pass their run seed's ``seeds.child(seed, "init")``)
    torch_device : where the tensors live
    """

    def __init__(self, sizes, lr: float, weight_decay: float, seed: int,
                 torch_device="cpu"):
        self.sizes = tuple(int(s) for s in sizes)
        gen = torch.Generator().manual_seed(seed)
        self.W, self.b = [], []
        for a, k in zip(self.sizes[:-1], self.sizes[1:], strict=False):   # widths in, out
            bound = 1.0 / np.sqrt(a)   # torch.nn.Linear's default init range
            self.W.append(((torch.rand(k, a, generator=gen) * 2 - 1) * bound)
                          .to(torch_device))                       # (K_l, K_{l-1})
            self.b.append(((torch.rand(k, generator=gen) * 2 - 1) * bound).to(torch_device))
        self.opt = torch.optim.AdamW(self.W + self.b, lr=lr, weight_decay=weight_decay,
                                     foreach=True)
        self.lr, self.schedule, self.total_steps, self.steps_taken = lr, "constant", 1, 0

    def set_schedule(self, schedule: str, total_steps: int) -> None:
        """Follow ``schedule`` (``models.shared.schedules.lr_factor``) over the next
        ``total_steps`` calls of :meth:`step` (a whole training run: epochs x batches)."""
        lr_factor(schedule, 0, 1)   # an unknown name fails here, before any training
        self.schedule, self.total_steps, self.steps_taken = schedule, int(total_steps), 0

    @property
    def L(self) -> int:
        return len(self.W)

    @staticmethod
    def phi(x: torch.Tensor, layer: int) -> torch.Tensor:
        return x if layer == 0 else torch.relu(x)   # input pixels pass unchanged

    def predict(self, xs: list[torch.Tensor], layer: int) -> torch.Tensor:
        """mu_l = W_l phi(x_{l-1}) + b_l, (B, K_l)."""
        return self.phi(xs[layer - 1], layer - 1) @ self.W[layer - 1].T + self.b[layer - 1]

    def feedforward(self, x: torch.Tensor) -> list[torch.Tensor]:
        xs = [x]
        for layer in range(1, self.L + 1):
            xs.append(self.predict(xs, layer))
        return xs

    def infer(self, x: torch.Tensor, y1h: torch.Tensor, steps: int, eta: float):
        """Strict PC inference; returns the states xs and errors eps (index = layer)."""
        xs = self.feedforward(x)
        xs[-1] = y1h
        for _ in range(steps):
            eps = [None] + [xs[k] - self.predict(xs, k) for k in range(1, self.L + 1)]
            for k in range(1, self.L):
                fb = eps[k + 1] @ self.W[k]                       # W_{l+1}^T eps_{l+1}
                xs[k] = xs[k] + eta * (-eps[k] + relu_prime(xs[k]) * fb)
        eps = [None] + [xs[k] - self.predict(xs, k) for k in range(1, self.L + 1)]
        return xs, eps

    def step(self, pre: list[torch.Tensor], eps: list[torch.Tensor]) -> None:
        """PC weight rule through AdamW: grad W_l = -eps_l pre_{l-1}^T / B, at the step
        size the schedule gives this call (:meth:`set_schedule`; constant by default).

        ``pre[l]`` is the presynaptic activity phi(x_l) (or DiffPC's announced copy)."""
        B = eps[1].shape[0]
        for k in range(1, self.L + 1):
            self.W[k - 1].grad = -(eps[k].T @ pre[k - 1]) / B
            self.b[k - 1].grad = -eps[k].mean(0)
        for group in self.opt.param_groups:
            group["lr"] = self.lr * lr_factor(self.schedule, self.steps_taken,
                                              self.total_steps)
        self.steps_taken += 1
        self.opt.step()

    def presyn(self, xs):
        return [self.phi(xs[k], k) for k in range(len(xs))]


class PCClassifier:
    """Float PC trained with AdamW on a TorchDevice (ops counted under train/infer)."""

    def __init__(self, n_inputs: int, n_classes: int, config: PCConfig, device: TorchDevice):
        self.config, self.device = config, device
        self.sizes = (n_inputs, *config.hidden, n_classes)
        self.net = PCNet(self.sizes, config.lr, config.weight_decay,
                         seeds.child(config.seed, "init"), device.torch_device)
        self.history: list[dict] = []

    def fit(self, x, y, progress: Progress | None = None):
        check_xy(x, y, self.sizes[0], self.sizes[-1], "PCClassifier.fit")
        cfg, dev, net = self.config, self.device, self.net
        xt = dev.tensor(x)
        yt = torch.nn.functional.one_hot(torch.as_tensor(y), self.sizes[-1]).float() \
            .to(dev.torch_device)
        net.set_schedule(cfg.lr_schedule, cfg.epochs * -(-len(x) // cfg.batch_size))
        shuffle = seeds.rng(cfg.seed, "order")   # one stream; a new permutation each epoch
        for epoch in range(cfg.epochs):
            order = shuffle.permutation(len(x))
            energy = 0.0
            with optimizer_overflow_is_config_error("PCConfig", cfg.lr, "AdamW"), \
                    dev.count("train", samples=len(x)), torch.no_grad():
                for s in range(0, len(x), cfg.batch_size):
                    idx = torch.as_tensor(order[s:s + cfg.batch_size])
                    xs, eps = net.infer(xt[idx], yt[idx], cfg.steps, cfg.eta)
                    net.step(net.presyn(xs), eps)
                    energy += float(sum((e ** 2).sum() for e in eps[1:])) / 2
            # a diverged run (lr = 1e20, or eta = 1000 making the inference iteration blow
            # up) reported energy nan
            if not (np.isfinite(energy) and all_finite(net.W + net.b)):
                raise ModelError(f"PCConfig lr = {cfg.lr}, eta = {cfg.eta}: training "
                                 f"diverged in epoch {epoch + 1} (non-finite energy or "
                                 "weights); expected a smaller lr or eta (defaults 1e-3, 0.1)")
            rec = {"epoch": epoch + 1, "energy": energy / len(x)}
            self.history.append(rec)
            if progress:
                progress(epoch + 1, cfg.epochs, rec)
        return self

    def evaluate(self, x, y, scope: str = "infer") -> dict[str, float]:
        check_xy(x, y, self.sizes[0], self.sizes[-1], "PCClassifier.evaluate")
        with self.device.count(scope, samples=len(x)), torch.no_grad():
            out = self.net.feedforward(self.device.tensor(x))[-1]
        pred = out.argmax(1).cpu().numpy()
        return {"accuracy": float(np.mean(pred == y))}

    def trained(self) -> Trained:
        """The weights and biases as plain arrays (what a run file stores)."""
        return pcnet_trained(self.net, self.sizes)


def comm_bits_per_neuron(steps: int) -> float:
    """Float PC's messages per neuron per sample: 2 x 32-bit floats per inference step."""
    return 64.0 * steps


def pcnet_trained(net: PCNet, sizes) -> Trained:
    """A PCNet's weights and biases as plain arrays (``W1, b1, ...``) with its layer sizes:
    the trained state of float PC and of DiffPC, which learns with the same PCNet."""
    arrays = {}
    for k in range(net.L):
        arrays[f"W{k + 1}"] = net.W[k].detach().cpu().numpy()
        arrays[f"b{k + 1}"] = net.b[k].detach().cpu().numpy()
    return Trained(arrays, {"sizes": list(sizes)})
