"""Tests of deploy/report_html.py and the HTML document's order (issue 14 item 4).

The ledger and the toy-gpu arithmetic are those of tests/deploy/test_report.py:

- ``infer``: mac_fp32 1000, flop_fp32 100, offchip read 4000 B / write 400 B, 10 samples;
  dynamic 50.1 nJ, latency 44 ns (memory bound), static 44 nJ: 94.1 nJ, 9.41 nJ/sample;
- ``train`` (5 samples, no charges of its own) with ``train/fc1``: mac_fp32 500: 1 nJ
  dynamic, 0.5 ns, 0.5 nJ static: 1.5 nJ, 300 pJ/sample;
- run: 95.6 nJ (dynamic 51.1 nJ, static 44.5 nJ), latency 44.5 ns.

toy-gpu-2x (mac_fp32 4 pJ): infer 1000 x 4 + 100 + 40 000 + 8 000 pJ = 52.1 nJ + 44 nJ static
= 96.1 nJ (9.61 nJ/sample); train/fc1 2 nJ + 0.5 nJ; total 98.6 nJ.
"""
import base64
import csv
import io
import re

import numpy as np
import pytest
from conftest import TOY_GPU as TOY  # noqa: E402

import hw_profiles
from deploy import headline as hl
from deploy import plots
from deploy import report as rp
from deploy import report_html as rh
from models.registry import RunResult
from sim.ledger import Ledger
from sim.pricing import price
from sim.traces import curve


@pytest.fixture
def ledger():
    led = Ledger()
    with led.scope("infer"):
        led.add("mac_fp32", 1000)
        led.add("flop_fp32", 100)
        led.add_bytes("offchip", read=4000, write=400)
        led.add_samples(10)
    with led.scope("train"):
        led.add_samples(5)
        with led.scope("fc1"):
            led.add("mac_fp32", 500)
    return led


@pytest.fixture
def toy():
    return hw_profiles.loads(TOY.read_text())


@pytest.fixture
def toy2x():
    text = TOY.read_text()
    old = 'mac_fp32 = { value = 2.0, unit = "pJ"'
    assert text.count(old) == 1
    text = text.replace(old, 'mac_fp32 = { value = 4.0, unit = "pJ"')
    return hw_profiles.loads(text.replace('name = "toy-gpu"', 'name = "toy-gpu-2x"'))


def make_run(toy, ledger, config=None, traces=None, model="m"):
    # model "m" is registered nowhere: no card, so no units and no main metric
    return RunResult(model=model, profile=toy, dataset="d", config=config or {},
                     metrics={"parameters": 2410.0, "test_accuracy": 0.9611}, ledger=ledger,
                     traces=traces or {})


def decode(link_html: str) -> list[list[str]]:
    href = re.search(r'href="data:text/csv;charset=utf-8;base64,([^"]+)"', link_html)[1]
    return list(csv.reader(io.StringIO(base64.b64decode(href).decode("utf-8"))))


# -- links and CSV ------------------------------------------------------------------------------
def test_linkify_links_urls_and_dois_and_escapes_the_rest():
    text = "A <b> (https://x.org/a.pdf), doi:10.1109/ISSCC.2014.6757323; see https://y.io/?q=1&r=2."
    assert rh.linkify(text) == (
        'A &lt;b&gt; (<a href="https://x.org/a.pdf">https://x.org/a.pdf</a>), '
        '<a href="https://doi.org/10.1109/ISSCC.2014.6757323">doi:10.1109/ISSCC.2014.6757323'
        '</a>; see <a href="https://y.io/?q=1&amp;r=2">https://y.io/?q=1&amp;r=2</a>.')
    assert rh.linkify("no link here") == "no link here"


