"""The method contract, for every card in ``models.REGISTRY`` (issue 12, item 9).

For each registered card: ``register`` refuses broken variants of it with a one-line
error; registering its name again fails (and an engine kind again, in ``sim.device``);
every preset's config survives ``asdict`` -> ``config_from_dict``; ``parse_overrides``
types each field's text; its quick preset runs through ``runner.run`` on a toy profile of
its default kind and returns finite metrics, typed traces and a non-empty ledger; each
declared export target's ``artifact`` has the type ``sim.artifacts`` names; the card is
data only; its functions take the parameters of the protocols ``Simulate``, ``Experiment``,
``Artifact`` and ``LoadData`` (``models/registry.py``), by name and in order; the figures
the documents state for a quick run are that run's own (``doc_figures.QUICK``). Cards whose
quick run takes more than ~10 s are in ``card_runs.SLOW``.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from dataclasses import dataclass

import doc_figures
import numpy as np
import pytest
from card_runs import SLOW, missing_data, param, toy_profile

import models
from hw_profiles.errors import NeuroedgeError
from models import runner
from models.registry import (
    Artifact,
    Card,
    Experiment,
    LoadData,
    Method,
    Outcome,
    Simulate,
    Study,
    register,
)
from sim.artifacts import ARTIFACT_TYPES
from sim.errors import ModelError
from sim.ledger import Ledger
from sim.traces import TRACE_KINDS, Trace

NAMES = sorted(models.REGISTRY)


def _card(name: str) -> Card:
    return models.REGISTRY[name].card


def _one_line_error(card: Card, match: str) -> str:
    """``register(card)`` must fail with a one-line ModelError matching ``match`` and leave
    the registry as it was."""
    method = models.REGISTRY[card.name]
    before = dict(models.REGISTRY)
    with pytest.raises(ModelError, match=match) as info:
        register(card, simulate=method.simulate, experiment=method.experiment,
                 artifact=method.artifact, load_data=method.load_data)
    assert "\n" not in str(info.value)
    assert models.REGISTRY == before
    return str(info.value)


# -- register() validation -----------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_register_refuses_a_default_dataset_not_listed(name):
    card = dataclasses.replace(_card(name), default_dataset="no-such-data")
    _one_line_error(card, "default_dataset 'no-such-data' is not among its datasets")


@pytest.mark.parametrize("name", NAMES)
def test_register_refuses_an_unknown_export_target(name):
    card = dataclasses.replace(_card(name), exports=(*_card(name).exports, "wasm"))
    _one_line_error(card, r"unknown export target\(s\) wasm; targets are c, nir, onnx")


@pytest.mark.parametrize("name", NAMES)
def test_register_refuses_an_unknown_engine_or_study_kind(name):
    _one_line_error(dataclasses.replace(_card(name), engine="jax"),
                    r"engine = 'jax'; expected None \(the engine of the profile's kind\) or "
                    r"'torch'")
    _one_line_error(dataclasses.replace(_card(name), study_profiles={"tpu": "v5e"}),
                    r"study_profiles names unknown kind\(s\) tpu; kinds are ")


@pytest.mark.parametrize("name", NAMES)
def test_register_refuses_a_preset_missing_a_dataset(name):
    card = _card(name)
    first = card.datasets[0]
    quick = {d: v for d, v in card.presets["quick"].items() if d != first}
    bad = dataclasses.replace(card, presets={**card.presets, "quick": quick})
    _one_line_error(bad, rf"preset 'quick' must have one entry per dataset; missing "
                         rf"\['{first}'\]")


@pytest.mark.parametrize("name", NAMES)
def test_register_refuses_a_preset_setting_an_unknown_field(name):
    card = _card(name)
    first = card.datasets[0]
    full = {**card.presets["full"], first: {**card.presets["full"][first], "no_such": 1}}
    bad = dataclasses.replace(card, presets={**card.presets, "full": full})
    _one_line_error(bad, f"preset 'full'/'{first}' sets no_such, not fields of "
                         f"{card.config.__name__}")


@pytest.mark.parametrize("name", NAMES)
def test_register_refuses_a_config_without_seed(name):
    card = _card(name)
    fields = [(f.name, f.type, f) for f in dataclasses.fields(card.config) if f.name != "seed"]
    no_seed = dataclasses.make_dataclass(card.config.__name__, fields)
    _one_line_error(dataclasses.replace(card, config=no_seed), "has no 'seed' field")


@pytest.mark.parametrize("name", NAMES)
def test_every_card_declares_units_and_a_main_metric(name):
    card = _card(name)
    assert card.main_metric in card.metrics and "*" not in card.main_metric
    assert all(isinstance(u, str) and u.strip() for u in card.metrics.values())


@pytest.mark.parametrize("name", NAMES)
def test_register_refuses_a_main_metric_not_declared(name):
    card = _card(name)
    _one_line_error(dataclasses.replace(card, main_metric="no_such"),
                    r"main_metric = 'no_such' is not one of its metrics \(")
    _one_line_error(dataclasses.replace(card, metrics={}), r"metrics = \{\}; every metric")
    _one_line_error(dataclasses.replace(card, metrics={**card.metrics, "x": ""}),
                    "every metric simulate reports needs a unit")


def test_metric_unit_reads_names_then_patterns():
    from models.registry import metric_unit
    card = dataclasses.replace(_card("mlp"), metrics={"accuracy_L*": "1", "accuracy_L0": "%",
                                                      "loss": "nats"})
    assert metric_unit(card, "loss") == "nats"
    assert metric_unit(card, "accuracy_L0") == "%"       # its own entry before the pattern
    assert metric_unit(card, "accuracy_L4096") == "1"
    assert metric_unit(card, "recall_L256") is None


def test_the_runner_refuses_a_metric_the_card_does_not_declare(toy_gpu_path):
    method = models.REGISTRY["mlp"]
    fake = dataclasses.replace(method, simulate=lambda cfg, dev, data, progress: Outcome(
        {"test_accuracy": 1.0, "energy": 3.0}), load_data=lambda dataset, cfg: None)
    plan = runner.prepare("mlp", profile=toy_gpu_path)
    with pytest.raises(ModelError) as info:
        runner.execute(dataclasses.replace(plan, method=fake))
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("mlp.simulate reported metric 'energy', which card 'mlp' does not "
                          "declare; add it to Card.metrics with its unit (declared: ")


@pytest.mark.parametrize("name", NAMES)
def test_registering_a_name_twice_raises(name):
    msg = _one_line_error(_card(name), "already registered")
    assert msg == f"model {name!r} is already registered"


def test_registering_an_engine_kind_twice_raises(toy_gpu_path):
    import sim
    from sim.device import ENGINES, register_engine
    sim.device(toy_gpu_path)                # imports (registers) every engine
    assert set(ENGINES) >= {"gpu", "cpu", "neuromorphic", "bitwise"}
    for kind, cls in dict(ENGINES).items():
        with pytest.raises(NeuroedgeError, match=f"kind '{kind}' already has engine "
                                                 f"{cls.__name__}; refusing"):
            register_engine(kind, cls)
        assert ENGINES[kind] is cls


# -- the functions' signatures are the protocols' -------------------------------------------
def _parameters(fn) -> list[tuple[str, str]]:
    """(name, kind) of each parameter, in order; a protocol's ``__call__`` without ``self``."""
    params = list(inspect.signature(fn).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return [(p.name, p.kind.name) for p in params]


def test_the_protocols_say_the_contract():
    """The documented signatures (models/registry.py's docstring, docs/architecture.md)."""
    assert [n for n, _ in _parameters(Simulate.__call__)] == ["cfg", "device", "data",
                                                              "progress"]
    assert [n for n, _ in _parameters(Experiment.__call__)] == ["preset", "seed", "profiles",
                                                                "progress"]
    assert [n for n, _ in _parameters(Artifact.__call__)] == ["trained", "target"]
    assert [n for n, _ in _parameters(LoadData.__call__)] == ["dataset", "cfg"]


@pytest.mark.parametrize("name", NAMES)
def test_functions_match_the_protocols(name):
    """Each of the card's functions takes exactly the protocol's parameters: the same names
    in the same order, of the same kind (positional or keyword)."""
    method = models.REGISTRY[name]
    pairs = [("simulate", method.simulate, Simulate),
             ("experiment", method.experiment, Experiment),
             ("load_data", method.load_data, LoadData)]
    if method.artifact is not None:
        pairs.append(("artifact", method.artifact, Artifact))
    for what, fn, protocol in pairs:
        want = _parameters(protocol.__call__)
        assert _parameters(fn) == want, (f"{name}.{what}{inspect.signature(fn)}: expected the "
                                         f"parameters of {protocol.__name__}, {want}")


# -- configs ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_config_round_trip(name):
    card = _card(name)
    for preset in ("quick", "full"):
        for dataset in card.datasets:
            cfg = runner.make_config(name, preset, dataset, seed=7)
            back = runner.config_from_dict(name, dataclasses.asdict(cfg))
            assert back == cfg and back.seed == 7, (preset, dataset)


@pytest.mark.parametrize("name", NAMES)
def test_overrides_parse_each_field_from_text(name):
    """Each simple field's default, written as text, parses back to itself."""
    card = _card(name)
    types_ = runner.field_types(card.config)
    cfg = card.config()
    for f in dataclasses.fields(card.config):
        value = getattr(cfg, f.name)
        if f.name == "seed" or not isinstance(value, (bool, int, float, str, tuple)):
            continue
        if isinstance(value, tuple) and not all(isinstance(v, (int, float, str))
                                                 for v in value):
            continue
        text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        if isinstance(value, tuple) and len(value) == 1:
            text += ","
        parsed = runner.parse_overrides(name, [f"{f.name}={text}"])[f.name]
        assert parsed == value, (f.name, text, parsed)
        # the type follows the annotation (an int default of a float field parses as float)
        assert type(parsed) is type(value) or types_[f.name] is float, (f.name, parsed)


@pytest.mark.parametrize("name", NAMES)
def test_unknown_override_lists_the_fields(name):
    card = _card(name)
    with pytest.raises(ModelError) as info:
        # 'qqq' is close to no field (a close one is suggested instead: tests/deploy/test_cli_help)
        runner.parse_overrides(name, ["qqq=1"])
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"--set qqq: {name} has no setting 'qqq'")
    listed = msg.split("fields are ", 1)[1].split(", ")
    assert listed == [f for f in card.fields if f != "seed"]


