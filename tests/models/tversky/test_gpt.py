"""The character GPT with Tversky projections: exact parameter counts, shapes, errors."""
import pytest
import torch

from models.tversky.gpt import BankLinear, CharGPT, CharGPTConfig, train_lm
from models.tversky.layer import TverskyProjection
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


def test_linear_twins_parameter_counts_match():
    """The equal-parameter twin keeps every tensor of the Tversky GPT (bank, prototypes, tied
    head) and lacks only the 3 scalars (theta, alpha, beta) of each Tversky layer."""
    v, t, d, k, layers = 86, 32, 48, 48, 2
    cfg = dict(vocab=v, block=t, width=d, bank_size=k, layers=layers)
    tv = CharGPT(CharGPTConfig(**cfg, tversky="all"))
    twin = CharGPT(CharGPTConfig(**cfg, tversky="bank_linear"))
    plain = CharGPT(CharGPTConfig(**cfg, tversky="linear"))
    # shared by all three: embeddings 86*48 + 32*48 = 5,664; per block LNs 4*48 = 192, qkv
    # 3*48*48 + 3*48 = 7,056, out 48*48 + 48 = 2,352 -> 9,600; final LN 96.
    # Tversky: + per block 48*48 + 3 = 2,307, bank 48*48 = 2,304, head 3
    #   = 5,664 + 2*(9,600 + 2,307) + 96 + 2,304 + 3 = 31,881
    assert tv.n_parameters == 31_881
    # twin: the same minus (2 + 1) * 3 = 9 scalars = 31,872 (0.03% fewer)
    assert twin.n_parameters == 31_872 == tv.n_parameters - 3 * (layers + 1)
    # plain nn.Linear(48, 48, bias=False) per block, no bank: 31,881 - 2,304 - 9 = 29,568
    assert plain.n_parameters == 29_568 == tv.n_parameters - k * d - 3 * (layers + 1)
    ids = torch.randint(0, v, (2, t))
    assert twin(ids).shape == (2, t, v) and plain(ids).shape == (2, t, v)


def test_bank_linear_is_the_linear_map_through_the_bank():
    """BankLinear(x) = x F^T F Pi^T: linear in x (a Tversky layer is not), and with a ReLU
    mask added it would be the Tversky product term; both checked numerically."""
    torch.manual_seed(0)
    d, k, p = 8, 5, 3
    bank = torch.nn.Parameter(torch.randn(k, d))
    layer = BankLinear(d, p, feature_bank=bank)
    x, y = torch.randn(4, d), torch.randn(4, d)
    expected = x @ bank.T @ bank @ layer.prototypes.T
    assert torch.allclose(layer(x), expected, atol=1e-5)
    assert torch.allclose(layer(2 * x - 3 * y), 2 * layer(x) - 3 * layer(y), atol=1e-4)
    tv = TverskyProjection(d, p, feature_bank=bank)
    assert not torch.allclose(tv(2 * x - 3 * y), 2 * tv(x) - 3 * tv(y), atol=1e-2)


def test_train_lm_logs_the_validation_curve():
    """eval_every=2 over 5 steps: PPL before training, after steps 2 and 4, and after 5."""
    v, t = 12, 8
    ids = torch.randint(0, v, (400,), generator=torch.Generator().manual_seed(0))
    model = CharGPT(CharGPTConfig(vocab=v, block=t, width=16, bank_size=8, tversky="bank_linear"))
    run = train_lm(model, ids[:300], ids[300:], steps=5, batch=4, eval_every=2)
    assert [s for s, _ in run.val_curve] == [0, 2, 4, 5]
    assert len(run.train_loss) == 5 and run.val_curve[-1][1] == run.val_ppl
    # an untrained 12-symbol model is near uniform: PPL about 12, certainly within 6-30
    assert 6 < run.val_curve[0][1] < 30
