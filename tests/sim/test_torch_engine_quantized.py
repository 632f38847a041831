"""torch.ao quantized models counted (``quantize_dynamic``'s and a converted static model's
Linear kernels take their weight packed, no tensor: they were uncounted ops). Hand counts on
an MLP 8-16-3 at batch 4."""
import warnings

import pytest
import torch
from torch import nn

from sim.errors import HardwareLimitError
from sim.torch_engine.engine import TorchDevice


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).eval()


def _run(net):
    dev = TorchDevice("x86-avx2")      # the quantized kernels are the CPU's (fbgemm)
    net = dev.compile(net)
    dev.run(net, torch.randn(4, 8))
    return dev.ledger


@pytest.mark.parametrize("dtype, mac", [(torch.qint8, "mac_int8"), (torch.float16, "mac_fp16")])
def test_dynamic_quantized_linear(dtype, mac):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # torch.ao's notice that it moves to torchao
        q = torch.ao.quantization.quantize_dynamic(_mlp(), {nn.Linear}, dtype=dtype)
    led = _run(q)
    ops = led.total_ops()
    assert led.uncounted() == {}
    # 4 x (8 x 16 + 16 x 3) = 704 products in the weights' type; fp32: the ReLU's 64;
    # int8: each Linear's input quantized (3 x 32, 3 x 64) and output dequantized with its
    # bias (2 x 64, 2 x 12); fp16 (fbgemm's fp16 GEMM takes the float input as it is): the
    # bias added to each output (64 + 12)
    assert ops[mac] == 704
    if dtype == torch.qint8:
        assert ops["flop_fp32"] == 64 + 96 + 128 + 192 + 24
    else:
        assert ops["flop_fp32"] == 64 + 64 + 12
    # reads: Linear 1 its input 128 B, its 128 weights (1 B in int8, 2 B in fp16), fp32 bias
    # 64 B; the ReLU 256 B; Linear 2 its input 256 B, 48 weights, bias 12 B
    size = 1 if dtype == torch.qint8 else 2
    assert led.total_bytes()[("offchip", "read")] == \
        128 + 128 * size + 64 + 256 + 256 + 48 * size + 12


def test_static_quantized_linear_relu():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = torch.ao.quantization.QuantStub()
            self.l1, self.relu, self.l2 = nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)
            self.dequant = torch.ao.quantization.DeQuantStub()

        def forward(self, x):
            return self.dequant(self.l2(self.relu(self.l1(self.quant(x)))))

    torch.manual_seed(0)
    net = Net().eval()
    net.qconfig = torch.ao.quantization.get_default_qconfig("fbgemm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.ao.quantization.fuse_modules(net, [["l1", "relu"]], inplace=True)
        prepared = torch.ao.quantization.prepare(net)
        prepared(torch.randn(16, 8))                      # calibration
        q = torch.ao.quantization.convert(prepared)
    led = _run(q)
    ops = led.total_ops()
    assert led.uncounted() == {}
    # 704 int8 products; quantizing the 32 inputs 2 ops each, dequantizing the 12 outputs
    # 1 int + 1 fp op each; the fused ReLU a max per int8 output (64)
    assert ops["mac_int8"] == 704
    assert ops["flop_fp32"] == 2 * 32 + 12
    assert ops["int_add"] == 64 + 12


def _quantize_static(net, x):
    """torch.ao eager static quantization of ``net`` (its QuantStub / DeQuantStub inside),
    calibrated on ``x``; transposed convolutions take the per-tensor qconfig (torch has no
    per-channel one for them)."""
    net.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    for mod in net.modules():
        if isinstance(mod, nn.modules.conv._ConvTransposeNd):
            mod.qconfig = torch.ao.quantization.default_qconfig
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = torch.ao.quantization.prepare(net)
        prepared(x)
        return torch.ao.quantization.convert(prepared)


def _float_macs(net, x) -> int:
    with torch.utils.flop_counter.FlopCounterMode(display=False) as counter:
        net(x)
    return counter.get_total_flops() // 2


@pytest.mark.parametrize("make, shape", [
    # strided, grouped + dilated, transposed (grouped), pointwise 2-D convolutions
    (lambda: nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, stride=2),
                           nn.Conv2d(8, 8, 3, groups=4, dilation=2),
                           nn.ConvTranspose2d(8, 6, 3, stride=2, groups=2),
                           nn.Conv2d(6, 4, 1)), (2, 3, 20, 20)),
    (lambda: nn.Sequential(nn.Conv1d(3, 6, 5, padding=2, groups=3),
                           nn.ConvTranspose1d(6, 4, 3, stride=2)), (2, 3, 30)),
    (lambda: nn.Sequential(nn.Conv3d(2, 4, 3, padding=1),
                           nn.ConvTranspose3d(4, 2, 2, stride=2)), (1, 2, 6, 6, 6)),
], ids=["2d", "1d", "3d"])
def test_static_quantized_convolutions_count_the_float_models_products(make, shape):
    """A quantized convolution's weight arrives packed (they were uncounted): its int8
    products equal torch's FlopCounterMode's MACs of the float model (77,232 / 6,120 /
    60,480 here)."""
    torch.manual_seed(0)
    net = make().eval()
    x = torch.rand(*shape)
    macs = _float_macs(net, x)
    q = _quantize_static(nn.Sequential(torch.ao.quantization.QuantStub(), net,
                                       torch.ao.quantization.DeQuantStub()).eval(), x)
    dev = TorchDevice("x86-avx2")
    dev.run(dev.compile(q), x)
    assert dev.ledger.uncounted() == {}
    assert dev.ledger.total_ops()["mac_int8"] == macs


