"""Screener's parts, exactly: the volumes, crop pairs, VICReg, the two densities."""
import math

import numpy as np
import pytest
import torch

from models.screener import model as M
from models.screener.card import ScreenerConfig
from models.screener.data import LESIONS, ORGANS, make_volumes
from sim.errors import ModelError


def test_volumes_are_seeded_and_lesions_sit_in_their_organ():
    a = make_volumes(6, (16, 24, 24), contamination=1.0, seed=3)
    b = make_volumes(6, (16, 24, 24), contamination=1.0, seed=3)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.lesion.any(axis=(1, 2, 3)).all()            # contamination 1: every volume
    # x and clean differ only inside the lesion mask (same noise, same anatomy)
    assert np.array_equal(a.x != a.clean, (a.x != a.clean) & a.lesion)
    # a lesion voxel's host organ is one of the lesion kinds' hosts
    hosts = {ORGANS.index(h) for h, _ in LESIONS.values()}
    assert set(np.unique(a.organ[a.lesion])) <= hosts
    none = make_volumes(6, (16, 24, 24), contamination=0.0, seed=3)
    assert not none.lesion.any()
    # lesions have their own generator: at 0 % the same patients, without their lesions
    np.testing.assert_array_equal(none.x, a.clean)
    with pytest.raises(ModelError, match=r"shape = \(16, 24, 22\)"):
        make_volumes(2, (16, 24, 22))


def test_overlap_pairs_name_the_same_volume_voxel():
    gen = torch.Generator().manual_seed(0)
    vols = torch.arange(2 * 16 * 20 * 20, dtype=torch.float32).reshape(2, 1, 16, 20, 20)
    x1, x2, o1, o2 = M.crop_pairs(gen, vols, (8, 12, 12), max_shift=3)
    i, p1, p2 = M.overlap_pairs(gen, o1, o2, (8, 12, 12), 50)
    # every value is unique in vols, so equal values mean the same voxel
    assert torch.equal(M.gather(x1, i, p1), M.gather(x2, i, p2))
    assert ((o1 - o2).abs() <= 3).all()


def test_vicreg_terms():
    # z1 = z2 = +-1 columns, uncorrelated: invariance 0, std 1 (hinge 0), covariance 0
    z = torch.tensor([[1., 1.], [1., -1.], [-1., 1.], [-1., -1.]])
    assert float(M.vicreg_loss(z, z)) == pytest.approx(0.0, abs=1e-3)   # std sqrt(4/3+1e-4)>1
    # collapsed z = 0: var hinge 1 - sqrt(1e-4) = 0.99 per dim, two branches: 25 * 2 * 0.99
    zero = torch.zeros(4, 2)
    assert float(M.vicreg_loss(zero, zero)) == pytest.approx(25 * 2 * 0.99, rel=1e-6)


def test_block_mask_covers_the_asked_ratio():
    m = M.block_mask(torch.Generator().manual_seed(1), 3, (12, 16, 16), ratio=(0.3, 0.5))
    frac = m.mean(dim=(1, 2, 3, 4))
    assert ((frac >= 0.3) & (frac <= 0.5 + 125 / (12 * 16 * 16))).all()   # one 5^3 overshoot
    assert set(m.unique().tolist()) <= {0.0, 1.0}


def test_marginal_gaussian_nll_is_the_standard_normal_at_init():
    dens = M.GaussianDensity(4, 0)
    y = torch.randn(2, 4, 3, 3, 3, generator=torch.Generator().manual_seed(0))
    # mu = 0; logvar = -6 + softplus(0 + 6) = 0.00248 (the smooth floor barely moves 0)
    lv = -6 + math.log1p(math.exp(6))
    want = 0.5 * (y ** 2 * math.exp(-lv) + lv + math.log(2 * math.pi)).sum(1)
    torch.testing.assert_close(dens.nll(y, None), want)


def test_flow_nll_is_change_of_variables():
    torch.manual_seed(0)
    dens = M.FlowDensity(4, 3, k=4, hidden=8)
    for p in dens.parameters():                       # leave the zero init: a real test
        p.data.normal_(0, 0.5)
    c = torch.randn(1, 3, 1, 1, 1)
    y = torch.randn(4)

    def z_of(v):
        h = torch.nn.functional.gelu(dens.ctx(c))
        st = dens.act(h)
        logs, loc = dens.logs + torch.tanh(st[:, :4]), dens.loc + st[:, 4:]
        z = (v.view(1, 4, 1, 1, 1) - loc) * torch.exp(-logs)
        for layer in dens.layers:
            z, _ = layer(z, h)
        return z.view(4)
    jac = torch.autograd.functional.jacobian(z_of, y)
    z = z_of(y)
    want = 0.5 * (z ** 2).sum() + 2 * math.log(2 * math.pi) - torch.linalg.slogdet(jac)[1]
    got = dens.nll(y.view(1, 4, 1, 1, 1), c).view(())
    assert float(got.detach()) == pytest.approx(float(want.detach()), rel=1e-5)


def test_unet_keeps_full_resolution():
    net = M.UNet3d(2, 6, 4)
    assert net(torch.zeros(1, 2, 8, 12, 16)).shape == (1, 6, 8, 12, 16)


def test_config_refuses_bad_values():
    with pytest.raises(ModelError, match=r"ScreenerConfig.crop = \(12, 16, 40\)"):
        ScreenerConfig(crop=(12, 16, 40))
    with pytest.raises(ModelError, match="ScreenerConfig.variants"):
        ScreenerConfig(variants=("gauss_magic",))
    with pytest.raises(ModelError, match="ScreenerConfig.d = 5: must be even"):
        ScreenerConfig(d=5)
    with pytest.raises(ModelError, match="ScreenerConfig.deployed = 'flow_mask'"):
        ScreenerConfig(variants=("gauss_mask",), deployed="flow_mask")
    with pytest.raises(ModelError, match=r"gauss_mask given twice; give each variant once$"):
        ScreenerConfig(variants=("gauss_mask", "gauss_none", "gauss_mask"))
    # accepted, then torch's "random_ expects 'from' < 'to'" traceback after the SSL setup
    with pytest.raises(ModelError, match="ScreenerConfig.max_shift = -1: must be >= 0"):
        ScreenerConfig(max_shift=-1)


def test_counted_steps_counts_only_the_first_k():
    from sim.engines import device
    dev = device("tests/data/toy-gpu.toml")
    lin = dev.compile(torch.nn.Linear(4, 3, bias=False))
    x = torch.ones(2, 4, device=dev.torch_device)
    calls = []

    def step():
        calls.append(1)
        return float(lin(x).sum().detach())
    losses = M.counted_steps(dev, "train/toy", 5, 2, step, samples_per_step=2)
    assert len(losses) == 5 and len(calls) == 5
    # 2 counted steps x (2 rows x 4 inputs x 3 outputs) = 48 multiply-accumulates
    assert dev.ledger.total_ops()["mac_fp32"] == 48
    none = device("tests/data/toy-gpu.toml")
    M.counted_steps(none, "train/toy", 3, 0, step, samples_per_step=2)
    assert none.ledger.total_ops().get("mac_fp32", 0) == 0
