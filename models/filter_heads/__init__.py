"""Filter heads: a tiny transformer learns list filtering; sparse query-patching localises it.

Paper: A. S. Sharma, G. Rogers, N. Shapira, D. Bau, "LLMs Process Lists With General Filter
Heads", ICLR 2026, arXiv:2510.26784 (code: github.com/arnab-api/filter). Claim: a sparse set
of attention heads implements *filter*: their query at the last token encodes the
predicate, keys at option tokens encode the items, and transplanting those queries from a
source prompt makes the model select the item satisfying the *source* predicate in the
destination list (causality), across list formats; ablating them breaks the task; when the
question precedes the list the model instead marks matches eagerly in the items' latents.

Replication (the digest's plan, at the scale of a 2-core CPU): a decoder-only transformer
trained from scratch on synthetic SelectOne prompts (``tasks``), queries cached/patched
before RoPE (``model``), the paper's mask search, causality metric, mean ablation and the
eager-flag residual patch (``patching``), wired together in ``pipeline``.

Readings chosen where the digest is unsure (details in each module's docstring): the
mask-search distractor set and the keep-alive epsilon follow the official code; ablation
is mean-ablation of the head output at the last token; lambda is rescaled for a 16-head
model; the eager test patches one option's residual entering one block, layer by layer.
"""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from models.filter_heads import pipeline as _exp
from models.filter_heads.pipeline import ExperimentConfig, quick_config
from models.registry import ModelCard, Progress, RunResult, register
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

DATASET = "synthetic-lists"


def simulate(profile="a100", dataset: str = DATASET, seed: int = 0, quick: bool = True,
             progress: Progress | None = None, config: ExperimentConfig | None = None
             ) -> RunResult:
    """Run the filter-heads experiment on a TorchDevice for ``profile``.

    ``quick`` uses :func:`quick_config` (the CLI default); ``quick=False`` the bench
    configuration (:class:`ExperimentConfig` defaults). ``config`` overrides both.
    """
    if dataset != DATASET:
        raise ModelError(f"filter_heads: dataset {dataset!r} is not supported; the only "
                         f"dataset is {DATASET!r} (procedural, generated from the seed)")
    cfg = config or (quick_config(seed) if quick else ExperimentConfig(seed=seed))
    dev = TorchDevice(profile)
    metrics, det, tr = _exp.run(cfg, dev, progress=progress)
    n_params = sum(p.numel() for p in tr.model.parameters())
    metrics = {**metrics, "parameters": float(n_params),
               "footprint_bytes": float(dev.footprint_bytes),
               "train_loss": tr.history[-1]["loss"]}
    config = {"model": {**asdict(cfg.model), "orders": list(cfg.model.orders),
                        "formats": list(cfg.model.formats)},
              "search": asdict(cfg.search), "n_eval": cfg.n_eval, "n_random": cfg.n_random,
              "seed": cfg.seed, "heads": [list(h) for h in det["heads"]],
              "random_heads_from": det["random_from"],
              "torch_device": str(dev.torch_device)}
    traces = {k: np.asarray(v, dtype=np.float64) for k, v in det.items()
              if k not in ("heads", "heads_before", "random_from")}
    traces["train_loss"] = np.array([h["loss"] for h in tr.history])
    return RunResult("filter_heads", dev.profile, DATASET, config, metrics, dev.ledger,
                     traces)


def experiment(quick: bool = True, profile="a100", seed: int = 0) -> RunResult:
    """The paper's claims at small scale (see the ``pipeline`` module)."""
    return simulate(profile=profile, seed=seed, quick=quick)


CARD = register(ModelCard(
    name="filter_heads",
    title="LLMs Process Lists With General Filter Heads (tiny transformer replication)",
    reference="Sharma, Rogers, Shapira & Bau, ICLR 2026, arXiv:2510.26784",
    claim="a sparse set of heads carries the predicate in its query: patching it moves the "
          "selection (causality), transfers across list formats, ablating it costs "
          "accuracy; question-first prompts use eager match flags instead",
    device_kinds=("gpu", "cpu"),
    datasets=(DATASET,),
    default_dataset=DATASET,
    default_profile="a100",
    simulate=simulate,
))
