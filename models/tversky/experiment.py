"""The Tversky paper's small claims side by side with their linear anchors.

1. XOR with one layer: a Tversky projection with 2 prototypes and K bank features against
   ``nn.Linear(2, 2)``, counted over seeds (how many fit all 4 points): XOR is not
   linearly separable, so Linear never does; one Tversky layer can.
2. A Tversky head on a frozen encoder against a linear head on the same features (the
   card's run; ``model.py``).

``bench/tversky.py`` adds the character GPT and larger sizes.
"""
from __future__ import annotations

import torch
from torch import nn

from models.registry import Progress, Study
from models.tversky.data import XOR_X, XOR_Y
from models.tversky.layer import TverskyProjection

PLANS = {"quick": {"bank_sizes": (4,), "seeds": 10},
         "full": {"bank_sizes": (1, 2, 4, 8, 16), "seeds": 10}}
"""XOR sweep per preset: bank sizes K and seeds per K (from the study's seed up)."""


def fit_xor(layer: nn.Module, steps: int = 1000) -> tuple[float, float]:
    """Full-batch Adam 1e-2 on cross-entropy over the 4 XOR points; (accuracy, final loss)."""
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    for _ in range(steps):
        loss = nn.functional.cross_entropy(layer(XOR_X), XOR_Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        out = layer(XOR_X)
        return (float((out.argmax(1) == XOR_Y).float().mean()),
                float(nn.functional.cross_entropy(out, XOR_Y)))


def linear_xor(seed: int, steps: int = 1000) -> tuple[float, float]:
    """``fit_xor`` of ``nn.Linear(2, 2)`` initialised from ``seed`` (global RNG untouched)."""
    from models.shared.training import seeded
    with seeded(seed):
        layer = nn.Linear(2, 2)
    return fit_xor(layer, steps)


def xor_study(bank_sizes, seeds) -> dict:
    """Per K, the seeds whose Tversky layer fits XOR exactly; Linear's best accuracy."""
    out = {}
    for k in bank_sizes:
        out[f"tversky_K{k}_solved"] = [s for s in seeds
                                       if fit_xor(TverskyProjection(2, 2, k, seed=s))[0] == 1.0]
    out["linear_accuracies"] = [linear_xor(s)[0] for s in seeds]
    return out


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """XOR sweep of :data:`PLANS` ``[preset]`` and the card's head comparison at ``preset``."""
    from models import runner
    plan = PLANS[preset]
    seeds = list(range(seed, seed + plan["seeds"]))
    xor = xor_study(plan["bank_sizes"], seeds)
    run = runner.run("tversky", profile=profiles.get("gpu"), preset=preset, seed=seed,
                     progress=progress)
    m = run.metrics
    solved = {k: len(v) for k, v in xor.items() if k.startswith("tversky_K")}
    summary = {"xor_seeds": len(seeds), **solved,
               "xor_linear_best_accuracy": max(xor["linear_accuracies"]),
               "tversky_test_accuracy": m["tversky_test_accuracy"],
               "linear_test_accuracy": m["linear_test_accuracy"],
               "relative_gain": (m["tversky_test_accuracy"] - m["linear_test_accuracy"])
               / m["linear_test_accuracy"],
               "claim": "one Tversky layer fits XOR for some seed (Linear never); the Tversky "
                        "head beats the linear head on the same frozen features"}
    summary["claim_met"] = bool(max(solved.values()) > 0
                                and summary["xor_linear_best_accuracy"] < 1.0
                                and m["tversky_test_accuracy"] > m["linear_test_accuracy"])
    return Study({"heads": run}, summary)
