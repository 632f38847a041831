"""The Tversky card: registration, the ONNX export of the trained model, run file and report."""
import numpy as np
import torch

import models
from models import runner
from models.tversky.card import TverskyHeadConfig
from sim.artifacts import TorchArtifact


def test_registered_card():
    method = models.get("tversky")
    card = method.card
    assert card.name == "tversky" and card.exports == ("onnx",)
    assert card.config is TverskyHeadConfig and card.datasets == ("fashion-mnist",)
    full = runner.make_config("tversky", "full", "fashion-mnist", seed=2)
    assert (full.train, full.test, full.epochs, full.seed) == (60000, 10000, 10, 2)
    assert runner.make_config("tversky", "quick", "fashion-mnist", 0) == TverskyHeadConfig()


def test_onnx_export_matches_torch(small_run, tmp_path):
    import onnxruntime as ort

    from deploy.onnx_export import export_onnx
    art = models.get("tversky").artifact(small_run.trained, "onnx")
    assert isinstance(art, TorchArtifact) and art.output_names == ("similarity",)
    assert tuple(art.example_inputs.shape) == (8, 784) and len(art.check_inputs) == 64
    path = export_onnx(art.module, art.example_inputs, tmp_path / "tv.onnx",
                       input_names=art.input_names, output_names=art.output_names)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((3, 784), dtype=np.float32)   # batch 3 != 8
    (got,) = sess.run(None, {"pixels": x})
    with torch.no_grad():
        want = art.module(torch.as_tensor(x)).numpy()
    assert got.shape == (3, 10)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_prototypes_reach_run_file_and_report(small_run, tmp_path):
    from deploy.report import html_report
    from deploy.runfile import read_run, write_run
    run = read_run(write_run(tmp_path / "tv.h5", small_run))   # the toy profile object
    assert run.profile.label == small_run.profile.label and run.profile.name == "toy-gpu"
    np.testing.assert_array_equal(np.asarray(getattr(run.traces["linear_prototypes"], "data",
                                                     run.traces["linear_prototypes"])),
                                  small_run.traces["linear_prototypes"].data)
    html = html_report(run, [run.ledger.price(run.profile)], tmp_path / "tv.html").read_text()
    assert 'alt="tversky_prototypes"' in html and 'alt="linear_prototypes"' in html
