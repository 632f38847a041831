"""Tests of deploy/report.py: unit formatting, terminal and comparison tables, HTML report.

Every figure is checked against hand arithmetic on tests/data/toy-gpu.toml:
mac_fp32 2 pJ, flop_fp32 1 pJ, offchip read 10 pJ/B, write 20 pJ/B, static 1 W,
throughput 1e12 op/s for both ops, offchip bandwidth 1e11 B/s.

The ledger used throughout:

- ``infer``: mac_fp32 1000, flop_fp32 100, offchip read 4000 B / write 400 B, 10 samples,
  3 uncounted calls of ``aten::weird``;
- ``train`` (5 samples) with sub-scope ``train/fc1``: mac_fp32 500.

Hand arithmetic on toy-gpu:

- infer dynamic = 1000 x 2 + 100 x 1 + 4000 x 10 + 400 x 20 pJ = 50 100 pJ = 50.1 nJ;
  compute time = 1100 / 1e12 = 1.1 ns, memory time = 4400 / 1e11 = 44 ns -> latency 44 ns
  (memory bound); static = 1 W x 44 ns = 44 nJ; infer total 94.1 nJ, 9.41 nJ/sample.
- train/fc1 dynamic = 500 x 2 pJ = 1 nJ; latency 500 / 1e12 = 0.5 ns; static 0.5 nJ;
  train total 1.5 nJ, 1.5 nJ / 5 samples = 300 pJ/sample.
- run: dynamic 51.1 nJ, static 44.5 nJ, total 95.6 nJ, latency 44.5 ns;
  compute 2.1 + 1 = 3.1 nJ (3.2%), memory 40 + 8 = 48 nJ (50.2%), static 44.5 nJ (46.5%).
"""
import base64
import json
import math
import re

import numpy as np
import pytest
from conftest import TOY_GPU as TOY  # noqa: E402

import hw_profiles
from deploy import report as rp
from models.registry import RunFile, RunResult
from sim.ledger import Ledger
from sim.pricing import price
from sim.traces import Trace, curve


@pytest.fixture
def ledger():
    led = Ledger()
    with led.scope("infer"):
        led.add("mac_fp32", 1000)
        led.add("flop_fp32", 100)
        led.add_bytes("offchip", read=4000, write=400)
        led.add_samples(10)
        led.add_uncounted("aten::weird", 3)
    with led.scope("train"):
        led.add_samples(5)
        with led.scope("fc1"):
            led.add("mac_fp32", 500)
    return led


@pytest.fixture
def toy():
    # from text: labelled by its name, as a shipped profile is (a file's label carries its
    # path: test_comparison_table_with_file_labels)
    return hw_profiles.loads(TOY.read_text())


@pytest.fixture
def toy2x(tmp_path):
    """toy-gpu with mac_fp32 at 4 pJ instead of 2 pJ."""
    text = TOY.read_text()
    old = 'mac_fp32 = { value = 2.0, unit = "pJ"'
    assert text.count(old) == 1  # the fixture edit below must hit exactly one line
    text = text.replace(old, 'mac_fp32 = { value = 4.0, unit = "pJ"')
    text = text.replace('name = "toy-gpu"', 'name = "toy-gpu-2x"')
    return hw_profiles.loads(text)


@pytest.fixture
def run(ledger, toy):
    return RunResult(model="mlp", profile=toy, dataset="digits",
               config={"hidden": [32], "lr": 0.001, "note": "<script>alert(1)</script>"},
               metrics={"test_accuracy": 0.9611, "parameters": 2410.0}, ledger=ledger,
               traces={"train_loss": curve(np.linspace(2.0, 0.1, 30), "nats"),
                       "spikes": Trace("table", np.arange(12, dtype=np.int64).reshape(3, 4)
                                       * 1000, "spikes", ("a", "b", "c", "d"))},
               preset="full", facts={"n_inputs": 64, "torch_device": "cpu"},
               file=RunFile(path="runs/run.h5", format_version=3,
                            created="2024-05-06T07:08:09+00:00",
                            versions={"python": "3.12.0", "numpy": "2.0.0"}))


