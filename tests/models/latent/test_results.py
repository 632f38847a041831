"""The settling figures the room README, bench/RESULTS.md and docs/claims.md state are those
of the results files ``bench/latent_settle.py`` wrote (``bench/out/latent_settle_*.json``):
rendered by ``experiment.settle_rows`` and looked up in the text, so they cannot drift."""
import json
from pathlib import Path

import pytest

from models.latent.experiment import settle_rows

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted((ROOT / "bench" / "out").glob("latent_settle_*.json"))


def test_the_results_files_are_there():
    assert {p.name for p in FILES} >= {"latent_settle_masked-pendulum.json",
                                       "latent_settle_four-rooms.json"}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_readme_and_results_show_the_results_file(path):
    res = json.loads(path.read_text())
    rows = settle_rows(res["env"], res)
    for doc in ("models/latent/README.md", "bench/RESULTS.md"):
        text = (ROOT / doc).read_text()
        for row in rows:
            assert row in text, f"{doc} lacks {path.name}'s row {row!r}"
    # the claims table quotes each verdict of LatEnt against observation entropy
    claims = (ROOT / "docs" / "claims.md").read_text()
    t = res["tests"]["latent_gt_observation"]
    assert f"{res['env']}: {t['mean_diff']:+.2f} nats, {t['wins']}/{t['n']} seeds, " \
           f"{t['verdict']}" in claims


def test_readme_shows_the_warm_up_results_file():
    from models.latent.experiment import warmup_rows
    res = json.loads((ROOT / "bench" / "out" / "latent_warmup.json").read_text())
    readme = (ROOT / "models" / "latent" / "README.md").read_text()
    for row in warmup_rows(res):
        assert row in readme, f"README lacks the warm-up row {row!r}"
