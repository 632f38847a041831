"""The method contract: a data-only ``Card`` per method, three functions, and ``REGISTRY``.

Every method is one room (package) under ``models/``. Its ``card.py`` builds a :class:`Card`
(what the method is, where it runs, its ``Config`` dataclass and presets) and registers it
with the method's three functions:

``simulate(cfg, device, data, progress) -> Outcome``
    Train and test the method with configuration ``cfg`` on ``device`` (a ``sim.Device``
    the runner resolved from the profile) on ``data`` (what the card's ``load_data``
    returned). Everything that runs is counted in ``device.ledger``.
``experiment(preset, seed, profiles, progress) -> Study``
    The paper's comparison at the preset's scale: several runs and a summary of the claim.
    ``profiles`` maps a device kind to the profile the study uses for it (``None``: the
    card's ``study_profiles``).
``artifact(trained, target)``
    Plain data the ``sim`` layer owns for one export target (``sim/artifacts.py``), built
    from the trained state an ``Outcome`` carried (or a run file stored), so an export never
    retrains.

Their signatures are the protocols :class:`Simulate`, :class:`Experiment` and
:class:`Artifact` (and :class:`LoadData` for a room with data of its own): the parameter
names and their order are part of the contract (``tests/models/test_contract.py``).

The runner (``models/runner.py``) is the only caller of ``simulate``: it resolves the
profile through ``sim.device()``, checks the dataset, builds the config from a preset and
overrides, and wraps the outcome in a :class:`RunResult`, the one record of a run: the run
file (``deploy.runfile.write_run(path, result)``) stores it and ``read_run(path)`` gives it
back, with :class:`RunFile` (what only a file knows: its path, format version, write time
and package versions) as its ``file``. ``register`` checks a card before it is accepted
(defaults among its own lists, presets naming real fields, known export targets);
registering a name twice is an error.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from hw_profiles.errors import suggestion
from hw_profiles.profile import KINDS, HardwareProfile
from sim import neurobench
from sim.artifacts import BitwiseArtifact, NetworkArtifact, TorchArtifact
from sim.device import Device
from sim.errors import ModelError
from sim.ledger import Ledger
from sim.traces import Trace, as_traces

Progress = Callable[[int, int, dict], None]
"""Progress callback: ``(step, total, metrics so far)``; the CLI draws a bar with it."""

PRESETS = ("quick", "full")
"""Every card has both: ``quick`` runs in seconds to a few minutes (the CLI default; tests and
the demo use it), ``full`` is the paper-scale setting. Both train: quick is smaller, never
a skipped step."""

EXPORT_TARGETS = ("c", "nir", "onnx")
"""Targets ``deploy/export.py`` can write; a card lists the subset its ``artifact`` builds."""

BETTER = ("higher", "lower", "neither")
"""The ways a card's main metric can improve (:attr:`Card.main_metric_better`)."""

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Trained:
    """A trained model as plain data: arrays plus JSON-able facts (shapes, config).

    This is what a run file stores (``/trained``) and what ``artifact`` rebuilds an export
    from, so ``neuroedge export --from RUN.h5`` needs no training.
    """

    arrays: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        for key, arr in self.arrays.items():
            if not isinstance(arr, np.ndarray):
                raise ModelError(f"Trained.arrays[{key!r}] is a {type(arr).__name__}; expected "
                                 "a numpy array (convert tensors with .detach().cpu().numpy())")


@dataclass
class Outcome:
    """What ``simulate`` returns: scalar metrics, typed traces, the trained state.

    ``facts`` are plain values about the run that are not settings (input sizes, the torch
    device used, where the data came from); the run file keeps them beside the config.
    """

    metrics: dict[str, float]
    traces: dict[str, Trace] = field(default_factory=dict)
    trained: Trained | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        self.metrics = {k: float(v) for k, v in self.metrics.items()}
        self.traces = as_traces(self.traces)


@dataclass(frozen=True)
class RunFile:
    """What only a run file knows about a run (``deploy.runfile.read_run`` sets it).

    Attributes
    ----------
    path : the file the run was read from
    format_version : the layout version that was read (``deploy.runfile.SUPPORTED_VERSIONS``)
    created : when the file was written (ISO 8601, UTC, seconds)
    versions : package name -> version of python, neuroedge and the libraries that wrote it
    """

    path: str
    format_version: int
    created: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)