def rows_of(text: str, title: str) -> dict[str, list[str]]:
    """The rows of the rich table titled ``title``: first cell -> the other words."""
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.strip() == title)
    i = next(k for k in range(i, len(lines)) if "───" in lines[k]) + 1  # below the header
    rows = {}
    while i < len(lines) and lines[i].strip():
        words = lines[i].split()
        rows[words[0]] = words[1:]
        i += 1
    return rows


# -- formatting --------------------------------------------------------------------------------
@pytest.mark.parametrize("joules, text", [
    (50.1e-9, "50.1 nJ"), (44e-9, "44 nJ"), (2e-12, "2 pJ"), (0.5e-12, "0.5 pJ"),
    (999.96e-12, "1 nJ"),  # rounds to 3 digits before choosing the prefix
    (7.5e-6, "7.5 uJ"), (3.14159e-3, "3.14 mJ"), (1.2345, "1.23 J"), (12345.0, "12300 J"),
    (0.0, "0 J"), (-2e-9, "-2 nJ")])
def test_format_energy(joules, text):
    assert rp.format_energy(joules) == text


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (400, "400 B"), (4400, "4.4 kB"), (999_999, "1 MB"), (1_500_000, "1.5 MB"),
    (2e9, "2 GB")])
def test_format_bytes(n, text):
    assert rp.format_bytes(n) == text


@pytest.mark.parametrize("s, text", [
    (44e-9, "44 ns"), (1.1e-9, "1.1 ns"), (2.5e-5, "25 us"), (0.0123, "12.3 ms"), (3.0, "3 s"),
    (0.0, "0 s")])
def test_format_seconds(s, text):
    assert rp.format_seconds(s) == text


# -- aggregates --------------------------------------------------------------------------------
def test_energy_breakdown_fixed_order_and_values(ledger, toy):
    out = rp.energy_breakdown(price(ledger, toy))
    assert list(out) == ["compute", "communication", "learning", "memory", "static",
                         "overhead"]
    # compute 2000 + 100 + 1000 pJ; memory 40 000 + 8 000 pJ; static 1 W x (44 + 0.5) ns;
    # no kernel launches counted, so no overhead
    assert out == pytest.approx({"compute": 3.1e-9, "communication": 0.0, "learning": 0.0,
                                 "memory": 48e-9, "static": 44.5e-9, "overhead": 0.0},
                                rel=1e-12, abs=1e-21)


def test_comparison_rows_two_profiles(ledger, toy, toy2x):
    rows = rp.comparison_rows([price(ledger, toy), price(ledger, toy2x)])
    assert [r["profile"] for r in rows] == ["toy-gpu", "toy-gpu-2x"]
    a, b = rows
    assert a["total_j"] == pytest.approx(95.6e-9)
    assert a["dynamic_j"] == pytest.approx(51.1e-9)
    assert a["static_j"] == pytest.approx(44.5e-9)
    assert a["latency_s"] == pytest.approx(44.5e-9)
    assert a["infer J/sample"] == pytest.approx(9.41e-9)   # 94.1 nJ / 10
    assert a["train J/sample"] == pytest.approx(0.3e-9)    # 1.5 nJ / 5
    assert a["relative_energy"] == 1.0
    # 2x: mac_fp32 4 pJ: infer dynamic 4000 + 100 + 48 000 pJ = 52.1 nJ, train 2 nJ;
    # static unchanged (same latency) 44.5 nJ -> total 98.6 nJ
    assert b["dynamic_j"] == pytest.approx(54.1e-9)
    assert b["total_j"] == pytest.approx(98.6e-9)
    assert b["train J/sample"] == pytest.approx(0.5e-9)    # (500 x 4 pJ + 0.5 nJ) / 5
    assert b["relative_energy"] == pytest.approx(98.6 / 95.6)
    assert all(isinstance(v, float) for r in rows for k, v in r.items()
               if k not in ("profile", "kind"))


def test_comparison_rows_scope_missing_in_one_report_is_nan(toy):
    a, b = Ledger(), Ledger()
    with a.scope("infer"):
        a.add("flop_fp32", 100)
        a.add_samples(4)
    b.add("flop_fp32", 100, scope="train")
    ra, rb = rp.comparison_rows([price(a, toy), price(b, toy)])
    # 100 x 1 pJ + 1 W x 100 / 1e12 s = 100 pJ + 100 pJ = 200 pJ over 4 samples
    assert ra["infer J/sample"] == pytest.approx(50e-12)
    assert math.isnan(rb["infer J/sample"])


