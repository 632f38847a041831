"""The engine and Brian2 give identical spike trains on recurrent networks with delays.

Same network, same parameters, same input spikes, same (quantised) weights, and the same
discrete update on both sides (stated in tests/sim/neuromorphic/brian2_ref.py and in
sim/neuromorphic/network.py). Brian2 runs with its numpy code-generation target.
"""
import numpy as np
import pytest

from sim.neuromorphic import Network, NeuromorphicDevice

pytest.importorskip("brian2")
from tests.sim.neuromorphic.brian2_ref import run_brian2  # noqa: E402

N_STEPS = 1500


def _network(model: str, method: str, seed: int = 1, reset: str = "value",
             uniform: bool = False) -> Network:
    rng = np.random.default_rng(seed)
    dt = 1e-3
    net = Network(dt=dt)
    n_in, n = 30, 60
    # 30 input channels at ~25 Hz, drawn once: the same events go to both simulators
    mask = rng.random((N_STEPS, n_in)) < 25 * dt
    steps, index = np.nonzero(mask)
    net.spikes("in", n_in, steps=steps, index=index)
    # uniform parameters take the engine's two-pass vectorised path, others the general one
    common = dict(tau_mem=0.012 if uniform else rng.uniform(0.008, 0.02, n), v_threshold=1.0,
                  v_reset=-0.1 if uniform else rng.uniform(-0.2, 0.0, n), v_leak=0.05, r=1.0,
                  refractory=2 * dt)
    if model == "lif":
        net.population("pop", n, "lif", method=method, reset=reset, **common)
        ch_exc = ch_inh = 0
        gain = 5.0        # weights in units of threshold x tau/dt (one step of input)
    else:
        net.population("pop", n, "cuba_lif", method=method, reset=reset, n_channels=2,
                       tau_syn=(0.005, 0.01), w_in=1.0, **common)
        ch_exc, ch_inh = 0, 1
        gain = 5.0
    pre, post = np.nonzero(rng.random((n_in, n)) < 0.3)
    net.connect("in", "pop", pre_idx=pre, post_idx=post,
                weight=gain * rng.uniform(0.5, 1.5, pre.size),
                delay=rng.integers(1, 4, pre.size), channel=ch_exc)
    pre, post = np.nonzero(rng.random((n, n)) < 0.1)
    exc = pre < 45
    for sel, sign, ch, name in ((exc, 1.0, ch_exc, "rec_exc"), (~exc, -2.0, ch_inh, "rec_inh")):
        net.connect("pop", "pop", pre_idx=pre[sel], post_idx=post[sel],
                    weight=sign * gain * rng.uniform(0.2, 0.6, sel.sum()),
                    delay=rng.integers(1, 6, sel.sum()), channel=ch, name=name)
    net.probe("pop")
    return net


@pytest.mark.parametrize("model,method,reset,uniform", [
    ("lif", "euler", "value", False),
    ("cuba_lif", "euler", "value", False),
    ("cuba_lif", "exact", "subtract", False),
    ("cuba_lif", "exact", "value", True)])
def test_identical_spike_trains(model, method, reset, uniform):
    net = _network(model, method, reset=reset, uniform=uniform)
    dev = NeuromorphicDevice("loihi")
    compiled = dev.compile(net)
    ours = dev.run(N_STEPS).spikes["pop"]
    ref = run_brian2(net, compiled, N_STEPS)["pop"]
    # a network that barely spikes would make the comparison empty
    rate = ours[0].size / (60 * N_STEPS * 1e-3)
    assert 5 < rate < 100, rate
    o = np.lexsort((ours[1], ours[0]))
    r = np.lexsort((ref[1], ref[0]))
    assert ours[0].size == ref[0].size
    np.testing.assert_array_equal(ours[0][o], ref[0][r])
    np.testing.assert_array_equal(ours[1][o], ref[1][r])