class _QuantizedBlock(nn.Module):
    """A MobileNet-style quantized block: conv-ReLU and depthwise conv-BN fused, a
    residual add-ReLU, an unfused ReLU and a Sigmoid on quint8 tensors, concatenation,
    max pooling, hardswish, a Linear head."""

    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.conv, self.relu = nn.Conv2d(2, 4, 3, padding=1), nn.ReLU()
        self.dw, self.bn = nn.Conv2d(4, 4, 3, padding=1, groups=4), nn.BatchNorm2d(4)
        self.add = torch.ao.nn.quantized.FloatFunctional()
        self.cat = torch.ao.nn.quantized.FloatFunctional()
        self.act, self.gate = nn.ReLU(), nn.Sigmoid()
        self.pool, self.hs = nn.MaxPool2d(2), nn.Hardswish()
        self.head = nn.Linear(8 * 4 * 4, 3)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        a = self.relu(self.conv(self.quant(x)))
        b = self.add.add_relu(a, self.bn(self.dw(a)))
        x = self.cat.cat([self.act(b), self.gate(b)], 1)
        x = self.hs(self.pool(x))
        return self.dequant(self.head(x.flatten(1)))


def _quantized_block(x):
    """The block converted: conv + ReLU and depthwise conv + BN fused, calibrated on x."""
    torch.manual_seed(0)
    net = _QuantizedBlock().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.ao.quantization.fuse_modules(net, [["conv", "relu"], ["dw", "bn"]], inplace=True)
    return _quantize_static(net, x)


