"""Reports of priced runs: the HTML report, and the one import for every report.

:func:`html_report` writes one self-contained file (plots as base64 PNG) atomically; its
sections come from :mod:`deploy.report_html`, its plots from :mod:`deploy.plots` (which use
:class:`matplotlib.figure.Figure` directly: no pyplot, no global backend state). The units
and the tables of figures are :mod:`deploy.formatting`'s, the terminal report and the
comparison table :mod:`deploy.terminal`'s; this module re-exports them (``terminal_report``,
``comparison_table``, ``comparison_rows``, ``format_energy``, ...) so that a caller imports
one module. Nothing here computes a new figure: every figure is an estimate built from the
profile entries the report lists.
"""
from __future__ import annotations

import html
import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from deploy.errors import ReportError
from deploy.formatting import (  # noqa: F401  (comparison_rows, format_bytes: public here)
    NOT_AVAILABLE,
    comparison_cells,
    comparison_rows,
    energy_breakdown,
    format_bytes,
    format_energy,
    format_seconds,
    latency_title,
    op_rows,
    printable,
    report_tables,
    sampled_scopes,
    significant,
)
from deploy.headline import (
    headline,  # noqa: F401  (shared by the terminal and the HTML)
    metric_rows,
    metrics_title,
)
from deploy.outputs import write_text
from deploy.plots import fig_to_img as _img
from deploy.plots import (
    plot_bands,
    plot_comparison,  # noqa: F401  (public as deploy.report.plot_comparison)
    plot_comparison_shares,
    plot_energy_bars,
    plot_image_grid,
    plot_per_core,
    plot_pictures,
    plot_raster,
    plot_rate_histogram,
    plot_scatter,
    plot_trace,
)
from deploy.report_html import (
    Linked,
    epoch_section,
    firing_rates,
    headline_section,
    html_table,
    layers_section,
    neurobench_section,
)
from deploy.terminal import comparison_table, terminal_report  # noqa: F401  (public here)
from hw_profiles.profile import PROVENANCES
from models.registry import RunResult
from sim.energy_report import EnergyReport

ESTIMATE_NOTE = ("Energy and latency figures are built from the profile entries listed at the "
                 "bottom (provenance: " + "/".join(PROVENANCES) + "); the table What these "
                 "figures are says whether they are estimates or bounds, by which execution "
                 "model, and what they leave out")


# -- HTML -----------------------------------------------------------------------------------
_CSS = """body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.4}h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:.2em 0 1em}
th,td{padding:2px 10px;border-bottom:1px solid #eee}th{text-align:left;background:#f4f4f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}
#headline{border:2px solid #4C72B0;background:#f3f6fb;padding:.4em 1em;margin:1em 0}
#headline h2{border:none;margin-top:.3em}#headline .lead{font-size:1.15em}
.note{border:2px solid #d9a400;background:#fff8dc;padding:.6em 1em;font-weight:600}
p.dl{margin:.6em 0 0;font-size:.8em}.wide{overflow-x:auto}td a{overflow-wrap:anywhere}
.muted{color:#666}img{max-width:100%;display:block;margin:.5em 0}"""


def _e(x) -> str:
    """``x`` as HTML text: escaped, and its control characters written as escapes (a run
    file's text may hold them; a browser would drop them silently)."""
    return html.escape(printable(x))


def _html_table(header: Sequence[str], rows, numeric: bool = True, *, csv: str, **kw) -> str:
    """A table with its CSV download (``deploy.report_html.html_table``)."""
    return html_table(header, rows, numeric, csv=csv, **kw)


def _json_text(v) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


TABLE_ROWS_SHOWN = 200
"""A table trace shows its first rows only (the run file keeps them all, and so does its
CSV download)."""
MAX_TRACES_DRAWN = 100
"""The report draws a run's first traces only (about 0.07 s a plot: 3,000 were minutes),
and says how many there are; the run file keeps them all."""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-") or "table"


_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}


