"""COLA's training and evaluation: the MMD alignment term, refusals of a hold-out that
leaves nothing to train on and of a diverged network."""
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
