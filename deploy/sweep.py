"""Sweeps: models x datasets x presets x settings x seeds, simulated once each, priced on
several profiles, serially or on Dask distributed.

A spec (TOML, or the same as a dict)::

    name = "mlp-widths"
    models = ["mlp"]
    seeds = [0, 1, 2]
    profiles = ["a100", "jetson-orin"]   # priced on; runs simulate on the first ...
    [simulate_profile]                   # ... unless a model names its own
    mlp = "jetson-orin"
    [grid]                               # --set overrides, every combination
    epochs = [1]
    [grid.mlp]                           # a model's own grid (replaces a shared key)
    hidden = [16, 64]

expands (:func:`expand`) to one :class:`RunSpec` per combination. Every run is checked by
:func:`models.runner.prepare` before any runs (a typo fails in a second, on one line). Each run
is one :func:`models.runner.run` call on its simulate profile, written to
``OUT/runs/<key>.h5`` (the name ``neuroedge simulate`` gives the same run) through
:mod:`deploy.runfile`, whose write is atomic: a killed worker leaves no partial file. The
other profiles re-price the stored ledger (``Ledger.price``); nothing is simulated twice. A
neuromorphic run priced on another chip is its ledger priced there, not the network placed
again on that chip's cores: the ``pricing`` column says so.

Results: ``OUT/results.csv`` (one row per run x profile, sorted by run key, with the run's
status and error) and ``OUT/summary.html`` (main metric against energy per inference per
profile with the Pareto front, the spread over seeds and the table). A run that raises is a
row with status ``error`` and the sweep goes on; ``resume=True`` keeps every run whose file
reads back whole; Ctrl-C leaves the complete run files and a table of what finished.

A model of your own (``models = ["net.py:make_net"]`` with ``input_shape``) sweeps over
``batch`` and ``dtype`` (:mod:`deploy.sweep_own`); a ``[search]`` table makes the spec an
Optuna study instead of a grid (:mod:`deploy.search_spec`, run by :mod:`deploy.search`).
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import itertools
import json
import math
import os
import re
import shutil
import stat
import threading
import tomllib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploy import sweep_own
from deploy.errors import DiskFullError, SweepError
from deploy.search_spec import Search, check_keys, parse_search
from hw_profiles.errors import NeuroedgeError, suggestion
from sim.seeds import check as check_seed

SPEC_KEYS = ("name", "description", "models", "datasets", "presets", "seeds", "grid",
             "profiles", "simulate_profile", "search", "input_shape")
THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1"}
ENERGY_COLUMNS = ("bound", "energy_j", "per_inference_j", "per_train_sample_j", "latency_s",
                  "execution_model", "excludes")
RUN_COLUMNS = ("key", "model", "dataset", "preset", "seed", "overrides", "simulate_profile",
               "profile", "pricing", "status", "error", "main_metric")
RETRIES = 2   # a task whose worker died is run again elsewhere this many times

MAX_SPEC_BYTES = 1 << 20     # a sweep spec is a hand-written TOML page: 1 MiB is generous
SWEEP_LOCK = ".neuroedge-sweep.lock"   # in --out while a sweep writes it (see output_lock)
MAX_RUNS = 10_000            # runs one spec may expand to (each trains a model): checked first
SPEC_NAME_CHARS = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""A spec's ``name`` is a plain file name (it names the output folder): no ``/``, no ``..``."""


# -- the spec -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Spec:
    """A checked sweep spec (:func:`load_spec`)."""

    name: str
    models: tuple[str, ...]
    datasets: tuple[str, ...] | None
    presets: tuple[str, ...]
    seeds: tuple[int, ...]
    grid: dict[str, tuple]               # shared --set grid
    model_grids: dict[str, dict[str, tuple]]
    profiles: tuple[str, ...]            # names or absolute TOML paths
    simulate_profile: dict[str, str]     # model -> profile it simulates on
    source: str = "<dict>"
    search: Search | None = None         # a [search] table: an Optuna study, not a grid
    input_shape: tuple[int, ...] | None = None   # models of your own (FILE.py:NAME)

    def grid_for(self, model: str) -> dict[str, tuple]:
        return {**self.grid, **self.model_grids.get(model, {})}

    def simulate_on(self, model: str) -> str:
        return self.simulate_profile.get(model, self.profiles[0])


@dataclass(frozen=True, eq=True)
class RunSpec:
    """One run of a sweep: what ``neuroedge simulate`` would be given."""

    model: str
    dataset: str
    preset: str
    seed: int
    overrides: dict[str, Any]    # typed values of the card's Config
    profile: str                 # where it simulates (name or TOML path)
    input_shape: tuple[int, ...] | None = None   # a model of your own: one inference's shape

    __hash__ = None  # a dict field: compared, never hashed

    def plan(self):
        from models import runner
        return runner.prepare(self.model, profile=self.profile, dataset=self.dataset,
                              preset=self.preset, seed=self.seed, overrides=self.overrides)

    @property
    def key(self) -> str:
        """The run file's stem, ``MODEL-DATASET-PROFILE-PRESET-seedN[-key=value...]``
        (:func:`models.runner.run_file_name`: the name ``neuroedge simulate`` writes); a
        model of your own: ``FILE.NAME-PROFILE-seedN[-key=value...]``."""
        from models import runner
        if sweep_own.is_own(self.model):
            return sweep_own.key(self)
        return runner.run_file_name(self.plan(), "").stem

    @property
    def overrides_text(self) -> str:
        return overrides_text(self.overrides)

    def line(self) -> str:
        """One line for ``--dry-run``."""
        sets = " ".join(f"--set {k}={_value_text(v)}" for k, v in sorted(self.overrides.items()))
        return (f"{self.key}: {self.model} on {self.profile}, {self.dataset}, {self.preset}, "
                f"seed {self.seed}" + (f", {sets}" if sets else ""))


