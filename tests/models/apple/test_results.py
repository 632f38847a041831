"""The APPLE figures the room README, bench/RESULTS.md and docs/claims.md state for the
gradient-routing bench are those of the results file the bench wrote
(``bench/out/apple_routing*.json``): rendered by :func:`rows` and looked up in the text."""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted((ROOT / "bench" / "out").glob("apple_routing*.json"))
NAMES = {"random": "random glimpses (RND)", "apple_paper": "paper: (1, 1)",
         "apple_tenth": "a tenth: (0.1, 0.1)", "apple": "card default: (0, 0)"}


def rows(result: dict) -> list[str]:
    """The README table's rows of one results file, formatted as the README shows them."""
    s = result["digits"]
    out = []
    for name, label in NAMES.items():
        if name not in s["final"]:
            continue
        f = s["final"][name]
        cells = [label, f"{f['mean']:.3f} +- {f['std']:.3f}"]
        if name == "random":
            cells += ["-", "-", "-", "-"]
        else:
            r, g = s["ready"][name], s["grad_norms"][name]
            cells += [f"{s['predictor_on_random'][name]['mean']:.3f}",
                      f"{r['seeds_at_level']}/{r['n']}",
                      f"{g['critic']:.3g} / {g['sac']:.3g} / {g['predictor']:.3g}",
                      s["verdict"][name].split(":")[0]]
        out.append("| " + " | ".join(cells) + " |")
    return out


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_readme_table_is_the_results_file(path):
    result = json.loads(path.read_text())
    readme = (ROOT / "models" / "apple" / "README.md").read_text()
    for row in rows(result):
        assert row in readme, f"{path.name}: README lacks the row {row!r}"


def test_the_results_files_are_there():
    assert any(p.name == "apple_routing_80it.json" for p in FILES)
