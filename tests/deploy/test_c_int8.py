"""`export --target c-int8`: three small CNNs of our own quantised, run by the numpy int8
reference, and written as C that must agree with it bit for bit on host gcc and on QEMU's
Cortex-M3 and Cortex-M4 boards; sizes against the built objects; bad input."""
import re
import shutil

import numpy as np
import pytest
import torch
from torch import nn

from deploy.c_int8 import (
    FLASH_MARGIN,
    check_project,
    measure_instructions,
    measure_size,
    predict_sizes,
    tools_missing,
    trace_instructions,
    write_int8_project,
)
from deploy.c_int8.export import export_int8
from deploy.c_int8.quantize import SUPPORTED, quantize
from deploy.errors import ExportError
from sim.bitwise import int8 as q8
from sim.errors import HardwareLimitError


class ResDW(nn.Module):
    """conv + ReLU, depthwise conv + ReLU6, pointwise conv, residual add + ReLU, max pool,
    flatten, linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.relu = nn.ReLU()
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.act = nn.ReLU6()
        self.pw = nn.Conv2d(8, 8, 1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = self.relu(self.c1(x))
        y = torch.relu(y + self.pw(self.act(self.dw(y))))
        return self.fc(torch.flatten(self.pool(y), 1))


class AvgNet(nn.Module):
    """strided conv + BatchNorm (folded; random statistics) + ReLU6, depthwise conv with
    depth multiplier 2 and dilation 2, padded max pool, a ReLU after the pool (a clamp:
    nothing to fuse it into), avg pool, global average pool, dropout, linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(6)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.3, 0.3)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.2, 0.2)
        self.act = nn.ReLU6()
        self.dw = nn.Conv2d(6, 12, 3, padding=2, dilation=2, groups=6)
        self.mp = nn.MaxPool2d(3, stride=2, padding=1)
        self.relu = nn.ReLU()
        self.ap = nn.AvgPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        y = self.relu(self.mp(self.dw(self.act(self.bn(self.c1(x))))))
        return self.fc(self.drop(self.gap(self.ap(y)).flatten(1)))


class MLP(nn.Module):
    """view(N, -1), linear + ReLU, linear + ReLU6, linear."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(64, 32), nn.Linear(32, 16), nn.Linear(16, 10)

    def forward(self, x):
        x = x.view(x.size(0), -1)
        return self.l3(nn.functional.relu6(self.l2(torch.relu(self.l1(x)))))


NETS = {"resdw": (ResDW, (1, 1, 8, 8)), "avgnet": (AvgNet, (1, 3, 16, 16)),
        "mlp": (MLP, (1, 1, 8, 8))}


def _data(shape, n, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(0.5, 0.5, (n, *shape[1:])).astype(np.float32)


def export_nets(nets: dict, tmp_path_factory, folder: str) -> dict:
    """name -> (model, input shape, export) of each net class in ``nets`` (name -> (class,
    shape)), built with seed 0 and exported once, calibrated on 200 random inputs."""
    out = {}
    for name, (cls, shape) in nets.items():
        torch.manual_seed(0)
        model = cls().eval()
        result = export_int8(model, shape, (_data(shape, 200, 1), None, None),
                             tmp_path_factory.mktemp(folder) / name)
        out[name] = (model, shape, result)
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each net (seeded weights) exported once: calibrated on 200 random inputs."""
    return export_nets(NETS, tmp_path_factory, "c_int8")


def test_layers_quantised_as_designed(exported):
    kinds = {name: [type(n).__name__ for n in r.graph.nodes]
             for name, (_, _, r) in exported.items()}
    assert kinds["resdw"] == ["Conv2d", "Conv2d", "Conv2d", "Add", "MaxPool2d", "Reshape",
                              "Linear"]
    assert kinds["avgnet"] == ["Conv2d", "Conv2d", "MaxPool2d", "Clamp", "AvgPool2d",
                               "AvgPool2d", "Reshape", "Linear"]
    assert kinds["mlp"] == ["Reshape", "Linear", "Linear", "Linear"]
    res = exported["resdw"][2].graph
    # ReLU fused into c1: its output's zero point is the clamp's floor (range [0, max])
    c1 = res.nodes[0]
    assert c1.act_min == res.tensors[c1.output].zero_point == -128
    # ReLU6 fused into dw: the clamp top is zp + round(6 / scale), below 127 when the
    # calibrated range reaches 6, else 127
    dw = res.nodes[1]
    t = res.tensors[dw.output]
    assert dw.act_max == min(127, t.zero_point + round(6 / t.scale))


