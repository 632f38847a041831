"""Step replay (sim/torch_engine/replay.py, issue 36): a step whose key was counted before is
checked op by op against its record and its tally added once; the ledger must be exactly
that of full counting, on an MLP, a CNN, models with data-dependent ops and branches, and a
model whose shapes change between steps. Also the footprint fix found on the way: a
gradient detached from its kernel's output is writable state."""
import pytest
import torch
from torch import nn

from sim.errors import ModelError
from sim.torch_engine import TorchDevice
from sim.torch_engine.replay import FULL, never_replayed
from tests.sim.test_torch_engine_memo import _cnn, _mlp  # the memo tests' two models

aten = torch.ops.aten


class Selective(nn.Module):
    """Data-dependent ops: masked_select keeps the positive activations (how many depends on
    the batch's values), nonzero counts them; the head sees their mean."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 16)
        self.head = nn.Linear(1, 3)

    def forward(self, x):
        h = self.lin(x)                                    # (B, 16)
        kept = torch.masked_select(h, h > 0)               # (k,): k depends on values
        idx = torch.nonzero(h > 0)                         # (k, 2)
        m = kept.sum() / (idx.shape[0] + 1)
        return self.head(m.reshape(1, 1)).expand(x.shape[0], 3)


class Branchy(nn.Module):
    """A Python branch on a tensor value: which layer runs depends on the batch."""

    def __init__(self):
        super().__init__()
        self.wide = nn.Linear(8, 16)
        self.narrow = nn.Linear(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = self.wide(x) if x.sum() > 0 else self.narrow(x)
        return self.head(torch.relu(h))


CASES = {   # factory, input shape of a step's batch (batch first), optimizer
    "mlp": (_mlp, (4, 12), lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True)),
    "cnn": (_cnn, (4, 1, 8, 8), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
    "selective": (Selective, (4, 8), lambda p: torch.optim.Adam(p, lr=1e-2)),
    "branchy": (Branchy, (4, 8), lambda p: torch.optim.SGD(p, lr=0.1)),
}


def _train(case: str, replay, toy_gpu_path, steps: int = 6, batches=None):
    """Ledger and device after ``steps`` training steps in one block, a second block of two
    steps and an inference; batches alternate in sign (Branchy takes both branches,
    Selective keeps different numbers of elements)."""
    make, shape, optim = CASES[case]
    torch.manual_seed(0)
    dev = TorchDevice(toy_gpu_path, replay=replay)
    net = dev.compile(make())
    opt = optim(net.parameters())
    g = torch.Generator().manual_seed(1)
    if batches is None:
        batches = [torch.randn(shape, generator=g) + (1.0 if i % 2 else -1.0)
                   for i in range(steps)]
    labels = [torch.randint(0, 3, (len(x),), generator=g) for x in batches]
    # drawn on the CPU (the same numbers everywhere), then put where the net runs
    batches = [x.to(dev.torch_device) for x in batches]
    labels = [y.to(dev.torch_device) for y in labels]

    def step(x, y):
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    with dev.count("train", samples=sum(len(x) for x in batches)):
        for x, y in zip(batches, labels, strict=True):
            loss = step(x, y)
    with dev.count("train", samples=sum(len(x) for x in batches[:2])):
        for x, y in zip(batches[:2], labels[:2], strict=True):
            step(x, y)
    dev.run(net, batches[0])
    del loss
    return dev.ledger, dev


@pytest.mark.parametrize("case", sorted(CASES))
def test_replayed_ledger_equals_full_counting(case, toy_gpu_path):
    full, _ = _train(case, False, toy_gpu_path)
    fast, dev = _train(case, True, toy_gpu_path)
    assert fast == full
    assert full.total_ops()["mac_fp32"] > 0
    # verify mode re-prices every replayed op in full and raises on a difference
    checked, _ = _train(case, "verify", toy_gpu_path)
    assert checked == full
    steps = dev.step_replay
    # 6 + 2 training steps and an inference, 9 steps in all: each replayed or counted in
    # full and recorded (a diverged step is recorded again)
    assert steps.recorded + steps.replayed == 9


def test_mlp_replays_every_step_after_the_optimizers_first(toy_gpu_path):
    _, dev = _train("mlp", True, toy_gpu_path)
    steps = dev.step_replay
    # step 1 recorded; step 2 diverges where Adam's first step made its state (zeros_like)
    # and is recorded again; steps 3-6 and both steps of the second block replay (4 + 2);
    # the inference (no grad: another key) is recorded
    assert (steps.recorded, steps.replayed, steps.diverged) == (3, 6, 1)


def test_branches_fall_back_where_the_ops_differ(toy_gpu_path):
    led, dev = _train("branchy", True, toy_gpu_path)
    # the branch alternates every step: each replayed step runs the other layer than its
    # record and falls back there (steps 2-6, and both steps of the second block)
    assert dev.step_replay.diverged == 7
    # each branch counted under its own layer: 3 + 1 steps each, 4 x 8 x 16 = 512 MACs
    assert led.total_ops("train/wide/forward")["mac_fp32"] == 4 * 512
    assert led.total_ops("train/narrow/forward")["mac_fp32"] == 4 * 512


def test_data_dependent_ops_are_never_replayed(toy_gpu_path):
    assert never_replayed(aten.masked_select.default)
    assert never_replayed(aten.nonzero.default)
    assert never_replayed(aten.index_put_.default)        # a mask's writes: value-dependent
    assert not never_replayed(aten.mm.default)
    _, dev = _train("selective", True, toy_gpu_path)
    kinds = {entry[0]: entry[2] for record in dev.step_replay.records.values()
             for entry in record.ops}
    assert kinds[aten.masked_select.default] == FULL
    assert kinds[aten.nonzero.default] == FULL


def test_shapes_that_change_between_steps(toy_gpu_path):
    # batches of 4, 3, 4, 3, ...: two step keys, each recorded and then replayed
    g = torch.Generator().manual_seed(2)
    batches = [torch.randn(4 if i % 2 == 0 else 3, 12, generator=g) for i in range(6)]
    full, _ = _train("mlp", False, toy_gpu_path, batches=batches)
    fast, dev = _train("mlp", True, toy_gpu_path, batches=batches)
    assert fast == full
    keys = {key for key in dev.step_replay.records if key[2]}     # grad enabled: training
    assert len(keys) == 2
    # the 4-sample steps' MACs: 4 x (12 x 24 + 24 x 3) = 1,440 forward, as full counting's
    assert full.total_ops("train/0/forward")["mac_fp32"] == (3 + 1) * 4 * 12 * 24 \
        + (3 + 1) * 3 * 12 * 24


def test_verify_raises_on_a_record_that_is_wrong(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path, replay="verify")
    lin = dev.compile(nn.Linear(4, 3))
    x = torch.ones(2, 4)
    dev.run(lin, x)                                     # recorded
    record = next(iter(dev.step_replay.records.values()))
    for i, (func, meta, kind, scope, cost, sig) in enumerate(record.ops):
        if func is aten.addmm.default:                  # claim 1 MAC fewer
            counts = dict(cost[0])
            counts["mac_fp32"] -= 1
            record.ops[i] = (func, meta, kind, scope, (counts, *cost[1:]), sig)
    with pytest.raises(AssertionError, match="step replay"):
        dev.run(lin, x)


def test_nested_block_ends_the_step(toy_gpu_path):
    def run(replay):
        torch.manual_seed(0)
        dev = TorchDevice(toy_gpu_path, replay=replay)
        lin = dev.compile(nn.Linear(4, 3))
        with dev.count("outer"), torch.no_grad():
            for _ in range(3):
                lin(torch.ones(2, 4, device=dev.torch_device))
                with dev.count("inner"):
                    torch.ones(3).add_(1.0)
        return dev.ledger
    assert run(True) == run(False)
    # 3 inner adds of 3 elements each, under outer/inner
    assert run(True).total_ops("outer/inner")["flop_fp32"] == 9


def test_replay_setting_is_checked(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    assert dev.replay is False
    with pytest.raises(ModelError, match="replay"):
        dev.replay = "yes"


def test_detached_gradient_is_writable_state(toy_gpu_path):
    """Issue 36, found with step replay: autograd detaches the gradient from the kernel's
    output, and the output object dies; the resident entry judged liveness by the tensor
    objects seen, so the gradient's storage was reset as new and counted read-only."""
    dev = TorchDevice(toy_gpu_path)
    lin = dev.compile(nn.Linear(4, 3, bias=False))
    x = torch.ones(2, 4, device=dev.torch_device)
    with dev.count("train"):
        lin(x).sum().backward()
    fp = dev.ledger.footprints()["train"]
    # writable: the gradient, 3 x 4 x 4 B = 48 B; read-only: the weight 48 B and x 32 B
    assert (fp["writable"], fp["read_only"]) == (48, 80)
