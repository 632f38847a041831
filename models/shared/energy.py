"""Energy per training sample for rooms whose ledger counts only a few training steps.

Counting every torch op costs ~30x a step, so some rooms (``ppl``, ``dave``) count their
first few training steps and run the rest plain: the steps after the first run the same
ops; the first also creates the optimizer's state (Adam's two moments), so it costs more
(``tests/models/shared/test_energy.py`` measures it). :func:`counted_training` says this in
the run's metrics: the per-sample figure over the counted steps, the whole training
*scaled* from them (named ``..._scaled_j``, never mixed with counted totals; with the
first step among few counted ones it overstates the rest, an upper estimate) and which
steps were counted. Light (no torch), so a card can import :data:`ENERGY_METRICS`.
"""
from __future__ import annotations

import math

ENERGY_METRICS = {"energy_per_train_sample_j": "J", "train_energy_scaled_j": "J",
                  "train_steps_counted": "count", "train_steps": "count"}
"""The units of :func:`counted_training`'s metrics, for a card's ``METRICS``."""


def counted_training(device, scope: str, counted_steps: int, steps: int) -> dict[str, float]:
    """The energy metrics of a training whose first ``counted_steps`` of ``steps`` alike
    steps the ledger counted under ``scope``.

    ``energy_per_train_sample_j``: the energy of ``scope`` and its sub-scopes, priced on the
    device's profile, over the samples they recorded: counted, not scaled.
    ``train_energy_scaled_j``: that energy per counted step times ``steps``: the whole
    training scaled from the counted steps, an upper estimate (the first counted step also
    builds the optimizer's state; the ledger and the report's totals hold the counted steps
    only). ``train_steps_counted`` / ``train_steps``: which steps. NaN where
    nothing was counted.
    """
    from sim import phases
    report = device.ledger.price(device.profile)
    n = phases.scope_samples(report.samples, scope)
    energy = report.energy_within(scope)
    k = min(int(counted_steps), int(steps)) if n else 0
    return {"energy_per_train_sample_j": energy / n if n else math.nan,
            "train_energy_scaled_j": energy / k * steps if k else math.nan,
            "train_steps_counted": float(k), "train_steps": float(steps)}
