"""Tversky projection: naive twin of every reduction, symmetry, drop-in use, exact counts."""
import itertools

import numpy as np
import pytest
import torch
from torch import nn

import sim
from models.tversky.layer import (
    DIFFERENCES,
    INTERSECTIONS,
    SIMILARITIES,
    TverskyProjection,
    intersection,
    tversky_similarity,
)
from models.tversky.layer import _project as _masked
from sim.errors import ModelError


def naive_similarity(x, y, bank, theta, alpha, beta, sim, inter, diff):
    """Per pair and per feature, in float64 Python loops: the digest's definitions."""
    out = np.zeros((len(x), len(y)))
    for i, j in itertools.product(range(len(x)), range(len(y))):
        a, b = x[i], y[j]
        sa, sb = [float(a @ f) for f in bank], [float(b @ f) for f in bank]
        ma = [s if s > 0 else 0.0 for s in sa]
        mb = [s if s > 0 else 0.0 for s in sb]
        ba, bb = [float(s > 0) for s in sa], [float(s > 0) for s in sb]
        ia = sum(m * q for m, q in zip(ma, bb, strict=True))   # a's salience on features b has too
        ib = sum(q * m for q, m in zip(ba, mb, strict=True))
        common = {"product": sum(p * q for p, q in zip(ma, mb, strict=True)),
                  "min": min(ia, ib),
                  "max": max(ia, ib), "mean": (ia + ib) / 2, "gmean": np.sqrt(ia * ib),
                  "softmin": -np.logaddexp(-ia, -ib)}[inter]

        def minus(m1, b2, i1, i2):
            base = sum(m * (1 - q) for m, q in zip(m1, b2, strict=True))
            return base + ((i1 - i2) if (diff == "substractmatch" and i1 > i2) else 0.0)
        a_only, b_only = minus(ma, bb, ia, ib), minus(mb, ba, ib, ia)
        if sim == "contrast":
            out[i, j] = theta * common - alpha * a_only - beta * b_only
        else:
            out[i, j] = common / (common + alpha * a_only + beta * b_only + 1)
    return out


@pytest.mark.parametrize("sim,inter,diff", list(itertools.product(SIMILARITIES, INTERSECTIONS,
                                                                   DIFFERENCES)))
def test_vectorised_equals_naive(sim, inter, diff):
    g = torch.Generator().manual_seed(1)
    x, y, bank = (torch.randn(5, 3, generator=g, dtype=torch.float64),
                  torch.randn(4, 3, generator=g, dtype=torch.float64),
                  torch.randn(6, 3, generator=g, dtype=torch.float64))
    got = tversky_similarity(x, y, bank, 1.3, 0.7, 0.2, similarity=sim,
                             intersection_reduction=inter, difference_reduction=diff)
    want = naive_similarity(x.numpy(), y.numpy(), bank.numpy(), 1.3, 0.7, 0.2, sim, inter, diff)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-9, atol=1e-12)


def test_symmetry_only_when_alpha_equals_beta():
    g = torch.Generator().manual_seed(2)
    x, bank = torch.randn(6, 4, generator=g), torch.randn(8, 4, generator=g)
    s = tversky_similarity(x, x, bank, 1.0, 0.5, 0.5)
    torch.testing.assert_close(s, s.T)
    a = tversky_similarity(x, x, bank, 1.0, 0.9, 0.1)
    assert (a - a.T).abs().max() > 1e-3