@dataclass
class RunResult:
    """What one simulation produced: the one record of a run, fresh from the runner or read
    back from its run file.

    Attributes
    ----------
    model, dataset : names
    profile : the profile the simulation ran on, as loaded (the device's own object). Never a
        name: a name would be looked up again when the run file is written, which loses a
        user's file (own name: "unknown profile"; a shipped name: the shipped numbers).
    config : the model's configuration (``dataclasses.asdict`` of its ``Config``)
    metrics : scalar results (accuracy, loss, ...)
    ledger : every count the simulation recorded
    traces : typed traces (loss curves, spike rasters, per-core values), stored compressed
    preset : the preset the config started from (``quick``/``full``/``own``); ``None`` for
        a run read from a format 1-2 run file, which did not record it
    facts : plain values about the run that are not settings (``Outcome.facts``)
    trained : the trained state, for exports from the run file (``None`` when not exportable)
    units : metric name -> its unit (the card's, see :func:`metric_unit`); empty for a file
        written before units were stored
    main_metric : the metric a report's headline leads with (the card's)
    file : where the record was read from (:class:`RunFile`); ``None`` for a result that has
        not been read from a file

    Raises
    ------
    ModelError
        ``profile`` is not a ``HardwareProfile``, or a trace is not a ``sim.traces.Trace``.
    """

    model: str
    profile: HardwareProfile
    dataset: str
    config: dict[str, Any]
    metrics: dict[str, float]
    ledger: Ledger
    traces: dict[str, Trace] = field(default_factory=dict)
    preset: str | None = "quick"
    facts: dict[str, Any] = field(default_factory=dict)
    trained: Trained | None = None
    units: dict[str, str] = field(default_factory=dict)
    main_metric: str | None = None
    file: RunFile | None = None

    def __post_init__(self):
        if not isinstance(self.profile, HardwareProfile):
            raise ModelError(f"RunResult({self.model!r}): profile = {self.profile!r} is a "
                             f"{type(self.profile).__name__}; pass the device's HardwareProfile "
                             "(dev.profile), never its name, so the run is priced on the "
                             "numbers it ran with")
        self.traces = as_traces(self.traces)

    def unit(self, metric: str) -> str:
        """The unit of ``metric``; ``"?"`` when the record has none (a file written before
        units were stored)."""
        return self.units.get(metric, "?")

    @property
    def neurobench(self) -> dict:
        """NeuroBench's metrics of the run's ledger (``sim.neurobench.metrics``; nan where
        the run cannot give them): the values a run file's ``neurobench`` attribute holds."""
        return neurobench.metrics(self.ledger)


@dataclass
class Study:
    """What ``experiment`` returns: the runs of the paper's comparison and its summary."""

    runs: dict[str, RunResult]
    summary: dict[str, Any]


class Simulate(Protocol):
    """``simulate(cfg, device, data, progress) -> Outcome``: train and test the method.

    Parameters
    ----------
    cfg : the card's ``Config`` (from a preset, overrides and the seed)
    device : the engine the runner resolved from the profile (``sim.device``); everything
        that runs is counted in ``device.ledger``
    data : what the method's ``load_data(dataset, cfg)`` returned
    progress : called as ``progress(step, total, metrics)``, or ``None``
    """

    def __call__(self, cfg: Any, device: Device, data: Any,
                 progress: Progress | None) -> Outcome: ...


class Experiment(Protocol):
    """``experiment(preset, seed, profiles, progress) -> Study``: the paper's comparison.

    Parameters
    ----------
    preset : ``quick`` or ``full``
    seed : the study's seed (a multi-seed study runs the run seeds ``seed, seed + 1, ...``)
    profiles : device kind -> profile name or path the study runs that kind on
    progress : called as ``progress(step, total, metrics)``, or ``None``
    """

    def __call__(self, preset: str, seed: int, profiles: Mapping[str, Any],
                 progress: Progress | None) -> Study: ...


class Artifact(Protocol):
    """``artifact(trained, target)``: the ``sim.artifacts`` object (``ARTIFACT_TYPES[target]``)
    an exporter writes ``target`` from, rebuilt from the trained state with no training."""

    def __call__(self, trained: Trained,
                 target: str) -> BitwiseArtifact | NetworkArtifact | TorchArtifact: ...


class LoadData(Protocol):
    """``load_data(dataset, cfg)``: the data ``simulate`` takes for ``dataset`` (a room with
    data of its own; the others use :func:`default_load_data`)."""

    def __call__(self, dataset: str, cfg: Any) -> Any: ...