def test_comparison_rows_needs_a_report():
    with pytest.raises(rp.ReportError, match="no energy reports"):
        rp.comparison_rows([])


# -- terminal ----------------------------------------------------------------------------------
def test_terminal_report_figures(run, ledger, toy):
    text = rp.terminal_report(run, price(ledger, toy), width=100, full=True)
    assert "mlp" in text and "digits" in text and "2024-05-06T07:08:09+00:00" in text
    assert "toy-gpu (gpu)" in text
    assert "0.9611" in text
    # by category: J and %
    cat = rows_of(text, "Energy by category")
    assert cat["compute"] == ["3.1", "nJ", "3.2%"]
    assert cat["communication"] == ["0", "J", "0.0%"]
    assert cat["memory"] == ["48", "nJ", "50.2%"]
    assert cat["static"] == ["44.5", "nJ", "46.5%"]
    assert cat["total"] == ["95.6", "nJ", "100.0%"]
    # by op: count, each, J, %; largest first (static: 44.5 ns at 1 W)
    ops = rows_of(text, "Energy by op (summed over scopes)")
    assert list(ops) == ["static", "offchip:read", "offchip:write", "mac_fp32", "flop_fp32"]
    assert ops["static"] == ["44.5", "ns", "1", "W", "44.5", "nJ", "46.5%"]
    assert ops["offchip:read"] == ["4", "kB", "10", "pJ/B", "40", "nJ", "41.8%"]
    assert ops["offchip:write"] == ["400", "B", "20", "pJ/B", "8", "nJ", "8.4%"]
    assert ops["mac_fp32"] == ["1,500", "2", "pJ", "3", "nJ", "3.1%"]  # 1000 + 500 MACs
    assert ops["flop_fp32"] == ["100", "1", "pJ", "100", "pJ", "0.1%"]
    # scopes: 94.1 / 95.6 = 98.4%, 1.5 / 95.6 = 1.6%
    assert rows_of(text, "Energy by scope, depth 1 (incl. sub-scopes)") == {
        "infer": ["94.1", "nJ", "98.4%"], "train": ["1.5", "nJ", "1.6%"]}
    assert rows_of(text, "Energy by scope (own charges; sub-scopes apart)") == {
        "infer": ["94.1", "nJ", "98.4%"], "train/fc1": ["1.5", "nJ", "1.6%"]}
    assert rows_of(text, "Energy per sample (incl. sub-scopes)") == {
        "infer": ["10", "94.1", "nJ", "9.41", "nJ"], "train": ["5", "1.5", "nJ", "300", "pJ"]}
    assert rows_of(text, "Bytes moved") == {
        "offchip:read": ["4", "kB", "4,000"], "offchip:write": ["400", "B", "400"],
        "total": ["4.4", "kB", "4,400"]}
    # train holds only samples: no latency of its own, so no row
    assert rows_of(text, "Estimated latency (own, per scope)") == {
        "infer": ["44", "ns", "memory"], "train/fc1": ["0.5", "ns", "compute"],
        "total": ["44.5", "ns"]}


def test_terminal_report_uncounted_and_entries(run, ledger, toy):
    text = rp.terminal_report(run, price(ledger, toy), width=120, full=True, sources=True)
    assert "executed but not priced" in text
    assert re.search(r"aten::weird\s+3", text)
    assert "What these figures are" in text
    # aten::weird ran uncounted: the figures are a lower bound, and the table says why
    assert re.search(r"figures are\s+lower bound \(ops ran uncounted\)", text)
    for key in ("energy_pj.mac_fp32", "throughput.flop_fp32", "static.power_w",
                "memory.offchip.read_pj_per_byte", "memory.offchip.bandwidth_bytes_per_s"):
        assert key in text
    flat = " ".join(text.split())  # citations may wrap inside their cell
    assert "Test fixture: numbers chosen for hand arithmetic" in flat
    assert "[derived: chosen: 2 pJ]" in flat  # not swallowed as rich markup


def test_terminal_report_without_uncounted(toy):
    led = Ledger()
    led.add("flop_fp32", 10, scope="infer")
    r = RunResult(model="m", profile=toy, dataset="d", config={}, metrics={}, ledger=led)
    text = rp.terminal_report(r, price(led, toy), full=True)
    assert "Uncounted ops: none" in text and "executed but not priced" not in text
    assert "every executed op was priced" in rp.terminal_report(r, price(led, toy))


