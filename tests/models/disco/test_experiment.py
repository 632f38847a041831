"""DISCO's study: mean and spread of PCC(index, ARI) over seeds per data set."""
import numpy as np
import pytest
from conftest import TOY_GPU

DATASETS = ("moons", "circles", "blobs", "aniso")


@pytest.mark.slow   # 12 runs of the protocol at n = 300 (~55 s at load ~8)
def test_the_study_reports_mean_and_spread_over_seeds(monkeypatch):
    from models import runner
    from models.disco import experiment
    monkeypatch.setitem(experiment.PLANS, "quick", {"seeds": 3, "overrides": {"n": 300}})
    study = runner.study("disco", preset="quick", profiles={"gpu": TOY_GPU})
    # 4 data sets x seeds 0, 1, 2 (the study's seed 0 up), one run each
    assert list(study.runs) == [f"{d}/seed{s}" for d in DATASETS for s in range(3)]
    assert study.summary["seeds"] == 3
    s = study.summary
    for d in DATASETS:
        for index in ("disco", "silhouette"):
            per_seed = [study.runs[f"{d}/seed{k}"].metrics[f"pcc_{index}_ari"]
                        for k in range(3)]
            # the summary is the nan-skipping mean and the population spread (np.nanstd's
            # ddof = 0: sqrt(sum (v - mean)^2 / 3)) of the three seeds' PCCs, nothing else
            assert s[f"{d}_pcc_{index}_mean"] == float(np.nanmean(per_seed)), (d, index)
            assert s[f"{d}_pcc_{index}_std"] == float(np.nanstd(per_seed)), (d, index)
        assert np.isfinite(s[f"{d}_pcc_disco_mean"])   # a PCC on every seed of every set
    # the claim is DISCO's mean PCC at least Silhouette's on moons and circles (blobs and
    # aniso are reported, not judged)
    expected = all(s[f"{d}_pcc_disco_mean"] >= s[f"{d}_pcc_silhouette_mean"]
                   for d in ("moons", "circles"))
    assert s["claim_met"] is expected
    # and it holds by a wide margin at n = 300 (measured means: moons 0.96 vs -0.27,
    # circles 0.95 vs -0.47; a flipped comparison in the code would give False)
    assert s["claim_met"] is True