@pytest.mark.parametrize("name", NETS)
def test_reference_tracks_fp32(exported, name):
    """The int8 reference, dequantised, stays within 6% of the fp32 output range of the
    torch model on fresh inputs (a few output steps of 1/255 of the range each)."""
    assert_tracks_fp32(*exported[name])


def assert_tracks_fp32(model, shape, result) -> None:
    """The export's int8 reference on 100 fresh inputs, dequantised, has the model's output
    shape and stays within 6% of the fp32 output range of ``model`` on them."""
    x = _data(shape, 100, 7)
    with torch.no_grad():
        f = model(torch.from_numpy(x)).numpy()
    g = result.graph
    y = q8.dequantize(g.tensors[g.output], q8.run_int8(g, q8.quantize_input(g, x)))
    assert y.shape == f.shape
    assert np.abs(y - f).max() <= 0.06 * (f.max() - f.min())


def assert_cortex_m4_as_predicted(result) -> None:
    """The export's C on QEMU's Cortex-M4 prints every golden output as the reference
    computed it, and its built objects are as predicted: flash within FLASH_MARGIN, bss the
    planned arena exactly, the stack at most the predicted one (skipped without the tools)."""
    _require("cortex-m4")
    run = check_project(result.path, result.golden_y, "cortex-m4")
    assert run.all_match and np.array_equal(run.scores, result.golden_y.astype(np.int32))
    built = measure_size(result.path, "cortex-m4")
    assert abs(result.sizes.flash - built.flash) <= FLASH_MARGIN * built.flash
    assert built.bss == result.sizes.arena
    assert built.stack <= result.sizes.stack


def _require(target):
    reason = tools_missing(target)
    if reason:
        pytest.skip(f"C target {target!r}: {reason}")


@pytest.mark.parametrize("name", NETS)
def test_host_bit_exact(exported, name):
    assert_host_bit_exact(exported[name][2])


def assert_host_bit_exact(result) -> None:
    """The export's C built by the host compiler prints every golden output as the
    reference computed it (skipped without a compiler)."""
    _require("host")
    run = check_project(result.path, result.golden_y, "host")
    assert run.all_match and run.scores.shape == result.golden_y.shape


@pytest.mark.parametrize("mcpu", ["cortex-m3", "cortex-m4"])
@pytest.mark.parametrize("name", NETS)
def test_cortex_m_bit_exact(exported, name, mcpu):
    _require(mcpu)
    result = exported[name][2]
    run = check_project(result.path, result.golden_y, mcpu)
    assert run.all_match and np.array_equal(run.scores, result.golden_y.astype(np.int32))


@pytest.mark.parametrize("name", NETS)
def test_sizes_match_the_built_objects(exported, name):
    """arm-none-eabi-size of model.o + ne_int8.o (no harness): flash (text + data) within
    FLASH_MARGIN of the prediction, bss = the planned arena exactly, the stack of the
    chain model_invoke -> kernel -> ne_requantize (-fstack-usage) at most the predicted
    one, which takes model_invoke's largest possible frame (40 B: r3-r11 and lr pushed),
    and at most 32 B above it (its smallest: r3 and lr)."""
    _require("cortex-m4")
    if shutil.which("arm-none-eabi-size") is None:
        pytest.skip("arm-none-eabi-size not installed")
    result = exported[name][2]
    built = measure_size(result.path, "cortex-m4")
    pred = result.sizes
    assert abs(pred.flash - built.flash) <= FLASH_MARGIN * built.flash
    assert built.bss == pred.arena
    assert built.stack <= pred.stack <= built.stack + 32
    assert result.report["sizes"]["flash"] == pred.flash == predict_sizes(result.graph).flash


