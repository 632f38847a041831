"""sim.validation: ledger scaling and int8 re-typing exactly, and rows rebuilt and priced."""
import pytest

from hw_profiles.validation import load_table
from sim.ledger import Ledger
from sim.precision import retyped_int8
from sim.pricing import price
from sim.validation import (
    TORCH_WORKLOADS,
    scaled,
    summarise,
    validate,
    validate_one,
)


def _ledger():
    lg = Ledger()
    lg.add("mac_fp32", 10, scope="infer")
    lg.add("flop_fp32", 3, scope="infer")
    lg.add("synop", 7, scope="run")
    lg.add_bytes("offchip", read=9, write=4, scope="infer")
    lg.add_samples(2, scope="infer")
    return lg


def test_scaled_multiplies_every_count():
    s = scaled(_ledger(), 64)
    assert s.total_ops() == {"mac_fp32": 640, "flop_fp32": 192, "synop": 448}
    assert s.total_bytes() == {("offchip", "read"): 576, ("offchip", "write"): 256}
    assert s.samples() == {"infer": 128}


def test_retyped_int8():
    r = retyped_int8(_ledger())
    # fp32 MAC -> int8 MAC, fp32 op -> int add, others kept; bytes / 4 rounded up: 9 -> 3, 4 -> 1
    assert r.total_ops() == {"mac_int8": 10, "int_add": 3, "synop": 7}
    assert r.total_bytes() == {("offchip", "read"): 3, ("offchip", "write"): 1}
    assert r.samples() == {"infer": 2}


def test_retyped_int8_keeps_footprints_and_layers_at_a_quarter():
    lg = _ledger()
    lg.add_footprint(writable=10, read_only=8, scope="infer")
    lg.record_layer("infer/fc", "Linear", (2, 5), 55)
    r = retyped_int8(lg)
    # resident bytes / 4 rounded up: 10 -> 3, 8 -> 2; the layer record is kept as it is
    assert r.footprints()["infer"] == {"writable": 3, "read_only": 2, "blocks": 1}
    assert r.layers() == lg.layers()


def test_torch_workload_mac_counts():
    # MLPerf Tiny DS-CNN: conv 25x5x64x(10x4) = 320,000; 4 x (dw 25x5x64x9 = 72,000 +
    # pw 25x5x64x64 = 512,000) = 2,336,000; dense 64x12 = 768 -> 2,656,768 MACs
    import torch

    from sim.torch_engine import TorchDevice
    for name, macs in (("ds_cnn_kws", 2_656_768),
                       # 640x128 + 3x128x128 + 128x8 + 8x128 + 3x128x128 + 128x640 = 264,192
                       ("fc_autoencoder_ad", 264_192)):
        net, x = TORCH_WORKLOADS[name]({"batch": 1})
        dev = TorchDevice("x86-avx2")
        net = dev.compile(net.eval())
        with torch.no_grad(), dev.count("infer", samples=1):
            net(dev.tensor(x))
        assert dev.ledger.total_ops()["mac_fp32"] == macs, name


def test_truenorth_row_is_synop_energy_plus_static_power_over_priced_time():
    from sim.validation import truenorth_rate_network
    m = next(r for r in load_table() if r.id == "truenorth-rate-20hz")
    j_per_event, s_per_event, detail = truenorth_rate_network(m)
    # 16,384 neurons x 20 spikes x 128 synapses, scaled x 64 to 1,048,576 neurons, in 1 s
    events = 16_384 * 20 * 128 * 64
    assert f"{events:.4g} synaptic events" in detail
    # on truenorth only synops (2.5 pJ) and static power (63.1 mW) cost energy: neuron
    # updates, spikes, hops and crossbar bytes are 0 pJ in the profile
    assert j_per_event == pytest.approx(2.5e-12 + 0.0631 * s_per_event, rel=1e-9)
    # the chip keeps real time: 1,000 steps x max(1 ms tick, slowest core + 0 ns barrier) = 1 s
    # (the 64 replicas run side by side, so scaling the counts does not scale the time)
    assert s_per_event * events == pytest.approx(1.0, rel=1e-12)


