"""NeuromorphicDevice: closed-form responses, a naive twin, exact counts, custom kernels."""

import numpy as np
import pytest
from conftest import TOY_NEURO as TOY  # noqa: E402
from numba import njit

from sim import device
from sim.errors import HardwareLimitError, ModelError
from sim.neuromorphic import Network, NeuromorphicDevice, NeuronKernel


def test_device_factory_gives_the_engine():
    assert isinstance(device("loihi2"), NeuromorphicDevice)


def test_lif_impulse_response_closed_form():
    # one spike of weight w at step 0, delay 1 -> arrives at step 1: v[1] = (dt/tau) r w,
    # then v[t] = (1 - dt/tau)^(t-1) v[1] (forward Euler, v_leak = 0, below threshold)
    dt, tau, r, w = 1e-3, 0.01, 2.0, 3.0
    net = Network(dt=dt)
    net.population("p", 1, "lif", tau_mem=tau, r=r, v_threshold=100.0)
    net.spikes("s", 1, steps=[0], index=[0])
    net.connect("s", "p", weight=[[w]])
    net.probe("p", "v")
    dev = NeuromorphicDevice("loihi2")
    dev.compile(net, quantize=False)
    v = dev.run(20).states["p.v"][:, 0]
    t = np.arange(20)
    want = np.where(t >= 1, (1 - dt / tau) ** np.maximum(t - 1, 0) * dt / tau * r * w, 0.0)
    np.testing.assert_allclose(v, want, rtol=1e-12)


