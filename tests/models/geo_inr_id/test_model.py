"""Encoders, probes and the map helpers: grid-cell periodicity, seeding, R^2, ridge on a
linear target, rasters and the longitude spectrum, the uncounted stand-in."""
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import TOY_GPU

import sim
from models.geo_inr_id import model as M
from sim.errors import ModelError


def cfg(**kw):
    base = dict(family="sh", resolution=3.0, grid_base=1, width=16, embed=8, seed=0)
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize("family,res,width", [("sh", 3, 16), ("rff", 4, 256),
                                              ("grid", 5, 20), ("siren", 8, 3)])
def test_feature_widths_and_embedding_shape(family, res, width):
    enc = M.build_encoder(cfg(family=family, resolution=float(res)))
    ll = torch.tensor([[0.1, 0.2], [-2.0, -1.0], [3.0, 1.4]])
    # sh: (3 + 1)^2 = 16 harmonics; rff: cos and sin of 128 projections; grid: sin/cos of
    # lon and lat at 5 frequencies = 20; siren: the unit vector
    assert enc.features(ll).shape == (3, width)
    assert enc(ll).shape == (3, 8)


def test_grid_cell_encoder_repeats_every_base_period():
    enc = M.build_encoder(cfg(family="grid", resolution=4.0, grid_base=4))
    ll = torch.tensor([[-3.0, 0.3], [-1.0, -0.7], [0.5, 1.1]], dtype=torch.float64)
    enc = enc.double()
    shifted = ll + torch.tensor([2 * math.pi / 4, 0.0], dtype=torch.float64)
    torch.testing.assert_close(enc(shifted), enc(ll), atol=1e-12, rtol=0)


def test_same_seed_same_encoder_and_errors():
    a, b = M.build_encoder(cfg(family="rff", seed=3)), M.build_encoder(cfg(family="rff", seed=3))
    for pa, pb in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)
    with pytest.raises(ModelError, match="family = 'cnn'; expected one of sh, rff, grid"):
        M.LocationEncoder("cnn", 1.0)
    with pytest.raises(ModelError, match=r"sh encoder: degree L = 2.5; expected an integer"):
        M.LocationEncoder("sh", 2.5)


def test_r2_and_ridge_on_a_linear_target():
    y = torch.tensor([[1.0, 2.0], [3.0, 0.0], [5.0, 4.0]])
    assert torch.equal(M.r2_per_column(y, y), torch.ones(2))
    assert torch.allclose(M.r2_per_column(y.mean(0).expand(3, 2), y), torch.zeros(2))
    g = torch.Generator().manual_seed(0)
    z = torch.randn(400, 6, generator=g)
    t = z @ torch.randn(6, 3, generator=g) + 2.0                    # exactly linear
    dev = sim.device(TOY_GPU)
    r2 = M.ridge_probe(z, t, torch.arange(200), torch.arange(200, 400), 1e-6, dev)
    assert r2 == pytest.approx(1.0, abs=1e-4)
    # the solve of the 7 x 7 system (6 features + bias), 3 targets: LU (2 x 7^3) // 3 =
    # 686 // 3 = 228 (floored from 228.67) + triangular solves 2 x 7^2 x 3 = 294: 522
    assert dev.ledger.total_ops("probe/ridge/solve") == {"flop_fp32": 228 + 294}


def test_map_raster_averages_per_cell():
    ll = np.array([[-math.pi + 0.01, math.pi / 2 - 0.01], [-math.pi + 0.02, math.pi / 2 - 0.02],
                   [0.01, -0.01]])
    r = M.map_raster(ll, np.array([1.0, 3.0, 7.0]), 2, 4)
    # points 0 and 1 in the north-west cell (row 0, col 0); point 2 at lon 0+, lat 0- in
    # row 1, col 2
    assert r[0, 0] == 2.0 and r[1, 2] == 7.0 and np.isnan(r).sum() == 6


def test_lon_spectrum_peak_finds_the_period():
    ll = np.random.default_rng(0).uniform(-math.pi, math.pi, (3000, 2))
    peak, power = M.lon_spectrum_peak(ll, 3.0 + np.cos(4 * ll[:, 0]) + 0.1 * np.sin(ll[:, 0]))
    assert peak == 4 and power.shape == (37,)


def test_uncounted_stand_in_counts_nothing():
    dev = sim.device(TOY_GPU)
    un = M.Uncounted(dev)
    lin = un.compile(torch.nn.Linear(3, 2))
    with un.count("x"):
        un.run(lin, un.tensor(np.zeros((4, 3))))
    assert dev.ledger.total_ops() == {} and un.ledger.total_ops() == {}
