"""Chunk sparse attention's card: config checks, presets, a run through the runner (exact
sample counts, metrics), the paper's claim at the full preset (slow)."""
import math

import pytest

from models import runner
from models.chunk_sparse_attention.card import (
    CARD,
    FULL_LENGTHS,
    ChunkAttnConfig,
    retention_16x,
    variant_overrides,
)
from models.chunk_sparse_attention.data import NeedleTask
from sim.errors import ModelError

NAME = "chunk_sparse_attention"
SMALL = dict(d_model=16, heads=2, d_ff=32, window=4, chunk=8, top_k=2)


def test_card():
    assert runner.method_of(NAME).card is CARD
    assert CARD.default_profile == "a100" and set(CARD.device_kinds) == {"gpu", "cpu"}
    assert CARD.datasets == ("needle",) and CARD.exports == ()


def test_presets():
    quick = runner.make_config(NAME, "quick", "needle", 0)
    full = runner.make_config(NAME, "full", "needle", 0)
    # quick trains the same model, smaller: 150 x 16 sequences (last 40% at 256 tokens)
    # against 500 x 32 (last 40% at 512 tokens), tested at 1x, 4x and 16x
    assert (quick.steps, quick.batch, quick.train_len) == (150, 16, 256)
    assert quick.eval_lengths == (256, 1024, 4096)
    assert (full.steps, full.batch, full.train_len, full.warm_len) == (500, 32, 512, 128)
    assert full.eval_lengths == FULL_LENGTHS == (512, 2048, 4096, 8192, 16384, 32768)
    for cfg in (quick, full):
        assert {k: getattr(cfg, k) for k in SMALL} == {k: getattr(ChunkAttnConfig(), k)
                                                       for k in SMALL}   # the same model
        assert cfg.train_len // cfg.chunk > cfg.top_k          # sparse: 16 or 32 chunks > 4


def test_config_task_and_variants():
    cfg = ChunkAttnConfig(n_keys=6, n_pairs=5, n_values=3)
    assert cfg.task == NeedleTask(16, 6, 3, 5)
    # dense: every chunk of a training sequence: 512 / 16 = 32 (full), 256 / 16 = 16 (quick)
    assert variant_overrides("dense", ChunkAttnConfig()) == {"top_k": 32}
    assert variant_overrides("dense", ChunkAttnConfig(train_len=256)) == {"top_k": 16}
    assert variant_overrides("no_cls", cfg) == {"landmark": "mean"}
    with pytest.raises(ModelError, match="variant 'sparse'"):
        variant_overrides("sparse", cfg)


def test_retention():
    m = {"accuracy_L256": 0.5, "accuracy_L4096": 0.4}
    assert retention_16x(m, 256) == pytest.approx(0.8)          # 0.4 / 0.5
    assert retention_16x(m, 512) is None                         # 1x and 16x not tested
    assert retention_16x({"accuracy_L256": 0.0, "accuracy_L4096": 0.4}, 256) is None


def test_bad_config():
    with pytest.raises(ModelError, match="landmark = 'avg'"):
        ChunkAttnConfig(landmark="avg")
    with pytest.raises(ModelError, match="d_model = 30"):
        ChunkAttnConfig(d_model=30, heads=2)
    with pytest.raises(ModelError, match="train_len = 20: the task needs >= 44"):
        ChunkAttnConfig(train_len=20)
    with pytest.raises(ModelError, match="warm_frac = 1"):
        ChunkAttnConfig(warm_frac=1)
    with pytest.raises(ModelError, match="n_pairs = 5 > n_keys = 4"):
        ChunkAttnConfig(n_pairs=5)
    with pytest.raises(ModelError, match=r"eval_lengths \(512,\) and eval_samples \(1, 2\)"):
        ChunkAttnConfig(eval_lengths=(512,), eval_samples=(1, 2))
    with pytest.raises(ModelError, match="must be >= 44 tokens"):
        ChunkAttnConfig(eval_lengths=(40,), eval_samples=(1,))
    with pytest.raises(ModelError, match="model 'chunk_sparse_attention' takes datasets "
                                         "needle; got 'digits'"):
        runner.prepare(NAME, dataset="digits")


