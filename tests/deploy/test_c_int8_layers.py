"""`export --target c-int8` of the layer forms microcontroller models are written in beyond
the first set (tests/deploy/test_c_int8.py): 1-D convolutions and pools (keyword spotting,
sensor time series) run as the 2-D kernels of height 1, a BatchNorm after a Linear or a
Conv1d folded into it (MLPerf Tiny's anomaly-detection autoencoder), functional pools,
``x.mean`` global averages and ``padding='same'``. Each model is quantised, checked against
its fp32 output and compiled on the host, where the C must agree with the reference bit for
bit; what the kernels cannot do is refused in one line."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from deploy.c_int8.export import export_int8
from deploy.c_int8.quantize import load_calibration
from deploy.errors import ExportError
from sim.bitwise import int8 as q8
from tests.deploy.test_c_int8 import (
    _data,
    assert_cortex_m4_as_predicted,
    assert_host_bit_exact,
    assert_tracks_fp32,
    export_nets,
)


def _random_statistics(bn: nn.modules.batchnorm._BatchNorm) -> None:
    """Running statistics away from (0, 1), so that a fold that skipped them shows."""
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.3, 3.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.3, 0.3)


class KWS1d(nn.Module):
    """1-D: Conv1d + BatchNorm1d + ReLU, depthwise Conv1d (padding='same') + ReLU6, residual
    add, MaxPool1d, F.avg_pool1d with padding not counted, x.mean(-1), Linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 8, 5, stride=2, padding=2, bias=False)
        self.bn1 = nn.BatchNorm1d(8)
        self.dw = nn.Conv1d(8, 8, 3, padding="same", groups=8)
        self.pool = nn.MaxPool1d(2)
        self.fc = nn.Linear(8, 6)
        _random_statistics(self.bn1)

    def forward(self, x):
        y = F.relu(self.bn1(self.c1(x)))
        y = y + F.relu6(self.dw(y))
        y = F.avg_pool1d(self.pool(y), 3, stride=2, padding=1, count_include_pad=False)
        return self.fc(y.mean(-1))


class Res8(nn.Module):
    """MLPerf Tiny's ResNet-8 form: convs without bias + BatchNorm2d, a strided 1x1 shortcut,
    residual add + ReLU, F.adaptive_avg_pool2d(y, (1, 1)), torch.flatten, Linear."""

    def __init__(self):
        super().__init__()
        self.c0, self.b0 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.c1, self.b1 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), \
            nn.BatchNorm2d(16)
        self.c2, self.b2 = nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16)
        self.shortcut = nn.Conv2d(8, 16, 1, stride=2)
        self.fc = nn.Linear(16, 10)
        for bn in (self.b0, self.b1, self.b2):
            _random_statistics(bn)

    def forward(self, x):
        x = F.relu(self.b0(self.c0(x)))
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        y = F.relu(y + self.shortcut(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, (1, 1)), 1))


class AutoEncoder(nn.Module):
    """MLPerf Tiny's anomaly-detection form: Linear + BatchNorm1d + ReLU blocks, a Linear
    out."""

    def __init__(self):
        super().__init__()
        blocks, d = [], 32
        for h in (16, 8, 16):
            blocks += [nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU()]
            d = h
        self.net = nn.Sequential(*blocks, nn.Linear(d, 32))
        for m in self.net:
            if isinstance(m, nn.BatchNorm1d):
                _random_statistics(m)

    def forward(self, x):
        return self.net(x)