def test_drop_in_shapes_gradients_and_parameters():
    layer = TverskyProjection(8, 5, 3, seed=0)
    assert layer(torch.randn(2, 7, 8)).shape == (2, 7, 5)          # like nn.Linear
    assert layer(torch.randn(8)).shape == (5,)
    wide = TverskyProjection(8, 5, 3, dtype=torch.float64)                # nn.Linear's kwargs
    assert wide(torch.randn(4, 8, dtype=torch.float64)).dtype == torch.float64
    # a signed bank: with the official U(0, 1) bank and prototypes every prototype has every
    # feature at the start, so the x-only term (alpha's gradient) is exactly zero there
    torch.manual_seed(0)
    bank = nn.Parameter(torch.randn(6, 8))
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), TverskyProjection(8, 3, feature_bank=bank))
    net(torch.randn(10, 4)).sum().backward()
    tl = net[2]
    for p in (tl.feature_bank, tl.prototypes, tl.theta, tl.alpha, tl.beta):
        assert p.grad is not None and p.grad.abs().sum() > 0
    # P d + K d + 3 = 5*8 + 3*8 + 3
    assert sum(p.numel() for p in layer.parameters()) == 67
    shared = TverskyProjection(8, 4, feature_bank=layer.feature_bank)  # one bank, two layers
    both = nn.ModuleList([layer, shared])
    assert sum(p.numel() for p in both.parameters()) == 67 + 4 * 8 + 3


def test_ledger_counts_exact(toy_gpu_path):
    n, d, k, p = 7, 8, 3, 5
    dev = sim.device(toy_gpu_path)
    layer = dev.compile(TverskyProjection(d, p, k, seed=0))
    dev.run(layer, torch.randn(n, d))
    # projections (n + p) K d, then intersection, x-only and prototype-only products: 3 n K P
    assert dev.ledger.total_ops("infer")["mac_fp32"] == (n + p) * k * d + 3 * n * k * p
    assert dev.ledger.uncounted() == {}


def test_bad_layer_arguments():
    layer = TverskyProjection(4, 2, 3)
    with pytest.raises(ModelError, match=r"x has shape \(5, 3\), expected \(\*, 4\)"):
        layer(torch.zeros(5, 3))
    with pytest.raises(ModelError, match="intersection_reduction = 'median'"):
        TverskyProjection(4, 2, intersection_reduction="median")
    with pytest.raises(ModelError, match="difference_reduction"):
        TverskyProjection(4, 2, difference_reduction="xor")
    with pytest.raises(ModelError, match="bank_size = 0"):
        TverskyProjection(4, 2, 0)
    with pytest.raises(ModelError, match=r"feature_bank has shape \(3, 5\), expected \(K, 4\)"):
        TverskyProjection(4, 2, feature_bank=nn.Parameter(torch.zeros(3, 5)))
    with pytest.raises(ModelError, match=r"prototypes has shape \(3, 4\), expected \(2, 4\)"):
        TverskyProjection(4, 2, prototypes=nn.Parameter(torch.zeros(3, 4)))


def test_gmean_passes_no_nan_gradient_where_a_pair_shares_nothing():
    # x has only bank feature 0, the prototype only feature 1 (bank = identity): I_a = I_b
    # = 0, so gmean = sqrt(0 * 0) = 0, whose slope 1 / (2 sqrt(0)) = inf times 0 made every
    # gradient NaN (the head run reported alpha = beta = theta = nan)
    x = torch.tensor([[1.0, 0.0]], requires_grad=True)
    protos = torch.tensor([[0.0, 1.0]], requires_grad=True)
    bank = torch.eye(2, requires_grad=True)
    common = intersection(*_masked(x, bank), *_masked(protos, bank), "gmean")
    assert common.item() == 0.0
    common.sum().backward()
    for t in (x, protos, bank):
        assert torch.equal(t.grad, torch.zeros_like(t))
    # a shared feature keeps sqrt's gradient: x = y = (1, 0) gives I_a = I_b = 1, gmean
    # sqrt(I_a I_b) with d/dI_a = I_b / (2 sqrt(I_a I_b)) = 1/2 and dI_a/dx_0 = 1
    x = torch.tensor([[1.0, 0.0]], requires_grad=True)
    y = torch.tensor([[1.0, 0.0]])
    intersection(*_masked(x, torch.eye(2)), *_masked(y, torch.eye(2)), "gmean").sum().backward()
    assert x.grad.tolist() == [[0.5, 0.0]]
