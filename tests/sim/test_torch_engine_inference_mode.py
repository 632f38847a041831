"""Counting under ``torch.inference_mode()``: with autograd's dispatch keys off, torch hands a
dispatch mode its CompositeImplicitAutograd ops whole (``linear``, ``conv2d``,
``layer_norm``, ``dropout``, ...) instead of the ops they stand for. The counting mode runs
them as ATen's composite kernel with itself entered again, so inference mode counts what
``no_grad`` counts. Before: a Linear's MACs were not counted at all (``linear`` uncounted)
and a convolution's NeuroBench fan-out, which needs autograd, stopped the count."""
import pytest
import torch
from torch import nn

from sim.torch_engine.engine import TorchDevice


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.3), nn.Linear(4 * 4 * 4, 3))


class _Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 6)
        self.rnn = nn.LSTM(6, 8, batch_first=True)
        self.norm = nn.LayerNorm(8)
        self.head = nn.Linear(8, 3)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.head(self.norm(h[:, -1]))


CASES = {   # factory, a batch
    "mlp": (lambda: nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)),
            lambda g: torch.randn(4, 8, generator=g)),
    "cnn": (_cnn, lambda g: torch.randn(4, 1, 8, 8, generator=g)),
    "transformer": (lambda: nn.TransformerEncoderLayer(16, 2, 32, batch_first=True),
                    lambda g: torch.randn(2, 5, 16, generator=g)),
    "recurrent": (_Recurrent, lambda g: torch.randint(0, 20, (4, 7), generator=g)),
}


def _count(case, grad_off, replay=False):
    make, batch = CASES[case]
    torch.manual_seed(0)
    net = make().eval()
    dev = TorchDevice("a100", replay=replay)
    net = dev.compile(net)
    x = batch(torch.Generator().manual_seed(1)).to(dev.torch_device)
    with grad_off(), dev.count("infer", samples=3 * x.shape[0]):
        for _ in range(3):
            net(x)
    return dev.ledger


@pytest.mark.parametrize("case", sorted(CASES))
def test_inference_mode_counts_what_no_grad_counts(case):
    ref = _count(case, torch.no_grad)
    assert ref.uncounted() == {}
    assert sum(n for op, n in ref.total_ops().items() if op.startswith("mac_")) > 0
    for replay in (False, True):
        led = _count(case, torch.inference_mode, replay)
        if case != "transformer":
            assert led == ref      # ops, bytes, activity, layers, footprint, scope by scope
            continue
        # the engine's documented limit: nn.MultiheadAttention's projections of a
        # non-contiguous input run as one bmm each, where torch copies the input and folds
        # it into an mm; the arithmetic is the same, 3 copy kernels and their bytes fewer
        ops, ref_ops = led.total_ops(), ref.total_ops()
        assert {k: v for k, v in ops.items() if k != "kernel_launch"} == \
            {k: v for k, v in ref_ops.items() if k != "kernel_launch"}
        assert ops["kernel_launch"] == ref_ops["kernel_launch"] - 3
        assert led.activity() == ref.activity() and led.layers() == ref.layers()


def test_inference_mode_linear_hand_count():
    # 2 samples x 4 inputs x 3 outputs = 24 MACs; NeuroBench dense pairs the same
    dev = TorchDevice("a100")
    lin = dev.compile(nn.Sequential(nn.Linear(4, 3)))
    with torch.inference_mode(), dev.count("infer", samples=2):
        lin(dev.tensor(torch.ones(2, 4)))
    assert dev.ledger.total_ops()["mac_fp32"] == 24
    assert dev.ledger.activity()["dense_synops"] == 24
    assert dev.ledger.uncounted() == {}


@pytest.mark.parametrize("x", [{"x": torch.ones(2, 4)}, [torch.ones(2, 4)], 3.0])
def test_run_refuses_what_is_not_a_tensor(x):
    """``run`` takes one batch-first tensor; anything else is one line saying so and what to
    do instead, before anything is counted (it was an AttributeError on ``dim``)."""
    from sim.errors import ModelError
    dev = TorchDevice("a100")
    lin = dev.compile(nn.Linear(4, 3))
    with pytest.raises(ModelError, match=r"x is a (dict|list|float), not a tensor; run "
                                         r"takes one batch-first tensor"):
        dev.run(lin, x)
    assert dev.ledger.is_empty()
