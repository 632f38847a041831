"""COLA's training and evaluation: the MMD alignment term, refusals of a hold-out that
leaves nothing to train on and of a diverged network, the final network's calibration."""
import numpy as np
import pytest
import torch

from models.conformal_hashing.model import mmd2
from sim.bitwise import BitwiseDevice
from sim.errors import ModelError


def test_mmd_vanishes_for_equal_batches_and_grows_with_shift():
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(1))
    assert float(mmd2(x, x)) == pytest.approx(0.0, abs=1e-6)
    assert float(mmd2(x, x + 1.0)) > float(mmd2(x, x + 0.1)) > 0


@pytest.mark.parametrize("n_source, holdout, n_ok", [(10, 0.25, 11), (40, 0.99, 60)])
def test_a_source_set_within_the_hold_out_is_refused(n_source, holdout, n_ok):
    # 10 images: the hold-out is max(10, round(0.25 x 10) = 2) = 10, none left to train on;
    # 40 at holdout 0.99: round(39.6) = 40 held out. Before, training ran 0 steps and the
    # empty retrieval database raised "not enough values to unpack" in evaluate. n_ok
    # leaves one: 11 - max(10, round(2.75)) = 1; 60 - round(59.4) = 1
    from models.conformal_hashing.card import ColaConfig
    from models.conformal_hashing.data import DomainPair
    from models.conformal_hashing.model import VARIANTS, train
    from sim.torch_engine.engine import TorchDevice
    x = np.zeros((n_source, 1, 16, 16), np.float32)
    pair = DomainPair("digits", x, np.arange(n_source) % 10, x[:4], np.arange(4), 10, "zeros")
    cfg = ColaConfig(n_source=n_source, holdout=holdout, epochs=1, width=2, feat=4)
    n_hold = max(10, round(holdout * n_source))
    with pytest.raises(ModelError, match=rf"{n_source} source images \(n_source = {n_source}\) "
                       rf"leave none to train on after the calibration hold-out of {n_hold} "):
        train(pair, cfg, TorchDevice("a100"), VARIANTS["full"])
    x1 = np.zeros((n_ok, 1, 16, 16), np.float32)
    pair1 = DomainPair("digits", x1, np.arange(n_ok) % 10, x1[:4], np.arange(4), 10, "zeros")
    res = train(pair1, cfg, TorchDevice("a100"), VARIANTS["full"])
    assert len(res["train_idx"]) == 1 and len(res["hold"]) == n_ok - 1


def test_evaluate_refuses_a_diverged_network():
    # lr = 1e6 left NaN weights: every code sign(NaN) = -1, a MAP of identical codes (the
    # class base rate) and a NaN training loss were reported as a result
    from models.conformal_hashing.card import ColaConfig
    from models.conformal_hashing.data import DomainPair
    from models.conformal_hashing.model import VARIANTS, evaluate, train
    from sim.torch_engine.engine import TorchDevice
    x = np.random.default_rng(0).random((30, 1, 16, 16)).astype(np.float32)
    pair = DomainPair("digits", x, np.arange(30) % 10, x[:8], np.arange(8) % 10, 10, "noise")
    cfg = ColaConfig(n_source=30, epochs=1, width=2, feat=4, bits=8)
    dev, bdev = TorchDevice("a100"), BitwiseDevice("x86-avx2")
    res = train(pair, cfg, dev, VARIANTS["full"])
    assert 0.0 <= evaluate(res, pair, cfg, dev, bdev, VARIANTS["full"])["map"] <= 1.0
    with torch.no_grad():
        res["net"].hash.bias.fill_(float("nan"))
    with pytest.raises(ModelError, match=r"codes or class scores are not finite: training "
                                         r"diverged \(lr = 0.003\); lower lr"):
        evaluate(res, pair, cfg, dev, bdev, VARIANTS["full"])


def test_the_reported_coverage_uses_a_threshold_calibrated_on_the_final_network():
    # The sets of evaluate() used the qhat of the last epoch's start, calibrated on the
    # network before that epoch's updates. Naive twin: D_cal (the r_cal = 20 % of the
    # hold-out nearest the target's feature centroid) and the ceil((n+1)(1-alpha))-th
    # smallest score, recomputed here from the final network.
    import math

    from models.conformal_hashing.card import ColaConfig
    from models.conformal_hashing.data import load
    from models.conformal_hashing.model import VARIANTS, evaluate, train
    from sim.torch_engine.engine import TorchDevice
    cfg = ColaConfig(n_source=400, n_target=200, epochs=2, width=4, feat=16, bits=8,
                     n_database=200, n_query=200, count=False)
    pair = load("digits", cfg.n_source, cfg.n_target, cfg.seed)
    dev, bdev = TorchDevice("a100"), BitwiseDevice("x86-avx2")
    res = train(pair, cfg, dev, VARIANTS["full"])
    m = evaluate(res, pair, cfg, dev, bdev, VARIANTS["full"])
    net = res["net"]
    xh = torch.as_tensor(pair.x_source[res["hold"]])
    yh = torch.as_tensor(pair.y_source[res["hold"]])
    with torch.no_grad():
        fh, _, lh = net(xh)
        ft = net(torch.as_tensor(pair.x_target))[0]
        lq = net(torch.as_tensor(pair.x_target[:cfg.n_query]))[2]
    near = np.argsort(((fh - ft.mean(0)) ** 2).sum(1).numpy(), kind="stable")
    cal = near[:round(0.2 * len(xh))]                    # 20 % of the 100 held out = 20
    scores = np.sort(1.0 - lh[cal].softmax(1).numpy()[np.arange(len(cal)), yh[cal]])
    qhat = scores[math.ceil((len(cal) + 1) * (1 - res["alpha"])) - 1]
    p_true = lq.softmax(1).numpy()[np.arange(cfg.n_query), pair.y_target[:cfg.n_query]]
    # here 0.365 (qhat 0.8975 of the final network); the stale qhat 0.8965 gave 0.310
    assert m["target_coverage"] == pytest.approx(float(np.mean(1.0 - p_true <= qhat)))
    assert res["qhat"] == pytest.approx(qhat, abs=1e-6)
    # the training's last threshold is kept beside it
    assert res["qhat_last_epoch"] == res["history"][-1]["qhat"] != res["qhat"]
