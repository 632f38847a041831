"""DISCO's study: mean and spread of PCC(index, ARI) over seeds per data set."""
import numpy as np
import pytest
from conftest import TOY_GPU


@pytest.mark.slow   # 12 runs of the protocol at n = 300 (~55 s at load ~8)
def test_the_study_reports_mean_and_spread_over_seeds(monkeypatch):
    from models import runner
    from models.disco import experiment
    monkeypatch.setitem(experiment.PLANS, "quick", {"seeds": 3, "overrides": {"n": 300}})
    study = runner.study("disco", preset="quick", profiles={"gpu": TOY_GPU})
    assert len(study.runs) == 4 * 3 and study.summary["seeds"] == 3
    for d in ("moons", "circles", "blobs", "aniso"):
        assert np.isfinite(study.summary[f"{d}_pcc_disco_mean"])
        assert study.summary[f"{d}_pcc_disco_std"] >= 0
    assert isinstance(study.summary["claim_met"], bool)
