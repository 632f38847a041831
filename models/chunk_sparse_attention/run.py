"""Chunk sparse attention's run: a network of ``model.py`` on a TorchDevice, trained on the
procedural needle task (``data.py``) and tested at several lengths (Leng et al., ICLR 2026,
arXiv:2510.17196, Sec. 5).

Random streams, named children of ``cfg.seed`` (``sim.seeds``): ``"init"`` (``model.build``),
``("train", "data")`` (the training sequences), ``("train", "gumbel")`` (the training-time
Gumbel noise on the chunk scores) and ``"eval"`` (the test sequences).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch.nn import functional as F

from models.chunk_sparse_attention.card import ChunkAttnConfig, retention_16x
from models.chunk_sparse_attention.data import NeedleTask
from models.chunk_sparse_attention.model import build, check_tokens
from models.registry import Outcome, Progress, Trained
from models.shared.training import seeded
from sim import seeds
from sim.errors import ModelError
from sim.traces import curve

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice


class ChunkAttnLM:
    """A model of ``cfg`` on a TorchDevice: ``fit`` on the needle task, ``evaluate`` at any
    length. ``task``: the needle task (default ``cfg.task``)."""

    def __init__(self, cfg: ChunkAttnConfig, device: TorchDevice, task: NeedleTask | None = None):
        self.cfg, self.device = cfg, device
        self.task = task or cfg.task
        if self.task.vocab != cfg.task.vocab:
            raise ModelError(f"ChunkAttnLM: the task's vocabulary ({self.task.vocab} tokens) "
                             f"differs from the config's ({cfg.task.vocab})")
        self.net = device.compile(build(cfg))
        self.history: list[dict] = []

    def _tensors(self, batch):
        tokens, q_pos, answers, needle = batch
        dev = self.device
        return (dev.tensor(tokens, torch.int64), dev.tensor(q_pos, torch.int64),
                dev.tensor(answers, torch.int64), needle)

    def fit(self, progress: Progress | None = None, log_every: int = 50,
            target: float | None = None, val_n: int = 128):
        """Adam with warm-up + cosine decay on fresh batches; counted under ``train``.

        ``target``: train to a target (issue 34): every ``log_every`` steps once the
        warm-up on short sequences is over, measure answer accuracy at ``train_len`` on
        ``val_n`` validation sequences (the ``"val"`` stream, the same sequences at every
        check, never the test stream) and stop as soon as it is >= ``target``;
        ``cfg.steps`` is then the step cap. ``self.val_history`` keeps the checks,
        ``self.steps_done`` the steps run."""
        cfg, net = self.cfg, self.net
        self.val_history: list[dict] = []
        self.steps_done = 0
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, foreach=True)
        rng = seeds.rng(cfg.seed, "train", "data")
        net.train()
        # the Gumbel noise draws from torch's RNG: seed it without touching global state
        gumbel = seeds.child(cfg.seed, "train", "gumbel")
        with seeded(gumbel), self.device.count("train", samples=cfg.steps * cfg.batch):
            for step in range(cfg.steps):
                lr = cfg.lr * min(1.0, (step + 1) / cfg.warmup) * \
                    0.5 * (1 + np.cos(np.pi * step / cfg.steps))
                for g in opt.param_groups:
                    g["lr"] = lr
                length = cfg.warm_len if step < cfg.warm_frac * cfg.steps else cfg.train_len
                tokens, q_pos, answers, _ = self._tensors(
                    self.task.batch(rng, cfg.batch, length, cfg.chunk))
                logits = net(tokens, q_pos)                                  # (B, P, V)
                loss = F.cross_entropy(logits.flatten(0, 1), answers.flatten())
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if (step + 1) % log_every == 0 or step + 1 == cfg.steps:
                    acc = float((logits.argmax(-1) == answers).float().mean())
                    rec = {"step": step + 1, "loss": float(loss.detach()), "accuracy": acc}
                    self.history.append(rec)
                    if progress:
                        progress(step + 1, cfg.steps, rec)
                self.steps_done = step + 1
                if target is not None and length == cfg.train_len and \
                        ((step + 1) % log_every == 0 or step + 1 == cfg.steps):
                    val = self.evaluate(cfg.train_len, n=val_n, scope="val",
                                        seed=seeds.child(cfg.seed, "val"))["accuracy"]
                    net.train()
                    self.val_history.append({"step": step + 1, "accuracy": val})
                    if val >= target:
                        break
        return self

    @torch.no_grad()
    def evaluate(self, length: int, n: int, seed: int = 1234, batch: int = 8,
                 scope: str | None = None) -> dict[str, float]:
        """Answer accuracy (and HSA retrieval recall) on ``n`` fresh sequences of ``length``.

        Recall: the chunk holding the asked needle is among some head's top-K for the query.
        Counted under ``scope`` (default ``infer/L<length>``).
        """
        cfg, net, task = self.cfg, self.net, self.task
        if n < 1 or batch < 1:
            raise ModelError(f"ChunkAttnLM.evaluate: n = {n}, batch = {batch}: both must be >= 1")
        if length < task.min_length(cfg.chunk):
            raise ModelError(f"ChunkAttnLM.evaluate: length = {length} is below the task's "
                             f"minimum {task.min_length(cfg.chunk)}")
        rng = np.random.default_rng(seed)
        net.eval()
        hits = found = total = 0
        with self.device.count(scope or f"infer/L{length}", samples=n):
            for s in range(0, n, batch):
                m = min(batch, n - s)
                tokens, q_pos, answers, needle = self._tensors(
                    task.batch(rng, m, length, cfg.chunk))
                if cfg.arch == "hsa":
                    logits, idx, _ = net(tokens, q_pos, return_selection=True)
                    chunk = torch.as_tensor(needle // cfg.chunk, device=idx.device)
                    found += int((idx == chunk[:, None, :, None]).any(-1).any(1).sum())
                else:
                    logits = net(tokens, q_pos)
                hits += int((logits.argmax(-1) == answers).sum())
                total += answers.numel()
        out = {"accuracy": hits / total}
        if cfg.arch == "hsa":
            out["recall"] = found / total
        return out

    @torch.no_grad()
    def logits(self, tokens: torch.Tensor, q_pos: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, P, vocab) for ``tokens`` (B, T) at ``q_pos`` (B, P) (None: every position)."""
        check_tokens(tokens, q_pos, self.task.vocab, "ChunkAttnLM.logits")
        self.net.eval()
        return self.net(tokens.to(self.device.torch_device),
                        None if q_pos is None else q_pos.to(self.device.torch_device))

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.net.parameters())

    def trained(self) -> Trained:
        """The weights as plain arrays (what a run file stores)."""
        arrays = {f"param/{k}": v.detach().cpu().numpy()
                  for k, v in self.net.state_dict().items()}
        return Trained(arrays, {"arch": self.cfg.arch, "vocab": self.task.vocab})