def test_run_through_runner(toy_gpu_path):
    """A reduced run: every count follows from the settings."""
    over = {**SMALL, "train_len": 64, "warm_len": 48, "steps": 3, "batch": 4, "warmup": 1,
            "eval_lengths": (64, 128, 1024), "eval_samples": (4, 2, 3)}
    run = runner.run(NAME, profile=toy_gpu_path, overrides=over)
    # 3 steps x 4 sequences; one scope per test length with its sequence count
    assert run.ledger.samples() == {"train": 12, "infer/L64": 4, "infer/L128": 2,
                                    "infer/L1024": 3}
    assert run.ledger.uncounted() == {}
    m = run.metrics
    for length, n in ((64, 4), (128, 2), (1024, 3)):
        answers = 4 * n                                       # 4 queries per sequence
        for key in ("accuracy", "recall"):
            assert (answers * m[f"{key}_L{length}"]).is_integer()
    # 16 x 64 = 1024 is tested: retention = accuracy at 1024 / at 64 (when that is not 0)
    if m["accuracy_L64"]:
        assert m["retention_16x"] == m["accuracy_L1024"] / m["accuracy_L64"]
    # parameters, d 16, d_ff 32, vocab 41, S 8: embedding 41 x 16 = 656; a block = 2 norms
    # 32 + qkv 768 + out 256 + MLP (16 x 32 + 32) + (32 x 16 + 16) = 2128; the encoder =
    # norm 16 + 9 positions x 16 = 144 + one block 2128 + out norm 16 + CLS 16 + w_lmk 256
    # + w_kv 512 = 3088; HSA = 2 norms 32 + w_r, w_q, w_o 768 + MLP 1072 = 1872; final
    # norm 16 + head 656: 656 + 2128 + 3088 + 1872 + 16 + 656 = 8416
    assert m["parameters"] == 8416
    assert sum(v.size for v in run.trained.arrays.values()) == 8416    # what a run file keeps
    assert math.isfinite(m["train_loss"]) and run.traces["train_loss"].kind == "curve"
    assert len(run.traces["train_loss"].data) == 1             # logged at the last step
    assert run.config["steps"] == 3 and run.facts["vocab"] == 41


@pytest.mark.slow
def test_full_training_generalises_to_16x(toy_gpu_path):
    """The paper's claim at small scale (minutes): the full preset's training at 512 tokens
    (the old quick run), retrieval holds at 8192."""
    run = runner.run(NAME, profile=toy_gpu_path, preset="full",
                     overrides={"eval_lengths": (512, 2048, 8192),
                                "eval_samples": (128, 64, 32)})
    m = run.metrics
    assert m["accuracy_L512"] >= 0.6                  # chance is 0.25
    assert m["retention_16x"] >= 0.8
    assert run.ledger.samples()["train"] == 500 * 32
    # every op of training and inference has a cost formula
    assert run.ledger.uncounted() == {}


@pytest.mark.slow
def test_study_at_the_quick_preset(toy_gpu_path):
    """The comparison (six runs at the quick preset, minutes): one run per variant with its
    override, and the summary's checks over them."""
    study = runner.study(NAME, preset="quick", profiles={"gpu": toy_gpu_path})
    assert sorted(study.runs) == sorted(["hsa", "meanpool", "no_cls", "standard_residual",
                                         "dense", "full"])
    assert study.runs["dense"].config["top_k"] == 16                  # 256 / 16 chunks
    assert study.runs["full"].config["arch"] == "full"
    assert study.summary["train_len"] == 256
    assert set(study.summary["checks"]) == {
        "hsa_keeps_80pct_at_16x", "full_collapses_at_16x", "meanpool_worse_at_16x",
        "no_cls_worse_at_16x", "standard_residual_worse_at_16x", "dense_worse_at_16x"}