@dataclass(frozen=True)
class Card:
    """What a method is and where it runs: data only (the functions are registered beside it).

    Attributes
    ----------
    name : the room's package name, snake_case (``fs_kan``)
    title, reference, claim : what the paper is and what it claims (shown by ``models``)
    device_kinds : profile kinds the method runs on (``gpu``, ``cpu``, ``bitwise``,
        ``neuromorphic``); the runner refuses others before anything runs
    datasets : dataset names ``load_data`` accepts
    config : the method's ``Config`` dataclass; it has a ``seed`` field
    presets : ``{"quick": {dataset: {field: value}}, "full": {...}}``; every dataset has an
        entry in both presets (an empty dict: the dataclass defaults)
    default_profile, default_dataset : what ``neuroedge simulate NAME`` uses
    exports : export targets ``artifact`` builds (a subset of ``EXPORT_TARGETS``)
    export_dataset : the dataset an export trains on (default: ``default_dataset``)
    study_profiles : device kind -> profile name ``experiment`` uses when given none (any
        kind: a study may run baselines on another kind than the method's)
    metrics : metric name -> unit of every metric ``simulate`` reports (``"1"`` for a
        dimensionless fraction or ratio, ``"count"``, ``"B"``, ``"nats"``, ``"a.u. (squared
        prediction error)"``): reports print each metric with its unit, so a loss never
        reads like joules. A name may hold ``*`` for a family whose members the config
        decides (``"accuracy_L*"``: one per tested length); the runner refuses a metric
        no name matches (:func:`metric_unit`)
    main_metric : the metric the report's headline leads with (a name of ``metrics``
        without ``*``)
    main_metric_better : which way ``main_metric`` improves (:data:`BETTER`): ``"higher"``
        (an accuracy: the default), ``"lower"`` (an error) or ``"neither"`` (a measurement
        with no better side, such as a firing rate); a sweep's Pareto front and its wording
        follow it, and a ``"neither"`` metric gets no front
    engine : ``"torch"`` for a torch method that also runs on microcontroller (bitwise)
        profiles: the runner then asks ``sim.device(profile, engine="torch")``, which counts
        the module with torch and prices it with the MCU's memories; ``None``: the engine of
        the profile's kind
    preset_notes : preset name -> what a run at that preset cannot show (``{"quick": "smoke
        run: shows nothing of the claim; ..."}``); the report's headline and ``neuroedge
        models`` print it (:func:`preset_note`). A room's quick preset gets one when
        ``bench/quick_presets.py`` finds it does not show the claim's direction
    """

    name: str
    title: str
    reference: str
    claim: str
    device_kinds: tuple[str, ...]
    datasets: tuple[str, ...]
    config: type
    presets: Mapping[str, Mapping[str, Mapping[str, Any]]]
    default_profile: str
    default_dataset: str
    exports: tuple[str, ...] = ()
    export_dataset: str | None = None
    study_profiles: Mapping[str, str] = field(default_factory=dict)
    metrics: Mapping[str, str] = field(default_factory=dict)
    main_metric: str | None = None
    main_metric_better: str = "higher"
    engine: str | None = None
    preset_notes: Mapping[str, str] = field(default_factory=dict)

    @property
    def trains_on(self) -> str:
        """The dataset an export trains on."""
        return self.export_dataset or self.default_dataset

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self.config))


def metric_unit(card: Card, name: str) -> str | None:
    """The unit ``card`` declares for metric ``name``: its own entry, else the first
    ``*`` pattern (fnmatch) that matches it; ``None`` when the card does not declare it."""
    if name in card.metrics:
        return card.metrics[name]
    for pattern, unit in card.metrics.items():
        if "*" in pattern and fnmatch.fnmatchcase(name, pattern):
            return unit
    return None


def preset_note(card: Card | None, preset: str) -> str | None:
    """The note ``card`` gives runs at ``preset`` (:attr:`Card.preset_notes`); ``None`` when
    it has none, or for no card (a user's model)."""
    return None if card is None else card.preset_notes.get(preset)


def default_load_data(dataset: str, cfg) -> Any:
    """The shared loaders (``models/shared/datasets.py``): a method without data of its own."""
    from models.shared import datasets
    return datasets.load(dataset)


@dataclass(frozen=True)
class Method:
    """A registered card with its three contract functions (and its data loader)."""

    card: Card
    simulate: Simulate
    experiment: Experiment
    artifact: Artifact | None = None
    load_data: LoadData = default_load_data

    @property
    def name(self) -> str:
        return self.card.name


REGISTRY: dict[str, Method] = {}


