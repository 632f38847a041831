"""The neuromorphic time model (sim/execution/neuromorphic.py, sim/step_timing.py, the
engine's sim/neuromorphic/step_clock.py) checked by hand on a toy chip.

Toy per-core times (tests/sim/neuromorphic/timing_toy.py): synop 1 ns, active update 10 ns,
idle update 2 ns, spike 5 ns, learning update 7 ns; barrier 100 ns; static 1 mW.
"""

import h5py
import numpy as np
import pytest

import hw_profiles
from hw_profiles.errors import ProfileError
from sim import step_timing
from sim.errors import PricingError
from sim.execution.neuromorphic import reprice
from sim.ledger import Ledger
from sim.neuromorphic import Network, NeuromorphicDevice
from tests.sim.neuromorphic.timing_toy import TOY, toy_chip, toy_text

NS = 1e-9


def _two_core_net(dt=1e-3):
    """3 LIF neurons, 2 per core: neurons 0, 1 on core 0, neuron 2 on core 1. Input 0 at step 0
    reaches neurons 0 and 1; input 1 at step 2 reaches neuron 2; weights too small to fire."""
    net = Network(dt=dt)
    net.population("p", 3, "lif", tau_mem=0.01, v_threshold=1.0)
    net.spikes("in", 2, steps=[0, 2], index=[0, 1])
    net.connect("in", "p", weight=[[0.1, 0.0], [0.1, 0.0], [0.0, 0.1]])
    return net


def test_unequal_cores_and_idle_steps_exact():
    dev = NeuromorphicDevice(toy_chip())
    dev.compile(_two_core_net())
    assert dev.compiled.core_of.tolist() == [0, 0, 1]
    dev.run(5, scope="run")
    # step 0: core 0 = 2 idle x 2 + 2 synops x 1 (delivered to their target core) = 6 ns,
    #         core 1 = 1 idle x 2 = 2 ns (the host's input spike takes no core time) -> 6 + 100
    # step 1: core 0 = 2 active x 10 = 20, core 1 = 2                              -> 20 + 100
    # step 2: core 0 = 2 idle x 2 = 4, core 1 = 2 idle + 1 synop = 3               ->  4 + 100
    # step 3: core 0 = 4, core 1 = 1 active x 10 = 10 (core 1 is now the slowest)  -> 10 + 100
    # step 4: all idle: core 0 = 4, core 1 = 2                                      ->  4 + 100
    rec = dev.ledger.timing("run")
    assert rec.steps == 5
    assert rec.work_s == pytest.approx((6 + 20 + 4 + 10 + 4) * NS, rel=1e-12)
    assert rec.step_s == pytest.approx((106 + 120 + 104 + 110 + 104) * NS, rel=1e-12)
    # per-core totals: row 0 = host (2 input spikes), rows 1, 2 = cores 0, 1
    ops = np.asarray(rec.core_ops)
    col = step_timing.COL
    assert ops[0, col["spike"]] == 2
    assert ops[1, col["synop"]] == 2 and ops[2, col["synop"]] == 1
    assert ops[1, col["neuron_update_active"]] == 2 and ops[2, col["neuron_update_active"]] == 1
    assert ops[1, col["neuron_update_idle"]] == 8 and ops[2, col["neuron_update_idle"]] == 4
    rep = dev.report()
    assert rep.latency_s["run"] == pytest.approx(544 * NS, rel=1e-12)
    # static over the run time: 1 mW x 544 ns
    assert rep.static_j == pytest.approx(1e-3 * 544e-9, rel=1e-12)
    assert "2 busy cores + barrier" in rep.time_model["run"]
    assert rep.static_basis.startswith("run time")


def test_spike_charged_to_sender_core():
    net = Network(dt=1e-3)
    net.population("out", 1, "lif", tau_mem=0.01, v_threshold=1.0)
    net.spikes("in", 1, steps=[0], index=[0])
    net.connect("in", "out", weight=[[20.0]])
    dev = NeuromorphicDevice(toy_chip())
    dev.compile(net)
    res = dev.run(3)
    assert res.spikes["out"][0].tolist() == [1]
    # step 0: 1 idle (2) + 1 synop (1) = 3; step 1: fires: 1 active (10) + 1 spike (5) = 15;
    # step 2: idle 2 -> (3 + 15 + 2) + 3 x 100 = 320 ns
    assert dev.report().latency_s["run"] == pytest.approx(320 * NS, rel=1e-12)


