"""bench/sanafe_compare.py: the prices it reads, and the same spikes in SANA-FE and neuroedge
on small networks (issue 29, item 5)."""
import importlib.util
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sanafe", reason="sanafe (dev extra) is the oracle this bench reads")

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    path = ROOT / "bench" / "sanafe_compare.py"
    spec = importlib.util.spec_from_file_location("sanafe_compare", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("sanafe_compare", mod)   # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_price_pairs_match_both_sources():
    rows = {r["event"]: r for r in _bench().price_pairs()}
    ne = tomllib.loads((ROOT / "hw_profiles" / "data" / "loihi.toml").read_text())
    syn = rows["synaptic op (dense)"]
    assert syn["neuroedge_pj"] == ne["energy_pj"]["synop"]["value"]
    # SANA-FE 2.2.9 loihi.yaml: loihi_dense_synapse energy_process_spike 35.5e-12 J
    assert syn["sanafe_pj"] == pytest.approx(35.5)
    # neuron update = access 51.2 pJ + update 21.6 pJ = 72.8 pJ; 6.0 + 3.7 = 9.7 ns
    nu = rows["neuron update (active)"]
    assert nu["sanafe_pj"] == pytest.approx(72.8)
    assert nu["sanafe_ns"] == pytest.approx(9.7)
    # a spike: soma spike_out 69.3 pJ / 30 ns once, axon message_out 111.0 pJ per dest. core
    assert rows["spike out (soma)"]["sanafe_pj"] == pytest.approx(69.3)
    assert rows["message out (per dest. core)"]["sanafe_pj"] == pytest.approx(111.0)
    # barrier table 0.6 us (1 tile) .. 1.8 us (29+ tiles) against 113 .. 465 ns
    assert rows["barrier, whole chip"]["sanafe_ns"] == pytest.approx(1800.0)
    assert rows["barrier, one tile"]["sanafe_ns"] == pytest.approx(600.0)
    # ratio is neuroedge / SANA-FE: 23.6 / 35.5 = 0.6648
    assert syn["energy_ratio"] == pytest.approx(23.6 / 35.5)


def test_tiny_feedforward_same_spikes_and_events():
    B = _bench()
    # 4 inputs with bias 3, threshold 10: v = 3, 6, 9, 12 > 10 -> fire in steps 3, 7, 11
    # (reset to 0); 2 outputs get 4 x 4 = 16 > 7 one step later -> fire in steps 4, 8.
    # 12 steps: 4 x 3 + 2 x 2 = 16 spikes. Both simulators count a spike's synaptic events
    # in the step it is sent (its input acts one step later): 3 volleys x 4 x 2 = 24.
    g_in = B.Group("inp", 4, np.full(4, 10.0), np.full(4, 3.0), np.zeros(4))
    g_out = B.Group("out", 2, np.full(2, 7.0), np.zeros(2), np.zeros(2))
    i, j = np.repeat(np.arange(4), 2), np.tile(np.arange(2), 4)
    spec = B.Spec("tiny", 1e-3, [g_in, g_out], [("inp", "out", i, j, np.full(8, 4.0))])
    o = B.compare(spec, 12, quiet=True)
    assert o["spikes_identical"]
    assert o["spikes_neuroedge"] == o["spikes_sanafe"] == 16
    assert o["spikes_per_group"] == {"inp": 12, "out": 4}
    assert o["neuroedge_counts"]["synop"] == o["sanafe_counts"]["synaptic events"] == 24
    # SANA-FE synapse energy: 24 events x 35.5 pJ (dense synapse) = 852 pJ
    assert o["sanafe_parts_j"]["synapse"] == pytest.approx(24 * 35.5e-12)
    # neuroedge: 24 synops x 23.6 pJ = 566.4 pJ of its dynamic energy
    assert o["neuroedge_by_op_j"]["synop"] == pytest.approx(24 * 23.6e-12)
    # latency parts: both populations on one tile, so SANA-FE's barrier is its 1-tile entry
    # 0.6 us x 12 steps = 7.2 us, neuroedge's the 1-router end of its range, 113 ns x 12
    lp = o["latency_parts_s"]
    assert lp["tiles"] == 1
    assert o["sanafe_simple_same_spikes"]
    assert lp["sanafe_barrier"] == pytest.approx(12 * 0.6e-6)
    assert lp["neuroedge_barrier"] == pytest.approx(12 * 113e-9)


def test_small_va_cuba_same_spikes():
    """The Loihi CUBA kernel (leak, 1/64 truncation, refractory) gives SANA-FE's spikes."""
    B = _bench()
    o = B.compare(B.va_cuba(300), 150, quiet=True)
    assert o["spikes_neuroedge"] > 0          # activity, not two silent networks
    assert o["spikes_identical"], o["first_mismatch"]


def test_docs_show_the_committed_results():
    """RESULTS.md and docs/neuromorphic.md show the table rendered from the committed
    bench/out/sanafe_compare.json, and the prose counts are that file's."""
    import json
    B = _bench()
    doc = json.loads((ROOT / "bench" / "out" / "sanafe_compare.json").read_text())
    table = B.render_table(doc)
    results = (ROOT / "bench" / "RESULTS.md").read_text()
    assert table in results
    assert table in (ROOT / "docs" / "neuromorphic.md").read_text()
    nets = {n["network"]: n for n in doc["networks"]}
    dvs, cuba = nets["dvs_gesture"], nets["va_cuba_4000"]
    assert all(n["spikes_identical"] for n in doc["networks"])
    for figure in (dvs["sanafe_counts"]["synaptic events"],
                   cuba["sanafe_counts"]["synaptic events"],
                   cuba["sanafe_counts"]["neurons updated"],
                   int(cuba["neuroedge_counts"]["neuron_update_active"]),
                   int(cuba["neuroedge_counts"]["neuron_update_idle"]),
                   dvs["sanafe_counts"]["packets"], dvs["spikes_neuroedge"]):
        assert f"{figure:,}" in results
    r = doc["result"]
    # "energy by 1.38 / 1.25 = 1.10x", "latency by 1.98 / 1.25 = 1.59x"
    for f in (r["energy_factor_max"], r["latency_factor_max"]):
        assert f"{f:.2f} / 1.25 = {f / 1.25:.2f}x" in results
    # DiffPC: spikes, synaptic events, the drivers' share and the split of VA CUBA's latency
    dp = nets["diffpc_digits"]
    d = dp["diffpc"]
    per = dp["spikes_per_group"]
    act, err = per["h1.act_p"] + per["h1.act_n"], per["h2.err_p"] + per["h2.err_n"]
    # synaptic events = driver events (one per spike) + 10 targets per hidden activity
    # spike + 32 per output error spike
    syn = dp["sanafe_counts"]["synaptic events"]
    assert syn == dp["spikes_neuroedge"] + act * 10 + err * 32
    assert f"{syn:,} = {dp['spikes_neuroedge']:,} driver events + {act:,} x 10 + {err:,} x 32" \
        in results.replace("\n  ", " ")
    he, ht = d["harness"]["energy_j"], d["harness"]["latency_s"]
    assert (f"{he['neuroedge_dynamic'] * 1e6:.1f} / {he['sanafe'] * 1e6:.1f} uJ (neuroedge / "
            f"SANA-FE) and {ht['neuroedge'] * 1e3:.2f} / {ht['sanafe'] * 1e3:.2f} ms") \
        in results.replace("\n  ", " ")
    assert f"(ratio {d['net_of_harness_energy_ratio']:.2f}:" in results
    assert f"(test accuracy {d['test_accuracy'] * 100:.1f} %;" in results.replace("\n", " ")
    lp, t = cuba["latency_parts_s"], cuba["latency_s"]
    gap = t["sanafe"] - t["neuroedge"]
    barrier_gap = lp["sanafe_barrier"] - lp["neuroedge_barrier"]
    assert f"{barrier_gap * 1e3:.2f} ms of the {gap * 1e3:.2f} ms gap" in results
    assert f"({lp['neuroedge_cores'] * 1e3:.2f} + {lp['sanafe_barrier'] * 1e3:.2f}) / " \
           f"{t['sanafe'] * 1e3:.2f}" in results
    # with SANA-FE's barrier: factor t_sf / (cores_ne + barrier_sf) = 6.20 / 4.02 = 1.54
    f = t["sanafe"] / (lp["neuroedge_cores"] + lp["sanafe_barrier"])
    assert f"a factor of {f:.2f}, {f / 1.25:.2f}x beyond the goal" in results.replace("\n", " ")
    # "SANA-FE's "simple" timing model ... is within 5 % of its "detailed" one"
    assert "within 5 % of its \"detailed\" one on every network" in results.replace("\n", " ")
    for n in doc["networks"]:
        assert n["sanafe_simple_same_spikes"]
        assert abs(n["latency_s"]["sanafe_simple_timing"] / n["latency_s"]["sanafe"] - 1) < 0.05


def test_diffpc_replay_same_spikes_and_events():
    """A DiffPC iteration's signed graded spikes, replayed on Loihi 1 LIF pairs (+/-), fire
    the same in both simulators, and every delivered spike is one synaptic event per target."""
    B = _bench()
    from hw_profiles import load
    from models.baselines.pc.model import PCNet
    from models.diffpc.card import DiffPCConfig
    from models.diffpc.model import DiffPCNetwork
    from sim.neuromorphic import NeuromorphicDevice
    cfg = DiffPCConfig(hidden=(8,), batch_size=2, cycles=4)       # 4 cycles x n = 8 steps
    net = PCNet((16, 8, 4), cfg.lr, cfg.weight_decay, 0)
    # the python step loop (the compiled one's reference, same spikes): no per-process compile
    eng = DiffPCNetwork(net, 2, cfg, NeuromorphicDevice(load("loihi2")), loop="python")
    rng = np.random.default_rng(0)
    eng.iterate(rng.random((2, 16)), np.eye(4)[[0, 2]])
    eng.spikes.update(act=0, err=0)
    eng.iterate(rng.random((2, 16)), np.eye(4)[[1, 3]])   # the replayed (second) iteration
    spec = B.diffpc_spec(eng, "diffpc_small")
    # 2 layers x (state, error port) x (+, -) Loihi neurons of B x K each: 4 x 2 x (8 + 4)
    assert sum(g.n for g in spec.groups) == 96
    o = B.compare(spec, cfg.steps + 1, quiet=True)
    n_spk = eng.spikes["act"] + eng.spikes["err"]
    assert n_spk > 0
    assert o["spikes_identical"], o["first_mismatch"]
    assert o["spikes_neuroedge"] == n_spk            # one Loihi spike per DiffPC spike
    # synaptic events: one per replayed spike (its driver) + h1's activity spikes x 4
    # targets (h2's units) + h2's error spikes x 8 targets (h1's units); h1 sends no errors
    # and the clamped h2 no activity
    per = o["spikes_per_group"]
    act1 = per["h1.act_p"] + per["h1.act_n"]
    err2 = per["h2.err_p"] + per["h2.err_n"]
    assert act1 + err2 == n_spk
    expected = n_spk + act1 * 4 + err2 * 8
    assert o["sanafe_counts"]["synaptic events"] == expected
    assert o["neuroedge_counts"]["synop"] == expected
    # the sign split: a +1 payload spike drives a `_p` neuron, a -1 one a `_n` neuron
    st, rows, pay = eng.last_spikes["h2"]
    assert per["h2.err_p"] == int(np.count_nonzero((rows >= 8) & (pay > 0)))
