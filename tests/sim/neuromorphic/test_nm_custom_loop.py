"""custom_loop.run_custom: the compiled step loop equals the per-step Python path exactly."""

import numpy as np
import pytest
from numba import njit

from sim.errors import HardwareLimitError, ModelError
from sim.neuromorphic import Network, NeuromorphicDevice, NeuronKernel


@njit(cache=True)
def _leaky2(inp, state, params, payload):
    # two channels (excitatory minus half the second), graded +2 / -1 spikes, a step counter
    for i in range(state.shape[1]):
        x = params[0, i] * state[0, i] + inp[i, 0] - 0.5 * inp[i, 1]
        if x > 1.0:
            payload[i] = 2
            x -= 1.0
        elif x < -1.0:
            payload[i] = -1
            x += 1.0
        state[0, i] = x
        state[1, i] += 1.0


@njit(cache=True)
def _ternary(inp, state, params, payload):
    for i in range(state.shape[1]):
        e = state[0, i] + inp[i, 0]
        if e > params[0, i]:
            payload[i] = 1
            e -= params[0, i]
        elif e < -params[0, i]:
            payload[i] = -1
            e += params[0, i]
        state[0, i] = e


LEAKY2 = NeuronKernel("leaky2", _leaky2, state_names=("x", "steps"), param_names=("a",),
                      n_channels=2)
TERNARY = NeuronKernel("ternary", _ternary, state_names=("e",), param_names=("theta",))


def _network(ternary=TERNARY):
    """Two kernels, built-in LIF and CUBA, event and Poisson sources, delays 1-3, injected
    currents switching on at steps 30 and 60, a population only partly targeted."""
    rng = np.random.default_rng(4)
    net = Network(dt=1e-3)
    inj = np.where(np.arange(20) % 3 == 0, 0.3, 0.0)
    net.population("a", 20, LEAKY2, a=rng.uniform(0.5, 0.9, 20), x_init=0.2, i_inj=inj,
                   i_inj_start=30)
    net.population("o", 8, "lif", tau_mem=0.01, v_threshold=1.0)
    # injected current on t from step 60, also on neurons no synapse reaches (t[:5], t[25:])
    net.population("t", 30, ternary, theta=0.7, i_inj=np.where(np.arange(30) % 4 == 0, 0.05,
                                                                  0.0), i_inj_start=60)
    net.population("c", 6, "cuba_lif", n_channels=2, tau_mem=0.02, tau_syn=[0.005, 0.01],
                   v_threshold=0.5)
    st, ix = np.nonzero(rng.random((300, 10)) < 0.15)
    net.spikes("s", 10, steps=st, index=ix, payload=rng.choice([1, 2, -1], st.size))
    net.poisson("pz", 5, rate_hz=150.0, seed=3)
    net.connect("s", "a", weight=rng.uniform(-0.5, 1.5, (20, 10)))
    net.connect("pz", "a", weight=rng.uniform(0, 1, (20, 5)), channel=1)
    # only t[5:25] is targeted: its gather interval is a strict part of the population
    pre = rng.integers(0, 20, 60)
    net.connect("a", "t", rng.uniform(-1, 1, 60), pre_idx=pre,
                post_idx=rng.integers(5, 25, 60), delay=rng.integers(1, 4, 60))
    net.connect("t", "o", weight=rng.uniform(0, 2, (8, 30)), delay=2)
    net.connect("a", "c", weight=rng.uniform(0, 1, (6, 20)), channel=1)
    net.connect("t", "c", weight=rng.uniform(-1, 1, (6, 30)), delay=3)
    net.connect("o", "a", weight=rng.uniform(-1, 1, (20, 8)), channel=0)
    for target, what in (("a", "x"), ("t", "e"), ("o", "v"), ("a", "steps"), ("c", "v")):
        net.probe(target, what)
    return net


def _run_both(net, runs, profile="loihi2"):
    out = []
    for loop in ("compiled", "python"):
        dev = NeuromorphicDevice(profile)
        dev.compile(net, quantize=False)
        out.append((dev, [dev.run(n, scope=f"r{k}", loop=loop) for k, n in enumerate(runs)]))
    return out


def _assert_same(a, b):
    assert a.counts == b.counts and a.bytes_read == b.bytes_read
    assert a.spikes.keys() == b.spikes.keys() and a.states.keys() == b.states.keys()
    for k in a.spikes:
        for x, y in zip(a.spikes[k], b.spikes[k], strict=True):
            np.testing.assert_array_equal(x, y)
    for k in a.states:
        np.testing.assert_array_equal(a.states[k], b.states[k])


def test_compiled_loop_equals_python_path():
    # 3 runs: resume at step 40 (injection into a from 30, into t from 60), 260 more steps
    # (the 1024-entry spike record grows inside a run), an empty run
    (dc, rc), (dp, rp) = _run_both(_network(), [40, 260, 0])
    assert dc._cu is not None                      # the compiled loop did run
    for a, b in zip(rc, rp, strict=True):
        _assert_same(a, b)
    assert sum(s[0].size for s in rc[1].spikes.values()) > 1024
    assert {k: v[0].size > 0 for k, v in rc[1].spikes.items()} == \
        {"a": True, "o": True, "t": True, "c": True, "s": True, "pz": True}
    # every ledger record: ops, bytes, per-core step timing, NeuroBench activity
    assert dc.ledger.to_dict() == dp.ledger.to_dict()
    for pop in ("a", "t"):
        for k, v in dc.custom_state(pop).items():
            np.testing.assert_array_equal(v, dp.custom_state(pop)[k])
    np.testing.assert_array_equal(dc._inbuf, dp._inbuf)     # spikes still in flight
    # and the delay-1 arrivals already in the pending currents, with their input bits
    np.testing.assert_array_equal(dc._Ip, dp._Ip)
    np.testing.assert_array_equal(dc._mark, dp._mark)
    np.testing.assert_array_equal(dc.I, dp.I)


def test_unjitted_update_runs_the_python_path_with_the_same_results():
    # a plain Python update cannot be called from numba: the engine falls back
    plain = NeuronKernel("ternary", _ternary.py_func, state_names=("e",),
                         param_names=("theta",))
    dev = NeuromorphicDevice("loihi2")
    dev.compile(_network(plain), quantize=False)
    assert dev._cu is None
    ref = _run_both(_network(), [120])[0][1][0]
    _assert_same(dev.run(120, scope="r0"), ref)


def test_payload_out_of_range_same_error_in_both_loops():
    # Loihi 1 carries binary spikes only: leaky2's first graded spike (+2 or -1) is refused
    msgs = []
    for loop in ("compiled", "python"):
        dev = NeuromorphicDevice("loihi")
        dev.compile(_network(), quantize=False)
        with pytest.raises(HardwareLimitError, match=r"population 'a' neuron \d+ emitted "
                           r"payload (2|-1); loihi carries payloads in 1\.\.1") as e:
            dev.run(100, loop=loop)
        msgs.append(str(e.value))
        assert dev.ledger.total_ops() == {}          # nothing flushed from the failed run
        assert dev.t == 0
    assert msgs[0] == msgs[1]


def test_unknown_loop_is_refused():
    dev = NeuromorphicDevice("loihi2")
    dev.compile(_network(), quantize=False)
    with pytest.raises(ModelError, match=r"loop = 'numba'; expected one of"):
        dev.run(3, loop="numba")