def test_rate_periods_mix_two_whole_periods_to_the_published_mean_rate():
    from hw_profiles.errors import NeuroedgeError
    from sim.validation import rate_periods
    # 20 Hz at 1 ms is a whole period: every neuron fires every 50 steps
    assert set(rate_periods(20.0, 1e-3, 512).tolist()) == {50}
    # 95.93 Hz: 10.42 steps -> periods 10 and 11; p / 10 + (1 - p) / 11 = 0.09593 gives
    # p = (0.09593 - 1/11) / (1/10 - 1/11) = 0.5523, 0.5523 x 4096 = 2262.2 -> 2262 at 10
    per = rate_periods(95.93, 1e-3, 4096)
    assert (per == 10).sum() == 2262 and (per == 11).sum() == 4096 - 2262
    assert (1.0 / per).mean() * 1e3 == pytest.approx(95.93, rel=1e-4)
    with pytest.raises(NeuroedgeError, match="spikes per step"):
        rate_periods(1500.0, 1e-3, 256)


def test_truenorth_rows_count_the_published_event_rate():
    """A non-whole period (95.93 Hz) still yields the published events: rate x neurons x
    synapses per neuron, within the phase rounding of a 1 s run."""
    from dataclasses import replace

    from sim.validation import truenorth_rate_network
    m = next(r for r in load_table() if r.id == "truenorth-tcad15-95.93hz")
    small = replace(m, params={**m.params, "simulated_neurons": 1024})
    j, s, detail = truenorth_rate_network(small)
    # 1,048,576 x 95.93 Hz x 128 synapses x 1 s = 1.2876e10 events
    assert "mean rate 95.9" in detail
    events = 1.0 / s          # the run lasts 1 s of real time: seconds per event = 1 / events
    assert events == pytest.approx(1_048_576 * 95.93 * 128, rel=2e-3)
    # 2.5 pJ per event + 63.1 mW static over 1 s spread on the events
    assert j == pytest.approx(2.5e-12 + 0.0631 / events, rel=1e-9)


def test_results_page_quotes_the_truenorth_rows():
    """bench/RESULTS.md's issue-29 neuromorphic table is this run's ratios (3 digits)."""
    from pathlib import Path
    ids = [r.id for r in load_table() if r.profile == "truenorth"]
    assert len(ids) == 6
    text = (Path(__file__).resolve().parents[2] / "bench" / "RESULTS.md").read_text()
    for r in validate(only=set(ids)):
        line = (f"| `{r.id}` | {r.group} | {r.predicted_j * 1e12:.3g} | "
                f"{r.measured_j * 1e12:.3g} | {r.ratio:.3g} |")
        assert line in text, line


def test_cpu_row_is_the_profile_arithmetic():
    m = next(r for r in load_table() if r.id == "cpu-kws-blouw2019")
    row = validate_one(m)
    # the same counts priced by hand: rebuild the ledger and price it on the profile
    import torch

    from sim.torch_engine import TorchDevice
    assert m.profile == "xeon-e5-2630" and m.part == "same"   # the measured part's profile
    net, x = TORCH_WORKLOADS["mlp"](m.params)
    dev = TorchDevice(m.profile)
    net = dev.compile(net)
    with torch.no_grad(), dev.count("infer", samples=1):
        net(dev.tensor(x))
    assert dev.ledger.total_ops()["mac_fp32"] == 390 * 256 + 256 * 256 + 256 * 29  # 172,800
    report = price(dev.ledger, m.profile)
    # like for like: Blouw's 0.0063 J is running minus idle power, so the prediction drops
    # the idle power the model charges over busy and launch time (static + overhead lines)
    idle = sum(c.energy_j for c in report.charges if c.category in ("static", "overhead"))
    assert m.idle_subtracted and idle > 0
    assert row.predicted_j == pytest.approx(report.total_j - idle, rel=1e-12)
    assert row.ratio == pytest.approx(row.predicted_j / 0.0063, rel=1e-12)