def test_static_quantized_block_counted_op_by_op():
    x = torch.randn(2, 2, 8, 8)
    q = _quantized_block(x)
    outputs = {}   # the quint8 outputs, dequantized after the run (no op in the ledger)
    for name in ("act", "gate"):
        getattr(q, name).register_forward_hook(
            lambda m, i, o, name=name: outputs.__setitem__(name, o))
    dev = TorchDevice("x86-avx2")
    dev.run(dev.compile(q), x)
    led = dev.ledger
    assert led.uncounted() == {}
    ops = led.total_ops()
    # int8 products: conv 2 x 4 x 64 x (2 x 9) = 9,216; depthwise 2 x 4 x 64 x 9 = 4,608;
    # head 2 x 128 x 3 = 768
    assert ops["mac_int8"] == 9216 + 4608 + 768
    # integer ops: the fused conv's ReLU 512; add-ReLU 2 x 512; the ReLU on quint8 512 and
    # the Sigmoid 512 (one op an element, as integer tensors count); max pooling 2 x 8 x 4
    # x 4 outputs x 4 window positions = 1,024; hardswish 5 x 256 = 1,280; the quantized
    # output's dequantization 6 (and 6 fp32); depthwise BN folded into its convolution
    assert ops["int_add"] == 512 + 1024 + 512 + 512 + 1024 + 1280 + 6
    # fp32: the input's quantization 2 x 256, the output's dequantization 6
    assert ops["flop_fp32"] == 512 + 6
    # FloatFunctional's add-ReLU and cat are no forward calls: the block's own scope holds
    # them and the flatten's copy of the channels-last pooled tensor. Bytes: add-ReLU reads
    # 2 x 512 quint8 and writes 512; cat (bytes only) reads 2 x 512 and writes 1,024; the
    # copy 256 and 256
    assert led.ops("infer") == {"int_add": 1024, "kernel_launch": 3}
    assert led.bytes("infer") == {("offchip", "read"): 1024 + 1024 + 256,
                                  ("offchip", "write"): 512 + 1024 + 256}
    # NeuroBench activity of the ReLU and Sigmoid on quint8 tensors (their count raised
    # NotImplementedError): zeros of the dequantized values, where the integer is the
    # zero point
    zeros = [int((outputs[n].dequantize() == 0).sum()) for n in ("act", "gate")]
    assert led.activity() == {"activations": 1024, "activations_zero": sum(zeros)}
    assert zeros[0] > 0      # the ReLU zeroes some: the count reads the values


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("dtype", [torch.qint8, torch.float16])
def test_dynamic_quantized_rnn(cls, dtype):
    """quantize_dynamic's LSTM and GRU run as one ``quantized_lstm`` / ``quantized_gru``
    kernel with packed cells (uncounted before): the float layer's products in the
    weights' type, and the gate arithmetic with the cell's (de)quantization."""
    torch.manual_seed(0)
    net = nn.Sequential(cls(5, 7, batch_first=True)).eval()
    x = torch.rand(3, 4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.ao.quantization.quantize_dynamic(net, {cls}, dtype=dtype)
    dev = TorchDevice("x86-avx2")
    dev.run(dev.compile(q), x)
    ops = dev.ledger.total_ops()
    assert dev.ledger.uncounted() == {}
    gates, per_unit = (4, 13) if cls is nn.LSTM else (3, 10)
    # 12 positions x gates x 7 x (5 + 7) products: 4,032 (LSTM), 3,024 (GRU)
    mac = "mac_int8" if dtype == torch.qint8 else "mac_fp16"
    assert ops[mac] == 12 * gates * 7 * 12
    # per position: the gate arithmetic 7 x per_unit; int8: both GEMMs' inputs quantized
    # 3 x (5 + 7), their 2 x gates x 7 outputs dequantized with the bias 2 each; fp16: the
    # two biases added, 2 x gates x 7. LSTM int8: 12 x (91 + 36 + 112) = 2,868
    extra = 3 * 12 + 4 * gates * 7 if dtype == torch.qint8 else 2 * gates * 7
    assert ops["flop_fp32"] == 12 * (7 * per_unit + extra)


def test_quantized_embedding():
    net = nn.Sequential(nn.Embedding(50, 16)).eval()
    net[0].qconfig = torch.ao.quantization.float_qparams_weight_only_qconfig
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.ao.quantization.convert(torch.ao.quantization.prepare(net))
    dev = TorchDevice("x86-avx2")
    dev.run(dev.compile(q), torch.randint(0, 50, (2, 7)))
    led = dev.ledger
    assert led.uncounted() == {}
    # 14 rows of 16 dequantized (scale and offset): 448 fp32 ops; reads the 14 int64
    # indices (112 B) and 14 rows of 16 B + an fp32 scale and offset (24 B): 448 B;
    # writes 14 x 16 floats
    assert led.total_ops()["flop_fp32"] == 448
    scope = [s for s in led.scopes() if s.endswith("0/forward")][0]
    assert led.bytes(scope) == {("offchip", "read"): 112 + 14 * 24,
                                ("offchip", "write"): 14 * 16 * 4}


def _dynamic_mlp(hidden: int):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, 10)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return net, torch.ao.quantization.quantize_dynamic(net, {nn.Linear}, dtype=torch.qint8)


