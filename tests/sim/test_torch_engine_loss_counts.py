"""Per-element rules applied to the right tensor (found by a coverage probe): a loss's
backward under mean or sum reduction takes its 0-dim gradient first and was counted once
(mse_loss_backward: 3 flops for any output), NLL was counted per input element instead of per
target, and an adaptive pooling's backward per element of its small gradient."""
import pytest
import torch
import torch.nn.functional as F

from sim.torch_engine import TorchDevice


def _flops(toy_gpu_path, fn, *tensors):
    dev = TorchDevice(toy_gpu_path, prefer_cuda=False)
    # the prediction requires grad, the target does not (as in training)
    ts = [t.to(dev.torch_device).requires_grad_(k == 0) for k, t in enumerate(tensors)]
    with dev.count("train"):
        fn(*ts).backward()
    return {s.split("/")[-1]: ops for s in dev.ledger.scopes()
            if (ops := dev.ledger.ops(s))}, dev.ledger


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse_backward_counts_each_element(toy_gpu_path, reduction):
    x, y = torch.randn(64, 1000), torch.randn(64, 1000)
    _, led = _flops(toy_gpu_path, lambda a, b: F.mse_loss(a, b, reduction=reduction), x, y)
    # forward 3 x 64,000 (subtract, square, add); backward 3 x 64,000 (subtract, scale,
    # multiply); was 3 for the backward; the mean's division and the seed gradient add a few
    assert 6 * 64_000 <= led.total_ops()["flop_fp32"] <= 6 * 64_000 + 10


def test_nll_counts_one_per_target(toy_gpu_path):
    logp = torch.randn(64, 1000).log_softmax(1)
    target = torch.randint(0, 1000, (64,))
    dev = TorchDevice(toy_gpu_path, prefer_cuda=False)
    lp = logp.to(dev.torch_device).requires_grad_(True)
    with dev.count("train"):
        F.nll_loss(lp, target.to(dev.torch_device)).backward()
    ops = dev.ledger.total_ops()
    # 64 targets: 64 gather-and-adds forward, 64 backward (the mean's division: 1 more);
    # it was 64 x 1000 each way
    assert ops["flop_fp32"] <= 2 * 64 + 4


def test_adaptive_pool_backward_counts_the_input(toy_gpu_path):
    x = torch.randn(8, 256, 7, 7)
    dev = TorchDevice(toy_gpu_path, prefer_cuda=False)
    xx = x.to(dev.torch_device).requires_grad_(True)
    with dev.count("train"):
        F.adaptive_avg_pool2d(xx, 2).sum().backward()
    # forward and backward one per input element each: 2 x 100,352 (the backward was
    # 8,192, one per gradient element); the sum over 8 x 256 x 2 x 2 = 8,192 more
    assert dev.ledger.total_ops()["flop_fp32"] == 2 * 100_352 + 8_192


def test_accumulating_writes_count_their_adds(toy_gpu_path):
    """index_put with accumulate (an indexing's backward), scatter with reduce="add" and put
    with accumulate add each value into its destination: they were counted as bytes only."""
    import warnings
    dev = TorchDevice(toy_gpu_path, prefer_cuda=False)
    d = dev.torch_device
    table = torch.randn(100, 64, device=d, requires_grad=True)
    idx = torch.randint(0, 100, (512,), device=d)
    with dev.count("train"):
        table[idx].sum().backward()            # index_put_(accumulate): 512 x 64 adds
    assert dev.ledger.total_ops("train/backward")["flop_fp32"] >= 512 * 64
    dev = TorchDevice(toy_gpu_path, prefer_cuda=False)
    index, src = torch.randint(0, 5, (8, 16), device=d), torch.randn(8, 16, device=d)
    where, values = torch.randint(0, 100, (64,), device=d), torch.randn(64, device=d)
    dest, flat = torch.zeros(8, 5, device=d), torch.zeros(100, device=d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # scatter's reduce= is deprecated in torch
        with dev.count("scatter"):
            dest.scatter_(1, index, src, reduce="add")
    with dev.count("put"):
        flat.put_(where, values, accumulate=True)
    # 8 x 16 = 128 scattered adds, 64 put adds (both 0 before)
    assert dev.ledger.total_ops("scatter")["flop_fp32"] == 128
    assert dev.ledger.total_ops("put")["flop_fp32"] == 64


def test_an_async_assertion_is_free(toy_gpu_path):
    # it was reported uncounted, marking every figure a lower bound (strict refused it)
    dev = TorchDevice(toy_gpu_path, prefer_cuda=False)
    with dev.count("infer"):
        torch._assert_async(torch.tensor(True, device=dev.torch_device))
    assert dev.ledger.uncounted() == {}
