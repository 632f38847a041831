"""bench/fs_kan_width.py: the two DSS baselines (equal parameters, equal width), the same
training and data as the card's runs, the seed rule, and the figures rendered from the
stored RESULT (bench/out/fs_kan_width.json)."""
import json
from pathlib import Path

import pytest

from bench import fs_kan_width as fw
from models import runner

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_baselines_are_equal_parameters_and_equal_width():
    from models.fs_kan.model import FSNet, n_parameters
    cfgs = fw.configs(fw.action_of(6, 12), fw.FSKAN)
    count = {k: n_parameters(FSNet(fw.action_of(6, 12), 1, 3, c)) for k, c in cfgs.items()}
    assert cfgs["width"].widths == cfgs["fskan"].widths == (8, 8)
    assert cfgs["width"].phi == cfgs["params"].phi == "linear"
    assert cfgs["params"].widths == (26, 26) and cfgs["params"].inv_width == 26
    # DSS at width 8 on S_6 x C_12 (24 pair orbits, 1 point orbit): layer 1 24*8*1 + 8 bias,
    # layer 2 24*8*8 + 8, invariant 1*8*8 + 8, three BatchNorms 3*16, head 8*3 + 3:
    # 200 + 1544 + 72 + 48 + 27 = 1891
    assert count["width"] == 1891
    assert abs(count["params"] - count["fskan"]) / count["fskan"] < 0.01   # 17,839 vs 17,995


def test_the_bench_trains_and_tests_what_the_card_does():
    """FS-KAN and the equal-parameter DSS of the bench give the card's accuracies on the
    same seed and sizes (same training draw, test set, configs, seeds)."""
    task = fw.run_task(6, 12, (20,), (4,), 3, 40, progress=lambda s: None)
    run = runner.run("fs_kan", profile="a100", dataset="signal-sets", seed=4,
                     overrides={"n_train": 20, "steps": 3, "n_test": 40, "count": False})
    row = task["rows"][0]
    assert row["fskan"]["accuracy"] == run.metrics["test_accuracy"]
    assert row["params"]["accuracy"] == run.metrics["baseline_test_accuracy"]
    assert row["params"]["parameters"] == run.metrics["baseline_parameters"]
    assert task["complete"] and list(task["by_size"]) == ["20"]


def test_seed_rule():
    # ahead on 2 of 3 by a mean 2 points: FS-KAN; ahead on 3 of 3 by 0.5 point: a tie
    assert fw.verdict([.60, .62, .55], [.57, .59, .56])["winner"] == "fskan"
    assert fw.verdict([.601, .602, .603], [.596, .597, .598])["winner"] == "tie"
    v = fw.verdict([.50, .50, .60], [.55, .56, .50])   # DSS ahead on 2 of 3 by 0.33 point
    assert v["winner"] == "tie" and v["baseline_ahead"] == 2 and v["needed"] == 2
    assert fw.verdict([.5] * 3, [.6] * 3)["winner"] == "baseline"


def test_a_size_with_missing_seeds_is_left_out_and_said_so():
    def row(n, seed, acc):
        return {"n_train": n, "seed": seed,
                **{k: {"accuracy": acc, "parameters": 1} for k in ("fskan", *fw.BASELINES)}}
    rows = [row(30, s, .5) for s in (0, 1, 2)] + [row(120, 0, .6)]
    by_size = fw.summarize(rows, 3)
    assert list(by_size) == ["30"]
    task = {"copies": 6, "length": 12, "orbits": 24, "noise": 1.0, "steps": 5, "n_test": 9,
            "sizes_planned": [30, 120, 480], "seeds_planned": [0, 1, 2], "rows": rows,
            "by_size": by_size, "parameters": {k: 1 for k in ("fskan", *fw.BASELINES)},
            "widths": {k: [8, 8, 8] for k in ("fskan", *fw.BASELINES)}}
    text = fw.render({"tasks": {"6x12": task}})
    assert "Not measured: n_train 120, 480" in text and "1 of 3 seeds" in text
    assert "6x12 at equal width, n_train 30: tie" in fw.claim_text({"tasks": {"6x12": task}})


@pytest.mark.skipif(not fw.RESULT_FILE.exists(), reason="no stored fs_kan_width RESULT")
def test_figures_are_the_stored_run():
    result = json.loads(fw.RESULT_FILE.read_text())
    table = fw.render(result)
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    assert table in (ROOT / "models" / "fs_kan" / "README.md").read_text()
    assert fw.claim_text(result) in (ROOT / "docs" / "claims.md").read_text()
    for task in result["tasks"].values():
        assert len(task["seeds_planned"]) >= 3
        assert task["by_size"] == fw.summarize(task["rows"], len(task["seeds_planned"]))
        for row in task["rows"]:   # equal width: far fewer parameters than FS-KAN
            assert row["width"]["parameters"] < row["fskan"]["parameters"] / 5
