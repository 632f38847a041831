"""A microcontroller kernel library priced per op class (issue 29 item 2): the torch engine
records each layer's class, and a stack's ``dense_cycles`` prices the int8 MACs of dense
layers while ``mac_int8_cycles`` prices the others."""
import pytest
import torch

from hw_profiles import load
from sim.layers import scope_op_classes
from sim.ledger import Ledger, LedgerError
from sim.precision import retyped_int8
from sim.pricing import price
from sim.torch_engine import TorchDevice


def _ledger():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1, bias=False),              # conv
        torch.nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False),    # depthwise
        torch.nn.Conv2d(4, 8, 1, bias=False),                         # pointwise: conv
        torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(8, 3, bias=False))        # dense
    net.eval()
    dev = TorchDevice("stm32l4r5", prefer_cuda=False)
    m = dev.compile(net)
    with torch.no_grad(), dev.count("infer", samples=1):
        m(dev.tensor(torch.zeros(1, 1, 6, 6)))
    return retyped_int8(dev.ledger, footprints=False)


def test_layers_carry_their_op_class_through_int8_retyping():
    led = _ledger()
    classes = {p: info.get("op_class") for p, info in led.layers().items()}
    assert classes == {"0": "conv", "1": "depthwise_conv", "2": "conv", "3": "normalization",
                       "4": "activation", "5": "pooling", "6": "elementwise", "7": "dense"}
    assert scope_op_classes(led)["infer/1/forward"] == "depthwise_conv"
    # survives a JSON round trip
    assert Ledger.from_json(led.to_json()).layers() == led.layers()


def test_unknown_op_class_is_refused():
    with pytest.raises(LedgerError, match="op_class 'fft' is not one of conv"):
        Ledger().record_layer("x", "FFT", (1, 4), 0, op_class="fft")


def test_each_class_of_mac_is_priced_at_its_librarys_cycles():
    led = _ledger()
    prof = load("stm32l4r5")
    lib = prof.stacks["tflm-2.3.1"]
    peak = price(led, prof, stack="peak")
    tflm = price(led, prof, stack="tflm-2.3.1")
    clock = prof.limit("clock_hz")
    macs = {c.scope: c for c in tflm.charges if c.item == "mac_int8"}
    # dense: 8 x 3 = 24 MACs at dense_cycles (4.272) / 120 MHz
    dense = macs["infer/7/forward"]
    assert dense.count == 24
    assert dense.seconds == pytest.approx(24 * lib["dense_cycles"].value / clock)
    assert dense.entry == "stacks.tflm-2.3.1.dense_cycles"
    # depthwise: 4 channels x 36 positions x 9 taps = 1,296 MACs at mac_int8_cycles (7.955)
    dw = macs["infer/1/forward"]
    assert dw.count == 1296
    assert dw.seconds == pytest.approx(1296 * lib["mac_int8_cycles"].value / clock)
    assert dw.entry == "stacks.tflm-2.3.1.mac_int8_cycles"
    # energy keeps the chip's energy per cycle: 374.3 pJ x cycles per MAC
    assert dense.unit_pj == pytest.approx(374.3 * lib["dense_cycles"].value)
    # non-MAC ops keep the manual's cycles: the pooling layer costs the same on both stacks
    pool = [c for c in tflm.charges if c.scope == "infer/5/forward" and c.category != "memory"]
    pool_peak = [c for c in peak.charges if c.scope == "infer/5/forward"
                 and c.category != "memory"]
    assert sum(c.seconds for c in pool) == sum(c.seconds for c in pool_peak) > 0


def test_a_ledger_without_classes_prices_every_mac_at_mac_int8_cycles():
    led = Ledger()
    led.add("mac_int8", 1000, scope="infer")
    prof = load("stm32l4r5")
    r = price(led, prof, stack="tflm-2.3.1")
    (c,) = [c for c in r.charges if c.item == "mac_int8"]
    assert c.seconds == pytest.approx(1000 * prof.stacks["tflm-2.3.1"]["mac_int8_cycles"].value
                                      / 120e6)
