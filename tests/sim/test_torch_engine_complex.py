"""Complex tensors and FFTs, which real models emit (FNet's Fourier mixing, Fourier neural
operators' spectral convolutions, STFT front ends): every one of their ops was uncounted
(``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r``, complex ``addmm`` / ``bmm``, ``mul``, ``abs``,
``hann_window``, ...). Rules and sources in ``sim/torch_engine/costs.py``: FFTW's 5 N log2 N
(complex) and 2.5 N log2 N (real) per transform, a complex MAC = 4 real MACs, stated real
ops per complex element."""
import math
import os

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from sim.torch_engine.engine import TorchDevice

DEVICE = TorchDevice("x86-avx2").torch_device


def _count(fn):
    dev = TorchDevice("x86-avx2")
    with dev.count("c"):
        fn()
    return dev.ledger


def _arith(fn) -> dict[str, int]:
    """The arithmetic ``fn`` counts (its kernel launches left out)."""
    return {k: v for k, v in _count(fn).total_ops().items() if k != "kernel_launch"}


def test_fft_transforms_count_fftws_convention():
    z = torch.randn(3, 16, dtype=torch.complex64, device=DEVICE)
    x = torch.randn(3, 16, device=DEVICE)
    # complex, 3 transforms of 16 points: 3 x 5 x 16 x log2 16 = 960, no scaling forward
    assert _arith(lambda: torch.fft.fft(z)) == {"flop_fp32": 960}
    # real input: half, 480
    assert _arith(lambda: torch.fft.rfft(x)) == {"flop_fp32": 480}
    # inverse real of 9 bins back to 16 points: 480, and 1 / N on each of the 48 outputs
    bins = torch.fft.rfft(x)
    assert _arith(lambda: torch.fft.irfft(bins, n=16)) == {"flop_fp32": 528}
    # 2-D, norm="ortho": N = 4 x 8 = 32 points per (2 x 3) batch: 6 x 5 x 32 x 5 = 4,800,
    # and 1 / sqrt(N) on the real and imaginary part of 192 outputs: 384
    z2 = torch.randn(2, 3, 4, 8, dtype=torch.complex128, device=DEVICE)
    assert _arith(lambda: torch.fft.fft2(z2, norm="ortho")) == {"flop_fp64": 5184}
    # 12 points (not a power of 2): the convention's 5 N log2 N, rounded once per call
    z12 = torch.randn(5, 12, dtype=torch.complex64, device=DEVICE)
    assert _arith(lambda: torch.fft.fft(z12)) == {
        "flop_fp32": round(5 * 12 * math.log2(12) * 5)}


def test_complex_matrix_products_are_four_real_macs_each():
    lin = nn.Linear(6, 5, dtype=torch.complex64).to(DEVICE)
    z = torch.randn(4, 6, dtype=torch.complex64, device=DEVICE)
    led = _count(lambda: lin(z))
    # 4 x 6 x 5 = 120 complex MACs, 4 real ones each (the bias add is in addmm's kernel)
    assert led.total_ops()["mac_fp32"] == 480
    assert led.uncounted() == {}
    # torch's FLOP counter counts the complex product as a real one (2 FLOPs per MAC)
    with FlopCounterMode(display=False) as fc:
        lin(z)
    assert 4 * fc.get_total_flops() // 2 == 480


def test_complex_elementwise_ops_count_their_real_arithmetic():
    a = torch.randn(2, 5, dtype=torch.complex64, device=DEVICE)
    b = torch.randn(2, 5, dtype=torch.complex64, device=DEVICE)
    # 10 elements each: mul 6, div 11, add 2, abs 4, exp 5, angle 1; a real scalar times a
    # complex tensor runs the complex multiply (promoted), 6
    assert _arith(lambda: a * b) == {"flop_fp32": 60}
    assert _arith(lambda: a / b) == {"flop_fp32": 110}
    assert _arith(lambda: a + b) == {"flop_fp32": 20}
    assert _arith(lambda: a.abs()) == {"flop_fp32": 40}
    assert _arith(lambda: a.exp()) == {"flop_fp32": 50}
    assert _arith(lambda: a.angle()) == {"flop_fp32": 10}
    assert _arith(lambda: a * 2.0) == {"flop_fp32": 60}
    # a sum reads 10 elements, 2 real adds each
    assert _arith(lambda: a.sum()) == {"flop_fp32": 20}
    # interleaving real and imaginary parts moves bytes only
    re, im = torch.randn(7, device=DEVICE), torch.randn(7, device=DEVICE)
    led = _count(lambda: torch.complex(re, im))
    assert _arith(lambda: torch.complex(re, im)) == {} and led.uncounted() == {}


def test_complex_ops_without_a_rule_are_reported_not_zero():
    a = torch.randn(8, dtype=torch.complex64, device=DEVICE)
    assert "sqrt" in _count(lambda: a.sqrt()).uncounted()
    # a complex scatter-add: the real rule (one add per element) has no complex op; before,
    # it named an op "" and the count block raised LedgerError ("unknown op ''")
    src = torch.randn(8, dtype=torch.complex64, device=DEVICE)
    idx = torch.arange(8, device=DEVICE) % 3
    led = _count(lambda: torch.zeros(3, dtype=torch.complex64, device=DEVICE)
                 .index_add_(0, idx, src))
    assert "" not in led.total_ops()
    assert "index_add_" in led.uncounted()


def test_stft_spectrogram_is_counted():
    signal = torch.randn(2, 400, device=DEVICE)

    def spectrogram():
        window = torch.hann_window(64, device=DEVICE)
        spec = torch.stft(signal, 64, hop_length=16, window=window, return_complex=True,
                          center=False)
        return spec.abs()

    led = _count(spectrogram)
    assert led.uncounted() == {}
    # window: arange(65) then 4 ops each, 260; frames: (400 - 64) / 16 + 1 = 22 per signal,
    # each windowed (64 multiplies: 2 x 22 x 64 = 2,816) and transformed: 2.5 x 64 x 6 =
    # 960 per frame, 42,240; |.| of 2 x 33 x 22 = 1,452 bins at 4 ops: 5,808
    assert _arith(spectrogram) == {"flop_fp32": 260 + 2816 + 42240 + 5808}


@pytest.mark.parametrize("train", [False, True], ids=["infer", "train"])
def test_fnet_fourier_mixing_counts_every_op(train):
    """FNet (``transformers``, random weights): token mixing by a 2-D FFT whose real part is
    kept; training differentiates through it (the backward runs complex FFTs too)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.FNetConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                  intermediate_size=64, max_position_embeddings=64)
    dev = TorchDevice("x86-avx2")
    model = dev.compile(transformers.FNetModel(cfg).train(train))
    ids = torch.randint(0, 100, (2, 16), device=dev.torch_device)
    with dev.count("fnet"), torch.set_grad_enabled(train):
        out = model(ids).last_hidden_state.sum()
        if train:
            out.backward()
    led = dev.ledger
    assert led.uncounted() == {}
    # each layer's mixing: fftn over (tokens 16, hidden 32) of each of 2 sequences, complex
    # (the real input promoted): 2 x 5 x 512 x log2 512 = 46,080 real ops
    fft_ops = led.total_ops("fnet")["flop_fp32"]
    assert fft_ops > 2 * 46080


def test_sgn_of_complex_values_counts_abs_and_two_divides():
    z = torch.randn(5, dtype=torch.complex64, device=DEVICE)
    # z / |z|: the abs's 4 real ops and 2 divides, 6 per element: 30 (complex abs's
    # gradient, as in a polar representation's backward)
    assert _arith(lambda: torch.sgn(z)) == {"flop_fp32": 30}
