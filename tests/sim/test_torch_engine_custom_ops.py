"""Custom ops (``torch.library.custom_op``, the way research code and torch itself wrap a
Python implementation as one op) are opaque to a dispatch mode: their work was uncounted
(``probe.scaled_mm: 1``; torch 2.13's chunked ``F.linear_cross_entropy`` counted no MAC of
its language-model head). Now a Python custom op's kernel runs with the engine's mode
entered again and is counted by the torch ops it runs; one that launches Triton kernels,
which the mode cannot see, stays uncounted. Tensors are built on the engine's device."""
import pytest
import torch
import torch.nn.functional as F

from sim.torch_engine import TorchDevice


@torch.library.custom_op("neuroedge_test::scaled_mm", mutates_args=())
def scaled_mm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (x @ w) * 2.0


@scaled_mm.register_fake
def _(x, w):
    return x.new_empty(x.shape[0], w.shape[1])


def _backward(ctx, g):
    x, w = ctx.saved_tensors
    return (g * 2.0) @ w.T, x.T @ (g * 2.0)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


scaled_mm.register_autograd(_backward, setup_context=_setup)


def _operands(dev, requires_grad=True):
    torch.manual_seed(0)
    on = dict(device=dev.torch_device, requires_grad=requires_grad)
    return torch.randn(4, 8, **on), torch.randn(8, 5, **on)


def test_a_python_custom_op_is_counted_by_the_ops_it_runs(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    x, w = _operands(dev)
    with dev.count("forward"):
        y = scaled_mm(x, w)
    # (4 x 8) @ (8 x 5): 160 MACs, then 20 multiplies by 2
    assert dev.ledger.ops("forward") == {"mac_fp32": 160, "flop_fp32": 20, "kernel_launch": 2}
    with dev.count("backward"):
        y.sum().backward()
    # its registered backward: g * 2 twice (40), g W^T and x^T g (160 MACs each)
    assert dev.ledger.total_ops("backward")["mac_fp32"] == 320
    assert dev.ledger.uncounted() == {}


def test_step_replay_follows_a_custom_op(toy_gpu_path):
    def run(replay):
        dev = TorchDevice(toy_gpu_path, replay=replay)
        model = dev.compile(torch.nn.Linear(8, 8))
        _, w = _operands(dev)
        opt = torch.optim.SGD([*model.parameters(), w], lr=0.1)
        with dev.count("train"):
            for _ in range(4):
                opt.zero_grad()
                scaled_mm(model(torch.ones(4, 8, device=dev.torch_device)), w).sum().backward()
                opt.step()
        return dev.ledger
    full, replayed = run(False), run("verify")
    assert replayed.total_ops() == full.total_ops()
    assert full.total_ops()["mac_fp32"] > 4 * 160


def test_torchs_chunked_linear_cross_entropy_counts_its_head(toy_gpu_path):
    options = pytest.importorskip("torch.nn.modules.linear_cross_entropy_options")
    dev = TorchDevice(toy_gpu_path)
    on = dict(device=dev.torch_device)
    torch.manual_seed(0)
    x = torch.randn(64, 32, requires_grad=True, **on)
    head = torch.randn(100, 32, requires_grad=True, **on)
    target = torch.randint(0, 100, (64,), **on)
    with dev.count("chunked"):
        F.linear_cross_entropy(x, head, target,
                               options=options.LinearCrossEntropyOptions()).backward()
    assert dev.ledger.uncounted() == {}
    # the logits 64 x 32 x 100 = 204,800 MACs and the two gradients as many each: at least
    # 614,400, as the unchunked reference counts
    assert dev.ledger.total_ops()["mac_fp32"] >= 3 * 204_800


@torch.library.custom_op("neuroedge_test::triton_like", mutates_args=())
def triton_like(x: torch.Tensor) -> torch.Tensor:
    return x * 3.0


@triton_like.register_fake
def _(x):
    return torch.empty_like(x)


def test_a_custom_op_that_launches_triton_kernels_stays_uncounted(toy_gpu_path):
    from torch._library.custom_ops import _maybe_get_opdef
    # as torch.library.wrap_triton records it (no Triton on this machine): the mode would
    # see none of the kernel's work, so counting the op's torch ops would undercount it
    _maybe_get_opdef("neuroedge_test::triton_like")._used_triton_kernels.append("kernel")
    dev = TorchDevice(toy_gpu_path)
    with dev.count("t"):
        triton_like(torch.ones(3, device=dev.torch_device))
    assert dev.ledger.uncounted() == {"neuroedge_test.triton_like": 1}


@torch.library.custom_op("neuroedge_test::numpy_double", mutates_args=())
def numpy_double(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(x.detach().cpu().numpy() * 2.0).to(x.device)


@numpy_double.register_fake
def _(x):
    return torch.empty_like(x)


@pytest.mark.parametrize("replay", [False, "verify"])
def test_a_custom_op_computing_outside_torch_stays_uncounted(toy_gpu_path, replay):
    """Its kernel runs no torch op that does work (numpy does it): nothing of it could be
    priced, so the op is reported uncounted, once per call, replayed steps included."""
    dev = TorchDevice(toy_gpu_path, replay=replay)
    model = dev.compile(torch.nn.Linear(3, 3))
    with dev.count("steps"):
        for _ in range(3):
            numpy_double(model(torch.ones(2, 3, device=dev.torch_device)))
    assert dev.ledger.uncounted() == {"neuroedge_test.numpy_double": 3}
    assert dev.ledger.total_ops()["mac_fp32"] == 3 * 2 * 3 * 3
