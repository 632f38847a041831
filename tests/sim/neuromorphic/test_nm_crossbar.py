"""Crossbar synapse memory (``limits.synapse_crossbar``, TrueNorth) against per-synapse entries
(every other chip): placement, per-core synapse bytes and the refusals that follow.

Bug fix: TrueNorth's 8,192 B per core (a 256-axon x 256-neuron binary crossbar, Merolla et al.
2014) was charged 3 B per synapse, so a dense 256 -> 256 layer took 26 cores of 10 neurons
and a dense 256 -> 40,960 layer (160 cores on the chip) took all 4,096 cores, or was refused
for 4,097 when its inputs were neurons."""
import numpy as np
import pytest

from sim.errors import HardwareLimitError
from sim.neuromorphic import Network, NeuromorphicDevice


def _dense(n_pre: int, n_post: int) -> Network:
    net = Network(dt=1e-3)
    net.population("pre", n_pre, "lif", tau_mem=0.01, v_threshold=1.0)
    net.population("post", n_post, "lif", tau_mem=0.01, v_threshold=1.0)
    net.connect("pre", "post", weight=np.full((n_post, n_pre), 0.5))
    return net


def _post(c) -> list[tuple[int, int, int]]:
    """(neurons, synapse bytes, fan-in) of each core of population ``post``."""
    return [(x["neurons"], x["synapse_bytes"], x["fan_in"]) for x in c.cores
            if x["population"] == "post"]


def test_truenorth_dense_256_to_256_is_one_core():
    c = NeuromorphicDevice("truenorth").compile(_dense(256, 256))
    # 256 axons x 256 neurons = 65,536 bits = 8,192 B: the whole crossbar of one core
    assert _post(c) == [(256, 8192, 256)]
    assert c.n_cores == 2                   # + 1 core for the 256 "pre" neurons (no inputs)
    assert c.synapse_memory_bytes == 8192
    assert c.cores[1]["synapse_bytes_util"] == 1.0


def test_truenorth_crossbar_bytes_are_axons_in_use_times_neurons():
    # 64 -> 256, neuron j listens to axon j % 64 only: 256 synapses, but the core's crossbar
    # spans the 64 axons in use x 256 neurons = 16,384 bits = 2,048 B
    net = Network(dt=1e-3)
    net.population("pre", 64, "lif", tau_mem=0.01, v_threshold=1.0)
    net.population("post", 256, "lif", tau_mem=0.01, v_threshold=1.0)
    j = np.arange(256)
    net.connect("pre", "post", np.full(256, 0.5), pre_idx=j % 64, post_idx=j)
    c = NeuromorphicDevice("truenorth").compile(net)
    assert _post(c) == [(256, 64 * 256 // 8, 64)]
    assert c.cores[1]["synapses"] == 256


def test_truenorth_dense_layer_fills_whole_crossbars():
    # 256 -> 2,560 = 10 x 256 neurons: 10 full cores (it was 2,560 / 10 = 256 cores: 2,730
    # synapses of 3 B in 8,192 B, so 10 neurons of 256 synapses a core)
    c = NeuromorphicDevice("truenorth").compile(_dense(256, 2560))
    assert _post(c) == [(256, 8192, 256)] * 10


@pytest.mark.slow   # 10.5 M synapses: ~20 s on 2 shared cores
def test_truenorth_fits_a_layer_of_160_full_cores():
    # 40,960 = 160 x 256 neurons, each fed by the same 256 input axons (a source, at the host
    # link): 160 full crossbars (it was 40,960 / 10 = 4,096 cores, the whole chip). Fed by 256
    # neurons instead, each neuron would reach 160 cores: the per-core fan-out limit (256
    # core-to-core edges) then splits "pre" to one neuron a core (+256 cores), as before
    net = Network(dt=1e-3)
    net.poisson("pre", 256, rate_hz=10.0)
    net.population("post", 256 * 160, "lif", tau_mem=0.01, v_threshold=1.0)
    net.connect("pre", "post", weight=np.full((256 * 160, 256), 0.5))
    c = NeuromorphicDevice("truenorth").compile(net)
    assert _post(c) == [(256, 8192, 256)] * 160
    assert c.n_cores == 160


def test_truenorth_fan_in_still_binds():
    # 257 distinct axons into one neuron: more than a core's 256 axons, whatever the memory
    with pytest.raises(HardwareLimitError, match=r"population 'post' neuron 0: fan-in = 257 "
                       r"axons exceeds truenorth limits\.fan_in_per_core = 256"):
        NeuromorphicDevice("truenorth").compile(_dense(257, 4))


@pytest.mark.parametrize("profile", ["loihi", "loihi2"])
def test_per_synapse_chips_place_as_before(profile):
    # no crossbar: one entry per synapse of ceil((weight bits + 9 index bits (512 neurons)) / 8)
    # = 3 B (loihi 9 + 9 = 18 bits, loihi2 8 + 9 = 17); 256 synapses x 3 B = 768 B a neuron,
    # 131,072 B // 768 B = 170 neurons a core: 256 -> 170 + 86, at 170 x 768 = 130,560 B and
    # 86 x 768 = 66,048 B
    c = NeuromorphicDevice(profile).compile(_dense(256, 256))
    assert c.entry_bytes == 3
    assert _post(c) == [(170, 130560, 256), (86, 66048, 256)]
    assert c.n_cores == 3                   # + 1 core for "pre" (256 <= 1,024 or 8,192)
    assert c.synapse_memory_bytes == 256 * 256 * 3


def test_spinnaker2_counts_fan_out_as_multicast_keys():
    # 255 neurons a PE; "pre" takes 255 + 1: each neuron reaches both "post" PEs, but as one
    # multicast key the routers copy (limits.fan_out_multicast), so a PE's fan-out is its 255
    # sending neurons, not 510 core-to-core edges (which split it to 127 + 127 + 2); "post" as
    # loihi (16 + 8 index bits = 3 B, 170 a PE)
    c = NeuromorphicDevice("spinnaker2").compile(_dense(256, 256))
    assert [x["neurons"] for x in c.cores if x["population"] == "pre"] == [255, 1]
    assert [x["fan_out"] for x in c.cores if x["population"] == "pre"] == [255, 1]
    assert _post(c) == [(170, 130560, 256), (86, 66048, 256)]
