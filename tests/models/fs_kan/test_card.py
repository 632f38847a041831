"""The FS-KAN card through the runner: presets, the quick run's counts, the ONNX export."""
import numpy as np
import pytest
import torch
from conftest import TOY_GPU

import models
from models import runner
from models.fs_kan.card import FSConfig
from sim.artifacts import TorchArtifact
from sim.errors import ModelError


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_registered_card():
    method = models.get("fs_kan")
    card = method.card
    assert card.name == "fs_kan" and card.exports == ("onnx",) and card.config is FSConfig
    assert card.datasets == ("signal-sets", "fashion-points")
    assert card.default_dataset == "fashion-points" and card.trains_on == "signal-sets"
    # the quick presets are the old per-task sizes: width 8 / 16, 60 / 100 sets, 150 steps
    cfg = runner.make_config("fs_kan", "quick", "signal-sets", seed=4)
    assert (cfg.widths, cfg.inv_width, cfg.n_train, cfg.steps, cfg.n_test, cfg.seed) == \
        ((8, 8), 8, 60, 150, 500, 4)
    cfg = runner.make_config("fs_kan", "full", "fashion-points", seed=0)
    assert (cfg.widths, cfg.n_train, cfg.steps, cfg.n_test) == ((16, 16), 1000, 300, 2000)


def test_config_and_dataset_errors(toy_gpu_path):
    with pytest.raises(ModelError, match="phi = 'mlp'"):
        FSConfig(phi="mlp")
    with pytest.raises(ModelError, match="steps = 0"):
        FSConfig(steps=0)
    with pytest.raises(ModelError, match="n_train = 0"):
        FSConfig(n_train=0)
    # a batch of one set is skipped (BatchNorm needs two): batch_size = 1 or n_train = 1
    # trained no step (train loss 0.0) and reported the untrained network's accuracy
    for name in ("batch_size", "n_train"):
        with pytest.raises(ModelError, match=rf"FSConfig.{name} = 1: must be >= 2 \(BatchNorm"):
            FSConfig(**{name: 1})
    with pytest.raises(ModelError, match="takes datasets signal-sets, fashion-points; got 'cifar'"):
        runner.prepare("fs_kan", profile=toy_gpu_path, dataset="cifar")
    with pytest.raises(ModelError, match="no setting 'width'"):
        runner.prepare("fs_kan", profile=toy_gpu_path, overrides=["width=3"])


SHORT = {"steps": 10, "n_test": 50}   # the quick signal-set run, shortened to 5 epochs


@pytest.fixture(scope="module")
def short_run():
    torch.set_num_threads(1)
    return runner.run("fs_kan", profile=TOY_GPU, dataset="signal-sets", overrides=SHORT)


def test_short_run_counts_and_matched_parameters(short_run):
    m, led = short_run.metrics, short_run.ledger
    # 60 sets in batches of 32: 2 steps per epoch, 10 steps = 5 epochs of 60 sets
    assert led.samples() == {"train": 5 * 60, "infer": 50}
    # FS-KAN on S_6 x C_12 (H = 24 orbits, 10 = G + k + 2 spline and base weights per pair
    # of channels): FS 1 -> 8: 24 * 1 * 8 * 10 = 1920; FS 8 -> 8: 24 * 8 * 8 * 10 = 15360;
    # two BatchNorms 2 * 2 * 8 = 32; invariant pool (one orbit) 8 * 8 * 10 = 640 and its
    # BatchNorm 16; head 8 * 3 + 3 = 27
    assert m["parameters"] == 1920 + 15360 + 32 + 640 + 16 + 27
    assert abs(m["parameters"] - m["baseline_parameters"]) < 0.03 * m["parameters"]
    assert m["accuracy_gain"] == m["test_accuracy"] - m["baseline_test_accuracy"]
    assert m["train_macs"] == sum(v for k, v in led.total_ops("train").items()
                                  if k.startswith("mac_"))
    assert led.uncounted() == {} and short_run.facts["baseline_uncounted"] == {}
    assert short_run.facts["group"] == "S_6 x C_12 on 6x12"
    assert short_run.traces["train_loss"].kind == "curve"
    assert short_run.traces["train_loss"].data.shape == (5,)
    assert short_run.config["steps"] == 10 and short_run.preset == "quick"


def test_same_seed_same_run(short_run, toy_gpu_path):
    again = runner.run("fs_kan", profile=toy_gpu_path, dataset="signal-sets", overrides=SHORT)
    for key in ("test_accuracy", "baseline_test_accuracy", "test_loss", "train_macs"):
        assert again.metrics[key] == short_run.metrics[key], key
    assert again.ledger.total_ops() == short_run.ledger.total_ops()


def test_artifact_is_the_trained_network(short_run):
    from models.fs_kan import data
    method = models.get("fs_kan")
    art = method.artifact(short_run.trained, "onnx")
    assert isinstance(art, TorchArtifact) and art.input_names == ("points",)
    assert tuple(art.example_inputs.shape) == (2, 72, 1) and len(art.check_inputs) == 8
    test = data.load("signal-sets", 60, 50, seed=0)
    with torch.no_grad():   # the rebuilt network scores the run's test accuracy exactly
        logits = art.module(torch.as_tensor(test.x_test))
    right = int((logits.argmax(1).numpy() == test.y_test).sum())
    assert right == round(50 * short_run.metrics["test_accuracy"])  # of 50 (float32 mean)


def test_onnx_file_runs_in_onnxruntime_like_torch(short_run, tmp_path):
    import onnxruntime as ort

    from deploy.onnx_export import export_onnx
    art = models.get("fs_kan").artifact(short_run.trained, "onnx")
    path = export_onnx(art.module, art.example_inputs, tmp_path / "fs.onnx",
                       input_names=art.input_names, output_names=art.output_names)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = art.check_inputs.numpy()                               # 8 sets: dynamic batch 8 != 2
    (got,) = sess.run(None, {"points": x})
    with torch.no_grad():
        want = art.module(art.check_inputs).numpy()
    assert got.shape == (8, 3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_quick_run_and_cli_export(tmp_path, toy_gpu_path):
    from deploy.cli import main
    run = runner.run("fs_kan", profile=toy_gpu_path, dataset="signal-sets")
    # 60 sets, 2 steps per epoch: 150 steps = 75 epochs
    assert run.ledger.samples() == {"train": 75 * 60, "infer": 500}
    assert run.ledger.uncounted() == {}
    assert main(["export", "fs_kan", "--target", "onnx", "--out",
                 str(tmp_path / "fs.onnx")]) == 0
    assert (tmp_path / "fs.onnx").stat().st_size > 0
