"""bench/conformal_hashing.py --checks: the coverage table and set-size lines rendered from
its stored RESULT (bench/out/conformal_hashing_checks.json)."""
import json
from pathlib import Path

import pytest

from bench import conformal_hashing as ch
from models.conformal_hashing.experiment import summarize

ROOT = Path(__file__).resolve().parents[2]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_render_checks_formats_one_row_per_variant():
    s = {"mean": 0.5, "std": 0.01}
    cov = {"target_coverage": s, "alpha_final": {"mean": 0.1}, "tv_hat": s,
           "coverage_gap": s, "coverage_bound_margin": {"mean": 0.123}, "map": s,
           "bound_met": 2, "runs": 3}
    table = ch.render_checks({"checks": {"digits/32": {"coverage": {"full": cov}}}})
    # 1 - alpha = 0.9; the margin with its sign, two decimals
    assert table.splitlines()[2] == ("| digits | full | 0.500 +- 0.010 | 0.900 | 0.500 +- "
                                     "0.010 | 0.500 +- 0.010 | 2/3 (margin +0.12) | 0.500 +- "
                                     "0.010 |")


@pytest.mark.skipif(not ch.CHECKS_FILE.exists(), reason="no stored conformal_hashing checks")
def test_figures_are_the_stored_run():
    """RESULTS.md and the room README show the table the stored RESULT renders, the README
    its set-size lines, and the stored summary is the one its rows give."""
    result = json.loads(ch.CHECKS_FILE.read_text())
    table = ch.render_checks(result)
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    readme = (ROOT / "models" / "conformal_hashing" / "README.md").read_text()
    assert table in readme
    for line in ch.set_size_lines(result):
        assert _flat(line) in _flat(readme), line
    fresh = json.loads(json.dumps(summarize(result["rows"])))   # floats as stored
    for key, e in result["checks"].items():
        assert e["coverage"] == fresh[key]["coverage"], key
    assert result["plan"]["variants"] == ["full", "none", "source_only"]
    assert result["plan"]["seeds"] == 3