def test_quantized_weights_are_the_models_parameters_and_must_fit():
    """A converted model's weights are packed, no parameters(): its facts said 0
    parameters and 0 B, and any quantized model fit any device."""
    net, q = _dynamic_mlp(1000)
    # float: 795,010 parameters, 3,180,040 B > stm32l4r5's 655,360 B SRAM + 2,097,152 B
    # flash = 2,752,512 B: refused
    with pytest.raises(HardwareLimitError, match="3180040 B exceeds"):
        TorchDevice("stm32l4r5").compile(net)
    # int8: 794,000 weights at 1 B, 1,010 fp32 biases (4,040 B), a scale and a zero point
    # per weight tensor (2 x 8 B): 798,056 B, fits
    dev = TorchDevice("stm32l4r5")
    x = torch.rand(1, 784)
    dev.run(dev.compile(q), x)
    facts = dev.ledger.models()["Sequential"]
    weights = [m.weight().dequantize() for m in (q[0], q[2])]
    assert facts == {"parameters": 795_010, "parameter_bytes": 798_056, "buffer_bytes": 0,
                     "connection_weights": 794_000,
                     "connection_zero_weights": sum(int((w == 0).sum()) for w in weights)}
    # the run's state: the packed weights and the input (3,136 B) read-only, the output
    # (40 B) written
    assert dev.ledger.footprints()["infer"] == {"writable": 40, "read_only": 798_056 + 3136,
                                                "blocks": 1}
    # 784-2000-10 in int8: 1,568,000 + 20,000 weights + 8,040 B biases + 16 B = 1,596,056 B
    # fits; 784-4000-10: 3,136,000 + 40,000 + 16,040 + 16 = 3,192,056 B does not
    TorchDevice("stm32l4r5").compile(_dynamic_mlp(2000)[1])
    with pytest.raises(HardwareLimitError, match="3192056 B exceeds"):
        TorchDevice("stm32l4r5").compile(_dynamic_mlp(4000)[1])


def test_quantized_layers_have_rows_and_kernel_classes():
    """A quantized Linear keeps its packed weights in a child module: it was taken for a
    container and had no layer row, and a quantized convolution had no kernel class, so a
    microcontroller priced their int8 MACs at the library's convolution rate."""
    x = torch.randn(2, 2, 8, 8)
    q = _quantized_block(x)
    dev = TorchDevice("stm32l4r5")
    dev.run(dev.compile(q), x)
    layers = dev.ledger.layers()
    # parameters: conv 4 x 2 x 9 + 4 = 76, depthwise 4 x 9 + 4 = 40, head 128 x 3 + 3 = 387
    assert {name: (layers[name]["parameters"], layers[name]["op_class"])
            for name in ("conv", "dw", "head")} == {
        "conv": (76, "conv"), "dw": (40, "depthwise_conv"), "head": (387, "dense")}
    assert dev.ledger.models()["_QuantizedBlock"]["parameters"] == 76 + 40 + 387
    report = dev.ledger.price(dev.profile, stack="tflm-2.3.1")
    entries = {c.scope: c.entry for c in report.charges if c.item == "mac_int8"}
    # TFLM's fitted dense rate for the head; its int8 MAC rate for both convolutions
    # (the stack prices depthwise convolutions with no rate of their own)
    assert entries == {"infer/head/forward": "stacks.tflm-2.3.1.dense_cycles",
                       "infer/conv/forward": "stacks.tflm-2.3.1.mac_int8_cycles",
                       "infer/dw/forward": "stacks.tflm-2.3.1.mac_int8_cycles"}


