"""Searches: a sweep spec with a ``[search]`` table (:mod:`deploy.search_spec`) run as an Optuna
study whose trials are sweep runs, on the same Dask cluster (or serially) as a grid sweep.

Optuna asks for a trial's settings (its sampler: TPE, NSGA-II or random), the run is simulated
by :func:`deploy.sweep.run_task` on a worker into ``OUT/runs/trial-NNNN-<key>.h5`` and priced
on every profile of the spec, and the trial's objectives (card metrics, or the energy columns
priced on the search's profile) are told back. Up to one trial per worker is in flight: the
sampler sees every finished trial before it proposes the next free slot's.

The study lives in ``OUT/study.db`` (Optuna's RDB storage on SQLite): it is the record of
which trials ran with which settings and results, so ``--resume`` continues it (finished
trials are kept, a trial a killed sweep left running is kept when its run file is whole and
run again otherwise) until ``trials`` have finished. A ``study.db`` that this program did not
make (no neuroedge study inside) is refused, never written over; one made by another search
spec is refused on ``--resume``, as is one that is damaged or of another Optuna schema
version (checked read-only before Optuna opens it, so it is left as it is).

Results: ``OUT/results.csv`` (one row per trial x profile, the ``trial`` and ``pareto``
columns first) and ``OUT/summary.html`` (the first two objectives against each other with the
Pareto front, or one objective against the trial number with the best so far; the trials).

Sampler settings for the small budgets a sweep affords: TPE's first
``max(2, min(10, trials // 3))`` trials are random (Optuna's default is 10 whatever the
budget), NSGA-II's population is ``max(2, min(50, trials // 3))`` (default 50), so a 6-trial
search has 2 random trials then 4 proposed by TPE, or 3 generations of 2 for NSGA-II.
"""
from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import sqlite3
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deploy import sweep
from deploy.errors import DiskFullError, SweepError
from deploy.search_page import finished, html_page
from deploy.search_spec import STUDY_FILE, Search, override_text, population, startup_trials
from hw_profiles.errors import NeuroedgeError
from sim import seeds

STUDY_NAME = "neuroedge-search"
MARK = "neuroedge_search"
"""The study's user attribute holding the search it runs (:func:`_fingerprint`): how a
``study.db`` this program made is told from one it did not."""
SQLITE_HEADER = b"SQLite format 3\x00"
LEAD = ("trial", "pareto")


# -- the study ----------------------------------------------------------------------------
def make_sampler(search: Search, started: int):
    """The search's sampler, seeded by the search's seed and the trials already in the study
    (a resumed random search does not draw the first session's values again)."""
    import optuna
    seed = seeds.child(search.seed, "search", started)
    if search.method == "tpe":
        return optuna.samplers.TPESampler(seed=seed,
                                          n_startup_trials=startup_trials(search.trials))
    if search.method == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed,
                                             population_size=population(search.trials))
    return optuna.samplers.RandomSampler(seed=seed)


