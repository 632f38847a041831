"""DAVE's parts: raw-pixel MAE target, causal decoders, the learned merge, fusion."""
import pytest
import torch

from models.dave import data as D
from models.dave import model as M
from models.dave.card import DaveConfig

CFG = DaveConfig(width=16, depth=1, heads=2, dec_width=16)


def test_raw_pixel_target_is_the_pixels_and_norm_pix_is_standardised():
    p = torch.rand(3, 5, 64)
    assert torch.equal(M.mae_target(p, False), p)
    t = M.mae_target(p, True)
    assert torch.allclose(t.mean(-1), torch.zeros(3, 5), atol=1e-5)


def test_mae_loss_ignores_visible_patches_of_the_target():
    """With a zero encoder/decoder output the loss is the mean squared pixel over the
    masked patches only: pixels of kept patches never enter it."""
    torch.manual_seed(0)
    mae = M.MAE(M.new_vit(CFG), 8, 1)
    for p in (mae.out.weight, mae.out.bias):
        torch.nn.init.zeros_(p)
    x = torch.rand(2, 64, 64)
    gen = torch.Generator().manual_seed(5)
    loss = mae.loss(x, 0.75, gen)
    order = torch.rand(2, 64, generator=torch.Generator().manual_seed(5)).argsort(1)
    masked = order[:, 16:]                 # 64 * 0.25 = 16 kept
    patches = M.patchify(x, 8)
    want = torch.stack([patches[b, masked[b]].pow(2).mean() for b in range(2)]).mean()
    assert float(loss.detach()) == pytest.approx(float(want), rel=1e-5)


@pytest.mark.parametrize("name", sorted(M.DECODERS))
def test_decoders_are_causal(name):
    torch.manual_seed(0)
    dec = M.DECODERS[name][0](16, 16)
    mem = torch.randn(2, 64, 16)
    seq = torch.randint(0, D.VOCAB, (2, 10))
    a = dec(mem, seq)
    seq2 = seq.clone()
    seq2[:, 6:] = (seq2[:, 6:] + 1) % D.VOCAB
    b = dec(mem, seq2)
    assert a.shape == (2, 10, D.VOCAB)
    assert torch.allclose(a[:, :6], b[:, :6], atol=1e-5)
    assert not torch.allclose(a[:, 6:], b[:, 6:])


def _copies():
    out = []
    for s in range(2):
        torch.manual_seed(s)
        out.append(M.new_vit(CFG).eval())
    return out


def test_merge_starts_as_the_plain_average_and_trains_only_alpha():
    copies = _copies()
    torch.manual_seed(9)
    merged = M.Merged(M.new_vit(CFG), copies)
    params = merged.params()
    for k, v in copies[0].named_parameters():
        avg = 0.5 * (v + dict(copies[1].named_parameters())[k])
        assert torch.allclose(params[k], avg)
    assert [n for n, p in merged.named_parameters() if p.requires_grad] == \
        [n for n, _ in merged.logits.named_parameters(prefix="logits")]
    x = torch.rand(3, 64, 64)
    (merged(x) - copies[0](x)).pow(2).mean().backward()
    assert all(p.grad is not None for p in merged.logits.parameters())


def test_merge_of_identical_copies_is_that_copy():
    c = _copies()[0]
    merged = M.Merged(M.new_vit(CFG), [c, c])
    x = torch.rand(2, 64, 64)
    with torch.no_grad():
        assert torch.allclose(merged(x), c(x), atol=1e-5)


def test_fused_features_concatenate_channels():
    g, s = _copies()
    x = torch.rand(2, 64, 64)
    with torch.no_grad():
        z = M.Fused(g, s)(x)
        assert z.shape == (2, 64, 32)
        assert torch.equal(z[..., :16], g(x)) and torch.equal(z[..., 16:], s(x))