def _trace_section(run: RunResult, name: str, trace) -> str:
    """One trace drawn by its kind (``sim.traces``): a line, a raster with its firing-rate
    histogram, bars per core, pictures, or an HTML table; its unit labels the axis."""
    data, unit = trace.data, trace.unit
    if trace.kind == "table":
        shown = data[:TABLE_ROWS_SHOWN]
        more = f"; first {TABLE_ROWS_SHOWN} shown" if data.shape[0] > TABLE_ROWS_SHOWN else ""
        unit = f", {_e(unit)}" if unit else ""
        head = f"<h3>{_e(name)} ({data.shape[0]:,} rows{more}{unit})</h3>"
        return head + _html_table(trace.columns, [tuple(_cell(x) for x in row)
                                                  for row in shown],
                                  csv=f"trace-{_slug(name)}",
                                  csv_rows=[[_csv_cell(x) for x in row]
                                            for row in data.tolist()])
    if data.size == 0:
        return f"<p class=muted>Trace {_e(name)} ({_e(trace.kind)}) is empty.</p>"
    if trace.kind == "curve":
        return _img(plot_trace(name, data, unit), name)
    if trace.kind == "raster":
        raster = _img(plot_raster(name, data, unit), name)
        seconds = _TIME_UNITS.get(unit or "s")
        if seconds is None:
            return raster + (f"<p class=muted>No firing-rate histogram: spike times are in "
                             f"{_e(unit)}, not a unit of time this report knows.</p>")
        rates, title = firing_rates(run, data * np.array([seconds, 1.0]))
        return raster + _img(plot_rate_histogram(rates, title), f"{name} firing rates")
    if trace.kind == "per_core":
        return _img(plot_per_core(name, data, unit), name)
    if trace.kind == "scatter":
        return _img(plot_scatter(name, data, unit), name)
    if trace.kind == "bands":
        return _img(plot_bands(name, data, trace.columns, unit), name)
    if trace.kind == "pictures":
        return _img(plot_pictures(name, data, unit), name)
    return _img(plot_image_grid(name, data, unit), name)   # images


def _cell(x) -> str:
    """A table cell: integers with thousands separators, floats to 6 digits, text as is;
    nan and inf as the not-available dash (no figure, as everywhere in the report)."""
    if isinstance(x, (np.integer, int)) and not isinstance(x, (bool, np.bool_)):
        return f"{int(x):,}"
    if isinstance(x, (np.floating, float)):
        return f"{float(x):.6g}" if math.isfinite(x) else NOT_AVAILABLE
    return str(x)


def _csv_cell(x):
    """A table cell for its CSV: the value at full precision, the dash for nan and inf."""
    return NOT_AVAILABLE if isinstance(x, float) and not math.isfinite(x) else x


