"""Deferred activity counts (sim/torch_engine/activity.py, issue 36): off the CPU the
NeuroBench counts stay on the device until the block ends, one read-back a block. Run here
on the CPU (``LayerRecorder.defer_on_cpu``): training ledgers equal the host path's, with
zero weights, spiking inputs, spiking neurons and recurrent cells, and nothing in the
recorder reads a tensor's value back to Python before the flush."""
import sys

import pytest
import torch
from torch import nn

from sim.torch_engine.activity import LayerRecorder
from sim.torch_engine.engine import TorchDevice


class Recurrent(nn.Module):
    """An LSTM cell run over 3 steps of its input, then a head."""

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(6, 5)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        state = None
        for t in range(x.shape[1]):
            state = self.cell(x[:, t], state)
        return self.head(state[0])


def _pruned_cnn():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(4, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(24, 3))
    with torch.no_grad():        # zero weights: the general count differs from the dense
        net[0].weight[0] = 0.0
        net[6].weight[:, :5] = 0.0
    return net


def _recurrent():
    torch.manual_seed(0)
    return Recurrent()


def _spiking_mlp():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))
    with torch.no_grad():
        net[0].weight[:, 2] = 0.0
    return net


CASES = {   # factory, a batch of inputs (generator -> tensor)
    "cnn": (_pruned_cnn, lambda g: torch.relu(torch.randn(4, 1, 8, 8, generator=g))),
    # 0/1 inputs: spikes, their pairs are accumulates
    "spikes": (_spiking_mlp, lambda g: (torch.rand(4, 12, generator=g) > 0.6).float()),
    "real": (_spiking_mlp, lambda g: torch.randn(4, 12, generator=g)),
    "recurrent": (_recurrent, lambda g: torch.randn(4, 3, 6, generator=g)),
}


def _train(case: str, deferred: bool, monkeypatch, replay=False) -> TorchDevice:
    """Four SGD steps and an inference, counted; the ledger's device."""
    monkeypatch.setattr(LayerRecorder, "defer_on_cpu", deferred)
    make, batch = CASES[case]
    dev = TorchDevice("a100", replay=replay)
    net = dev.compile(make())
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    g = torch.Generator().manual_seed(1)
    data = [(dev.tensor(batch(g)), dev.tensor(torch.randint(0, 3, (4,), generator=g),
                                              dtype=torch.int64)) for _ in range(4)]
    with dev.count("train", samples=16):
        for x, y in data:
            loss = nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        dev.run(net, data[0][0])
    return dev


@pytest.mark.parametrize("case", sorted(CASES))
def test_deferred_training_ledger_equals_the_host_path(case, monkeypatch):
    host = _train(case, False, monkeypatch).ledger
    deferred = _train(case, True, monkeypatch).ledger
    assert deferred == host
    acts = host.activity()
    assert acts["dense_synops"] > 0
    # each case exercises the branch it is named for (the split decided on the device)
    if case == "spikes":   # the first layer reads spikes, the second a ReLU's output
        assert acts.get("effective_acs", 0) > 0 and acts.get("effective_macs", 0) > 0
    else:
        assert acts.get("effective_macs", 0) > 0 and "effective_acs" not in acts
    if case != "recurrent":
        # zero weights and zero activations: fewer effective pairs than dense ones
        assert acts.get("effective_macs", acts.get("effective_acs")) < acts["dense_synops"]
        assert 0 < acts["activations_zero"] < acts["activations"]
    # with step replay as well (the bench's setting)
    assert _train(case, True, monkeypatch, replay=True).ledger == host


def test_snntorch_neuron_membranes_deferred(monkeypatch):
    snn = pytest.importorskip("snntorch")

    def run(deferred):
        monkeypatch.setattr(LayerRecorder, "defer_on_cpu", deferred)
        torch.manual_seed(0)
        lin, lif = nn.Linear(5, 4), snn.Leaky(beta=0.8, threshold=0.5)
        dev = TorchDevice("a100")
        x = torch.rand(6, 3, 5)
        with torch.no_grad(), dev.count("infer", samples=3):
            mem = lif.init_leaky()
            for t in range(6):
                spk, mem = lif(lin(x[t]), mem)
        return dev.ledger

    host = run(False)
    assert run(True) == host
    acts = host.activity()
    # 6 steps x 3 samples x 4 neurons = 72 outputs; the first call counts all 12 membranes
    assert acts["activations"] == 72 and acts["membrane_updates"] >= 12


# a tensor's value into Python (``numpy`` is not here: activity.py takes a host view only of
# a CPU tensor, and off the CPU ``_host_array`` returns None before calling it)
_READS = ("item", "tolist", "__int__", "__float__", "__bool__", "__index__")
# once a block, not per call: the read-back itself, and the model facts at the block's end
_ONCE_A_BLOCK = ("flush", "model_facts")


@pytest.mark.parametrize("case", sorted(CASES))
def test_deferred_counts_are_not_read_back_per_call(case, monkeypatch):
    """On a GPU every read of a device value into Python waits for the kernels queued
    before it. Here each way a tensor becomes a Python value raises when activity.py calls
    it, except once a block (``flush``, ``model_facts``): the counted training still
    runs."""
    activity_file = sys.modules[LayerRecorder.__module__].__file__
    reads: list[str] = []

    def guard(name):
        real = getattr(torch.Tensor, name)

        def read(self, *args, **kwargs):
            caller = sys._getframe(1)
            if (caller.f_code.co_filename == activity_file
                    and caller.f_code.co_name not in _ONCE_A_BLOCK):
                reads.append(f"{name} in {caller.f_code.co_name}")
                raise AssertionError(f"activity read a tensor back: {reads[-1]}")
            return real(self, *args, **kwargs)
        return read

    for name in _READS:
        monkeypatch.setattr(torch.Tensor, name, guard(name))
    dev = _train(case, True, monkeypatch)
    assert reads == []
    assert dev.ledger.activity()["dense_synops"] > 0
    if dev.torch_device.type == "cpu":
        # the guard does catch a read: the CPU's host path reads counts back every call
        with pytest.raises(AssertionError, match="activity read a tensor back"):
            _train(case, False, monkeypatch)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (a GPU machine)")
@pytest.mark.parametrize("case", sorted(CASES))
def test_cuda_activity_equals_the_cpu_host_path(case, monkeypatch):
    """The same weights and batch on CUDA (deferred counts) and on the CPU (host path): the
    same NeuroBench activity, scope by scope (an inference: no training to drift apart)."""
    make, batch = CASES[case]
    x = batch(torch.Generator().manual_seed(1))
    per_device = []
    for prefer_cuda in (True, False):
        dev = TorchDevice("a100", prefer_cuda=prefer_cuda)
        assert dev.torch_device.type == ("cuda" if prefer_cuda else "cpu")
        net = dev.compile(make())        # each factory seeds its own weights
        with torch.no_grad():
            dev.run(net, x)
        per_device.append({s: dev.ledger.activity(s) for s in dev.ledger.scopes()})
    assert per_device[0] == per_device[1]
    assert any(a.get("dense_synops", 0) > 0 for a in per_device[0].values())