def test_cuba_exact_impulse_response_closed_form():
    # exact scheme: I jumps by (dt/tau_s) w_in w at step 1 and decays by exp(-dt/tau_s);
    # v(t) = r J tau_s/(tau_s - tau_m) (exp(-t/tau_s) - exp(-t/tau_m)) after the jump
    dt, ts, tm, w = 1e-4, 5e-3, 20e-3, 2.0
    net = Network(dt=dt)
    net.population("p", 1, "cuba_lif", tau_syn=ts, tau_mem=tm, v_threshold=100.0,
                   method="exact")
    net.spikes("s", 1, steps=[0], index=[0])
    net.connect("s", "p", weight=[[w]])
    net.probe("p", "v")
    net.probe("p", "i0")
    dev = NeuromorphicDevice("loihi2")
    dev.compile(net, quantize=False)
    res = dev.run(400)
    J = dt / ts * w
    k = np.arange(400) - 1.0           # steps since the jump (at step 1)
    i_want = np.where(k >= 0, J * np.exp(-np.maximum(k, 0) * dt / ts), 0.0)
    s = (k + 1) * dt                   # v at step t has integrated t - 1 + 1 steps of J
    v_want = np.where(k >= 0, J * ts / (ts - tm) * (np.exp(-s / ts) - np.exp(-s / tm)), 0.0)
    np.testing.assert_allclose(res.states["p.i0"][:, 0], i_want, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(res.states["p.v"][:, 0], v_want, rtol=1e-9, atol=1e-15)


def _naive(net, n_steps):
    """Plain numpy loop of network.py's equations (euler), one population, dense weights."""
    (pop,) = net.populations.values()
    P, n, dt = pop.params, pop.n, net.dt
    C = pop.n_channels
    v = P.get("v_init", P["v_reset"]).copy()
    I = np.zeros((n, C))  # noqa: E741 (I: synaptic current, as the engine)
    ref = np.zeros(n, int)
    pend = np.zeros((n_steps + 10, n, C))
    src = net.sources["s"]
    spikes = []
    for t in range(n_steps):
        fired_src = src.index[src.steps == t]
        for proj in net.projections.values():
            pre_spk = fired_src if proj.pre == "s" else None
            if pre_spk is None:
                continue
            for k in range(proj.weight.size):
                if proj.pre_idx[k] in pre_spk:
                    pend[t + proj.delay[k], proj.post_idx[k], proj.channel] += proj.weight[k]
        x = pend[t]
        if pop.model == "lif":
            drive = dt / P["tau_mem"] * P["r"] * x[:, 0]
        else:
            for c in range(C):
                I[:, c] = (1 - dt / P[f"tau_syn{c}"]) * I[:, c] + dt / P[f"tau_syn{c}"] \
                    * P["w_in"] * x[:, c]
            drive = dt / P["tau_mem"] * P["r"] * I.sum(axis=1)
        new_v = (1 - dt / P["tau_mem"]) * v + dt / P["tau_mem"] * P["v_leak"] + drive
        ref = np.maximum(ref - 1, 0)
        new_v = np.where(ref > 0, v, new_v)
        fired = (ref == 0) & (new_v > P["v_threshold"])
        new_v[fired] = P["v_reset"][fired]
        ref[fired] = np.round(P["refractory"][fired] / dt).astype(int)
        v = new_v
        for i in np.flatnonzero(fired):
            spikes.append((t, i))
        for proj in net.projections.values():
            if proj.pre != "p":
                continue
            for k in range(proj.weight.size):
                if fired[proj.pre_idx[k]]:
                    pend[t + proj.delay[k], proj.post_idx[k], proj.channel] += proj.weight[k]
    return sorted(spikes)


@pytest.mark.parametrize("model", ["lif", "cuba_lif"])
@pytest.mark.parametrize("uniform", [True, False])
def test_matches_naive_twin(model, uniform):
    rng = np.random.default_rng(5)
    n, T, dt = 12, 300, 1e-3
    net = Network(dt=dt)
    tau = 0.01 if uniform else rng.uniform(0.005, 0.02, n)
    extra = dict(n_channels=2, tau_syn=(0.004, 0.008)) if model == "cuba_lif" else {}
    net.population("p", n, model, tau_mem=tau, v_threshold=1.0, v_reset=-0.1, v_leak=0.02,
                   refractory=3e-3, **extra)
    mask = rng.random((T, 5)) < 0.08
    st, ix = np.nonzero(mask)
    net.spikes("s", 5, steps=st, index=ix)
    gain = 6.0 if model == "lif" else 2.0
    net.connect("s", "p", weight=gain * rng.uniform(0.5, 1.5, (n, 5)), delay=2)
    pre, post = np.nonzero(rng.random((n, n)) < 0.3)
    net.connect("p", "p", pre_idx=pre, post_idx=post, weight=gain * rng.uniform(-1, 0.5, pre.size),
                delay=rng.integers(1, 4, pre.size), channel=1 if model == "cuba_lif" else 0)
    net.probe("p")
    dev = NeuromorphicDevice("loihi2")
    dev.compile(net, quantize=False)
    res = dev.run(T).spikes["p"]
    ours = sorted(zip(res[0].tolist(), res[1].tolist(), strict=True))
    assert len(ours) > 30
    assert ours == _naive(net, T)


def test_counts_are_exact_on_toy_chip():
    # toy chip: 8 neurons/core, 1 core per router on a 2x2 mesh (cores 0,1 on row 0)
    net = Network(dt=1e-3)
    net.population("a", 1, "lif", tau_mem=0.01, v_threshold=0.5)       # core 0
    net.population("b", 10, "lif", tau_mem=0.01, v_threshold=1e9)      # cores 1 (8), 2 (2)
    net.spikes("s", 1, steps=[0, 1], index=[0, 0])
    net.connect("s", "a", weight=[[7.0]])                               # 7 x 0.1 > 0.5: spikes
    net.connect("a", "b", pre_idx=[0, 0, 0], post_idx=[0, 1, 9], weight=1.0)
    dev = NeuromorphicDevice(TOY)
    c = dev.compile(net)
    assert c.core_of.tolist() == [0] + [1] * 8 + [2] * 2
    res = dev.run(4)
    # a spikes at steps 1 and 2 (input arrives at 1 and 2, reset to 0 in between)
    assert res.spikes["a"][0].tolist() == [1, 2]
    ops = res.counts
    assert ops["spike"] == 2 + 2                  # 2 input + 2 neuron spikes
    assert ops["synop"] == 2 * 1 + 2 * 3          # 2 inputs x fan-out 1 + 2 spikes x 3
    # hops: input enters at router (0,0) -> core 0 on the same router: 0 hops;
    # a (core 0 at (0,0)) -> cores 1 (1,0) and 2 (0,1): X span 1 + column-0 Y span 1 = 2
    assert c.hops.tolist()[:1] == [2] and ops["hop"] == 2 * 2
    # neuron updates: 11 neurons x 4 steps; active = a at 1, 2 + b at 2, 3 (3 inputs each)
    assert ops["neuron_update_active"] == 2 + 2 * 3
    assert ops["neuron_update_idle"] == 11 * 4 - 8
    # synapse memory: 4-bit weight + 3-bit index (8 neurons/core) = 7 bits -> 1 B/entry
    assert c.entry_bytes == 1 and res.bytes_read == 8
    assert {(s, d, h) for s, d, h, _ in c.routes} == {(0, 1, 1), (0, 2, 1)}
    assert dev.ledger.total_bytes() == {("local", "read"): 8}


def _toy_net(n_pre, n_post, fan=1.0):
    net = Network(dt=1e-3)
    net.population("src", n_pre, "lif", tau_mem=0.01, v_threshold=1.0)
    net.population("dst", n_post, "lif", tau_mem=0.01, v_threshold=1.0)
    return net


def test_too_many_neurons_names_population_and_limit():
    net = Network(dt=1e-3)
    net.population("big", 33, "lif", tau_mem=0.01, v_threshold=1.0)
    with pytest.raises(HardwareLimitError, match=r"population 'big'.*cores needed.*"
                                                 r"toy-neuro limits.cores = 4"):
        NeuromorphicDevice(TOY).compile(net)


def test_fan_in_limit():
    net = _toy_net(12, 1)
    net.connect("src", "dst", weight=np.ones((1, 12)))
    with pytest.raises(HardwareLimitError, match=r"population 'dst' neuron 0: fan-in = 12 "
                                                 r"axons exceeds toy-neuro limits.fan_in_per_core"):
        NeuromorphicDevice(TOY).compile(net)


def test_synapse_memory_splits_cores_then_fails():
    # each dst neuron has 9 synapses of 1 B: 64 B per core -> 7 neurons per core
    net = Network(dt=1e-3)
    net.spikes("s", 9, steps=[], index=[])
    net.population("dst", 8, "lif", tau_mem=0.01, v_threshold=1.0)
    net.connect("s", "dst", weight=np.ones((8, 9)))
    c = NeuromorphicDevice(TOY).compile(net)
    assert c.core_of.tolist() == [0] * 7 + [1]
    assert [core["synapse_bytes"] for core in c.cores] == [63, 9]


def test_fan_out_splits_then_fails():
    # every src neuron reaches both cores of dst (8 + 1 neurons): 4 src neurons on one
    # core make 8 core-to-core edges > 6, so the compiler re-places src at 3 per core
    net = Network(dt=1e-3)
    net.population("src", 4, "lif", tau_mem=0.01, v_threshold=1.0)
    net.population("dst", 9, "lif", tau_mem=0.01, v_threshold=1.0)
    net.connect("src", "dst", pre_idx=np.repeat(np.arange(4), 2),
                post_idx=np.tile([0, 8], 4), weight=1.0)
    c = NeuromorphicDevice(TOY).compile(net)
    assert c.core_of[:4].tolist() == [0, 0, 0, 1]
    assert [core["fan_out"] for core in c.cores[:2]] == [6, 2]
    # a third dst core cannot be added: 2 src + 3 dst cores > 4
    net.population("more", 8, "lif", tau_mem=0.01, v_threshold=1.0)
    net.connect("src", "more", pre_idx=np.arange(4), post_idx=np.arange(4), weight=1.0)
    with pytest.raises(HardwareLimitError, match=r"population 'more'.*limits.cores = 4"):
        NeuromorphicDevice(TOY).compile(net)


def test_quantisation_report_and_dead_layer():
    net = _toy_net(2, 2)
    net.connect("src", "dst", weight=[[1.0, 0.5], [0.26, -0.9]])
    dev = NeuromorphicDevice(TOY)              # 4-bit signed: steps of 1/7
    c = dev.compile(net)
    (q,) = c.quantisation
    assert q.bits == 4 and q.scale == pytest.approx(1 / 7)
    np.testing.assert_allclose(c.weights_of("src->dst") * 7, [1 * 7, 4, 2, -6])
    assert q.max_abs_error == pytest.approx(abs(0.5 - 4 / 7))
    with pytest.raises(HardwareLimitError, match=r"projection 'src->dst': all 4 weights "
                                                 r"round to 0 with 4-bit"):
        dev.compile(net, weight_lsb=10.0)


def test_resume_and_spike_buffer_growth():
    rng = np.random.default_rng(2)
    net = Network(dt=1e-3)
    net.population("p", 300, "lif", tau_mem=0.01, v_threshold=1.0, i_inj=rng.uniform(0, 30, 300))
    net.poisson("n", 50, rate_hz=100.0, seed=3)
    net.connect("n", "p", weight=rng.uniform(0, 5, (300, 50)), delay=3)
    runs = []
    for split in ((400,), (150, 250)):
        dev = NeuromorphicDevice("loihi2")
        dev.compile(net)
        parts = [dev.run(k) for k in split]
        st = np.concatenate([p.spikes["p"][0] for p in parts])
        runs.append((st, np.concatenate([p.spikes["p"][1] for p in parts]),
                     dev.ledger.total_ops()))
    assert runs[0][0].size > 4 * 1024       # more than the first buffer holds
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert runs[0][2] == runs[1][2]


def test_poisson_rate_and_seed():
    net = Network(dt=1e-3)
    net.population("p", 1, "lif", tau_mem=0.01, v_threshold=1.0)
    net.poisson("n", 1000, rate_hz=20.0, seed=11)
    net.probe("n")
    out = []
    for _ in range(2):
        dev = NeuromorphicDevice("loihi2")
        dev.compile(net)
        out.append(dev.run(1000).spikes["n"])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    rate = out[0][0].size / (1000 * 1.0)
    assert abs(rate - 20.0) < 4 * np.sqrt(20.0 / 1000)  # 4 sigma of the mean over channels
    net.sources["n"].seed = 12
    dev = NeuromorphicDevice("loihi2")
    dev.compile(net)
    assert not np.array_equal(dev.run(1000).spikes["n"][1], out[0][1])


@njit(cache=True)
def _lif_kernel(inp, state, params, payload):
    # the built-in euler LIF, as a custom kernel: state[0] = v; params: a, k, thr
    for i in range(state.shape[1]):
        v = params[0, i] * state[0, i] + params[1, i] * inp[i, 0]
        if v > params[2, i]:
            payload[i] = 1
            v = 0.0
        state[0, i] = v


@njit(cache=True)
def _ternary_kernel(inp, state, params, payload):
    # emits +1 / -1 when its accumulated input crosses +-theta (a DiffPC-like unit)
    for i in range(state.shape[1]):
        e = state[0, i] + inp[i, 0]
        if e > params[0, i]:
            payload[i] = 1
            e -= params[0, i]
        elif e < -params[0, i]:
            payload[i] = -1
            e += params[0, i]
        state[0, i] = e


def _with_kernel(custom: bool):
    rng = np.random.default_rng(8)
    dt, tau = 1e-3, 0.01
    net = Network(dt=dt)
    if custom:
        k = NeuronKernel("lif_custom", _lif_kernel, state_names=("v",),
                         param_names=("a", "k", "thr"))
        # k as the built-in computes it, (1 - a) r, so both round alike
        net.population("h", 10, k, a=1 - dt / tau, k=1 - (1 - dt / tau), thr=1.0)
    else:
        net.population("h", 10, "lif", tau_mem=tau, v_threshold=1.0)
    net.population("o", 4, "lif", tau_mem=tau, v_threshold=1.0)
    st, ix = np.nonzero(rng.random((200, 6)) < 0.1)
    net.spikes("s", 6, steps=st, index=ix)
    net.connect("s", "h", weight=rng.uniform(2, 9, (10, 6)))
    net.connect("h", "o", weight=rng.uniform(0, 8, (4, 10)), delay=2)
    net.probe("h", "v")
    return net


def test_custom_kernel_runs_like_builtin():
    res = []
    for custom in (False, True):
        dev = NeuromorphicDevice("loihi2")
        dev.compile(_with_kernel(custom))
        res.append(dev.run(200))
    for pop in ("h", "o"):
        np.testing.assert_array_equal(res[0].spikes[pop][0], res[1].spikes[pop][0])
        np.testing.assert_array_equal(res[0].spikes[pop][1], res[1].spikes[pop][1])
    assert res[0].spikes["h"][0].size > 10
    np.testing.assert_allclose(res[0].states["h.v"], res[1].states["h.v"], rtol=1e-12)
    assert res[0].counts == res[1].counts


def test_signed_payload_spikes():
    net = Network(dt=1e-3)
    k = NeuronKernel("ternary", _ternary_kernel, state_names=("e",), param_names=("theta",))
    net.population("t", 2, k, theta=1.0)
    net.population("o", 1, "if", v_threshold=1e9)
    net.spikes("s", 2, steps=[0, 0], index=[0, 1])
    net.connect("s", "t", weight=[[1.5, 0.0], [0.0, -1.5]])
    net.connect("t", "o", weight=[[2.0, 3.0]])
    net.probe("o", "v")
    dev = NeuromorphicDevice("loihi2")
    dev.compile(net, quantize=False)
    res = dev.run(4)
    st, ix, pl = res.spikes["t"]
    assert list(zip(st.tolist(), ix.tolist(), pl.tolist(), strict=True)) == \
        [(1, 0, 1), (1, 1, -1)]
    # IF: v += r dt x with x = 2 x (+1) + 3 x (-1) = -1 arriving at step 2
    assert res.states["o.v"][2, 0] == pytest.approx(-1e-3)
    dev1 = NeuromorphicDevice("loihi")          # Loihi 1: binary spikes only
    dev1.compile(net, quantize=False)
    with pytest.raises(HardwareLimitError, match=r"population 't' neuron 1 emitted payload -1"):
        dev1.run(4)


def test_syn_update_hook_counts_changed_synapses():
    net = _toy_net(2, 2)
    net.connect("src", "dst", weight=[[1.0, 0.5], [0.25, -1.0]])
    dev = NeuromorphicDevice(TOY)
    c = dev.compile(net)
    before = c.weights_of("src->dst").copy()
    # +0.01 rounds away on a 1/7 grid; +0.2 moves one step
    n = dev.update_weights("src->dst", [0.01, 0.2, 0.0, 0.2], scope="learn")
    assert n == 2
    assert dev.ledger.total_ops()["syn_update"] == 2
    assert dev.ledger.total_bytes() == {("local", "read"): 2, ("local", "write"): 2}
    np.testing.assert_allclose(c.weights_of("src->dst") - before, [0, 1 / 7, 0, 1 / 7])
    with pytest.raises(ModelError, match=r"delta for 'src->dst' has shape \(3,\)"):
        dev.update_weights("src->dst", [0.0, 0.0, 0.0])


def test_run_before_compile():
    with pytest.raises(ModelError, match="compile"):
        NeuromorphicDevice("loihi").run(3)
