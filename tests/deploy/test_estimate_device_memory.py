"""estimate on GPUs and CPUs: one inference's weights and the activations alive at once must
fit device memory (a batch of 200 224 x 224 images through a 64-channel convolution, 5.1 GB
alive at once, was priced on the 4 GB Jetson TX1). Toy profiles with a small memory."""
from pathlib import Path

import pytest
import torch.nn as nn

from deploy.estimate import estimate

TOY_GPU = Path(__file__).parents[1] / "data" / "toy-gpu.toml"


def _toy(tmp_path, capacity: int) -> str:
    path = tmp_path / f"toy-{capacity}.toml"
    path.write_text(TOY_GPU.read_text().replace("capacity_bytes = { value = 1e9",
                                                f"capacity_bytes = {{ value = {capacity}"))
    return str(path)


def _chain():
    # conv 3->64 (1,792 weights), in-place ReLU, conv 64->3 (1,731): 14,092 B fp32
    return nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(inplace=True),
                         nn.Conv2d(64, 3, 3, padding=1))


@pytest.mark.parametrize("capacity, fits", [(2_000_000, False), (2_480_000, False),
                                            (3_000_000, True)])
def test_weights_and_live_activations_against_device_memory(tmp_path, capacity, fits):
    # (1, 3, 96, 96): the input 110,592 B and the first conv's output 64 x 96 x 96 x 4 B =
    # 2,359,296 B are alive together (the ReLU works in place, the second conv's output
    # 110,592 B replaces the input): 2,469,888 B + 14,092 B of weights = 2,483,980 B
    profile = _toy(tmp_path, capacity)
    est = estimate(_chain(), (1, 3, 96, 96), profiles=[profile])
    assert bool(est.reports) is fits
    if not fits:
        why = next(iter(est.skipped.values()))
        assert ("holds weights 14092 B + activations alive at once 2469888 B = 2483980 B, "
                f"which exceeds toy-gpu memory.offchip.capacity_bytes = {capacity} B") in why
        assert "\n" not in why


def test_the_trace_runs_only_when_the_written_bytes_could_exceed_memory(tmp_path,
                                                                       monkeypatch):
    import sim.arena
    traced = []
    trace = sim.arena.trace_lifetimes
    monkeypatch.setattr(sim.arena, "trace_lifetimes",
                        lambda *a, **k: traced.append(1) or trace(*a, **k))
    # written: 2,359,296 (conv) + 2,359,296 (ReLU in place) + 110,592 (conv) B, with the
    # weights and the input 5,003,868 B: at 6 MB no trace is needed, at 3 MB it is (and
    # the model fits)
    assert estimate(_chain(), (1, 3, 96, 96), profiles=[_toy(tmp_path, 6_000_000)]).reports
    assert traced == []
    assert estimate(_chain(), (1, 3, 96, 96), profiles=[_toy(tmp_path, 3_000_000)]).reports
    assert traced == [1]


def test_a_training_step_that_does_not_fit_is_refused(tmp_path):
    # Linear(100, 1000), ReLU, Linear(1000, 10) at batch 64, SGD: inference holds the
    # weights (444,040 B), the input (25,600 B) and two 256,000 B activations: fits 1.2 MB.
    # The training step is fullest at the ReLU's backward: weights, the second layer's
    # gradients (40,040 B), input, labels (512 B), the ReLU's saved output, the gradient
    # it gets and the one it makes (3 x 256,000 B), the loss and its total weight (8 B):
    # 1,278,200 B
    import torch
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(100, 1000), nn.ReLU(), nn.Linear(1000, 10))
    profile = _toy(tmp_path, 1_200_000)
    assert estimate(net, (64, 100), profiles=[profile]).reports
    est = estimate(net, (64, 100), profiles=[profile], loss="auto")
    assert est.reports == {}
    why = next(iter(est.skipped.values()))
    assert ("one training step of 64 sample(s) holds 1278200 B alive at once" in why
            and "exceeds toy-gpu memory.offchip.capacity_bytes = 1200000 B" in why)
    # with room for it the step is priced, its counts untouched by the memory check:
    # forward 64 x (100 x 1000 + 1000 x 10) MACs, backward both weights' gradients (the
    # same again) and the hidden layer's, 64 x 1000 x 10 (the input needs none)
    big = estimate(net, (64, 100), profiles=[_toy(tmp_path, 3_000_000)], loss="auto")
    led = next(iter(big.ledgers.values()))
    assert led.total_ops("train")["mac_fp32"] == 64 * (100 * 1000 + 1000 * 10) * 2 + \
        64 * 1000 * 10


def test_a_training_step_on_a_microcontroller_needs_writable_memory():
    # conv 1->4 3x3, in-place ReLU, conv 4->1 3x3 on one 96 x 96 image: 76 weights, so the
    # state a step leaves (weights, gradients: 608 B) fits the 196,608 B SRAM of cortex-m4,
    # which is all pricing checked; inference fits too (input 36,864 B + the 4-channel
    # activation 147,456 B alive at once). Backward holds far more at once: the ReLU's saved
    # output, the gradient it gets and the one it makes (3 x 147,456 B) and the input the
    # first conv's weight gradient reads (36,864 B): 479,232 B, with the weights, a weight
    # gradient, the label and the loss (under 1 kB)
    import torch
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(inplace=True),
                        nn.Conv2d(4, 1, 3, padding=1), nn.Flatten())
    assert list(estimate(net, (1, 1, 96, 96), profiles=["cortex-m4"]).reports) == \
        ["cortex-m4"]
    est = estimate(net, (1, 1, 96, 96), profiles=["cortex-m4", "cortex-m7"], loss="auto")
    assert est.reports == {}
    why = est.skipped["cortex-m4"]
    assert "one training step needs" in why and "but cortex-m4 has 196,608 B" in why
    needs = int(why.split("needs ")[1].split(" B")[0].replace(",", ""))
    assert 3 * 147_456 + 36_864 <= needs <= 3 * 147_456 + 36_864 + 1024
