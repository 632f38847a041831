"""bench/dave.py --write: the paired merge - average and merge - single power study on
constructed per-seed metrics, and the figures rendered from its stored RESULT
(bench/out/dave_power.json)."""
import json
from pathlib import Path

import numpy as np
import pytest

from bench import dave
from models.shared import power

ROOT = Path(__file__).resolve().parents[2]
RESULT_FILE = ROOT / "bench" / "out" / "dave_power.json"


def test_power_study_pairs_each_contrast_and_scales_the_paper_effect():
    per_seed = [{"merged_box_f1": m, "average_box_f1": a, "mean_single_box_f1": s}
                for m, a, s in ((0.64, 0.62, 0.60), (0.60, 0.61, 0.55), (0.70, 0.66, 0.64))]
    st = dave.power_study(per_seed, [0, 1, 2])
    ma, ms = st["contrasts"]["merge_minus_average"], st["contrasts"]["merge_minus_single"]
    assert ma["diffs"] == pytest.approx([0.02, -0.01, 0.04])
    assert ms["diffs"] == pytest.approx([0.04, 0.05, 0.06])
    # paper, Doc: 63.4 / 62.8 - 1 = 0.955 %, 63.4 / 55.6 - 1 = 14.03 %, times this scale's
    # arm means 0.63 (average) and 0.5967 (single)
    assert ma["effect"] == pytest.approx(0.009554 * 0.63, abs=1e-6)            # 0.00602
    assert ms["effect"] == pytest.approx(0.14029 * 1.79 / 3, abs=1e-5)         # 0.0837
    # merge - single: diffs sd 0.01, d = 0.0837 / 0.01 = 8.4: 3 seeds (2 give power 0.65)
    assert ms["sd"] == pytest.approx(0.01) and ms["seeds_needed"] == 3
    assert ms["p_t"] < 0.05 < ma["p_t"]


@pytest.mark.skipif(not RESULT_FILE.exists(), reason="no stored dave_power RESULT")
def test_figures_are_the_stored_run():
    """RESULTS.md and the room README show the table rendered from the stored RESULT,
    docs/claims.md its sentence, and the stored analysis is what power.analyse gives on the
    stored per-seed box F1 (no figure edited by hand)."""
    result = json.loads(RESULT_FILE.read_text())
    table = dave.render(result)
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    assert table in (ROOT / "models" / "dave" / "README.md").read_text()
    assert dave.claim_text(result) in (ROOT / "docs" / "claims.md").read_text()
    f1 = result["box_f1"]
    for name, base, rel in dave.CONTRASTS:
        again = power.analyse(f1["merged"], f1[base], rel * np.mean(f1[base]))
        for k, v in again.items():
            assert result["contrasts"][name][k] == pytest.approx(v, nan_ok=True), (name, k)
    assert len(result["seeds"]) == len(f1["merged"]) >= 2


def test_pilot_from_the_older_summary():
    """The older 5-seed study's power line, from its stored mean and ddof-0 std: in the
    README and RESULTS.md as rendered; merge - average's sd 0.0273 sqrt(5/4) = 0.0305 against
    0.96 % of 0.626 = 0.0060 (d = 0.20) needs ~200 seeds."""
    summary = json.loads((ROOT / "bench" / "out" / "dave.json").read_text())
    text = dave.pilot_text(summary)
    assert "merge minus average +0.0092 +- 0.0305" in text and "207 seeds" in text
    assert text in (ROOT / "bench" / "RESULTS.md").read_text()
    assert text in (ROOT / "models" / "dave" / "README.md").read_text()
