"""DAVE's run (``run.py``: counting only the first MAE steps, warm-up schedule, cached
features for the fresh decoder, loss spikes), the parsed-page pictures and the verdicts of
the checks over seeds."""
import contextlib

import numpy as np
import pytest
import torch

from models.dave import data as D
from models.dave import experiment as X
from models.dave import model as M
from models.dave import pictures as P
from models.dave import run as R
from models.dave.card import DaveConfig

CFG = DaveConfig(width=16, depth=1, heads=2, dec_width=16, mae_dec_width=8, batch_size=4,
                 mae_steps=5, counted_steps=2)


class RecordingDevice:
    """Stands in for a TorchDevice: records every count() block and its samples."""

    def __init__(self):
        self.blocks = []

    @contextlib.contextmanager
    def count(self, scope, samples=0):
        self.blocks.append((scope, samples))
        yield


def _pages(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((20, 28, 28)).astype(np.float32)
    return D.make_pages(n, seed, x, np.arange(20) % 10)


def test_only_the_first_mae_steps_are_counted():
    dev = RecordingDevice()
    _, losses = R.train_mae(CFG, _pages(8), dev)
    assert len(losses) == 5                       # every step trains
    # 2 counted steps x batch 4 samples, under train/ so the report prices them as training
    assert dev.blocks == [("train/stage1", 2 * 4)]


def test_no_counted_steps_opens_no_block():
    dev = RecordingDevice()
    R.train_mae(DaveConfig(**{**CFG.__dict__, "counted_steps": 0}), _pages(8), dev)
    assert dev.blocks == []


def test_warmup_then_cosine():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = R.warmup_cosine(opt, steps=6, warmup=2)
    lrs = []
    for _ in range(6):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    # warm-up (i + 1) / 2 = 0.5, 1; then 0.5 (1 + cos(pi (i - 2) / 4)) for i = 2..5
    want = [0.5, 1.0, 1.0, 0.5 * (1 + np.cos(np.pi / 4)), 0.5, 0.5 * (1 + np.cos(3 * np.pi / 4))]
    assert lrs == pytest.approx(want)


def test_fresh_decoder_leaves_the_frozen_encoder_unchanged():
    enc = M.new_vit(CFG)
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    dec, losses = R.train_parser(CFG, enc, "heldout", _pages(8), None, 3, train_encoder=False)
    assert len(losses) == 3
    assert all(torch.equal(before[k], v) for k, v in enc.state_dict().items())
    assert all(not p.requires_grad for p in enc.parameters())


def test_cached_features_equal_the_encoder_output():
    enc = M.new_vit(CFG).eval()
    x = _pages(5).images
    with torch.no_grad():
        assert torch.allclose(R.features(enc, x, chunk=2), enc(torch.as_tensor(x)), atol=1e-6)


def test_loss_spikes_counts_steps_above_ten_times_the_running_median():
    # medians of the preceding steps: 1, 1, 1, 1 (over 1, 1, 1, 20) -> 20 > 10 and 11 > 10
    assert R.loss_spikes([1, 1, 1, 20, 11, 1]) == 2
    assert R.loss_spikes([1, 2, 3, 4]) == 0


def test_pictures_draw_truth_and_parse_side_by_side():
    pages = _pages(3)
    pics = P.parsed_pages(pages.images, pages.boxes, pages.fashion, pages.seqs["reading"],
                          n=2)
    half = 64 * P.SCALE
    assert pics.shape == (2, half + P.CAPTION, 2 * half + 4, 3)
    assert 0.0 <= pics.min() and pics.max() <= 1.0
    # the figure box's left edge (class 5, red) is drawn on both halves at the same place
    c, x0, y0, *_ = next(b for b in pages.boxes[0] if b[0] == 5)
    px = int(x0 * half / D.BINS) + 1
    py = P.CAPTION + int(y0 * half / D.BINS) + 10
    red = np.array(P.COLOURS[5]) / 255.0
    assert np.allclose(pics[0, py, px], red) and np.allclose(pics[0, py, half + 4 + px], red)


def test_judge_reports_mean_seeds_passing_and_verdict():
    runs = [{"merge_minus_single_box_f1": v} for v in (0.03, -0.01, 0.01)]
    c = X.judge(runs)["c_merge_vs_single"]
    # mean (0.03 - 0.01 + 0.01) / 3 = 0.01 >= 0.01; seeds 0.03 and 0.01 pass, -0.01 does not
    assert c["mean"] == pytest.approx(0.01) and c["seeds_passing"] == 2 and c["holds"]
    # population std sqrt((0.02^2 + 0.02^2 + 0^2) / 3) = 0.01633, sem = std / sqrt(2) =
    # 0.01155: mean - 2 sem = -0.0131 < 0.01, so the pass is not clear
    assert c["sem"] == pytest.approx(0.011547, rel=1e-4) and c["clear"] is False
    tight = X.judge([{"merge_minus_single_box_f1": v} for v in (0.05, 0.06, 0.07)])
    assert tight["c_merge_vs_single"]["clear"]      # 0.06 - 2 * 0.00577 = 0.048 >= 0.01
    assert list(X.judge(runs)) == ["c_merge_vs_single"]   # unmeasured checks are left out


def test_flat_fraction():
    img = np.zeros((1, 16, 16), np.float32)
    img[0, :8, :8] = np.random.default_rng(0).random((8, 8))   # one textured patch of 4
    assert X.flat_fraction(img, 8) == 0.75


def test_neurobench_counts_the_fused_encoder_and_decoder_d_only():
    """The ledger records the MAE encoder and decoder parts (stage 1), the fused encoder and
    decoder D (the deployed inference); NeuroBench's model is the last two (the quick
    preset summed all six: 280,013 parameters instead of 191,949)."""
    import sim
    from sim.neurobench import metrics
    cfg = DaveConfig(**{**CFG.__dict__, "mae_steps": 2, "counted_steps": 1, "stage2_steps": 1,
                        "merge_steps": 1, "heldout_steps": 1, "generalist_steps": 1,
                        "pictures": 1})
    rng = np.random.default_rng(3)
    data = D.DaveData(_pages(4), _pages(4, 1), _pages(2, 2),
                      rng.random((8, 28, 28)).astype(np.float32), np.arange(8) % 10, "random")
    dev = sim.device("tests/data/toy-gpu.toml")
    R.run(cfg, dev, data)
    models = {k: v["parameters"] for k, v in dev.ledger.models().items()}
    assert dev.ledger.deployed() == ["Fused", "TransformerDecoder"]
    vit = models["ViT"]                  # stage 1's encoder: every ViT of the run is its size
    # Fused: the generalist ViT + the merge's template ViT + one logit per ViT tensor per
    # stage-2 copy (17 tensors x 2 copies = 34)
    assert models["Fused"] == 2 * vit + 17 * 2 == 8674
    assert metrics(dev.ledger)["ParameterCount"] == models["Fused"] + models["TransformerDecoder"]
    assert sum(models.values()) > metrics(dev.ledger)["ParameterCount"]
