"""Step replay against tensors from outside the step's key (found by a probe: each ledger
differed from full counting's, or replay raised where full counting worked). A replayed op
with a price must have its recorded call's signature, not only its output's shape: a raw
batch resized for the next step, a tensor passed by keyword, a layer swapped for one of
another kernel size, sparse tensors (their price reads their stored values) and strided
nested tensors (no sizes)."""
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from sim.torch_engine import TorchDevice
from sim.torch_engine.replay import FULL

aten = torch.ops.aten


def _both(loop, toy_gpu_path):
    """The ledger of ``loop(dev)`` counted in full and with replay (and verify mode run)."""
    ledgers = []
    for replay in (False, True, "verify"):
        torch.manual_seed(0)
        dev = TorchDevice(toy_gpu_path, prefer_cuda=False, replay=replay)
        loop(dev)
        ledgers.append(dev.ledger)
    return ledgers[0], ledgers[1], dev


def test_a_raw_batch_resized_for_the_next_step(toy_gpu_path):
    raw = [torch.rand(1, 3, s, s) for s in (32, 64, 128, 64)]

    def loop(dev):
        net = dev.compile(nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(),
                                        nn.Linear(4 * 14 * 14, 2)))
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        with dev.count("train"):
            for img in raw:
                # the pooling runs between two model calls: in the step before, whose key
                # holds the model's 16 x 16 input, not the raw size
                x = F.adaptive_avg_pool2d(img, 16)
                net(x).square().mean().backward()
                opt.step()
                opt.zero_grad()

    full, fast, _ = _both(loop, toy_gpu_path)
    assert fast == full
    # adaptive pooling of 3 x s x s to 16 x 16 reads every input element: the raw sizes'
    # bytes, 3 x (32^2 + 64^2 + 128^2 + 64^2) x 4 B = 314,880 B, are in full counting's
    # reads (with replay the later ones were priced at 32 x 32)
    assert full.total_bytes()[("offchip", "read")] > 3 * (32**2 + 64**2 + 128**2 + 64**2) * 4


class Attending(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, context=None):
        return self.lin(x) + context.mean(1)


def test_a_tensor_passed_by_keyword(toy_gpu_path):
    contexts = [torch.randn(2, n, 8) for n in (4, 100, 1000)]

    def loop(dev):
        net = dev.compile(Attending())
        with dev.count("infer"), torch.no_grad():
            for c in contexts:
                net(torch.randn(2, 8), context=c)

    full, fast, _ = _both(loop, toy_gpu_path)
    assert fast == full
    # the means add 2 x (n - 1) x 8 per context at least: 2 x (3 + 99 + 999) x 8 = 17,616
    assert full.total_ops()["flop_fp32"] >= 17_616


def test_a_layer_swapped_for_another_kernel_size(toy_gpu_path):
    def loop(dev):
        net = dev.compile(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(),
                                        nn.Conv2d(4, 4, 3, padding=1)))
        with dev.count("infer"), torch.no_grad():
            for k in (3, 5, 7):                   # padding keeps the output's shape
                net[2] = nn.Conv2d(4, 4, k, padding=k // 2)
                net(torch.randn(1, 1, 16, 16))

    full, fast, _ = _both(loop, toy_gpu_path)
    assert fast == full
    # the second convolution: 16 x 16 x 4 outputs x 4 inputs x (9 + 25 + 49) taps
    # = 339,968 MACs, the first 3 x 16 x 16 x 4 x 9 = 27,648
    assert full.total_ops()["mac_fp32"] == 16 * 16 * 16 * (9 + 25 + 49) + 3 * 16 * 16 * 4 * 9


class Graph(nn.Module):
    """An adjacency built from the batch as a sparse tensor: as many stored values as
    similar pairs, which the prices read."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        adj = (x @ x.T > 0).float().to_sparse()
        return torch.sparse.mm(adj, self.lin(x))


def test_sparse_tensors_are_priced_every_call(toy_gpu_path):
    batches = [torch.eye(64, 8), torch.rand(64, 8) + 0.1]  # 8 edges, then all 4,096

    def loop(dev):
        net = dev.compile(Graph())
        with dev.count("infer"), torch.no_grad():
            for x in batches:
                net(x)

    full, fast, dev = _both(loop, toy_gpu_path)
    assert fast == full
    kinds = {entry[0]: entry[2] for record in dev.step_replay.records.values()
             for entry in record.ops}
    # the conversion and the product take or make a sparse tensor: no signature, priced in
    # full on every call (they were replayed at the first batch's 8 stored values)
    assert kinds[aten._to_sparse.default] == FULL
    assert kinds[aten._sparse_addmm.default] == FULL


def test_a_step_with_a_strided_nested_tensor(toy_gpu_path):
    class Ragged(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)

        def forward(self, x, lengths):
            nt = torch.nested.nested_tensor([x[i, :n] for i, n in enumerate(lengths)])
            return torch.nested.to_padded_tensor(F.relu(self.lin(nt)), 0.0)

    def loop(dev):
        net = dev.compile(Ragged())
        with dev.count("infer"), torch.no_grad():
            for lengths in ([2, 6], [4, 4], [2, 6]):
                net(torch.randn(2, 6, 16), lengths)

    with warnings.catch_warnings():   # torch: nested tensors are a prototype
        warnings.simplefilter("ignore")
        full, fast, _ = _both(loop, toy_gpu_path)   # replay raised RuntimeError here
    assert fast == full
    assert full.total_ops()["mac_fp32"] == 3 * 8 * 16 * 16   # 8 rows a step x 16 x 16
