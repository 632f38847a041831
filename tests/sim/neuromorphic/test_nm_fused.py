"""The built-in loop (kernels.run_builtin: fused CUBA pass, per-core tally from mark bytes,
synops per core counted in delivery) against the per-step kernels the custom-kernel path runs
(neurons_step, tally_neurons, deliver_step, end_step): the same spikes, state, counts and step
times, bit for bit."""
import numpy as np

from models.snn_cuba.card import CubaConfig
from models.snn_cuba.model import build
from sim.neuromorphic import Network, NeuromorphicDevice


class _Truthy(dict):
    """No custom population, but truthy: engine.run then takes its per-step path."""

    def __bool__(self):
        return True


def _both(net_fn, profile, steps, chunks=1):
    out = []
    for stepwise in (False, True):
        dev = NeuromorphicDevice(profile)
        dev.compile(net_fn())
        if stepwise:
            dev._customs = _Truthy()
        res = [dev.run(steps // chunks, scope="run") for _ in range(chunks)]
        out.append((dev, res))
    return out


def _same(a, b):
    (da, ra), (db, rb) = a, b
    for x, y in zip(ra, rb, strict=True):
        for name in x.spikes:
            for u, v in zip(x.spikes[name], y.spikes[name], strict=True):
                assert np.array_equal(u, v)
        assert x.counts == y.counts
        for k in x.states:
            assert np.array_equal(x.states[k], y.states[k])
    assert np.array_equal(da.v, db.v) and np.array_equal(da.I, db.I)
    ta, tb = da.ledger.timing("run"), db.ledger.timing("run")
    assert (ta.work_s, ta.step_s, ta.paced_s, ta.overruns) == \
        (tb.work_s, tb.step_s, tb.paced_s, tb.overruns)
    assert np.array_equal(ta.core_ops, tb.core_ops)


def test_va_cuba_fused_equals_stepwise():
    # 800 neurons, 80 inputs each, on 8-ish Loihi cores; 300 steps in 3 calls (state carried)
    run = _both(lambda: build(CubaConfig(n=800, p=0.1)), "loihi", 300, chunks=3)
    assert run[0][1][0].spikes["cuba"][0].size > 0
    _same(*run)


def _mixed():
    """A uniform 1-channel CUBA population (fused), a heterogeneous 2-channel one and a LIF
    one (general path), a Poisson source, delays 1-3 (no single ring-buffer row) and an
    injected current that switches on at step 40."""
    rng = np.random.default_rng(3)
    net = Network(dt=1e-3)
    net.population("a", 37, "cuba_lif", tau_mem=0.02, tau_syn=0.005, v_threshold=1.0,
                   v_leak=0.0, r=1.0, w_in=1.0, refractory=0.002, i_inj=np.full(37, 30.0),
                   i_inj_start=40)
    net.population("b", 29, "cuba_lif", n_channels=2, tau_mem=rng.uniform(0.01, 0.03, 29),
                   tau_syn=(0.005, 0.01), v_threshold=1.0, v_leak=0.0, r=1.0, w_in=1.0)
    net.population("c", 13, "lif", tau_mem=0.01, v_threshold=1.0)
    net.poisson("in", 20, rate_hz=300.0, seed=5)
    net.connect("in", "a", weight=rng.normal(3.0, 1.0, (37, 20)), delay=1)
    net.connect("a", "b", weight=rng.normal(2.0, 1.0, (29, 37)),
                delay=rng.integers(1, 4, (29, 37)), channel=0)
    net.connect("b", "b", weight=rng.normal(-1.0, 0.5, (29, 29)), channel=1)
    net.connect("b", "c", weight=rng.normal(1.0, 0.5, (13, 29)), delay=2)
    net.probe("a")
    net.probe("b")
    return net


def test_mixed_network_fused_equals_stepwise():
    run = _both(_mixed, "loihi", 120, chunks=2)
    assert run[0][1][1].spikes["a"][0].size > 0 and run[0][1][1].spikes["b"][0].size > 0
    _same(*run)