def test_stacks_price_dispatch_and_are_checked():
    """eager charges launch_s per counted launch, graph none; an unknown stack is refused."""
    import torch

    from hw_profiles import load
    from hw_profiles.errors import NeuroedgeError
    from sim.torch_engine import TorchDevice
    net, x = TORCH_WORKLOADS["mlp"]({"layers": [390, 256, 256, 29], "batch": 1})
    dev = TorchDevice("x86-avx2")
    net = dev.compile(net)
    with torch.no_grad(), dev.count("infer", samples=1):
        net(dev.tensor(x))
    eager = price(dev.ledger, "x86-avx2")
    graph = price(dev.ledger, "x86-avx2", stack="graph")
    assert (eager.stack, graph.stack) == ("eager", "graph")
    k = dev.ledger.total_ops()["kernel_launch"]
    launch_s = load("x86-avx2").execution["launch_s"].value
    # the only difference is k launches x launch_s of time (and idle power over it)
    assert eager.total_latency_s - graph.total_latency_s == pytest.approx(k * launch_s,
                                                                         rel=1e-9)
    assert not [c for c in graph.charges if c.category == "overhead"]
    with pytest.raises(NeuroedgeError, match="not a software stack"):
        price(dev.ledger, "x86-avx2", stack="tensorrt")


def test_heldout_factors_leave_calibration_rows_out():
    from sim.validation import ValidationRow, heldout_factors

    def row(i, group, pred, meas):
        return ValidationRow(i, "bitwise", "cortex-m4", group, "same", "inference", "ok",
                             meas, pred, meas, pred, "", "")
    rows = [row("a", "held-out", 2.0, 1.0), row("b", "held-out", 1.0, 4.0),
            row("c", "held-out", 1.5, 1.0), row("cal", "calibration", 100.0, 1.0)]
    out = heldout_factors(rows)
    # factors max(r, 1/r): 2, 4, 1.5 -> median 2, worst 4; the calibration row's 100 is out
    assert out["heldout_rows"] == 3 and out["calibration_rows"] == 1
    assert out["energy_median_factor"] == pytest.approx(2.0)
    assert out["energy_worst_factor"] == pytest.approx(4.0)
    assert out["latency_worst_factor"] == pytest.approx(4.0)


def test_rows_without_published_activity_are_not_estimated():
    rows = {r.id: r for r in validate(only={"loihi-kws-blouw2019"})}
    r = rows["loihi-kws-blouw2019"]
    assert r.status == "not rebuildable" and r.predicted_j is None and r.ratio is None
    assert "not published" in r.detail


def test_summarise_groups_and_log_ratios():
    from sim.validation import ValidationRow

    def mk(i, g, p, m):
        return ValidationRow(i, "gpu", "a100", g, "same", "inference", "ok", m, p, None,
                             None, "", "")
    rows = [mk("a", "held-out", 3.0, 1.0), mk("b", "held-out", 1.0, 10.0),
            mk("c", "calibration", 1.0, 1.0)]
    s = summarise(rows)
    # |log10 3| = 0.4771, |log10 0.1| = 1; median over the held-out pair = 0.7386
    assert s["held-out"]["max_abs_log10"] == pytest.approx(1.0)
    assert s["held-out"]["median_abs_log10"] == pytest.approx((0.47712125 + 1.0) / 2)
    assert s["held-out"]["within_3x"] == 1
    assert s["calibration"]["median_abs_log10"] == 0.0
    assert s["rows"] == 3 and s["kinds"] == ["gpu"]


