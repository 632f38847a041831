"""The sweep summary page (deploy.sweep.html_summary, value_x_axis), issue 35: the log
plot's tick labels ran into each other, the legend sat on the data, the run table
overflowed the page."""
from __future__ import annotations

import itertools

import pytest

from deploy import sweep


def _boxes_overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("low, high", [(1.4e-7, 2.1e-6), (1e-9, 3e-6), (1e-12, 1e-3),
                                       (2.085e-6, 2.11e-6)])
def test_summary_axis_tick_labels_never_overlap(low, high):
    """The summary pages' energy axis (issue 35: the log plot's tick labels ran into each
    other): drawn at the page's panel width, no two visible tick labels share a pixel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter
    fig = Figure(figsize=(6.0, 4.2), layout="constrained")
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    xs = [low, (low * high) ** 0.5, high]
    ax.plot(xs, [0.1, 0.2, 0.3], "o")
    sweep.value_x_axis(ax, xs, "J")
    canvas.draw()   # lays the ticks out
    renderer = canvas.get_renderer()
    labels = [t for t in ax.get_xticklabels(minor=False) + ax.get_xticklabels(minor=True)
              if t.get_visible() and t.get_text()
              and low <= t.get_position()[0] * (1 + 1e-9) and t.get_position()[0] <= high * 1.5]
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert len(boxes) >= 2   # the axis says where the points are
    assert not any(_boxes_overlap(a, b) for a, b in itertools.combinations(boxes, 2))
    # log where the values span more than a decade (high / low > 10), minor labels off
    assert (ax.get_xscale() == "log") == (high / low > 10)
    if ax.get_xscale() == "log":
        assert isinstance(ax.xaxis.get_minor_formatter(), NullFormatter)
    assert all(t.get_text().endswith("J") for t in labels)   # "200 nJ", not 2e-07


def test_sweep_page_run_table_scrolls_in_its_box_one_line_a_row():
    """Issue 35: the sweep summary's run table overflowed the page. It is in a box that
    scrolls sideways, its cells do not wrap, and the per-profile prose that squeezed the
    other columns is in the table above it instead."""
    row = {"key": "k", "model": "mlp", "dataset": "digits", "preset": "quick", "seed": 0,
           "overrides": "", "simulate_profile": "a100", "profile": "a100", "pricing": "",
           "status": "ok", "error": "", "main_metric": "test_accuracy",
           "test_accuracy": 0.9, "per_inference_j": 1e-6, "energy_j": 1.0,
           "execution_model": "a long description " * 10, "excludes": "x", "run_file": "r"}
    page = sweep.html_summary([row])
    runs = page[page.index("<h2>Every run x profile</h2>"):]
    assert "<div class='wide nowrap'><table>" in runs
    assert "<th>execution_model</th>" not in runs and "<th>test_accuracy</th>" in runs
    assert ".wide{overflow-x:auto;max-width:100%}.nowrap td{white-space:nowrap}" in page
    assert page.count("a long description") == 10   # once, in "What these figures are"


def test_sweep_plot_legends_are_outside_every_panel():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    rows = [{"key": f"k{i}", "model": "mlp", "dataset": "digits", "preset": "quick",
             "seed": 0, "overrides": f"hidden={h}", "profile": p, "status": "ok",
             "main_metric": "test_accuracy", "test_accuracy": 0.9 + h / 1000,
             "per_inference_j": e * h}
            for i, (h, p, e) in enumerate([(8, "a100", 1e-6), (16, "a100", 1e-6),
                                           (8, "loihi2", 1e-9), (16, "loihi2", 1e-9)])]
    groups = sweep.summary(rows, by=sweep.SPREAD_BY)
    fig = sweep._plot(groups, "test_accuracy", ["a100", "loihi2"])
    FigureCanvasAgg(fig).draw()
    for ax in fig.axes:
        legend = ax.get_legend()
        assert legend is not None
        assert not _boxes_overlap(legend.get_window_extent(), ax.get_window_extent())
    # every panel's legend clear of every other panel too (constrained layout made room)
    boxes = [ax.get_window_extent() for ax in fig.axes]
    boxes += [ax.get_legend().get_window_extent() for ax in fig.axes]
    assert not any(_boxes_overlap(a, b) for a, b in itertools.combinations(boxes, 2))


def test_sweep_page_fits_1280_px_in_chromium(tmp_path):
    """Issue 35 item 5: the sweep summary page laid out in headless Chromium at 1280 px
    (tests/browser_layout.py, the checker the run report uses): nothing past the viewport,
    no overlapping text, no legend over data -- with a long run table and two profiles."""
    from browser_layout import CHROMIUM, figure_problems, page_problems
    if CHROMIUM is None:
        pytest.skip("needs Debian chromium (make installs it)")
    rows = [{"key": f"k{i}", "model": "mlp", "dataset": "digits", "preset": "quick",
             "seed": 0, "overrides": f"hidden={h},epochs=4,lr=0.001", "simulate_profile": p,
             "profile": p, "pricing": "", "status": "ok", "error": "",
             "main_metric": "test_accuracy", "test_accuracy": 0.9 + h / 1000,
             "per_inference_j": e * h, "energy_j": e * h * 1e4,
             "execution_model": "a long description " * 10, "excludes": "x",
             "run_file": f"runs/{'a-very-long-run-file-name-' * 3}{i}.h5"}
            for i, (h, p, e) in enumerate([(8, "a100", 1e-6), (16, "a100", 1e-6),
                                           (8, "loihi2", 1e-9), (16, "loihi2", 1e-9)])]
    page = tmp_path / "summary.html"
    page.write_text(sweep.html_summary(rows))
    assert page_problems(page, tmp_path) == []
    groups = sweep.summary(rows, by=sweep.SPREAD_BY)
    assert figure_problems(sweep._plot(groups, "test_accuracy", ["a100", "loihi2"])) == []
