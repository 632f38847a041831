"""bench/quick_presets.py (issue 34 item 9): the k-of-n rule, and every card's quick note
pinned to the stored RESULT (bench/out/quick_presets.json): a room has a quick note iff its
quick preset did not show its claim's direction there; the table in bench/RESULTS.md is the
one rendered from that RESULT."""
import json
import math
from pathlib import Path

import pytest

import models
from bench import quick_presets as qp
from models.registry import preset_note

ROOT = Path(__file__).resolve().parents[2]
RESULT = json.loads((ROOT / "bench" / "out" / "quick_presets.json").read_text())
SMOKE = "smoke run: shows nothing of the claim"


def _seeds(*pairs):
    return {s: {"claim_side": a, "other_side": b, "wall_s": [1.0]}
            for s, (a, b) in enumerate(pairs)}


def test_the_rule_needs_ceil_two_thirds_of_the_seeds_strictly_ahead():
    # 3 seeds: ceil(2 * 3 / 3) = 2; diffs +0.1, 0.0 (a tie is not ahead), -0.1 -> 1 of 3
    v = qp.judge(_seeds((0.6, 0.5), (0.5, 0.5), (0.4, 0.5)))
    assert (v["seeds_showing"], v["needed"], v["shows_direction"]) == (1, 2, False)
    v = qp.judge(_seeds((0.6, 0.5), (0.51, 0.5), (0.4, 0.5)))      # 2 of 3
    assert (v["seeds_showing"], v["shows_direction"]) == (2, True)
    # 5 seeds: ceil(10 / 3) = 4, so 3 of 5 ahead is not enough
    v = qp.judge(_seeds((1, 0), (1, 0), (1, 0), (0, 1), (0, 1)))
    assert (v["seeds_showing"], v["needed"], v["shows_direction"]) == (3, 4, False)


@pytest.mark.parametrize("room", sorted(RESULT["rooms"]))
def test_stored_verdict_follows_from_its_seeds(room):
    r = RESULT["rooms"][room]
    diffs = [v["claim_side"] - v["other_side"] for v in r["per_seed"].values()]
    assert diffs == pytest.approx(r["diffs"])
    assert r["n"] == len(diffs) >= 3
    k = sum(d > 0 for d in diffs)
    assert r["seeds_showing"] == k and r["needed"] == math.ceil(2 * r["n"] / 3)
    assert r["shows_direction"] == (k >= r["needed"])


@pytest.mark.parametrize("name", sorted(models.REGISTRY))
def test_a_room_has_a_quick_note_iff_its_quick_preset_failed_the_rule(name):
    note = preset_note(models.REGISTRY[name].card, "quick")
    measured = RESULT["rooms"].get(name)
    if measured is None:
        assert note is None, f"{name}: a quick note with no measurement in quick_presets.json"
        return
    if measured["shows_direction"]:
        assert note is None, f"{name}: its quick preset shows the direction; no note"
    else:
        assert note is not None and note.startswith(SMOKE), name
        # the note points to what does show it, or says that nothing here does
        assert "shows it" in note or "no preset here reproduces it" in note, note


def test_results_md_holds_the_rendered_table():
    assert qp.render(RESULT) in (ROOT / "bench" / "RESULTS.md").read_text()


def test_every_room_of_the_bench_was_measured():
    assert set(RESULT["rooms"]) == set(qp.ROOMS)