@pytest.mark.parametrize("qconfig, row", [
    (torch.ao.quantization.float_qparams_weight_only_qconfig, 16 + 8),      # 8-bit: fp32
    (torch.ao.quantization.float_qparams_weight_only_qconfig_4bit, 8 + 4),  # 4-bit: fp16
], ids=["8bit", "4bit"])
def test_quantized_embedding_bag(qconfig, row):
    """torch.ao's quantized EmbeddingBag (DLRM-style recommenders) was uncounted."""
    net = nn.Sequential(nn.EmbeddingBag(50, 16, mode="sum")).eval()
    net[0].qconfig = qconfig
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.ao.quantization.convert(torch.ao.quantization.prepare(net))
    dev = TorchDevice("x86-avx2")
    indices, offsets = torch.randint(0, 50, (12,)), torch.tensor([0, 5, 9])
    with dev.count("bags"):
        q[0](indices, offsets)
    led = dev.ledger
    assert led.uncounted() == {}
    # 12 rows of 16 dequantized (scale, offset) and summed: 12 x 16 x 3 = 576 fp32 ops;
    # reads each row as stored (16 values at 8 or 4 bits and the row's scale and offset),
    # the 12 indices and 3 offsets (int64); writes 3 bags x 16 floats
    assert led.total_ops()["flop_fp32"] == 576
    assert led.total_bytes() == {("offchip", "read"): 12 * row + 15 * 8,
                                 ("offchip", "write"): 3 * 16 * 4}


def test_prepacked_rowwise_embedding_bag():
    weight = torch.randn(50, 16)
    packed = torch.ops.quantized.embedding_bag_byte_prepack(weight)   # 50 x (16 + 8) bytes
    indices, offsets = torch.randint(0, 50, (12,)), torch.tensor([0, 5, 9])
    dev = TorchDevice("x86-avx2")
    with dev.count("bags"):
        torch.ops.quantized.embedding_bag_byte_rowwise_offsets(
            packed, indices, offsets, mode=1, per_sample_weights=torch.rand(12),
            include_last_offset=False)
    led = dev.ledger
    assert led.uncounted() == {}
    # per looked-up element 4 ops (scale, offset, the sample's weight, the add); mean
    # divides the 48 outputs: 12 x 16 x 4 + 48 = 816; the torch.rand draw (12) apart
    assert led.total_ops()["flop_fp32"] == 816 + 12


def test_weight_only_int8_and_int4_products_are_counted():
    """torch's weight-only quantized kernels (LLM inference with int8 / int4 weights and
    bfloat16 activations, as torchao and gpt-fast run it) were uncounted."""
    from sim.torch_engine.costs import op_cost
    aten = torch.ops.aten
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    w8 = torch.randint(-128, 127, (32, 64), dtype=torch.int8)
    scales = torch.rand(32, dtype=torch.bfloat16)
    out = torch._weight_int8pack_mm(x, w8, scales)
    counts, read, write, uncounted = op_cost(aten._weight_int8pack_mm.default,
                                             (x, w8, scales), {}, out)
    # 4 x 32 outputs of 64 products in bfloat16: 8,192 MACs; one scale multiply per
    # output, 128. Bytes: x 512 + int8 weights 2,048 + scales 64 read, 256 written
    assert uncounted == ""
    assert counts == {"mac_bf16": 8192, "flop_bf16": 128}
    assert (read, write) == (512 + 2048 + 64, 256)
    packed = torch._convert_weight_to_int4pack_for_cpu(
        torch.randint(0, 16, (32, 64), dtype=torch.int32), 1)
    zeros_scales = torch.rand(2, 32, 2, dtype=torch.bfloat16)   # groups of 32 along k
    out = torch._weight_int4pack_mm_for_cpu(x, packed, 32, zeros_scales)
    counts = op_cost(aten._weight_int4pack_mm_for_cpu.default, (x, packed, 32, zeros_scales),
                     {}, out)[0]
    # the same 8,192 MACs; a scale and a zero point per weight element: 2 x 64 x 32
    assert counts == {"mac_bf16": 8192, "flop_bf16": 4096}