@dataclass
class _Typed:
    n: int = 1
    rate: float = 0.5
    flag: bool = False
    sizes: tuple[int, ...] = (4,)
    names: tuple[str, ...] = ("a",)
    label: str = "x"
    cap: int | None = None
    seed: int = 0


def _typed_method() -> Method:
    card = Card(name="typed", title="t", reference="r", claim="c", device_kinds=("gpu",),
                datasets=("digits",), config=_Typed,
                presets={"quick": {"digits": {}}, "full": {"digits": {}}},
                default_profile="a100", default_dataset="digits")
    return Method(card, simulate=lambda *a: None, experiment=lambda *a: None)


def test_parse_overrides_types_values():
    method = _typed_method()
    got = runner.parse_overrides(method, ["n=12", "rate=2e-3", "flag=yes", "sizes=(32, 16)",
                                          "names=b,c", "label=hello world", "cap=none"])
    assert got == {"n": 12, "rate": 0.002, "flag": True, "sizes": (32, 16),
                   "names": ("b", "c"), "label": "hello world", "cap": None}
    assert [type(got[k]) for k in ("n", "rate", "flag", "sizes")] == [int, float, bool, tuple]
    assert runner.parse_overrides(method, ["cap=3", "flag=off"]) == {"cap": 3, "flag": False}
    # a dict's non-text values are checked against the field's type as text is (2.5 for
    # an int field was accepted and failed inside the run as a TypeError), and converted:
    # an int for a float field, a list for a tuple field
    assert runner.parse_overrides(method, {"sizes": (1, 2)}) == {"sizes": (1, 2)}
    got = runner.parse_overrides(method, {"sizes": [1, 2], "rate": 1, "cap": None, "n": 3})
    assert got == {"sizes": (1, 2), "rate": 1.0, "cap": None, "n": 3}
    assert type(got["rate"]) is float and type(got["sizes"]) is tuple
    for value, match in (({"n": 2.5}, "2.5 is not an integer"),
                         ({"n": True}, "True is not an integer"),
                         ({"rate": float("nan")}, "nan is not a finite number"),
                         ({"flag": 1}, "1 is not a boolean"),
                         ({"sizes": 5}, "5 is not a list"),
                         ({"sizes": [1, 2.5]}, "2.5 is not an integer")):
        with pytest.raises(ModelError, match=match):
            runner.parse_overrides(method, value)
    for item, match in (("n=1.5", "'1.5' is not an integer"),
                        ("rate=fast", "'fast' is not a number"),
                        ("rate=inf", "'inf' is not a finite number"),
                        ("flag=maybe", "'maybe' is not a boolean"),
                        ("sizes=3,x", "'x' is not an integer"),
                        ("n", "expected KEY=VALUE"),
                        ("seed=3", "give the seed with --seed"),
                        ("depth=3", "typed has no setting 'depth'; fields are n, rate, flag, "
                                    "sizes, names, label, cap$")):
        with pytest.raises(ModelError, match=match):
            runner.parse_overrides(method, [item])