class SameGap(nn.Module):
    """Conv2d padding='same' with dilation 2, F.max_pool2d, torch.mean over (2, 3) with
    keepdim, view(N, -1), Linear."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(2, 8, 3, padding="same", dilation=2)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = F.max_pool2d(torch.relu(self.c(x)), 2)
        y = torch.mean(y, dim=[-1, -2], keepdim=True)
        return self.fc(y.view(y.size(0), -1))


class Clamps(nn.Module):
    """ReLU6 written as x.clamp(0, 6) and F.hardtanh(x, 0, 6) (fused into the conv before
    each), a clamp to (-1, 1) after a pool (nothing to fuse into: a Clamp node) and
    torch.clip(x, min=0) (a ReLU) fused into a Linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 4, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(4 * 4 * 4, 8), nn.Linear(8, 3)

    def forward(self, x):
        y = F.hardtanh(self.c2(self.c1(x).clamp(0, 6)), 0.0, 6.0)
        y = torch.clamp(F.max_pool2d(y, 2), -1.0, 1.0)
        return self.fc2(torch.clip(self.fc1(torch.flatten(y, 1)), min=0))


class TFPadded(nn.Module):
    """Uneven padding: TensorFlow's 'same' for a strided conv written as F.pad(x, (0, 1, 0,
    1)) before it, a ZeroPad2d before a depthwise conv, padding='same' of a 4 x 4 kernel
    (torch: 1 before, 2 after), flatten, Linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 6, 3, stride=2)
        self.pad = nn.ZeroPad2d((2, 0, 1, 1))
        self.dw = nn.Conv2d(6, 6, 3, groups=6)
        self.c3 = nn.Conv2d(6, 4, 4, padding="same")
        self.fc = nn.Linear(4 * 5 * 5, 3)

    def forward(self, x):
        y = F.relu(self.c1(F.pad(x, (0, 1, 0, 1))))
        y = F.relu6(self.dw(self.pad(y)))
        return self.fc(torch.flatten(self.c3(y), 1))


class Causal1d(nn.Module):
    """A causal temporal CNN (time series on a microcontroller): ZeroPad1d((2, 0)) before a
    3-tap Conv1d, F.pad(x, (4, 0)) before a dilated one, a 4-tap Conv1d with padding='same',
    flatten, Linear (every time step reaches the output: a shifted window shows)."""

    def __init__(self):
        super().__init__()
        self.pad = nn.ZeroPad1d((2, 0))
        self.c1 = nn.Conv1d(3, 8, 3)
        self.c2 = nn.Conv1d(8, 8, 3, dilation=2)
        self.c3 = nn.Conv1d(8, 4, 4, padding="same")
        self.fc = nn.Linear(4 * 24, 2)

    def forward(self, x):
        y = F.relu(self.c1(self.pad(x)))
        y = F.relu(self.c2(F.pad(y, (4, 0))))
        return self.fc(torch.flatten(self.c3(y), 1))


class Activations(nn.Module):
    """Activations that are no clamp, each a 256-entry table: Hardswish after a conv
    (MobileNetV3), F.leaky_relu (TinyYOLO), nn.SiLU, F.gelu(approximate='tanh'),
    x.tanh(), and a torch.sigmoid output (a binary or anomaly score)."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(1, 4, 3, padding=1)
        self.act = nn.Hardswish()
        self.silu = nn.SiLU()
        self.fc1, self.fc2 = nn.Linear(4 * 4 * 4, 16), nn.Linear(16, 3)

    def forward(self, x):
        y = F.max_pool2d(F.leaky_relu(self.act(self.c(x)), 0.1), 2)
        y = F.gelu(self.silu(self.fc1(torch.flatten(y, 1))), approximate="tanh")
        return torch.sigmoid(self.fc2(y.tanh()))