def test_no_float_no_malloc(exported):
    """No float type or heap call in the inference sources, and the Cortex-M objects call
    no soft-float helper (__aeabi_f*, __aeabi_d*)."""
    path = exported["resdw"][2].path
    for f in ("model.c", "model.h", "model_weights.h", "ne_int8.c", "ne_int8.h"):
        text = re.sub(r"/\*.*?\*/", "", (path / f).read_text(), flags=re.S)  # code only
        assert not re.search(r"\b(float|double|malloc|calloc|free)\b", text), f
    _require("cortex-m4")
    if shutil.which("arm-none-eabi-nm") is None:
        pytest.skip("arm-none-eabi-nm not installed")
    import subprocess
    measure_size(path, "cortex-m4")
    nm = subprocess.run(["arm-none-eabi-nm", "-u", "model_cortex-m4.o", "ne_int8_cortex-m4.o"],
                        cwd=path, capture_output=True, text=True, check=True).stdout
    assert not re.search(r"__aeabi_[fd]|__(add|mul|div|sub)[sdt]f3", nm), nm


def test_instructions_measured_on_qemu(exported):
    """QEMU -icount: 1 instruction per ns of virtual time; SysTick at the MPS2 boards' 25 MHz
    core clock: 40 instructions per tick, so the 1,000,000-instruction calibration loop
    reads 25,000 ticks (25,001 when the counter reads straddle a tick). Every int8 MAC is
    at least two executed instructions (the operands' loads, the multiply-accumulate), so
    the measured count cannot be below twice the counted MACs."""
    _require("cortex-m4")
    result = exported["resdw"][2]
    got = measure_instructions(result.path, "cortex-m4")
    assert 25000 <= got["calibration_ticks"] - got["empty_ticks"] <= 25001
    assert got["instructions_per_tick"] == pytest.approx(40, rel=1e-4)
    macs = result.report["predicted_per_inference"]["ops"]["mac_int8"]
    assert len(got["per_inference"]) == result.golden_x.shape[0]
    assert min(got["per_inference"]) >= 2 * macs
    # counted a second way: one QEMU log line per instruction executed inside the model's
    # functions. SysTick's count also holds the few instructions around model_invoke (the
    # counter reads, the call) and is read to 40 instructions: they agree within 2 ticks
    traced = trace_instructions(result.path, "cortex-m4")["per_inference"]
    assert abs(np.mean(got["per_inference"]) - traced) <= 80
    # per layer (a harness call after each): one count per C layer (the reshape has none),
    # summing to the whole within a tick per layer and the calls' few instructions
    layers = measure_instructions(result.path, "cortex-m4", layers=True)["per_layer"]
    assert len(layers) == len(result.report["predicted_per_inference"]["layers"]) == 6
    assert abs(sum(layers) - traced) <= 40 * (len(layers) + 2)


# -- bad input ---------------------------------------------------------------------------------
def test_unsupported_layer_named_with_the_supported_list(tmp_path):
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.LocalResponseNorm(2), nn.Flatten(),
                          nn.Linear(72, 2))
    with pytest.raises(ExportError) as err:
        export_int8(model, (1, 1, 8, 8), (_data((1, 1, 8, 8), 10, 0), None, None),
                    tmp_path / "out")
    msg = str(err.value)
    assert "layer '1' (LocalResponseNorm) is not supported" in msg and "\n" not in msg
    assert all(s in msg for s in SUPPORTED)
    assert not (tmp_path / "out").exists()


