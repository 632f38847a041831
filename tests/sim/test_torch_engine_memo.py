"""The torch engine's cost memo (sim.torch_engine.costs.CostMemo, issue 36): an op call whose
signature was priced before takes its cost from the memo, and the ledgers stay exactly
those of pricing every call in full: an MLP and a CNN training with Adam and SGD, a model
that branches on a tensor's value, and one whose op costs read values (a boolean-mask
assignment)."""
import pytest
import torch
from torch import nn

from sim.torch_engine import TorchDevice
from sim.torch_engine.costs import CostMemo, op_cost, op_signature

aten = torch.ops.aten


class Branchy(nn.Module):
    """Data-dependent control flow: which layer runs, and how many elements the boolean-mask
    assignment writes, depend on the batch's values."""

    def __init__(self):
        super().__init__()
        self.wide = nn.Linear(8, 16)
        self.narrow = nn.Linear(8, 4)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        if x.sum() > 0:                      # a branch on a tensor value
            h = self.wide(x)
        else:
            h = nn.functional.pad(self.narrow(x), (0, 12))
        h = h.clone()
        h[h < 0] = 0                         # index_put_ with a mask: as many writes as negatives
        return self.head(h)


def _mlp():
    return nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 3))


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 6, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(6 * 2 * 2, 3))


CASES = {   # factory, input shape of a batch of 4, optimizer
    "mlp": (_mlp, (4, 12), lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True)),
    "cnn": (_cnn, (4, 1, 8, 8), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
    "branchy": (Branchy, (4, 8), lambda p: torch.optim.Adam(p, lr=1e-2)),
}


def _train(memo: CostMemo, case: str, toy_gpu_path, steps: int = 6):
    """The ledger of ``steps`` training steps and an inference, costs priced through
    ``memo``; the batches alternate in sign so Branchy takes both branches."""
    make, shape, optim = CASES[case]
    torch.manual_seed(0)
    dev = TorchDevice(toy_gpu_path)
    dev.cost_memo = memo
    net = dev.compile(make())
    opt = optim(net.parameters())
    g = torch.Generator().manual_seed(1)
    batches = [torch.randn(shape, generator=g) + (2.0 if i % 2 else -2.0)
               for i in range(steps)]
    labels = torch.randint(0, 3, (steps, shape[0]), generator=g)
    with dev.count("train", samples=steps * shape[0]):
        for x, y in zip(batches, labels, strict=True):
            loss = nn.functional.cross_entropy(net(x.to(dev.torch_device)),
                                               y.to(dev.torch_device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    dev.run(net, batches[0])
    return dev.ledger


@pytest.mark.parametrize("case", sorted(CASES))
def test_memoised_ledger_equals_full_pricing(case, toy_gpu_path):
    full = _train(CostMemo(limit=0), case, toy_gpu_path)
    memo = CostMemo()
    fast = _train(memo, case, toy_gpu_path)
    # the same step six times: the first step (of each branch, for Branchy), the optimizer's
    # state creation and the mask assignments miss; most calls hit
    assert memo.hits > 2 * memo.misses
    assert fast == full
    assert fast.total_ops()["mac_fp32"] > 0
    # verify mode: every hit re-priced in full and compared (raises on a difference)
    assert _train(CostMemo(verify=True), case, toy_gpu_path) == full


def test_branches_and_masks_count_what_ran(toy_gpu_path):
    led = _train(CostMemo(), "branchy", toy_gpu_path)
    # both branches ran in training (3 positive and 3 negative batches), each counted
    # under its own layer: wide 4 x 8 x 16 = 512 MACs per forward, narrow 4 x 8 x 4 = 128
    assert led.total_ops("train/wide/forward")["mac_fp32"] == 3 * 512
    assert led.total_ops("train/narrow/forward")["mac_fp32"] == 3 * 128


def test_value_dependent_ops_have_no_signature():
    # index_put_ with a mask writes as many elements as the mask has true entries: two
    # calls with equal shapes cost differently, so neither may come from the memo
    h = torch.tensor([[-1.0, 2.0, -3.0, 4.0]])
    mask_one, mask_two = h < -2, h < 0          # 1 and 2 true entries
    zero = torch.tensor(0.0)
    costs = []
    for mask in (mask_one, mask_two):
        args = (h.clone(), [mask], zero)
        out = aten.index_put_.default(*args)
        assert op_signature(aten.index_put_.default, args, {}, out) is None
        costs.append(op_cost(aten.index_put_.default, args, {}, out))
    # writes: 1 and 2 floats of 4 B
    assert (costs[0][2], costs[1][2]) == (4, 8)


def test_signature_tells_aliased_arguments_apart_and_ignores_float_values():
    x, y = torch.ones(3), torch.ones(3)
    same = op_signature(aten.mul.Tensor, (x, x), {}, x * x)
    other = op_signature(aten.mul.Tensor, (x, y), {}, x * y)
    assert same != other                        # mul(x, x) is not mul(x, y)
    a = op_signature(aten.add.Tensor, (x, y), {"alpha": 0.5}, x + y)
    b = op_signature(aten.add.Tensor, (x, y), {"alpha": 2.0}, x + y)
    assert a == b                               # a float's value is never priced
    t = op_signature(aten.add.Tensor, (x, y.double()), {}, x + y)
    assert t != op_signature(aten.add.Tensor, (x, y), {}, x + y)   # dtypes are


@pytest.mark.parametrize("values", [[0.0, 1.0, -1.0], [0.0, 0.5], [float("nan"), 1.0],
                                    [float("inf"), 0.0], [-0.0, 1.0], [1e-45, 0.0],
                                    [0, 1, -1], [0, 2], [-128, 1]])
def test_host_counts_agree_with_torch(values):
    # the recorder's numpy counts (count_nonzero, is_spiking) against torch's definitions:
    # -0.0 is zero, NaN is not; spikes are exactly 0 and +-1 (a denormal 1e-45 is not 0)
    from sim.torch_engine.activity import count_nonzero, is_spiking
    x = torch.tensor(values, dtype=torch.int8 if values == [-128, 1] else None)
    assert count_nonzero(x) == int(torch.count_nonzero(x))
    assert is_spiking(x) == torch.equal(x.abs(), (x != 0).to(x.dtype))


def test_weights_zeroed_by_a_foreach_update_inside_the_block_are_seen(toy_gpu_path):
    # torch's in-place _foreach_ ops (the optimizers' step) leave a tensor's _version as it
    # was under a dispatch mode; the recorder's cached non-zero weights must still refresh.
    # Linear 6 -> 4 on 2 samples of ones: 2 x 6 x 4 = 48 effective ACs, then 0 once
    # every weight is 0.
    dev = TorchDevice(toy_gpu_path)
    lin = dev.compile(nn.Linear(6, 4))
    x = torch.ones(2, 6, device=dev.torch_device)
    with dev.count("infer"), torch.no_grad():
        lin(x)
        torch._foreach_mul_([lin.weight], 0.0)
        lin(x)
    assert dev.ledger.activity()["effective_acs"] == 48 + 0   # ones are spikes: ACs