def distributions(search: Search) -> dict:
    """Optuna's distribution per space key (a list choice as the text ``--set`` takes:
    Optuna's categorical values are scalars)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
    out = {}
    for name, p in search.space.items():
        if p.choices is not None:
            out[name] = CategoricalDistribution(
                [override_text(c) if isinstance(c, list) else c for c in p.choices])
        elif p.is_int:
            out[name] = IntDistribution(p.low, p.high, log=p.log, step=p.step or 1)
        else:
            out[name] = FloatDistribution(float(p.low), float(p.high), log=p.log,
                                          step=None if p.step is None else float(p.step))
    return out


FINGERPRINT_VERSION = 2
"""The layout of the search a study stores (:func:`_fingerprint`). 1 (no ``version`` key):
the dataset as the spec gave it (None for the card's default), no profile the objectives
are priced on and no profile digests; 2: everything that decides the objectives' values."""


def _dataset(spec: sweep.Spec) -> str:
    """The dataset the trials run on: the spec's, else the card's default (as
    :func:`run_of` runs it)."""
    from models.registry import REGISTRY
    return (spec.datasets or [None])[0] or REGISTRY[spec.models[0]].card.default_dataset


def _fingerprint(spec: sweep.Spec) -> str:
    """The search a study runs, as JSON: everything that decides its objectives' values.
    The model, the dataset (resolved: naming the card's default is the same search),
    preset, seed, the simulate profile and the profile the objectives are priced on (each
    by reference and by the digest of its numbers: a profile file edited since prices
    differently), the spec's profiles and the search but its number of trials (a resumed
    study may be given more)."""
    from models import runner
    search = {k: v for k, v in spec.search.to_dict().items() if k != "trials"}
    search["profile"] = _pricing(spec)   # resolved: naming the first profile is the default
    simulate = spec.simulate_on(spec.models[0])
    digests = {ref: sweep.profile_digest(runner.load_profile(ref))
               for ref in (simulate, search["profile"])}
    return json.dumps({"version": FINGERPRINT_VERSION, "model": spec.models[0],
                       "dataset": _dataset(spec), "preset": spec.presets[0],
                       "seed": spec.seeds[0], "simulate_profile": simulate,
                       "profiles": list(spec.profiles), "profile_digests": digests,
                       "search": search}, sort_keys=True)


def _upgraded(stored: dict, where: str) -> dict:
    """A stored fingerprint in this version's layout, or a SweepError when it cannot be
    (version 1 did not record the profile its objectives were priced on, nor the
    profiles' numbers: comparing it could mix objectives priced on two chips)."""
    version = stored.get("version", 1)
    if version == FINGERPRINT_VERSION:
        return stored
    if version == 1:
        raise SweepError(f"{where}: {STUDY_FILE} was made by an earlier neuroedge (search "
                         f"record version 1; this one reads {FINGERPRINT_VERSION}), which did "
                         "not record the profile its objectives were priced on; it is left as "
                         "it is: give another --out, or --force to start the study again")
    raise SweepError(f"{where}: {STUDY_FILE} was made by another neuroedge (search record "
                     f"version {version!r}; this one reads 1 and {FINGERPRINT_VERSION}); it "
                     "is left as it is: resume it with that neuroedge, or give another --out")


def _damaged(path: Path, why: str, ours: bool = True) -> SweepError:
    return SweepError(f"{path}: the study database is damaged ({why}); it is left as it is: "
                      "give another --out" + (", or --force to start the study again"
                                              if ours else ""))


def _unusable(path: Path, exc: BaseException | str, ours: bool = True) -> SweepError:
    """An SQLite error on the study as one line: a file (or folder) it may not write, in
    SQLite's words for those (SQLITE_READONLY "attempt to write a readonly database",
    SQLITE_CANTOPEN "unable to open database file"), or else a damaged database."""
    why = str(exc)
    if "readonly" in why or "unable to open" in why:
        return SweepError(f"{path}: the study cannot be written ({why}); make it writable, "
                          "or give another --out")
    return _damaged(path, why, ours)


def _read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to the SQLite file ``path``. A journal that a writer killed
    mid-transaction left beside it (a hot journal) cannot be read past read-only: one
    read-write open lets SQLite roll it back first, its own recovery to the last commit
    (what Optuna does on opening the file), then the file is read read-only."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    con = sqlite3.connect(uri, uri=True)
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return con
    except sqlite3.OperationalError as exc:
        con.close()
        if "readonly" not in str(exc) or not path.with_name(f"{path.name}-journal").exists():
            raise
    recover = sqlite3.connect(path)
    try:
        recover.execute("SELECT count(*) FROM sqlite_master").fetchone()
    finally:
        recover.close()
    return sqlite3.connect(uri, uri=True)


def stored_search(path: Path) -> str | None:
    """The fingerprint a neuroedge study in the SQLite file ``path`` stores; None when the
    file is not SQLite or holds no neuroedge study (it is opened read-only). Raises
    SweepError for an SQLite file too damaged to tell, or one it may not read."""
    try:
        with open(path, "rb") as f:
            if f.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                return None
    except OSError:
        return None
    try:
        con = _read_only(path)
    except sqlite3.Error as exc:
        raise _unusable(path, exc, ours=False) from None
    try:
        row = con.execute("SELECT a.value_json FROM study_user_attributes a JOIN studies s "
                          "ON a.study_id = s.study_id WHERE s.study_name = ? AND a.key = ?",
                          (STUDY_NAME, MARK)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such" in str(exc):   # no such table or column: not an Optuna study of ours
            return None
        raise _unusable(path, exc, ours=False) from None
    except sqlite3.DatabaseError as exc:   # "database disk image is malformed", ...
        raise _damaged(path, str(exc), ours=False) from None
    finally:
        con.close()
    return json.loads(row[0]) if row else None


@functools.lru_cache(maxsize=1)
def _optuna_schema() -> tuple[frozenset, str, tuple[str, ...]]:
    """The tables this Optuna's RDB storage has, its schema version (alembic head) and
    the versions it knows, from an empty storage in memory."""
    import optuna
    import sqlalchemy
    ref = optuna.storages.RDBStorage("sqlite:///:memory:")
    try:
        return (frozenset(sqlalchemy.inspect(ref.engine).get_table_names()),
                ref.get_head_version(), tuple(ref.get_all_versions()))
    finally:
        ref.engine.dispose()


BAD_VALUE_SQL = (
    "SELECT t.number, v.objective, v.value, v.value_type FROM trial_values v "
    "JOIN trials t ON t.trial_id = v.trial_id WHERE NOT ("
    "(v.value_type = 'FINITE' AND typeof(v.value) IN ('real', 'integer')) OR "
    "(v.value_type IN ('INF_POS', 'INF_NEG') AND v.value IS NULL)) "
    "ORDER BY t.number, v.objective LIMIT 1")
"""The first objective value Optuna's reading would fail on (its ``stored_repr_to_value``
asserts: a NULL value, a value_type its enum does not have, a number beside an infinity)."""


def check_study_file(path: Path) -> None:
    """Refuse, with one line naming ``path``, a study database Optuna would fail on or
    change on opening: damaged pages, a missing table (opening would make it again,
    empty), a schema of another Optuna version. Read-only: the file is left as it is."""
    import optuna
    tables, head, known = _optuna_schema()
    try:
        con = _read_only(path)
    except sqlite3.Error as exc:
        raise _unusable(path, exc) from None
    try:
        problems = [r[0] for r in con.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise _damaged(path, "; ".join(map(str, problems[:2])))
        have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = sorted(tables - have)
        if missing:
            raise _damaged(path, f"table {missing[0]} is missing")
        found = [r[0] for r in con.execute("SELECT version_num FROM alembic_version")]
        info = con.execute("SELECT count(*) FROM version_info").fetchone()[0]
        # this Optuna's layout of trial_values only: another schema is refused below
        bad_value = con.execute(BAD_VALUE_SQL).fetchone() if found == [head] else None
    except sqlite3.DatabaseError as exc:
        raise _unusable(path, exc) from None
    finally:
        con.close()
    if found != [head]:
        shown = ", ".join(map(str, found)) or "none"
        fix = (f"upgrade it with `optuna storage upgrade --storage sqlite:///{path}`"
               if len(found) == 1 and found[0] in known else
               "resume it with the Optuna that made it")
        raise SweepError(f"{path}: the study's Optuna schema is {shown}; Optuna "
                         f"{optuna.__version__} reads {head}; it is left as it is: {fix}, or "
                         "give another --out")
    if info != 1:
        raise _damaged(path, f"version_info holds {info} rows, not 1")
    if bad_value is not None:
        number, objective, value, kind = bad_value
        shown = "NULL" if value is None else repr(value)
        raise _damaged(path, f"trial {number} holds objective {objective} as {shown} of "
                             f"value_type {kind!r}; Optuna writes a number as FINITE, an "
                             "infinity as INF_POS or INF_NEG with no number")


def _check_existing(spec: sweep.Spec, out: Path, *, resume: bool, force: bool) -> bool:
    """Every refusal ``out/study.db`` can give, read-only and before anything is created:
    True when it holds our study (to resume, or to start again with ``force``)."""
    path = out / STUDY_FILE
    if not (path.exists() or path.is_symlink()):
        return False
    theirs = stored_search(path) if path.is_file() and not path.is_symlink() else None
    if theirs is None:
        raise SweepError(f"--out {out}: {STUDY_FILE} exists and holds no neuroedge study "
                         "(this program did not make it; it is left alone): give "
                         "another --out")
    if not (resume or force):
        raise SweepError(f"--out {out}: {STUDY_FILE} holds a study; give --resume to "
                         "continue it or --force to start it again")
    if resume:
        mine = json.loads(_fingerprint(spec))
        stored = _upgraded(json.loads(theirs), f"--out {out}")
        if stored != mine:
            diff = _first_difference(stored, mine)
            raise SweepError(f"--out {out}: {STUDY_FILE} holds another search ({diff}); give "
                             "the spec it was made with, another --out, or --force")
        check_study_file(path)
    return True


def _storage(path: Path):
    import optuna
    return optuna.storages.RDBStorage(f"sqlite:///{path}")


def open_study(spec: sweep.Spec, out: Path, *, resume: bool, force: bool):
    """The study in ``out/study.db``: a new one (made under a temporary name and renamed, so
    a file of that name is always a whole neuroedge study), or the stored one on ``resume``."""
    import optuna
    from optuna.trial import TrialState
    optuna.logging.set_verbosity(optuna.logging.WARNING)   # the sweep prints its own lines
    path = out / STUDY_FILE
    mine = _fingerprint(spec)
    if _check_existing(spec, out, resume=resume, force=force):
        if resume:
            storage = _storage(path)
            study_id = storage.get_study_id_from_name(STUDY_NAME)
            try:
                trials = storage.get_all_trials(study_id, deepcopy=False)
                objectives = len(storage.get_study_directions(study_id))
            except (AssertionError, LookupError, TypeError, ValueError) as exc:
                # a row Optuna's reading refuses that check_study_file does not look at
                # (a parameter's distribution or an attribute that is not JSON, a name
                # its enums do not have): Optuna raises these, not a storage error
                storage.engine.dispose()
                raise _damaged(path, f"its trials cannot be read back: "
                                     f"{sweep.one_line(exc)}") from None
            # a complete trial without its objective values (a table emptied behind
            # Optuna's back) would fail the Pareto front after the trials ran
            broken = [t for t in trials if t.state == TrialState.COMPLETE
                      and len(t.values or ()) != objectives]
            if broken:
                storage.engine.dispose()
                raise _damaged(path, f"trial {broken[0].number} is complete but holds "
                                     f"{len(broken[0].values or ())} of its {objectives} "
                                     "objective values")
            return optuna.load_study(study_name=STUDY_NAME, storage=storage,
                                     sampler=make_sampler(spec.search, len(trials)))
        path.unlink()   # --force on a study of ours
    tmp = out / f".{STUDY_FILE}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        storage = _storage(tmp)
        study = optuna.create_study(storage=storage, study_name=STUDY_NAME,
                                    directions=spec.search.directions)
        study.set_user_attr(MARK, mine)
        storage.engine.dispose()
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return optuna.load_study(study_name=STUDY_NAME, storage=_storage(path),
                             sampler=make_sampler(spec.search, 0))


def _first_difference(a: dict, b: dict, where: str = "") -> str:
    """The first key whose value differs, said as ``KEY was X, the spec gives Y``. The
    profiles' digests come last, and only for a profile both name: a profile given in
    place of another is told by its own key (``search.profile``); a digest alone says
    that profile's numbers were edited."""
    digests = "profile_digests"
    for k in sorted(set(a) | set(b), key=lambda k: (k == digests, k)):
        if a.get(k) == b.get(k):
            continue
        if where == f"{digests}.":
            if k in a and k in b:
                return (f"the numbers of profile {k} differ from those the study was "
                        f"priced with (digest {a[k]}, now {b[k]})")
            continue
        if isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
            inner = _first_difference(a[k], b[k], f"{where}{k}.")
            if inner:
                return inner
            continue
        was = f"{a[k]!r}" if k in a else "not given"
        now = f"gives {b[k]!r}" if k in b else "does not give it"
        return f"{where}{k} was {was}, the spec {now}"
    return "" if where else "the same"


# -- trials -------------------------------------------------------------------------------
def run_of(spec: sweep.Spec, params: dict) -> sweep.RunSpec:
    """The sweep run a trial's settings make (every value through ``--set``'s typing)."""
    from models import runner
    model = spec.models[0]
    typed = runner.parse_overrides(model, {k: override_text(v) for k, v in params.items()})
    return sweep.RunSpec(model, _dataset(spec), spec.presets[0], spec.seeds[0], typed,
                         spec.simulate_on(model))


def check_space(spec: sweep.Spec) -> None:
    """The search's profile (the objectives are priced there: a kind the model does not run
    on would fail every trial) through the card's kind check, and every edge of the space
    (each range's low and high, each choice, the other keys at their first edge) through
    ``runner.prepare``: a value the model refuses fails here, on one line, before any
    trial runs."""
    from models import runner
    search = spec.search
    try:
        # the check a grid sweep's simulate profile gets in runner.prepare
        runner.check_kind(runner.method_of(spec.models[0]), runner.load_profile(_pricing(spec)),
                          "search.profile" if search.profile else
                          "search.profile (by default the first of profiles)")
    except NeuroedgeError as exc:
        raise SweepError(f"sweep spec {spec.source}: {exc}; give a profile of one of those "
                         "kinds") from None
    first = {k: p.ends()[0] for k, p in search.space.items()}
    # each edge alone first (the other keys at the preset's values), so a refused value is
    # named as itself, not as whichever key happened to be tried with it; then with the
    # other keys at their first edge, for a Config that refuses a combination
    for alone in (True, False):
        for name, p in search.space.items():
            for value in p.ends():
                others = {} if alone else {k: v for k, v in first.items() if k != name}
                try:
                    run_of(spec, {**others, name: value}).plan()   # runner.prepare's checks
                except NeuroedgeError as exc:
                    with_ = ", ".join(f"{k} = {v!r}" for k, v in others.items())
                    raise SweepError(f"sweep spec {spec.source}: search.space.{name} = "
                                     f"{value!r}" + (f" (with {with_})" if with_ else "")
                                     + f": {exc}") from None


def objective_values(rows: Sequence[dict], search: Search, label: str) -> list[float] | str:
    """The trial's objectives from its row priced on ``label``, or why there are none."""
    row = next((r for r in rows if r["profile"] == label), None)
    if row is None:
        return f"no row priced on {label}"
    if row["status"] != "ok":
        return row["error"]
    values = []
    for name, _ in search.objectives:
        v = row.get(name)
        v = float(v) if v is not None else math.nan
        if not math.isfinite(v):
            return f"{name} is {v} on {label}: an objective needs a finite number"
        values.append(v)
    return values


@dataclass
class SearchResult:
    """What :func:`run_search` did: the rows, the files, the trials that ran here, those a
    killed session left running whose run file was whole (``resumed``), those that failed
    (here, or in the session that ran them: a failed trial is not run again),
    and the Pareto front (trial numbers)."""

    rows: list[dict]
    study_path: Path
    table_path: Path
    html_path: Path
    ran: list[int] = field(default_factory=list)
    resumed: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    pareto: list[int] = field(default_factory=list)
    kept: int = 0          # trials an earlier session completed (--resume); those it
                           # failed are in ``failed``
    interrupted: bool = False


Progress = Callable[[int, int, int, str], None]   # (finished, trials, trial number, line)


class _Done:
    """A serial trial's result, shaped like the Dask future a cluster trial returns."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _counted(study) -> int:
    return sum(finished(t) for t in study.get_trials(deepcopy=False))


def _settle_stale(study, spec, runs_dir: Path, profiles, label, result) -> None:
    """Trials a killed sweep left RUNNING: told from their run file when it is whole,
    otherwise failed as interrupted and queued to run again with the same settings."""
    from optuna.trial import TrialState
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        stem = t.user_attrs.get("run_file")
        path = runs_dir / f"{stem}.h5" if stem else None
        run = run_of(spec, t.params)
        if path is not None and sweep.run_is_complete(path, run):
            values = objective_values(sweep.price_rows(run, run.key, path, profiles),
                                      spec.search, label)
            if not isinstance(values, str):
                study.tell(t.number, values)
                result.resumed.append(t.number)
                continue
        study.tell(t.number, state=TrialState.FAIL)   # no "error": interrupted, not counted
        study.enqueue_trial(t.params, skip_if_exists=False)


def _tell(study, trial, rows, search, label, result) -> str:
    from optuna.trial import TrialState
    values = objective_values(rows, search, label)
    if isinstance(values, str):
        trial.set_user_attr("error", values)
        study.tell(trial, state=TrialState.FAIL)
        result.failed.append(trial.number)
        return f"failed: {values}"
    study.tell(trial, values)
    result.ran.append(trial.number)
    return " ".join(f"{n}={v:.4g}" for (n, _), v in zip(search.objectives, values, strict=True))


def _trials(study, spec, runs_dir, profiles, label, parallel, submit, first_done, result,
            progress) -> None:
    """Ask, run, tell until ``trials`` have finished, at most ``parallel`` in flight."""
    search = spec.search
    dists = distributions(search)
    n_done = _counted(study)
    pending = {}   # future -> (trial, run, stem)
    while True:
        while len(pending) < parallel and n_done + len(pending) < search.trials:
            trial = study.ask(dists)
            try:
                run = run_of(spec, trial.params)
                stem = f"trial-{trial.number:04d}-{run.key}"
            except NeuroedgeError as exc:   # a value inside the space the Config refuses
                _tell(study, trial, [{"profile": label, "status": "error",
                                      "error": sweep.one_line(exc)}], search, label, result)
                n_done += 1
                continue
            trial.set_user_attr("run_file", stem)
            pending[submit(run, stem)] = (trial, run, stem)
        if not pending:
            return
        fut = first_done(pending)
        trial, run, stem = pending.pop(fut)
        try:
            rows = fut.result()
        except DiskFullError:
            raise
        except Exception as exc:   # the task's worker died RETRIES + 1 times
            rows = sweep.error_rows(run, run.key, profiles, f"worker lost: {sweep.one_line(exc)}")
        line = _tell(study, trial, rows, search, label, result)
        n_done += 1
        if progress is not None:
            progress(n_done, search.trials, trial.number, line)


def _run_serial(study, spec, runs_dir, profiles, label, result, progress):
    def submit(run, stem):
        return _Done(sweep.run_task(run, str(runs_dir), profiles, stem))

    with sweep.serial_threads():
        _trials(study, spec, runs_dir, profiles, label, 1, submit, lambda p: next(iter(p)),
                result, progress)


def _run_cluster(study, spec, runs_dir, profiles, label, result, progress, client):
    from distributed import wait
    token = uuid.uuid4().hex[:8]
    parallel = max(1, len(client.scheduler_info().get("workers", {})))

    def submit(run, stem):
        return client.submit(sweep.run_task, run, str(runs_dir), list(profiles), stem,
                             key=f"neuroedge-search-{token}-{stem}",
                             retries=sweep.RETRIES, pure=False)

    def first_done(pending):
        done = wait(list(pending), return_when="FIRST_COMPLETED").done
        return min(done, key=lambda f: pending[f][0].number)

    _trials(study, spec, runs_dir, profiles, label, parallel, submit, first_done, result,
            progress)


# -- the table -------------------------------------------------------------------
def study_rows(study, spec, runs_dir: Path, profiles, label: str
               ) -> tuple[list[dict], list[int]]:
    """Every finished trial's rows (its run file priced on every profile, or its error), in
    trial order, and the Pareto front's trial numbers (Optuna's ``best_trials``)."""
    from optuna.trial import TrialState
    front = sorted(t.number for t in study.best_trials) if _any_complete(study) else []
    rows = []
    for t in study.get_trials(deepcopy=False):
        stem = t.user_attrs.get("run_file")
        if not finished(t):
            continue
        lead = {"trial": t.number, "pareto": "yes" if t.number in front else ""}
        if not stem:   # settings the model's Config refused: the trial never ran
            rows.append({**lead, "key": "", "model": spec.models[0],
                         "overrides": sweep.overrides_text(
                             {k: override_text(v) for k, v in t.params.items()}),
                         "profile": label, "status": "error",
                         "error": t.user_attrs.get("error", "")})
            continue
        run = run_of(spec, t.params)
        path = runs_dir / f"{stem}.h5" if stem else None
        if t.state == TrialState.COMPLETE and path is not None and sweep.run_is_complete(path):
            trial_rows = sweep.price_rows(run, run.key, path, profiles)
        elif t.state == TrialState.COMPLETE:
            trial_rows = sweep.error_rows(run, run.key, profiles,
                                          f"run file runs/{stem}.h5 is missing or unreadable")
        else:
            trial_rows = sweep.error_rows(run, run.key, profiles, t.user_attrs.get("error", ""))
        rows += [{**lead, **r} for r in trial_rows]
    return rows, front


def _any_complete(study) -> bool:
    from optuna.trial import TrialState
    return bool(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))


def _pricing(spec) -> str:
    """The profile the objectives are priced on: the search's, by default the first."""
    return spec.search.profile or spec.profiles[0]


def _label(spec) -> str:
    from models import runner
    return runner.load_profile(_pricing(spec)).label


def write_results(study, spec, out: Path, profiles) -> tuple[list[dict], list[int]]:
    from deploy.outputs import write_text
    rows, front = study_rows(study, spec, out / "runs", profiles, _label(spec))
    write_text(out / "results.csv", sweep.table_text(rows, LEAD), force=True)
    write_text(out / "summary.html", html_page(study, spec, front, _label(spec)), force=True)
    return rows, front


# -- the search ---------------------------------------------------------------------------
@contextlib.contextmanager
def _study_errors(path: Path):
    """Optuna's StorageInternalError and SQLAlchemy's errors on the study as one line
    naming the file, not a traceback: a study.db that cannot be written (read-only,
    immutable, on a read-only mount) says so; any other failure (a page damaged while
    the sweep ran) says the database is damaged."""
    import optuna
    import sqlalchemy.exc
    try:
        yield
    except (optuna.exceptions.StorageInternalError, sqlalchemy.exc.SQLAlchemyError,
            sqlite3.Error) as exc:
        cause = exc
        while cause is not None and not isinstance(cause, sqlite3.Error):
            cause = cause.__cause__ or cause.__context__
        raise _unusable(path, cause if cause is not None else sweep.one_line(exc)) from None


def dry_run_lines(spec: sweep.Spec) -> list[str]:
    """What ``--dry-run`` prints for a search: the study, one line per space key."""
    spec = spec if isinstance(spec, sweep.Spec) else sweep.load_spec(spec)
    search = spec.search
    check_space(spec)
    lines = [f"{search.method} search of {spec.models[0]}: {search.trials} trials, "
             f"objectives {', '.join(f'{n}:{d}' for n, d in search.objectives)} "
             f"(priced on {_label(spec)})"]
    with warnings.catch_warnings():   # Optuna warns of a high off the steps: said below
        warnings.simplefilter("ignore")
        dists = distributions(search)
    for name, p in search.space.items():
        if p.choices is not None:
            what = f"one of {', '.join(override_text(c) for c in p.choices)}"
        else:
            # the range searched: Optuna lowers a high that is not low + k * step to the
            # last step below it
            high = dists[name].high
            searched = p.high if high == p.high else high
            what = (f"{p.low} .. {searched}" + (" (log)" if p.log else "")
                    + (f" step {p.step}" if p.step is not None else "")
                    + (f" (high = {p.high} is not on a step from {p.low})"
                       if searched != p.high else ""))
        lines.append(f"  {name}: {what}")
    return lines


def run_search(spec, out_dir, *, workers: int | None = None, scheduler: str | None = None,
               resume: bool = False, force: bool = False, serial: bool = False,
               progress: Progress | None = None) -> SearchResult:
    """Run the ``[search]`` of ``spec`` into ``out_dir`` (``study.db``, ``runs/``,
    ``results.csv``, ``summary.html``): serially, on a LocalCluster of ``workers``, or on
    the cluster at ``scheduler``, as :func:`deploy.sweep.run_sweep`.

    ``resume`` continues the study in ``out_dir`` until ``trials`` have finished; ``force``
    starts a study of ours again. Without either, an existing study, table or trial run
    file is an error. Raises SweepError (one line) for every check, before any trial runs.
    """
    sweep.check_scheduler(scheduler)
    spec = spec if isinstance(spec, sweep.Spec) else sweep.load_spec(spec)
    if spec.search is None:
        raise SweepError(f"sweep spec {spec.source} has no [search] table; run it with "
                         "deploy.sweep.run_sweep")
    check_space(spec)
    out = Path(out_dir)
    runs_dir = out / "runs"
    if not (resume or force):
        existing = [p for p in (out / "results.csv", out / "summary.html") if p.exists()]
        existing += sorted(runs_dir.glob("trial-*.h5"))[:1] if runs_dir.is_dir() else []
        if existing and not (out / STUDY_FILE).exists():
            raise SweepError(f"--out {out}: {existing[0].relative_to(out)} exists; give "
                             "another --out, or --resume / --force")
    # the study.db refusals (not ours, another search, damaged, another Optuna) before
    # anything is created in --out; undone_if_refused takes back the folders of a refusal
    # that can only come later (a scheduler nobody answers, a study that cannot be written)
    _check_existing(spec, out, resume=resume, force=force)
    profiles = list(spec.profiles)
    label = _label(spec)
    with sweep.undone_if_refused(out):
        try:
            runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SweepError(f"--out {out}: cannot create {runs_dir} "
                             f"({exc.strerror})") from None
        with sweep.output_lock(out), _study_errors(out / STUDY_FILE):
            return _run_locked(spec, out, runs_dir, profiles, label, workers, scheduler,
                               resume, force, serial, progress)


class _Interrupts:
    """Ctrl-C while a search runs, never lost. Python runs a signal's handler between two
    bytecodes of whatever runs then, and a KeyboardInterrupt raised inside a finaliser
    (distributed's ``Future.__del__``, run when a trial's future is dropped) is printed as
    "Exception ignored in" and dropped: the search went on and ended with status 0. SIGINT
    is raised at once, as Python's own handler does, but inside a ``__del__`` it is only
    noted, and :meth:`check` raises it at the next safe point (after each trial, after the
    cluster closes)."""

    def __init__(self):
        self.noted = False

    def handler(self, signum, frame) -> None:
        self.noted = True
        if not _in_finaliser(frame):
            raise KeyboardInterrupt

    def check(self) -> None:
        if self.noted:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def installed(self):
        """This handler while the search runs, in place of Python's default one only (a
        caller's own handler, or a thread other than the main one, is left alone)."""
        import signal
        import threading
        if (threading.current_thread() is not threading.main_thread()
                or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
            yield self
            return
        signal.signal(signal.SIGINT, self.handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _in_finaliser(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _run_locked(spec, out, runs_dir, profiles, label, workers, scheduler, resume, force,
                serial, progress) -> SearchResult:
    """The body of :func:`run_search`, run while the output folder is locked."""
    from optuna.trial import TrialState
    result = SearchResult([], out / STUDY_FILE, out / "results.csv", out / "summary.html")
    study = None
    interrupts = _Interrupts()

    def told(done, total, number, line):   # after each trial: a Ctrl-C noted meanwhile
        if progress is not None:
            progress(done, total, number, line)
        interrupts.check()
    # the cluster closes inside the try: a Ctrl-C while its workers shut down (after the
    # last trial, or after an earlier Ctrl-C) still writes the table of what finished
    try:
        with interrupts.installed(), contextlib.ExitStack() as stack:
            # the cluster before the study: a scheduler nobody answers is refused before a
            # new study.db is made
            client = None if serial else stack.enter_context(sweep.cluster_client(workers,
                                                                                  scheduler))
            study = open_study(spec, out, resume=resume, force=force)
            # trials an earlier session finished: kept when complete, failed when they
            # failed (a failed trial is finished, not run again: it counts as failed, never
            # as kept)
            for t in filter(finished, study.get_trials(deepcopy=False)):
                if t.state == TrialState.COMPLETE:
                    result.kept += 1
                else:
                    result.failed.append(t.number)
            _settle_stale(study, spec, runs_dir, profiles, label, result)
            if serial:
                _run_serial(study, spec, runs_dir, profiles, label, result, told)
            else:
                _run_cluster(study, spec, runs_dir, profiles, label, result, told, client)
        interrupts.check()   # one noted while the cluster closed
    except KeyboardInterrupt:
        if study is None:   # before the study was open: no trial finished here
            raise
        result.interrupted = True
        result.rows, result.pareto = write_results(study, spec, out, profiles)
        raise
    except DiskFullError as exc:
        sweep.clean_temporaries(runs_dir)
        raise SweepError(f"{exc}; the search stopped there with {len(result.ran)} trial(s) "
                         f"finished in {out / STUDY_FILE}: free some space and rerun "
                         "with --resume") from None
    sweep.clean_temporaries(runs_dir)
    result.rows, result.pareto = write_results(study, spec, out, profiles)
    return result


__all__ = ["run_search", "dry_run_lines", "open_study", "stored_search", "SearchResult",
           "distributions", "make_sampler", "check_space", "objective_values", "STUDY_FILE"]
