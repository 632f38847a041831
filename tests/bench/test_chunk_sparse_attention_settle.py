"""bench/chunk_sparse_attention.py --settle (issue 34): the comparison rule stated before the
run, and the figures of the README, bench/RESULTS.md and docs/claims.md rendered from the
stored RESULT (bench/out/chunk_sparse_attention_settle.json)."""
import json
from pathlib import Path

import pytest

from bench import chunk_sparse_attention as cs

ROOT = Path(__file__).resolve().parents[2]


def runs(name, accs, reached=(True, True, True)):
    return [{"variant": name, "seed": s, "steps": 400, "reached": r, "accuracy_1x": 0.96,
             "accuracy_16x": a} for s, (a, r) in enumerate(zip(accs, reached, strict=True))]


def test_verdict_follows_the_rule():
    hsa = runs("hsa", [0.90, 0.92, 0.94])
    # below on 3 of 3, mean gap (0.90 + 0.92 + 0.94 - 0.85 - 0.90 - 0.91) / 3 = 0.0333:
    # worse by the 0.02 of the rule stated before the run, not by the paper's 10 points
    v = cs.verdict(hsa, runs("x", [0.85, 0.90, 0.91]), 3, cs.RULE_MARGIN)
    assert v["verdict"] == "worse" and v["below_on"] == "3 of 3"
    assert v["mean_gap"] == pytest.approx(0.1 / 3)
    assert cs.verdict(hsa, runs("x", [0.85, 0.90, 0.91]), 3)["verdict"] == "not worse"
    # below on 3 of 3 by (0.15 + 0.12 + 0.14) / 3 = 0.1367 >= 0.10: worse by the paper's too
    assert cs.verdict(hsa, runs("x", [0.75, 0.80, 0.80]), 3)["verdict"] == "worse"
    # below on 2 of 3 but the mean gap is (0.01 + 0.01 - 0.01) / 3 = 0.0033: not worse
    assert cs.verdict(hsa, runs("x", [0.89, 0.91, 0.95]), 3,
                      cs.RULE_MARGIN)["verdict"] == "not worse"
    # a large gap from one seed only (below on 1 of 3, mean 0.1333): not worse
    assert cs.verdict(hsa, runs("x", [0.50, 0.93, 0.95]), 3)["verdict"] == "not worse"


def test_margin_is_the_papers_acceptance():
    """The digest's acceptance: "each ablation is >= 10 points worse than the full model at
    16x"; 0.02 was the rule stated before the run, now the secondary reading."""
    assert cs.MARGIN == 0.10 and cs.RULE_MARGIN == 0.02
    hsa = runs("hsa", [0.98, 0.98, 0.96])
    # below on 2 of 3, mean gap (0.98 + 0.98 + 0.96 - 1.00 - 0.97 - 0.77) / 3 = 0.06: the
    # stored dense run's shape, worse only by the 2-point margin
    dense = runs("dense", [1.00, 0.97, 0.77])
    assert cs.verdict(hsa, dense, 3)["verdict"] == "not worse"
    assert cs.verdict(hsa, dense, 3, cs.RULE_MARGIN)["verdict"] == "worse"
    table = cs.summarise(hsa + dense, 3)
    assert table["dense"]["verdict"] == "not worse"


def test_claim_counts_runs_that_restarted_and_names_them():
    """One run restarted twice is one run that restarted (not "2 of the runs"), and the text
    says which variant's runs did, apart from the method's seed count."""
    hsa = runs("hsa", [0.98, 0.98, 0.96])
    dense = runs("dense", [0.98, 0.98, 0.96])
    dense[2]["attempts"] = 3            # 2 restarts of one run
    result = {"seeds": [0, 1, 2], "runs": hsa + dense}
    result["table"] = cs.summarise(result["runs"], 3)
    text = cs.claim_text(result)
    assert ("3 of 3 seeds, 16x accuracy 0.97; 1 of the 6 runs restarted after missing 0.95 "
            "at the step cap: dense on 1 of 3 seeds;") in text
    assert "the method on" not in text     # none of the method's runs restarted
    # a variant that missed 0.95 on one seed did not train, however far below it is
    v = cs.verdict(hsa, runs("x", [0.3, 0.3, 0.3], (True, False, True)), 3)
    assert v == {"reached_of": "2 of 3", "verdict": "did not train"}
    # the method itself not trained: untested; seeds missing: untested
    bad = runs("hsa", [0.9, 0.9, 0.9], (True, True, False))
    assert cs.verdict(bad, runs("x", [0.3] * 3), 3)["verdict"].startswith("untested (the method")
    assert cs.verdict(hsa, runs("x", [0.3] * 3)[:2], 3)["verdict"] == "untested (runs missing)"


def test_attempts_are_shown_beside_each_run():
    """A restarted run (the restart rule) shows how many attempts it took; a record from
    before the rule (no "attempts") counts as one."""
    hsa = runs("hsa", [0.90, 0.92, 0.94])
    hsa[2]["attempts"] = 3
    table = cs.summarise(hsa + runs("meanpool", [0.85, 0.90, 0.91]), 3)
    assert table["hsa"]["attempts"] == [1, 1, 3] and table["meanpool"]["attempts"] == [1, 1, 1]
    line = cs.render({"table": table}).splitlines()[2]
    assert line.startswith("| hsa | 3 of 3 | 1/1/3 | 400/400/400 |")


@pytest.mark.skipif(not cs.SETTLE_FILE.exists(), reason="no stored settle RESULT")
def test_figures_are_the_stored_run():
    result = json.loads(cs.SETTLE_FILE.read_text())
    table = cs.render(result)
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    assert table in (ROOT / "models" / "chunk_sparse_attention" / "README.md").read_text()
    assert cs.claim_text(result) in (ROOT / "docs" / "claims.md").read_text()
    # the stored table is the summary of the stored runs, verdicts by the margin the run was
    # written under (the rule stated before it, 0.02); the documents judge by the paper's
    assert result["target"] == 0.95 and result["margin"] == cs.RULE_MARGIN
    assert result["table"] == cs.summarise(result["runs"], len(result["seeds"]),
                                           result["margin"])
    # mean gaps at 16x: meanpool +0.012, no_cls +0.026, standard_residual -0.012, dense
    # +0.062, all below the paper's 0.10; full attention +0.632
    assert {n: r.get("verdict") for n, r in cs.judged(result).items()} == {
        "hsa": None, "meanpool": "not worse", "no_cls": "not worse",
        "standard_residual": "not worse", "dense": "not worse", "full": "worse"}
    assert table.endswith("stated before the run: 2 of 4 ablations worse (no_cls, dense).")


def test_readme_quotes_the_stuck_run():
    """The README's reading quotes the method's stuck first seed-2 run of the cap-2000 file."""
    stored = ROOT / "bench" / "out" / "chunk_sparse_attention_settle_cap2000.json"
    run = next(r for r in json.loads(stored.read_text())["runs"]
               if r["variant"] == "hsa" and r["seed"] == 2)
    assert not run["reached"]
    readme = " ".join((ROOT / "models" / "chunk_sparse_attention" / "README.md").read_text()
                      .split())
    assert (f"stuck at {run['val_accuracy']:.2f} validation accuracy, top-K recall "
            f"{run['recall_1x']:.2f}") in readme
