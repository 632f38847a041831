"""DAVE's run (``run.py``: counting only the first MAE steps, warm-up schedule, cached
features for the fresh decoder, Stage 2 on concat(frozen generalist, copy), loss spikes),
the parsed-page pictures and the verdicts of the checks over seeds."""
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


def _frozen_vit():
    g = M.new_vit(CFG).eval()
    for p in g.parameters():
        p.requires_grad_(False)
    return g


def test_stage2_decoder_reads_the_frozen_generalist_and_the_copy():
    """The digest's Stage 2: the decoder reads concat(frozen generalist, phi_i); the copy
    trains, the generalist does not; one counted block (its features pass included)."""
    gen, enc = _frozen_vit(), M.new_vit(CFG)
    g0 = {k: v.clone() for k, v in gen.state_dict().items()}
    e0 = {k: v.clone() for k, v in enc.state_dict().items()}
    dev = RecordingDevice()
    pages = _pages(8)
    dec, losses = R.train_parser(CFG, enc, "gru", pages, dev, 3, scope="train/stage2/gru",
                                 frozen=gen)
    assert len(losses) == 3
    assert dec.mem.in_features == 16 + 16          # generalist 16 + copy 16 channels
    assert all(torch.equal(g0[k], v) for k, v in gen.state_dict().items())
    assert not all(torch.equal(e0[k], v) for k, v in enc.state_dict().items())
    assert dev.blocks == [("train/stage2/gru", 3 * 4)]     # 3 steps x batch 4
    # the generalist's channels come first, as in the fused encoder the decoder D reads
    x, s = torch.as_tensor(pages.images[:2]), torch.as_tensor(pages.seqs["reading"][:2])
    with torch.no_grad():
        a = M.seq_loss(dec, M.Fused(gen, enc)(x), s)
        b = M.seq_loss(dec, torch.cat([gen(x), enc(x)], -1), s)
    assert torch.equal(a, b)


def test_stage2_counts_the_generalists_one_pass_and_no_backward_on_the_torch_engine():
    """On the torch engine, Stage 2's block holds the copy's steps and the frozen
    generalist's single pass over the labelled pages, with no backward through it."""
    import sim
    pages, ops = _pages(8), {}
    for tag, frozen in (("copy", None), ("concat", _frozen_vit())):
        dev = sim.device("tests/data/toy-gpu.toml")
        R.train_parser(CFG, M.new_vit(CFG), "gru", pages, dev, 3, scope="train/stage2/gru",
                       frozen=frozen)
        ops[tag] = {k: dev.ledger.ops(f"train/stage2/gru/{k}")["mac_fp32"]
                    for k in ("embed/forward", "embed/backward", "mem/forward",
                              "blocks.layers.0.self_attn/forward")}
        assert dev.ledger.samples() == {"train/stage2/gru": 3 * 4}   # training samples only
        assert dev.ledger.uncounted() == {}
    # patch embedding 64 px -> 16 channels on 64 tokens: 64 x 64 x 16 = 65,536 MAC a page;
    # 3 steps x 4 pages = 12 copy pages; + the generalist's 8 labelled pages once
    assert ops["copy"]["embed/forward"] == 12 * 65_536 == 786_432
    assert ops["concat"]["embed/forward"] == (12 + 8) * 65_536 == 1_310_720
    assert ops["concat"]["embed/backward"] == ops["copy"]["embed/backward"]   # copy only
    # the generalist's attention runs on its 8 pages too (eval mode, no gradient): 20 / 12
    assert ops["concat"]["blocks.layers.0.self_attn/forward"] * 12 == (
        ops["copy"]["blocks.layers.0.self_attn/forward"] * 20)
    # the decoder's input projection: 12 pages x 64 tokens x (16 + 16) x 16
    assert ops["concat"]["mem/forward"] == 12 * 64 * 32 * 16 == 2 * ops["copy"]["mem/forward"]


class RunDevice(RecordingDevice):
    torch_device = torch.device("cpu")

    def deploy(self, module):
        pass


def _tiny_run_cfg(**kw):
    return DaveConfig(**{**CFG.__dict__, "mae_steps": 2, "counted_steps": 1,
                         "stage2_steps": 2, "merge_steps": 1, "heldout_steps": 1,
                         "generalist_steps": 2, "pictures": 1, **kw})


def _tiny_data():
    rng = np.random.default_rng(3)
    return D.DaveData(_pages(4), _pages(4, 1), _pages(2, 2),
                      rng.random((8, 28, 28)).astype(np.float32), np.arange(8) % 10, "random")


def test_run_trains_the_generalist_first_and_stage2_on_the_concat(monkeypatch):
    """run(): the generalist is trained before Stage 2 and frozen through it; each Stage-2
    decoder reads 16 + 16 channels (generalist + copy); decoder D reads 16 + 16 only on the
    fused encoder. The ledger's phases follow that order (count_all)."""
    seen, widths = {}, {}
    train_generalist, train_parser = R.train_generalist, R.train_parser

    def spy_generalist(*a, **k):
        g = train_generalist(*a, **k)
        seen["gen"], seen["g0"] = g, {n: v.clone() for n, v in g.state_dict().items()}
        return g

    def spy_parser(cfg, enc, name, pages, dev, steps, **k):
        dec, losses = train_parser(cfg, enc, name, pages, dev, steps, **k)
        widths[k["scope"]] = dec.mem.in_features
        if k["scope"].startswith("train/stage2/"):
            assert "gen" in seen and k.get("frozen") is seen["gen"]
            assert all(torch.equal(seen["g0"][n], v) for n, v in seen["gen"].state_dict().items())
        return dec, losses

    monkeypatch.setattr(R, "train_generalist", spy_generalist)
    monkeypatch.setattr(R, "train_parser", spy_parser)
    dev = RunDevice()
    R.run(_tiny_run_cfg(count_all=True), dev, _tiny_data())
    assert widths["train/stage2/gru"] == widths["train/stage2/tf2"] == 32
    assert widths["train/heldout/fused"] == 32
    assert widths["train/heldout/merged"] == widths["train/heldout/generalist"] == 16
    assert all(torch.equal(seen["g0"][n], v) for n, v in seen["gen"].state_dict().items())
    # 1 counted MAE step x batch 4; generalist 2 x 4; each Stage-2 copy 2 x 4; merge 1 x 4
    assert dev.blocks[:5] == [("train/stage1", 4), ("train/generalist", 8),
                              ("train/stage2/gru", 8), ("train/stage2/tf2", 8),
                              ("train/merge", 4)]


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
