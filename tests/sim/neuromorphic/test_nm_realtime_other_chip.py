"""Real-time pacing on a chip the run was not placed on (sim/execution/neuromorphic.py): the
steps were timed on another chip, but their number and dt are known, so a paced run lasts
at least steps x dt there too. Toy times: tests/sim/neuromorphic/timing_toy.py."""

import pytest

from sim.neuromorphic import Network, NeuromorphicDevice
from tests.sim.neuromorphic.timing_toy import toy_chip

NS = 1e-9


def _timed_run(dt):
    net = Network(dt=dt)
    net.population("p", 3, "lif", tau_mem=0.01, v_threshold=1.0)
    net.spikes("in", 2, steps=[0, 2], index=[0, 1])
    net.connect("in", "p", weight=[[0.1, 0.0], [0.1, 0.0], [0.0, 0.1]])
    dev = NeuromorphicDevice(toy_chip())
    dev.compile(net)
    dev.run(5, scope="run")
    return dev.ledger


def test_realtime_on_another_chip_lasts_at_least_the_biological_time():
    ledger = _timed_run(dt=1e-3)
    other = toy_chip(name="toy-other")
    unpaced = ledger.price(other)
    # the unpaced lower bound: (67 / 4) ns of spread work + 5 steps x the 100 ns barrier
    assert unpaced.latency_s["run"] == pytest.approx((67 / 4 + 5 * 100) * NS, rel=1e-12)
    paced = ledger.price(other, realtime=True)
    # paced: each of the 5 steps lasts at least dt = 1 ms, so at least 5 ms in all
    assert paced.latency_s["run"] == pytest.approx(5e-3, rel=1e-12)
    # static: 1 mW over those 5 ms = 5 uJ (was 1 mW x 517 ns under a real-time label)
    assert paced.static_j == pytest.approx(1e-3 * 5e-3, rel=1e-12)
    assert paced.static_basis.startswith("real time")
    assert "paced to real time" in paced.time_model["run"]
    assert "not paced" not in paced.time_model["run"]


def test_realtime_on_another_chip_keeps_a_slower_lower_bound():
    # dt = 10 ns: 5 steps are 50 ns of biological time, below the 517 ns lower bound
    ledger = _timed_run(dt=1e-8)
    paced = ledger.price(toy_chip(name="toy-other"), realtime=True)
    assert paced.latency_s["run"] == pytest.approx((67 / 4 + 5 * 100) * NS, rel=1e-12)