# -- the headline and the default terminal report (issue 14 item 4) ---------------------------
def _shipped_gpu_factors() -> dict[str, str]:
    """"x36 median, x239 worst" per quantity for the gpu kind, read from the shipped
    validation summary (all gpu held-out rows: the toy profile runs no stack of its own)."""
    from hw_profiles.validation import SUMMARY_PATH
    per_kind = json.loads(SUMMARY_PATH.read_text())["kind_factors"]["gpu"]

    def two_digits(x):   # 36.42 -> "36", 10.59 -> "11", 239.06 -> "239" (whole from 100 up)
        return f"{x:.0f}" if x >= 100 else f"{x:.2g}"
    return {q: f"x{two_digits(per_kind[q + '_median_factor'])} median, "
               f"x{two_digits(per_kind[q + '_worst_factor'])} worst"
            for q in ("energy", "latency")}


def test_headline_error_is_the_summarys(toy):
    """The factors beside a headline figure are the summary's for the profile's kind: a
    summary with gpu energy factors 2.345 / 12.5 and latency 150.4 / 151 reads
    "x2.3 median, x12 worst" and "x150 median, x151 worst" (two digits, whole from 100)."""
    from sim.pricing import error_factors
    err = {"energy_median_factor": 2.345, "energy_worst_factor": 12.5,
           "latency_median_factor": 150.4, "latency_worst_factor": 151.0}
    assert error_factors(err, "energy") == "x2.3 median, x12 worst"
    assert error_factors(err, "latency") == "x150 median, x151 worst"
    assert error_factors({"energy_median_factor": None}, "energy") is None
    led = Ledger()
    led.add("flop_fp32", 10, scope="infer")
    report = price(led, toy)
    assert report.validation["kind"] == "gpu"
    assert _shipped_gpu_factors()["energy"] in \
        dict(rp.headline(RunResult(model="m", profile=toy, dataset="d", config={},
                                   metrics={}, ledger=led), [report]))["total energy"]


def test_headline_figures(run, ledger, toy, toy2x):
    rows = dict(rp.headline(run, [price(ledger, toy), price(ledger, toy2x)]))
    assert list(rows) == ["test_accuracy", "total energy", "energy per inference",
                          "energy per train sample", "latency", "vs toy-gpu-2x"]
    assert rows["test_accuracy"] == "0.9611"   # unit "1": the number alone
    # aten::weird ran uncounted: every figure a lower bound, the gpu kind's held-out error
    # beside it (deploy.headline.heldout_text; the factors come from the shipped summary,
    # which bench/validate.py rewrites: test_headline_error_is_the_summarys)
    gpu = _shipped_gpu_factors()
    err = f"held-out energy error {gpu['energy']}"     # whose rows: said once, first
    assert rows["total energy"] == ("95.6 nJ on toy-gpu, lower bound: dynamic 51.1 nJ, "
                                    f"static 44.5 nJ; {err} (edge-gpu, gpu, vpu rows/all "
                                    "stacks, 4 rows)")
    assert rows["energy per inference"] == f"9.41 nJ, lower bound (infer: 10 samples); {err}"
    assert rows["energy per train sample"] == f"300 pJ, lower bound (train: 5 samples); {err}"
    # whole run 44 + 0.5 ns; infer alone 44 ns (memory bound)
    assert rows["latency"] == ("44.5 ns whole run, lower bound; infer 44 ns, lower bound; "
                               f"held-out latency error {gpu['latency']}")
    # 98.6 / 95.6 = 1.031 -> 1.03x; infer on 2x: 96.1 nJ / 10
    # each figure with how sure it is, as the run's own rows (the compared profile's
    # report has the same uncounted op: lower bounds too)
    assert rows["vs toy-gpu-2x"] == ("1.03x the energy (98.6 nJ, lower bound; latency "
                                     "44.5 ns, lower bound; 9.61 nJ per inference, lower "
                                     "bound)")


