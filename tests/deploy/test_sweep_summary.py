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


def _rows(model, metric, points, profile="a100"):
    """One ok row per (overrides, seed, metric value, J per inference)."""
    return [{"key": f"{model}-{o}-{s}", "model": model, "dataset": "d", "preset": "quick",
             "seed": s, "overrides": o, "simulate_profile": profile, "profile": profile,
             "pricing": "", "status": "ok", "error": "", "main_metric": metric, metric: v,
             "per_inference_j": e, "run_file": "r"} for o, s, v, e in points]


def _front(fig):
    """The (x, y) of the first panel's Pareto front line; None when none is drawn."""
    for line in fig.axes[0].get_lines():
        if line.get_label() == "Pareto front":
            return list(zip(line.get_xdata(), line.get_ydata(), strict=True))
    return None


def test_each_model_gets_its_own_main_metric():
    """mlp (test_accuracy) and ppl (keypoint_error) in one sweep: the page used the first
    model's metric for all, so ppl's spread row had n = 0 and no mean, and ppl was missing
    from the plot. Each group now has its own metric; a plot and a table per metric."""
    rows = (_rows("mlp", "test_accuracy", [("", 0, 0.5, 1e-6), ("", 1, 0.7, 1e-6)])
            + _rows("ppl", "keypoint_error", [("", 0, 8.0, 1e-3), ("", 1, 10.0, 1e-3)]))
    mlp, ppl = sweep.summary(rows, by=sweep.SPREAD_BY)
    assert (mlp["metric"], mlp["n"], mlp["mean"]) == ("test_accuracy", 2, pytest.approx(0.6))
    # (8 + 10) / 2 = 9; was: metric test_accuracy, n = 0, mean nan
    assert (ppl["metric"], ppl["n"], ppl["mean"]) == ("keypoint_error", 2, 9.0)
    page = sweep.html_summary(rows)
    assert page.count("data:image/png;base64,") == 2
    assert "<h2>Spread over seeds (test_accuracy)</h2>" in page
    assert "<h2>Spread over seeds (keypoint_error)</h2>" in page
    ppl_table = page[page.index("(keypoint_error)</h2>"):page.index("Every run x profile")]
    assert "<td>ppl</td>" in ppl_table and "<td>mlp</td>" not in ppl_table
    assert "own main metric: test_accuracy (mlp); keypoint_error (ppl)." in page
    assert "(higher test_accuracy, less energy)" in page
    assert "(lower keypoint_error, less energy)" in page


def test_an_error_metrics_front_is_its_lowest():
    """ppl's keypoint_error is lower-is-better (its card says so): the front was drawn as
    if higher were better, through every point, and the page said "higher keypoint_error"."""
    rows = _rows("ppl", "keypoint_error", [("width=8", 0, 8.24, 1.15e-3),
                                           ("width=16", 0, 9.78, 1.62e-3),
                                           ("width=32", 0, 9.81, 3.42e-3)])
    groups = sweep.summary(rows, by=sweep.SPREAD_BY)
    # width=8 is the cheapest and the most accurate: it alone is on the front
    assert _front(sweep._plot(groups, "keypoint_error", ["a100"], "lower")) == [
        (1.15e-3, 8.24)]
    page = sweep.html_summary(rows)
    assert "The dashed line is the Pareto front (lower keypoint_error, less energy)." in page
    assert "higher keypoint_error" not in page


def test_a_metric_with_no_better_direction_draws_no_front():
    """snn_cuba's rate_hz is a measurement, not a score: no front, and the page says so."""
    rows = _rows("snn_cuba", "rate_hz", [("", 0, 5.0, 1e-9), ("w=2", 0, 7.0, 2e-9)], "loihi")
    groups = sweep.summary(rows, by=sweep.SPREAD_BY)
    assert _front(sweep._plot(groups, "rate_hz", ["loihi"], "neither")) is None
    page = sweep.html_summary(rows)
    assert ("rate_hz has no better direction (snn_cuba: a measurement, not a score), so no "
            "Pareto front is drawn.") in page
    assert "dashed line" not in page
