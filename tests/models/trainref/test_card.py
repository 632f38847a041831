"""The TrainRef card: registration, presets, one small run through the runner to a run file
and an HTML report."""
from conftest import TOY_GPU

import models
from models import runner
from models.trainref.card import TrainRefConfig

SMALL = {"train": 1500, "test": 300, "val": 100, "mae_epochs": 1, "ce_epochs": 2,
         "aug_epochs": 1, "ft_epochs": 1, "hidden": 64, "dim": 16}


def test_registered_card():
    card = models.get("trainref").card
    assert card.config is TrainRefConfig and card.datasets == ("fashion-mnist",)
    full = runner.make_config("trainref", "full", "fashion-mnist", seed=3)
    assert (full.train, full.test, full.ce_epochs, full.seed) == (20000, 10000, 20, 3)
    assert runner.make_config("trainref", "quick", "fashion-mnist", 0) == TrainRefConfig()


def test_small_run_reaches_run_file_and_report(fashion_mnist, tmp_path):
    from deploy.report import html_report
    from deploy.runfile import read_run, write_run
    res = runner.run("trainref", profile=TOY_GPU, overrides=SMALL)
    m = res.metrics
    # 1500 images - 10 references - 100 validation = 1390 in the noisy pool
    assert res.facts["pool_size"] == 1390
    assert abs(m["realised_noise"] - 0.8) < 0.04              # 1390 draws: std 0.011
    assert 0 < m["dstar_size"] < 1390 and 0 <= m["dstar_precision"] <= 1
    for scope in ("train/pretrain", "train/probe", "influence", "train/augment", "vote",
                  "train/finetune", "train/ce", "train/label_smoothing", "calibrate", "hard",
                  "train/hard/augment"):
        assert any(s == scope or s.startswith(scope + "/") for s in res.ledger.scopes()), scope
    # every training under train/: the report's energy per training sample exists
    from sim import phases
    assert phases.train_scope(res.ledger.samples()) == "train"
    # NeuroBench's model is TrainRef's classifier (marked): fp32, no buffers, so its
    # Footprint is the room's own footprint_bytes and 4 B per parameter; it was the sum of
    # the MAE, the probe head and four classifier copies (quick preset: 5.23 MB, 1,308,418)
    assert res.ledger.deployed() == ["Classifier#3"] and len(res.ledger.models()) == 6
    assert res.neurobench["Footprint"] == m["footprint_bytes"] == 4 * res.neurobench[
        "ParameterCount"]
    run = read_run(write_run(tmp_path / "tr.h5", res))
    assert run.neurobench["Footprint"] == m["footprint_bytes"]        # the mark in the file
    html = html_report(run, [run.ledger.price(run.profile)], tmp_path / "tr.html").read_text()
    assert "trainref" in html and "relabel_accuracy" in html
