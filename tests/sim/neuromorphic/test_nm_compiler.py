"""compile_network refuses what would run wrong: bad weight steps, delay buffers too large;
a network needing more cores than the chip has is refused naming the per-core limit that
binds."""
import re

import numpy as np
import pytest
from conftest import TOY_NEURO as TOY  # noqa: E402

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


# -- 'cores needed' names the per-core limit that set the neurons per core -----------------
# toy-neuro: 4 cores, 8 neurons, 64 B of synapse memory, 10 input axons and 6 core-to-core
# edges per core; 4-bit weights + 3 index bits = 1 B per synapse entry
_HEAD = "[NeuromorphicDevice.compile] population {!r}: cores needed (cumulative) = {} exceeds " \
        "toy-neuro limits.cores = 4; "
_FAN_OUT = ("because limits.fan_out_per_core = 6 binds: it counts core-to-core edges, one per "
            "neuron and destination core, and core 0 with {} neurons had {} edges, so the "
            "population was placed again at {} neurons per core (limits.neurons_per_core = 8)")


def _lif(net, name, n):
    net.population(name, n, "lif", tau_mem=0.01, v_threshold=1.0)


def _too_many_neurons():
    # 33 neurons at 8 per core: 5 cores
    net = Network(dt=1e-3)
    _lif(net, "big", 33)
    return net


def _too_many_synapses():
    # 9 synapses of 1 B per neuron: 7 x 9 = 63 B <= 64 B per core, so 29 neurons take 5 cores
    net = Network(dt=1e-3)
    net.spikes("s", 9, steps=[], index=[])
    _lif(net, "dst", 29)
    net.connect("s", "dst", weight=np.ones((29, 9)))
    return net


def _too_many_axons():
    # neuron i hears sources 2i and 2i + 1: 5 neurons bring 10 distinct axons, 21 take 5 cores
    net = Network(dt=1e-3)
    net.spikes("s", 42, steps=[], index=[])
    _lif(net, "dst", 21)
    net.connect("s", "dst", pre_idx=np.arange(42), post_idx=np.repeat(np.arange(21), 2),
                weight=1.0)
    return net


def _too_many_edges():
    # neurons 0-4 each reach neurons 5 (core 0) and 13 (core 1): core 0's 8 neurons make
    # 5 x 2 = 10 edges > 6, so it is placed again at int(8 x 6 / 10) = 4 per core: 17
    # neurons take 5 cores (at 8 per core they took 3)
    net = Network(dt=1e-3)
    _lif(net, "p", 17)
    net.connect("p", "p", pre_idx=np.repeat(np.arange(5), 2), post_idx=np.tile([5, 13], 5),
                weight=1.0)
    return net


def _edges_of_an_earlier_population():
    # every src neuron reaches both dst cores (neurons 0 and 8): 8 src neurons make 16 edges
    # > 6, so src is placed again at int(8 x 6 / 16) = 3 per core, 3 cores; dst's 16 neurons
    # then take cores 4 and 5: the refusal names dst and the fan-out that grew src
    net = Network(dt=1e-3)
    _lif(net, "src", 8)
    _lif(net, "dst", 16)
    net.connect("src", "dst", pre_idx=np.repeat(np.arange(8), 2),
                post_idx=np.tile([0, 8], 8), weight=1.0)
    return net


def _five_one_core_populations():
    # each population takes a core of its own: the fifth is one too many, none is split
    net = Network(dt=1e-3)
    for k in range(5):
        _lif(net, f"p{k}", 3)
    return net


@pytest.mark.parametrize("build, message", [
    (_too_many_neurons, _HEAD.format("big", 5) +
     "population 'big' holds 33 neurons on 5 cores (at most 8 per core) because "
     "limits.neurons_per_core = 8 binds. To fit one chip: fewer neurons in 'big'"),
    (_too_many_synapses, _HEAD.format("dst", 5) +
     "population 'dst' holds 29 neurons on 5 cores (at most 7 per core) because "
     "limits.synapse_bytes_per_core = 64 B binds: 1 B per synapse entry x 9 synapses per "
     "neuron on average = 9 B per neuron. To fit one chip: fewer neurons in 'dst', or fewer "
     "synapses per neuron"),
    (_too_many_axons, _HEAD.format("dst", 5) +
     "population 'dst' holds 21 neurons on 5 cores (at most 5 per core) because "
     "limits.fan_in_per_core = 10 binds: distinct presynaptic axons per core, 2 inputs per "
     "neuron on average. To fit one chip: fewer neurons in 'dst', or fewer (more shared) "
     "inputs per neuron"),
    (_too_many_edges, _HEAD.format("p", 5) +
     "population 'p' holds 17 neurons on 5 cores (at most 4 per core) " +
     _FAN_OUT.format(8, 10, 4) +
     ". To fit one chip: fewer neurons in 'p', or each one's targets on fewer cores"),
    (_edges_of_an_earlier_population, _HEAD.format("dst", 5) +
     "population 'dst' holds 16 neurons on 2 cores (at most 8 per core) because "
     "limits.neurons_per_core = 8 binds; population 'src' holds 8 neurons on 3 cores (at most "
     "3 per core) " + _FAN_OUT.format(8, 16, 3) +
     ". To fit one chip: fewer neurons in 'dst'; or fewer neurons in 'src', or each one's "
     "targets on fewer cores"),
    (_five_one_core_populations, _HEAD.format("p4", 5) +
     "population 'p4' holds 3 neurons on 1 core. To fit one chip: fewer populations (each "
     "takes cores of its own)"),
])
def test_too_many_cores_names_the_limit_that_binds(build, message):
    # it said only "the network is too large for one chip; shrink it", also where fan-out,
    # not the neurons, had multiplied the cores (VA CUBA on spinnaker2: 16 neurons per PE)
    with pytest.raises(HardwareLimitError, match=_exact(message)):
        NeuromorphicDevice(TOY).compile(build())
