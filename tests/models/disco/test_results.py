"""The DISCO protocol figures the room README, bench/RESULTS.md and docs/claims.md state are
those of the results file the bench wrote (``bench/out/disco_protocol.json``): rendered by
the bench's own ``render`` / ``render_claim`` and looked up in the text."""
import json
from pathlib import Path

from bench.disco_protocol import RESULT_FILE, holds, render, render_claim

ROOT = Path(__file__).resolve().parents[3]


def test_tables_are_the_results_file():
    result = json.loads(RESULT_FILE.read_text())
    table = render(result)
    assert table in (ROOT / "models" / "disco" / "README.md").read_text()
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    assert render_claim(result) in (ROOT / "docs" / "claims.md").read_text()


def test_the_rule_needs_two_of_three_seeds_and_the_margin():
    def rec(d, s):
        return {"disco": {"mean": sum(d) / 3, "per_seed": d},
                "silhouette": {"mean": sum(s) / 3, "per_seed": s},
                "disco_above_silhouette_seeds": sum(a > b for a, b in zip(d, s, strict=True))}
    # 2 of 3 seeds higher and mean 0.7 vs 0.6 (+0.1 > 0.05): holds
    assert holds(rec([0.9, 0.9, 0.3], [0.6, 0.6, 0.6]))
    # 2 of 3 seeds higher but mean 0.633 vs 0.6 (+0.033 < 0.05): does not
    assert not holds(rec([0.65, 0.65, 0.6], [0.6, 0.6, 0.7]))
    # mean +0.267 but 1 of 3 seeds: does not
    assert not holds(rec([1.4, 0.5, 0.5], [0.6, 0.6, 0.6]))