def test_headline_units_and_scopes_within_sub_scopes(toy):
    """Samples recorded only below the depth-1 scope (infer/L256, infer/L1024) count for it;
    a metric with a unit shows it; a file without units says so."""
    led = Ledger()
    led.add("flop_fp32", 100, scope="infer/L256")
    led.add_samples(3, scope="infer/L256")
    led.add("flop_fp32", 300, scope="infer/L1024")
    led.add_samples(1, scope="infer/L1024")
    r = RunResult(model="nobody", profile=toy, dataset="d", config={},
                  metrics={"loss": 1.5, "acc": 0.5}, ledger=led, units={"loss": "nats"},
                  main_metric="loss")
    rows = dict(rp.headline(r, [price(led, toy)]))
    assert rows["loss"] == "1.5 nats"
    # 400 flop x 1 pJ + static 1 W x 400 / 1e12 s = 800 pJ over 3 + 1 samples
    assert rows["energy per inference"].startswith("200 pJ, estimate (infer: 4 samples); ")
    assert rows["energy per train sample"] == "- (no training scope recorded samples)"
    r.units, r.main_metric = {}, None   # an older file: no units, no main metric
    assert rp.headline(r, [price(led, toy)])[0] == ("loss", "1.5 (unit not recorded)")


def test_default_terminal_report_leads_with_the_headline_and_fits(run, ledger, toy, toy2x):
    for width in (60, 80, 100):
        text = rp.terminal_report(run, price(ledger, toy), width=width,
                                  compared=[price(ledger, toy2x)])
        lines = text.splitlines()
        assert len(lines) <= 60 and max(map(len, lines)) <= width, width
        # the headline block (up to its blank line) holds every figure, near the top
        head = "\n".join(lines[:lines.index("")])
        assert len(head.splitlines()) <= (24 if width == 60 else 16), width
        for needle in ("0.9611", "95.6 nJ", "9.41 nJ", "300 pJ", "44.5 ns", "1.03x"):
            assert needle in head, (width, needle)
        assert "Test fixture: numbers chosen" not in text    # citations: --sources only
        assert "Comparison across profiles (vs toy-gpu)" in text
        # at 60 columns the headline (each figure with its bound and held-out error) wraps
        # to 2-3 lines a figure, and the category table is left out for space, saying so
        assert "incl. sub-scopes" in text
        assert ("Energy by category" in text if width >= 80
                else "Not shown for space: energy by category" in text)
    # a line limit is kept by leaving sections out, and saying which
    short = rp.terminal_report(run, price(ledger, toy), width=100, max_lines=20).splitlines()
    assert len(short) <= 20 and short[-2].startswith("Not shown for space: ")


def test_sources_append_the_citations(run, ledger, toy):
    text = rp.terminal_report(run, price(ledger, toy), width=100, sources=True)
    flat = " ".join(text.split())
    assert "Profile entries of toy-gpu" in text
    assert "Test fixture: numbers chosen for hand arithmetic" in flat
    assert "energy_pj.mac_fp32" in text


def test_metric_table_carries_units(run, ledger, toy):
    run.units = {"test_accuracy": "1", "parameters": "count"}
    text = rp.terminal_report(run, price(ledger, toy), width=100)
    assert rows_of(text, "Metrics") == {"test_accuracy": ["0.9611", "1"],
                                        "parameters": ["2410", "count"]}


def test_comparison_table(ledger, toy, toy2x):
    text = rp.comparison_table([price(ledger, toy), price(ledger, toy2x)], width=140)
    for col in ("total", "dynamic", "static", "infer J/sample", "train J/sample", "latency"):
        assert col in text
    # the toy ledger counts no kernel launch: no "launch idle" column
    assert "launch idle" not in text
    assert re.search(r"toy-gpu\s+95\.6 nJ\s+51\.1 nJ\s+44\.5 nJ\s+9\.41 nJ\s+300 pJ\s+"
                     r"44\.5 ns\s+1x", text)
    # 98.6 / 95.6 = 1.0314 -> "1.03x"; infer 96.1 nJ / 10 = 9.61 nJ; train 2.5 nJ / 5 = 500 pJ
    assert re.search(r"toy-gpu-2x\s+98\.6 nJ\s+54\.1 nJ\s+44\.5 nJ\s+9\.61 nJ\s+500 pJ\s+"
                     r"44\.5 ns\s+1\.03x", text)


