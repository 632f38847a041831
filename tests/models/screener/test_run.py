"""Screener's run: the voxel AUROC follows the paper's protocol, body voxels only (the paper
crops CT to voxels > -500 HU, so air outside the patient is never a negative)."""
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from models.screener import model as M
from models.screener.card import ScreenerConfig, load_data
from models.screener.data import ORGANS, Volumes
from models.screener.run import run
from sim.errors import ModelError
from sim.torch_engine import TorchDevice
from tests.conftest import TOY_GPU


def hand_built() -> tuple[Volumes, np.ndarray]:
    """One 1 x 2 x 4 volume: 4 air voxels (row 0), 2 body voxels and 2 lesion voxels in lung
    (row 1); scores: air 0.7 each, body 0.2 and 0.4, lesion 0.6 and 0.8."""
    organ = np.array([[[[0, 0, 0, 0],
                        [1, 1, 2, 2]]]], np.int8)
    lesion = np.array([[[[0, 0, 0, 0],
                         [0, 0, 1, 1]]]], bool)
    x = np.where(organ > 0, 0.5, 0.0).astype(np.float32)
    scores = np.array([[[[0.7, 0.7, 0.7, 0.7],
                         [0.2, 0.4, 0.6, 0.8]]]], np.float32)
    return Volumes(x, organ, lesion, x.copy()), scores


def test_auroc_counts_body_voxels_only():
    vols, scores = hand_built()
    assert vols.body.sum() == 4 and ORGANS[0] == "background"
    # body only: lesions {0.6, 0.8} against body negatives {0.2, 0.4}: 4 of 4 pairs
    # ordered right -> AUROC 1.0
    assert M.auroc(scores, vols.lesion, vols.body) == 1.0
    # with the 4 air voxels (0.7) as negatives too: 0.6 beats 2 of 6, 0.8 beats 6 of 6
    # -> 8 / 12 = 0.667: what the AUROC over every voxel gave before
    every = roc_auc_score(vols.lesion.reshape(-1), scores.reshape(-1))
    assert every == pytest.approx(8 / 12)


def test_auroc_refuses_a_body_mask_that_misses_a_lesion():
    vols, scores = hand_built()
    with pytest.raises(ModelError, match="hold every lesion voxel"):
        M.auroc(scores, vols.lesion, np.zeros_like(vols.lesion))
    with pytest.raises(ModelError, match="must match"):
        M.auroc(scores, vols.lesion, vols.body[0])


def test_procedural_lesions_lie_in_the_body_and_air_is_a_large_share():
    _, test = load_data("synthetic-ct", ScreenerConfig(test=3))
    assert not (test.lesion & ~test.body).any()
    assert 0.3 < 1 - test.body.mean() < 0.7       # ~half of a volume is air outside the body


def test_run_scores_body_voxels_only():
    cfg = ScreenerConfig(train=6, test=2, ssl_steps=2, density_steps=3, count_steps=0,
                         variants=("gauss_none", "gauss_mask"))
    data = load_data("synthetic-ct", cfg)
    res = run(cfg, TorchDevice(str(TOY_GPU)), data)
    test = data[1]
    for name, maps in res["maps"].items():
        assert res["metrics"][f"auroc_{name}"] == roc_auc_score(test.lesion[test.body],
                                                                maps[test.body])
        assert res["metrics"][f"pauroc30_{name}"] == roc_auc_score(
            test.lesion[test.body], maps[test.body], max_fpr=0.3)
        assert res["metrics"][f"auroc_{name}"] != roc_auc_score(test.lesion.reshape(-1),
                                                                maps.reshape(-1))


def test_neurobench_static_metrics_are_the_deployed_variants():
    # gauss_mask deploys f (descriptor), g (condition) and the Gaussian density; the
    # random-init control f_rand and the two VICReg expanders are not the model: before,
    # ParameterCount summed them all (146,672 against 86,404 at the quick preset)
    from sim import neurobench
    cfg = ScreenerConfig(train=6, test=2, ssl_steps=2, density_steps=3, count_steps=0,
                         variants=("gauss_none", "gauss_mask"))
    data = load_data("synthetic-ct", cfg)
    dev = TorchDevice(str(TOY_GPU))
    res = run(cfg, dev, data)
    assert res["metrics"]["auroc_gauss_mask"] > 0
    deployed = set(dev.ledger.deployed())
    assert len(deployed) == 3
    want = sum(m["parameters"] for n, m in dev.ledger.models().items() if n in deployed)
    assert neurobench.metrics(dev.ledger)["ParameterCount"] == want
    everything = sum(m["parameters"] for m in dev.ledger.models().values())
    assert want < everything   # f_rand at least is left out