def test_unsupported_function_and_untraceable_model():
    class Exp(nn.Module):
        def forward(self, x):
            return torch.exp(x)

    class Branchy(nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    x = _data((1, 4), 10, 0)
    with pytest.raises(ExportError, match="'exp' \\(function exp\\) is not supported"):
        quantize(Exp(), x)
    with pytest.raises(ExportError, match="torch.fx cannot trace the model"):
        quantize(Branchy(), x)


def _with_stubs():
    torch.manual_seed(0)
    return nn.Sequential(torch.ao.quantization.QuantStub(), nn.Conv2d(1, 2, 3), nn.ReLU(),
                         nn.Flatten(), nn.Linear(72, 2),
                         torch.ao.quantization.DeQuantStub()).eval()


def test_torch_ao_stubs_in_a_float_model_are_identities():
    """A float model readied for torch.ao quantization keeps QuantStub / DeQuantStub,
    identities until converted: torch.fx traces through them."""
    x = _data((1, 1, 8, 8), 10, 0)
    stubbed = quantize(_with_stubs(), x)
    plain = quantize(nn.Sequential(*list(_with_stubs())[1:-1]).eval(), x)
    assert [type(node).__name__ for node in stubbed.nodes] == \
        [type(node).__name__ for node in plain.nodes] == ["Conv2d", "Reshape", "Linear"]


def test_a_converted_torch_ao_model_is_refused_naming_why():
    import warnings
    model = _with_stubs()
    model.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = torch.ao.quantization.prepare(model)
        prepared(torch.randn(4, 1, 8, 8))
        converted = torch.ao.quantization.convert(prepared)
    with pytest.raises(ExportError, match="a torch.ao quantized model: give the float model"):
        quantize(converted, _data((1, 1, 8, 8), 10, 0))


def test_model_too_large_names_bytes(tmp_path):
    """Linear(2048, 640): 1,310,720 B of int8 weights > the cortex-m4's 1 MiB flash plus
    what is left of its 192 KiB SRAM."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(2048, 640))
    with pytest.raises(HardwareLimitError) as err:
        export_int8(model, (1, 2048), (_data((1, 2048), 20, 0), None, None), tmp_path / "big")
    msg = str(err.value)
    assert re.search(r"needs 1,3\d\d,\d\d\d B of read-only memory", msg), msg
    assert "1,048,576 B" in msg and "\n" not in msg
    assert not (tmp_path / "big").exists()


def test_bad_calibration_files(tmp_path):
    model = MLP().eval()
    shape = (1, 1, 8, 8)
    cases = {"missing.npy": "no such file",
             "wrong.npy": "holds float32 \\(5, 64\\); expected real numbers \\[N >= 1, 1, 8, 8\\]",
             "nan.npy": "NaN or infinite", "data.csv": "a data set name"}
    np.save(tmp_path / "wrong.npy", np.zeros((5, 64), np.float32))
    bad = np.zeros((5, 1, 8, 8), np.float32)
    bad[2, 0, 1, 1] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    (tmp_path / "garbage.npy").write_bytes(b"not an npy file at all")
    cases["garbage.npy"] = "not a readable .npy file"
    (tmp_path / "data.csv").write_text("1,2\n")
    for f, pattern in cases.items():
        with pytest.raises(ExportError, match=pattern):
            export_int8(model, shape, str(tmp_path / f), tmp_path / "out")
    with pytest.raises(ExportError, match="samples hold 64 values .* takes 192 per sample"):
        export_int8(AvgNet(), (1, 3, 8, 8), "digits", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_input_shape_the_model_cannot_take(tmp_path):
    """AvgNet's first conv takes 3 channels: 1-channel inputs fail inside torch, and the
    export says so in one line naming the shape."""
    with pytest.raises(ExportError) as err:
        export_int8(AvgNet(), (1, 1, 16, 16), (_data((1, 1, 16, 16), 5, 0), None, None),
                    tmp_path / "out")
    msg = str(err.value)
    assert "fails on calibration inputs of shape (5, 1, 16, 16)" in msg and "\n" not in msg
    assert not (tmp_path / "out").exists()


def test_not_a_microcontroller_profile(tmp_path):
    with pytest.raises(ExportError, match="'a100' is a 'gpu' profile"):
        export_int8(MLP(), (1, 1, 8, 8), (_data((1, 1, 8, 8), 5, 0), None, None),
                    tmp_path / "out", profile="a100")


# -- the command line ----------------------------------------------------------------------------
USER_FILE = '''
import torch
from torch import nn


def make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 10))


def bad():
    return nn.Sequential(nn.BatchNorm2d(1), nn.Conv2d(1, 4, 3))
'''


def test_cli_export_c_int8(tmp_path, capsys):
    from deploy.cli import main
    src = tmp_path / "net.py"
    src.write_text(USER_FILE)
    out = tmp_path / "exp"
    rc = main(["export", f"{src}:make", "--target", "c-int8", "--input-shape", "1,1,8,8",
               "--calibration", "digits", "--profile", "cortex-m4", "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert re.search(r"flash: [\d,]+ B \(weights and parameters [\d,]+ B \+ code", text)
    assert re.search(r"accuracy on 450 test samples: fp32 [\d.]+%, int8 [\d.]+%", text)
    assert (out / "model.c").is_file() and (out / "report.json").is_file()
    # an unsupported layer: one line, exit 2, nothing written
    rc = main(["export", f"{src}:bad", "--target", "c-int8", "--input-shape", "1,1,8,8",
               "--calibration", "digits", "--out", str(tmp_path / "bad")])
    err = capsys.readouterr().err
    assert rc == 2 and "layer '0' (BatchNorm2d) is not supported (it is folded" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "bad").exists()
    # a registered-model option, and a missing option
    rc = main(["export", f"{src}:make", "--target", "c-int8", "--set", "epochs=1",
               "--input-shape", "1,1,8,8", "--calibration", "digits", "--out", str(tmp_path / "x")])
    assert rc == 2 and "--set applies to registered models only" in capsys.readouterr().err
    rc = main(["export", f"{src}:make", "--target", "c-int8", "--out", str(tmp_path / "x")])
    assert rc == 2 and "needs --input-shape" in capsys.readouterr().err
    rc = main(["export", "bep", "--target", "c", "--calibration", "digits"])
    assert rc == 2 and "apply to --target c-int8 only" in capsys.readouterr().err
    rc = main(["export", f"{src}:make", "--target", "onnx"])
    assert rc == 2 and "is a model of your own: --target c-int8 exports it" in \
        capsys.readouterr().err


def test_extreme_multipliers_bit_exact(tmp_path):
    """A hand-built graph whose requantisations span the whole range: real multipliers from
    1e-7 (shift -23) to 300 (shift 9: the 64-bit left shift and its saturation), biases up
    to +-2**14, a clamp and an add, on 64 random inputs; the C must equal the reference
    on every output."""
    rng = np.random.default_rng(5)
    n_in, n_out = 24, 16
    real = np.geomspace(1e-7, 300.0, n_out)
    mult, shift = q8.quantize_multiplier(real)
    assert shift.min() < -20 and shift.max() > 8
    lin = q8.Linear("fc", (0,), 1, rng.integers(-127, 128, (n_out, n_in)).astype(np.int8),
                    rng.integers(-2**14, 2**14, n_out).astype(np.int32), mult, shift,
                    -100, 90)
    ts = [q8.QTensor("x", (n_in,), 0.02, 7), q8.QTensor("h", (n_out,), 0.05, -3),
          q8.QTensor("h2", (n_out,), 0.05, -3), q8.QTensor("y", (n_out,), 0.08, 4)]
    clamp = q8.Clamp("relu", (1,), 2, -3, 127)
    twice = 2 * 0.05
    m1, s1 = q8.quantize_multiplier(0.05 / twice)
    mo, so = q8.quantize_multiplier(twice / (2**20 * 0.08))
    add = q8.Add("add", (1, 2), 3, int(m1[0]), int(s1[0]), int(m1[0]), int(s1[0]),
                 int(mo[0]), int(so[0]), -128, 127)
    graph = q8.Int8Graph(ts, [lin, clamp, add], 0, 3)
    x = rng.integers(-128, 128, (64, n_in)).astype(np.int8)
    y = q8.run_int8(graph, x)
    assert len(np.unique(y)) > 10                      # not everything saturated
    write_int8_project(graph, x, y, tmp_path / "ext", report={})
    for target in ("host", "cortex-m4"):
        if tools_missing(target):
            continue
        assert check_project(tmp_path / "ext", y, target).all_match


def test_weights_must_fit_flash_alone(tmp_path):
    """The project declares its weights static const: the linker puts them in flash only.
    Linear(1100, 1000): 1,100,000 B of int8 weights + 4,000 B of biases > the cortex-m4's
    1,048,576 B flash, though below flash + the SRAM its small arena leaves (before:
    exported, and the STM32F407 link failed, "region FLASH overflowed")."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(1100, 1000))
    with pytest.raises(HardwareLimitError) as err:
        export_int8(model, (1, 1100), (_data((1, 1100), 20, 0), None, None), tmp_path / "big")
    msg = str(err.value)
    assert re.search(r"needs 1,1\d\d,\d\d\d B of read-only memory \(the weights and the "
                     r"code\)", msg), msg
    assert "only 1,048,576 B are left (embedded Flash 1,048,576 B)" in msg, msg
    assert not (tmp_path / "big").exists()


def test_a_bare_torch_layer_exports_as_its_layer(tmp_path):
    """nn.Linear(64, 10) itself, as `neuroedge export --help`'s example gives it (before:
    "tensor 'weight' held by the model ... used as an operand": fx traced into F.linear)."""
    torch.manual_seed(0)
    lin = nn.Linear(64, 10).eval()
    result = export_int8(lin, (1, 64), (_data((1, 64), 50, 0), None, None), tmp_path / "lin")
    assert result.report["layers"] == ["Linear linear"]
    assert_tracks_fp32(lin, (1, 64), result)
    conv = nn.Conv2d(1, 2, 3).eval()
    result = export_int8(conv, (1, 1, 6, 6), (_data((1, 1, 6, 6), 50, 0), None, None),
                         tmp_path / "conv")
    assert [layer.split()[1] for layer in result.report["layers"]] == ["conv2d"]


def test_function_forms_of_one_argument(tmp_path):
    """torch.tanh(x) (its schema match is ambiguous: aten's and the math overload; before,
    "its arguments could not be read") exports as a table, like x.tanh()."""
    net = nn.Sequential(nn.Linear(4, 3))
    model = _Fn(net, torch.tanh)
    result = export_int8(model.eval(), (1, 4), (_data((1, 4), 50, 0), None, None),
                         tmp_path / "tanh")
    assert [layer.split()[0] for layer in result.report["layers"]] == ["Linear", "Lut"]


class _Fn(nn.Module):
    def __init__(self, net, fn):
        super().__init__()
        self.net, self.fn = net, fn

    def forward(self, x):
        return self.fn(self.net(x))


def test_a_model_of_reshapes_alone_is_refused(tmp_path):
    """nn.Flatten() alone (before: "max() arg is an empty sequence", a traceback)."""
    with pytest.raises(ExportError, match="computes nothing the export can write"):
        export_int8(nn.Flatten(), (1, 2, 3), (_data((1, 2, 3), 10, 0), None, None),
                    tmp_path / "flat")
    assert not (tmp_path / "flat").exists()


class _Squeezed(nn.Module):
    def __init__(self):
        super().__init__()
        self.c, self.fc = nn.Conv2d(1, 3, 3), nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(self.c(x).mean((2, 3), keepdim=True).squeeze())


def test_the_calibration_count_does_not_decide_the_export(tmp_path):
    """A bare squeeze() drops the batch axis on a batch of one: calibrated in batches of 256,
    257 samples ended on such a batch and were refused, 256 or 300 not. Batches are now of
    near-equal size (129 + 128): the same export for every count >= 2."""
    for n in (256, 257, 513):
        torch.manual_seed(0)
        result = export_int8(_Squeezed().eval(), (1, 1, 6, 6),
                             (_data((1, 1, 6, 6), n, 0), None, None), tmp_path / f"sq{n}")
        assert result.report["output"]["size"] == 2
