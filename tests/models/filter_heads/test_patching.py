"""Filter heads' patching (patching.py): query patching, the causality metric, the mask
search, its counts, input errors."""
import numpy as np
import pytest
import torch

import sim
from models.filter_heads import data, patching
from models.filter_heads.card import FilterLMConfig
from models.filter_heads.model import FilterLM, Hook, TrainedLM
from models.shared.training import seeded
from sim.errors import ModelError


@pytest.fixture
def tiny(toy_gpu_path):
    """Untrained 2-layer, 2-head models (the machinery tests need no training)."""
    def make(seed=0, **kw) -> TrainedLM:
        cfg = FilterLMConfig(n_layer=2, n_head=2, d_model=16, d_mlp=32, seed=seed, **kw)
        dev = sim.device(toy_gpu_path)
        with seeded(seed):
            model = dev.compile(FilterLM(cfg)).eval()
        return TrainedLM(model, dev)
    return make


def _same_shape_pairs(seed=1, b=8):
    return data.counterfactual_pairs(np.random.default_rng(seed), b, 5, 5, "comma", "comma")


def test_patching_all_heads_reproduces_donor_and_none_leaves_base(tiny):
    tr = tiny()
    pairs = _same_shape_pairs()
    with torch.no_grad():
        donor_logits, base_logits = tr.logits(pairs.src), tr.logits(pairs.dest)
        on = tr.device.torch_device   # head masks on the model's device, as its states
        ones, zeros = torch.ones(2, 2, device=on), torch.zeros(2, 2, device=on)
        # q, k and v of every head at every position: the destination run computes exactly
        # the donor's attention, and the last token (same word) then carries the donor state
        states = {s: (patching.cache_states(tr, pairs.src, s, positions=None), ones)
                  for s in ("q", "k", "v")}
        full = tr.logits(pairs.dest, Hook(None, patch=states))
        # every head's output at the last token: the donor's last-token residual stream
        z = patching.patched_logits(tr, pairs.dest, patching.cache_states(tr, pairs.src, "z"),
                                    ones, "z")
        none = patching.patched_logits(tr, pairs.dest, patching.cache_states(tr, pairs.src),
                                       zeros, "q")
        part = patching.patched_logits(tr, pairs.dest, patching.cache_states(tr, pairs.src),
                                       tr.device.tensor([[0.0, 0.0], [1.0, 0.0]]), "q")
    assert not torch.allclose(donor_logits, base_logits, atol=1e-3)
    torch.testing.assert_close(full, donor_logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(z, donor_logits, rtol=0, atol=1e-5)
    assert torch.equal(full.argmax(1), donor_logits.argmax(1))
    assert torch.equal(none, base_logits)
    assert not torch.allclose(part, base_logits, atol=1e-4)   # one head's query does move it


def test_causality_metric_on_constructed_logits():
    opts = np.array([[40, 41, 42], [40, 41, 42], [50, 51, 52], [50, 51, 52]])
    logits = torch.zeros(4, 60)
    logits[0, 41] = 2.0           # row 0 picks 41 (target)
    logits[1, 40] = 1.0           # row 1 picks 40 (target is 42: miss)
    logits[2, 52] = 3.0           # row 2 picks 52 (target)
    logits[3, 51] = 1.0
    logits[3, 7] = 9.0            # a non-option token outranks everything: ignored
    target = np.array([41, 42, 52, 51])
    assert patching.causality(logits, opts, target) == 0.75
    clean = torch.zeros(4, 60)
    assert patching.delta_logit(logits, clean, target) == pytest.approx((2 + 0 + 3 + 1) / 4)
    with pytest.raises(ModelError, match=r"rows \[1\] are not"):
        patching.causality(logits, opts, np.array([41, 99, 52, 51]))
    with pytest.raises(ModelError, match=r"target has shape \(3,\), expected \(4,\)"):
        patching.causality(logits, opts, target[:3])
    with pytest.raises(ModelError, match="option tokens span 40..80, expected 0..59"):
        patching.option_logits(logits, opts + np.array([[0, 0, 28]] * 4))


def _silenced(tiny):
    tr = tiny()
    d_head = 8
    with torch.no_grad():   # layer 1, head 0 writes nothing: its query cannot matter
        tr.model.blocks[1].attn.proj.weight[:, :d_head] = 0.0
    return tr


def test_mask_search_prunes_heads_without_effect(tiny):
    tr = _silenced(tiny)
    cfg = patching.MaskSearchConfig(n_pairs=64, epochs=2, lr=0.2, lam=0.05)
    heads, mask, hist = patching.search_mask(tr, cfg)
    assert mask.shape == (2, 2) and mask.min() >= 0 and mask.max() <= 1 + cfg.eps
    # layer 0's query at the last token reads only that token's embedding (the same word
    # in both prompts), so patching it changes nothing; head (1, 0) has no output. Only
    # the L1 term acts on them: 8 AdamW steps of ~lr = 0.2 drive them from 1 to 0.
    assert np.all(mask[0] == 0) and mask[1, 0] == 0
    assert set(heads) <= {(1, 1)} and heads == [
        (layer, h) for layer, h in zip(*np.nonzero(mask > .5), strict=True)]
    assert len(hist) == 2
    # 64 pairs in batches of 16 = 4 steps per epoch, re-used every epoch: 2 x 4 x 16
    assert tr.device.ledger.samples() == {"locate": 128}
    # each epoch runs the same pairs through the same shapes: the second epoch costs
    # exactly what the first did (the MACs do not depend on the mask's values)
    one = _silenced(tiny)
    patching.search_mask(one, patching.MaskSearchConfig(n_pairs=64, epochs=1, lr=0.2,
                                                        lam=0.05))
    macs_one = one.device.ledger.total_ops("locate")["mac_fp32"]
    assert tr.device.ledger.total_ops("locate")["mac_fp32"] == 2 * macs_one > 0
    # a huge L1 weight switches every head off
    off, _, _ = patching.search_mask(tr, patching.MaskSearchConfig(
        n_pairs=32, epochs=1, lr=1.0, lam=100.0))
    assert off == []


def test_bad_inputs(tiny):
    tr = tiny()
    with pytest.raises(ModelError, match=r"head \(2, 0\): expected \(layer, head\)"):
        patching.head_mask(tr, [(2, 0)])
    pairs = _same_shape_pairs()
    donor = patching.cache_states(tr, pairs.src)
    with pytest.raises(ModelError, match=r"head mask has shape \(3, 2\), expected \(2, 2\)"):
        patching.patched_logits(tr, pairs.dest, donor, torch.ones(3, 2))
    with pytest.raises(ModelError, match="patch site 'x'"):
        patching.cache_states(tr, pairs.src, "x")
    with pytest.raises(ModelError, match=r"tokens have shape \(1, 41\)"):
        tr.model(torch.zeros(1, 41, dtype=torch.int64))
    with pytest.raises(ModelError, match="5 requested but only 3 heads"):
        patching.random_head_sets(np.random.default_rng(0), tr, 5, [(0, 0)], 1)