def test_kind_errors_are_held_out_medians():
    from sim.validation import ValidationRow, kind_errors

    def row(kind, group, ratio):
        return ValidationRow("r", kind, "p", group, "same", "inference", "ok", 1.0,
                             None if ratio is None else ratio, None, None, "", "")
    rows = [row("bitwise", "held-out", 0.5), row("bitwise", "held-out", 0.6),
            row("bitwise", "held-out", 2.0), row("bitwise", "calibration", 1.0),
            row("gpu", "held-out", None), row("neuromorphic", "calibration", 1.0)]
    # |0.5 - 1| = 0.5, |0.6 - 1| = 0.4, |2 - 1| = 1: median 0.5; calibration rows left out,
    # a kind with no held-out prediction has no entry
    assert kind_errors(rows) == {"bitwise": {"rows": 3, "median_rel_error": 0.5,
                                             "min_ratio": 0.5, "max_ratio": 2.0}}


def _same(shipped: dict, fresh: dict) -> bool:
    """Equal factor tables: floats to 1e-9 relative, anything else (None where no row gives
    latency, counts, the lists of device kinds and profiles) exactly."""
    return set(shipped) == set(fresh) and all(
        shipped[k] == pytest.approx(fresh[k], rel=1e-9) if isinstance(fresh[k], float)
        else shipped[k] == fresh[k] for k in fresh)


def test_shipped_validation_summary_is_current():
    """The per-kind errors every report shows equal a fresh validation run (rewrite with
    python bench/validate.py --write-summary when the models or profiles change)."""
    import json

    from hw_profiles.validation import SUMMARY_PATH, kind_summary
    from sim.validation import heldout_factors, kind_errors, validate
    rows = validate()
    fresh = kind_errors(rows)
    shipped = kind_summary()
    factors = json.loads(SUMMARY_PATH.read_text())["kind_factors"]
    fresh_factors = heldout_factors(rows)["kind_factors"]
    assert set(factors) == set(fresh_factors)
    for kind, v in fresh_factors.items():
        assert _same(factors[kind], v), kind
    # the headline held-out figures README.md and docs/pricing.md quote
    doc = json.loads(SUMMARY_PATH.read_text())
    fresh_held = heldout_factors(rows)
    for key, v in doc["heldout"].items():
        assert v == (pytest.approx(fresh_held[key], rel=1e-9)
                     if isinstance(v, float) else fresh_held[key]), key
    # per kind and stack (what a report priced for that stack shows)
    stacks = json.loads(SUMMARY_PATH.read_text())["stacks"]
    fresh_stacks = heldout_factors(rows)["stack_factors"]
    assert set(stacks) == set(fresh_stacks) and "stm32l4r5/xcube-ai-9.0" in stacks
    for key, v in fresh_stacks.items():
        assert _same(stacks[key], v), key
    # per profile (what a neuromorphic report shows)
    profiles = json.loads(SUMMARY_PATH.read_text())["profiles"]
    fresh_profiles = heldout_factors(rows)["profile_factors"]
    assert set(profiles) == set(fresh_profiles) and "truenorth" in profiles
    for key, v in fresh_profiles.items():
        assert _same(profiles[key], v), key
    # per device kind (a report's validation error and whose rows it is) and each profile's
    # device kind (error_rows)
    device_kinds = json.loads(SUMMARY_PATH.read_text())["device_kinds"]
    fresh_device_kinds = heldout_factors(rows)["device_kind_factors"]
    assert set(device_kinds) == set(fresh_device_kinds)
    for key, v in fresh_device_kinds.items():
        assert _same(device_kinds[key], v), key
    assert doc["profile_device_kinds"] == heldout_factors(rows)["profile_device_kinds"]
    assert set(shipped) == set(fresh)
    for kind, v in fresh.items():
        assert shipped[kind]["rows"] == v["rows"]
        for key in ("median_rel_error", "min_ratio", "max_ratio"):
            assert shipped[kind][key] == pytest.approx(v[key], rel=1e-6), (kind, key)


