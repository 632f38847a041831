"""TrainRef's parts: the closed-form influence, the noise, the split, voting, ECE, the card."""
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from models.trainref import data as D
from models.trainref import model as M
from models.trainref.card import TrainRefConfig
from sim.errors import ModelError


def test_closed_form_influence_equals_autograd_per_sample_gradients():
    # the digest's check 6: cos of per-sample head gradients, by torch.func, to 1e-6
    gen = torch.Generator().manual_seed(0)
    d, c, nc, nr = 7, 5, 6, 4
    h_c = torch.randn(nc, d, generator=gen, dtype=torch.float64)
    h_r = torch.randn(nr, d, generator=gen, dtype=torch.float64)
    y_c = torch.randint(0, c, (nc,), generator=gen)
    y_r = torch.randint(0, c, (nr,), generator=gen)
    heads = [(torch.randn(c, d, generator=gen, dtype=torch.float64),
              torch.randn(c, generator=gen, dtype=torch.float64)) for _ in range(3)]

    def grads(w, b, h, y):
        def loss(w, b, hi, yi):
            return F.cross_entropy((hi @ w.T + b)[None], yi[None])
        gw, gb = torch.func.vmap(torch.func.grad(loss, argnums=(0, 1)),
                                 in_dims=(None, None, 0, 0))(w, b, h, y)
        return torch.cat([gw.flatten(1), gb], 1)

    want = torch.zeros(nc, nr, dtype=torch.float64)
    for w, b in heads:
        want += F.normalize(grads(w, b, h_c, y_c), dim=1) @ F.normalize(grads(w, b, h_r, y_r),
                                                                         dim=1).T
    want /= 3
    got = M.influence(h_c, F.one_hot(y_c, c).double(), h_r, F.one_hot(y_r, c).double(), heads)
    assert got.shape == (nc, nr)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6, rtol=0)
    assert want.abs().max() > 0.05        # not a comparison of zeros


def test_symmetric_noise_flips_to_other_classes_at_the_rate():
    y = np.repeat(np.arange(10), 2000)
    out = D.corrupt(y, "symmetric", 0.5, seed=1)
    flipped = out != y
    # 20000 draws at p = 0.5: std 0.0035, so 0.5 +- 0.02 is > 5 sigma
    assert abs(flipped.mean() - 0.5) < 0.02
    # the wrong labels spread over the 9 other classes: each ~1/9 of the flips of class 0
    share = np.bincount(out[(y == 0) & flipped], minlength=10) / ((y == 0) & flipped).sum()
    assert share[0] == 0 and np.all(np.abs(share[1:] - 1 / 9) < 0.04)


def test_asymmetric_noise_follows_the_confusable_pairs():
    y = np.repeat(np.arange(10), 1000)
    out = D.corrupt(y, "asymmetric", 0.4, seed=2)
    for c in range(10):
        moved = out[(y == c) & (out != y)]
        if c in D.ASYMMETRIC:
            assert set(moved) == {D.ASYMMETRIC[c]} and abs(len(moved) / 1000 - 0.4) < 0.06
        else:
            assert len(moved) == 0              # Trouser, Dress, Coat, Bag, Boot keep theirs


def test_split_holds_out_references_per_class_with_true_labels():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 400)
    x = np.arange(400, dtype=np.float32)[:, None]
    sp = D.split(x, y, x[:5], y[:5], 3, 50, "symmetric", 0.8, seed=0)
    assert np.array_equal(np.bincount(sp.y_ref, minlength=10), np.full(10, 3))
    assert np.array_equal(sp.y_ref, y[sp.x_ref[:, 0].astype(int)])
    assert len(sp.y_val) == 50 and len(sp.y_noisy) == 400 - 30 - 50
    ids = np.concatenate([sp.x_ref[:, 0], sp.x_val[:, 0], sp.x_pool[:, 0]])
    assert len(np.unique(ids)) == 400                     # disjoint, nothing lost
    assert np.array_equal(sp.y_true, y[sp.x_pool[:, 0].astype(int)])


def test_vote_puts_the_mass_on_the_class_of_the_similar_references():
    # references at +e1 (class 0) and +e2 (class 1); a query near e1 gets class 0
    f_r = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    y_r = torch.tensor([0, 0, 1, 1])
    q = torch.tensor([[1.0, 0.05], [0.05, 1.0]])
    out = M.vote(q, f_r, y_r, k=2, quantile=0.5, t=0.5, classes=2)
    np.testing.assert_allclose(out.sum(1).numpy(), 1.0, atol=1e-6)
    assert out[0, 0] > 0.999 and out[1, 1] > 0.999


