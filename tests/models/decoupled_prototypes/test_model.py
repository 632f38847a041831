"""Decoupled prototypes: no gradient reaches the mixture, online EM finds blob means, and
the unique-prototype count of Definition 2.1 on hand-made prototypes."""
import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment

from models.decoupled_prototypes.card import DecoupledPrototypesConfig
from models.decoupled_prototypes.model import (
    OnlineGMM,
    Trainer,
    kmeanspp,
    unique_count,
)

TINY = {"prototypes": 16, "bottleneck": 8, "width": 4, "batch_size": 32}


@pytest.fixture(scope="module")
def dev():
    from conftest import TOY_GPU

    import sim
    from hw_profiles import load
    return sim.device(load(TOY_GPU))


def _batch(dev):
    """Two views, drawn on the CPU (the same numbers everywhere) and put on ``dev``."""
    g = torch.Generator().manual_seed(1)
    return [torch.rand(32, 1, 28, 28, generator=g).to(dev.torch_device) for _ in range(2)], g


def test_decoupled_prototypes_get_no_gradient_and_no_optimizer_update(dev):
    tr = Trainer(DecoupledPrototypesConfig(**TINY), "decoupled", dev, steps_per_epoch=10)
    views, g = _batch(dev)
    tr.em_step(views, g)                       # step (i): the mixture moves here only
    before = {k: getattr(tr.gmm, k).clone() for k in ("mu", "var", "pi", "n", "s", "q")}
    assert not tr.gmm.mu.requires_grad and tr.gmm.mu.grad is None
    opt_ids = {id(p) for group in tr.opt.param_groups for p in group["params"]}
    assert all(id(v) not in opt_ids for v in vars(tr.gmm).values())
    assert tr.student.prototypes is None       # no prototype parameter at all
    enc_before = [p.detach().clone() for p in tr.student.parameters()]
    tr.encoder_step(views)                     # step (ii): backward + Adam + EMA
    for k, v in before.items():
        assert torch.equal(getattr(tr.gmm, k), v), k
    assert tr.gmm.mu.grad is None
    # the encoder did move, so the step ran (the check above could have failed)
    after = list(tr.student.parameters())
    assert any(not torch.equal(a, b.detach()) for a, b in zip(enc_before, after, strict=True))


def test_joint_prototypes_are_frozen_in_epoch_one_then_trained_by_the_optimizer(dev):
    """The baseline's contrast: its prototypes are a parameter Adam moves, after DINO's
    ``freeze_last_layer`` = 1 epoch (2 steps here) in which they get no gradient."""
    tr = Trainer(DecoupledPrototypesConfig(**TINY), "joint", dev, steps_per_epoch=2)
    views, _ = _batch(dev)
    before = tr.student.prototypes.detach().clone()
    assert any(p is tr.student.prototypes for p in tr.opt.param_groups[0]["params"])
    enc = tr.student.head[0].weight.detach().clone()
    for _ in range(2):                         # epoch 1: frozen, the rest of the head moves
        tr.encoder_step(views)
        assert tr.student.prototypes.grad is None
    assert torch.equal(before, tr.student.prototypes.detach())
    # the EMA of an unchanged copy (0.996 t + 0.004 t: equal up to float rounding)
    assert torch.allclose(before, tr.teacher.prototypes, rtol=0, atol=1e-6)
    assert not torch.equal(enc, tr.student.head[0].weight.detach())
    tr.encoder_step(views)                     # epoch 2, step 3: Adam moves them
    assert tr.student.prototypes.grad is not None
    assert not torch.equal(before, tr.student.prototypes.detach())


def test_joint_prototypes_start_from_the_linear_layer_init():
    """DINOHead's last layer keeps nn.Linear's init, U(-1/sqrt(D), 1/sqrt(D)): with D = 8
    every entry is within 1/sqrt(8) = 0.354 and the sample std near 0.354 / sqrt(3) = 0.204
    (128 entries: the std of a sample std is about 0.204 / sqrt(2 x 128) = 0.013)."""
    from models.decoupled_prototypes.model import Student
    w = Student(DecoupledPrototypesConfig(**TINY), joint=True).prototypes.detach()
    assert w.shape == (16, 8) and float(w.abs().max()) <= 8 ** -0.5
    assert abs(float(w.std()) - 0.204) < 0.05


