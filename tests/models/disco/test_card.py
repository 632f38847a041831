"""The DISCO card: registration, presets, and the pointwise scores in the run file and report."""
import numpy as np
import pytest
from conftest import TOY_GPU

import models
from models import runner
from models.disco.card import DiscoConfig
from sim.errors import ModelError


def test_registered_card():
    card = models.get("disco").card
    assert card.datasets == ("moons", "circles", "blobs", "aniso")
    assert card.main_metric == "pcc_disco_ari" and card.default_dataset == "moons"
    assert runner.make_config("disco", "quick", "moons", 0) == DiscoConfig()
    assert runner.make_config("disco", "full", "aniso", 3).n == 5000


def test_config_refuses_min_pts_above_n():
    with pytest.raises(ModelError, match=r"DiscoConfig.min_pts = 30: must lie in 1..n \(20\)"):
        DiscoConfig(n=20, min_pts=30)


def test_pointwise_scores_reach_run_file_and_report(tmp_path):
    from deploy.report import html_report
    from deploy.runfile import read_run, write_run
    res = runner.run("disco", profile=TOY_GPU, overrides={"n": 300})
    assert res.metrics["n_clusterings"] == 11 and res.metrics["ari_gt"] == 1.0
    run = read_run(write_run(tmp_path / "d.h5", res))
    tr = run.traces["pointwise_gt"]
    assert tr.kind == "scatter" and tr.data.shape == (300, 3)
    np.testing.assert_array_equal(tr.data, res.traces["pointwise_gt"].data)
    assert run.traces["clusterings"].data[0, 0] == "gt"
    html = html_report(run, [run.ledger.price(run.profile)], tmp_path / "d.html").read_text()
    assert 'alt="pointwise_gt"' in html and 'alt="pointwise_kmeans"' in html