def test_vote_sharpening_squares_the_normalised_votes():
    # one query, references of class 0 and 1 with cosines 1 and cos(60 deg) = 0.5, k = 2:
    # votes (1, 0.5) -> sharpened t = 0.5: (1, 0.25) / 1.25 = (0.8, 0.2)
    f_r = torch.tensor([[1.0, 0.0], [0.5, 3 ** 0.5 / 2]])
    out = M.vote(torch.tensor([[1.0, 0.0]]), f_r, torch.tensor([0, 1]), k=2, quantile=0.0,
                 t=0.5, classes=2)
    np.testing.assert_allclose(out.numpy(), [[0.8, 0.2]], atol=1e-6)


def test_vote_sharpening_near_zero_t_stays_finite():
    # one query, references of class 0 and 1 at cosines 0.1 and 0.05, t = 0.01: the plain
    # y^(1/t) is 0.1^100 = 1e-100 and 0.05^100, both 0 in float32, so 0 / 0 = nan. In log
    # space softmax(log(0.1) / t, log(0.05) / t): class 1 gets exp(100 log 0.5) = 2^-100
    # = 7.9e-31 of class 0's mass, so the row is (1, 7.9e-31) to float32
    f_r = torch.tensor([[0.1, 0.99 ** 0.5], [0.05, -(0.9975 ** 0.5)]])
    args = (torch.tensor([[1.0, 0.0]]), f_r, torch.tensor([0, 1]))
    plain = M.vote(*args, k=2, quantile=0.0, t=0.01, classes=2)
    assert torch.isnan(plain).all()                  # the failure sharpen_finite repairs
    out = M.vote(*args, k=2, quantile=0.0, t=0.01, classes=2, log_space=True)
    np.testing.assert_allclose(out.numpy(), [[1.0, 2.0 ** -100]], rtol=1e-4, atol=0)
    # at the presets' t = 0.5 the log-space form is the same distribution:
    # (0.1^2, 0.05^2) / 0.0125 = (0.8, 0.2)
    half = M.vote(*args, k=2, quantile=0.0, t=0.5, classes=2, log_space=True)
    np.testing.assert_allclose(half.numpy(), [[0.8, 0.2]], atol=1e-6)


def test_sharpen_finite_revotes_only_the_nan_rows_and_counts_them():
    from sim.torch_engine.engine import TorchDevice
    dev = TorchDevice("tests/data/toy-gpu.toml")
    # vote's own settings (quantile 0: every reference a candidate; the config needs > 0)
    cfg = SimpleNamespace(k=2, quantile=0.0, sharpen=0.01, pool="mmr", relevance=0.5)
    f_r = torch.tensor([[0.1, 0.99 ** 0.5], [0.05, -(0.9975 ** 0.5)]])
    f_x = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # row 1: cosines 0.995 and -0.999 -> votes (0.995, 0): 0.995^100 = 0.61, finite
    soft = M.vote(f_x, f_r, torch.tensor([0, 1]), 2, 0.0, 0.01, classes=10)
    kept = soft[1].clone()
    assert torch.isnan(soft[0]).all() and torch.isfinite(kept).all()
    out = M.sharpen_finite(soft, f_x, f_r, torch.tensor([0, 1]), cfg, dev, "vote/log")
    assert torch.isfinite(out).all() and torch.equal(out[1], kept)
    np.testing.assert_allclose(out[0, :2].numpy(), [1.0, 2.0 ** -100], rtol=1e-4, atol=0)
    assert dev.ledger.scopes() == ["vote/log"]       # one row re-voted, under its own scope


def _unit(lon_deg: float, lat_deg: float = 0.0) -> list[float]:
    lon, lat = math.radians(lon_deg), math.radians(lat_deg)
    return [math.cos(lat) * math.cos(lon), math.cos(lat) * math.sin(lon), math.sin(lat)]