def test_reports_carry_their_kinds_validation_error():
    from hw_profiles.validation import kind_summary
    from sim.ledger import Ledger
    led = Ledger()
    led.add("mac_fp32", 10, scope="infer")
    gpu = price(led, "a100")
    # no row prices a100: its figure is the gpu-profile rows', named by their device kinds
    assert gpu.validation_error == pytest.approx(kind_summary()["gpu"]["median_rel_error"])
    assert any(n.startswith("validation (edge-gpu, gpu, vpu rows on jetson-orin, jetson-tx1, "
                            "movidius-ncs, quadro-k4000; none on a100): 4 held-out ")
               for n in gpu.notes)
    # the held-out factors of the kind: no a100 row is priced for eager, so all gpu-kind rows
    # on every profile and stack: the Orin (fused), Quadro K4000 and Jetson TX1
    # (tf1-session) and Movidius NCS (graph) rows = 4, factor max(r, 1/r) >= 1 either way
    assert gpu.stack == "eager"
    assert gpu.validation["stack"] == "all stacks" and gpu.validation["rows"] == 4
    assert gpu.validation["energy_median_factor"] >= 1.0
    assert any("held-out error for edge-gpu, gpu, vpu rows/all stacks (4 rows on jetson-orin, "
               "jetson-tx1, movidius-ncs, quadro-k4000; none on a100): energy x" in n
               for n in gpu.notes)
    # a report on the K4000 for the stack its row ran shows that row's own error
    k4000 = price(led, "quadro-k4000", stack="tf1-session")
    assert k4000.validation["profile"] == "quadro-k4000" and k4000.validation["rows"] == 1
    assert price(led, "quadro-k4000").validation["stack"] == "all stacks"   # eager: none
    # a neuromorphic report shows its own profile's held-out rows only: TrueNorth's five
    # (Akopyan 2015), none for Loihi, whose estimate TrueNorth's rows say nothing of
    spiking = Ledger()
    spiking.add("synop", 10, scope="infer")
    assert price(spiking, "loihi").validation_error is None
    assert price(spiking, "loihi").validation is None
    tn = price(spiking, "truenorth")
    assert tn.validation["profile"] == "truenorth" and tn.validation["rows"] == 5
    assert tn.validation["latency_median_factor"] is None     # energy only: real time
    assert 0 <= tn.validation_error < 0.1
    assert any(n.startswith("validation (truenorth): held-out error for truenorth (5 rows): "
                            "energy x") for n in tn.notes)


def test_malformed_summary_is_a_one_line_error(tmp_path):
    from hw_profiles.errors import ProfileError
    from hw_profiles.validation import kind_summary
    bad = tmp_path / "s.json"
    bad.write_text('{"kinds": {"gpu": {"rows": 1}}}')
    with pytest.raises(ProfileError, match=r"s.json: not a validation summary \(KeyError"):
        kind_summary(bad)
    assert kind_summary(tmp_path / "absent.json") == {}


def test_idle_power_during_launches_is_never_dynamic():
    """Eager launches on a cpu profile charge idle power over the dispatch time (overhead):
    reports keep it apart from dynamic energy (issue 29 item 7)."""
    import torch

    from hw_profiles import load
    from sim.torch_engine import TorchDevice
    net, x = TORCH_WORKLOADS["mlp"]({"layers": [390, 256, 256, 29], "batch": 1})
    dev = TorchDevice("x86-avx2")
    net = dev.compile(net)
    with torch.no_grad(), dev.count("infer", samples=1):
        net(dev.tensor(x))
    rep = price(dev.ledger, "x86-avx2")
    k = dev.ledger.total_ops()["kernel_launch"]
    prof = load("x86-avx2")
    # k launches x launch_s of idle time at the idle (static) power
    idle = k * prof.execution["launch_s"].value * prof.static_power_w.value
    assert rep.launch_idle_j == pytest.approx(idle, rel=1e-9) and idle > 0
    assert rep.dynamic_j == pytest.approx(rep.total_j - rep.static_j - idle, rel=1e-12)
    from deploy.formatting import comparison_rows
    row = comparison_rows([rep])[0]
    assert row["dynamic_j"] + row["static_j"] + row["launch_idle_j"] == \
        pytest.approx(row["total_j"], rel=1e-12)