def _value_text(value) -> str:
    if isinstance(value, (tuple, list)):
        return ",".join(_value_text(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def overrides_text(overrides: Mapping[str, Any]) -> str:
    """``"epochs=1 hidden=16,16"``: the settings of a run, sorted (a table's group key)."""
    return " ".join(f"{k}={_value_text(v)}" for k, v in sorted(overrides.items()))


def _where(source: str) -> str:
    return f"sweep spec {source}"


def _list(doc, key, kind, source, default=None) -> tuple | None:
    if key not in doc:
        return default
    value = doc[key]
    if not isinstance(value, list) or not value:
        raise SweepError(f"{_where(source)}: {key} = {value!r} must be a non-empty list")
    bad = [v for v in value if not isinstance(v, kind) or isinstance(v, bool) and kind is int]
    if bad:
        raise SweepError(f"{_where(source)}: {key} holds {bad[0]!r}; give "
                         f"{'integers' if kind is int else 'text'}")
    return tuple(value)


def _grid_values(value, where: str) -> tuple:
    values = tuple(value) if isinstance(value, list) else (value,)
    if not values:
        raise SweepError(f"{where}: an empty list of values gives no runs; give at least one")
    return values


def _profile_ref(text, base: Path | None, where: str) -> str:
    """A profile name, or a TOML path made absolute (relative to the spec's directory)."""
    from models import runner
    if not isinstance(text, str):
        raise SweepError(f"{where}: profile {text!r} must be a name or a TOML path")
    ref = text
    if text.endswith(".toml") and base is not None and not Path(text).is_absolute():
        ref = str((base / text).resolve())
    try:
        runner.load_profile(ref)
    except NeuroedgeError as exc:
        raise SweepError(f"{where}: {exc}") from None
    return ref


def _read_spec_text(path: Path, source: str) -> str:
    """The spec's text, read only from a regular file of at most MAX_SPEC_BYTES (a FIFO or
    ``/dev/zero`` would block or never end)."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        raise SweepError(f"{_where(source)}: not a regular file; give a .toml file")
    if st.st_size > MAX_SPEC_BYTES:
        raise SweepError(f"{_where(source)}: {st.st_size:,} bytes; a spec may have at most "
                         f"{MAX_SPEC_BYTES:,}")
    with open(path, "rb") as f:
        data = f.read(MAX_SPEC_BYTES + 1)
    if len(data) > MAX_SPEC_BYTES:   # grew while read
        raise SweepError(f"{_where(source)}: more than {MAX_SPEC_BYTES:,} bytes; a spec may "
                         f"have at most {MAX_SPEC_BYTES:,}")
    return data.decode("utf-8")


def load_spec(spec: str | os.PathLike | Mapping) -> Spec:
    """Read and check a sweep spec (a TOML file, or the same content as a dict).

    Raises SweepError (one line) for an unreadable file, an unknown key, model, preset or
    profile, a grid key the model's Config does not have, or a value of the wrong type.
    """
    from models import runner
    from models.registry import PRESETS, REGISTRY
    base = None
    if isinstance(spec, Mapping):
        doc, source = dict(spec), "<dict>"
    else:
        path = Path(spec)
        source, base = str(path), path.parent
        try:
            doc = tomllib.loads(_read_spec_text(path, source))
        except FileNotFoundError:
            raise SweepError(f"{_where(source)}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SweepError(f"{_where(source)}: cannot read it ({exc})") from None
        except tomllib.TOMLDecodeError as exc:
            raise SweepError(f"{_where(source)}: not valid TOML ({exc})") from None
        except RecursionError:
            raise SweepError(f"{_where(source)}: nested too deeply to read; a spec holds "
                             "lists of values and tables of them, not deep nesting") from None
    check_keys(doc, SPEC_KEYS, _where(source))
    name = doc.get("name", Path(source).stem if base is not None else "sweep")
    # a given name must be plain; the default, the spec file's own stem, is a file name already
    if not isinstance(name, str) or not name or ("name" in doc
                                                 and not SPEC_NAME_CHARS.fullmatch(name)):
        raise SweepError(f"{_where(source)}: name = {name!r} must be a plain file name: "
                         "letters, digits, '.', '_', '-', at most 100, not starting with "
                         "'.' (it names the output folder)")
    # a note for the reader, used by nothing: checked all the same, as every other key
    if "description" in doc and not isinstance(doc["description"], str):
        raise SweepError(f"{_where(source)}: description = {doc['description']!r} must be "
                         "text; give description = \"...\"")
    models = _list(doc, "models", str, source)
    if models is None:
        raise SweepError(f"{_where(source)}: no models; give e.g. models = [\"mlp\"]")
    for m in models:
        if sweep_own.is_own(m):
            continue
        if m not in REGISTRY:
            raise SweepError(f"{_where(source)}: unknown model {m!r}; "
                             + (suggestion(m, REGISTRY, "neuroedge models")
                                or f"models are {', '.join(sorted(REGISTRY))}"))
    datasets = _list(doc, "datasets", str, source)
    presets = _list(doc, "presets", str, source, ("quick",))
    for p in presets:
        if p not in PRESETS:
            raise SweepError(f"{_where(source)}: preset {p!r}; presets are {', '.join(PRESETS)}")
    seeds = _list(doc, "seeds", int, source, (0,))
    for seed in seeds:
        try:
            check_seed(seed, "seed")
        except NeuroedgeError as exc:
            raise SweepError(f"{_where(source)}: seeds: {exc}") from None
    profiles = _list(doc, "profiles", str, source)
    if profiles is None:
        raise SweepError(f"{_where(source)}: no profiles; give e.g. profiles = [\"a100\"]")
    for key, values in (("models", models), ("datasets", datasets), ("presets", presets),
                        ("seeds", seeds), ("profiles", profiles)):
        repeated = sorted({str(v) for v in values or () if list(values).count(v) > 1})
        if repeated:
            raise SweepError(f"{_where(source)}: {key} names {', '.join(repeated)} more than "
                             "once; give each once")
    profiles = tuple(_profile_ref(p, base, _where(source)) for p in profiles)
    # models of your own: FILE made absolute (workers may run elsewhere), input_shape given
    try:
        named = {m: sweep_own.resolve(m, base) if sweep_own.is_own(m) else m for m in models}
    except NeuroedgeError as exc:
        raise SweepError(f"{_where(source)}: {exc}") from None
    models = tuple(named.values())
    own = [m for m in doc["models"] if sweep_own.is_own(m)]
    input_shape = None
    if own and "input_shape" not in doc:
        raise SweepError(f"{_where(source)}: {own[0]} is a model of your own: give "
                         "input_shape = [1, 1, 28, 28] (one inference, batch first)")
    if "input_shape" in doc:
        if not own:
            raise SweepError(f"{_where(source)}: input_shape applies to models of your own "
                             "(FILE.py:NAME); this spec's models are cards: drop it")
        try:
            input_shape = sweep_own.check_shape(doc["input_shape"], _where(source))
        except NeuroedgeError as exc:
            raise SweepError(str(exc)) from None

    sim = doc.get("simulate_profile", {})
    if isinstance(sim, str):
        sim = {m: sim for m in models}
    if not isinstance(sim, dict):
        raise SweepError(f"{_where(source)}: simulate_profile must be a profile or a table "
                         "MODEL = PROFILE")
    sim = {named.get(m, m): p for m, p in sim.items()}
    for m in sim:
        if m not in models:
            raise SweepError(f"{_where(source)}: simulate_profile.{m}: {m!r} is not one of "
                             f"the spec's models ({', '.join(models)})")
    sim = {m: _profile_ref(p, base, f"{_where(source)}: simulate_profile.{m}")
           for m, p in sim.items()}

    grid_doc = doc.get("grid", {})
    if not isinstance(grid_doc, dict):
        raise SweepError(f"{_where(source)}: grid must be a table KEY = [values]")
    grid, model_grids = {}, {}
    for k, v in grid_doc.items():
        k = named.get(k, k)
        if isinstance(v, dict):
            if k not in models:
                raise SweepError(f"{_where(source)}: [grid.{k}]: {k!r} is not one of the "
                                 f"spec's models ({', '.join(models)})")
            model_grids[k] = {kk: _grid_values(vv, f"{_where(source)}: grid.{k}.{kk}")
                              for kk, vv in v.items()}
        else:
            grid[k] = _grid_values(v, f"{_where(source)}: grid.{k}")
    search = None
    if "search" in doc:
        search = parse_search(doc["search"], source=source, models=models, datasets=datasets,
                              presets=presets, seeds=seeds, grid=grid_doc, profiles=profiles)
    spec_obj = Spec(name, models, datasets, presets, seeds, grid, model_grids, profiles,
                    sim, source, search, input_shape)
    for m in models:   # every grid key must be a setting of the model it applies to
        for k in spec_obj.grid_for(m):
            try:
                if sweep_own.is_own(m):
                    sweep_own.check_key(m, k)
                else:
                    runner.check_setting(m, k)
            except NeuroedgeError as exc:
                where = f"grid.{m}.{k}" if k in model_grids.get(m, {}) else f"grid.{k}"
                raise SweepError(f"{_where(source)}: {where}: {exc}") from None
    return spec_obj


def _override_text(value) -> str:
    """A TOML value as the text ``--set`` would take (the runner parses it to the field's
    type, so ``hidden = 16`` becomes the tuple ``(16,)`` a tuple field wants)."""
    return _value_text(value)


def expand(spec: Spec | str | os.PathLike | Mapping) -> list[RunSpec]:
    """Every run of ``spec``, each checked by :func:`models.runner.prepare` (profile kind,
    dataset and its files, preset, settings and their values), before any runs.

    Order: models, datasets, presets, grid combinations (keys sorted), seeds. Raises
    SweepError naming the first run that fails a check, or two runs that would share a file.
    """
    from models import runner
    from models.registry import get
    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    size = sum(len(spec.datasets or (None,)) * len(spec.presets) * len(spec.seeds)
               * math.prod(len(v) for v in spec.grid_for(model).values())
               for model in spec.models)
    if size > MAX_RUNS:
        raise SweepError(f"{_where(spec.source)}: the grid gives {size:,} runs; a sweep may "
                         f"have at most {MAX_RUNS:,} (split it, or give fewer values)")
    runs: list[RunSpec] = []
    seen: dict[str, RunSpec] = {}
    for model in spec.models:
        own = sweep_own.is_own(model)
        if own:   # the factory builds a module, here, before anything runs
            from deploy.estimate_cli import load_model
            try:
                load_model(model)
            except NeuroedgeError as exc:
                raise SweepError(f"{_where(spec.source)}: {exc}") from None
            datasets, presets = (sweep_own.DATASET,), (sweep_own.PRESET,)
        else:
            datasets = spec.datasets or (get(model).card.default_dataset,)
            presets = spec.presets
        grid = spec.grid_for(model)
        keys = sorted(grid)
        for dataset, preset in itertools.product(datasets, presets):
            for combo in itertools.product(*(grid[k] for k in keys)):
                text = {k: _override_text(v) for k, v in zip(keys, combo, strict=True)}
                where = (f"{_where(spec.source)}: {model} on {spec.simulate_on(model)}, "
                         f"{dataset}, {preset}" + (f", {overrides_text(text)}" if text else ""))
                try:
                    typed = (sweep_own.parse_settings(model, text) if own
                             else runner.parse_overrides(model, text))
                    for seed in spec.seeds:
                        run = RunSpec(model, dataset, preset, int(seed), typed,
                                      spec.simulate_on(model),
                                      spec.input_shape if own else None)
                        key = run.key   # runner.prepare: every check that needs no training
                        if key in seen:
                            raise SweepError(f"seed {seed} gives run file {key}.h5 twice; "
                                             "remove the repeated value")
                        seen[key] = run
                        runs.append(run)
                except NeuroedgeError as exc:
                    hint = ("; give [simulate_profile] " + model + " = a profile it runs on"
                            if " profile; model " in str(exc) else "")
                    raise SweepError(f"{where}: {exc}{hint}") from None
    return runs


# -- one run (in a worker process, or here when serial) -------------------------------------
def single_thread() -> None:
    """One thread for torch, numba and the BLAS libraries: a worker is one core (the
    environment variables matter for libraries not loaded yet; torch's call for torch)."""
    import sys
    for k, v in THREAD_ENV.items():
        if k != "NUMBA_NUM_THREADS" or "numba" not in sys.modules:  # numba reads it once
            os.environ[k] = v
    import torch
    torch.set_num_threads(1)
    if "numba" in sys.modules:
        import numba
        numba.set_num_threads(1)


# Dask's statistical profiler samples the task thread's stack every 10 ms from the worker's
# event loop (``sys._current_frames()``). A sampled frame keeps its locals alive for a moment,
# a gradient among them; autograd's AccumulateGrad then finds the gradient still referenced
# and copies it into ``.grad`` instead of taking it, and the run counts one more kernel than
# the same run in a process nobody samples. Seen as a retried run that differed from its
# serial twin in the fourth digit of the training energy. A run pauses the sampling.
_PAUSE = {"lock": threading.Lock(), "runs": 0}


def _on_worker_loop(worker, fn) -> None:
    """Call ``fn`` on the worker's event loop (tornado's callbacks are not thread-safe) and
    wait for it: when it returns, no sample is in progress."""
    done = threading.Event()

    def call():
        try:
            fn()
        finally:
            done.set()
    worker.loop.add_callback(call)
    done.wait(10)


@contextlib.contextmanager
def worker_profiler_paused():
    """Inside a Dask worker: no stack sampling while the block runs (several runs on one
    worker's threads pause it once; the last one out starts it again). Elsewhere: nothing."""
    try:
        from distributed import get_worker
        worker = get_worker()
    except (ImportError, ValueError):   # not in a worker (a serial run)
        yield
        return
    sampler = worker.periodic_callbacks.get("profile")
    if sampler is None:   # distributed.worker.profile.enabled is off
        yield
        return
    with _PAUSE["lock"]:
        _PAUSE["runs"] += 1
        if _PAUSE["runs"] == 1:
            _on_worker_loop(worker, sampler.stop)
    try:
        yield
    finally:
        with _PAUSE["lock"]:
            _PAUSE["runs"] -= 1
            if _PAUSE["runs"] == 0:
                _on_worker_loop(worker, sampler.start)


def one_line(exc: BaseException) -> str:
    """An exception as one line (its type named unless it is one of neuroedge's own)."""
    text = " ".join(str(exc).split()) or "(no message)"
    return text if isinstance(exc, NeuroedgeError) else f"{type(exc).__name__}: {text}"


def run_is_complete(path: Path, run: RunSpec | None = None) -> bool:
    """True when ``path`` is a run file that :func:`deploy.runfile.read_run` reads whole and,
    given ``run``, holds that run: its model, dataset, preset, simulate profile (its label
    and its numbers: the run file's snapshot against the profile as it loads now) and
    config (a file copied over another run's name is not that run, nor is one simulated on
    a profile file edited since: ``--resume`` runs it again, as it does a truncated one)."""
    from deploy.runfile import read_run
    if not path.is_file():
        return False
    try:
        stored = read_run(path)
    except Exception:   # any unreadable file is incomplete: the sweep runs it again
        return False
    return run is None or _record(stored) == _planned_record(run)


def profile_digest(prof) -> str:
    """``sha256:HEX`` of a profile's document, as a run file's snapshot digest is taken
    (:func:`deploy.runfile.document_digest`): equal for the TOML a run simulated on and
    the snapshot its run file holds, different once the file's numbers were edited."""
    from deploy.runfile import document_digest
    return document_digest(dict(prof.raw))


def _record(stored) -> tuple:
    # the config as JSON text: a tuple setting reads back from the file as a list; the
    # profile's digest besides its label: the label of a user's TOML names only its path,
    # and a run simulated on the file before an edit would keep its old prices
    return (stored.model, stored.dataset, stored.preset, stored.profile.label,
            profile_digest(stored.profile),
            json.dumps(stored.config, sort_keys=True, default=str))


def _planned_record(run: RunSpec) -> tuple:
    """What :func:`_record` reads from a run file of ``run``."""
    from models import runner
    if sweep_own.is_own(run.model):
        prof = runner.load_profile(run.profile)
        return (run.model, sweep_own.DATASET, sweep_own.PRESET, prof.label,
                profile_digest(prof),
                json.dumps(sweep_own.config(run), sort_keys=True, default=str))
    plan = run.plan()
    return (plan.method.name, plan.dataset, plan.preset, plan.profile.label,
            profile_digest(plan.profile),
            json.dumps(dataclasses.asdict(plan.config), sort_keys=True, default=str))


def _base_row(run: RunSpec, key: str) -> dict[str, Any]:
    return {"key": key, "model": run.model, "dataset": run.dataset, "preset": run.preset,
            "seed": run.seed, "overrides": run.overrides_text}


def _pricing_note(stored, prof) -> str:
    if prof.label == stored.profile.label:
        return "simulated here"
    if stored.profile.kind == "neuromorphic" and prof.kind == "neuromorphic":
        return (f"ledger of {stored.profile.label} re-priced here; the network is not "
                "re-placed on this chip's cores")
    return f"ledger of {stored.profile.label} re-priced here"


def price_rows(run: RunSpec, key: str, path: Path, profiles: Sequence[str]) -> list[dict]:
    """The table rows of a stored run: one per profile (the simulate profile first when the
    spec does not price on it), each its ledger priced there."""
    from deploy.headline import profile_row
    from deploy.runfile import read_run
    from models import runner
    stored = read_run(path)
    base = {**_base_row(run, key), "simulate_profile": stored.profile.label}
    main = stored.main_metric
    targets = list(profiles)
    loaded = [runner.load_profile(p) for p in targets]
    if stored.profile.label not in [p.label for p in loaded]:
        loaded.insert(0, stored.profile)
    rows = []
    skipped = stored.facts.get("skipped") or {}   # a model of your own: where it cannot run
    for prof in loaded:
        if prof.label == stored.profile.label:
            prof = stored.profile   # the numbers it ran with, from the file
        row = {**base, "profile": prof.label, "pricing": _pricing_note(stored, prof),
               "status": "ok", "error": "", "main_metric": main or "",
               **{k: float(v) for k, v in stored.metrics.items()},
               "run_file": f"runs/{path.name}"}
        if prof.label in skipped:
            # "pricing:": the run is whole, this profile cannot run it (not a failed run)
            row.update(status="error", error=f"pricing: {skipped[prof.label]}")
            rows.append(row)
            continue
        try:
            rep = stored.ledger.price(prof)
            fig = profile_row(rep, rep)
            # ops a model of your own ran without a cost formula: every figure a lower bound;
            # else what the energy is (static power over a time built as a lower bound makes
            # it one too: EnergyReport.energy_bound), the same word the headline uses
            uncounted = stored.facts.get("uncounted") or {}
            row.update(bound=f"lower bound (uncounted: {', '.join(uncounted)})" if uncounted
                       else rep.energy_bound(), energy_j=fig["total_j"],
                       per_inference_j=fig["per_inference_j"],
                       per_train_sample_j=fig["per_train_sample_j"],
                       latency_s=fig["latency_s"], execution_model=rep.execution_model,
                       excludes="; ".join(rep.excluded))
        except NeuroedgeError as exc:
            row.update(status="error", error=f"pricing: {one_line(exc)}")
        rows.append(row)
    return rows


def error_rows(run: RunSpec, key: str, profiles: Sequence[str], error: str) -> list[dict]:
    from models import runner
    sim = runner.load_profile(run.profile).label
    labels = [runner.load_profile(p).label for p in profiles]
    if sim not in labels:
        labels.insert(0, sim)
    return [{**_base_row(run, key), "simulate_profile": sim, "profile": label,
             "pricing": "", "status": "error", "error": error, "main_metric": "",
             "run_file": ""} for label in labels]


def run_task(run: RunSpec, runs_dir: str, profiles: Sequence[str],
             stem: str | None = None) -> list[dict]:
    """Simulate ``run``, write its run file (``runs_dir/<stem>.h5``, the stem by default
    the run's key), price it on ``profiles``: its table rows.

    A run that raises gives rows with status ``error`` and the one-line error (the sweep goes
    on). The run file is written under a temporary name and renamed when whole
    (:func:`deploy.runfile.write_run`), so a worker killed here leaves no partial file.
    """
    from deploy.runfile import write_run
    from models import runner
    single_thread()
    key = run.key
    path = Path(runs_dir) / f"{stem or key}.h5"
    try:
        with worker_profiler_paused():
            if sweep_own.is_own(run.model):
                result = sweep_own.run(run, profiles)
            else:
                result = runner.run(run.model, profile=run.profile, dataset=run.dataset,
                                    preset=run.preset, seed=run.seed,
                                    overrides=run.overrides)
        write_run(path, result, force=True)   # force: an unreadable leftover is replaced
        return price_rows(run, key, path, profiles)
    except DiskFullError:      # not this run's fault: every run after it would fail too
        raise
    except Exception as exc:   # recorded in the table; the sweep goes on
        return error_rows(run, key, profiles, one_line(exc))


# -- the sweep ------------------------------------------------------------------------------
@dataclass
class SweepResult:
    """What :func:`run_sweep` did: the rows (sorted by run key, then the spec's profile
    order), the files written, and how many runs were simulated, resumed or failed."""

    rows: list[dict]
    table_path: Path
    html_path: Path
    out_dir: Path
    simulated: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    interrupted: bool = False


Progress = Callable[[int, int, str, str], None]   # (done, total, run key, what happened)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@contextlib.contextmanager
def serial_threads():
    """Serial runs use one thread too, so their numbers equal a cluster's bit for bit."""
    import torch
    before = torch.get_num_threads()
    single_thread()
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _run_serial(todo, runs_dir, profiles, done):
    with serial_threads():
        for run, key in todo:
            done(key, run_task(run, str(runs_dir), profiles))


@contextlib.contextmanager
def cluster_client(workers: int | None, scheduler: str | None):
    """A Dask ``Client``: of the running cluster at ``scheduler``, or of a LocalCluster of
    ``workers`` processes (default: one per core), one thread each; closed on the way out."""
    import logging

    from distributed import Client, LocalCluster
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise SweepError(f"--scheduler {scheduler}: cannot connect ({one_line(exc)}); "
                             "give the address a running dask-scheduler prints, "
                             "tcp://HOST:8786") from None
    else:
        n = workers or _cores()
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR,
                               env=dict(THREAD_ENV))
        client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def check_scheduler(scheduler: str | None) -> None:
    """Refuse a ``--scheduler`` that is not a Dask address before anything starts."""
    if scheduler is not None and not re.fullmatch(r"(tcp|tls|ucx|ws|wss)://[^\s/]+", scheduler):
        raise SweepError(f"--scheduler {scheduler!r}: not a scheduler address; give the "
                         "address a running dask-scheduler prints, tcp://HOST:8786")


def _run_cluster(todo, runs_dir, profiles, done, workers, scheduler):
    with cluster_client(workers, scheduler) as client:
        _run_on(client, todo, runs_dir, profiles, done)


def _run_on(client, todo, runs_dir, profiles, done):
    from distributed import as_completed
    token = uuid.uuid4().hex[:8]
    futures, by_future = [], {}
    try:
        for run, key in todo:
            fut = client.submit(run_task, run, str(runs_dir), list(profiles),
                                key=f"neuroedge-sweep-{token}-{key}", retries=RETRIES,
                                pure=False)
            futures.append(fut)
            by_future[fut.key] = (run, key)
        for fut in as_completed(futures):
            run, key = by_future[fut.key]
            try:
                rows = fut.result()
            except DiskFullError:      # the disk, not the worker: stop the sweep (below)
                raise
            except Exception as exc:   # the task's worker died RETRIES + 1 times
                rows = error_rows(run, key, profiles, f"worker lost: {one_line(exc)}")
            done(key, rows)
    finally:
        for fut in futures:
            fut.cancel()


def clean_temporaries(runs_dir: Path) -> None:
    """Remove the temporary directories of run files a killed worker did not finish
    (``deploy.outputs.write_file`` names them ``.NAME.XXXX.tmp`` and marks them): a
    directory of the same name without the marker is the user's and is left alone."""
    from deploy.outputs import is_our_temporary
    for p in runs_dir.glob(".*.tmp"):
        if is_our_temporary(p):
            shutil.rmtree(p, ignore_errors=True)


def run_sweep(spec, out_dir, *, workers: int | None = None, scheduler: str | None = None,
              resume: bool = False, force: bool = False, serial: bool = False,
              progress: Progress | None = None) -> SweepResult:
    """Run every run of ``spec`` into ``out_dir`` (``runs/``, ``results.csv``,
    ``summary.html``).

    ``serial``: one run after another in this process; else on Dask: a LocalCluster of
    ``workers`` processes (default: one per core, one thread each), or the running cluster
    at ``scheduler`` (``tcp://HOST:8786``). ``resume`` keeps every run whose file reads back
    whole and runs the rest; ``force`` runs them all again. Without either, run files of this
    sweep already in ``out_dir`` are an error (nothing is replaced unasked).

    On KeyboardInterrupt the table and summary of what finished are written, then it is
    raised again.
    """
    check_scheduler(scheduler)
    spec = spec if isinstance(spec, Spec) else load_spec(spec)
    if spec.search is not None:
        raise SweepError(f"{_where(spec.source)} has a [search] table: run it with "
                         "deploy.search.run_search (neuroedge sweep does)")
    runs = expand(spec)                    # every check first
    out = Path(out_dir)
    runs_dir = out / "runs"
    keyed = [(r, r.key) for r in runs]
    existing = [k for _, k in keyed if (runs_dir / f"{k}.h5").exists()]
    if existing and not (resume or force):
        raise SweepError(f"{runs_dir}: {len(existing)} of this sweep's run files exist "
                         f"(e.g. {existing[0]}.h5); give --resume to keep them or --force "
                         "to run them again")
    tables = [p for p in (out / "results.csv", out / "summary.html") if p.exists()]
    if tables and not (resume or force):
        # the table and summary are rewritten at the end: never over files a user made
        raise SweepError(f"--out {out}: {tables[0].name} exists; give another --out, or "
                         "--resume / --force to rewrite this sweep's table and summary")
    with undone_if_refused(out):
        try:
            runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SweepError(f"--out {out}: cannot create {runs_dir} "
                             f"({exc.strerror})") from None
        with output_lock(out):
            return _run_locked(spec, keyed, out, runs_dir, workers, scheduler, resume, serial,
                               progress)


@contextlib.contextmanager
def undone_if_refused(out: Path):
    """Take back what a sweep created in ``out`` (the folder, ``runs/``, the lock) when it
    is refused (a SweepError: a scheduler nobody answers, a study that cannot be opened)
    and they are still empty: a refused sweep leaves ``--out`` as it found it. Never
    touches what was there before, nor a run file or table written meanwhile."""
    runs_dir, lock = out / "runs", out / SWEEP_LOCK
    made = [p for p in (lock, runs_dir, out) if not (p.exists() or p.is_symlink())]
    try:
        yield
    except SweepError:
        for p in made:   # the lock first: the folders are empty only without it
            with contextlib.suppress(OSError):   # not empty (or gone): left as it is
                if p == lock:
                    if p.is_file() and p.stat().st_size == 0:
                        p.unlink()
                else:
                    p.rmdir()
        raise


@contextlib.contextmanager
def output_lock(out: Path):
    """Hold ``OUT/.neuroedge-sweep.lock`` (an advisory ``flock``) while a sweep writes ``out``:
    a second sweep into the same folder is refused instead of both writing one table. The
    kernel drops the lock when its process ends, so a killed sweep leaves no stale lock."""
    import fcntl
    path = out / SWEEP_LOCK
    try:
        fh = open(path, "a")   # noqa: SIM115 - held open for the whole sweep, closed below
    except OSError as exc:
        raise SweepError(f"--out {out}: cannot create its lock {path.name} "
                         f"({exc.strerror})") from None
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SweepError(f"--out {out}: another sweep is writing this folder; wait for "
                             "it, or give another --out") from None
        yield
    finally:
        fh.close()


def _run_locked(spec, keyed, out, runs_dir, workers, scheduler, resume, serial, progress):
    """The body of :func:`run_sweep`, run while the output folder is locked."""
    result = SweepResult([], out / "results.csv", out / "summary.html", out)
    profiles = spec.profiles
    total = len(keyed)
    by_key: dict[str, list[dict]] = {}

    def done(key, rows, how=None):
        by_key[key] = rows
        failed = any(r["status"] == "error" and not r["error"].startswith("pricing:")
                     for r in rows)
        (result.failed if failed else result.resumed if how == "resumed"
         else result.simulated).append(key)
        if progress is not None:
            progress(len(by_key), total, key, how or ("error" if failed else "simulated"))

    todo = []
    for run, key in keyed:
        path = runs_dir / f"{key}.h5"
        if resume and run_is_complete(path, run):
            done(key, price_rows(run, key, path, profiles), "resumed")
        else:
            todo.append((run, key))
    # the files --force is about to replace: one still as it was when a Ctrl-C comes is
    # the earlier sweep's, not a run that finished here
    before = {key: _file_id(runs_dir / f"{key}.h5") for _, key in todo}
    try:
        if todo and serial:
            _run_serial(todo, runs_dir, profiles, done)
        elif todo:
            _run_cluster(todo, runs_dir, profiles, done, workers, scheduler)
    except KeyboardInterrupt:
        result.interrupted = True
        # runs a worker finished while the cluster was closing (their results never came
        # back) left whole run files: the table lists them too, as --resume would keep them
        for run, key in todo:
            path = runs_dir / f"{key}.h5"
            if key not in by_key and _file_id(path) != before.get(key) \
                    and run_is_complete(path, run):
                by_key[key] = price_rows(run, key, path, profiles)
                result.simulated.append(key)
        _finish(result, by_key, profiles, [k for _, k in keyed])
        write_results(result.rows, out, spec)
        raise
    except DiskFullError as exc:
        # the first run file the disk refused stops the sweep (the rest would fail alike);
        # its temporary is gone already, the complete run files stay for --resume
        clean_temporaries(runs_dir)
        raise SweepError(f"{exc}; the sweep stopped there with {len(result.simulated)} run "
                         f"file(s) complete in {runs_dir}: free some space and rerun with "
                         "--resume") from None
    clean_temporaries(runs_dir)
    _finish(result, by_key, profiles, [k for _, k in keyed])
    write_results(result.rows, out, spec)
    return result


def _file_id(path: Path) -> tuple[int, int] | None:
    """(inode, mtime in ns) of ``path``; None when there is none. A run file is written
    under another name and renamed over, so a rewritten one has a new inode."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def _finish(result: SweepResult, by_key, profiles, order: list[str]) -> None:
    """Rows sorted by run key; the simulated/resumed/failed lists in the spec's run order,
    not in the order a cluster happened to finish them (the same on every run)."""
    result.rows = _sorted_rows(by_key, profiles)
    rank = {k: i for i, k in enumerate(order)}
    for keys in (result.simulated, result.resumed, result.failed):
        keys.sort(key=rank.__getitem__)


def _sorted_rows(by_key: dict[str, list[dict]], profiles) -> list[dict]:
    return [row for key in sorted(by_key) for row in by_key[key]]


# -- the table ------------------------------------------------------------------------------
def columns(rows: Sequence[Mapping], lead: Sequence[str] = ()) -> list[str]:
    """``lead`` (a search's trial columns), the run columns, then every metric (sorted), then
    the energy columns, then the run file."""
    fixed = set(lead) | set(RUN_COLUMNS) | set(ENERGY_COLUMNS) | {"run_file"}
    metrics = sorted({k for r in rows for k in r if k not in fixed})
    return [*lead, *RUN_COLUMNS, *metrics, *ENERGY_COLUMNS, "run_file"]


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)   # repr: every digit, round-trips
    return str(value)


def table_text(rows: Sequence[Mapping], lead: Sequence[str] = ()) -> str:
    """The rows as CSV (empty cell: no value), ``lead`` columns first."""
    buf = io.StringIO()
    cols = columns(rows, lead)
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in cols])
    return buf.getvalue()


def read_table(path) -> list[dict]:
    """``results.csv`` back as rows of text (empty cells dropped)."""
    with open(path, newline="", encoding="utf-8") as f:
        return [{k: v for k, v in row.items() if v != ""} for row in csv.DictReader(f)]


def write_results(rows: Sequence[Mapping], out: Path, spec: Spec) -> None:
    """``results.csv`` and ``summary.html``, each written under a temporary name first."""
    from deploy.outputs import write_text
    write_text(out / "results.csv", table_text(rows), force=True)
    write_text(out / "summary.html", html_summary(rows, spec), force=True)


# -- the spread over seeds ------------------------------------------------------------------
def _number(v) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


def _stats(values: Sequence[float]) -> dict[str, float]:
    vals = [v for v in values if math.isfinite(v)]
    n = len(vals)
    if not n:
        return {"mean": math.nan, "std": math.nan, "min": math.nan, "max": math.nan, "n": 0}
    mean = sum(vals) / n
    # sample standard deviation (n - 1): the seeds are a sample of the seeds one could run
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1)) if n > 1 else math.nan
    return {"mean": mean, "std": std, "min": min(vals), "max": max(vals), "n": n}


def main_metric_of(rows: Sequence[Mapping]) -> str | None:
    """The first ok row's main metric (the card's)."""
    for r in rows:
        if r.get("status") == "ok" and r.get("main_metric"):
            return r["main_metric"]
    return None


def better_of(model: str, metric: str | None) -> str:
    """Which way ``metric`` of ``model`` improves: its card's ``main_metric_better`` when it
    is the card's main metric, else ``"higher"`` (a model of your own has no card)."""
    from models.registry import REGISTRY
    method = REGISTRY.get(model)
    if method is None or metric is None or metric != method.card.main_metric:
        return "higher"
    return method.card.main_metric_better


def summary(rows: Sequence[Mapping], by: Sequence[str] = ("model", "overrides", "profile"),
            metric: str | None = None) -> list[dict]:
    """Spread over seeds: per group of ``by`` (ok rows only), ``metric`` (default: the group's
    own main metric, so a sweep of models with different main metrics gives each its own)
    and the energy per inference as mean, std (n - 1; nan for one seed), min, max and n.
    Groups in first-seen order; each says its ``metric``."""
    groups: dict[tuple, list[Mapping]] = {}
    for r in rows:
        if r.get("status") == "ok":
            groups.setdefault(tuple(r.get(k, "") for k in by), []).append(r)
    out = []
    for key, members in groups.items():
        name = metric or main_metric_of(members)
        m = _stats([_number(r.get(name)) for r in members]) if name else _stats([])
        e = _stats([_number(r.get("per_inference_j")) for r in members])
        out.append({**dict(zip(by, key, strict=True)), "metric": name, **m,
                    **{f"per_inference_j_{k}": v for k, v in e.items() if k != "n"}})
    return out


def pareto(points: Sequence[tuple[float, float]], better: str = "higher") -> list[int]:
    """Indices of the points (energy, metric) no other point beats, cheapest first.

    A point is beaten by one with less or equal energy and a better or equal metric, better
    in one of them; ``better`` says which metric is the better (``"higher"``: an accuracy,
    ``"lower"``: an error; :attr:`models.registry.Card.main_metric_better`). Points equal
    in both beat nothing and are all kept. Raises SweepError for another ``better`` (a
    ``"neither"`` metric has no front).
    """
    if better not in ("higher", "lower"):
        raise SweepError(f"pareto(better={better!r}): give 'higher' or 'lower'; a metric "
                         "with no better direction has no Pareto front")
    sign = 1.0 if better == "higher" else -1.0   # the front of sign * metric, higher better
    order = sorted((i for i, (e, m) in enumerate(points) if math.isfinite(e) and
                    math.isfinite(m)), key=lambda i: (points[i][0], -sign * points[i][1]))
    front: list[int] = []
    best = -math.inf
    for i in order:
        m = sign * points[i][1]
        # the equal twin of the last kept point is not beaten by it either (neither is
        # better in one): keep it too
        if m > best or (front and points[front[-1]] == points[i]):
            front.append(i)
            best = max(best, m)
    return front


# -- the HTML summary -----------------------------------------------------------------------
SPREAD_BY = ("model", "dataset", "preset", "overrides", "profile")


PAGE_STYLE = ("<style>body{font-family:sans-serif;margin:1.5em}img{max-width:100%}"
              "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
              "padding:2px 6px;text-align:right}td:first-child,th:first-child{text-align:"
              "left}.err{color:#a00}"
              # a wide table scrolls inside its own box instead of widening the page
              ".wide{overflow-x:auto;max-width:100%}.nowrap td{white-space:nowrap}</style>")
"""The summary pages' style (a sweep's and a search's)."""


def fmt(v) -> str:
    """A table cell: floats to 4 significant digits, a dash for nan."""
    if isinstance(v, float):
        return "–" if not math.isfinite(v) else f"{v:.4g}"
    return str(v)


def value_x_axis(ax, values: Sequence[float], unit: str | None) -> None:
    """:func:`value_axis` on the x axis."""
    value_axis(ax, values, unit, "x")


def value_axis(ax, values: Sequence[float], unit: str | None, which: str = "x") -> None:
    """The ``which`` (x or y) axis of ``ax`` for values that may span decades: log where
    they span more than one (labels at 1, 2 and 5 x each decade up to three decades, the
    decades alone beyond, minor ticks unlabelled: matplotlib's own minor labels ran into
    each other), linear within one;
    tick labels with SI prefixes (``200 nJ``) when ``unit`` is given, never an offset
    text such as ``1e-6`` apart from the numbers."""
    from matplotlib.ticker import EngFormatter, LogLocator, MaxNLocator, NullFormatter
    axis = ax.xaxis if which == "x" else ax.yaxis
    xs = [x for x in values if math.isfinite(x) and x > 0]
    if xs and max(xs) / min(xs) > 10:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
        decades = math.log10(max(xs) / min(xs))
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 3
                                          else (1.0,)))
        axis.set_minor_formatter(NullFormatter())
    else:   # five ticks at most: "2.085 uJ" labels are wide
        axis.set_major_locator(MaxNLocator(5))
    if unit is not None:
        axis.set_major_formatter(EngFormatter(unit=unit))


