"""NeuromorphicDevice's public handles for a model that drives the chip between runs:
spikes in flight, the state of custom-kernel populations, synapse writes, count blocks."""
import numpy as np
import pytest
from numba import njit

import sim
from sim.errors import ModelError
from sim.neuromorphic import Network, NeuromorphicDevice, NeuronKernel


@njit(cache=True)
def _accumulate(inp, state, params, payload):
    # state[0] sums its input; state[1] counts steps; never spikes
    for i in range(state.shape[1]):
        state[0, i] += inp[i, 0]
        state[1, i] += 1.0


def _delayed_net():
    # one source spike at step 0, weight 20, delay 5: the IF neuron gets v = 20 x 1 ms = 0.02
    # in step 5 (dt = 1 ms, r = 1), above its threshold 0.01, and spikes there
    net = Network(dt=1e-3)
    net.population("o", 1, "if", v_threshold=0.01)
    net.spikes("s", 1, steps=[0], index=[0])
    net.connect("s", "o", weight=[[20.0]], delay=5)
    net.probe("o")
    return net


def test_clear_in_flight_drops_spikes_not_yet_arrived():
    kept, cleared = NeuromorphicDevice("loihi2"), NeuromorphicDevice("loihi2")
    for dev in (kept, cleared):
        dev.compile(_delayed_net())
        dev.run(2)                               # the spike left in step 0, arrives in 5
    cleared.clear_in_flight()
    assert kept.run(8).spikes["o"][0].tolist() == [5]
    res = cleared.run(8)
    assert res.spikes["o"][0].tolist() == []
    # nothing arrived: the one neuron was idle in all 8 steps
    assert res.counts == {"neuron_update_idle": 8}


def _custom_net(n=3):
    net = Network(dt=1e-3)
    k = NeuronKernel("acc", _accumulate, state_names=("x", "clk"), param_names=())
    net.population("a", n, k, x_init=np.arange(4.0, 4.0 + n))
    net.population("b", 1, "lif", tau_mem=0.01, v_threshold=1.0)
    return net


def test_custom_state_reads_and_writes_by_name():
    dev = sim.device("loihi2")
    dev.compile(_custom_net(), quantize=False)
    assert dev.custom_state("a")["x"].tolist() == [4.0, 5.0, 6.0]   # x_init, as compiled
    dev.set_custom_state("a", {"x": [1.0, 2.0, 3.0], "clk": 7.0})
    dev.run(2)
    st = dev.custom_state("a")
    assert list(st) == ["x", "clk"]
    assert st["x"].tolist() == [1.0, 2.0, 3.0]           # no input: x unchanged
    assert st["clk"].tolist() == [9.0, 9.0, 9.0]         # 7 + 2 steps
    st["x"][:] = 99.0                                    # a copy: the chip is not touched
    assert dev.custom_state("a")["x"].tolist() == [1.0, 2.0, 3.0]
    # reset: every variable 0 first, then the given ones
    dev.set_custom_state("a", {"x": 0.5}, reset=True)
    assert {k: v.tolist() for k, v in dev.custom_state("a").items()} == \
        {"x": [0.5, 0.5, 0.5], "clk": [0.0, 0.0, 0.0]}


def test_custom_state_refuses_bad_names_and_shapes():
    dev = sim.device("loihi2")
    with pytest.raises(ModelError, match="compile"):
        dev.custom_state("a")
    dev.compile(_custom_net(), quantize=False)
    with pytest.raises(ModelError, match=r"'b' is not a custom-kernel population; custom "
                                         r"populations: \['a'\]"):
        dev.custom_state("b")
    with pytest.raises(ModelError, match=r"'a' has no state y; its state is x, clk"):
        dev.set_custom_state("a", {"y": 1.0})
    with pytest.raises(ModelError, match=r"a\.x has shape \(2,\); expected a finite scalar "
                                         r"or \(3,\)"):
        dev.set_custom_state("a", {"x": [1.0, 2.0]})
    with pytest.raises(ModelError, match=r"a\.x has shape \(3,\)"):
        dev.set_custom_state("a", {"x": [1.0, np.nan, 2.0]})


def test_count_synapse_writes_is_one_read_modify_write_each(toy_neuro_path):
    dev = sim.device(toy_neuro_path)
    net = Network(dt=1e-3)
    net.population("src", 2, "lif", tau_mem=0.01, v_threshold=1.0)
    net.population("dst", 2, "lif", tau_mem=0.01, v_threshold=1.0)
    net.connect("src", "dst", weight=[[1.0, 0.5], [0.25, -1.0]])
    c = dev.compile(net)
    dev.count_synapse_writes(10, scope="learn")
    assert dev.ledger.total_ops() == {"syn_update": 10}
    eb = c.entry_bytes                                   # 1 byte on the toy chip
    assert eb == 1
    assert dev.ledger.total_bytes() == {("local", "read"): 10, ("local", "write"): 10}
    assert dev.ledger.timing("learn") is None           # no placed synapse: no phase time
    with pytest.raises(ModelError, match=r"n = -1; expected an integer >= 0"):
        dev.count_synapse_writes(-1)


def test_count_blocks_nest_on_the_neuromorphic_engine():
    # NeuromorphicDevice inherits Device.count: counts inside go under the block's scope,
    # an inner block's under outer/inner, samples to the block's own full scope
    dev = sim.device("loihi2")
    dev.compile(_delayed_net())
    with dev.count("train", samples=3):
        dev.run(2, scope=None)                     # the block's own scope
        with dev.count("inner", samples=1):
            dev.run(8)                             # default scope "run": train/inner/run
    # step 0: the source spike is sent and walks its one synapse (spike, synop); steps 0-1
    # the neuron idles. Steps 2-9: it receives in step 5 (active) and spikes (no targets)
    assert dev.ledger.ops("train") == {"synop": 1, "neuron_update_idle": 2, "spike": 1}
    assert dev.ledger.ops("train/inner/run") == {"neuron_update_active": 1,
                                                 "neuron_update_idle": 7, "spike": 1}
    assert dev.ledger.samples() == {"train": 3, "train/inner": 1}
    assert dev.ledger.timing("train").steps == 2
    assert dev.ledger.timing("train/inner/run").steps == 8
