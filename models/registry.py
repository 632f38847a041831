"""The model registry: a card per implemented method, and the result every simulation returns.

``REGISTRY`` is a plain dict that the method modules fill by calling :func:`register`;
registering a name twice is an error. Only what works is registered: a method that is not
implemented yet has no card.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from hw_profiles.errors import ModelError
from hw_profiles.profile import HardwareProfile
from sim.ledger import Ledger

Progress = Callable[[int, int, dict], None]
"""Progress callback: ``(step, total, metrics so far)``; the CLI draws a bar with it."""


@dataclass
class RunResult:
    """What one simulation produced: enough to write a run file and a report.

    Attributes
    ----------
    model, dataset : names
    profile : the profile the simulation ran on, as loaded (the device's own object). Never a
        name: a name would be looked up again when the run file is written, which loses a
        user's file (own name: "unknown profile"; a shipped name: the shipped numbers).
    config : the model's configuration (plain values), stored in the run file
    metrics : scalar results (accuracy, loss, ...)
    ledger : every count the simulation recorded
    traces : optional arrays (loss curves, spike rasters) stored compressed
    """

    model: str
    profile: HardwareProfile
    dataset: str
    config: dict[str, Any]
    metrics: dict[str, float]
    ledger: Ledger
    traces: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.profile, HardwareProfile):
            raise ModelError(f"RunResult({self.model!r}): profile = {self.profile!r} is a "
                             f"{type(self.profile).__name__}; pass the device's HardwareProfile "
                             "(dev.profile), never its name, so the run is priced on the "
                             "numbers it ran with")


@dataclass(frozen=True)
class ModelCard:
    """What a registered method is, what it checks, where it runs, and how to simulate it.

    ``simulate(profile, dataset, seed, quick, progress) -> RunResult`` runs the method on a
    device for the profile and returns its counts and metrics.
    ``export(target, out, *, seed, quick, progress, force) -> Path`` (when ``exports`` is
    not empty) trains the model and writes it for one of the targets in ``exports``; see
    ``deploy/export.py``. ``force`` is passed on to the writer (``deploy/outputs.py``): it
    allows replacing an existing output. ``export_dataset`` names the dataset the export
    trains on, so its files are checked before any training.
    """

    name: str
    title: str
    reference: str
    claim: str
    device_kinds: tuple[str, ...]
    datasets: tuple[str, ...]
    default_dataset: str
    default_profile: str
    simulate: Callable[..., RunResult]
    exports: tuple[str, ...] = ()
    export: Callable[..., Any] | None = None
    export_dataset: str | None = None


REGISTRY: dict[str, ModelCard] = {}


def register(card: ModelCard) -> ModelCard:
    if card.name in REGISTRY:
        raise ModelError(f"model {card.name!r} is already registered")
    REGISTRY[card.name] = card
    return card


def get(name: str) -> ModelCard:
    """The card of a registered model, or an error listing the registered names."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ModelError(f"unknown model {name!r}: registered models are "
                         f"{', '.join(sorted(REGISTRY)) or '(none)'}") from None