def _panel(ax, gs: list[dict], metric: str, title: str, label, better: str = "higher") -> None:
    """One metric-against-energy panel: mean +/- std over seeds, the Pareto front (none for
    a metric no direction of which is better)."""
    pts = [(g["per_inference_j_mean"], g["mean"]) for g in gs]
    drawn = False
    for g, (x, y) in zip(gs, pts, strict=True):
        if math.isfinite(x) and math.isfinite(y):
            yerr = g["std"] if math.isfinite(g["std"]) else 0.0
            xerr = g["per_inference_j_std"] if math.isfinite(g["per_inference_j_std"]) else 0.0
            ax.errorbar([x], [y], yerr=[yerr], xerr=[xerr], fmt="o", capsize=3, label=label(g))
            drawn = True
    front = pareto(pts, better) if better != "neither" else []
    if front:
        ax.plot([pts[j][0] for j in front], [pts[j][1] for j in front], "k--", lw=1,
                label="Pareto front")
    value_x_axis(ax, [x for x, _ in pts], "J")
    ax.set_title(title)
    ax.set_xlabel("energy per inference")
    ax.set_ylabel(metric)
    if drawn:
        # below the axes, never over the points (constrained layout makes room for it)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=2,
                  frameon=False)
    else:
        ax.text(0.5, 0.5, "no run priced here", ha="center", transform=ax.transAxes)