def test_realtime_static_energy_over_biological_duration():
    dev = NeuromorphicDevice(toy_chip())
    dev.compile(_two_core_net(dt=1e-3))
    dev.run(5)
    rep = dev.ledger.price(dev.profile, realtime=True)
    # every step (<= 120 ns) is shorter than dt = 1 ms, so it waits: 5 x 1 ms = 5 ms
    assert rep.latency_s["run"] == pytest.approx(5e-3, rel=1e-12)
    # static: 1 mW x 5 ms = 5 uJ (against 1 mW x 544 ns without realtime)
    assert rep.static_j == pytest.approx(5e-6, rel=1e-12)
    assert rep.static_basis.startswith("real time")
    assert "0 steps overran dt" in rep.time_model["run"]
    assert dev.ledger.timing("run").bio_s == pytest.approx(5e-3)


def test_tick_paces_every_step_and_counts_overruns():
    dev = NeuromorphicDevice(toy_chip(tick=1e6))          # a TrueNorth-like 1 ms tick
    dev.compile(_two_core_net(dt=1e-4))
    dev.run(5)
    rec = dev.ledger.timing("run")
    # each step lasts the 1 ms tick (its 104-120 ns of work fit): 5 x 1 ms
    assert rec.step_s == pytest.approx(5e-3, rel=1e-12)
    # dt = 0.1 ms < the tick: every one of the 5 steps overruns real time
    assert rec.overruns == 5
    rep = dev.ledger.price(dev.profile, realtime=True)
    assert rep.latency_s["run"] == pytest.approx(5e-3, rel=1e-12)
    assert "5 steps overran dt" in rep.time_model["run"]
    assert dev.report().static_j == pytest.approx(1e-3 * 5e-3, rel=1e-12)


def test_barrier_interpolates_in_routers_used():
    prof = toy_chip(one_router=100.0, barrier=400.0)
    # 2 x 2 mesh = 4 routers: 1 router -> 100 ns; 2 -> 100 + 300 x 1/3 = 200; 4 -> 400
    assert step_timing.barrier_s(prof, 1) == pytest.approx(100 * NS)
    assert step_timing.barrier_s(prof, 2) == pytest.approx(200 * NS)
    assert step_timing.barrier_s(prof, 4) == pytest.approx(400 * NS)
    dev = NeuromorphicDevice(prof)
    dev.compile(_two_core_net())          # cores 0 and 1: one core per router -> 2 routers
    dev.run(5)
    # the same work as above (44 ns) + 5 x 200 ns
    assert dev.report().latency_s["run"] == pytest.approx((44 + 1000) * NS, rel=1e-12)


def test_learning_phase_slowest_core_plus_barrier():
    dev = NeuromorphicDevice(toy_chip())
    dev.compile(_two_core_net())
    # the 3 synapses, in projection order: targets neurons 0, 1 (core 0), 2 (core 1); 0.1 - 0.05
    # moves each 4-bit weight (step 0.1/7) from 7 to 4 steps, so all 3 change
    n = dev.update_weights("in->p", np.array([-0.05, -0.05, -0.05]), scope="learn")
    assert n == 3
    # core 0: 2 updates x 7 ns = 14 ns, core 1: 7 ns -> one phase 14 + 100 = 114 ns
    rec = dev.ledger.timing("learn")
    assert (rec.steps, rec.bio_s) == (1, 0.0)
    assert dev.report().latency_s["learn"] == pytest.approx(114 * NS, rel=1e-12)


def test_ops_outside_steps_are_a_lower_bound_over_all_cores():
    led = Ledger()
    led.add("synop", 128, scope="sweep")
    rep = led.price(toy_chip())
    # no per-core record: 128 synops x 1 ns spread over all 4 cores = 32 ns, no barrier
    assert rep.latency_s["sweep"] == pytest.approx(32 * NS, rel=1e-12)
    assert "lower bound" in rep.time_model["sweep"]


def test_other_chip_is_not_re_placed_and_says_so():
    dev = NeuromorphicDevice(toy_chip())
    dev.compile(_two_core_net())
    dev.run(5)
    other = toy_chip(name="toy-other")
    rep = dev.ledger.price(other)
    # timed on toy-timed: every count gets the lower bound on toy-other's 4 cores:
    # (3 synops x 1 + 3 active x 10 + 12 idle x 2 + 2 spikes x 5) / 4 = 67 / 4 ns, plus the
    # 5 recorded steps' barrier of 100 ns each (every step lasts at least its barrier: it
    # was left out, and a chip's fixed tick too)
    assert rep.latency_s["run"] == pytest.approx((67 / 4 + 5 * 100) * NS, rel=1e-12)
    assert "not re-placed on toy-other" in rep.time_model["run"]
    # with a 1 us tick each of the 5 steps lasts at least 1 us: 5 us, above the spread
    ticked = dev.ledger.price(toy_chip(name="toy-tick", tick=1000.0))
    assert ticked.latency_s["run"] == pytest.approx(5 * 1000 * NS, rel=1e-12)
    assert ticked.latency_bound() == "lower bound"


