"""bench/ppl.py --write: the paired learned - frozen power study on constructed runs, and
the figures rendered from its stored RESULT (bench/out/ppl_power.json)."""
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from bench import ppl
from models.shared import power

ROOT = Path(__file__).resolve().parents[2]
RESULT_FILE = ROOT / "bench" / "out" / "ppl_power.json"


def fake_runs(learned: dict, frozen: dict) -> dict:
    runs = {f"learned/seed{s}": SimpleNamespace(metrics={"keypoint_error": v})
            for s, v in learned.items()}
    runs.update({f"frozen_random/seed{s}": SimpleNamespace(metrics={"keypoint_error": v})
                 for s, v in frozen.items()})
    return runs


def test_power_study_pairs_the_seeds_and_scales_the_paper_effect():
    # seed 3 ran the learned arm only: it is left out of the pairs
    runs = fake_runs({0: 8.0, 1: 9.0, 2: 7.5, 3: 1.0}, {2: 8.5, 0: 8.5, 1: 9.0})
    st = ppl.power_study(runs)
    assert st["seeds"] == [0, 1, 2] and st["learned"] == [8.0, 9.0, 7.5]
    assert st["paired"]["diffs"] == [-0.5, 0.0, -1.0]
    # paper Tab. 2: 1 - 2.56 / 2.70 = 0.05185; frozen mean here (8.5 + 9 + 8.5) / 3 = 8.667
    assert ppl.PAPER_REL == pytest.approx(0.05185, abs=1e-5)
    assert st["paired"]["effect"] == pytest.approx(-0.05185 * 26 / 3, abs=1e-4)   # -0.449
    # diffs mean -0.5, sd 0.5: d = 0.449 / 0.5 = 0.90
    assert st["paired"]["d"] == pytest.approx(0.8987, abs=1e-3)
    assert st["paired"]["seeds_needed"] == power.seeds_needed(0.449, 0.5)


@pytest.mark.skipif(not RESULT_FILE.exists(), reason="no stored ppl_power RESULT")
def test_figures_are_the_stored_run():
    """RESULTS.md and the room README show the table rendered from the stored RESULT,
    docs/claims.md its sentence, and the stored analysis is what power.analyse gives on the
    stored per-seed errors (no figure edited by hand)."""
    result = json.loads(RESULT_FILE.read_text())
    table = ppl.render(result)
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    assert table in (ROOT / "models" / "ppl" / "README.md").read_text()
    assert ppl.claim_text(result) in (ROOT / "docs" / "claims.md").read_text()
    effect = -ppl.PAPER_REL * np.mean(result["frozen_random"])
    again = power.analyse(result["learned"], result["frozen_random"], effect)
    for k, v in again.items():
        assert result["paired"][k] == pytest.approx(v), k
    assert len(result["seeds"]) == result["paired"]["n"] >= 2