def test_comparison_table_with_file_labels(ledger, tmp_path):
    """User files are shown by their labels (name and file); the figures stay whole."""
    a100 = tmp_path / "a100.toml"       # a user file reusing a shipped name
    a100.write_text(TOY.read_text().replace('name = "toy-gpu"', 'name = "a100"'))
    reports = [price(ledger, hw_profiles.load(TOY)), price(ledger, hw_profiles.load(a100)),
               price(ledger, "a100")]
    rows = rp.comparison_rows(reports)
    assert [r["profile"] for r in rows] == [f"toy-gpu (file: {TOY})", f"a100 (file: {a100})",
                                            "a100"]
    text = rp.comparison_table(reports, width=100)
    for col in ("total", "dynamic", "static", "latency", "vs first"):
        assert col in text
    # toy-gpu and the a100-named copy have the same numbers: 95.6 nJ, ratio 1x
    assert len(re.findall(r"95\.6 nJ\s+51\.1 nJ\s+44\.5 nJ\s+9\.41 nJ\s+300 pJ\s+44\.5 ns\s+1x",
                          text)) == 2
    # the labels fold inside their column: name and "(file:" on the row's first line
    assert re.search(r"\n  a100 \(file:\s+95\.6 nJ", text)    # the rest of the path folds below
    assert re.search(r"\n  a100\s+363 nJ", text)          # the shipped a100: its own numbers


# -- plots -------------------------------------------------------------------------------------
def test_comparison_plot_log_scale_past_100x(ledger, toy, tmp_path):
    hot = tmp_path / "hot.toml"
    hot.write_text(TOY.read_text().replace('name = "toy-gpu"', 'name = "hot"').replace(
        'power_w = { value = 1.0', 'power_w = { value = 1000.0'))
    base = price(ledger, toy)
    # static 1000 W x 44.5 ns = 44.5 uJ: total ~ 44.55 uJ vs 95.6 nJ, ratio ~ 466 > 100
    fig = rp.plot_comparison([base, price(ledger, hot)])
    assert fig.axes[0].get_yscale() == "log"
    assert rp.plot_comparison([base, base]).axes[0].get_yscale() == "linear"


# -- HTML --------------------------------------------------------------------------------------
def test_html_report_content(run, ledger, toy, toy2x, tmp_path):
    out = rp.html_report(run, [price(ledger, toy), price(ledger, toy2x)], tmp_path / "r.html")
    assert out == tmp_path / "r.html"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]
    doc = out.read_text(encoding="utf-8")
    # plots: category, op, scope depth 1 and 2, comparison, train_loss = 6 inline PNGs
    imgs = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', doc)
    assert len(imgs) == 6
    assert base64.b64decode(imgs[0])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<link" not in doc and 'src="http' not in doc  # no external assets
    assert rp.ESTIMATE_NOTE in doc
    assert "provenance: measured/simulated/specified/derived" in doc
    assert "toy-gpu-2x" in doc and "<h2>Energy on toy-gpu (gpu)</h2>" in doc
    assert "Total 95.6 nJ: dynamic 51.1 nJ, static 44.5 nJ; estimated latency 44.5 ns" in doc
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in doc and "<script" not in doc
    assert "aten::weird" in doc and "executed but not priced" in doc
    # the table trace is an HTML table: its title, columns and cells (thousands separated)
    assert "<h3>spikes (3 rows, spikes)</h3>" in doc
    assert "<th>a</th><th>b</th><th>c</th><th>d</th>" in doc
    assert "<td>0</td><td class=n>1,000</td><td class=n>2,000</td><td class=n>3,000</td>" in doc
    assert "Test fixture: numbers chosen for hand arithmetic" in doc
    assert "<td>energy_pj.mac_fp32</td>" in doc
    assert "<td>3.12.0</td>" in doc and "<td>[32]</td>" in doc  # versions, config as JSON
    assert "<tr><td>preset</td><td>full</td></tr>" in doc
    assert "<h2>Facts</h2>" in doc and "<tr><td>torch_device</td><td>cpu</td></tr>" in doc
    assert "1.03x" in doc and "9.61 nJ" in doc  # comparison and per-sample tables
    assert doc.rstrip().endswith("</html>")


