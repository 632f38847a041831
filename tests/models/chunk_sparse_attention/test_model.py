"""Chunk sparse attention's networks (model.py): shapes, causality, selection, the naive
twin."""
import math

import pytest
import torch

import sim
from models.chunk_sparse_attention.card import ChunkAttnConfig
from models.chunk_sparse_attention.data import NeedleTask
from models.chunk_sparse_attention.model import (
    build,
    causal_attention,
    select_chunks,
    sliding_window_attention,
)

SMALL = dict(d_model=16, heads=2, d_ff=32, window=4, chunk=8, top_k=2)


@pytest.fixture
def device(toy_gpu_path):
    """A fresh engine for the toy GPU profile per call (each model its own ledger)."""
    return lambda: sim.device(toy_gpu_path)


def _net(**kw):
    """A small network in float64 with every weight jittered: the zero-initialised encoder
    outputs would otherwise give all chunks the same landmark (ties in top-K)."""
    net = build(ChunkAttnConfig(**{**SMALL, **kw})).double()
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in net.parameters():
            p += 0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype)
    return net.eval()


def _tokens(n, length, seed=0, vocab=None):
    vocab = vocab or NeedleTask().vocab
    return torch.randint(0, vocab, (n, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("arch", ["hsa", "full"])
def test_shapes(arch):
    net = _net(arch=arch)
    tok = _tokens(3, 50)
    assert net(tok).shape == (3, 50, NeedleTask().vocab)
    q = torch.tensor([[10, 49], [0, 20], [33, 33]])
    out = net(tok, q)
    assert out.shape == (3, 2, NeedleTask().vocab)
    # the query-only path is exactly the full forward at those rows
    full = net(tok)
    assert torch.allclose(out, full.gather(1, q[..., None].expand(-1, -1, full.shape[-1])),
                          atol=1e-12)


def test_memory_shapes():
    net = _net()
    x = torch.randn(2, 37, 16, dtype=torch.double)    # 4 complete chunks of 8, 5 tokens left
    lmk, k, v = net.encoder(x)
    assert lmk.shape == (2, 2, 4, 8) and k.shape == v.shape == (2, 2, 4, 8, 8)


@pytest.mark.parametrize("arch,landmark", [("hsa", "cls"), ("hsa", "meanpool"), ("full", "cls")])
def test_causal(arch, landmark):
    """Logits at t do not change when any token after t changes."""
    net = _net(arch=arch, landmark=landmark)
    tok = _tokens(1, 64)
    base = net(tok)
    for t in (0, 7, 8, 15, 16, 40, 62):
        alt = tok.clone()
        alt[0, t + 1:] = (alt[0, t + 1:] + 1) % NeedleTask().vocab
        changed = net(alt)
        assert torch.allclose(base[0, :t + 1], changed[0, :t + 1], atol=1e-12), t
        assert not torch.allclose(base[0, t + 1:], changed[0, t + 1:])


def test_selection_masks_own_and_future_chunks():
    """Only chunks ending at or before t compete; missing chunks get weight 0."""
    g = torch.Generator().manual_seed(1)
    qr, lmk = torch.randn(2, 3, 40, 4, generator=g), torch.randn(2, 3, 5, 4, generator=g)
    pos = torch.arange(40).expand(2, 40)
    idx, w = select_chunks(qr, lmk, pos, chunk=8, top_k=3)
    n_valid = (pos // 8).clamp(max=3)[:, None, :]           # chunks complete before t, capped at K
    used = w > 0
    assert torch.equal(used.sum(-1), n_valid.expand(2, 3, 40))
    assert bool(((idx + 1) * 8 <= pos[:, None, :, None])[used].all())
    assert torch.allclose(w.sum(-1)[n_valid.expand(2, 3, 40) > 0], torch.ones(1))
    # kept = brute-force top-K of the valid scores
    s = (qr @ lmk.transpose(-1, -2)) / 2.0
    for b, h, t in [(0, 0, 39), (1, 2, 20), (0, 1, 17)]:
        valid = [c for c in range(5) if (c + 1) * 8 <= t]
        best = sorted(valid, key=lambda c: -float(s[b, h, t, c]))[:3]
        assert sorted(idx[b, h, t][w[b, h, t] > 0].tolist()) == sorted(best)


def test_topk_picks_needle_chunk():
    """Constructed landmarks: the query's key direction is in chunk 3's landmark only;
    chunk 6 matches even better but ends after the query, so it must not be chosen."""
    d = 8
    key = torch.zeros(d)
    key[2] = 1.0
    lmk = torch.randn(1, 1, 8, d, generator=torch.Generator().manual_seed(0)) * 0.1
    lmk[0, 0, 3] += 5 * key
    lmk[0, 0, 6] += 9 * key
    qr = (3 * key).view(1, 1, 1, d)
    idx, w = select_chunks(qr, lmk, torch.tensor([[50]]), chunk=8, top_k=2)   # chunks 0..5 valid
    assert int(idx[0, 0, 0, 0]) == 3 and float(w[0, 0, 0, 0]) > 0.99
    idx, _ = select_chunks(qr, lmk, torch.tensor([[63]]), chunk=8, top_k=2)   # now 6 is complete
    assert int(idx[0, 0, 0, 0]) == 6


def test_hsa_equals_naive_loop():
    """Batched gather HSA == a per-token, per-chunk loop of the digest's equations."""
    net = _net(top_k=3)
    B, T, S, h, d = 2, 45, 8, 2, 16
    tok = _tokens(B, T, seed=3)
    with torch.no_grad():
        logits = net(tok)
        x = net.lower(net.emb(tok))
        lmk, K, V = net.encoder(x)
        up = net.upper
        xn = up.norm(x)
        qr, q = up.w_r(xn).view(B, T, h, d // h), up.w_q(xn).view(B, T, h, d // h)
        out = torch.zeros(B, T, h, d // h, dtype=torch.double)
        for b in range(B):
            for t in range(T):
                for hh in range(h):
                    sc = sorted(((float(qr[b, t, hh] @ lmk[b, hh, c]) / math.sqrt(d // h), c)
                                 for c in range(T // S) if (c + 1) * S <= t), reverse=True)[:3]
                    if not sc:
                        continue
                    ws = torch.softmax(torch.tensor([s for s, _ in sc], dtype=torch.double), 0)
                    for wi, (_, c) in zip(ws, sc, strict=True):
                        p = torch.softmax(K[b, hh, c] @ q[b, t, hh] / math.sqrt(d // h), 0)
                        out[b, t, hh] += wi * (p @ V[b, hh, c])
        u = up.w_o(out.reshape(B, T, d))
        ref = net.head(net.norm(x + up.mlp(up.norm2(x + u))))          # bypassing residual
    err = (logits - ref).abs().amax(-1)
    assert torch.allclose(logits, ref, atol=1e-10), err


def test_standard_residual_differs_only_by_u():
    bypass, standard = _net(), _net(residual="standard")
    tok = _tokens(1, 40)
    assert not torch.allclose(bypass(tok), standard(tok))


def test_window_longer_than_the_sequence_is_causal_attention():
    # window = 100000 at T = 64 built (B, h, 1, 1e5, 2e5) scores: a 320 GB allocation that
    # crashed the run; a window >= T sees every earlier position, as plain causal attention
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 10, 4, generator=g, dtype=torch.float64) for _ in range(3))
    wide = sliding_window_attention(q, k, v, 100000)
    assert torch.equal(wide, sliding_window_attention(q, k, v, 10))
    torch.testing.assert_close(wide, causal_attention(q, k, v, torch.arange(10).expand(2, 10)))