def _check_card(card: Card, artifact) -> None:
    where = f"register({card.name!r})"
    if not _NAME_RE.match(card.name):
        raise ModelError(f"{where}: name must be snake_case (letters, digits, '_'), like the "
                         "room's package name")
    if not card.device_kinds or any(k not in KINDS for k in card.device_kinds):
        raise ModelError(f"{where}: device_kinds = {card.device_kinds}; expected a non-empty "
                         f"subset of {', '.join(KINDS)}")
    if not card.datasets:
        raise ModelError(f"{where}: datasets is empty; a card names the data it takes")
    if card.default_dataset not in card.datasets:
        raise ModelError(f"{where}: default_dataset {card.default_dataset!r} is not among its "
                         f"datasets ({', '.join(card.datasets)})")
    if card.export_dataset is not None and card.export_dataset not in card.datasets:
        raise ModelError(f"{where}: export_dataset {card.export_dataset!r} is not among its "
                         f"datasets ({', '.join(card.datasets)})")
    if not (isinstance(card.config, type) and dataclasses.is_dataclass(card.config)):
        raise ModelError(f"{where}: config = {card.config!r}; expected the method's Config "
                         "dataclass")
    fields = set(card.fields)
    if "seed" not in fields:
        raise ModelError(f"{where}: {card.config.__name__} has no 'seed' field; every config "
                         "carries its seed so a run file can be rerun exactly")
    if set(card.presets) != set(PRESETS):
        raise ModelError(f"{where}: presets are {sorted(card.presets)}; expected exactly "
                         f"{', '.join(PRESETS)}")
    for preset, per_dataset in card.presets.items():
        missing = [d for d in card.datasets if d not in per_dataset]
        extra = [d for d in per_dataset if d not in card.datasets]
        if missing or extra:
            raise ModelError(f"{where}: preset {preset!r} must have one entry per dataset; "
                             f"missing {missing or 'none'}, unknown {extra or 'none'}")
        for dataset, values in per_dataset.items():
            unknown = sorted(set(values) - fields)
            if unknown:
                raise ModelError(f"{where}: preset {preset!r}/{dataset!r} sets "
                                 f"{', '.join(unknown)}, not fields of {card.config.__name__} "
                                 f"({', '.join(card.fields)})")
            if "seed" in values:
                raise ModelError(f"{where}: preset {preset!r}/{dataset!r} sets the seed; the "
                                 "seed is given per run")
    bad = [t for t in card.exports if t not in EXPORT_TARGETS]
    if bad:
        raise ModelError(f"{where}: unknown export target(s) {', '.join(bad)}; targets are "
                         f"{', '.join(EXPORT_TARGETS)}")
    if card.exports and artifact is None:
        raise ModelError(f"{where}: exports {', '.join(card.exports)} but no artifact function")
    bad = [k for k, u in card.metrics.items() if not (isinstance(u, str) and u.strip())]
    if not card.metrics or bad:
        raise ModelError(f"{where}: metrics = {dict(card.metrics)!r}; every metric simulate "
                         "reports needs a unit (e.g. {'test_accuracy': '1', 'test_loss': "
                         "'nats'})")
    if card.main_metric not in card.metrics or "*" in card.main_metric:
        raise ModelError(f"{where}: main_metric = {card.main_metric!r} is not one of its "
                         f"metrics ({', '.join(k for k in card.metrics if '*' not in k)})")
    if card.main_metric_better not in BETTER:
        raise ModelError(f"{where}: main_metric_better = {card.main_metric_better!r}; expected "
                         f"one of {', '.join(BETTER)} (which way {card.main_metric} improves)")
    if card.engine not in (None, "torch"):
        raise ModelError(f"{where}: engine = {card.engine!r}; expected None (the engine of the "
                         "profile's kind) or 'torch'")
    bad = {p: n for p, n in card.preset_notes.items()
           if p not in PRESETS or not (isinstance(n, str) and n.strip())}
    if bad:
        raise ModelError(f"{where}: preset_notes = {bad!r}; each key is a preset "
                         f"({', '.join(PRESETS)}) and each note a non-empty sentence")
    # a study may run its baselines on other kinds (DiffPC's float PC and BP on a GPU)
    bad = [k for k in card.study_profiles if k not in KINDS]
    if bad:
        raise ModelError(f"{where}: study_profiles names unknown kind(s) {', '.join(bad)}; "
                         f"kinds are {', '.join(KINDS)}")


def register(card: Card, *, simulate: Simulate, experiment: Experiment,
             artifact: Artifact | None = None, load_data: LoadData | None = None) -> Method:
    """Check ``card`` and add it with its functions to ``REGISTRY``; returns the entry."""
    _check_card(card, artifact)
    if card.name in REGISTRY:
        raise ModelError(f"model {card.name!r} is already registered")
    method = Method(card, simulate, experiment, artifact, load_data or default_load_data)
    REGISTRY[card.name] = method
    return method


def get(name: str) -> Method:
    """The registered method ``name``, or an error listing the registered names."""
    try:
        return REGISTRY[name]
    except KeyError:
        own = str(name).endswith((".nir", ".py")) or ".py:" in str(name)
        hint = (f"; a model of your own goes through `neuroedge estimate {name}` (a NIR "
                "file, or FILE.py:factory with --input-shape)" if own else "")
        listing = suggestion(name, REGISTRY, "neuroedge models") or \
            f"registered models are {', '.join(sorted(REGISTRY)) or '(none)'}"
        raise ModelError(f"unknown model {name!r}: {listing}{hint}") from None