def test_table_csv_holds_the_cells_and_linked_cells_are_links():
    out = rh.html_table(("a", "b"), [("x, y", rh.Linked('see "https://z.net/p"')), ("2", "3")],
                        csv="t", table_id="tid")
    assert '<a class=csv download="t.csv"' in out and "<table id=tid>" in out
    # the CSV quotes the comma and doubles the quote (RFC 4180); it gets the plain text
    assert decode(out) == [["a", "b"], ["x, y", 'see "https://z.net/p"'], ["2", "3"]]
    assert '<a href="https://z.net/p">https://z.net/p</a>' in out
    full = rh.html_table(("a",), [("1.5 nJ",)], csv="f", csv_header=("a_j",),
                         csv_rows=[(1.5e-9,)])
    assert decode(full) == [["a_j"], ["1.5e-09"]]


# -- headline ---------------------------------------------------------------------------------
def test_inference_and_train_scopes(ledger, toy):
    led = ledger.copy()
    with led.scope("validate"):
        led.add_samples(3)
    r = price(led, toy)
    # sim.phases: "infer" when it recorded samples, else the last non-training depth-1
    # scope; the training scope is "train"
    assert (hl.inference_scope(r), hl.train_scope(r)) == ("infer", "train")
    no_infer = Ledger()
    with no_infer.scope("validate"):
        no_infer.add("mac_fp32", 1)
        no_infer.add_samples(3)
    assert hl.inference_scope(price(no_infer, toy)) == "validate"
    assert hl.inference_scope(price(Ledger(), toy)) is None


# -- per-layer rows ---------------------------------------------------------------------------
def test_scope_rows_are_exclusive_per_charged_scope(ledger, toy):
    rows = rh.scope_rows(price(ledger, toy))
    # "train" has samples but no charges of its own: no row
    assert [r.name for r in rows] == ["infer", "train/fc1"]
    infer, fc1 = rows
    # infer: 1000 + 100 ops, 4000 + 400 B, 94.1 nJ, 44 ns memory bound
    assert (infer.work, infer.work_unit, infer.bytes, infer.bound) == (1100, "ops", 4400,
                                                                      "memory")
    assert infer.energy_j == pytest.approx(94.1e-9) and infer.latency_s == pytest.approx(44e-9)
    assert (fc1.work, fc1.bytes, fc1.bound) == (500, 0, "compute")
    assert fc1.energy_j == pytest.approx(1.5e-9)
    assert rh.layer_cells(fc1) == ("train/fc1", "scope", "-", "-", "500 ops", "0 B",
                                   "1.5 nJ", "0.5 ns", "compute")


def test_layer_rows_come_from_sim_layers_when_it_gives_rows(ledger, toy):
    led = Ledger()
    with led.scope("infer"):
        led.add_samples(10)
        led.add("mac_fp32", 640, scope="fc1/forward")
    led.record_layer("fc1", "Linear", (10, 64), 650)
    rows, what = rh.layer_rows(make_run(toy, led), price(led, toy))
    assert [(r.name, r.type, r.work, r.work_unit) for r in rows] == [
        ("fc1", "Linear", 640, "MACs")] and what.startswith("One row per recorded layer")
    assert rh.layer_csv(rows[0])[:7] == ("fc1", "Linear", "10x64", 650, 640, "MACs", 0)
    report = price(ledger, toy)
    # no layers recorded: the scope rows stand in, and say so
    rows, what = rh.layer_rows(make_run(toy, Ledger()), report)
    assert [r.name for r in rows] == ["infer", "train/fc1"] and "recorded no layers" in what


# -- epochs, rates, NeuroBench ----------------------------------------------------------------
def test_epoch_energy_counted_once_is_one_bar_of_the_total(ledger, toy):
    report = price(ledger, toy)
    run = make_run(toy, ledger, {"epochs": 4},
                   {"val_acc": curve([0.1, 0.2, 0.3, 0.4]), "train_loss": curve([4, 3, 2, 1])})
    ep = rh.epoch_energy(run, report)
    # the 4 epochs went into the one scope 'train' (1.5 nJ): its total is the only counted
    # figure, so one bar labelled 1-4, not 4 bars of 375 pJ; no per-epoch curve beside it
    assert ep.bars_j == pytest.approx([1.5e-9]) and ep.labels == ("1-4",)
    assert ep.epochs == 4 and not ep.per_epoch and ep.curve is None
    assert "all 4 epochs together in one scope ('train')" in ep.note and "1.5 nJ" in ep.note
    assert "375 pJ" not in ep.note
    fig = plots.plot_epoch_energy(ep.bars_j, title="t", labels=ep.labels)
    assert len(fig.axes[0].patches) == 1                       # bars drawn = epochs counted
    assert rh.epoch_energy(make_run(toy, ledger), report) is None          # no epoch count
    assert rh.epoch_energy(make_run(toy, ledger, {"epochs": 3}), price(Ledger(), toy)) is None