def test_estimate_table_shows_each_profiles_held_out_error():
    """Each priced profile gets one line: the held-out error of its kind and stack and
    whether the figures are an estimate or a bound (issue 29 item 7)."""
    from deploy.estimate_text import error_lines
    from sim.ledger import Ledger
    led = Ledger()
    led.add("mac_int8", 1000, scope="infer")
    reports = {"stm32l4r5": price(led, "stm32l4r5"), "loihi": price(Ledger(), "loihi")}
    lines = error_lines(reports)
    # the L4R5's default stack, X-CUBE-AI 9.0, has held-out rows (VWW and IC of v1.2; its
    # AD row calibrates dense_cycles)
    assert lines[0].startswith("error stm32l4r5 (stack xcube-ai-9.0, the default; figures: "
                               "estimate): held-out error for stm32l4r5/xcube-ai-9.0 (2 rows): "
                               "energy x")
    assert "latency x" in lines[0]
    assert lines[1].startswith("error loihi") and "error unknown" in lines[1]


def test_docs_quote_the_shipped_held_out_figures():
    """README.md and docs/pricing.md quote the held-out figures of the committed summary
    (bench/validate.py --write-summary), formatted to 3 significant digits: a change of the
    table or the models that moves them fails here until the pages are updated."""
    import json
    from pathlib import Path

    from hw_profiles.validation import SUMMARY_PATH
    doc = json.loads(SUMMARY_PATH.read_text())
    h, mcu = doc["heldout"], doc["device_kinds"]["mcu"]

    def g(x):
        return f"{x:.3g}"
    overall = (f"held-out: {h['heldout_rows']} rows, {len(h['kinds'])} device kinds "
               f"({', '.join(h['kinds'])}); energy factor {g(h['energy_median_factor'])} "
               f"median, {g(h['energy_worst_factor'])} worst; latency factor "
               f"{g(h['latency_median_factor'])} median, {g(h['latency_worst_factor'])} worst")
    micro = (f"mcu: {mcu['rows']} rows; energy factor {g(mcu['energy_median_factor'])} median, "
             f"{g(mcu['energy_worst_factor'])} worst; latency factor "
             f"{g(mcu['latency_median_factor'])} median, {g(mcu['latency_worst_factor'])} worst")
    nm = doc["device_kinds"]["neuromorphic"]
    # TrueNorth runs in real time: its rows publish no latency, so none is quoted
    assert nm["latency_median_factor"] is None
    neuro = (f"neuromorphic: {nm['rows']} rows; energy factor "
             f"{g(nm['energy_median_factor'])} median, {g(nm['energy_worst_factor'])} worst")
    root = Path(__file__).resolve().parents[2]
    for page in ("README.md", "docs/pricing.md"):
        text = (root / page).read_text()
        assert overall in text, (page, overall)
        assert micro in text, (page, micro)
        assert neuro in " ".join(text.split()), (page, neuro)
    # bench/RESULTS.md's issue-29 neuromorphic section quotes the same summary
    results = " ".join((root / "bench" / "RESULTS.md").read_text().split())
    assert overall in results and neuro in results


