"""Filter heads: prompts, patching machinery, causality metric, mask search, counts, errors."""
import numpy as np
import pytest
import torch

import models
from models.filter_heads import patching, simulate, tasks
from models.filter_heads.model import FilterLM, FilterLMConfig, Hook, Trained, train
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

TOY = "tests/data/toy-gpu.toml"


def tiny(seed=0, **kw) -> Trained:
    """An untrained 2-layer, 2-head model (the machinery tests need no training)."""
    cfg = FilterLMConfig(n_layer=2, n_head=2, d_model=16, d_mlp=32, seed=seed, **kw)
    dev = TorchDevice(TOY)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = dev.compile(FilterLM(cfg)).eval()
    return Trained(model, dev)


def test_registered():
    card = models.get("filter_heads")
    assert card.simulate is simulate and set(card.device_kinds) == {"gpu", "cpu"}


def test_prompt_layout():
    t = tasks.template("bullet", "before", 3)
    words = [tasks.VOCAB[i] for i in t.tokens]
    words[t.cat_pos] = "<cat>"
    for p in t.item_pos:
        words[p] = "_"
    assert " ".join(words) == "<bos> Which is <cat> ? Options : \\n - _ \\n - _ \\n - _ . Label"
    assert [tasks.VOCAB[g] for g in t.tags[t.item_pos]] == ["a", "b", "c"]
    assert np.count_nonzero(t.tags) == 3
    assert tasks.VOCAB[tasks.template("comma", "after", 3, "item").tokens[-1]] == "Answer"
    assert [tasks.VOCAB[i] for i in tasks.template("numbered", "after", 4).labels] == \
        ["1", "2", "3", "4"]


def test_batches_have_one_match_and_pairs_are_counterfactual():
    rng = np.random.default_rng(0)
    b = tasks.select_one(rng, 500, 7, "comma", "after")
    cats = tasks.category_of(b.items)
    assert np.all((cats == b.predicate[:, None]).sum(1) == 1)
    assert np.all(cats[np.arange(500), b.answer_slot] == b.predicate)
    assert np.all(np.sort(b.items, 1)[:, 1:] != np.sort(b.items, 1)[:, :-1])  # no repeats
    p = tasks.counterfactual_pairs(rng, 500, 7, 7, "comma", "numbered")
    cd, cs = tasks.category_of(p.dest.items), tasks.category_of(p.src.items)
    assert np.all(p.src.predicate != p.dest.predicate)
    assert np.all((cd == p.src.predicate[:, None]).sum(1) == 1)      # one c_targ
    assert np.all((cd == p.dest.predicate[:, None]).sum(1) == 1)     # one dest answer
    assert np.all((cs == p.src.predicate[:, None]).sum(1) == 1)
    assert np.all(cd[np.arange(500), p.target_slot] == p.src.predicate)
    both = np.concatenate([p.src.items, p.dest.items], 1)              # lists disjoint
    assert np.all(np.sort(both, 1)[:, 1:] != np.sort(both, 1)[:, :-1])
    assert {tasks.VOCAB[t] for t in p.target} <= set(tasks.DIGITS)


def _same_shape_pairs(seed=1, b=8):
    return tasks.counterfactual_pairs(np.random.default_rng(seed), b, 5, 5, "comma", "comma")


def test_patching_all_heads_reproduces_donor_and_none_leaves_base():
    tr = tiny()
    pairs = _same_shape_pairs()
    with torch.no_grad():
        donor_logits, base_logits = tr.logits(pairs.src), tr.logits(pairs.dest)
        ones, zeros = torch.ones(2, 2), torch.zeros(2, 2)
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
                                       torch.tensor([[0.0, 0.0], [1.0, 0.0]]), "q")
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


def test_mask_search_prunes_heads_without_effect():
    tr = tiny()
    d_head = 8
    with torch.no_grad():   # layer 1, head 0 writes nothing: its query cannot matter
        tr.model.blocks[1].attn.proj.weight[:, :d_head] = 0.0
    cfg = patching.MaskSearchConfig(n_pairs=64, epochs=2, lr=0.2, lam=0.05)
    heads, mask, hist = patching.search_mask(tr, cfg)
    assert mask.shape == (2, 2) and mask.min() >= 0 and mask.max() <= 1 + cfg.eps
    # layer 0's query at the last token reads only that token's embedding (the same word
    # in both prompts), so patching it changes nothing; head (1, 0) has no output. Only
    # the L1 term acts on them: 8 AdamW steps of ~lr = 0.2 drive them from 1 to 0.
    assert np.all(mask[0] == 0) and mask[1, 0] == 0
    assert set(heads) <= {(1, 1)} and heads == [(l, h) for l, h in zip(*np.nonzero(mask > .5))]
    assert len(hist) == 2
    assert tr.device.ledger.total_ops("locate")["mac_fp32"] > 0
    # a huge L1 weight switches every head off
    off, _, _ = patching.search_mask(tr, patching.MaskSearchConfig(
        n_pairs=32, epochs=1, lr=1.0, lam=100.0))
    assert off == []


def test_forward_counts_exact_macs():
    tr = tiny()
    b = tasks.select_one(np.random.default_rng(0), 3, 3, "comma", "after")
    B, T, d, dm, V = 3, b.tokens.shape[1], 16, 32, tasks.VOCAB_SIZE
    with tr.device.count("infer", samples=B), torch.no_grad():
        tr.logits(b)
    # per layer: qkv (3 d^2) + out proj (d^2) + MLP (2 d dm) per token; scores and
    # weighted values: 2 x T^2 x d per prompt; head at the last token only: d x V
    want = B * (2 * (T * (4 * d * d + 2 * d * dm) + 2 * T * T * d) + d * V)
    assert tr.device.ledger.total_ops("infer")["mac_fp32"] == want
    assert tr.device.ledger.uncounted() == {}


def test_seeded_training_is_deterministic():
    cfg = FilterLMConfig(n_layer=1, n_head=2, d_model=16, d_mlp=16, steps=3, batch_size=4)
    a, b = train(cfg, TorchDevice(TOY)), train(cfg, TorchDevice(TOY))
    for pa, pb in zip(a.model.parameters(), b.model.parameters()):
        assert torch.equal(pa, pb)


def test_bad_inputs():
    with pytest.raises(ModelError, match="list format 'csv'"):
        tasks.template("csv", "after", 3)
    with pytest.raises(ModelError, match="question order 'middle'"):
        tasks.select_one(np.random.default_rng(0), 2, 3, "comma", "middle")
    with pytest.raises(ModelError, match=r"n = 8: expected 3..7"):
        tasks.select_one(np.random.default_rng(0), 2, 8)
    with pytest.raises(ModelError, match="d_model = 30 must split"):
        FilterLMConfig(d_model=30, n_head=4)
    with pytest.raises(ModelError, match="steps = 0"):
        FilterLMConfig(steps=0)
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
    with pytest.raises(ModelError, match="dataset 'digits' is not supported"):
        simulate(profile=TOY, dataset="digits")
