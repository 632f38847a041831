"""Per-layer rows (sim/layers.py): names, types, shapes, parameters and work by hand."""
import math

import numpy as np
import torch
from torch import nn

from sim.bitwise.network import ScoresLayer, SignLayer
from sim.engines import device
from sim.layers import LayerRow, bound_of, latency_parts, layer_rows
from sim.neuromorphic import Network
from sim.neuromorphic.engine import NeuromorphicDevice
from sim.torch_engine.engine import TorchDevice


def _cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(2 * 4 * 4, 3))


def test_sequential_cnn_rows():
    dev = TorchDevice("a100")
    net = dev.compile(_cnn())
    dev.run(net, torch.randn(2, 1, 4, 4))
    report = dev.ledger.price("a100")
    rows = layer_rows(dev.ledger, report)
    assert [(r.name, r.type, r.output_shape, r.parameters) for r in rows] == [
        ("0", "Conv2d", (2, 2, 4, 4), 2 * 1 * 9 + 2),      # weights + biases
        ("1", "ReLU", (2, 2, 4, 4), 0),
        ("2", "Flatten", (2, 32), 0),
        ("3", "Linear", (2, 3), 32 * 3 + 3)]
    # conv: 2 samples x 2 channels x 16 positions x 9 taps = 576 MACs (padded taps counted,
    # as torchinfo does); linear: 2 x 32 x 3 = 192; ReLU: one op per element, 2 x 32 = 64
    assert [(r.work, r.work_unit) for r in rows] == [(576, "MACs"), (64, "ops"), (0, "ops"),
                                                     (192, "MACs")]
    conv = rows[0]
    scope = "infer/0/forward"
    assert conv.energy_j == sum(c.energy_j for c in report.charges if c.scope == scope)
    assert conv.latency_s == report.latency_s[scope]
    assert conv.bytes == sum(dev.ledger.bytes(scope).values())
    parts = latency_parts(report, [scope])
    assert conv.bound == max(parts, key=parts.get) == bound_of(report, [scope])
    # the flatten is a view: no op, no time
    assert rows[2] == LayerRow("2", "Flatten", (2, 32), 0, 0, "ops", 0, 0.0, 0.0, "")


def test_forward_and_backward_under_every_top_scope_are_summed():
    dev = TorchDevice("a100")
    net = dev.compile(_cnn())
    x = torch.randn(2, 1, 4, 4).to(dev.torch_device)
    with dev.count("train", samples=2):
        net(x).sum().backward()
    dev.run(net, x)
    led = dev.ledger
    rows = {r.name: r for r in layer_rows(led, led.price("a100"))}

    def macs(scope):
        return sum(n for op, n in led.ops(scope).items() if op.startswith("mac_"))
    want = macs("train/3/forward") + macs("train/3/backward") + macs("infer/3/forward")
    # linear backward: grad input 2x3x32 + grad weight 3x32x2 = 384 MACs, twice forward
    assert macs("train/3/backward") == 384
    assert rows["3"].work == want == 192 + 384 + 192


def test_root_leaf_module_is_the_model_row():
    dev = TorchDevice("a100")
    lin = dev.compile(nn.Linear(4, 3))
    dev.run(lin, torch.ones(2, 4))
    (row,) = layer_rows(dev.ledger, dev.ledger.price("a100"))
    assert (row.name, row.type, row.output_shape, row.parameters, row.work) == \
        ("(model)", "Linear", (2, 3), 15, 24)     # 2 x 4 x 3 MACs


