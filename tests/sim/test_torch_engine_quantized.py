"""torch.ao quantized models counted (``quantize_dynamic``'s and a converted static model's
Linear kernels take their weight packed, no tensor: they were uncounted ops). Hand counts on
an MLP 8-16-3 at batch 4."""
import warnings

import pytest
import torch
from torch import nn

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
    # 4 x (8 x 16 + 16 x 3) = 704 products in the weights' type; fp32: the ReLU's 64, each
    # Linear's input quantized (3 x 32, 3 x 64) and output dequantized (2 x 64, 2 x 12)
    assert ops[mac] == 704
    assert ops["flop_fp32"] == 64 + 96 + 128 + 192 + 24
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
