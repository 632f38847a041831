"""`export --target c-int8` of the blocks mobile networks are built from beyond single
layers: squeeze-and-excitation (MobileNetV3, EfficientNet: a per-channel product), a
hardswish written out (``x * relu6(x + 3) / 6``: a product and arithmetic with numbers),
channel concatenation (SqueezeNet's fire module, DenseNet, Inception), a gated linear unit
and a difference of two tensors. Each net is quantised, checked against its fp32 output,
compiled on the host and on QEMU's Cortex-M4, where the C must agree with the reference bit
for bit; the forms the kernels do not take are refused in one line."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from deploy.c_int8.export import export_int8
from sim.bitwise import int8 as q8
from tests.deploy.test_c_int8 import (
    _data,
    assert_cortex_m4_as_predicted,
    assert_host_bit_exact,
    assert_tracks_fp32,
    export_nets,
)
from tests.deploy.test_c_int8_layers import _Lambda, _refused


class SqueezeExcite(nn.Module):
    """MobileNetV3's inverted residual with squeeze-and-excitation as torchvision writes it
    (pool, 1x1 conv, ReLU, 1x1 conv, hardsigmoid, ``y * s``), a hardswish written out, the
    per-channel weights first in a product (``sigmoid(mean) * g``) and ``z - 0.5 * x``."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.expand = nn.Conv2d(8, 16, 1)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.fc1 = nn.Conv2d(16, 4, 1)
        self.fc2 = nn.Conv2d(4, 16, 1)
        self.project = nn.Conv2d(16, 8, 1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        x = F.hardswish(self.stem(x))
        y = F.hardswish(self.dw(F.relu(self.expand(x))))
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(y, 1)))))
        x = x + self.project(y * s)
        g = x * F.relu6(x + 3) / 6
        z = torch.sigmoid(x.mean((2, 3), keepdim=True)) * g
        return self.head(torch.flatten(F.adaptive_avg_pool2d(z - 0.5 * x, 1), 1))


class Concats(nn.Module):
    """SqueezeNet's fire module (``torch.cat`` of a 1x1 and a 3x3 expansion), a DenseNet
    block (the input kept: ``cat((y, x), 1)``, then ``cat([y, f(y)], 1)``), and on feature
    vectors a difference and a gated linear unit joined by ``cat(..., -1)``."""

    def __init__(self):
        super().__init__()
        self.squeeze = nn.Conv2d(2, 4, 1)
        self.e1 = nn.Conv2d(4, 6, 1)
        self.e3 = nn.Conv2d(4, 6, 3, padding=1)
        self.dense = nn.Conv2d(14, 4, 3, padding=1)
        self.fc_a = nn.Linear(18, 8)
        self.fc_b = nn.Linear(18, 8)
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        s = F.relu(self.squeeze(x))
        y = torch.cat([F.relu(self.e1(s)), F.relu(self.e3(s))], dim=1)
        y = torch.cat((y, x), 1)
        y = torch.cat([y, F.relu(self.dense(y))], 1)
        v = torch.flatten(F.max_pool2d(y, 8), 1)
        a, b = self.fc_a(v), self.fc_b(v)
        return self.fc(torch.cat([a - b, a * torch.sigmoid(b)], -1))