def test_firing_rates(ledger, toy):
    raster = np.array([[0.01, 0], [0.02, 0], [0.03, 2]])
    rates, title = rh.firing_rates(make_run(toy, ledger, {"n": 4, "duration": 0.5}), raster)
    # spikes per neuron [2, 0, 1, 0] over 0.5 s = [4, 0, 2, 0] Hz, mean 1.5 Hz
    assert rates.tolist() == [4.0, 0.0, 2.0, 0.0]
    assert title == "Firing rates of all 4 neurons over the 0.5 s run (mean 1.5 Hz)"
    rates, title = rh.firing_rates(make_run(toy, ledger), raster)
    # no population or duration in the config: neurons 0 and 2 over 0.03 - 0.01 = 0.02 s
    assert rates == pytest.approx([100.0, 50.0])
    assert title == ("Firing rates of the 2 neurons that fired over the 0.02 s between first "
                     "and last spike (mean 75 Hz)")


def test_neurobench_rows_flatten_nested_metrics(toy):
    led = Ledger()
    led.record_model("m", parameters=2410, parameter_bytes=9640, buffer_bytes=0,
                     connection_weights=2368, connection_zero_weights=0)
    with led.scope("infer"):
        led.add_samples(2)
        led.add("mac_fp32", 4000, scope="0/forward")
        led.add_activity("effective_macs", 2469, scope="0/forward")
        led.add_activity("dense_synops", 4000, scope="0/forward")
    rows = {k: (v, u) for k, v, u in rh.neurobench_rows(make_run(toy, led), price(led, toy))}
    assert rows["Footprint"] == ("9,640", "B")
    # per inference sample: 2469 / 2 = 1234.5 MACs, 4000 / 2 = 2000 ops
    assert rows["SynapticOperations.Effective_MACs"] == ("1,234.5", "MACs/sample")
    assert rows["SynapticOperations.Dense"] == ("2,000", "ops/sample")
    assert rows["ActivationSparsity"][0] == "-"      # no neuron layer recorded activations


# -- the document -----------------------------------------------------------------------------
def test_document_leads_with_the_answer(ledger, toy, toy2x, tmp_path):
    run = make_run(toy, ledger, {"epochs": 2}, {"train_loss": curve([2.0, 1.0])})
    doc = rp.html_report(run, [price(ledger, toy), price(ledger, toy2x)],
                         tmp_path / "r.html").read_text()
    order = ["<section id=headline>", "<table id=layers>", "<h2>Comparison across profiles",
             "<h2>Energy per epoch", "<h2>Metrics", "<h2>Energy on toy-gpu", "<h2>Traces",
             "<h2>Profile entries"]
    at = [doc.index(s) for s in order]
    assert at == sorted(at) and doc.index("<h1>") < at[0]
    # deploy.headline.headline's figures: 95.6 nJ total, 94.1 nJ / 10 samples per inference,
    # 1.5 nJ / 5 samples per train sample (the run records no units: "unit not recorded");
    # each an estimate with the gpu kind's held-out error (toy-gpu has no row of its own)
    # the lead has each figure's bound; its table adds the gpu kind's held-out error
    assert ("<p class=lead>test_accuracy: 0.9611 (unit not recorded); total energy: 95.6 nJ "
            "on toy-gpu, estimate: dynamic 51.1 nJ, static 44.5 nJ; energy per inference: "
            "9.41 nJ, estimate (infer: 10 samples); energy per train sample: 300 pJ, estimate "
            "(train: 5 samples); latency: 44.5 ns whole run, estimate; infer 44 ns, estimate."
            "</p>") in doc
    assert ("<td>9.41 nJ, estimate (infer: 10 samples); held-out energy error x36 median, "
            "x239 worst</td>") in doc
    assert 'alt="energy per epoch"' in doc and doc.count("class=plot") == 7
    # every table has its own CSV download
    assert doc.count("<table") == doc.count("<a class=csv") == len(
        set(re.findall(r'download="([^"]+)"', doc)))


