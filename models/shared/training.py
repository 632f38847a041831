"""The torch training loop and seeded initialisation, written once for every torch room.

:func:`seeded` builds modules from a seed without touching torch's global RNG (so one
method's run never shifts another's). Both take the seed of one stream: a room passes a
named child of its run seed (``sim.seeds.child(cfg.seed, "init")`` to :func:`seeded`,
``sim.seeds.child(cfg.seed, "order")`` to :func:`train_minibatch`), never the same seed to
both. :func:`train_minibatch` is mini-batch training with
Adam (Kingma & Ba 2015, arXiv:1412.6980) or AdamW, one ``device.count(scope)`` block per
epoch so every forward, backward and optimizer op lands in the ledger, the order drawn from
its own generator (``seed``), progress once per epoch. Its step-size schedule is
``models.shared.schedules.lr_factor``, the one float PC's ``PCNet`` (and so DiffPC) follows.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import torch

from models.shared.schedules import lr_factor


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with torch's CPU RNG seeded by ``seed`` (a named stream's seed, e.g.
    ``seeds.child(cfg.seed, "init")``), restoring the global state afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        yield


def train_minibatch(device, params, batch_loss: Callable[[torch.Tensor], torch.Tensor],
                    n: int, *, epochs: int, batch_size: int, lr: float, seed: int,
                    weight_decay: float = 0.0, optimizer: str = "adam",
                    lr_schedule: str = "constant", scope: str = "train", progress=None,
                    after_epoch: Callable[[dict], None] | None = None) -> list[dict]:
    """Train ``params`` for ``epochs`` over ``n`` samples; returns one record per epoch.

    ``batch_loss(idx)`` returns the mean loss of the samples ``idx`` (a LongTensor on the
    device); ``seed`` seeds the order's own generator (a named stream's seed, e.g.
    ``seeds.child(cfg.seed, "order")``). Each record holds ``epoch`` and ``train_loss``
    (the sample-weighted mean over the epoch); ``after_epoch(record)`` may add to it (a
    validation accuracy) before ``progress(epoch, epochs, record)`` is called.
    ``lr_schedule`` (:func:`lr_factor`) sets each step's size over the
    ``epochs x ceil(n / batch_size)`` steps of the run.
    """
    params = list(params)
    kinds = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
    opt = kinds[optimizer](params, lr=lr, weight_decay=weight_decay, foreach=True)
    gen = torch.Generator().manual_seed(int(seed))
    lr_factor(lr_schedule, 0, 1)   # an unknown schedule fails before any training
    n_steps, step = epochs * math.ceil(n / batch_size), 0
    history: list[dict] = []
    for epoch in range(epochs):
        order = torch.randperm(n, generator=gen).to(device.torch_device)
        total = 0.0
        with device.count(scope, samples=n):
            for start in range(0, n, batch_size):
                idx = order[start:start + batch_size]
                for group in opt.param_groups:
                    group["lr"] = lr * lr_factor(lr_schedule, step, n_steps)
                step += 1
                loss = batch_loss(idx)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
        record = {"epoch": epoch + 1, "train_loss": total / max(n, 1)}
        if after_epoch is not None:
            after_epoch(record)
        history.append(record)
        if progress:
            progress(epoch + 1, epochs, record)
    return history
