"""bench/snn_cuba_profile.py: its timed copy of run_builtin's loop runs the same network to
the same spikes as NeuromorphicDevice.run, and its phase shares account for every counted
cycle; bench/snn_cuba.py's neuron-state pass computes the update it claims to time."""
import numpy as np

from bench import snn_cuba as sc
from bench import snn_cuba_profile as sp


def test_timed_copy_gives_the_engines_spikes():
    # 800 neurons at p = 80 / 800 = 0.1 (~80 synapses each) on loihi, 300 steps of 0.1 ms
    r = sp.profile(800, 300)
    assert r["spikes"] > 0
    assert r["same_spikes"]
    # synops = spikes x out-degree, out-degree ~80: between 40 and 160 per spike
    assert 40 * r["spikes"] <= r["synaptic_events"] <= 160 * r["spikes"]
    assert abs(sum(r["share"].values()) - 1.0) < 1e-3
    assert all(s > 0 for s in r["share"].values())


def test_state_pass_updates_v_ge_gi_once():
    f = sc._state_pass_fn()
    v, ge, gi = np.full(5, -55.0), np.full(5, 2.0), np.full(5, -1.0)
    f(v, ge, gi, 0.5, 0.25, 0.5)
    # ge = 0.5 x 2 = 1; gi = 0.25 x -1 = -0.25; v = 0.5 x -55 + 1 - 0.25 = -26.75
    assert np.array_equal(ge, np.full(5, 1.0))
    assert np.array_equal(gi, np.full(5, -0.25))
    assert np.array_equal(v, np.full(5, -26.75))