def _html_sections(run: RunResult, reports: list[EnergyReport]):
    """Yield the HTML document piece by piece (plots are drawn as their section comes):
    the headline first, then the per-layer table, the comparison, and the detail."""
    first, tables = reports[0], report_tables(reports[0])
    title = f"neuroedge report: {run.model} on {run.dataset}"
    yield (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_e(title)}"
           f"</title><style>{_CSS}</style></head><body><h1>{_e(title)}</h1>")
    yield headline_section(run, reports)
    yield _html_table(("field", "value"), [
        ("model", run.model), ("dataset", run.dataset),
        ("preset", "not recorded" if run.preset is None else run.preset),   # format 1-2
        ("run profile", run.profile.label),
        ("priced on", ", ".join(r.profile for r in reports)),
        ("run created", run.file.created if run.file else "-"),
        ("run file", run.file.path if run.file else "-")], numeric=False, csv="run")
    yield f"<p class=note>{_e(ESTIMATE_NOTE)}.</p>"
    yield layers_section(run, first)

    yield ("<h2>Comparison across profiles</h2><p>Totals on a log axis; the split by "
           "category as shares of each profile's own total.</p>"
           + _img(plot_comparison_shares(reports), "comparison"))
    yield _html_table(*comparison_cells(reports), csv="comparison",
                      csv_header=tuple(comparison_rows(reports)[0]),
                      csv_rows=[tuple(r.values()) for r in comparison_rows(reports)])
    scopes = sampled_scopes(reports)
    yield "<h2>Energy per sample</h2>" + (_html_table(
        ("scope", "samples", *(r.profile for r in reports)),
        [(s, f"{first.samples.get(s, 0):,}",
          *(format_energy(r.per_sample_j().get(s, math.nan)) for r in reports))
         for s in scopes], csv="per-sample")
        if scopes else "<p class=muted>No scope recorded samples.</p>")
    yield epoch_section(run, first)

    # the terminal's rows: a NaN metric reads as the not-available dash here and in the
    # CSV too, never "nan"
    yield f"<h2>{_e(metrics_title(run, first.profile))}</h2>" + _html_table(
        ("metric", "value", "unit"), metric_rows(run), csv="metrics")
    yield neurobench_section(run, first)
    yield "<h2>What these figures are</h2>" + _html_table(*tables["nature"], numeric=False,
                                                          csv="nature")
    total = first.total_j
    yield (f"<h2>Energy on {_e(first.profile)} ({_e(first.kind)})</h2><p>Total "
           f"{_e(format_energy(total))}: dynamic {_e(format_energy(first.dynamic_j))}, "
           f"static {_e(format_energy(first.static_j))}"
           + (f", idle during launches {_e(format_energy(first.launch_idle_j))}"
              if first.launch_idle_j else "") + "; estimated latency "
           f"{_e(format_seconds(first.total_latency_s))}.</p>")
    yield _img(plot_energy_bars(energy_breakdown(first), f"Energy by category on "
                                f"{first.profile}"), "by category")
    yield _html_table(*tables["category"], csv="category")
    top = {r["item"]: r["energy_j"] for r in op_rows(first)[:12]}
    yield "<h3>By op</h3>" + _img(plot_energy_bars(top, "Energy by op (top 12)"), "by op")
    yield _html_table(*tables["op"], csv="op")
    for depth in (1, 2):
        # at depth 2 a one-part key holds only the charges made directly in that scope
        scopes = {k if k.count("/") + 1 >= depth else f"{k} (direct)": v
                  for k, v in first.by_scope(depth).items()}
        yield f"<h3>By scope (depth {depth})</h3>" + _img(plot_energy_bars(
            scopes, f"Energy by scope, depth {depth}"), f"scope depth {depth}")
    yield "<h3>Bytes moved</h3>" + _html_table(*tables["bytes"], csv="bytes")
    yield f"<h3>{_e(latency_title(first))}</h3>" + _html_table(*tables["latency"],
                                                               csv="latency")

    yield "<h2>Traces</h2>" + ("" if run.traces else "<p class=muted>No traces.</p>")
    if len(run.traces) > MAX_TRACES_DRAWN:
        yield (f"<p class=note>{len(run.traces):,} traces, the first {MAX_TRACES_DRAWN} "
               "drawn (the run file holds them all).</p>")
    for name, trace in list(run.traces.items())[:MAX_TRACES_DRAWN]:
        yield _trace_section(run, name, trace)
    yield "<h2>Uncounted ops</h2>" + (
        "<p>These ops were executed but not priced: their energy is in no total above.</p>"
        + _html_table(*tables["uncounted"], csv="uncounted")
        if first.uncounted else "<p class=muted>None: every executed op was priced.</p>")
    yield f"<h2>Profile entries</h2><p>{_e(ESTIMATE_NOTE)}.</p>"
    for r in reports:
        yield f"<h3>{_e(r.profile)}</h3>" + _html_table(
            ("entry", "citation"), [(k, Linked(v)) for k, v in sorted(r.entries.items())],
            numeric=False, csv=f"entries-{_slug(r.profile)}")
    yield "<h2>Config</h2>" + _html_table(
        ("key", "value"), [(k, _json_text(v)) for k, v in run.config.items()], numeric=False,
        csv="config")
    if run.facts:
        yield "<h2>Facts</h2>" + _html_table(
            ("fact", "value"), [(k, _json_text(v)) for k, v in run.facts.items()],
            numeric=False, csv="facts")
    versions = run.file.versions if run.file else {}
    yield "<h2>Versions</h2>" + _html_table(("package", "version"), versions.items(),
                                             numeric=False, csv="versions")
    yield "</body></html>\n"


def html_report(run: RunResult, reports: Sequence[EnergyReport], path: str | os.PathLike, *,
                force: bool = False, inputs: Sequence[str | os.PathLike] = (),
                parents: bool = False) -> Path:
    """Write one self-contained HTML report (no external assets) atomically.

    Parameters
    ----------
    run : the run whose ledger was priced
    reports : its pricings; the first is the run's own profile and the comparison reference
    path : target file; written under a temporary name in the same directory, then renamed
    force : replace an existing ``path`` (otherwise an existing file is refused)
    inputs : files the command read; ``path`` may be none of them, nor the run file itself
    parents : create the folders ``path`` goes in (removed again if the write fails)

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ReportError
        No reports, or the target directory does not exist (without ``parents``). Any
        error while building the report removes the temporary file and leaves an existing
        ``path`` untouched.
    OutputError
        ``path`` is a directory, an existing file without ``force``, or an input.
    """
    reports, path = list(reports), Path(path)
    if not reports:
        raise ReportError(f"html_report {str(path)!r}: got no energy reports; pass at least "
                          "the pricing of the run on its own profile")
    if not parents and not path.parent.is_dir():
        raise ReportError(f"cannot write report {str(path)!r}: directory "
                          f"{str(path.parent)!r} does not exist")
    inputs = [*inputs, *([run.file.path] if run.file else [])]
    # built in memory first (a few MB at most: the plots are PNGs), so a full disk is one
    # line saying how many bytes the report needed; folders made for it go if it fails
    write_text(path, "".join(_html_sections(run, reports)), force=force, inputs=inputs,
               parents=parents)
    return path