NETS = {"kws1d": (KWS1d, (1, 4, 32)), "res8": (Res8, (1, 3, 12, 12)),
        "autoencoder": (AutoEncoder, (1, 32)), "samegap": (SameGap, (1, 2, 10, 10)),
        "clamps": (Clamps, (1, 1, 8, 8)), "tfpadded": (TFPadded, (1, 2, 10, 10)),
        "causal1d": (Causal1d, (1, 3, 24)), "activations": (Activations, (1, 1, 8, 8))}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each net (seeded weights, random BatchNorm statistics) exported once, calibrated on
    200 random inputs."""
    return export_nets(NETS, tmp_path_factory, "c_int8_layers")


def test_layers_as_the_kernels_run_them(exported):
    """The C's layers (reshapes are free views, no code): a BatchNorm is no layer of its own
    (folded), a 1-D layer is its 2-D kernel, a functional pool or mean is the pool."""
    kinds = {name: [type(n).__name__ for n in r.graph.nodes if not isinstance(n, q8.Reshape)]
             for name, (_, _, r) in exported.items()}
    assert kinds["kws1d"] == ["Conv2d", "Conv2d", "Add", "MaxPool2d", "AvgPool2d",
                              "AvgPool2d", "Linear"]
    assert kinds["res8"] == ["Conv2d", "Conv2d", "Conv2d", "Conv2d", "Add", "AvgPool2d",
                             "Linear"]
    assert kinds["autoencoder"] == ["Linear"] * 4
    assert kinds["samegap"] == ["Conv2d", "MaxPool2d", "AvgPool2d", "Linear"]
    assert kinds["clamps"] == ["Conv2d", "Conv2d", "MaxPool2d", "Clamp", "Linear", "Linear"]
    g = exported["clamps"][2].graph
    c1, c2, _, clamp, fc1, _ = [n for n in g.nodes if not isinstance(n, q8.Reshape)]
    for node in (c1, c2):   # clamp(0, 6) fused: floor at the zero point, top zp + 6 / scale
        t = g.tensors[node.output]
        assert node.act_min == t.zero_point == -128   # the range [0, max] starts at 0
        assert node.act_max == min(127, t.zero_point + round(6 / t.scale))
    t = g.tensors[clamp.inputs[0]]   # the pool's scale: -1 and 1 at zp -+ round(1 / scale)
    assert (clamp.act_min, clamp.act_max) == (max(-128, t.zero_point - round(1 / t.scale)),
                                              min(127, t.zero_point + round(1 / t.scale)))
    assert fc1.act_min == g.tensors[fc1.output].zero_point and fc1.act_max == 127
    assert kinds["activations"] == ["Conv2d", "Lut", "Lut", "MaxPool2d", "Linear", "Lut",
                                    "Lut", "Lut", "Linear", "Lut"]
    g = exported["activations"][2].graph
    sig = g.nodes[-1]
    tin, tout = g.tensors[sig.inputs[0]], g.tensors[sig.output]
    # the table's entry for the input's zero point (x = 0) is sigmoid(0) = 0.5 at the
    # output's scale; the table never falls (sigmoid rises)
    assert sig.table[tin.zero_point + 128] == min(127, round(0.5 / tout.scale)
                                                  + tout.zero_point)
    assert np.all(np.diff(sig.table.astype(int)) >= 0)
    # uneven padding: the conv's padding is the (top, left) offset, the rest follows from
    # the output size. tfpadded: F.pad(0, 1, 0, 1) adds nothing before; 10 + 1 -> (11 - 3)
    # // 2 + 1 = 5; ZeroPad2d(left 2, right 0, top 1, bottom 1) -> (1, 2) before, output (5
    # + 2 - 2, 5 + 2 - 2) = 5 x 5; 'same' 4 x 4: 3 // 2 = 1 before, 2 after
    g = exported["tfpadded"][2].graph
    c1, dw, c3 = g.nodes[:3]
    assert [type(n).__name__ for n in g.nodes] == ["Conv2d"] * 3 + ["Reshape", "Linear"]
    assert (c1.padding, dw.padding, c3.padding) == ((0, 0), (1, 2), (1, 1))
    assert g.tensors[c1.output].shape == (6, 5, 5) and g.tensors[c3.output].shape == (4, 5, 5)
    # causal1d: left pads 2 and 4 (dilation 2 x 2 taps), 'same' 4 taps 1 before: the length
    # stays 24 through every conv
    by_name = {n.name: n for n in exported["causal1d"][2].graph.nodes}
    assert [by_name[k].padding for k in ("c1", "c2", "c3")] == [(0, 2), (0, 4), (0, 1)]
    assert {exported["causal1d"][2].graph.tensors[by_name[k].output].shape
            for k in ("c1", "c2", "c3")} == {(8, 1, 24), (4, 1, 24)}
    g = exported["kws1d"][2].graph
    by_name = {n.name: n for n in g.nodes}
    c1, dw = by_name["c1"], by_name["dw"]
    # Conv1d(4, 8, 5, stride 2, padding 2) as height 1: [8, 4, 1, 5]; L 32 -> (32 + 4 - 4
    # - 1) // 2 + 1 = 16; padding='same' of a 3-tap kernel: 1 on each side
    assert c1.weight.shape == (8, 4, 1, 5) and c1.stride == (1, 2) and c1.padding == (0, 2)
    assert g.tensors[c1.output].shape == (8, 1, 16)
    assert dw.groups == 8 and dw.padding == (0, 1)
    # the input stays [N, 4, 32] as torch takes it
    assert g.tensors[g.input].shape == (4, 32)
    # what the export prints lists the model's layers, not the views the export added
    assert exported["kws1d"][2].report["layers"] == [
        "Conv2d c1", "Conv2d dw", "Add add", "MaxPool2d pool", "AvgPool2d avg_pool1d",
        "AvgPool2d mean", "Linear fc"]
    # samegap: padding='same', dilation 2, 3 taps: 2 x (3 - 1) / 2 = 2 on each side
    assert exported["samegap"][2].graph.nodes[0].padding == (2, 2)
    # the reshapes between them only view bytes: each 1-D layer's input and output share
    # its neighbours' storage, so the arena holds no copy (storage() maps a reshape's
    # output to its input's buffer)
    base = g.storage()
    assert base[c1.inputs[0]] == g.input and base[dw.inputs[0]] == base[c1.output]


@pytest.mark.parametrize("name", NETS)
def test_reference_tracks_fp32(exported, name):
    """The int8 reference, dequantised, stays within 6% of the fp32 output range on fresh
    inputs (as tests/deploy/test_c_int8.py: a few output steps of 1/255 of the range); a
    BatchNorm left out of the fold moves outputs by its statistics (means of +-0.5, scales
    0.5-1.8), far more."""
    assert_tracks_fp32(*exported[name])


@pytest.mark.parametrize("name", NETS)
def test_host_bit_exact(exported, name):
    assert_host_bit_exact(exported[name][2])


@pytest.mark.parametrize("name", ["kws1d", "tfpadded", "activations"])
def test_on_the_cortex_m4(exported, name):
    """The 1-D model's and the unevenly padded one's C on QEMU's Cortex-M4 bit for bit, and
    their built objects as predicted (as tests/deploy/test_c_int8.py checks its nets): the
    views between the 1-D layers add no code and no arena bytes (bss = the planned arena)."""
    assert_cortex_m4_as_predicted(exported[name][2])


def _refused(model, shape, tmp_path) -> str:
    torch.manual_seed(0)
    with pytest.raises(ExportError) as err:
        export_int8(model.eval(), shape, (_data(shape, 20, 1), None, None), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    return str(err.value)


class _Lambda(nn.Module):
    def __init__(self, fn, *layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.fn = fn

    def forward(self, x):
        return self.fn(self, x)


def test_what_the_kernels_cannot_do_is_refused(tmp_path):
    # a zero pad before a pool (a max pool pads with -inf, not 0), a pad of another value,
    # a reflection pad: nothing to fold them into
    msg = _refused(nn.Sequential(nn.ZeroPad2d(1), nn.MaxPool2d(2), nn.Flatten(),
                                 nn.Linear(2 * 5 * 5, 2)), (1, 2, 8, 8), tmp_path)
    assert "'0'" in msg and "only user" in msg
    msg = _refused(nn.Sequential(nn.ConstantPad1d(1, 0.5), nn.Conv1d(2, 2, 3), nn.Flatten(),
                                 nn.Linear(2 * 8, 2)), (1, 2, 8), tmp_path)
    assert "pads with 0.5" in msg
    msg = _refused(_Lambda(lambda m, x: m.layers[1](torch.flatten(m.layers[0](
        F.pad(x, (1, 1), mode="reflect")), 1)), nn.Conv1d(2, 2, 3), nn.Linear(2 * 8, 2)),
        (1, 2, 8), tmp_path)
    assert "mode='reflect'" in msg
    # a mean over the channels is no global average pool
    msg = _refused(_Lambda(lambda m, x: m.layers[0](x.mean(1)), nn.Linear(8, 2)),
                   (1, 3, 8), tmp_path)
    assert "'mean'" in msg and "over axes (1,)" in msg
    # the functional pool's settings go through the module's checks
    msg = _refused(_Lambda(lambda m, x: m.layers[0](torch.flatten(
        F.max_pool2d(x, 2, ceil_mode=True), 1)), nn.Linear(3 * 3 * 3, 2)), (1, 3, 5, 5),
        tmp_path)
    assert "max_pool2d" in msg and "ceil_mode" in msg
    # a BatchNorm after a pool has nothing to fold into
    msg = _refused(nn.Sequential(nn.Conv1d(2, 4, 3), nn.MaxPool1d(2), nn.BatchNorm1d(4),
                                 nn.Flatten(), nn.Linear(4 * 7, 2)), (1, 2, 16), tmp_path)
    assert "'2' (BatchNorm1d)" in msg and "directly follows" in msg
    # a clamp whose lower bound is above its upper one (torch gives the upper everywhere)
    msg = _refused(_Lambda(lambda m, x: m.layers[0](x).clamp(2.0, 1.0), nn.Linear(8, 2)),
                   (1, 8), tmp_path)
    assert "'clamp'" in msg and "bounds (2.0, 1.0)" in msg
    # an in-place clamp: torch.fx keeps the later use of y on the value before it, so the
    # export would drop the clamp; refused (write y = y.clamp(...))
    def inplace(m, x):
        y = m.layers[0](x)
        y.clamp_(0.0, 1.0)
        return m.layers[1](y)

    msg = _refused(_Lambda(inplace, nn.Linear(8, 4), nn.Linear(4, 2)), (1, 8), tmp_path)
    assert "tensor method .clamp_()" in msg

    # the same with a module: nn.ReLU(inplace=True) whose result is dropped
    def dropped(m, x):
        y = m.layers[0](x)
        m.layers[1](y)
        return m.layers[2](y)

    msg = _refused(_Lambda(dropped, nn.Linear(8, 4), nn.ReLU(inplace=True), nn.Linear(4, 2)),
                   (1, 8), tmp_path)
    assert "layers.1" in msg and "never used" in msg
    # a softmax at the end: the logits are what to export
    msg = _refused(nn.Sequential(nn.Linear(8, 3), nn.Softmax(dim=1)), (1, 8), tmp_path)
    assert "'1' (Softmax)" in msg and "export the logits" in msg
    # a 2-D pool on a [N, C, L] value (torch would pool over C and L as an unbatched image)
    msg = _refused(nn.Sequential(nn.MaxPool2d(2), nn.Flatten(), nn.Linear(2 * 4, 2)),
                   (1, 4, 8), tmp_path)
    assert "'0'" in msg and "per sample" in msg


def test_calibration_file_read_into_memory(tmp_path):
    """An .npy of float32 inputs is copied, not used as the read-only memory map (torch
    warned "The given NumPy array is not writable" on every export from one, and the map
    would read a file changed after the export began)."""
    path = tmp_path / "cal.npy"
    np.save(path, _data((1, 4, 32), 30, 2))
    x, x_test, y_test = load_calibration(str(path), (1, 4, 32))
    assert x.flags.writeable and not isinstance(x, np.memmap)
    assert x.shape == (30, 4, 32) and x_test is None and y_test is None
