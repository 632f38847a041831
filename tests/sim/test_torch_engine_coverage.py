"""Coverage of the ops real models emit: attention kernels, the fused transformer fast path,
norms, interpolation and in-place restrides (issue 30). Tensors are built on the engine's
device, so the counts checked here are those of a CUDA run too."""
import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from sim.torch_engine import TorchDevice
from sim.torch_engine.costs import op_cost

aten = torch.ops.aten


def _flops(fn) -> int:
    with FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


def test_attention_forward_and_backward_hand_formula(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    on = dict(device=dev.torch_device)
    q = torch.randn(2, 3, 5, 8, requires_grad=True, **on)
    k = torch.randn(2, 3, 7, 8, requires_grad=True, **on)
    v = torch.randn(2, 3, 7, 8, requires_grad=True, **on)
    with dev.count("a"):
        F.scaled_dot_product_attention(q, k, v).sum().backward()
    # 2 x 3 heads, 5 x 7 = 35 scores each: 210 scores; QK^T 210 x 8 + PV 210 x 8 = 3,360 MACs;
    # backward QK^T recomputed, dQ, dK, dV, dP (210 x 8 each) = 8,400: 11,760 in all
    assert dev.ledger.total_ops()["mac_fp32"] == 11_760
    # FlopCounterMode's own formula, where it has one (CUDA kernels), agrees: 2 x 11,760
    from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count
    assert sdpa_flop_count(q.shape, k.shape, v.shape) + sdpa_backward_flop_count(
        q.shape, q.shape, k.shape, v.shape) == 2 * 11_760
    assert dev.ledger.uncounted() == {}


@pytest.mark.parametrize("backward", [False, True])
def test_every_fused_attention_kernel_counts_the_same(backward):
    """The CPU flash, CUDA flash, efficient and cuDNN kernels get one rule, so the count
    does not depend on which kernel a device picked (called here on CPU tensors: the rule
    reads shapes only)."""
    q, k, v = torch.zeros(1, 2, 4, 8), torch.zeros(1, 2, 6, 8), torch.zeros(1, 2, 6, 8)
    ops = ([aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
            aten._scaled_dot_product_flash_attention_backward.default,
            aten._scaled_dot_product_efficient_attention_backward.default,
            aten._scaled_dot_product_cudnn_attention_backward.default] if backward else
           [aten._scaled_dot_product_flash_attention_for_cpu.default,
            aten._scaled_dot_product_flash_attention.default,
            aten._scaled_dot_product_efficient_attention.default,
            aten._scaled_dot_product_cudnn_attention.default])
    args = (torch.zeros(1, 2, 4, 8), q, k, v) if backward else (q, k, v)
    # 2 heads x 4 x 6 = 48 scores; forward 48 x (8 + 8) = 768 MACs + 5 x 48 softmax ops;
    # backward 48 x (3 x 8 + 2 x 8) = 1,920 MACs + 3 x 48 softmax-backward ops
    want = ({"mac_fp32": 1_920, "flop_fp32": 144} if backward
            else {"mac_fp32": 768, "flop_fp32": 240})
    for op in ops:
        counts, _, _, uncounted = op_cost(op, args, {}, (torch.zeros(1, 2, 4, 8),))
        assert (counts, uncounted) == (want, ""), op


@pytest.mark.parametrize("train", [False, True])
def test_transformer_encoder_fast_path_is_counted(toy_gpu_path, train):
    """In eval, PyTorch would run each layer as one fused kernel: the engine counts it as its
    constituent ops, the same MACs as training's path and as FlopCounterMode."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    dev = TorchDevice(toy_gpu_path)
    enc = dev.compile(enc.train(train))
    x = torch.randn(3, 6, 16, device=dev.torch_device)
    with dev.count("t"), torch.set_grad_enabled(train):
        enc(x)
    # per layer, 18 tokens: in-projection 18 x 16 x 48 = 13,824, out-projection 18 x 16 x 16
    # = 4,608, feed-forward 2 x 18 x 16 x 32 = 18,432; attention 3 x 2 heads x 6 x 6 = 216
    # scores x (8 + 8) = 3,456: 40,320 per layer, 80,640 for two
    assert dev.ledger.total_ops()["mac_fp32"] == 80_640
    # FlopCounterMode agrees on the projections and feed-forward (73,728); it has no formula
    # for the CPU flash kernel (so misses 2 x 3,456 of attention there) but has CUDA's
    assert _flops(lambda: enc(x)) // 2 in (80_640 - 2 * 3_456, 80_640)
    assert dev.ledger.uncounted() == {}
    assert torch.backends.mha.get_fastpath_enabled()    # restored after the block


def test_norms_interpolation_and_restride(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    x = torch.randn(1, 2, 4, 4, device=dev.torch_device)
    with dev.count("u"):
        F.interpolate(x, scale_factor=2, mode="bilinear")   # 2 x 8 x 8 = 128 out x 4 taps
        F.group_norm(x, 1)                                   # 32 elements x 7
        x.as_strided_((2, 4, 4), (16, 4, 1))                 # metadata only
        F.interpolate(x.view(1, 2, 4, 4), scale_factor=2)    # nearest: bytes only
    assert dev.ledger.ops("u") == {"mac_fp32": 512, "flop_fp32": 224, "kernel_launch": 3}
    assert dev.ledger.uncounted() == {}


def test_host_to_device_copy_is_not_device_work():
    """A CUDA run copies the host's input onto the device; a CPU run does not: the copy is a
    transfer, free, so both count the same (op_cost on a meta 'device' stands in for CUDA)."""
    src = torch.zeros(4, 3)
    dst = torch.empty(4, 3, device="meta")
    assert op_cost(aten.copy_.default, (dst, src), {}, dst)[:3] == ({}, 0, 0)
    same = torch.empty(4, 3)
    assert op_cost(aten.copy_.default, (same, src), {}, same)[2] == 48   # 12 floats written
