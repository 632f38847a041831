"""Your own model in a sweep: ``models = ["net.py:make_net"]`` (a Python file and the factory
in it, as ``neuroedge estimate`` takes it) swept over profiles, batch sizes and dtypes::

    models = ["net.py:make_net"]      # relative to the spec's folder
    input_shape = [1, 1, 28, 28]      # one inference, batch first (as --input-shape)
    profiles = ["a100", "jetson-orin", "cortex-m7"]
    [grid]
    batch = [1, 8, 32]                # replaces input_shape's first dimension
    dtype = ["fp32", "int8"]          # as estimate's --dtype

Each run is one :func:`deploy.estimate.estimate` of the factory's module on an input of
standard normal values drawn with the run's seed (the dataset column says
``random-normal``), counted once and priced on the spec's profiles; its ledger goes to the
run file like a card model's, with the profiles it cannot run on (a microcontroller it does
not fit, a neuromorphic chip) and their reasons in the run's facts, so every row, resumed or
not, says why. Inference only (estimate's ``--train`` step is not swept).
"""
from __future__ import annotations

import re
from pathlib import Path

from deploy.cli_args import INPUT_DTYPES
from sim.errors import ModelError
from sim.precision import DTYPES

SETTINGS = ("batch", "dtype", "input_dtype")
DATASET = "random-normal"   # the drawn example input, not a dataset
PRESET = "own"              # a card's presets do not apply
_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+-]")


def is_own(model: str) -> bool:
    """``FILE.py:NAME``: a model of your own, not a registered card."""
    file, sep, name = model.rpartition(":")
    return bool(sep and file.endswith(".py") and name)


def resolve(model: str, base: Path | None) -> str:
    """``FILE.py:NAME`` with FILE made absolute (relative to the spec's folder), checked to
    be a file: workers in other folders load the same one."""
    file, _, name = model.rpartition(":")
    path = Path(file)
    if base is not None and not path.is_absolute():
        path = (base / path).resolve()
    if not path.is_file():
        raise ModelError(f"model {model!r}: {str(path)!r} is not a file; give FILE.py:NAME "
                         "with FILE relative to the spec's folder")
    return f"{path}:{name}"


def check_key(model: str, key: str) -> None:
    """A grid key your own model takes: ``batch``, ``dtype`` or ``input_dtype``."""
    if key not in SETTINGS:
        raise ModelError(f"--set {key}: your own model {Path(model).name} takes "
                         f"{', '.join(SETTINGS)} in a sweep (its other settings are the "
                         "factory's)")


def parse_settings(model: str, items: dict) -> dict:
    """``{"batch": "8", "dtype": "int8"}`` typed and checked."""
    out = {}
    for key, value in items.items():
        check_key(model, key)
        text = str(value).strip()
        if key == "batch":
            if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
                raise ModelError(f"--set batch={text}: give an integer >= 1 (samples per "
                                 "inference)")
            out[key] = int(text)
        elif key == "input_dtype":
            if text not in INPUT_DTYPES:
                raise ModelError(f"--set input_dtype={text}: give one of "
                                 f"{', '.join(INPUT_DTYPES)} (int64: token ids for a language "
                                 "model)")
            out[key] = text
        else:
            if text not in DTYPES:
                raise ModelError(f"--set dtype={text}: give one of {', '.join(DTYPES)}")
            out[key] = text
    return out


def check_shape(value, where: str) -> tuple[int, ...]:
    ok = (isinstance(value, list) and value
          and all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in value))
    if not ok:
        raise ModelError(f"{where}: input_shape = {value!r}; give the shape of one inference "
                         "batch first, integers >= 1, e.g. [1, 1, 28, 28]")
    return tuple(value)


def shape_of(run) -> tuple[int, ...]:
    batch = run.overrides.get("batch")
    return run.input_shape if batch is None else (batch, *run.input_shape[1:])


def key(run) -> str:
    """The run file's stem: ``FILE.NAME-PROFILE-seedN[-batch=B][-dtype=D]``; checks the
    profile is one a torch module runs on."""
    from deploy.estimate import TORCH_KINDS
    from models import runner
    prof = runner.load_profile(run.profile)
    if prof.kind not in TORCH_KINDS:
        raise ModelError(f"profile {prof.label!r} is a {prof.kind!r} profile; your own torch "
                         f"model runs on {', '.join(TORCH_KINDS)} profiles")
    file, _, name = run.model.rpartition(":")
    extra = "-".join(f"{k}={v}" for k, v in sorted(run.overrides.items()))
    stem = "-".join([f"{Path(file).stem}.{name}", runner.profile_stem(prof),
                     f"seed{run.seed}"] + ([extra] if extra else []))
    return _UNSAFE.sub("_", stem)


def config(run) -> dict:
    """The settings a run file of ``run`` stores as its config (what ``--resume`` compares)."""
    return {"input_shape": list(shape_of(run)), "dtype": run.overrides.get("dtype", "fp32"),
            "seed": run.seed, "input_dtype": run.overrides.get("input_dtype", "float32")}


def run(run, profiles) -> object:
    """Estimate the factory's module for ``run`` on ``profiles``; the run record
    (:class:`models.registry.RunResult`) of its simulate profile."""
    from deploy.estimate import drawn_example, estimate
    from deploy.estimate_cli import load_model
    from models import runner
    from models.registry import RunResult
    prof = runner.load_profile(run.profile)
    module = load_model(run.model, seed=run.seed)
    dtype = run.overrides.get("dtype", "fp32")
    shape = shape_of(run)
    labels = [runner.load_profile(p) for p in profiles]
    if prof.label not in [p.label for p in labels]:
        labels.insert(0, prof)
    input_dtype = run.overrides.get("input_dtype", "float32")
    example = drawn_example(module, shape, input_dtype, run.seed)[0]
    est = estimate(module, example, profiles=labels, seed=run.seed, dtype=dtype)
    if prof.label in est.skipped:
        raise ModelError(f"{Path(run.model).name} does not run on {prof.label}: "
                         f"{est.skipped[prof.label]}")
    params = sum(p.numel() for p in module.parameters())
    return RunResult(
        model=run.model, profile=prof, dataset=DATASET,
        config=config(run),
        metrics={"parameters": float(params)}, ledger=est.ledgers[prof.label],
        preset=PRESET, units={"parameters": "count"},
        facts={"skipped": dict(est.skipped), "notes": list(est.notes),
               "uncounted": dict(est.uncounted)})


__all__ = ["is_own", "resolve", "check_key", "parse_settings", "check_shape", "key", "run",
           "config",
           "SETTINGS", "DATASET", "PRESET"]