class FacePReLU(nn.Module):
    """MobileFaceNet's blocks: conv + BatchNorm + PReLU with one alpha per channel (random,
    some negative), a depthwise conv + PReLU, and a shared-alpha PReLU on features."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), \
            nn.BatchNorm2d(8)
        self.a1 = nn.PReLU(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.a2 = nn.PReLU(8)
        self.fc1 = nn.Linear(8 * 4 * 4, 12)
        self.a3 = nn.PReLU()
        self.fc2 = nn.Linear(12, 4)
        with torch.no_grad():
            for a in (self.a1, self.a2):
                a.weight.uniform_(-0.3, 0.6)
            self.a3.weight.fill_(0.1)

    def forward(self, x):
        y = self.a2(self.dw(self.a1(self.b1(self.c1(x)))))
        return self.fc2(self.a3(self.fc1(torch.flatten(y, 1))))


class SENetIdioms(nn.Module):
    """Squeeze-and-excitation as SENet writes it (Linear layers; ``b, c, _, _ = y.size()``,
    ``view(b, c, 1, 1)``), as ``s[:, :, None, None]`` and as ``unsqueeze(-1).unsqueeze(-1)
    .expand_as(y)``; ``-y``; ``F.avg_pool2d(y, 2)`` with its stride left out; a number over
    a tensor whose calibrated range, widened to hold 0, makes one table entry infinite
    (6 / x at x = 0: saturated); ``y.shape[0]`` in a view."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 8, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(8, 4), nn.Linear(4, 8)
        self.fc3 = nn.Linear(8, 8)
        self.head = nn.Linear(8 * 4 * 4, 4)

    def forward(self, x):
        y = F.relu(self.c(x))
        b, c, _, _ = y.size()
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(y, 1).view(b, c)))))
        y = y * s.view(b, c, 1, 1)
        g = torch.sigmoid(self.fc3(y.mean((2, 3))))
        y = y * g[:, :, None, None] + g.unsqueeze(-1).unsqueeze(-1).expand_as(y) * y
        y = F.avg_pool2d(F.relu(-y + 1) + y, 2)
        y = 6 / (torch.sigmoid(y) + 1)
        return self.head(y.view(y.shape[0], -1))


