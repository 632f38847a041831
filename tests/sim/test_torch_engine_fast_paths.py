"""The shortcuts the torch engine takes per op and per layer to count at a lower price (issue
36) give what the plain definitions give: the non-zero count and the spike test of the
NeuroBench activity, a convolution's effective pairs, the resident footprint of a tensor
seen again after its storage changed, and the cost memo's answer for free ops."""
import numpy as np
import pytest
import torch

from sim.torch_engine import TorchDevice
from sim.torch_engine.activity import (
    LayerRecorder,
    _host_array,
    count_nonzero,
    is_spiking,
    sample_index,
)
from sim.torch_engine.costs import CostMemo, is_free, op_cost


def _spiking_by_definition(x: torch.Tensor) -> bool:
    """Every element 0 or +-1: |x| equals its non-zero indicator (NaN fails)."""
    if x.dtype == torch.bool:            # no abs() for bool; every element is 0 or 1
        x = x.to(torch.uint8)
    return bool(torch.equal(x.abs(), (x != 0).to(x.dtype)))


def test_spike_test_checks_every_element_when_the_sample_passes():
    # 1,000 elements, the 64 sampled ones set to 1; the two unsampled elements below are
    # found by the full pass only
    x = torch.zeros(1000)
    sampled = sample_index(1000)
    x[torch.from_numpy(sampled)] = 1.0
    free = [i for i in range(1000) if i not in set(sampled.tolist())]
    assert len(set(sampled.tolist())) == 64 and len(free) == 936
    assert is_spiking(x) and _spiking_by_definition(x)
    x[free[0]] = 0.5
    assert not is_spiking(x)
    x[free[0]] = -1.0
    assert is_spiking(x)
    x[free[-1]] = float("nan")                  # NaN is no spike
    assert not is_spiking(x)


def test_spike_sample_meets_every_channel_of_a_batch():
    """The sample decides a real-valued activation whose first channel is dead (zero in
    every sample): a 64 x 16 x 13 x 13 pooled ReLU output (2,704 elements a sample). The
    stride sample before took element 2,707 k, channel 0 of sample k at every k, saw only
    zeros and sent every call to the full pass."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(64, 16, 13, 13, generator=g) + 0.1   # no element 0 ...
    x[:, 0] = 0.0                                        # ... but in the dead channel
    flat = x.reshape(-1).numpy()
    picked = flat[sample_index(flat.size)]
    # 4 of the 64 positions fall in channel 0 (the old stride: all 64)
    assert (picked != 0).sum() == 64 - 4
    assert not is_spiking(x)


@pytest.mark.parametrize("make", [
    lambda g: torch.rand(64, 16, 13, 13, generator=g),                    # real values
    lambda g: (torch.rand(128, 784, generator=g) > 0.7).float(),          # spikes
    lambda g: torch.randint(-1, 2, (37, 5), generator=g).float(),         # 0 and +-1
    lambda g: torch.randint(-1, 2, (37, 5), generator=g),                 # integers
    lambda g: torch.randint(0, 3, (300,), generator=g),                   # a 2 among them
    lambda g: (torch.rand(40, 30, generator=g) > 0.5),                    # bool
    lambda g: (torch.rand(50, 60, generator=g) > 0.5).float().t(),        # not contiguous
    lambda g: torch.tensor([0.0, -0.0, 1.0, float("inf")]),
])
def test_spike_test_and_nonzero_count_agree_with_their_definitions(make):
    x = make(torch.Generator().manual_seed(0))
    assert is_spiking(x) == _spiking_by_definition(x)
    assert count_nonzero(x) == int(torch.count_nonzero(x))


def test_nonzero_count_treats_negative_zero_as_zero_and_nan_as_non_zero():
    x = torch.tensor([0.0, -0.0, float("nan"), 2.0, -3.0])
    assert count_nonzero(x) == 3 == int(torch.count_nonzero(x))


def test_convolution_effective_pairs_on_the_cpu_equal_torch_arithmetic():
    g = torch.Generator().manual_seed(0)
    x = torch.relu(torch.randn(8, 3, 6, 6, generator=g))    # about half the inputs zero
    f = torch.randint(0, 30, (3, 6, 6), generator=g)          # weights each input meets
    expected = int(((x != 0).sum(dim=0).to(torch.int64) * f).sum())
    fa = _host_array(f)
    # numpy's path (host arrays given) and torch's (None: tensors off the CPU)
    assert LayerRecorder._effective_pairs(x, _host_array(x), False, f, fa) == expected
    assert LayerRecorder._effective_pairs(x, None, False, f, None) == expected
    one = x[0]                                                # an unbatched call
    assert (LayerRecorder._effective_pairs(one, _host_array(one), True, f, fa)
            == LayerRecorder._effective_pairs(one, None, True, f, None)
            == int(((one != 0) * f).sum()))
    assert expected > 0


def test_a_tensor_moved_to_another_storage_is_counted_on_the_new_one(toy_gpu_path):
    """The resident footprint keys on storages: a tensor seen before takes the short path only
    while it stays on the storage it was seen on."""
    dev = TorchDevice(toy_gpu_path)
    a = torch.zeros(10)                  # 40 B
    b = torch.zeros(1000)                # 4,000 B
    with dev.count("x"):
        a.add_(1.0)                      # writes a's storage
        a.set_(b)                        # a now views b's storage (a free op)
        a.add_(1.0)                      # writes b's storage through a
    # written and alive at the end: b's storage, 4,000 B (a's first storage died with the
    # move: nothing holds it); a short path that missed the move would record the second
    # write on the first, dead, storage and leave 0 B
    assert dev.ledger.footprints()["x"]["writable"] == 4000
    assert np.allclose(b.numpy(), 1.0)


def test_free_ops_are_answered_without_a_signature_and_cost_what_full_pricing_says():
    """Views and allocations cost nothing whatever their arguments (costs.is_free): the memo
    answers them before building a key, with op_cost's own answer; a priced op still goes
    through its signature (a miss, then a hit)."""
    aten = torch.ops.aten
    memo = CostMemo()
    w = torch.ones(3, 4)
    for func, args, out in [(aten.t.default, (w,), w.t()),
                            (aten.detach.default, (w,), w.detach()),
                            (aten.view.default, (w, [12]), w.view(12))]:
        assert is_free(func)
        assert memo.cost(func, args, {}, out) == op_cost(func, args, {}, out) == ({}, 0, 0, "")
    assert (memo.hits, memo.misses, len(memo.costs)) == (3, 0, 0)   # no key was stored
    x = torch.ones(2, 3)
    mm = (aten.mm.default, (x, w), {}, x @ w)
    assert not is_free(aten.mm.default)
    # 2 x 3 x 4 = 24 MACs; reads 6 + 12 floats (72 B), writes 8 floats (32 B)
    assert memo.cost(*mm) == op_cost(*mm) == ({"mac_fp32": 24}, 72, 32, "")
    assert memo.cost(*mm) == op_cost(*mm)
    assert (memo.hits, memo.misses, len(memo.costs)) == (4, 1, 1)