def test_population_rows_on_the_neuromorphic_engine():
    # in (2) -> hid (2) -> out (1); input spikes at step 0 on both channels; weights 20 make
    # every target fire the step after its input: hid fires in step 1, out in step 2
    net = Network(dt=1e-3)
    net.population("hid", 2, "lif", tau_mem=0.01, v_threshold=1.0)
    net.population("out", 1, "lif", tau_mem=0.01, v_threshold=1.0)
    net.spikes("in", 2, steps=[0, 0], index=[0, 1])
    net.connect("in", "hid", weight=[[20.0, 0.0], [0.0, 20.0]])
    net.connect("hid", "out", weight=[[20.0, 20.0]])
    dev = NeuromorphicDevice("loihi")
    dev.compile(net)
    dev.run(4)
    report = dev.ledger.price("loihi")
    rows = layer_rows(dev.ledger, report)
    # synops received: hid 2 (one per input spike), out 2 (one per hid spike)
    assert [(r.name, r.type, r.output_shape, r.parameters, r.work, r.work_unit)
            for r in rows] == [("hid", "lif", (2,), 2, 2, "synops"),
                               ("out", "lif", (1,), 2, 2, "synops")]
    # hid: half the synops (2 of 4) and their synapse-memory bytes, and 2 x 4 of the
    # 3 x 4 neuron updates; spike, routing and static lines stay with the run
    syn = sum(c.energy_j for c in report.charges
              if c.item == "synop" or c.category == "memory")
    upd = sum(c.energy_j for c in report.charges if c.item.startswith("neuron_update"))
    assert math.isclose(rows[0].energy_j, syn * 2 / 4 + upd * 8 / 12, rel_tol=1e-12)
    assert rows[0].bytes == sum(dev.ledger.bytes("run").values()) // 2
    assert all(math.isnan(r.latency_s) for r in rows)


def test_bitwise_layer_rows():
    dev = device("cortex-m7")
    w = np.array([[0b1010], [0b0110]], np.uint32)
    layers = [SignLayer(w, 4, np.array([0, 0]), name="h"),
              ScoresLayer(np.array([[0b01], [0b10]], np.uint32), 2, name="s")]
    dev.run(layers, np.array([[0b1100]], np.uint32))
    rows = layer_rows(dev.ledger, dev.ledger.price("cortex-m7"))
    # parameters: 2 x 4 weight bits + 2 thresholds; 2 x 2 + 2 biases
    assert [(r.name, r.type, r.output_shape, r.parameters) for r in rows] == [
        ("L0_h", "SignLayer", (2,), 10), ("L1_s", "ScoresLayer", (2,), 6)]
    assert all(r.work > 0 and r.work_unit == "ops" for r in rows)
    assert dev.ledger.models()["network"]["connection_weights"] == 8 + 4


class _Policy(nn.Module):
    """geb's pattern: a method other than forward runs parts of the model."""

    def __init__(self):
        super().__init__()
        self.ctx = nn.Embedding(4, 8)
        self.head = nn.Sequential(nn.Tanh(), nn.Linear(8, 3))

    def logits(self, x):
        return self.head(self.ctx(x))

    def forward(self, x):
        return self.logits(x).sum(-1)


def test_a_compiled_models_part_called_directly_keeps_its_path(toy_gpu_path):
    """``policy.logits(x)`` ran the embedding first, outermost: it was recorded as layer ""
    (the root, which then took every unsuffixed scope: geb's per-layer table gave a 512-
    parameter Embedding 80% of the run's energy) and the head's layers as "0" and "1"."""
    dev = TorchDevice(toy_gpu_path, prefer_cuda=False)
    pol = dev.compile(_Policy())
    x = torch.arange(4, device=dev.torch_device)
    with dev.count("train/a", samples=4):
        pol(x).sum().backward()
    with torch.no_grad(), dev.count("train/b", samples=4):
        pol.logits(x)
    assert list(dev.ledger.layers()) == ["ctx", "head.0", "head.1"]
    assert {s for s in dev.ledger.scopes() if s.startswith("train/b/")} == {
        "train/b/ctx/forward", "train/b/head.0/forward", "train/b/head.1/forward"}
    # 4 rows x 8 x 3 MACs in the head's Linear, under its own name in both blocks
    assert dev.ledger.total_ops("train/b/head.1")["mac_fp32"] == 4 * 8 * 3