def test_html_report_failure_leaves_nothing(run, ledger, toy, tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("plot failed")
    monkeypatch.setattr(rp, "plot_trace", boom)  # fails after earlier sections were written
    with pytest.raises(RuntimeError, match="plot failed"):
        rp.html_report(run, [price(ledger, toy)], tmp_path / "r.html")
    assert list(tmp_path.iterdir()) == []
    # an existing report survives a failed rewrite untouched
    (tmp_path / "r.html").write_text("old")
    with pytest.raises(RuntimeError, match="plot failed"):
        rp.html_report(run, [price(ledger, toy)], tmp_path / "r.html", force=True)
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]
    assert (tmp_path / "r.html").read_text() == "old"


def test_html_report_refuses_bad_input(run, ledger, toy, tmp_path):
    with pytest.raises(rp.ReportError, match="does not exist"):
        rp.html_report(run, [price(ledger, toy)], tmp_path / "missing" / "r.html")
    with pytest.raises(rp.ReportError, match="no energy reports"):
        rp.html_report(run, [], tmp_path / "r.html")
    assert list(tmp_path.iterdir()) == []


def test_html_report_plot_inputs(run, ledger, toy, tmp_path, monkeypatch):
    seen = {}
    real = rp.plot_energy_bars

    def spy(values, title):
        seen[title] = dict(values)
        return real(values, title)
    monkeypatch.setattr(rp, "plot_energy_bars", spy)
    rp.html_report(run, [price(ledger, toy)], tmp_path / "r.html")
    assert list(seen["Energy by category on toy-gpu"]) == list(rp.energy_breakdown(
        price(ledger, toy)))
    assert list(seen["Energy by op (top 12)"]) == [
        "static", "offchip:read", "offchip:write", "mac_fp32", "flop_fp32"]
    assert seen["Energy by scope, depth 1"] == pytest.approx({"infer": 94.1e-9, "train": 1.5e-9})
    # infer has no sub-scope, so at depth 2 its charges are its own ("direct")
    assert seen["Energy by scope, depth 2"] == pytest.approx(
        {"infer (direct)": 94.1e-9, "train/fc1": 1.5e-9})


# -- traces are drawn by their kind, with their unit on the axis (issue 12 item 6) ---------
def _kinds_run(toy, traces):
    return RunResult(model="m", profile=toy, dataset="d", config={}, metrics={},
                     ledger=Ledger(), traces=traces)


def test_each_trace_kind_has_its_drawing(toy, tmp_path, monkeypatch):
    """The name says nothing: a curve named like a raster is a curve, a per-core trace needs
    no core_ prefix. Each kind goes to its own plot, with the trace's unit."""
    seen = []
    for fn in ("plot_trace", "plot_raster", "plot_per_core", "plot_image_grid",
               "plot_pictures", "plot_scatter"):
        real = getattr(rp, fn)

        def spy(name, data, unit, _fn=fn, _real=real):
            seen.append((_fn, name, unit, np.asarray(data).shape))
            return _real(name, data, unit)
        monkeypatch.setattr(rp, fn, spy)
    traces = {"spike_raster": curve([1.0, 2.0], "J"),
              "spikes": Trace("raster", np.array([[0.5, 1], [1.5, 0]]), "ms"),
              "neurons": Trace("per_core", np.array([3.0, 4.0]), "neurons"),
              "core_routes": Trace("images", np.zeros((2, 4, 4)), "a.u."),
              "overlays": Trace("pictures", np.ones((3, 4, 5, 3)), "RGB"),
              "routes": Trace("table", np.array([[0.5, 2.0]]), "", ("x", "y")),
              "scores": Trace("scatter", np.array([[0.0, 1.0, -0.5], [1.0, 0.0, 0.5]]), "1"),
              "empty": curve([])}
    rp.html_report(_kinds_run(toy, traces), [price(Ledger(), toy)], tmp_path / "r.html")
    assert seen == [("plot_trace", "spike_raster", "J", (2,)),
                    ("plot_raster", "spikes", "ms", (2, 2)),
                    ("plot_per_core", "neurons", "neurons", (2,)),
                    ("plot_image_grid", "core_routes", "a.u.", (2, 4, 4)),
                    ("plot_pictures", "overlays", "RGB", (3, 4, 5, 3)),
                    ("plot_scatter", "scores", "1", (2, 3))]
    doc = (tmp_path / "r.html").read_text()
    assert "<h3>routes (1 rows)</h3>" in doc and "<td>0.5</td><td class=n>2</td>" in doc
    assert "<p class=muted>Trace empty (curve) is empty.</p>" in doc


