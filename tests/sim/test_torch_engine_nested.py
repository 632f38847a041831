"""Nested tensors (``torch.nested``, sequences of different lengths in one batch) are
counted: a jagged one made the count block abort the whole process (``terminate called``:
the composite-kernel query raised on ``aten.sym_size`` where C++ cannot take an
exception), a strided one crashed the cost memo (``NestedTensorImpl doesn't support
sizes``), and the NeuroBench activity of either raised ``NotImplementedError``. Tensors are
built on the engine's device."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from deploy.estimate import estimate
from deploy.layer_table import render
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

LAYOUTS = [torch.strided, torch.jagged]
LENGTHS = (3, 5)          # two sequences: 8 rows in all


def _nested(dev, layout, width=8, lengths=LENGTHS, requires_grad=False, seed=0):
    gen = torch.Generator().manual_seed(seed)
    parts = [torch.randn(n, width, generator=gen).to(dev.torch_device) for n in lengths]
    return torch.nested.nested_tensor(parts, layout=layout, requires_grad=requires_grad)


def _mlp(dev):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).to(dev.torch_device)


def test_the_composite_kernel_query_does_not_raise_on_ops_outside_the_dispatcher():
    from sim.torch_engine.engine import _has_composite_kernel
    # aten::sym_size is no dispatcher op: torch's query raises, which aborted the process
    # when a jagged tensor's size query reached the engine from C++
    assert _has_composite_kernel(torch.ops.aten.sym_size.default) is False


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inference_counts_the_rows_the_sequences_hold(toy_gpu_path, layout):
    dev = TorchDevice(toy_gpu_path)
    m = _mlp(dev)
    with dev.count("infer"):
        m(_nested(dev, layout))
    # 8 rows x (8 x 16 + 16 x 4) = 1,536 MACs (no padding: 2 x 5 rows would give 1,920)
    assert dev.ledger.total_ops()["mac_fp32"] == 1536
    assert dev.ledger.uncounted() == {}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_training_counts_the_backward_products(toy_gpu_path, layout):
    dev = TorchDevice(toy_gpu_path)
    m = _mlp(dev)
    opt = torch.optim.Adam(m.parameters())
    with dev.count("train"):
        y = m(_nested(dev, layout))
        y.values().pow(2).mean().backward()
        opt.step()
    # forward 1,536; second Linear: input and weight gradients 8 x 16 x 4 = 512 each;
    # first Linear: weight gradient 8 x 8 x 16 = 1,024 (the input needs none): 3,584
    assert dev.ledger.total_ops()["mac_fp32"] == 3584
    assert dev.ledger.uncounted() == {}


def _attention(dev, heads=2, width=16):
    torch.manual_seed(0)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))

        def forward(self, x):
            def split(t):    # (B, L, width) -> (B, heads, L, width / heads)
                return t.unflatten(-1, [heads, width // heads]).transpose(1, 2)
            y = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)),
                                               split(self.v(x)))
            return self.o(y.transpose(1, 2).flatten(-2))
    return Attention().to(dev.torch_device)


def test_attention_over_sequences_of_different_lengths_counts_each_sequence(toy_gpu_path):
    """Scaled dot-product attention on jagged tensors: each sequence attends to itself, so
    the count is the sum over sequences, the same as running each one alone."""
    lengths = (3, 5, 5, 2)
    dev = TorchDevice(toy_gpu_path)
    m = _attention(dev)
    x = _nested(dev, torch.jagged, width=16, lengths=lengths)
    with dev.count("nested"):
        m(x)
    # 4 projections of 15 rows: 4 x 15 x 16 x 16 = 15,360 MACs; attention per sequence
    # L^2 scores x 2 heads x (8 + 8): (9 + 25 + 25 + 4) x 32 = 2,016; 17,376 in all
    assert dev.ledger.total_ops()["mac_fp32"] == 17_376
    assert dev.ledger.uncounted() == {}
    alone = TorchDevice(toy_gpu_path)
    with alone.count("one_by_one"):
        for seq in x.unbind():
            m(seq.unsqueeze(0))
    assert alone.ledger.total_ops()["mac_fp32"] == 17_376


def test_an_elementwise_op_with_a_per_sequence_operand_is_priced_per_sequence(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    x = _nested(dev, torch.jagged)
    scale = torch.rand(2, 1, 8, device=dev.torch_device)     # one row of scales per sequence
    with dev.count("mul"):
        x * scale
    # one multiply per element held: 8 rows x 8 = 64 (broadcast over the stacked rows as
    # a whole it would read as 2 x 8 x 8 = 128)
    assert dev.ledger.total_ops() == {"flop_fp32": 64, "kernel_launch": 1}
    assert dev.ledger.uncounted() == {}


def test_a_product_by_a_weight_whose_rows_equal_the_sequence_count(toy_gpu_path):
    """``x @ W`` with W of 3 rows and 3 sequences: the weight is one matrix for every
    sequence, not one row per sequence (it was sliced as such, and the call went
    uncounted)."""
    dev = TorchDevice(toy_gpu_path)
    x = _nested(dev, torch.jagged, width=3, lengths=(2, 4, 1))
    w = torch.randn(3, 5, device=dev.torch_device)
    with dev.count("mm"):
        x @ w
    # 7 rows x 3 x 5 = 105 MACs
    assert dev.ledger.total_ops()["mac_fp32"] == 105
    assert dev.ledger.uncounted() == {}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_neurobench_activity_equals_the_stacked_batch(toy_gpu_path, layout):
    dev = TorchDevice(toy_gpu_path)
    m = _mlp(dev)
    with torch.no_grad():
        m[0].weight[:, :3] = 0       # zero weights: effective MACs below the dense ones
    x = _nested(dev, layout)
    rows = torch.cat(list(x.unbind()))
    with dev.count("nested"):
        m(torch.relu(x))
    ref = TorchDevice(toy_gpu_path)
    with ref.count("nested"):
        m(torch.relu(rows))
    assert dev.ledger.activity() == ref.ledger.activity()
    assert dev.ledger.activity()["dense_synops"] == 1536     # 8 rows x 192 weights


@pytest.mark.parametrize("layout", LAYOUTS)
def test_step_replay_counts_nested_steps_in_full(toy_gpu_path, layout):
    def run(replay):
        dev = TorchDevice(toy_gpu_path, replay=replay)
        m = _mlp(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        with dev.count("train"):
            for step in range(3):
                opt.zero_grad()
                m(_nested(dev, layout, seed=step)).values().sum().backward()
                opt.step()
        return dev.ledger
    full, replayed = run(False), run("verify")
    assert replayed.total_ops() == full.total_ops()
    assert replayed.total_bytes() == full.total_bytes()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_estimate_takes_a_nested_example_input(layout):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    parts = [torch.randn(3, 8), torch.randn(5, 8)]
    est = estimate(m, torch.nested.nested_tensor(parts, layout=layout), profiles=["a100"],
                   loss="mse")
    assert est.uncounted == {}
    # 2 sequences; inference 8 rows x 192 = 1,536 MACs; the training step 1,536 forward +
    # 512 + 512 (second Linear) + 1,024 (first Linear's weights) = 3,584
    assert est.inference_samples == 2
    assert est.ledgers["a100"].total_ops("infer")["mac_fp32"] == 1536
    assert est.ledgers["a100"].total_ops("train")["mac_fp32"] == 3584
    table = "\n".join(render(est))
    assert "[2, 3..5, 16]" in table          # 2 sequences of 3 to 5 rows of 16


def test_estimate_refuses_a_nested_input_holding_nan():
    parts = [torch.randn(3, 8), torch.full((5, 8), float("nan"))]
    with pytest.raises(ModelError, match=r"nested components \(3, 8\), \(5, 8\) has 40 NaN"):
        estimate(nn.Linear(8, 4), torch.nested.nested_tensor(parts), profiles=["a100"])


def test_a_forward_that_fails_on_a_nested_input_is_one_line():
    parts = [torch.randn(3, 8), torch.randn(5, 8)]
    # a Linear of 6 inputs on rows of 8: the forward fails; the message names the input
    # by its components (reading a strided nested tensor's shape raised instead)
    with pytest.raises(ModelError, match=r"forward failed on example_input of shape nested "
                                         r"components \(3, 8\), \(5, 8\)"):
        estimate(nn.Linear(6, 4), torch.nested.nested_tensor(parts), profiles=["a100"])
