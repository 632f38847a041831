"""The digest's semantic checks: DISCO ranks the density-based ground truth above KMeans and
above the ground truth with its background noise merged in, where Silhouette prefers KMeans;
and the PCC protocol in miniature (moons, circles)."""
import numpy as np
import pytest
from conftest import TOY_GPU

from models.disco import data
from models.disco.card import DiscoConfig
from models.disco.experiment import pcc, protocol, silhouette
from models.disco.model import dc_structure, disco_score
from sim.errors import ModelError
from sim.torch_engine.engine import TorchDevice


@pytest.mark.parametrize("seed", range(3))
def test_disco_prefers_the_truth_where_silhouette_prefers_kmeans(seed):
    # make_moons(400, noise=0.06) + 40 uniform background points labelled -1
    from sklearn.cluster import KMeans
    ps = data.make("moons", 440, 40 / 440, seed)
    labs = data.clusterings(ps, seed)
    dev = TorchDevice(TOY_GPU)
    dc = dc_structure(ps.x, 5, dev)
    score = {k: disco_score(ps.x, labs[k], dev, dc=dc) for k in ("gt", "gt_noise_merged")}
    km = KMeans(2, n_init=4, random_state=seed).fit_predict(ps.x)
    score["kmeans"] = disco_score(ps.x, km, dev, dc=dc)
    assert score["gt"] > score["kmeans"]
    assert score["gt"] > score["gt_noise_merged"]
    assert silhouette(ps.x, km) > silhouette(ps.x, ps.y)


def test_pcc_leaves_out_undefined_clusterings():
    # (1, 2, 3) against (1, 2, 3): r = 1 over the three defined entries
    assert pcc([1.0, np.nan, 2.0, 3.0], [0.1, 0.5, 0.2, 0.3]) == (pytest.approx(1.0), 3)
    r, n = pcc([1.0, 1.0, 1.0], [0.1, 0.2, 0.3])     # constant index: no correlation
    assert np.isnan(r) and n == 3


@pytest.mark.slow   # 13-26 s per data set here (load 6-11)
@pytest.mark.parametrize("dataset", ["moons", "circles"])
def test_disco_correlates_with_ari_better_than_silhouette(dataset):
    # the digest's miniature protocol, mean over 3 seeds at n = 500 (10% background)
    got = {"disco": [], "silhouette": []}
    for seed in range(3):
        cfg = DiscoConfig(n=500, seed=seed)
        res = protocol(data.make(dataset, cfg.n, cfg.noise_frac, seed), TorchDevice(TOY_GPU),
                       cfg)
        got["disco"].append(res["pcc_disco"])
        got["silhouette"].append(res["pcc_silhouette"])
    assert np.mean(got["disco"]) >= np.mean(got["silhouette"])


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


@pytest.mark.parametrize("n, noise_frac, left", [(20, 0.97, 1), (1000, 0.9996, 0)])
def test_a_background_leaving_under_two_cluster_points_is_refused(n, noise_frac, left):
    # round(0.97 x 20) = round(19.4) = 19 background points leave 1 cluster point, whose std
    # 0 made the scaling nan and rng.uniform raise OverflowError; round(999.6) = 1000 leaves 0
    with pytest.raises(ModelError, match=rf"noise_frac = {noise_frac} of n = {n} leaves "
                                         rf"{left} cluster point\(s\)"):
        data.make("moons", n, noise_frac, 0)
    # round(0.9 x 20) = 18 leaves 2: a defined data set (2 cluster points, 18 background)
    assert (data.make("moons", 20, 0.9, 0).y == -1).sum() == 18