def run(cfg: ChunkAttnConfig, device: TorchDevice, data: NeedleTask,
        progress: Progress | None = None) -> Outcome:
    """Train a model of ``cfg`` on ``data`` at ``cfg.train_len`` tokens, test it at each of
    ``cfg.eval_lengths``: the card's Outcome (metrics ``accuracy_L<n>``, ``recall_L<n>``,
    ``retention_16x``, ``train_loss``, ``parameters``, ``footprint_bytes``)."""
    model = ChunkAttnLM(cfg, device, task=data).fit(progress=progress)
    metrics: dict[str, float] = {}
    for length, n in zip(cfg.eval_lengths, cfg.eval_samples, strict=True):
        r = model.evaluate(length, n=n, seed=seeds.child(cfg.seed, "eval"))
        metrics.update({f"{k}_L{length}": v for k, v in r.items()})
    ret = retention_16x(metrics, cfg.train_len)
    if ret is not None:
        metrics["retention_16x"] = ret
    metrics.update(train_loss=model.history[-1]["loss"], parameters=model.n_parameters,
                   footprint_bytes=device.footprint_bytes)
    traces = {"train_loss": curve([h["loss"] for h in model.history]),
              "train_accuracy": curve([h["accuracy"] for h in model.history])}
    facts = {"vocab": data.vocab, "torch_device": str(device.torch_device),
             "data_source": "procedural: multi-key needle task drawn from the seed"}
    return Outcome(metrics, traces, model.trained(), facts)
