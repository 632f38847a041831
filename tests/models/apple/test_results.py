"""The APPLE figures the room README, bench/RESULTS.md and docs/claims.md state for the
gradient-routing bench are those of the results file the bench wrote
(``bench/out/apple_routing*.json``): rendered by :func:`rows` (tables) and
``bench/apple.py``'s ``claim_text`` (the claims row, from the longest run) and looked up in
the text."""
import json
from pathlib import Path

import pytest

from bench.apple import claim_text

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


@pytest.mark.parametrize("doc", ["models/apple/README.md", "bench/RESULTS.md"])
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_tables_are_the_results_file(path, doc):
    result = json.loads(path.read_text())
    text = (ROOT / doc).read_text()
    for row in rows(result):
        assert row in text, f"{path.name}: {doc} lacks the row {row!r}"


def test_claims_row_is_the_longest_run():
    longest = max(FILES, key=lambda p: json.loads(p.read_text())["iterations"])
    claim = claim_text(json.loads(longest.read_text()))
    assert claim in (ROOT / "docs" / "claims.md").read_text(), claim


def test_claim_text_reads_the_verdict():
    """A ready predictor gets the policy comparison; an unready one "void" whatever the
    policy scored. 5 seeds, predictor 4 of 5 within 0.05 of random (needs ceil(10/3) = 4)."""
    ready = {"seeds_at_level": 4, "n": 5, "needed": 4, "ready": True}
    s = {"env_steps": 57600.0, "ready": {"apple": ready},
         "final": {"random": {"mean": 0.5}, "apple": {"mean": 0.6}},
         "predictor_on_random": {"apple": {"mean": 0.49}},
         "paired": {"apple_vs_random": {"wins": 5, "n": 5, "wilcoxon_p_greater": 1 / 32}},
         "verdict": {"apple": "beats random"}}
    text = claim_text({"iterations": 300, "digits": s})
    assert text == ("card default routing, 300 rollouts x 5 seeds (57.6k env steps): predictor "
                    "on random glimpses 0.490 vs random's 0.500, at the random level on 4/5 "
                    "seeds (needs 4); policy 0.600 vs random 0.500, ahead on 5/5 seeds "
                    "(one-sided Wilcoxon p 0.031): beats random")
    s["ready"]["apple"] = {**ready, "seeds_at_level": 3, "ready": False}
    assert claim_text({"iterations": 300, "digits": s}).endswith("on 3/5 seeds (needs 4): void")


def test_the_results_files_are_there():
    names = {p.name for p in FILES}
    assert {"apple_routing_80it.json", "apple_routing_300it.json"} <= names
