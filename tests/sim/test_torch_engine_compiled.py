"""A ``torch.compile``d model counted under ``TorchDevice.count``: its ops reach the counting
mode from compiled frames, and dynamo compiled the mode's own Python (a graph per argument
type, its recompile limit hit, 72 frames for a 3-layer MLP). The mode is
kept out of dynamo once the process uses ``torch.compile``
(``sim.torch_engine.dispatch.eager_while_observing``: compiled code runs eagerly inside a
counting block); the ledger is the eager model's."""
import torch
from torch import nn

from sim.torch_engine.engine import TorchDevice


def _count(net, x):
    dev = TorchDevice("a100")
    net = dev.compile(net)
    with torch.no_grad(), dev.count("infer", samples=x.shape[0]):
        net(dev.tensor(x))
    return dev.ledger, dev


def test_compiled_model_counts_as_eager_and_dynamo_leaves_the_mode():
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    x = torch.randn(4, 8)
    ref, _ = _count(eager, x)
    # 4 samples x (8 x 16 + 16 x 3) = 704 MACs
    assert ref.total_ops()["mac_fp32"] == 704
    dev = TorchDevice("a100")
    compiled = torch.compile(dev.compile(eager), backend="eager")
    from torch._dynamo.utils import counters
    counters.clear()
    with torch.no_grad(), dev.count("infer", samples=4):
        compiled(dev.tensor(x))
    # the same ledger as the eager model's, scope by scope: torch.compile's wrapper
    # (OptimizedModule, holding the model as ``_orig_mod``) adds no level to the paths
    assert dev.ledger == ref
    assert "infer/0/forward" in dev.ledger.scopes()
    # before: 72 frames, 9 graphs, resumed inside __torch_dispatch__, _count, touch, ...
    assert not [k for k in counters["resumes"] if "torch_dispatch" in k or "_count" in k]
    assert counters["stats"].get("unique_graphs", 0) <= 1
