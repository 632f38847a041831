"""Filter heads' transformer (model.py): exact forward MACs, seeded training, the trained
state as plain data and back."""
import numpy as np
import pytest
import torch

import sim
from models.filter_heads import data
from models.filter_heads.card import FilterLMConfig
from models.filter_heads.model import FilterLM, TrainedLM, accuracy, from_trained, train
from models.shared.training import seeded


@pytest.fixture
def device(toy_gpu_path):
    return lambda: sim.device(toy_gpu_path)


def _tiny(device, seed=0) -> TrainedLM:
    cfg = FilterLMConfig(n_layer=2, n_head=2, d_model=16, d_mlp=32, seed=seed)
    dev = device()
    with seeded(seed):
        model = dev.compile(FilterLM(cfg)).eval()
    return TrainedLM(model, dev)


def test_forward_counts_exact_macs(device):
    tr = _tiny(device)
    b = data.select_one(np.random.default_rng(0), 3, 3, "comma", "after")
    B, T, d, dm, V = 3, b.tokens.shape[1], 16, 32, data.VOCAB_SIZE
    with tr.device.count("infer", samples=B), torch.no_grad():
        tr.logits(b)
    # per layer: qkv (3 d^2) + out proj (d^2) + MLP (2 d dm) per token; scores and
    # weighted values: 2 x T^2 x d per prompt; head at the last token only: d x V
    want = B * (2 * (T * (4 * d * d + 2 * d * dm) + 2 * T * T * d) + d * V)
    assert tr.device.ledger.total_ops("infer")["mac_fp32"] == want
    assert tr.device.ledger.uncounted() == {}


def test_seeded_training_is_deterministic(device):
    cfg = FilterLMConfig(n_layer=1, n_head=2, d_model=16, d_mlp=16, steps=3, batch_size=4,
                         warmup=1)
    a, b = train(cfg, device()), train(cfg, device())
    for pa, pb in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert a.device.ledger.samples() == {"train": 12}          # 3 steps x 4 prompts
    c = train(FilterLMConfig(**{**cfg.__dict__, "seed": 1}), device())
    assert not torch.equal(a.model.emb.weight, c.model.emb.weight)
    # history every max(1, 3 // 20) = 1 step
    assert [h["step"] for h in a.history] == [1, 2, 3]


def test_trained_round_trip(device):
    tr = _tiny(device, seed=4)
    state = tr.trained()
    # per block: 2 LayerNorms (weight, bias) 4 + qkv 1 + proj 1 + 2 MLP linears (weight,
    # bias) 4 = 10, x 2 blocks; the embedding 1, the final LayerNorm 2, the head 1: 24
    assert len(state.arrays) == 24 and state.meta["model"]["d_model"] == 16
    back = from_trained(state, device())
    b = data.select_one(np.random.default_rng(1), 16, 5, "numbered", "before", "item")
    with torch.no_grad():
        assert torch.equal(back.logits(b), tr.logits(b))
    assert accuracy(back, b) == accuracy(tr, b)
