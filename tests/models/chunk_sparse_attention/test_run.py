"""Chunk sparse attention's run (run.py): ledger scaling, seeded training, input errors."""
import pytest
import torch

import sim
from models.chunk_sparse_attention.card import ChunkAttnConfig
from models.chunk_sparse_attention.data import NeedleTask
from models.chunk_sparse_attention.run import ChunkAttnLM
from sim.errors import ModelError

SMALL = dict(d_model=16, heads=2, d_ff=32, window=4, chunk=8, top_k=2)


@pytest.fixture
def device(toy_gpu_path):
    """A fresh engine for the toy GPU profile per call (each model its own ledger)."""
    return lambda: sim.device(toy_gpu_path)


def _tokens(n, length, seed=0, vocab=None):
    vocab = vocab or NeedleTask().vocab
    return torch.randint(0, vocab, (n, length), generator=torch.Generator().manual_seed(seed))


def _forward_macs(device, arch, length):
    cfg = ChunkAttnConfig(**{**SMALL, "arch": arch})
    lm = ChunkAttnLM(cfg, device())
    with torch.no_grad(), lm.device.count("infer"):
        lm.net.eval()(_tokens(1, length))
    assert lm.device.ledger.uncounted() == {}
    return lm.device.ledger.total_ops("infer")["mac_fp32"]


def test_ledger_macs_sparse_vs_full(device):
    """Second differences of MACs(L) isolate the L^2 term: full attention pays
    2 d L^2 (QK^T and AV over every earlier key), HSA only d L^2 / S (landmark scores);
    everything else in HSA (SWA, encoder, K S keys read per token) is linear in L."""
    d, S = SMALL["d_model"], SMALL["chunk"]
    L = 64
    for arch, quad in (("full", 2 * d), ("hsa", d / S)):
        m1, m2, m3 = (_forward_macs(device, arch, k * L) for k in (1, 2, 3))
        assert m3 - 2 * m2 + m1 == 2 * quad * L * L, arch
    # per-token MACs: full grows 2d per extra token of context, HSA d/S: 2S = 16x less here
    # (SMALL's chunk S = 8; 32x at the card's default S = 16)
    full = [_forward_macs(device, "full", k * L) / (k * L) for k in (1, 4)]
    hsa = [_forward_macs(device, "hsa", k * L) / (k * L) for k in (1, 4)]
    assert full[1] - full[0] == 2 * d * 3 * L
    assert hsa[1] - hsa[0] == d / S * 3 * L


def _fit(device, steps, **kw):
    # warm_frac = 0: every step trains at train_len, so every step has the same shapes
    cfg = ChunkAttnConfig(**SMALL, train_len=64, warm_frac=0.0, steps=steps, batch=4,
                          warmup=1, **kw)
    return ChunkAttnLM(cfg, device()).fit()


def test_fit_is_seeded_and_counts_training(device):
    a, b = _fit(device, 3), _fit(device, 3)
    for pa, pb in zip(a.net.parameters(), b.net.parameters(), strict=True):
        assert torch.equal(pa, pb)
    c = _fit(device, 3, seed=1)
    assert not torch.equal(next(a.net.parameters()), next(c.net.parameters()))
    assert a.device.ledger.samples() == {"train": 12}            # 3 steps x batch 4
    # every step has the same shapes (64 tokens, batch 4), so the MACs of 3 steps are
    # exactly 3 x those of one step (forward, backward and Adam's update alike)
    one = _fit(device, 1).device.ledger.total_ops("train")
    three = a.device.ledger.total_ops("train")
    assert three["mac_fp32"] == 3 * one["mac_fp32"] and one["mac_fp32"] > 0
    assert a.device.ledger.uncounted() == {}
    r = a.evaluate(128, n=4, batch=2)
    # 4 sequences x 4 queries = 16 answers: both rates are multiples of 1/16
    assert (16 * r["accuracy"]).is_integer() and (16 * r["recall"]).is_integer()
    assert 0.0 <= r["accuracy"] <= 1.0 and 0.0 <= r["recall"] <= 1.0
    assert a.device.ledger.samples()["infer/L128"] == 4
    assert "recall" not in _fit(device, 1, arch="full").evaluate(128, n=2)


def test_bad_inputs(device):
    lm = ChunkAttnLM(ChunkAttnConfig(**SMALL), device())
    with pytest.raises(ModelError, match=r"tokens have shape \(5,\)"):
        lm.logits(torch.zeros(5, dtype=torch.int64))
    with pytest.raises(ModelError, match="token ids span"):
        lm.logits(torch.full((1, 10), 999))
    with pytest.raises(ModelError, match=r"q_pos has shape \(2, 1\), expected \(1, P\)"):
        lm.logits(torch.zeros(1, 10, dtype=torch.int64), torch.zeros(2, 1, dtype=torch.int64))
    with pytest.raises(ModelError, match="q_pos spans 0..10"):
        lm.logits(torch.zeros(1, 10, dtype=torch.int64), torch.tensor([[0, 10]]))
    with pytest.raises(ModelError, match="length = 20"):
        lm.evaluate(20, n=1)
    with pytest.raises(ModelError, match="n = 0"):
        lm.evaluate(128, n=0)
    with pytest.raises(ModelError, match="vocabulary"):
        ChunkAttnLM(ChunkAttnConfig(**SMALL), device(), task=NeedleTask(n_filler=8))


def test_fit_to_target_stops_at_the_first_check(device):
    """target = 0: the first validation check (step 10: the warm-up on short sequences
    ends at 0.5 x 16 = 8 steps, checks every log_every = 5 steps) meets it, so training
    stops there; target > 1 cannot be met, so it runs to the cap (16 steps, checks at 10,
    15 and the last step 16)."""
    cfg = ChunkAttnConfig(**SMALL, steps=16, batch=4, warmup=2, train_len=64, warm_len=48,
                          warm_frac=0.5)
    lm = ChunkAttnLM(cfg, device()).fit(log_every=5, target=0.0, val_n=8)
    assert lm.steps_done == 10 and [h["step"] for h in lm.val_history] == [10]
    lm = ChunkAttnLM(cfg, device()).fit(log_every=5, target=1.01, val_n=8)
    assert lm.steps_done == 16 and [h["step"] for h in lm.val_history] == [10, 15, 16]