def test_a_nan_metric_reads_as_the_terminals_dash_in_the_html_and_its_csv(ledger, toy,
                                                                           tmp_path):
    run = make_run(toy, ledger)
    run.metrics["test_loss"] = float("nan")
    run.units = {"parameters": "count", "test_accuracy": "1", "test_loss": "nats"}
    doc = rp.html_report(run, [price(ledger, toy)], tmp_path / "r.html").read_text()
    section = doc[doc.index("<h2>Metrics"):doc.index("<h2>", doc.index("<h2>Metrics") + 1)]
    # was "<td class=n>nan</td>" in the table and "test_loss,nan,nats" in metrics.csv, while
    # the terminal showed the em dash; now the terminal's rows (deploy.headline.metric_rows):
    # the main metric first, the dash for nan
    assert "<tr><td>test_loss</td><td class=n>\u2014</td><td class=n>nats</td></tr>" in section
    assert ">nan<" not in section[section.index("<table"):]
    assert decode(section) == [["metric", "value", "unit"], ["test_accuracy", "0.9611", "1"],
                               ["parameters", "2410", "count"],
                               ["test_loss", "\u2014", "nats"]]


def test_comparison_shares_stay_readable_across_100x(ledger, toy, tmp_path):
    hot = tmp_path / "hot.toml"
    hot.write_text(TOY.read_text().replace('name = "toy-gpu"', 'name = "hot"').replace(
        'power_w = { value = 1.0', 'power_w = { value = 1000.0'))
    # static 1000 W x 44.5 ns = 44.5 uJ: ~466x the toy's 95.6 nJ
    fig = plots.plot_comparison_shares([price(ledger, toy), price(ledger, hw_profiles.load(hot))])
    totals, shares = fig.axes
    assert totals.get_xscale() == "log"
    assert [b.get_width() for b in totals.patches] == pytest.approx([95.6e-9, 44.5511e-6],
                                                                    rel=1e-4)
    # the stacked shares of each profile add up to 100 %
    width = {}
    for b in shares.patches:
        width[round(b.get_y(), 3)] = width.get(round(b.get_y(), 3), 0.0) + b.get_width()
    assert list(width.values()) == pytest.approx([100.0, 100.0])


def test_epoch_energy_from_per_epoch_scopes(toy):
    led = Ledger()
    with led.scope("train"):
        led.add_samples(4)
        for epoch, macs in ((1, 100), (2, 300)):
            with led.scope(f"epoch{epoch}"):
                led.add("mac_fp32", macs)
    run = make_run(toy, led, traces={"train_loss": curve([2.0, 1.0]), "x": curve([1.0])})
    ep = rh.epoch_energy(run, price(led, toy))
    # mac 2 pJ + static 1 W x (macs / 1e12 op/s): 100 -> 200 + 100 pJ; 300 -> 600 + 300 pJ
    assert ep.bars_j == pytest.approx([300e-12, 900e-12]) and ep.labels == ("1", "2")
    assert ep.per_epoch and ep.epochs == 2
    assert ep.curve_name == "train_loss"       # a curve with one entry per counted epoch
    assert ep.note == "Each epoch is its own scope under 'train' (2 epochs, 1.2 nJ in all)."
    fig = plots.plot_epoch_energy(ep.bars_j, ep.curve_name, ep.curve, labels=ep.labels)
    assert len(fig.axes[0].patches) == 2                       # bars drawn = epochs counted
