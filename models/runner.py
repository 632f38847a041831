"""The one runner: profile -> device, preset + overrides -> config, simulate -> RunResult.

Everything that runs a registered method goes through here: the CLI (``simulate``,
``export``), the benchmarks in ``bench/`` and the sweeps. It is the only place that

* resolves a profile through ``sim.device()`` and refuses a kind the card does not run on,
* checks that the dataset is one of the card's and that its files are there,
* builds the config from the card's preset for the dataset plus overrides (an unknown key
  is an error listing the fields; text values are parsed to the field's type),
* calls the method's ``simulate`` and wraps its ``Outcome`` in a ``RunResult``.

Checks come first (:func:`prepare`), so a typo fails in a second, not after the training;
so does a model too large for the device, where its Config can tell its size
(:func:`check_device_fit`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hw_profiles.errors import NeuroedgeError, suggestion
from hw_profiles.loader import shown
from hw_profiles.profile import HardwareProfile
from models.registry import (
    PRESETS,
    Card,
    Method,
    Outcome,
    Progress,
    RunResult,
    Study,
    get,
    metric_unit,
)
from sim.errors import ModelError


@dataclass(frozen=True)
class Plan:
    """A checked request: which method, on which profile and data, with which config."""

    method: Method
    profile: HardwareProfile
    dataset: str
    preset: str
    config: Any
    overrides: dict[str, Any]

    @property
    def seed(self) -> int:
        return self.config.seed


def method_of(model: str | Method) -> Method:
    return model if isinstance(model, Method) else get(model)


# -- configs ---------------------------------------------------------------------------------
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def _first_member(args, convert, otherwise: str):
    """``convert(a)`` for the first member ``a`` of a union's ``args`` (None left out) that
    takes the value; else the first member's error (or ``otherwise`` when there is none)."""
    errors = []
    for a in (a for a in args if a is not type(None)):
        try:
            return convert(a)
        except ModelError as exc:
            errors.append(str(exc))
    raise ModelError(errors[0] if errors else otherwise)


def _parse(text: str, tp, where: str):
    """``text`` as a value of type ``tp`` (int, float, bool, str, tuples, X | None, Literal)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if text.lower() == "none" and type(None) in args:
            return None
        return _first_member(args, lambda a: _parse(text, a, where),
                             f"{where}: cannot parse {text!r}")
    if origin is typing.Literal:
        for a in args:
            if str(a) == text:
                return a
        raise ModelError(f"{where}: {text!r} is not one of {', '.join(map(str, args))}")
    if origin in (tuple, list):
        parts = [p.strip() for p in text.strip("()[] ").split(",") if p.strip()]
        item = args[0] if args else str
        values = [_parse(p, item, where) for p in parts]
        return tuple(values) if origin is tuple else values
    if tp is bool:
        low = text.strip().lower()
        if low in _TRUE or low in _FALSE:
            return low in _TRUE
        raise ModelError(f"{where}: {text!r} is not a boolean; give true or false")
    if tp is int:
        try:
            value = int(text)
        except ValueError:
            raise ModelError(f"{where}: {shown(text)} is not an integer") from None
        return _int64(value, where)
    if tp is float:
        try:
            value = float(text)
        except ValueError:
            raise ModelError(f"{where}: {text!r} is not a number") from None
        if not math.isfinite(value):
            raise ModelError(f"{where}: {text!r} is not a finite number")
        return value
    if tp is str:
        return text
    try:
        return json.loads(text)
    except ValueError:
        raise ModelError(f"{where}: {text!r} is not valid JSON for a {tp} field") from None


def field_types(config_cls) -> dict[str, Any]:
    """Field name -> type of a Config dataclass (annotations resolved)."""
    hints = typing.get_type_hints(config_cls)
    return {f.name: hints.get(f.name, str) for f in dataclasses.fields(config_cls)}


def _check_value(value, tp, where: str):
    """A value given as itself (not text: ``overrides={"epochs": 3}`` from Python or a
    sweep spec's TOML), checked against the field's type as :func:`_parse` checks text: an
    int field takes an integer (not 2.5, not True), a float field a finite number, a bool
    field a bool, a tuple field a list or tuple of such items; returned in the field's type
    (a list as a tuple). Types this does not know pass unchanged."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return _first_member(args, lambda a: _check_value(value, a, where),
                             f"{where}: {value!r} is not allowed")
    if origin is typing.Literal:
        if value in args:
            return value
        raise ModelError(f"{where}: {value!r} is not one of {', '.join(map(str, args))}")
    if origin in (tuple, list):
        if not isinstance(value, (tuple, list)):
            raise ModelError(f"{where}: {value!r} is not a list; give a list of values")
        item = args[0] if args else None
        values = [v if item is None else _check_value(v, item, where) for v in value]
        return tuple(values) if origin is tuple else values
    if tp is bool:
        if _is_bool(value):
            return bool(value)
        raise ModelError(f"{where}: {value!r} is not a boolean; give true or false")
    if tp is int:
        if isinstance(value, numbers.Integral) and not _is_bool(value):
            return _int64(int(value), where)
        raise ModelError(f"{where}: {shown(value)} is not an integer")
    if tp is float:
        if isinstance(value, numbers.Real) and not _is_bool(value):
            if not math.isfinite(float(value)):
                raise ModelError(f"{where}: {value!r} is not a finite number")
            return float(value)
        raise ModelError(f"{where}: {value!r} is not a number")
    if tp is str:
        if isinstance(value, str):
            return value
        raise ModelError(f"{where}: {value!r} is not text")
    return value


INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


def _int64(value: int, where: str) -> int:
    """``value`` if it fits in 64 bits. Every integer setting ends in numpy, torch or a numba
    kernel as an int64 (a hidden size, a step count, an exponent); a larger one was a
    TypeError or OverflowError traceback after the command had started."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ModelError(f"{where}: {shown(value)} is outside the 64-bit integer range "
                         f"{INT64_MIN}..{INT64_MAX}, which every integer setting must fit")
    return value


def _is_bool(value) -> bool:
    """A Python or numpy bool (numpy's is no ``numbers.Integral``; not imported here)."""
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def parse_overrides(model: str | Method, items) -> dict[str, Any]:
    """``["hidden=400", "epochs=3"]`` (or a dict) as typed values for the card's Config.

    Raises ModelError naming an unknown key and listing the fields, or a value that does
    not parse to the field's type.
    """
    card = method_of(model).card
    types_ = field_types(card.config)
    pairs = items.items() if isinstance(items, dict) else [_split(item) for item in items or ()]
    out: dict[str, Any] = {}
    for key, value in pairs:
        check_setting(card, key)
        out[key] = _parse(value, types_[key], f"--set {key}") if isinstance(value, str) \
            else _check_value(value, types_[key], f"--set {key}")
    return out


def check_setting(model, key: str) -> None:
    """A one-line ModelError unless ``key`` is a setting of the model's Config (the seed is
    not: it has its own option), with the closest setting as a suggestion."""
    card = model if isinstance(model, Card) else method_of(model).card
    types_ = field_types(card.config)
    if key not in types_ or key == "seed":
        fields = [k for k in types_ if k != "seed"]
        hint = "give the seed with --seed" if key == "seed" else \
            suggestion(key, fields, "neuroedge models") or f"fields are {', '.join(fields)}"
        raise ModelError(f"--set {key}: {card.name} has no setting {key!r}; {hint}")


def _split(item: str) -> tuple[str, str]:
    key, sep, value = str(item).partition("=")
    if not sep or not key.strip():
        raise ModelError(f"--set {item!r}: expected KEY=VALUE (e.g. --set epochs=3)")
    return key.strip(), value.strip()


def make_config(model: str | Method, preset: str, dataset: str, seed: int,
                overrides: dict[str, Any] | None = None):
    """The card's Config for ``dataset``: preset values, then ``overrides``, then the seed."""
    card = method_of(model).card
    if preset not in PRESETS:
        raise ModelError(f"preset {preset!r}: presets are {', '.join(PRESETS)}")
    from sim import seeds  # numpy: loaded when a run is prepared, not for `models`
    values = {**card.presets[preset][dataset], **(overrides or {}),
              "seed": seeds.check(seed)}   # out of range: refused here, before any work
    try:
        return card.config(**values)
    except TypeError as exc:  # a field the dataclass does not take: a bug in the card
        raise ModelError(f"{card.name}: {card.config.__name__}({values}) failed: {exc}") from None


def config_from_dict(model: str | Method, values: dict[str, Any]):
    """Rebuild a Config from a run file's config (JSON lists back to tuples)."""
    card = method_of(model).card
    types_ = field_types(card.config)
    known = {k: v for k, v in values.items() if k in types_}
    for k, v in known.items():
        if isinstance(v, list) and typing.get_origin(types_[k]) is tuple:
            known[k] = tuple(v)
    return card.config(**known)


# -- checks ------------------------------------------------------------------------------------
def load_profile(profile) -> HardwareProfile:
    from hw_profiles import load
    return load(profile)


def check_kind(method: Method, profile: HardwareProfile, option: str = "profile") -> None:
    card = method.card
    if profile.kind not in card.device_kinds:
        raise ModelError(f"{option} {profile.label!r} is a {profile.kind!r} profile; model "
                         f"{card.name!r} runs on {', '.join(card.device_kinds)} profiles")
    if card.engine == "torch" and profile.kind == "bitwise" \
            and "mac_fp32" not in profile.energy_pj:
        # a torch model counts float MACs: a bitwise part that prices none (an FPGA's
        # XNOR fabric) could not price the run, found only after the training
        raise ModelError(f"{option} {profile.label!r} prices no float MAC (mac_fp32): model "
                         f"{card.name!r} runs in float32 on a bitwise profile, so it needs "
                         "a microcontroller that does (cortex-m4, stm32l4r5, ...)")


def check_priceable(profile: HardwareProfile) -> None:
    """A gpu or cpu profile needs its ``[execution]`` parameters to price the run; the
    loader accepts a profile without them (a run file's old snapshot), so a user's file
    that lacks them is refused here, before the training, not by the pricing after it."""
    if profile.kind in ("gpu", "cpu"):
        from sim.execution.gpu_cpu import check_execution
        check_execution(profile)


def check_dataset(method: Method, dataset: str) -> None:
    from models.shared import datasets
    card = method.card
    if dataset not in card.datasets:
        guess = suggestion(dataset, card.datasets)
        raise ModelError(f"model {card.name!r} takes datasets {', '.join(card.datasets)}; "
                         f"got {dataset!r}" + (f": {guess}" if guess else ""))
    datasets.check_available(dataset)


def prepare(model: str | Method, *, profile=None, dataset: str | None = None,
            preset: str = "quick", seed: int = 0, overrides=None) -> Plan:
    """Every check that needs no training; returns the :class:`Plan` that :func:`execute` runs."""
    method = method_of(model)
    card = method.card
    prof = load_profile(profile if profile is not None else card.default_profile)
    check_kind(method, prof)
    check_priceable(prof)
    dataset = dataset or card.default_dataset
    check_dataset(method, dataset)
    parsed = parse_overrides(method, overrides or {})
    cfg = make_config(method, preset, dataset, seed, parsed)
    check_device_fit(method, cfg, prof, dataset)
    return Plan(method, prof, dataset, preset, cfg, parsed)


def check_device_fit(method: Method, cfg, profile: HardwareProfile, dataset: str) -> None:
    """What the profile's device must take for this config, checked before any data is
    loaded, any engine built or any model trained: the bitwise engine's word width (32 or
    64 bits), and, where the card's Config says how (a method ``check_device(profile,
    dataset)``, which knows the model's size from the config and the data set's shape),
    that the model's state fits the device's memories. Both were found only inside
    ``execute`` (``BitwiseDevice`` and its ``reserve`` in ``simulate``), seconds after
    ``export`` said it was training; they stay there as the check of what was built.

    Raises
    ------
    ModelError, HardwareLimitError
        One line naming the profile, what it lacks and what the model needs.
    """
    if method.card.engine is None and profile.kind == "bitwise":
        from sim.bitwise.device import check_word_bits
        check_word_bits(profile)
    check = getattr(cfg, "check_device", None)
    if callable(check):
        check(profile, dataset)


def device_for(method: Method, profile) -> Any:
    """The engine for ``profile`` (``sim.device``), after the card's kind check."""
    import sim
    prof = load_profile(profile)
    check_kind(method, prof)
    return sim.device(prof, engine=method.card.engine)


def execute(plan: Plan, progress: Progress | None = None) -> RunResult:
    """Run a prepared plan: device, data, ``simulate``, RunResult."""
    method = plan.method
    device = device_for(method, plan.profile)
    try:
        data = method.load_data(plan.dataset, plan.config)
        outcome = method.simulate(plan.config, device, data, progress)
    except MemoryError as exc:   # numpy's "Unable to allocate 14.7 TiB" among them
        raise ModelError(_out_of_memory(plan, exc)) from None
    except RuntimeError as exc:
        if not _allocation_failed(exc):
            raise
        raise ModelError(_out_of_memory(plan, exc)) from None
    if not isinstance(outcome, Outcome):
        raise NeuroedgeError(f"{method.name}.simulate returned a {type(outcome).__name__}; "
                             "the contract is an Outcome(metrics, traces, trained)")
    return RunResult(method.name, device.profile, plan.dataset,
                     dataclasses.asdict(plan.config), outcome.metrics, device.ledger,
                     outcome.traces, preset=plan.preset, facts=outcome.facts,
                     trained=outcome.trained, units=metric_units(method, outcome.metrics),
                     main_metric=method.card.main_metric)


def _allocation_failed(exc: RuntimeError) -> bool:
    """torch's CPU or CUDA allocator refusing a tensor (``DefaultCPUAllocator: can't
    allocate memory``, ``[enforce fail at alloc_cpu.cpp]``, ``CUDA out of memory``)."""
    text = str(exc)
    return any(k in text for k in ("can't allocate memory", "alloc_cpu", "out of memory"))


def _out_of_memory(plan: Plan, exc: BaseException) -> str:
    """One line for a run whose settings need more memory than the machine gives."""
    first = " ".join(str(exc).split())[:160]
    asked = ", ".join(f"{k}={v!r}" for k, v in plan.overrides.items()) or "its preset's"
    return (f"{plan.method.name} with settings {asked} needs more memory than this machine "
            f"gives ({type(exc).__name__}: {first}); use smaller sizes (--set)")


def metric_units(method: Method, metrics) -> dict[str, str]:
    """Metric name -> the unit the card declares; a metric it does not declare is refused
    (a report would show it without a unit, and a loss could read like joules)."""
    card, units = method.card, {}
    for name in metrics:
        unit = metric_unit(card, name)
        if unit is None:
            declared = ", ".join(card.metrics) or "none"
            raise ModelError(f"{card.name}.simulate reported metric {name!r}, which card "
                             f"{card.name!r} does not declare; add it to Card.metrics with "
                             f"its unit (declared: {declared})")
        units[name] = unit
    return units


def run(model: str | Method, *, profile=None, dataset: str | None = None,
        preset: str = "quick", seed: int = 0, overrides=None,
        progress: Progress | None = None) -> RunResult:
    """Check, then simulate ``model``: ``run("mlp", profile="a100", overrides={"epochs": 3})``."""
    return execute(prepare(model, profile=profile, dataset=dataset, preset=preset, seed=seed,
                           overrides=overrides), progress)


def study(model: str | Method, *, preset: str = "quick", seed: int = 0, profiles=None,
          progress: Progress | None = None) -> Study:
    """The method's ``experiment`` (the paper's comparison) at ``preset``."""
    method = method_of(model)
    if preset not in PRESETS:
        raise ModelError(f"preset {preset!r}: presets are {', '.join(PRESETS)}")
    chosen = {**method.card.study_profiles, **(profiles or {})}
    return method.experiment(preset, seed, chosen, progress)


# -- run file names -------------------------------------------------------------------------
_SAFE = re.compile(r"[^A-Za-z0-9._,=+-]")


def _text(value) -> str:
    if isinstance(value, (tuple, list)):
        return ",".join(_text(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def profile_stem(profile: HardwareProfile) -> str:
    """A profile's part of a file name: a shipped profile by its name, a user's file by its
    stem plus ``-file`` (so ``my/a100.toml`` never takes the name of a shipped a100 run)."""
    return profile.name if profile.label == profile.name else Path(profile.path).stem + "-file"


def run_file_name(plan: Plan, directory: str | Path = "runs") -> Path:
    """``runs/MODEL-DATASET-PROFILE-PRESET-seedN[-key=value...].h5``: the seed and every
    override are in the name, so parallel runs never share a file."""
    parts = [plan.method.name, plan.dataset, profile_stem(plan.profile), plan.preset,
             f"seed{plan.seed}"]
    extra = "-".join(f"{k}={_text(v)}" for k, v in sorted(plan.overrides.items()))
    extra = _SAFE.sub("_", extra)
    if len(extra) > 80:   # keep names short; the digest still separates distinct overrides
        extra = "set" + hashlib.sha256(extra.encode()).hexdigest()[:10]
    stem = "-".join(parts + ([extra] if extra else []))
    return Path(directory) / f"{stem}.h5"