NETS = {"squeeze_excite": (SqueezeExcite, (1, 3, 8, 8)), "concats": (Concats, (1, 2, 8, 8)),
        "prelu": (FacePReLU, (1, 3, 8, 8)), "senet_idioms": (SENetIdioms, (1, 3, 8, 8))}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each net (seeded weights) exported once, calibrated on 200 random inputs."""
    return export_nets(NETS, tmp_path_factory, "c_int8_blocks")


def _layers(result) -> list[str]:
    return [type(n).__name__ for n in result.graph.nodes if not isinstance(n, q8.Reshape)]


def test_blocks_as_the_kernels_run_them(exported):
    se = exported["squeeze_excite"][2]
    assert _layers(se) == [
        "Conv2d", "Lut",                                   # stem, hardswish
        "Conv2d", "Conv2d", "Lut",                         # expand + ReLU, dw, hardswish
        "AvgPool2d", "Conv2d", "Conv2d", "Lut", "Mul",     # squeeze, excite, y * s
        "Conv2d", "Add",                                   # project, residual
        "Lut", "Clamp", "Mul", "Lut",                      # x + 3, relu6, x * ..., / 6
        "AvgPool2d", "Lut", "Mul",                         # sigmoid(mean) * g
        "Lut", "Add", "AvgPool2d", "Linear"]               # 0.5 * x, z - ..., pool, head
    g = se.graph
    muls = [n for n in g.nodes if isinstance(n, q8.Mul)]
    # the per-channel operand is the second, whichever side the model wrote it on
    assert [(g.tensors[m.inputs[0]].shape, g.tensors[m.inputs[1]].shape) for m in muls] == [
        ((16, 8, 8), (16, 1, 1)), ((8, 8, 8), (8, 8, 8)), ((8, 8, 8), (8, 1, 1))]
    # z - 0.5 x: an add whose second input's multiplier is negated (TFLite's sub); the
    # residual add's is not
    residual, difference = [n for n in g.nodes if isinstance(n, q8.Add)]
    assert residual.multiplier2 > 0 > difference.multiplier2
    # the table of x + 3: at the input's zero point (x = 0) it holds 3 at the output's scale
    plus3 = g.nodes[[type(n).__name__ for n in g.nodes].index("Clamp") - 1]
    tin, tout = g.tensors[plus3.inputs[0]], g.tensors[plus3.output]
    assert plus3.table[tin.zero_point + 128] == min(127, round(3 / tout.scale) + tout.zero_point)

    cat = exported["concats"][2]
    assert _layers(cat) == ["Conv2d", "Conv2d", "Conv2d", "Concat", "Concat", "Conv2d",
                            "Concat", "MaxPool2d", "Linear", "Linear", "Add", "Lut", "Mul",
                            "Concat", "Linear"]
    g = cat.graph
    concats = [n for n in g.nodes if isinstance(n, q8.Concat)]
    # channels: 6 + 6 = 12, + the input's 2 = 14, + the dense conv's 4 = 18; features 8 + 8
    assert [g.tensors[n.output].shape for n in concats] == [(12, 8, 8), (14, 8, 8),
                                                            (18, 8, 8), (16,)]
    # every input requantised to the output's scale: multiplier x 2^(shift - 31) = ratio
    for n in concats:
        for t, m, s in zip(n.inputs, n.multipliers, n.shifts, strict=True):
            ratio = g.tensors[t].scale / g.tensors[n.output].scale
            assert abs(m * 2.0 ** (s - 31) - ratio) <= 1e-9 * ratio


def test_senet_idioms(exported):
    """Each spelling of the per-channel weights is a free reshape (no code, no arena) and
    the product broadcasts them: three products of (8, 8, 8) by (8, 1, 1); the table of
    6 / x saturates at x = 0 (its input's zero point) instead of refusing."""
    result = exported["senet_idioms"][2]
    g = result.graph
    muls = [n for n in g.nodes if isinstance(n, q8.Mul)]
    assert [g.tensors[m.inputs[1]].shape for m in muls] == [(8, 1, 1)] * 3
    pools = [n for n in g.nodes if isinstance(n, q8.AvgPool2d)]
    assert (pools[-1].kernel, pools[-1].stride) == ((2, 2), (2, 2))   # stride = kernel
    div = g.nodes[[n.name for n in g.nodes].index("truediv")]
    zp = g.tensors[div.inputs[0]].zero_point
    assert div.table[zp + 128] == 127


def test_prelu_alphas(exported):
    """One int8 alpha per channel, symmetric: the largest |alpha| at 127; the shared one
    repeated over the 12 features (the C reads one per channel)."""
    model, _, result = exported["prelu"]
    assert _layers(result) == ["Conv2d", "PReLU", "Conv2d", "PReLU", "Linear", "PReLU",
                               "Linear"]
    p1, p2, p3 = [n for n in result.graph.nodes if isinstance(n, q8.PReLU)]
    for node, mod in ((p1, model.a1), (p2, model.a2)):
        alpha = mod.weight.detach().numpy().astype(np.float64)
        scale = np.abs(alpha).max() / 127
        assert node.alpha.tolist() == np.round(alpha / scale).astype(int).tolist()
        assert np.abs(node.alpha).max() == 127 and (node.alpha < 0).any()
    assert p3.alpha.tolist() == [127] * 12


def test_concat_requantises_each_input_into_its_block():
    """By hand: an input at the output's scale and zero point is copied; one at half the
    scale (0.1 against 0.2, zero point 0 against 10) is halved and moved: q -> q / 2 + 10
    (even q: no rounding)."""
    ts = [q8.QTensor("a", (5,), 0.2, 10), q8.QTensor("b", (5,), 0.1, 0),
          q8.QTensor("y", (10,), 0.2, 10)]
    mult, shift = q8.quantize_multiplier(np.array([1.0, 0.5]))
    node = q8.Concat("cat", (0, 1), 2, tuple(int(m) for m in mult), tuple(int(s) for s in shift))
    # the graph's one input feeds both blocks: a as it is, b (the same bytes through a
    # reshape) read at scale 0.1, zero point 0
    graph = q8.Int8Graph(ts, [q8.Reshape("b", (0,), 1), node], 0, 2)
    x = np.array([[-128, -4, 0, 4, 126]], dtype=np.int8)
    assert q8.run_int8(graph, x).tolist() == [[-128, -4, 0, 4, 126, -54, 8, 10, 12, 73]]


@pytest.mark.parametrize("name", NETS)
def test_reference_tracks_fp32(exported, name):
    assert_tracks_fp32(*exported[name])


@pytest.mark.parametrize("name", NETS)
def test_host_bit_exact(exported, name):
    assert_host_bit_exact(exported[name][2])


@pytest.mark.parametrize("name", NETS)
def test_on_the_cortex_m4(exported, name):
    """On QEMU's Cortex-M4 bit for bit, and the built objects as predicted: flash within
    FLASH_MARGIN (the mul and concatenation kernels' code measured into the prediction),
    bss the planned arena (a concatenation's output is one buffer its inputs are written
    into, block after block)."""
    # the stack predicted is an upper bound: model_invoke keeps more arena addresses in
    # registers across a gated unit's calls (push {r3-r9, lr}: 32 B) than the 24 B taken
    # before
    assert_cortex_m4_as_predicted(exported[name][2])


def test_an_expand_is_only_a_products_operand(tmp_path):
    """expand_as(y) read by anything but a product: the export kept the small (C, 1, 1)
    value as it was, so a conv read it as (C, H, W) (wrong outputs, the C agreeing with
    the reference), a table read past it, the output had 4 values for torch's 256."""
    conv = nn.Conv2d(1, 4, 3, padding=1)

    def into_conv(m, x):
        y = m.layers[0](x)
        return torch.flatten(m.layers[1](y.mean((2, 3), keepdim=True).expand_as(y)), 1)

    def into_lut(m, x):
        y = m.layers[0](x)
        return torch.flatten(y - torch.sigmoid(y.mean((2, 3), keepdim=True).expand_as(y)), 1)

    def as_output(m, x):
        y = m.layers[0](x)
        return y.mean((2, 3), keepdim=True).expand_as(y)

    cases = {"conv": _Lambda(into_conv, conv, nn.Conv2d(4, 2, 3, padding=1)),
             "lut": _Lambda(into_lut, conv), "output": _Lambda(as_output, conv)}
    for reader, model in cases.items():
        msg = _refused(model, (1, 1, 8, 8), tmp_path)
        assert "(expand) is not supported" in msg and f"({reader})" in msg, msg
    # as a product's operand it still exports (the SE idiom: y * s.expand_as(y))
    def se(m, x):
        y = m.layers[0](x)
        return torch.flatten(y * torch.sigmoid(y.mean((2, 3), keepdim=True)).expand_as(y), 1)

    model = _Lambda(se, conv)
    torch.manual_seed(0)
    result = export_int8(model.eval(), (1, 1, 8, 8), (_data((1, 1, 8, 8), 20, 1), None, None),
                         tmp_path / "se")
    assert any(layer.startswith("Mul") for layer in result.report["layers"])


def test_what_the_kernels_cannot_do_is_refused(tmp_path):
    conv = nn.Conv2d(2, 2, 1)
    # a concatenation along the height: the inputs are no blocks of the output's bytes
    msg = _refused(_Lambda(lambda m, x: torch.flatten(torch.cat([m.layers[0](x), x], 2), 1),
                           conv), (1, 2, 4, 4), tmp_path)
    assert "'cat'" in msg and "along axis 2" in msg
    # spatial attention: a (1, H, W) map over every channel is no per-channel product
    msg = _refused(_Lambda(lambda m, x: torch.flatten(
        m.layers[0](x) * torch.sigmoid(m.layers[1](x)), 1), conv, nn.Conv2d(2, 1, 1)),
        (1, 2, 4, 4), tmp_path)
    assert "operands of shapes (2, 4, 4) and (1, 4, 4)" in msg
    # the per-channel broadcast is for a product only
    msg = _refused(_Lambda(lambda m, x: torch.flatten(
        m.layers[0](x) - F.adaptive_avg_pool2d(x, 1), 1), conv), (1, 2, 4, 4), tmp_path)
    assert "'sub'" in msg and "expected one shape" in msg
    # a division of two tensors has no int8 kernel; torch.add's alpha is not taken
    msg = _refused(_Lambda(lambda m, x: m.layers[0](x) / (x + 1), nn.Linear(4, 4)), (1, 4),
                   tmp_path)
    assert "division of two tensors" in msg
    msg = _refused(_Lambda(lambda m, x: torch.add(m.layers[0](x), x, alpha=2),
                           nn.Linear(4, 4)), (1, 4), tmp_path)
    assert "with alpha" in msg
    # a tensor the model holds as an operand is named as such (was "fx op get_attr")
    gamma = _Lambda(lambda m, x: m.layers[0](x) * m.gamma, nn.Linear(4, 4))
    gamma.gamma = nn.Parameter(torch.ones(4))
    msg = _refused(gamma, (1, 4), tmp_path)
    assert "tensor 'gamma' held by the model" in msg and "used as an operand" in msg
    # indexing other than new axes of 1
    msg = _refused(_Lambda(lambda m, x: m.layers[0](x)[:, :2], nn.Linear(4, 4)), (1, 4),
                   tmp_path)
    assert "'getitem' (indexing)" in msg and "only new axes of 1" in msg