# -- quick runs ------------------------------------------------------------------------------
@functools.cache
def _quick_run(name: str):
    """One quick run per card per session (the run test and the artifact test share it)."""
    card = _card(name)
    reason = missing_data(card)
    if reason:
        pytest.skip(reason)
    assert card.default_profile and runner.load_profile(card.default_profile).kind in \
        card.device_kinds
    return runner.run(name, profile=toy_profile(card), preset="quick", seed=0)


@pytest.mark.parametrize("name", [param(n) for n in NAMES])
def test_quick_preset_runs(name):
    run = _quick_run(name)
    card = _card(name)
    assert run.model == name and run.preset == "quick" and run.dataset == card.default_dataset
    assert run.config == dataclasses.asdict(runner.make_config(name, "quick", run.dataset, 0))
    assert run.metrics and all(isinstance(v, float) for v in run.metrics.values())
    # every metric carries the card's unit (the runner refuses one it does not declare)
    assert set(run.units) == set(run.metrics) and run.main_metric == card.main_metric
    assert card.main_metric in run.metrics, f"{name}: its main metric is not reported"
    bad = {k: v for k, v in run.metrics.items() if not math.isfinite(v)}
    assert not bad, f"{name}: metrics not finite: {bad}"
    assert all(isinstance(t, Trace) and t.kind in TRACE_KINDS for t in run.traces.values())
    assert isinstance(run.ledger, Ledger) and not run.ledger.is_empty()
    assert run.ledger.scopes() and sum(sum(run.ledger.ops(s).values())
                                       for s in run.ledger.scopes()) > 0


