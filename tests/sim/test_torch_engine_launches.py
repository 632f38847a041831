"""The torch engine's inputs to the execution model: kernel launches and resident footprint."""
import torch

from sim.torch_engine import TorchDevice


def test_linear_inference_one_launch_and_footprint(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    lin = dev.compile(torch.nn.Linear(4, 3))
    x = torch.ones(2, 4)
    out = dev.run(lin, x)
    # addmm is the one kernel (the weight transpose is a free view)
    assert dev.ledger.total_ops() == {"mac_fp32": 24, "kernel_launch": 1}
    # alive at the end: the output (written, 2 x 3 x 4 B = 24 B) and, read only, the
    # weight 3 x 4 x 4 = 48 B, the bias 12 B and the input 2 x 4 x 4 = 32 B = 92 B
    assert dev.ledger.footprints() == {"infer": {"writable": 24, "read_only": 92, "blocks": 1}}
    assert out.shape == (2, 3)


def test_training_counts_one_launch_per_kernel_and_optimizer_state_as_writable(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    lin = dev.compile(torch.nn.Linear(4, 3, bias=False))
    opt = torch.optim.SGD(lin.parameters(), lr=0.1, foreach=True)
    x = dev.tensor(torch.ones(2, 4))
    with dev.count("train", samples=2):
        lin(x).sum().backward()
        opt.step()
    # 5 launches, one per op that computes or moves bytes: forward mm and sum; backward the
    # ones_like of the loss gradient (its expand is a free view) and the mm for the weight
    # gradient; the optimizer's one _foreach_add_. MACs: 2 x 4 x 3 = 24 per mm; flops: the
    # sum's 6 adds + the update's 12 (one per weight element)
    assert dev.ledger.total_ops() == {"mac_fp32": 48, "flop_fp32": 18, "kernel_launch": 5}
    fp = dev.ledger.footprints()["train"]
    # alive at the end and written in the block: the weight (3 x 4 x 4 B = 48 B, written by
    # the optimizer) and its gradient (48 B, written by the backward mm): 96 B writable;
    # read only: x (2 x 4 x 4 B = 32 B); the output, loss and its gradient are freed
    assert fp == {"writable": 48 + 48, "read_only": 32, "blocks": 1}
    del opt


def test_free_views_launch_nothing(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    x = torch.ones(3, 4)
    with dev.count("v"):
        x.t()
        x.view(12)
    assert "kernel_launch" not in dev.ledger.total_ops()


def test_gathered_training_tensor_is_streamed_not_reused():
    """A mini-batch indexed out of a training tensor larger than the cache: the tensor is
    streamed through the block, so the reused state still fits a100's 40 MB L2 (before, the
    whole training tensor counted, and per-sample energy grew with the training set)."""
    from sim.execution.gpu_cpu import cached_blocks, reused_bytes
    dev = TorchDevice("a100", prefer_cuda=False)
    lin = dev.compile(torch.nn.Linear(256, 10, bias=False))
    data = torch.zeros(50_000, 256)                  # 50,000 x 256 x 4 B = 51,200,000 B
    with dev.count("infer", samples=64), torch.no_grad():
        for i in range(2):
            lin(data[torch.arange(32) + 32 * i])
    fp = dev.ledger.footprints()["infer"]
    assert fp["streamed"] == 51_200_000
    # reused: the weight (10 x 256 x 4 = 10,240 B) and small live tensors, far below 40 MB
    assert 10_240 <= reused_bytes(fp) < 100_000
    assert cached_blocks(dev.profile, dev.ledger.footprints()) == {"infer": True}
    # what was read of it: 2 batches x 32 rows x 256 x 4 B = 65,536 B
    assert fp["streamed_read"] == 65_536


def test_dram_supplies_the_gathered_rows_not_the_whole_streamed_tensor():
    """A block that fits the cache is charged DRAM for its reused state and the rows it
    gathered: a 10x larger training tensor costs the same (before, all 51.2 MB of it was
    charged per block: 800x the 64 rows read)."""
    from sim.pricing import price
    dev = TorchDevice("a100", prefer_cuda=False)
    lin = dev.compile(torch.nn.Linear(256, 10, bias=False))
    for n in (5_000, 50_000):
        data = torch.zeros(n, 256)
        with dev.count(f"infer{n}", samples=64), torch.no_grad():
            for i in range(2):
                lin(data[torch.arange(32) + 32 * i])
    reads = {c.scope: c.count for c in price(dev.ledger, dev.profile).charges
             if c.item == "offchip:read"}
    # the weight (10 x 256 x 4 = 10,240 B) loaded once + 64 rows x 1,024 B = 75,776 B; the
    # index tensors are freed inside the block (not resident)
    assert reads == {"infer5000": 75_776, "infer50000": 75_776}
