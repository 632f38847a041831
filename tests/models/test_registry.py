"""Card.preset_notes (issue 34 item 9): what a preset cannot show, checked by ``register``,
read by ``preset_note``, printed in the report's headline and by ``neuroedge models``."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

import hw_profiles
import models
from deploy import headline as hl
from deploy.cli import main
from models.registry import preset_note, register
from sim.errors import ModelError
from sim.ledger import Ledger
from sim.pricing import price

NOTE = "smoke run: shows nothing of the claim; `neuroedge simulate mlp --preset full` shows it"


@pytest.fixture
def noted(monkeypatch):
    """The mlp card with a quick note, in the registry for this test only."""
    method = models.REGISTRY["mlp"]
    card = dataclasses.replace(method.card, preset_notes={"quick": NOTE})
    monkeypatch.setitem(models.REGISTRY, "mlp", dataclasses.replace(method, card=card))
    return card


def test_preset_note_reads_the_cards_note(noted):
    assert preset_note(noted, "quick") == NOTE
    assert preset_note(noted, "full") is None                   # no note for that preset
    assert preset_note(None, "quick") is None                   # a user's model: no card
    assert models.REGISTRY["mlp"].card.preset_notes["quick"] == NOTE


@pytest.mark.parametrize(("notes", "why"), [({"fast": "x"}, "fast"), ({"quick": " "}, "quick"),
                                             ({"quick": 3}, "quick")])
def test_register_refuses_a_note_on_no_preset_or_an_empty_one(notes, why):
    method = models.REGISTRY["mlp"]
    card = dataclasses.replace(method.card, preset_notes=notes)
    before = dict(models.REGISTRY)
    with pytest.raises(ModelError, match=rf"preset_notes = .*{why}.*each key is a preset "
                                         r"\(quick, full\)") as info:
        register(card, simulate=method.simulate, experiment=method.experiment,
                 artifact=method.artifact)
    assert "\n" not in str(info.value)
    assert models.REGISTRY == before


def _report(toy_gpu_text):
    led = Ledger()
    led.add("mac_fp32", 1000, scope="infer")
    led.add_samples(10, scope="infer")
    return price(led, hw_profiles.loads(toy_gpu_text))


def test_headline_shows_the_note_of_the_runs_preset(noted, toy_gpu_text):
    report = _report(toy_gpu_text)
    quick = SimpleNamespace(metrics={"test_accuracy": 0.5}, model="mlp", main_metric=None,
                            preset="quick")
    rows = hl.headline(quick, [report])
    # the main metric first, the note right under it, then the energy figures
    assert rows[0] == ("test_accuracy", "0.5")
    assert rows[1] == ("quick preset", NOTE)
    assert rows[2][0] == "total energy"
    full = SimpleNamespace(**{**vars(quick), "preset": "full"})
    assert "full preset" not in dict(hl.headline(full, [report]))   # full has no note
    assert len(hl.headline(full, [report])) == len(rows) - 1


def test_headline_has_no_note_row_for_a_card_without_notes(toy_gpu_text):
    run = SimpleNamespace(metrics={"test_accuracy": 0.5}, model="mlp", main_metric=None,
                          preset="quick")
    assert models.REGISTRY["mlp"].card.preset_notes == {}
    assert not [label for label, _ in hl.headline(run, [_report(toy_gpu_text)])
                if label.endswith(" preset")]


def test_models_listing_prints_the_notes(noted, capsys):
    assert main(["models", "--width", "200"]) == 0
    out = capsys.readouterr().out
    assert f"  quick preset: {NOTE}\n" in out
    assert out.count("quick preset:") == sum(
        "quick" in m.card.preset_notes for m in models.REGISTRY.values())


@pytest.mark.parametrize("error", [
    MemoryError("Unable to allocate 14.7 TiB for an array with shape (2020000001024,)"),
    RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't "
                 "allocate memory: you tried to allocate 2560000000000 bytes."),
])
def test_settings_that_need_more_memory_than_the_machine_are_one_line(error):
    """`simulate mlp --set hidden=10000000000` (and snn_cuba n=1e7, diffpc hidden=1e9, ...)
    ended in an allocation traceback; any run that the machine cannot allocate is now one
    ModelError naming the method and the settings asked. Other RuntimeErrors pass through."""
    from models import runner
    from sim.errors import ModelError
    plan = runner.prepare("mlp", profile="a100", overrides={"hidden": (10**10,)})

    def too_big(*args, **kwargs):
        raise error

    def failing(fn):
        return dataclasses.replace(plan, method=dataclasses.replace(plan.method, load_data=fn))

    with pytest.raises(ModelError) as err:
        runner.execute(failing(too_big))
    msg = str(err.value)
    assert msg.startswith("mlp with settings hidden=(10000000000,) needs more memory than "
                          "this machine gives") and "use smaller sizes (--set)" in msg

    def other(*args, **kwargs):
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        runner.execute(failing(other))


def test_cards_declare_which_way_their_main_metric_improves():
    """Card.main_metric_better: a sweep's Pareto front took every main metric as higher-is-
    better, ppl's keypoint_error (an error) included. Higher by default; lower for an
    error; neither for a measurement (a firing rate, an intrinsic dimension)."""
    better = {n: m.card.main_metric_better for n, m in models.REGISTRY.items()}
    assert better["ppl"] == "lower"
    assert better["snn_cuba"] == better["geo_inr_id"] == "neither"
    assert better["mlp"] == better["tsetlin"] == "higher"
    assert {n for n, b in better.items() if b != "higher"} == {"ppl", "snn_cuba", "geo_inr_id"}


def test_register_refuses_an_unknown_direction():
    method = models.REGISTRY["mlp"]
    card = dataclasses.replace(method.card, main_metric_better="up")
    before = dict(models.REGISTRY)
    with pytest.raises(ModelError, match=r"main_metric_better = 'up'; expected one of "
                                         r"higher, lower, neither \(which way test_accuracy "
                                         "improves\\)"):
        register(card, simulate=method.simulate, experiment=method.experiment,
                 artifact=method.artifact)
    assert models.REGISTRY == before
