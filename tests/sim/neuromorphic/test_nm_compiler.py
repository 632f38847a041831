"""compile_network refuses what would run wrong: bad weight steps, delay buffers too large."""
import re

import numpy as np
import pytest

from hw_profiles import load
from sim.errors import HardwareLimitError, ModelError
from sim.neuromorphic import Network, NeuromorphicDevice
from sim.neuromorphic.compiler import MAX_DELAY_BUFFER_BYTES, compile_network


def _exact(msg: str) -> str:
    return "^" + re.escape(msg) + "$"


def _one_synapse(delay=1, n_post=1):
    net = Network(dt=1e-3)
    net.population("p", n_post, "lif", tau_mem=0.01, v_threshold=1.0)
    net.spikes("s", 1, steps=[0], index=[0])
    net.connect("s", "p", weight=np.full((n_post, 1), 20.0), delay=delay)
    return net


@pytest.mark.parametrize("lsb", [0, 0.0, -0.5, float("nan"), float("inf"), True, "0.1"])
def test_weight_lsb_must_be_a_finite_positive_step(lsb):
    # smallest failing inputs: weight_lsb=0 gave every weight 0, weight_lsb=nan gave nan
    with pytest.raises(ModelError, match=_exact(
            f"[NeuromorphicDevice.compile] weight_lsb = {lsb!r}: expected a finite weight "
            "step > 0 (or None: one step per projection)")):
        NeuromorphicDevice("loihi").compile(_one_synapse(), weight_lsb=lsb)


def test_weight_lsb_positive_is_used():
    # 20 / 0.3 = 66.67 rounds to 67 steps (within 9-bit signed 255): 67 x 0.3 = 20.1
    c = NeuromorphicDevice("loihi").compile(_one_synapse(), weight_lsb=0.3)
    np.testing.assert_allclose(c.weights_of("s->p"), [67 * 0.3])


def test_delay_buffer_too_large_is_a_limit_error():
    # the case: delay 1,000,000 steps into 10,000 neurons needed
    # (1,000,000 + 1) slots x 1 channel x 10,000 neurons x 8 B = 80,000,080,000 B = 74.5 GiB
    # and ended in a raw MemoryError
    net = _one_synapse(delay=1_000_000, n_post=10_000)
    with pytest.raises(HardwareLimitError, match=_exact(
            "[NeuromorphicDevice.compile] delay buffer = 1000001 slots (max delay 1000000 "
            "steps + 1) x 1 channel(s) x 10000 neurons x 8 B = 80000080000 B (74.5 GiB) "
            "exceeds the simulator's MAX_DELAY_BUFFER_BYTES = 4294967296 B (4 GiB); shorten "
            "the longest delay or use fewer neurons")):
        NeuromorphicDevice("loihi").compile(net)


def test_delay_buffer_limit_is_inclusive():
    # 1 neuron, 1 channel: delay 2**29 - 1 -> 2**29 slots x 8 B = 2**32 B = the limit: fits;
    # one step more is 2**32 + 8 B: refused. compile_network allocates no buffer itself.
    assert MAX_DELAY_BUFFER_BYTES == 2**32
    prof = load("loihi")
    c = compile_network(_one_synapse(delay=2**29 - 1), prof)
    assert c.D == 2**29
    with pytest.raises(HardwareLimitError, match=r"= 4294967304 B \(4\.0 GiB\) exceeds"):
        compile_network(_one_synapse(delay=2**29), prof)
