"""Ops real models emit that were uncounted or miscounted: anti-aliased resizing
(``F.interpolate(..., antialias=True)``, torchvision's tensor ``Resize``: its forward was
priced as plain bilinear, 4 taps, its backward uncounted), ``pack_padded_sequence`` (NLP
models' packed LSTMs) and fractional max pooling."""
import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from sim.torch_engine.costs import _aa_taps
from sim.torch_engine.engine import TorchDevice

DEVICE = TorchDevice("x86-avx2").torch_device


@pytest.mark.parametrize("mode, interp", [("bilinear", 2), ("bicubic", 4)])
@pytest.mark.parametrize("n_in, n_out", [(8, 4), (10, 4), (6, 9), (224, 96)])
def test_antialias_taps_are_the_kernels(mode, interp, n_in, n_out):
    """The taps per output position read off ATen's own kernel: a 1-D resize's Jacobian has
    one non-zero per tap (these sizes have no tap of weight 0; where the filter is 0 at a
    tap the kernel still reads it and the Jacobian shows one fewer)."""
    x = torch.randn(1, 1, 1, n_in, dtype=torch.float64, device=DEVICE)
    jac = torch.autograd.functional.jacobian(
        lambda t: nn.functional.interpolate(t, size=(1, n_out), mode=mode, antialias=True), x)
    assert int((jac != 0).sum()) == _aa_taps(n_in, n_out, False, None, interp, torch.float64)


def test_antialiased_downscale_counted_as_the_cpu_kernel_runs_it():
    x = torch.randn(1, 2, 8, 8, device=DEVICE, requires_grad=True)
    dev = TorchDevice("x86-avx2")
    with dev.count("resize"):
        nn.functional.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True).sum() \
            .backward()
    led = dev.ledger
    assert led.uncounted() == {}
    # 8 -> 4 at scale 2: support 2, centres 1, 3, 5, 7, taps [0, 3), [1, 5), [3, 7),
    # [5, 8): 3 + 4 + 4 + 3 = 14 per dimension. Forward, separable: the width pass 2
    # channels x 8 rows x 14 = 224, the height pass 2 x 4 columns x 14 = 112; backward: each
    # of the 2 x 4 x 4 gradients over its row x column taps, 2 x 14 x 14 = 392
    assert led.total_ops()["mac_fp32"] == 224 + 112 + 392


def test_packed_sequences_are_gathers():
    torch.manual_seed(0)
    lstm = nn.LSTM(6, 5, batch_first=True).to(DEVICE)
    x = torch.randn(3, 7, 6, device=DEVICE)
    lengths = torch.tensor([7, 5, 2])
    dev = TorchDevice("x86-avx2")
    with dev.count("seq"):
        out, _ = lstm(pack_padded_sequence(x, lengths, batch_first=True))
        pad_packed_sequence(out, batch_first=True)[0].sum().backward()
    led = dev.ledger
    assert led.uncounted() == {}
    # the LSTM runs the 14 valid steps, not 21, op by op: 14 x 4 x 5 x (6 + 5) = 3,080
    # MACs forward; backward the weights' gradients at every step (3,080) and the hidden
    # state's, 4 x 5 x 5, at the 11 steps after a sequence's first (1,100; the input needs
    # no gradient)
    assert led.total_ops()["mac_fp32"] == 3080 + 3080 + 1100
    # packing reads the 14 valid rows of 6 floats and the 3 lengths, writes them and the
    # 7 batch sizes (int64)
    dev2 = TorchDevice("x86-avx2")
    with dev2.count("pack"):
        pack_padded_sequence(x, lengths, batch_first=True)
    assert dev2.ledger.bytes("pack") == {("offchip", "read"): 14 * 6 * 4 + 3 * 8,
                                         ("offchip", "write"): 14 * 6 * 4 + 7 * 8}


def test_fractional_max_pooling():
    x = torch.randn(1, 2, 8, 8, device=DEVICE, requires_grad=True)
    dev = TorchDevice("x86-avx2")
    with dev.count("pool"):
        nn.functional.fractional_max_pool2d(x, 2, output_size=4).sum().backward()
    led = dev.ledger
    assert led.uncounted() == {}
    # forward: the window offsets drawn (2 channels x 2: 4), 2 x 4 x 4 outputs x a 2 x 2
    # window = 128 compares, the sum's 32 adds; backward: each of the 32 gradients added
    # at its argmax
    assert led.ops("pool")["flop_fp32"] == 4 + 128 + 32
    assert led.ops("pool/backward")["flop_fp32"] == 32
