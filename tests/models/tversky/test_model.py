"""Frozen-encoder heads: what the small run learns and counts, seeding, the rebuilt model."""
import numpy as np
import pytest
import torch

import models
from models import runner
from models.shared.datasets import Dataset
from models.tversky import model as tv_model
from models.tversky.card import TverskyHeadConfig
from sim.errors import ModelError


def test_simulate_learns_and_counts(small_run, small, toy_gpu_path):
    # k of n run seeds (TverskyHeadConfig.seed; seed 0 is the shared small_run, seeds 1 and 2
    # ~3.5 s each), chance 0.1 throughout. At least 2 of 3 above 50% for each head: measured
    # seeds 0-2 Tversky 0.630, 0.634, 0.530 (seeds 3-5: 0.616, 0.564, 0.568), linear 0.712,
    # 0.680, 0.708 (0.724, 0.656, 0.672). Data-domain heads at least 2 of 3 above 30%:
    # 0.570, 0.546, 0.448 (0.508, 0.500, 0.392). The Tversky head's last epoch loss at least
    # 2 of 3 under 0.7 x its first: 0.44, 0.48, 0.50 (0.44, 0.50, 0.47).
    runs = [small_run] + [runner.run("tversky", profile=toy_gpu_path, seed=s, overrides=small)
                          for s in (1, 2)]
    ms = [r.metrics for r in runs]
    for key, floor in (("tversky_test_accuracy", 0.5), ("linear_test_accuracy", 0.5),
                       ("tversky_data_domain_test_accuracy", 0.3)):
        accs = [mm[key] for mm in ms]
        assert sum(a > floor for a in accs) >= 2, (key, accs)
    losses = [r.traces["tversky_train_loss"].data for r in runs]
    assert sum(ls[-1] < 0.7 * ls[0] for ls in losses) >= 2, losses
    m, led = small_run.metrics, small_run.ledger
    assert m["test_accuracy"] == m["tversky_test_accuracy"]
    assert m["accuracy_gain_vs_linear"] == m["tversky_test_accuracy"] - m["linear_test_accuracy"]
    # head parameters: P d + K d + 3 = 10*64 + 64*64 + 3; linear 64*10 + 10
    assert m["tversky_head_parameters"] == 10 * 64 + 64 * 64 + 3
    assert m["linear_head_parameters"] == 650
    # footprint: the deployed encoder (width 8: 1,376 parameters and 512 B of standardising
    # buffers) and the Tversky head, float32; it was the last compiled module's (the linear
    # head's 650 x 4 = 2,600 B, or a visualise module's)
    from models.tversky.model import conv_encoder
    enc = conv_encoder(0, 8)
    assert sum(p.numel() for p in enc.parameters()) == 1_376
    assert m["footprint_bytes"] == 4 * (1_376 + m["tversky_head_parameters"]) + 512
    # every head epoch sees the 2000 images once; the data-domain heads train 4 // 2 epochs
    assert led.samples() == {"encode": 2000, "train/tversky": 4 * 2000,
                             "train/linear": 4 * 2000, "infer": 500, "infer_linear": 500,
                             "visualise/tversky": 2 * 2000, "visualise/linear": 2 * 2000,
                             "visualise/tversky/infer": 500, "visualise/linear/infer": 500}
    assert led.uncounted() == {}
    assert small_run.facts["feature_dim"] == 64
    protos = small_run.traces["tversky_prototypes"]
    assert protos.kind == "images" and protos.data.shape == (10, 28, 28)
    loss = small_run.traces["tversky_train_loss"]
    assert loss.kind == "curve" and loss.data.shape == (4,)
    fig = tv_model.prototype_figure(small_run)
    assert len(fig.axes) == 20                                 # 2 rows of 10 pictures


def test_neurobench_counts_the_deployed_classifier_only(small_run):
    # encoder (1,376 parameters, 512 B of buffers) + Tversky head (4,739), float32: the
    # room's footprint_bytes; it was every model's sum (linear head, visualise modules)
    nb, m = small_run.neurobench, small_run.metrics
    assert nb["ParameterCount"] == 1_376 + 10 * 64 + 64 * 64 + 3 == 6_115
    assert nb["Footprint"] == m["footprint_bytes"] == 4 * 6_115 + 512


def test_seeded_runs_identical(small_run, small, toy_gpu_path):
    again = runner.run("tversky", profile=toy_gpu_path, overrides={**small, "visualise": False})
    assert again.metrics["tversky_test_accuracy"] == small_run.metrics["tversky_test_accuracy"]
    np.testing.assert_array_equal(again.traces["tversky_train_loss"].data,
                                  small_run.traces["tversky_train_loss"].data)


def test_rebuilt_model_scores_the_run_exactly(small_run, small):
    from models.tversky import data
    net = tv_model.rebuild(small_run.trained)
    assert small_run.trained.meta["feature_dim"] == 64
    test = data.load("fashion-mnist", TverskyHeadConfig(**small))
    with torch.no_grad():
        logits = net(torch.as_tensor(test.x_test))
    right = int((logits.argmax(1).numpy() == test.y_test).sum())
    assert right == round(500 * small_run.metrics["tversky_test_accuracy"])  # of 500


def test_bad_inputs(toy_gpu_path):
    with pytest.raises(ModelError, match="encoder = 'resnet'"):
        TverskyHeadConfig(encoder="resnet")
    with pytest.raises(ModelError, match="epochs = 0"):
        TverskyHeadConfig(epochs=0)
    # one training image: its feature std (N - 1 = 0 degrees of freedom) is NaN, and the
    # standardised features, so every head, were NaN
    with pytest.raises(ModelError, match=r"train = 1: must be >= 2 \(the encoder's "):
        TverskyHeadConfig(train=1)
    with pytest.raises(ModelError, match="takes datasets fashion-mnist; got 'digits'"):
        runner.prepare("tversky", profile=toy_gpu_path, dataset="digits")
    bad = Dataset("fashion-mnist", np.zeros((3, 10), np.float32), np.zeros(3, np.int64),
                  np.zeros((2, 784), np.float32), np.zeros(2, np.int64), 10, (10,), "test")
    with pytest.raises(ModelError, match=r"training set: x has shape \(3, 10\), expected "
                                         r"\(N, 784\)"):
        tv_model.run_heads(bad, TverskyHeadConfig(), models.runner.device_for(
            models.get("tversky"), toy_gpu_path))