def test_online_em_recovers_make_blobs_means():
    """The digest's check: 10 blobs in 16-D (std 0.5), 20000 points, batches of 256, 3
    passes; Hungarian-matched mean L2 error of the means < 0.1, average log-likelihood not
    decreasing from pass to pass. A blob's mean from its last ~100 batches (eta = 0.99 keeps
    a window of 1 / (1 - eta) = 100 batches, ~2560 points of each blob) has an error of about
    0.5 * sqrt(16 / 2560) = 0.04."""
    from sklearn.datasets import make_blobs
    x, _, centers = make_blobs(20000, 16, centers=10, cluster_std=0.5, random_state=0,
                               return_centers=True)
    h = torch.as_tensor(x, dtype=torch.float32)
    g = torch.Generator().manual_seed(0)
    gmm = OnlineGMM(kmeanspp(h[:256], 10, g), forget=0.99, var_min=1e-4, var0=1.0)
    ll = []
    for _ in range(3):
        order = torch.randperm(len(h), generator=g)
        for s in range(0, len(h), 256):
            gmm.step(h[order[s:s + 256]])
        ll.append(gmm.mean_log_likelihood(h))
    dist = np.linalg.norm(gmm.mu.numpy()[:, None] - centers[None], axis=2)
    rows, cols = linear_sum_assignment(dist)
    assert dist[rows, cols].mean() < 0.1
    assert ll[1] >= ll[0] - 1e-3 and ll[2] >= ll[1] - 1e-3, ll
    # the fitted variances are the blobs' 0.5^2 = 0.25 within 10%
    assert np.allclose(gmm.var.numpy().mean(1), 0.25, rtol=0.1)


def test_responsibility_forgetting_decays_a_component_by_its_batch_mass():
    """The paper's "responsibility forgetting" (the default): component k decays by
    0.99 ** (n_k K / B). Data at the origin, K = 2, B = 64: the component at the origin
    takes all 64 points, twice the uniform share 32, so its count is 0.99^2 x 1 + 64 =
    64.9801; the one at (6, 0) takes ~e^-18 of each point, so it keeps its count 1 and its
    statistics (global forgetting: 0.99 x 1, the statistics of an unused component erased
    by 1% a batch)."""
    h = 0.3 * torch.randn(64, 2, generator=torch.Generator().manual_seed(0))
    mu = torch.tensor([[0.0, 0.0], [6.0, 0.0]])
    resp = OnlineGMM(mu, forget=0.99, var0=1.0)
    glob = OnlineGMM(mu, forget=0.99, var0=1.0, forgetting="global")
    assert resp.forgetting == "responsibility"
    resp.step(h), glob.step(h)
    assert resp.n[0] == pytest.approx(64.9801, abs=1e-3)
    assert resp.n[1] == pytest.approx(1.0, abs=1e-5)
    assert glob.n[0] == pytest.approx(64.99, abs=1e-3)            # 0.99 x 1 + 64
    assert glob.n[1] == pytest.approx(0.99, abs=1e-5)
    assert torch.allclose(resp.s[1], mu[1], atol=1e-4)        # 1 x (6, 0) kept


def test_unique_count_greedy_cover():
    # e1, a copy rotated by 0.1 rad (cosine distance 1 - cos 0.1 = 0.005), and e2
    c = torch.tensor([[1.0, 0.0], [np.cos(0.1), np.sin(0.1)], [0.0, 1.0]])
    assert unique_count(c, 0.025) == 2          # 0.005 < 0.025: the first two are one group
    assert unique_count(c, 0.001) == 3          # 0.005 >= 0.001: all distinct
    assert unique_count(c, 1.5) == 1            # orthogonal: distance 1 < 1.5


def test_unique_count_refuses_nan_prototypes_instead_of_looping_forever():
    # a NaN row is not within eps of itself (NaN < eps is False), so it never got covered
    # and the greedy cover's loop never ended; 1 of the 3 rows is NaN
    from sim.errors import ModelError
    c = torch.tensor([[1.0, 0.0], [float("nan"), 0.0], [0.0, 1.0]])
    with pytest.raises(ModelError, match=r"1 of 3 prototypes are not finite"):
        unique_count(c, 0.025)
    assert unique_count(torch.eye(4), 0.025) == 4    # all unique: K groups, then finished


def test_global_forgetting_of_an_unused_component_stops_at_the_float32_floor():
    # component 2 at (6, 0) takes ~e^-18 of each point at the origin, below float32's
    # resolution next to 1: its N decays as 0.5^t and 0.5^t < 1.18e-38 (finfo.tiny) from
    # t = 127 on; float32 0 (and a 0/0 mean) came at t ~ 150. The decay now stops at the
    # floor: after 300 steps N is still >= tiny and the mean finite
    h = 0.3 * torch.randn(64, 2, generator=torch.Generator().manual_seed(0))
    gmm = OnlineGMM(torch.tensor([[0.0, 0.0], [6.0, 0.0]]), forget=0.5, var0=1.0,
                    forgetting="global")
    for _ in range(300):
        gmm.step(h)
    assert float(gmm.n[1]) >= torch.finfo(torch.float32).tiny
    assert torch.isfinite(gmm.mu).all() and torch.isfinite(gmm.var).all()
    # the used component is the batch's mean (forget 0.5: N = 64 (1 + 0.5 + ...) -> 128)
    assert float(gmm.n[0]) == pytest.approx(128.0, rel=1e-6)
    np.testing.assert_allclose(gmm.mu[0].numpy(), h.mean(0).numpy(), atol=1e-5)


def test_one_used_prototype_has_entropy_plus_zero():
    """Every assignment on one prototype: the entropy is 0, not -0 ("-0 nats" in reports)."""
    import math

    from models.decoupled_prototypes.model import usage_entropy
    h = usage_entropy(torch.zeros(5, dtype=torch.int64), 4)
    assert h == 0.0 and math.copysign(1.0, h) == 1.0
