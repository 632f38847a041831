"""The headline says how sure each figure is (issue 35 item 5): estimate or lower bound, the
held-out error of the profile's kind and stack beside it, idle power during launches never
called dynamic (deploy/headline.py)."""
import json
import re
from dataclasses import replace
from types import SimpleNamespace

import pytest

import hw_profiles
from deploy import headline as hl
from hw_profiles.validation import SUMMARY_PATH
from sim.ledger import Ledger
from sim.pricing import price

NO_METRICS = SimpleNamespace(metrics={}, model="nobody", main_metric=None)


def _factors(text: str, quantity: str) -> tuple[float, float]:
    m = re.search(rf"held-out {quantity} error x([\d.]+) median, x([\d.]+) worst", text)
    assert m, text
    return float(m[1]), float(m[2])


def test_headline_error_is_the_validation_summarys(toy_gpu_text):
    """The factors beside each figure are the shipped summary's, for the profile's kind (the
    toy gpu has no held-out row of its own, so all gpu rows: kind_factors.gpu)."""
    led = Ledger()
    led.add("mac_fp32", 1000, scope="infer")
    led.add_samples(10, scope="infer")
    led.add("mac_fp32", 500, scope="train")
    led.add_samples(5, scope="train")
    rows = dict(hl.headline(NO_METRICS, [price(led, hw_profiles.loads(toy_gpu_text))]))
    gpu = json.loads(SUMMARY_PATH.read_text())["kind_factors"]["gpu"]
    for label in ("total energy", "energy per inference", "energy per train sample"):
        median, worst = _factors(rows[label], "energy")
        # two significant digits (whole numbers from 100 up): within 5% of the summary's
        assert median == pytest.approx(gpu["energy_median_factor"], rel=0.05), label
        assert worst == pytest.approx(gpu["energy_worst_factor"], rel=0.05), label
        assert ", estimate" in rows[label]
    median, worst = _factors(rows["latency"], "latency")
    assert median == pytest.approx(gpu["latency_median_factor"], rel=0.05)
    assert worst == pytest.approx(gpu["latency_worst_factor"], rel=0.05)
    # whose rows: the device kinds of the gpu-profile rows (no toy-gpu row: the Orin and TX1
    # edge GPUs, the NCS VPU and the K4000), never "gpu" for all four
    assert gpu["device_kinds"] == ["edge-gpu", "gpu", "vpu"]
    assert f"(edge-gpu, gpu, vpu rows/all stacks, {gpu['rows']} rows)" in rows["total energy"]


def test_time_built_as_a_lower_bound_makes_energy_and_latency_lower_bounds():
    """Ops counted outside the engine's steps on loihi2: their time is an ideal spread over
    all cores (a lower bound), so the static energy over it is one too."""
    led = Ledger()
    led.add("synop", 1000, scope="infer")
    led.add_samples(4, scope="infer")
    report = price(led, hw_profiles.load("loihi2"))
    assert report.bound == "estimate"           # what the execution model says of itself
    assert report.latency_bound("infer") == report.energy_bound("infer") == "lower bound"
    rows = dict(hl.headline(NO_METRICS, [report]))
    # 1000 synop x 6.84 pJ = 6.84 nJ; + static 0.0539 W x 3.03 ns = 163 pJ -> 7.01 nJ / 4
    assert rows["energy per inference"].startswith("1.75 nJ, lower bound (infer: 4 samples)")
    assert rows["total energy"].startswith("7.01 nJ on loihi2, lower bound: dynamic 6.84 nJ")
    assert rows["latency"].startswith("3.03 ns whole run, lower bound; infer 3.03 ns, "
                                      "lower bound")
    # no held-out row of loihi2 (TrueNorth's say nothing of it): the error is said to be
    # unknown, not left out
    assert ("energy error unknown: no held-out neuromorphic measurement of loihi2"
            in rows["total energy"])
    row = hl.profile_row(report, report)
    assert row["per_inference_bound"] == row["latency_bound"] == "lower bound"


def test_no_static_energy_over_a_lower_bound_time_leaves_the_energy_an_estimate():
    """A lower-bound time with no static power charged over it: the energy is no bound."""
    led = Ledger()
    led.add("synop", 1000, scope="infer")
    report = price(led, hw_profiles.load("loihi2"))
    no_static = replace(report, charges=tuple(c for c in report.charges
                                              if c.category != "static"))
    assert no_static.latency_bound("infer") == "lower bound"
    assert no_static.energy_bound("infer") == "estimate"


def test_idle_during_launches_is_never_dynamic(toy_gpu_text):
    led = Ledger()
    led.add("mac_fp32", 1000, scope="infer")
    led.add("kernel_launch", 2, scope="infer")
    led.add_samples(1, scope="infer")
    report = price(led, hw_profiles.loads(toy_gpu_text))
    total = dict(hl.headline(NO_METRICS, [report]))["total energy"]
    # toy-gpu: 1000 mac x 2 pJ = 2 nJ of work; 2 launches x 1 us x idle 1 W = 2 uJ idle
    assert report.launch_idle_j == pytest.approx(2e-6)
    assert report.dynamic_j == pytest.approx(2e-9)
    assert "dynamic 2 nJ" in total and "idle during launches 2 uJ" in total
