"""The run report laid out at 1280 px (issue 35 item 5): no element past the viewport, no
overlapping text, no legend over data -- checked in headless Chromium by the reusable
``tests/browser_layout.py`` (skipped without Chromium), and on the report's matplotlib
figures before they become PNGs (everywhere)."""
import io

import matplotlib
import numpy as np
import pytest
from browser_layout import CHROMIUM, figure_problems, page_problems
from conftest import TOY_GPU
from matplotlib.figure import Figure

import hw_profiles
from deploy import plots
from deploy import report as rp
from deploy import report_html as rh
from deploy.formatting import energy_breakdown
from models.registry import RunResult
from sim.ledger import Ledger
from sim.pricing import price
from sim.traces import curve

needs_chromium = pytest.mark.skipif(CHROMIUM is None,
                                    reason="needs Debian chromium (make installs it)")


def _ledger(epoch_scopes: bool) -> Ledger:
    led = Ledger()
    with led.scope("infer"):
        led.add("mac_fp32", 1000)
        led.add("kernel_launch", 3)
        led.add_samples(10)
    with led.scope("train"):
        led.add_samples(5)
        for epoch in range(1, 4):
            with led.scope(f"epoch{epoch}" if epoch_scopes else "fc1"):
                led.add("mac_fp32", 100 * epoch)
    return led


def _run(led: Ledger, toy) -> RunResult:
    # a layer and a config value longer than any row fits: tables must wrap, not overflow
    return RunResult(model="m", profile=toy, dataset="d", config={
        "epochs": 3, "note": "a-very-long-unbroken-config-value-" * 12},
        metrics={"test_accuracy": 0.9}, ledger=led,
        traces={"train_loss": curve([3.0, 2.0, 1.0])})


@pytest.fixture(scope="module")
def toys():
    text = TOY_GPU.read_text()
    return [hw_profiles.loads(text), hw_profiles.loads(
        text.replace('name = "toy-gpu"', 'name = "toy-gpu-2x"'))]


@needs_chromium
@pytest.mark.parametrize("epoch_scopes", [False, True])
def test_report_fits_1280_px(toys, epoch_scopes, tmp_path):
    led = _ledger(epoch_scopes)
    path = rp.html_report(_run(led, toys[0]), [price(led, p) for p in toys],
                          tmp_path / "report.html")
    assert page_problems(path, tmp_path, width=1280) == []


@needs_chromium
def test_the_checker_finds_overflow_overlap_and_a_legend_over_data(tmp_path):
    """The checker can fail: a 2000 px table, tick labels drawn on top of one another and a
    legend over a line's points, in an inline SVG."""
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.plot([0, 1, 2, 3], [0, 1, 2, 3], label="data")
    ax.set_xticks([0, 0.05, 0.1], ["first long label", "second long label", "third"])
    ax.legend(loc="center")                        # over the diagonal's middle
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):   # text as <text>, not paths
        fig.savefig(buf, format="svg")
    svg = buf.getvalue()[buf.getvalue().index("<svg"):]
    page = tmp_path / "bad.html"
    # an unbreakable 400-character cell: the table cannot wrap it
    page.write_text(f"<!DOCTYPE html><html><body><table><tr><td>{'x' * 400}</td></tr>"
                    f"</table>{svg}</body></html>")
    problems = page_problems(page, tmp_path, width=1280)
    assert any(p.startswith("page is ") for p in problems), problems
    assert any(p.startswith("past the right edge: table") for p in problems), problems
    assert any("first long label / second long label" in p for p in problems), problems
    assert any(p.startswith("svg legend over data: legend_1") for p in problems), problems
    fine = tmp_path / "fine.html"
    fine.write_text("<!DOCTYPE html><html><body><p>short</p></body></html>")
    assert page_problems(fine, tmp_path, width=1280) == []


def test_figure_checker_finds_overlap_and_a_legend_over_data():
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.plot(np.arange(4), np.arange(4), label="data")
    ax.set_xticks([0, 0.05], ["first long label", "second long label"])
    ax.legend(loc="center")
    problems = figure_problems(fig)
    assert any("'first long label' / 'second long label'" in p for p in problems), problems
    assert any(p.startswith("legend over data") for p in problems), problems


@pytest.mark.parametrize("epoch_scopes", [False, True])
def test_report_figures_have_no_overlap(toys, epoch_scopes):
    """The figures the report draws (comparison, categories, per epoch) read cleanly."""
    led = _ledger(epoch_scopes)
    reports = [price(led, p) for p in toys]
    run = _run(led, toys[0])
    ep = rh.epoch_energy(run, reports[0])
    # 3 epochs counted in their own scopes: 3 bars; counted together: 1 bar of the total
    assert ep.bars_j.size == (3 if epoch_scopes else 1)
    epoch_fig = plots.plot_epoch_energy(ep.bars_j, ep.curve_name, ep.curve, ep.curve_unit,
                                        "Training energy per epoch", ep.labels)
    assert len(epoch_fig.axes[0].patches) == ep.bars_j.size
    for fig in (epoch_fig, plots.plot_comparison_shares(reports),
                plots.plot_energy_bars(energy_breakdown(reports[0]), "Energy by category")):
        assert figure_problems(fig) == []