@pytest.mark.parametrize("pool, expected", [
    # query at (lon 0, lat 0); references A lon 5 (class 0), B lon 8 (class 0), C lon -25
    # (class 1), D lon 5 lat 70 (class 2); k = 2, every reference above tau (quantile 0).
    # s(q, .) = cos: A 0.99619, B 0.99027, C 0.90631, D cos70 cos5 = 0.34072; all start at A.
    # nearest: A, B -> all mass on class 0.
    # mmr: 0.5 s - 0.5 s(., A): B 0.5(0.99027 - 0.99863) = -0.0042, C 0.5(0.90631 - 0.86603)
    #   = +0.0201, D 0.5(0.34072 - 0.34202) = -0.0007 -> C; votes (0.99619, 0.90631, 0),
    #   squared (t = 0.5) (0.99240, 0.82140) / 1.81380 = (0.54714, 0.45286, 0).
    # farthest: min cosine to A is D's 0.34202 -> D; votes (0.99619, 0, 0.34072), squared
    #   (0.99240, 0, 0.11609) / 1.10849 = (0.89527, 0, 0.10473).
    ("nearest", [1.0, 0.0, 0.0]),
    ("mmr", [0.54714, 0.45286, 0.0]),
    ("farthest", [0.89527, 0.0, 0.10473]),
])
def test_voting_pool_rules_pick_the_expected_references(pool, expected):
    f_r = torch.tensor([_unit(5), _unit(8), _unit(-25), _unit(5, 70)], dtype=torch.float64)
    y_r = torch.tensor([0, 0, 1, 2])
    out = M.vote(torch.tensor([_unit(0)], dtype=torch.float64), f_r, y_r, k=2, quantile=0.0,
                 t=0.5, classes=3, pool=pool)
    np.testing.assert_allclose(out[0].numpy(), expected, atol=2e-5)


def test_ece_of_a_known_case():
    # two samples in bin [0.6, 0.667): conf 0.61, 0.65, one right -> |0.5 - 0.63| = 0.13;
    # one sample at conf 0.95 right -> 0.05; weights 2/3, 1/3: 0.0867 + 0.0167 = 0.10333
    p = np.array([[0.61, 0.39], [0.35, 0.65], [0.95, 0.05]])
    y = np.array([0, 0, 0])
    assert M.ece(p, y) == pytest.approx(2 / 3 * 0.13 + 1 / 3 * 0.05, abs=1e-12)


def test_select_keeps_the_top_of_each_given_class():
    # class 0 scores 0, 1, 2 -> normalised 0, .5, 1; class 1 scores 5, 9 -> 0, 1
    keep, norm = M.select(torch.tensor([0.0, 1.0, 2.0, 5.0, 9.0]),
                          torch.tensor([0, 0, 0, 1, 1]), 0.8, classes=2)
    assert keep.tolist() == [False, False, True, False, True]
    np.testing.assert_allclose(norm.numpy(), [0, 0.5, 1, 0, 1])


def test_config_refuses_bad_values():
    with pytest.raises(ModelError, match="noise = 'pairflip'"):
        TrainRefConfig(noise="pairflip")
    with pytest.raises(ModelError, match="noise_rate = 1.0"):
        TrainRefConfig(noise_rate=1.0)
    with pytest.raises(ModelError, match="pool = 'random'"):
        TrainRefConfig(pool="random")
    # round(16 x 0.03) = round(0.48) = 0 patches masked: the masked MSE would be 0 / 0
    with pytest.raises(ModelError, match=r"mask_ratio = 0.03 masks round\(16 x 0.03\) = 0 "):
        TrainRefConfig(mask_ratio=0.03)
    TrainRefConfig(mask_ratio=0.03, mae_epochs=0)    # no pre-training: the mask is unused
    TrainRefConfig(mask_ratio=0.04)                  # round(0.64) = 1 patch


def test_evaluate_refuses_a_diverged_model():
    # NaN weights (lr = 1e6 on the CE baseline did it): softmax gives NaN probabilities,
    # whose argmax scored an "accuracy" and whose ECE was 0 (NaN -> int fills no bin)
    from sim.torch_engine.engine import TorchDevice
    dev = TorchDevice("tests/data/toy-gpu.toml")
    net = torch.nn.Linear(784, 10)
    sp = {"x_test": torch.zeros(4, 784), "y_test": torch.zeros(4, dtype=torch.int64)}
    ok = M.evaluate(dev.compile(net), sp, dev, "ce")
    assert ok["accuracy"] in (0.0, 1.0)              # four equal rows: all right or all wrong
    with torch.no_grad():
        net.bias.fill_(float("nan"))
    with pytest.raises(ModelError, match="the ce model's test predictions are not finite: "
                                         "its training diverged; lower lr"):
        M.evaluate(dev.compile(net), sp, dev, "ce")
