"""The embedding-study figures the room README, bench/RESULTS.md and docs/claims.md state are
those of the results file the bench wrote (``bench/out/trainref_embedding.json``): rendered
by the bench's own ``render`` / ``render_claim`` and looked up in the text."""
import json
from pathlib import Path

from bench.trainref_embedding import RESULT_FILE, clean_seeds, render, render_claim

ROOT = Path(__file__).resolve().parents[3]


def test_tables_are_the_results_file():
    result = json.loads(RESULT_FILE.read_text())
    assert result["seeds_done"] >= 3
    table = render(result)
    assert table in (ROOT / "models" / "trainref" / "README.md").read_text()
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    assert render_claim(result) in (ROOT / "docs" / "claims.md").read_text()


def test_clean_seeds_counts_the_target_inclusively():
    # 0.90 counts (>=), 0.899 does not: 2 of 3
    assert clean_seeds({"dstar_precision": {"per_seed": [0.9, 0.95, 0.899]}}) == 2