# diffpc's figures are checked on its own default-run fixture (tests/models/diffpc/test_card.py),
# which the default test run runs anyway; the others reuse the quick run above
@pytest.mark.parametrize("name", [param(n) for n in sorted(doc_figures.QUICK) if n != "diffpc"])
def test_docs_state_the_quick_runs_figures(name):
    """Each figure the README, the room README, bench/RESULTS.md or docs/claims.md states for
    the card's quick run is that run's own output at the printed precision (issue 33)."""
    import torch
    run = _quick_run(name)
    if torch.cuda.is_available() and run.profile.kind in ("gpu", "cpu"):
        pytest.skip("the documents' figures were measured on CPU; CUDA kernels round differently")
    assert doc_figures.missing(name, run) == []


def _export_params():
    marks = {n: (pytest.mark.slow,) if n in SLOW else () for n in NAMES}
    return [pytest.param(n, t, marks=marks[n]) for n in NAMES for t in _card(n).exports]


@pytest.mark.parametrize("name,target", _export_params())
def test_artifact_type_per_export_target(name, target):
    run = _quick_run(name)
    assert run.trained is not None, f"{name} exports {target} but its run keeps no trained state"
    art = models.REGISTRY[name].artifact(run.trained, target)
    assert type(art) is ARTIFACT_TYPES[target]


# -- the card is data --------------------------------------------------------------------------
def _plain(value) -> bool:
    if isinstance(value, (str, int, float, bool, type(None))):
        return True
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict) or hasattr(value, "items"):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


@pytest.mark.parametrize("name", NAMES)
def test_card_is_data_only(name):
    card = _card(name)
    for f in dataclasses.fields(card):
        value = getattr(card, f.name)
        if f.name == "config":
            assert isinstance(value, type) and dataclasses.is_dataclass(value)
            continue
        assert not callable(value), f"{name}: Card.{f.name} is callable"
        assert _plain(value), f"{name}: Card.{f.name} = {value!r} is not plain data"
    method = models.REGISTRY[name]
    assert callable(method.simulate) and callable(method.experiment)
    assert (method.artifact is not None) == bool(card.exports)


def test_registry_has_the_template_and_outcomes_are_typed():
    assert "mlp" in models.REGISTRY
    with pytest.raises(NeuroedgeError, match="trace 'loss' is a ndarray"):
        Outcome({"a": 1.0}, {"loss": np.zeros(3)})
    assert Study({}, {}).runs == {}


@pytest.mark.parametrize("name", NAMES)
def test_out_of_range_settings_are_one_line_model_errors(name):
    """``--set FIELD=-1`` (and NaN for a float) on every numeric field is either a valid
    setting or a one-line ModelError from the Config: never another exception later, mid-run.
    Weight decays, warm-ups and noise scales of 0 are allowed; a negative one is refused."""
    card = _card(name)
    refused = 0
    for field, tp in runner.field_types(card.config).items():
        if field == "seed" or tp not in (int, float):
            continue
        for bad in ((-1, float("nan")) if tp is float else (-1,)):
            try:
                runner.make_config(name, "quick", card.default_dataset, 0, {field: bad})
            except ModelError as exc:
                assert "\n" not in str(exc) and field in str(exc), (field, str(exc))
                refused += 1
    assert refused >= 1      # every card has at least one bounded numeric setting


def test_a_negative_weight_decay_names_the_field():
    with pytest.raises(ModelError, match=r"^MLPConfig.weight_decay = -0.5: must be >= 0$"):
        runner.make_config("mlp", "quick", "digits", 0, {"weight_decay": -0.5})


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, True])
def test_prepare_refuses_a_seed_out_of_range(seed):
    # it was refused only when the run started (execute), after prepare said all was well
    with pytest.raises(ModelError, match="seeds are integers 0..4294967295"):
        runner.prepare("mlp", seed=seed)