def test_movidius_row_runs_the_network_in_fp16_on_the_graph_stack():
    """The NCSDK compiles the network to fp16 and runs it on the stick: the row's fp32 counts
    are re-typed (MACs to mac_fp16, bytes halved) and priced without per-op host dispatch."""
    from sim.precision import retyped_fp16
    from sim.validation import torch_ledger
    m = next(r for r in load_table() if r.id == "movidius-ncs-kws-blouw2019")
    fp32 = next(r for r in load_table() if r.id == "gpu-kws-blouw2019")
    ledger, n, detail = torch_ledger(m)
    ref, _, _ = torch_ledger(fp32)
    assert n == 1 and "re-typed to fp16" in detail
    ops = ledger.total_ops()
    assert "mac_fp32" not in ops and ops["mac_fp16"] == 390 * 256 + 256 * 256 + 256 * 29
    # 172,800 weights x 4 B of fp32 become x 2 B: every byte count halved (rounded up)
    assert sum(ledger.total_bytes().values()) == sum(-(-v // 2) for s in ref.scopes()
                                                     for v in ref.bytes(s).values())
    assert retyped_fp16(ref).total_ops() == ops
    row = validate_one(m)
    assert row.stack == "graph" and "stack graph" in row.detail
    report = price(ledger, "movidius-ncs", stack="graph")
    idle = sum(c.energy_j for c in report.charges if c.category in ("static", "overhead"))
    # graph stack: no launch time, so no overhead line; only the busy time's idle power
    assert not [c for c in report.charges if c.category == "overhead"]
    assert row.predicted_j == pytest.approx(report.total_j - idle, rel=1e-12)


def test_neuromorphic_reports_get_only_their_own_profiles_rows(tmp_path):
    """heldout_error: a gpu report with no row of its own gets the kind's rows (and says so);
    a neuromorphic one gets its own profile's rows or None (PER_PROFILE_KINDS)."""
    import json

    from hw_profiles.validation import heldout_error
    f = {"rows": 2, "energy_median_factor": 1.5, "energy_worst_factor": 2.0,
         "latency_median_factor": None, "latency_worst_factor": None}
    path = tmp_path / "summary.json"
    rel = {"rows": 2, "median_rel_error": 0.5, "min_ratio": 0.5, "max_ratio": 1.5}
    whose = {"device_kinds": ["gpu"], "profiles": ["quadro-k4000"]}
    path.write_text(json.dumps({"kinds": {"gpu": rel, "neuromorphic": rel},
                                "kind_factors": {"gpu": {**f, **whose},
                                                 "neuromorphic": {**f, **whose}},
                                "device_kinds": {}, "stacks": {},
                                "profiles": {"truenorth": f}, "profile_device_kinds": {}}))
    gpu = heldout_error("gpu", "eager", path, profile="a100")
    assert gpu["stack"] == "all stacks" and gpu["asked"] == "eager"
    assert gpu["measured"] is False and gpu["profiles"] == ["quadro-k4000"]
    tn = heldout_error("neuromorphic", "", path, profile="truenorth")
    assert tn["profile"] == "truenorth" and tn["rows"] == 2 and "asked" not in tn
    assert heldout_error("neuromorphic", "", path, profile="loihi") is None


def _hand_row(rid: str, **kw):
    from sim.validation import ValidationRow
    base = dict(id=rid, kind="gpu", profile="jetson-orin", group="held-out", part="same",
                per="inference", status="ok", measured_j=1.0, predicted_j=1.0,
                measured_latency_s=None, predicted_latency_s=None, detail="d", source="s",
                stack="fused", device_kind="edge-gpu")
    return ValidationRow(**{**base, **kw})


def test_format_rows_pads_ids_to_the_longest():
    """Ids up to 32 characters (l4r5-kws-microtvm-cmsis-nn-v1.0 and the like) pushed every
    later column of their line out of line when ids were padded to 28: each column now
    starts where its header does."""
    from sim.validation import format_rows
    long_id = "l4r5-kws-microtvm-cmsis-nn-v1.0x"          # 32 characters
    assert len(long_id) == 32
    lines = format_rows([_hand_row("short"), _hand_row(long_id)]).splitlines()
    head, rows = lines[0], lines[2:4]
    # id padded to 32, one space: "kind" at column 33, "profile" 12 + 1 further at 46
    assert head.index("kind") == 33 and head.index("profile") == 46
    for line in rows:
        assert line.index("gpu") == 33 and line.index("jetson-orin") == 46
    # the shipped ids of at most 28 characters keep the old layout
    assert format_rows([_hand_row("short")]).splitlines()[0].index("kind") == 29


def test_validate_refuses_an_unknown_row_id():
    """validate(only={...}) with an id the table lacks ran nothing and returned [] (read as
    a pass by bench/validate.py): now one line naming it and the known ids."""
    from hw_profiles.errors import NeuroedgeError
    with pytest.raises(NeuroedgeError, match=r"^validation row id\(s\) 'bogus-row': no such "
                                             r"row in the validation table; rows are "
                                             r"cpu-kws-blouw2019, .*truenorth-rate-20hz"):
        validate(only={"bogus-row", "truenorth-rate-20hz"})


def test_heldout_factors_name_each_kinds_rows_and_each_profiles_device_kind():
    """Per device kind: its median |r - 1|, ratio range and profiles; per profile kind: the
    device kinds and profiles of its rows; each profile's device kind, calibration rows too.
    Two edge-gpu rows at r = 1.2 and 0.5: median |r - 1| of 0.2 and 0.5 = 0.35, factors
    max(r, 1/r) 1.2 and 2 -> median 1.6; a K4000 row at 0.25 (|r - 1| 0.75, factor 4)."""
    from sim.validation import heldout_factors
    rows = [_hand_row("orin", predicted_j=1.2),
            _hand_row("tx1", profile="jetson-tx1", predicted_j=0.5, stack="tf1-session"),
            _hand_row("k4000", profile="quadro-k4000", device_kind="gpu", predicted_j=0.25,
                      stack="tf1-session"),
            _hand_row("h7a3", kind="bitwise", profile="stm32h7a3", device_kind="mcu",
                      group="calibration", predicted_j=2.0, stack="xcube-ai-7.3")]
    held = heldout_factors(rows)
    edge = held["device_kind_factors"]["edge-gpu"]
    assert edge["rows"] == 2 and edge["profiles"] == ["jetson-orin", "jetson-tx1"]
    assert edge["median_rel_error"] == pytest.approx(0.35, rel=1e-12)
    assert (edge["min_ratio"], edge["max_ratio"]) == (0.5, 1.2)
    assert edge["energy_median_factor"] == pytest.approx(1.6, rel=1e-12)
    assert held["device_kind_factors"]["gpu"]["median_rel_error"] == pytest.approx(0.75)
    gpu = held["kind_factors"]["gpu"]
    assert gpu["device_kinds"] == ["edge-gpu", "gpu"] and gpu["rows"] == 3
    assert gpu["profiles"] == ["jetson-orin", "jetson-tx1", "quadro-k4000"]
    assert "bitwise" not in held["kind_factors"]        # calibration rows never enter it
    assert held["profile_device_kinds"] == {"jetson-orin": "edge-gpu", "jetson-tx1": "edge-gpu",
                                            "quadro-k4000": "gpu", "stm32h7a3": "mcu"}


def test_pricing_doc_says_whose_rows_and_that_the_orin_row_is_not_like_for_like():
    """docs/pricing.md states the device-kind rule of a report's validation error (an
    fpga-bnn report shows the STM32 boards' mcu rows and says none ran on it) and that the
    Orin row compares a module at MAXN with a developer kit at the wall at MaxQ."""
    from pathlib import Path
    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "pricing.md")
                    .read_text().split())
    assert "mcu rows on stm32h7a3, stm32l4r5; none on fpga-bnn" in text
    assert "`hw_profiles.validation.error_rows`" in text
    assert ("`jetson-orin` prices the module at MAXN (60 W board power, 2.18 W idle), while "
            "MLPerf measured the whole developer kit at the wall in the MaxQ configuration"
            ) in text
