"""The KLAS card through the runner: registration, a tiny run, its ONNX stitch in onnxruntime."""
import numpy as np
import pytest
import torch
from conftest import TOY_GPU

import models
from models import runner
from models.klas.card import KLASConfig
from sim.artifacts import TorchArtifact
from sim.errors import ModelError

TINY = dict(widths=(8, 12, 16), heads=(2, 2, 2), depth=2, n_train=256, n_val=64, n_test=128,
            ls_samples=32, anchor_epochs=1, probe_epochs=1, stitch_steps=3, supernet_steps=6,
            n_buckets=2, batch_size=32)


def test_registered_with_onnx_export(toy_gpu_path):
    card = models.get("klas").card
    assert card.name == "klas" and card.exports == ("onnx",) and card.config is KLASConfig
    assert set(card.device_kinds) == {"gpu", "cpu"} and card.default_profile == "a100"
    quick = runner.make_config("klas", "quick", "fashion-mnist", seed=3)
    assert quick == KLASConfig.quick(seed=3) and quick.widths == (16, 24, 32)
    assert runner.make_config("klas", "full", "fashion-mnist", 0) == KLASConfig()
    with pytest.raises(ModelError, match="takes datasets fashion-mnist; got 'digits'"):
        runner.prepare("klas", profile=toy_gpu_path, dataset="digits")


@pytest.fixture(scope="module")
def tiny_card_run(fashion_mnist):
    torch.set_num_threads(1)
    return runner.run("klas", profile=TOY_GPU, overrides=TINY)


def test_run_result_of_the_card(tiny_card_run):
    run = tiny_card_run
    assert run.model == "klas" and run.profile.name == "toy-gpu" and run.ledger.uncounted() == {}
    assert run.config["widths"] == (8, 12, 16) and run.facts["n_anchors"] == 3
    assert run.traces["stitches"].data.shape == (6, 10)
    assert run.trained.meta["stitch"] == run.facts["export_stitch"]
    assert run.trained.arrays["example_x"].shape == (8, 784)


def test_onnx_stitch_runs_in_onnxruntime_like_torch(tiny_card_run, tmp_path):
    import onnxruntime as ort

    from deploy.onnx_export import export_onnx
    art = models.get("klas").artifact(tiny_card_run.trained, "onnx")
    assert isinstance(art, TorchArtifact) and art.input_names == ("pixels",)
    path = export_onnx(art.module, art.example_inputs, tmp_path / "klas.onnx",
                       input_names=art.input_names, output_names=art.output_names)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = art.check_inputs.numpy()                                  # 8 test images, batch 8 != 2
    (got,) = sess.run(None, {"pixels": x})
    with torch.no_grad():
        want = art.module(art.check_inputs).numpy()
    assert got.shape == (8, 10)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_cli_simulate_and_export_quick(tmp_path):
    """The quick run through the CLI: a run file, and an ONNX stitch onnxruntime agrees with."""
    from deploy.cli import main
    from deploy.runfile import read_run
    out = tmp_path / "klas.h5"
    assert main(["simulate", "klas", "--profile", "a100", "--out", str(out)]) == 0
    run_ = read_run(out)
    assert run_.metrics["anchor2_accuracy"] > run_.metrics["anchor0_accuracy"] - 0.05
    assert run_.metrics["supernet_auc_klas"] > 0.5 and run_.ledger.uncounted() == {}
    onnx_path = tmp_path / "klas.onnx"
    assert main(["export", "klas", "--target", "onnx", "--out", str(onnx_path)]) == 0
    assert onnx_path.stat().st_size > 10_000