def _plot(groups: list[dict], metric: str, profiles: list[str], better: str = "higher"):
    """The answer first (every model and setting on every profile it was priced on, one
    Pareto front: which chip, at what accuracy, for how many joules), then one panel per
    profile."""
    from matplotlib.figure import Figure
    n = len(profiles) + 1
    cols = min(n, 2)
    rows = -(-n // cols)
    fig = Figure(figsize=(6.0 * cols, 4.2 * rows), layout="constrained")
    _panel(fig.add_subplot(rows, cols, 1), groups, metric, "every profile",
           lambda g: f"{g['model']} {g['overrides']} @ {g['profile']}".replace("  ", " "),
           better)
    for i, prof in enumerate(profiles):
        _panel(fig.add_subplot(rows, cols, i + 2), [g for g in groups if g["profile"] == prof],
               metric, prof, lambda g: f"{g['model']} {g['overrides']}".strip(), better)
    return fig


def _front_note(metric: str, better: str, models: Sequence[str]) -> str:
    """What the plot's dashed line is, in the metric's own direction."""
    if better == "neither":
        return (f"{metric} has no better direction ({', '.join(models)}: a measurement, not "
                "a score), so no Pareto front is drawn.")
    return f"The dashed line is the Pareto front ({better} {metric}, less energy)."


def html_summary(rows: Sequence[Mapping], spec: Spec | None = None) -> str:
    """A self-contained page: one plot (PNG inline) per main metric, the spread over seeds
    (one table per main metric), the table. Each model is shown against its own card's
    main metric, its Pareto front in that metric's direction."""
    import html

    from deploy.plots import fig_to_img
    esc = html.escape
    groups = summary(rows, by=SPREAD_BY)   # each group: its own model's main metric
    # (metric, direction) -> its groups, in first-seen order: models whose main metrics
    # differ (an accuracy and an error) share no axis and no front
    by_metric: dict[tuple, list[dict]] = {}
    for g in groups:
        by_metric.setdefault((g["metric"], better_of(g["model"], g["metric"])), []).append(g)
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    name = spec.name if spec is not None else "sweep"
    runs = len({r["key"] for r in rows})
    failed = sorted({r["key"] for r in rows if r["status"] == "error"
                     and not str(r.get("error", "")).startswith("pricing:")})
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>{esc(name)}</title>"
             f"{PAGE_STYLE}</head><body><h1>Sweep {esc(name)}</h1>",
             f"<p>{runs} runs, {len(failed)} failed, priced on {len(profiles)} profiles. "
             "A run's ledger priced on a profile it was not simulated on is re-priced, not "
             "re-simulated (a neuromorphic network is not re-placed on another chip's cores)."
             "</p>"]
    plotted = [(k, gs) for k, gs in by_metric.items() if k[0]]
    if len(plotted) > 1:
        which = "; ".join(f"{metric} ({', '.join(dict.fromkeys(g['model'] for g in gs))})"
                          for (metric, _), gs in plotted)
        parts.append(f"<p>Each model is plotted against its own main metric: {esc(which)}.</p>")
    for (metric, better), gs in plotted:
        models = list(dict.fromkeys(g["model"] for g in gs))
        these = set(models)
        fig = _plot(gs, metric, [p for p in profiles
                                 if any(r["profile"] == p and r["model"] in these
                                        for r in rows)], better)
        parts.append(fig_to_img(fig, f"{metric} against energy per inference per profile"))
        parts.append("<p>Points: mean over seeds; bars: standard deviation (n - 1). "
                     f"{esc(_front_note(metric, better, models))}</p>")
    models = {}   # profile -> (figures are, execution model, what they leave out)
    for r in rows:
        if r.get("execution_model"):
            models.setdefault(r["profile"], (r.get("bound", ""), r["execution_model"],
                                             r.get("excludes", "")))
    if models:
        parts.append("<h2>What these figures are</h2><div class=wide><table><tr>"
                     "<th>profile</th><th>figures are</th><th>execution model</th>"
                     "<th>excludes</th></tr>")
        parts += [f"<tr><td>{esc(p)}</td><td>{esc(b)}</td><td>{esc(m)}</td><td>{esc(x)}</td>"
                  "</tr>" for p, (b, m, x) in models.items()]
        parts.append("</table></div>")
    heads = [*SPREAD_BY, "n", "mean", "std", "min", "max", "J/inference mean",
             "J/inference std", "J/inference min", "J/inference max"]
    for (metric, _), gs in by_metric.items() or [((None, "higher"), [])]:
        parts.append(f"<h2>Spread over seeds ({esc(metric or 'no metric')})</h2><div "
                     "class=wide><table><tr>"
                     + "".join(f"<th>{esc(h)}</th>" for h in heads) + "</tr>")
        for g in gs:
            cells = [*(g[k] for k in SPREAD_BY), g["n"], g["mean"], g["std"], g["min"],
                     g["max"], g["per_inference_j_mean"], g["per_inference_j_std"],
                     g["per_inference_j_min"], g["per_inference_j_max"]]
            parts.append("<tr>" + "".join(f"<td>{esc(fmt(c))}</td>" for c in cells) + "</tr>")
        parts.append("</table></div>")
    # the per-profile prose (execution model, exclusions) is in the table above: here it
    # squeezed every other column into one word a line; each row stays on one line and
    # the table scrolls sideways in its box
    parts.append("<h2>Every run x profile</h2><p>Execution model and "
                 "exclusions per profile: above; every column: results.csv.</p>"
                 "<div class='wide nowrap'><table><tr>")
    cols = [c for c in columns(rows) if c not in ("execution_model", "excludes")]
    parts.append("".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>")
    for r in rows:
        cls = " class=err" if r.get("status") == "error" else ""
        parts.append(f"<tr{cls}>" + "".join(f"<td>{esc(fmt(r.get(c, '')))}</td>"
                                              for c in cols) + "</tr>")
    parts.append("</table></div></body></html>\n")
    return "".join(parts)


def dry_run_lines(spec) -> list[str]:
    """One line per run (``--dry-run``)."""
    return [r.line() for r in expand(spec)]


__all__ = ["Spec", "RunSpec", "SweepResult", "load_spec", "expand", "run_sweep", "summary",
           "pareto", "table_text", "read_table", "html_summary", "dry_run_lines",
           "price_rows", "run_task", "single_thread"]
