"""``estimate`` of a torch.ao quantized model: its packed weights (no parameters()) are its
weights in the fit check, the microcontroller's memory plan and the per-layer table; before,
a quantized model weighed 12 B (its QuantStub's scale and zero point) everywhere."""
import warnings

import torch
from torch import nn

from deploy.estimate import estimate


class _LeNet(nn.Module):
    def __init__(self, hidden: int = 120):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.c1, self.r1 = nn.Conv2d(1, 6, 5), nn.ReLU()
        self.c2, self.r2 = nn.Conv2d(6, 16, 5), nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.f1, self.r3 = nn.Linear(256, hidden), nn.ReLU()
        self.f2 = nn.Linear(hidden, 10)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        x = self.pool(self.r1(self.c1(self.quant(x))))
        x = self.pool(self.r2(self.c2(x)))
        return self.dequant(self.f2(self.r3(self.f1(x.flatten(1)))))


def _quantized(hidden: int = 120):
    torch.manual_seed(0)
    net = _LeNet(hidden).eval()
    net.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.ao.quantization.fuse_modules(net, [["c1", "r1"], ["c2", "r2"], ["f1", "r3"]],
                                           inplace=True)
        prepared = torch.ao.quantization.prepare(net)
        prepared(torch.randn(8, 1, 28, 28))
        return torch.ao.quantization.convert(prepared)


def test_quantized_lenet_weighs_its_packed_weights():
    est = estimate(_quantized(), torch.randn(1, 1, 28, 28), profiles=["stm32l4r5"])
    # as stored: per layer int8 weights, a scale and a zero point per output channel (8 B)
    # and fp32 biases: c1 150 + 48 + 24 = 222, c2 2,400 + 128 + 64 = 2,592, f1 30,720 +
    # 960 + 480 = 32,160, f2 1,200 + 80 + 40 = 1,320; the QuantStub's scale (4 B) and zero
    # point (8 B) 12: 36,306 B
    assert est.memory["stm32l4r5"]["weight_bytes"] == 36_306
    assert est.dtype == "quantized"
    params = {path: m["parameters"] for path, m in est.modules.items()}
    assert (params["c1"], params["c2"], params["f1"], params["f2"]) == (156, 2416, 30_840,
                                                                        1210)
    text = str(est)
    assert "Params 36.3 kB (as stored); activations as run" in text


def test_quantized_model_too_large_for_the_chip_is_refused():
    # f1 256 x 12,000 int8: 3,072,000 B of weights alone > stm32l4r5's 2,752,512 B of
    # SRAM and flash; it weighed 12 B and was priced
    est = estimate(_quantized(12_000), torch.randn(1, 1, 28, 28),
                   profiles=["stm32l4r5", "cortex-m7"])
    assert est.reports == {}
    assert "exceeds stm32l4r5" in est.skipped["stm32l4r5"]
