"""The character GPT with Tversky projections: exact parameter counts, shapes, errors."""
import pytest
import torch

from models.tversky.gpt import CharGPT, CharGPTConfig
from sim.errors import ModelError


def test_char_gpt_parameter_counts_exact():
    v, t, d, k, layers = 50, 16, 32, 24, 2
    emb = v * d + t * d
    attn = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d      # LN, qkv, out, LN
    mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)
    linear = CharGPT(CharGPTConfig(vocab=v, block=t, width=d, bank_size=k))
    assert linear.n_parameters == emb + layers * (attn + mlp) + 2 * d   # tied head: 0 more
    # Tversky: each MLP stack -> d x d prototypes + 3 scalars; one shared bank K d; the head
    # adds only its 3 scalars (prototypes = token embeddings)
    tv = CharGPT(CharGPTConfig(vocab=v, block=t, width=d, bank_size=k, tversky="all"))
    assert tv.n_parameters == emb + layers * (attn + d * d + 3) + 2 * d + k * d + 3
    head = CharGPT(CharGPTConfig(vocab=v, block=t, width=d, bank_size=k, tversky="head"))
    assert head.n_parameters == linear.n_parameters + k * d + 3
    ids = torch.randint(0, v, (3, t))
    assert tv(ids).shape == (3, t, v) and linear(ids).shape == (3, t, v)
    with pytest.raises(ModelError, match="sequence length 17 exceeds the context 16"):
        tv(torch.zeros(1, 17, dtype=torch.int64))
    with pytest.raises(ModelError, match="tversky = 'mlp'"):
        CharGPTConfig(vocab=v, tversky="mlp")
