"""The ``[search]`` table of a sweep spec: an Optuna study over a model's settings instead of
a grid (:mod:`deploy.search` runs it).

::

    models = ["mlp"]
    datasets = ["digits"]
    profiles = ["a100"]
    [search]
    method = "nsga2"          # or "tpe", "random"
    trials = 6
    objectives = ["test_accuracy:max", "energy_j:min"]
    # seed = 0                # the sampler's seed (default 0)
    # profile = "a100"        # where energy objectives are priced (default: first profile)
    [search.space]
    hidden = { low = 16, high = 128, log = true }   # integers: an IntDistribution
    lr = { low = 1e-4, high = 1e-2, log = true }    # a float bound: a FloatDistribution
    epochs = { choices = [2, 4] }                   # a CategoricalDistribution

This module only reads and checks the table (no Optuna import): a bad table is one line
naming the key, what is wrong and what would be right, before any trial runs.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deploy.errors import SweepError
from hw_profiles.errors import NeuroedgeError, suggestion

METHODS = ("tpe", "nsga2", "random")
SEARCH_KEYS = ("method", "trials", "objectives", "space", "seed", "profile")
PARAM_KEYS = ("low", "high", "log", "step", "choices")
DIRECTIONS = {"max": "maximize", "min": "minimize"}
ENERGY_OBJECTIVES = ("energy_j", "per_inference_j", "per_train_sample_j", "latency_s")
"""Columns of a priced row (:func:`deploy.sweep.price_rows`) a search may minimise or
maximise beside the card's metrics; priced on the search's profile."""
STUDY_FILE = "study.db"   # the study's database in the sweep's output folder
MAX_TRIALS = 10_000   # as MAX_RUNS for grids: each trial trains a model


@dataclass(frozen=True)
class Param:
    """One dimension of the space: a range (``low``..``high``, integers when both bounds are
    integers, ``log`` spacing, ``step``) or a list of ``choices``."""

    name: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    step: float | int | None = None
    choices: tuple | None = None

    @property
    def is_int(self) -> bool:
        return self.choices is None and isinstance(self.low, int) and isinstance(self.high, int)

    def to_dict(self) -> dict[str, Any]:
        """The keys the spec gave (``log`` only when true)."""
        if self.choices is not None:
            return {"choices": list(self.choices)}
        out = {"low": self.low, "high": self.high}
        if self.log:
            out["log"] = True
        if self.step is not None:
            out["step"] = self.step
        return out

    def ends(self) -> tuple:
        """The values a trial may take at the edges (every choice): checked before running."""
        return self.choices if self.choices is not None else (self.low, self.high)


@dataclass(frozen=True)
class Search:
    """A checked ``[search]`` table."""

    method: str
    trials: int
    objectives: tuple[tuple[str, str], ...]   # (metric or energy column, "max" | "min")
    space: dict[str, Param]
    seed: int = 0
    profile: str | None = None                # a profile ref of the spec; None: the first

    @property
    def directions(self) -> list[str]:
        """Optuna's words: ``["maximize", "minimize"]``."""
        return [DIRECTIONS[d] for _, d in self.objectives]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stored in the study, compared on ``--resume``): every key, the
        ``profile`` the objectives are priced on included (``None``: the spec's first)."""
        return {"method": self.method, "trials": self.trials,
                "objectives": [f"{n}:{d}" for n, d in self.objectives],
                "space": {k: p.to_dict() for k, p in sorted(self.space.items())},
                "seed": self.seed, "profile": self.profile}


def check_keys(doc, keys, where: str) -> None:
    """A SweepError naming the first key of ``doc`` that is not one of ``keys``, with the
    closest of them when one is close (``seds`` -> ``seeds``)."""
    unknown = [k for k in doc if k not in keys]
    if unknown:
        guess = suggestion(unknown[0], keys)
        raise SweepError(f"{where}: unknown key {unknown[0]!r}; "
                         + (f"{guess} " if guess else "") + f"keys are {', '.join(keys)}")


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _param(name: str, doc, where: str) -> Param:
    where = f"{where}.space.{name}"
    if not isinstance(doc, dict):
        raise SweepError(f"{where} = {doc!r}: give a range {{ low = 16, high = 128 }} or "
                         "{ choices = [2, 4] }")
    check_keys(doc, PARAM_KEYS, where)
    if "choices" in doc:
        extra = [k for k in doc if k != "choices"]
        if extra:
            raise SweepError(f"{where}: {extra[0]} with choices; give either choices or "
                             "low/high")
        choices = doc["choices"]
        if not isinstance(choices, list) or not choices:
            raise SweepError(f"{where}.choices = {choices!r}: give a non-empty list")
        texts = [str(c) for c in choices]
        if len(set(texts)) < len(texts):
            raise SweepError(f"{where}.choices = {choices!r}: a value is given twice; give "
                             "each once")
        return Param(name, choices=tuple(choices))
    for end in ("low", "high"):
        if end not in doc:
            raise SweepError(f"{where}: no {end}; give low and high (or choices)")
        v = doc[end]
        if not _is_number(v) or not math.isfinite(v):
            raise SweepError(f"{where}.{end} = {v!r}: give a finite number")
    low, high, log, step = doc["low"], doc["high"], doc.get("log", False), doc.get("step")
    if low > high:
        raise SweepError(f"{where}: low = {low} > high = {high}; give low <= high")
    if not isinstance(log, bool):
        raise SweepError(f"{where}.log = {log!r}: give true or false")
    if log and low <= 0:
        raise SweepError(f"{where}: log = true needs low > 0 (low = {low}); give a "
                         "positive low or log = false")
    if step is not None:
        if not _is_number(step) or not step > 0:
            raise SweepError(f"{where}.step = {step!r}: give a number > 0")
        if log:
            raise SweepError(f"{where}: step and log = true together; Optuna spaces a "
                             "range one way: give one of them")
    if isinstance(low, int) != isinstance(high, int):
        # 16 and 128.0 would silently become a float range: say which was meant
        raise SweepError(f"{where}: low = {low!r} and high = {high!r} are not both integers "
                         "or both floats; give 16 and 128 for integers, 16.0 and 128.0 for "
                         "floats")
    if step is not None and isinstance(low, int) and not isinstance(step, int):
        raise SweepError(f"{where}.step = {step!r}: an integer range takes an integer step")
    return Param(name, low, high, log, step)


def _objective(text, card, where: str) -> tuple[str, str]:
    from models.registry import metric_unit
    name, sep, direction = str(text).rpartition(":")
    if not isinstance(text, str) or not sep or direction not in DIRECTIONS:
        raise SweepError(f"{where}.objectives: {text!r} is not NAME:max or NAME:min; give "
                         "e.g. \"test_accuracy:max\" or \"energy_j:min\"")
    if name not in ENERGY_OBJECTIVES and (metric_unit(card, name) is None or "*" in name):
        metrics = [m for m in card.metrics if "*" not in m]
        guess = suggestion(name, [*metrics, *ENERGY_OBJECTIVES])
        raise SweepError(f"{where}.objectives: {card.name} reports no {name!r}; "
                         + (f"{guess} " if guess else "") + "give one of its metrics "
                         f"({', '.join(metrics) or 'none declared'}) or "
                         f"{', '.join(ENERGY_OBJECTIVES)}")
    return name, direction


def parse_search(doc, *, source: str, models, datasets, presets, seeds, grid,
                 profiles) -> Search:
    """Check the ``[search]`` table ``doc`` of the spec read from ``source``.

    A search runs one model on one dataset, preset and seed (the trials are its samples);
    the space's keys must be settings of that model. Raises SweepError (one line).
    """
    from models import runner
    from models.registry import REGISTRY
    where = f"sweep spec {source}: search"
    if not isinstance(doc, Mapping):
        raise SweepError(f"{where} must be a table [search] with method, trials, objectives "
                         "and [search.space]")
    check_keys(doc, SEARCH_KEYS, where)
    for key, values, what in (("models", models, "model"), ("datasets", datasets, "dataset"),
                              ("presets", presets, "preset"), ("seeds", seeds, "seed")):
        if values is not None and len(values) != 1:
            raise SweepError(f"sweep spec {source}: {key} = {list(values)!r} with [search]: a "
                             f"search runs one {what}; give one (or one spec per {what})")
    from deploy import sweep_own
    if sweep_own.is_own(models[0]):
        raise SweepError(f"sweep spec {source}: [search] of {models[0]}: a search runs a "
                         "card model (neuroedge models); sweep your own model over batch and "
                         "dtype with [grid] instead")
    if grid:
        raise SweepError(f"sweep spec {source}: [grid] with [search]: give fixed settings as "
                         "KEY = { choices = [VALUE] } in [search.space]")
    method = doc.get("method", "tpe")
    if method not in METHODS:
        guess = suggestion(str(method), METHODS)
        raise SweepError(f"{where}.method = {method!r}: unknown; "
                         + (f"{guess} " if guess else "") + f"give one of {', '.join(METHODS)}")
    trials = doc.get("trials")
    if not isinstance(trials, int) or isinstance(trials, bool) or not 1 <= trials <= MAX_TRIALS:
        raise SweepError(f"{where}.trials = {trials!r}: give an integer from 1 to "
                         f"{MAX_TRIALS:,}")
    seed = doc.get("seed", 0)
    from sim.seeds import check as check_seed
    try:
        check_seed(seed, "seed")
    except NeuroedgeError as exc:
        raise SweepError(f"{where}.seed: {exc}") from None
    card = REGISTRY[models[0]].card
    objectives = doc.get("objectives")
    if not isinstance(objectives, list) or not objectives:
        raise SweepError(f"{where}.objectives = {objectives!r}: give a non-empty list such "
                         "as [\"test_accuracy:max\", \"energy_j:min\"]")
    objs = tuple(_objective(o, card, where) for o in objectives)
    names = [n for n, _ in objs]
    if len(set(names)) < len(names):
        raise SweepError(f"{where}.objectives names {names!r}: give each metric once")
    profile = doc.get("profile")
    if profile is not None and profile not in profiles:
        labels = {runner.load_profile(p).label: p for p in profiles}
        if profile not in labels:
            raise SweepError(f"{where}.profile = {profile!r}: not one of the spec's profiles "
                             f"({', '.join(labels)}); give one of them")
        profile = labels[profile]
    space_doc = doc.get("space")
    if not isinstance(space_doc, Mapping) or not space_doc:
        raise SweepError(f"{where}: no [search.space]; give e.g. hidden = {{ low = 16, "
                         "high = 128 }")
    space = {k: _param(k, v, where) for k, v in space_doc.items()}
    for k in space:   # a key the model's Config does not take: the runner's own message
        try:
            runner.check_setting(card.name, k)
        except NeuroedgeError as exc:
            raise SweepError(f"{where}.space.{k}: {exc}") from None
    return Search(method, trials, objs, space, int(seed), profile)


def startup_trials(trials: int) -> int:
    """TPE's random start: a third of the budget, 2 to 10 trials."""
    return max(2, min(10, trials // 3))


def population(trials: int) -> int:
    """NSGA-II's population: a third of the budget, 2 to 50 (three generations at least)."""
    return max(2, min(50, trials // 3))


def override_text(value) -> str:
    """A trial's value as the text ``--set`` takes (the runner types it for the Config)."""
    if isinstance(value, (list, tuple)):
        return ",".join(override_text(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


__all__ = ["Param", "Search", "parse_search", "override_text", "startup_trials", "population",
           "METHODS", "ENERGY_OBJECTIVES"]