def test_reprice_re_places_on_each_chip():
    def simulate(profile):
        dev = NeuromorphicDevice(profile)
        dev.compile(_two_core_net())
        dev.run(5)
        return dev.ledger
    wide = toy_chip(neurons_per_core=4, name="toy-wide")
    a, b = reprice(simulate, [toy_chip(), wide])
    assert a.latency_s["run"] == pytest.approx(544 * NS, rel=1e-12)
    # all 3 neurons on one core: step 0: 3 idle x 2 + 2 synops = 8; step 1: 2 active + 1 idle
    # = 22; step 2: 3 idle + 1 synop = 7; step 3: 1 active + 2 idle = 14; step 4: 6
    assert b.latency_s["run"] == pytest.approx((8 + 22 + 7 + 14 + 6 + 500) * NS, rel=1e-12)
    with pytest.raises(PricingError, match="kind 'gpu'"):
        reprice(simulate, [TOY.with_name("toy-gpu.toml")])


def test_realtime_needs_a_step_time_model():
    led = Ledger()
    led.add("synop", 1)
    with pytest.raises(PricingError, match="realtime pacing needs a neuromorphic profile"):
        led.price(TOY, realtime=True)      # toy-neuro has no [core_op_ns]


def test_timing_record_round_trips_dict_json_hdf5(tmp_path):
    dev = NeuromorphicDevice(toy_chip())
    dev.compile(_two_core_net())
    dev.run(5)
    dev.update_weights("in->p", np.array([-0.05, -0.05, -0.05]), scope="learn")
    led = dev.ledger
    again = Ledger.from_json(led.to_json())
    assert again == led
    assert np.array_equal(again.timing("run").core_ops, led.timing("run").core_ops)
    with h5py.File(tmp_path / "l.h5", "w") as f:
        led.to_hdf5(f.create_group("ledger"))
    with h5py.File(tmp_path / "l.h5") as f:
        back = Ledger.from_hdf5(f["ledger"])
    assert back == led
    assert back.price(dev.profile).latency_s == led.price(dev.profile).latency_s
    # merging a ledger into itself doubles every sum
    twice = led.copy().merge(led)
    assert twice.timing("run").step_s == pytest.approx(2 * led.timing("run").step_s)


@pytest.mark.parametrize("edit, match", [
    (lambda t: t.replace("syn_update = { value = 7.0", "hop = { value = 7.0"),
     r"\[core_op_ns\] hop: unknown key"),
    (lambda t: t.replace('syn_update = { value = 7.0, unit = "ns", provenance = "specified", '
                         'source = "toy" }\n', ""), r"\[core_op_ns\] syn_update = '\(missing\)'"),
    (lambda t: t.replace("barrier_ns = { value = 100.0", "barrier_ns = { value = -1.0"),
     r"\[step_sync\] barrier_ns = -1.0: values must be >= 0 ns"),
    (lambda t: t.replace("barrier_ns = { value = 100.0", "barrier_one_router_ns = { value = "
                         "500.0, unit = \"ns\", provenance = \"specified\", source = \"toy\" }"
                         "\nbarrier_ns = { value = 100.0"), "must be <= barrier_ns"),
])
def test_loader_checks_the_step_time_tables(edit, match):
    text = toy_text()
    with pytest.raises(ProfileError, match=match):
        hw_profiles.loads(edit(text), origin="toy-timed.toml")


def test_shipped_neuromorphic_profiles_have_the_model():
    for name in ("loihi", "loihi2", "truenorth", "spinnaker2"):
        prof = hw_profiles.load(name)
        assert step_timing.has_model(prof), name
    tn = hw_profiles.load("truenorth")
    assert step_timing.tick_s(tn) == pytest.approx(1e-3)
    # Loihi: Davies 2018 Table 2: 113 ns over 1 tile, 465 ns over 32 tiles
    lo = hw_profiles.load("loihi")
    assert step_timing.barrier_s(lo, 1) == pytest.approx(113e-9)
    assert step_timing.barrier_s(lo, 32) == pytest.approx(465e-9)


def test_energy_report_keeps_its_time_model_through_dict():
    from sim.energy_report import EnergyReport
    dev = NeuromorphicDevice(toy_chip())
    dev.compile(_two_core_net())
    dev.run(5)
    rep = dev.ledger.price(dev.profile, realtime=True)
    back = EnergyReport.from_dict(rep.to_dict())
    assert back.time_model == rep.time_model and back.static_basis == rep.static_basis
    # a version-1 report written before these fields reads with the roofline defaults
    old = rep.to_dict()
    del old["time_model"], old["static_basis"]
    assert EnergyReport.from_dict(old).time_model == {}
