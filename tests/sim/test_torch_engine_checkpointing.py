"""Activation checkpointing (``torch.utils.checkpoint``, non-reentrant, early stop on) under
counting: backward runs part of the forward again and may stop it part-way, so some module
calls never leave. Before: the stale calls stayed on the module stack, every later step's
paths nested under them ('3.Sequential.3.Ck.a.0', deeper each step), no step started (no
replay), and the recomputed layers' NeuroBench activity was counted twice."""
import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from sim.torch_engine.engine import TorchDevice


class Net(nn.Module):
    def __init__(self, checkpointed: bool):
        super().__init__()
        self.checkpointed = checkpointed
        self.a = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.h = nn.Linear(32, 3)

    def forward(self, x):
        h = checkpoint(self.a, x, use_reentrant=False) if self.checkpointed else self.a(x)
        return self.h(h)


def _train(checkpointed: bool, replay=False, steps: int = 6) -> TorchDevice:
    torch.manual_seed(0)
    dev = TorchDevice("a100", replay=replay)
    net = dev.compile(Net(checkpointed))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g))
            for _ in range(steps)]
    with dev.count("train", samples=4 * steps):
        for x, y in data:
            loss = nn.functional.cross_entropy(net(dev.tensor(x)),
                                               dev.tensor(y, dtype=torch.int64))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return dev


def test_checkpointed_paths_activity_and_recomputation():
    ck, plain = _train(True), _train(False)
    # the same module paths as without checkpointing, every step
    assert sorted(ck.ledger.scopes()) == sorted(plain.ledger.scopes())
    assert all("Sequential" not in s and "Net" not in s for s in ck.ledger.scopes())
    # NeuroBench activity is the forward pass's: not counted again for the recomputation
    assert ck.ledger.activity() == plain.ledger.activity()
    assert ck.ledger.layers() == plain.ledger.layers()
    # forward scopes alike; each layer of `a` does its forward again in its backward scope
    # (the recomputation), the head and the root do not
    for s in plain.ledger.scopes():
        if s.endswith("/forward"):
            assert ck.ledger.ops(s) == plain.ledger.ops(s), s
            continue
        want = dict(plain.ledger.ops(s))
        if s.startswith("train/a."):
            for op, n in plain.ledger.ops(s.replace("/backward", "/forward")).items():
                want[op] = want.get(op, 0) + n
        assert dict(ck.ledger.ops(s)) == want, s
    # in all: per step 4 samples x (8 x 32 + 32 x 32) = 5,120 MACs more, 6 steps = 30,720

    def backward_macs(dev):
        return sum(dev.ledger.ops(s).get("mac_fp32", 0) for s in dev.ledger.scopes()
                   if s.endswith("/backward"))
    assert backward_macs(ck) - backward_macs(plain) == 6 * 4 * (8 * 32 + 32 * 32)


@pytest.mark.parametrize("replay", [True, "verify"])
def test_checkpointed_steps_replay(replay):
    full = _train(True).ledger
    dev = _train(True, replay=replay)
    assert dev.ledger == full
    # 6 steps: the first counted in full and recorded, the other 5 replayed (plain SGD
    # makes no optimizer state, so no step differs from the first)
    steps = dev.step_replay
    assert (steps.replayed, steps.recorded, steps.diverged) == (5, 1, 0)


def test_a_forward_that_raises_records_no_call():
    """The leave hook runs even when a forward raises (always_call, for checkpointing's
    stopped recomputations): a failed call caught inside the block adds no layer call and
    no activity, and the next call's path is the module's own."""
    dev = TorchDevice("a100")
    net = dev.compile(nn.Sequential(nn.Linear(4, 3)))
    with torch.no_grad(), dev.count("infer", samples=2):
        with pytest.raises(RuntimeError, match="cannot be multiplied"):
            net(dev.tensor(torch.ones(2, 5)))        # wrong width: the Linear raises
        net(dev.tensor(torch.ones(2, 4)))
    # one call of 2 samples: 2 x 4 x 3 = 24 dense pairs, the MACs alike
    assert dev.ledger.activity()["dense_synops"] == 24
    assert dev.ledger.total_ops()["mac_fp32"] == 24
    assert sorted(dev.ledger.scopes()) == ["infer", "infer/0/forward"]
