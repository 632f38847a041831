"""Energy per training sample of a room that counts only its first steps (ppl, dave)."""
import math

import pytest
import torch

from models.shared.energy import counted_training
from sim.torch_engine.engine import TorchDevice

TOY = "tests/data/toy-gpu.toml"


def train_steps(counted: int, steps: int, batch: int = 8):
    """``steps`` alike Adam steps of a 16-8 layer on ``batch`` rows, the first ``counted``
    each in its own counted block (as ``ppl.run.fit`` does)."""
    dev = TorchDevice(TOY)
    net = dev.compile(torch.nn.Linear(16, 8))
    opt = torch.optim.Adam(net.parameters())
    x = dev.tensor(torch.ones(batch, 16))
    for step in range(steps):
        ctx = dev.count("train", samples=batch) if step < counted else _plain()
        with ctx:
            loss = net(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return dev


class _plain:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_per_sample_is_counted_and_the_total_is_scaled_and_says_so():
    dev = train_steps(2, 10)
    rep = dev.ledger.price(dev.profile)
    e = rep.energy_within("train")
    m = counted_training(dev, "train", counted_steps=2, steps=10)
    # 2 counted steps x 8 samples = 16 samples: e / 16 per sample; all 10 steps: e / 2 x 10
    assert m["energy_per_train_sample_j"] == pytest.approx(e / 16)
    assert m["train_energy_scaled_j"] == pytest.approx(e / 2 * 10)
    assert (m["train_steps_counted"], m["train_steps"]) == (2.0, 10.0)
    # the steps after the first are alike; the first also creates Adam's state (exp_avg,
    # exp_avg_sq), so it costs more: with E1 the first step's energy and E each later one,
    # k counted steps of b = 8 samples give (E1 + (k - 1) E) / (8 k) per sample. From k = 1
    # and k = 2: E1 = 8 p1, E = 16 p2 - E1; then k = 3 must give (E1 + 2 E) / 24
    p = {k: counted_training(train_steps(k, 10), "train", k, 10)["energy_per_train_sample_j"]
         for k in (1, 3)}
    p[2] = m["energy_per_train_sample_j"]
    e1, e_later = 8 * p[1], 16 * p[2] - 8 * p[1]
    assert e1 > e_later > 0
    assert p[3] == pytest.approx((e1 + 2 * e_later) / 24, rel=1e-6)
    assert p[1] > p[2] > p[3]   # so a scaled total from few counted steps overstates


def test_nothing_counted_is_nan_not_zero():
    m = counted_training(train_steps(0, 3), "train", counted_steps=0, steps=3)
    assert math.isnan(m["energy_per_train_sample_j"]) and math.isnan(m["train_energy_scaled_j"])
    assert m["train_steps_counted"] == 0.0
