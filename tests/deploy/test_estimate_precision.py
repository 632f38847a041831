"""Models in their own float precision (``model.half()``, bfloat16): the drawn input was
float32, so ``estimate`` / ``measure`` of such a model failed its forward ("mat1 and mat2
must have the same dtype"); now the input is drawn in the model's precision, the counts are
its own (``mac_fp16``) and the layer table says fp16, not fp32. ``measure`` times the very
input ``estimate`` counted (it drew another one before)."""
import pytest
import torch
from torch import nn

from deploy.estimate import estimate
from deploy.layer_table import render
from deploy.measure import run_measure
from sim.errors import ModelError


def _mlp(dtype):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(dtype)


@pytest.mark.parametrize("dtype, name", [(torch.float16, "fp16"), (torch.bfloat16, "bf16"),
                                         (torch.float64, "fp64")])
def test_a_model_in_its_own_precision_is_counted_in_it(dtype, name):
    est = estimate(_mlp(dtype), (2, 16), profiles=["a100"])
    ops = est.ledgers["a100"].total_ops()
    # 2 samples x (16 x 32 + 32 x 4) = 1,280 MACs, all in the model's precision
    assert ops[f"mac_{name}"] == 1280 and "mac_fp32" not in ops
    assert est.dtype == name
    # parameters 676 x 2 B (fp16 / bf16) or 8 B (fp64)
    size = torch.finfo(dtype).bits // 8
    assert any(f"({name}); activations {name}" in line for line in render(est, "a100"))
    assert est.ledgers["a100"].models()["Sequential"]["parameter_bytes"] == 676 * size


class Seen(nn.Module):
    """Records every input it is called on (in a list the deep copies share)."""

    def __init__(self, log):
        super().__init__()
        self.fc = nn.Linear(8, 3)
        self.log = log

    def forward(self, x):
        self.log.append(x.detach().clone())
        return self.fc(x)

    def __deepcopy__(self, memo):
        twin = Seen(self.log)
        twin.fc.load_state_dict(self.fc.state_dict())
        return twin


def test_measure_times_the_input_estimate_counted():
    log = []
    run_measure(Seen(log), (4, 8), "x86-avx2", device="cpu", warmup=1, repeats=2, seed=3,
                meter_for=lambda d: (None, "no counter in this test"))
    # estimate's forward(s) on its copy, then the warm-up and timed calls: one input
    assert len(log) >= 4
    assert all(torch.equal(x, log[0]) for x in log)


def test_int8_pricing_of_a_model_in_another_precision_is_refused():
    """``dtype="int8"`` re-types fp32 counts (bytes / 4); on a half model it kept the fp16
    MACs, divided fp16 bytes by 4 and still said int8."""
    with pytest.raises(ModelError, match=r"dtype=.int8. re-expresses an fp32 model's counts "
                                         r"at int8, but Sequential's parameters are float16"):
        estimate(_mlp(torch.float16), (2, 16), profiles=["a100"], dtype="int8")
    # an fp32 model is re-typed as before: 1,280 int8 MACs
    est = estimate(_mlp(torch.float32), (2, 16), profiles=["a100"], dtype="int8")
    assert est.ledgers["a100"].total_ops()["mac_int8"] == 1280