def test_a_long_table_shows_its_first_rows(toy, tmp_path):
    rows = np.arange(2 * (rp.TABLE_ROWS_SHOWN + 5)).reshape(-1, 2)
    run = _kinds_run(toy, {"t": Trace("table", rows, "", ("u", "v"))})
    rp.html_report(run, [price(Ledger(), toy)], tmp_path / "r.html")
    doc = (tmp_path / "r.html").read_text()
    assert f"<h3>t ({rp.TABLE_ROWS_SHOWN + 5} rows; first {rp.TABLE_ROWS_SHOWN} shown)</h3>" in doc
    # 200 rows shown: the last shown is row 199 = (398, 399); row 200 = (400, 401) is not
    assert "<td>398</td><td class=n>399</td>" in doc and "<td>400</td>" not in doc


def test_plots_carry_the_unit_on_their_axis():
    from deploy import plots
    ax = plots.plot_trace("train_loss", np.array([2.0, 1.0]), "nats").axes[0]
    assert ax.get_ylabel() == "train_loss (nats)"
    assert plots.plot_trace("acc", np.array([0.5])).axes[0].get_ylabel() == "acc"
    ax = plots.plot_raster("r", np.array([[1.0, 0.0]]), "ms").axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("time (ms)", "neuron")
    assert plots.plot_raster("r", np.array([[1.0, 0.0]]), "").axes[0].get_xlabel() == "time (s)"
    ax = plots.plot_per_core("util", np.array([0.25, 0.5]), "fraction of the core's limit").axes[0]
    assert ax.get_ylabel() == "util (fraction of the core's limit)" and ax.get_xlabel() == "core"
    # values are drawn as given (no % scaling): bar heights 0.25 and 0.5
    assert [b.get_height() for b in ax.patches] == [0.25, 0.5]
    fig = plots.plot_image_grid("protos", np.zeros((3, 2, 2)), "weight")
    assert fig._suptitle.get_text() == "protos (weight)" and len(fig.axes) == 3


def test_run_refuses_an_untyped_trace(toy):
    from sim.errors import ModelError
    with pytest.raises(ModelError, match=r"^trace 'x' is a ndarray; wrap it in "
                                         r"sim.traces.Trace\(kind, data, unit\)"):
        _kinds_run(toy, {"x": np.zeros(3)})


def test_uncounted_ops_are_in_the_headline(run, ledger, toy):
    # the fixture ledger holds 3 uncounted calls of aten::weird: the headline says so before
    # any table, and that the figures are a lower bound
    lines = rp.terminal_report(run, price(ledger, toy), width=100).splitlines()
    head = " ".join(" ".join(lines[:12]).split())
    assert "LOWER BOUND: 1 op(s) ran uncounted (3 call(s): aten::weird x3)" in head


def test_metrics_recorded_on_the_run_profile_say_so_when_priced_on_another(run, ledger, toy,
                                                                             toy2x, tmp_path):
    """A report priced on another profile repriced its headline but listed the run's energy
    metrics (recorded on the run's profile) under a plain "Metrics", as if they were that
    profile's; the title now says whose they are. On the run's own profile it stays
    "Metrics"."""
    other = rp.terminal_report(run, price(ledger, toy2x), width=120, full=True)
    assert "Metrics (as the run recorded them on toy-gpu, not repriced)" in other
    own = rp.terminal_report(run, price(ledger, toy), width=120, full=True)
    assert "Metrics (as the run" not in own and "Metrics" in own
    html = rp.html_report(run, [price(ledger, toy2x)], tmp_path / "r.html").read_text()
    assert "<h2>Metrics (as the run recorded them on toy-gpu, not repriced)</h2>" in html


def test_citations_are_never_cut(run, ledger, toy):
    """--sources at width 80 ended URLs in an ellipsis ("https://doi.org/10.1145/3123939.
    3124…"), which could not be followed; a text table's last column now folds: every URL
    is all there, its pieces on consecutive lines."""
    text = rp.terminal_report(run, price(ledger, toy), width=60, full=True, sources=True)
    joined = "".join(text.split())
    for source in toy.sources.values():
        assert source.url in joined
    section = text[text.index("Profile entries of"):]
    assert "…" not in section
