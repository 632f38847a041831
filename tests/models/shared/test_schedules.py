"""Step-size schedules: the factor by hand, and the step sizes train_minibatch and PCNet
actually use."""
import math

import pytest
import torch

import sim
from models.baselines.pc.model import PCNet
from models.shared.schedules import check_schedule, lr_factor
from models.shared.training import train_minibatch
from sim.errors import ModelError


def test_cosine_factor_by_hand():
    # (1 + cos(pi k / 4)) / 2 for k = 0, 1, 2, 4
    assert [lr_factor("cosine", k, 4) for k in (0, 2, 4)] == [1.0, 0.5, 0.0]
    assert lr_factor("cosine", 1, 4) == pytest.approx((1 + math.sqrt(0.5)) / 2)
    assert lr_factor("cosine", 9, 4) == 0.0                  # past the end it stays at 0
    assert lr_factor("constant", 3, 4) == 1.0


def test_unknown_schedule_is_named():
    with pytest.raises(ModelError, match=r"'step'.*\('constant', 'cosine'\)"):
        lr_factor("step", 0, 1)
    with pytest.raises(ModelError, match=r"PCConfig.lr_schedule = 'warm'"):
        check_schedule("PCConfig", "warm")


@pytest.mark.parametrize("schedule, total", [("constant", 4.0), ("cosine", 2.5)])
def test_train_minibatch_steps_follow_the_schedule(tmp_path, schedule, total):
    # loss = p: a constant gradient 1, so each Adam step moves p by its step size exactly
    # (m_hat / sqrt(v_hat) = 1). 4 samples, batch 2, 2 epochs = 4 steps of lr x factor:
    # constant 4 x lr; cosine (1 + 0.854 + 0.5 + 0.146) lr = 2.5 lr (the cosines cancel)
    from tests.conftest import TOY_GPU
    dev = sim.device(TOY_GPU, prefer_cuda=False)
    p = torch.nn.Parameter(torch.zeros(1))
    train_minibatch(dev, [p], lambda idx: p.sum(), 4, epochs=2, batch_size=2, lr=0.01,
                    seed=0, lr_schedule=schedule)
    assert p.item() == pytest.approx(-0.01 * total, rel=1e-5)


def test_pcnet_step_sizes_follow_the_schedule():
    net = PCNet((3, 2, 2), 1e-3, 0.0, seed=0)
    net.set_schedule("cosine", 4)
    eps = [None, torch.ones(1, 2), torch.ones(1, 2)]
    pre = [torch.ones(1, 3), torch.ones(1, 2)]
    used = []
    for _ in range(3):
        net.step(pre, eps)
        used.append(net.opt.param_groups[0]["lr"])
    assert used == pytest.approx([1e-3, 1e-3 * (1 + math.sqrt(0.5)) / 2, 0.5e-3])
    with pytest.raises(ModelError, match="'linear'"):
        net.set_schedule("linear", 4)
