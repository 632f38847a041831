"""Reports of priced runs: unit formatting, terminal tables, profile comparison, HTML.

This module owns how :class:`~sim.pricing.EnergyReport` figures are shown; it computes
nothing new, so every figure is an estimate built from the profile entries the report
lists. Terminal tables are rendered by rich; :func:`html_report` writes one self-contained
file (plots as base64 PNG) atomically. Plots use :class:`matplotlib.figure.Figure`
directly: no pyplot, no global backend state.
"""
from __future__ import annotations

import html
import io
import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from deploy.errors import ReportError
from deploy.formatting import (
    energy_breakdown,
    format_bytes,
    format_energy,
    format_seconds,
    significant,
)
from deploy.headline import headline  # noqa: F401  (shared by the terminal and the HTML)
from deploy.outputs import write_file
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
from deploy.runfile import Run
from hw_profiles.profile import PROVENANCES
from sim.energy_report import PJ, EnergyReport

ESTIMATE_NOTE = ("Energy and latency figures are built from the profile entries listed at the "
                 "bottom (provenance: " + "/".join(PROVENANCES) + "); the table What these "
                 "figures are says whether they are estimates or bounds, by which execution "
                 "model, and what they leave out")


def _pct(part: float, total: float) -> str:
    return f"{100.0 * part / total:.1f}%" if total > 0 else "-"


# -- aggregates shared by every rendering ---------------------------------------------------
def _op_rows(report: EnergyReport) -> list[dict]:
    """One row per op, memory line or static, summed over scopes, largest energy first."""
    rows: dict[str, dict] = {}
    for c in report.charges:
        r = rows.setdefault(c.item, {"item": c.item, "category": c.category, "count": 0.0,
                                     "unit_pj": c.unit_pj, "energy_j": 0.0})
        r["count"] += c.count
        r["energy_j"] += c.energy_j
    return sorted(rows.values(), key=lambda r: -r["energy_j"])


def _count_text(row) -> str:
    if row["category"] == "memory":
        return format_bytes(row["count"])
    if row["category"] == "static":
        return format_seconds(row["count"])
    return f"{int(row['count']):,}"


def _unit_text(row) -> str:
    if row["category"] == "static":
        return f"{significant(row['unit_pj'] * PJ)} W"  # static lines carry pJ per second
    return f"{significant(row['unit_pj'])} pJ" + ("/B" if row["category"] == "memory" else "")


def _latency_rows(report: EnergyReport) -> list[tuple[str, str, str]]:
    """(scope, latency, bound): the largest of the compute, memory and launch parts.

    Scopes with no latency of their own (they only record samples) are left out.
    """
    out = []
    for scope, seconds in report.latency_s.items():
        if seconds == 0:
            continue
        part = {"compute": 0.0, "memory": 0.0, "launch": 0.0}
        for c in report.charges:
            if c.scope == scope and c.category != "static":
                key = {"memory": "memory", "overhead": "launch"}.get(c.category, "compute")
                part[key] += c.seconds
        bound = max(part, key=part.get)
        # neuromorphic step model (issue 13 items 3, 5): say which model made the figure
        bound = report.time_model.get(scope, bound)
        out.append((scope or "(root)", format_seconds(seconds), bound))
    basis = report.static_basis if report.time_model else ""
    return out + [("total", format_seconds(report.total_latency_s), basis)]


def _sampled_scopes(reports: Sequence[EnergyReport]) -> list[str]:
    scopes: list[str] = []
    for r in reports:
        scopes += [s for s, n in r.samples.items() if n > 0 and s not in scopes]
    return scopes


def _tables(report: EnergyReport) -> dict[str, tuple[tuple[str, ...], list]]:
    """Every table of one report, as ``key -> (header, rows of strings)``; renderers pick."""
    total, moved = report.total_j, report.bytes_moved()
    n_moved = sum(moved.values())
    return {
        "category": (("category", "energy", "%"), [
            (c, format_energy(e), _pct(e, total)) for c, e in energy_breakdown(report).items()]
            + [("total", format_energy(total), _pct(total, total))]),
        "op": (("op", "count", "each", "energy", "%"), [
            (r["item"], _count_text(r), _unit_text(r), format_energy(r["energy_j"]),
             _pct(r["energy_j"], total)) for r in _op_rows(report)]),
        "scope1": (("scope", "energy", "%"), [
            (s, format_energy(e), _pct(e, total)) for s, e in report.by_scope(1).items()]),
        "scope": (("scope", "energy", "%"), [
            (s, format_energy(e), _pct(e, total)) for s, e in report.by_scope().items()]),
        "per_sample": (("scope", "samples", "energy", "per sample"), [
            (s, f"{report.samples[s]:,}", format_energy(report.energy_within(s)),
             format_energy(j)) for s, j in report.per_sample_j().items()]),
        "bytes": (("level:direction", "bytes", "exact"),
                  [(k, format_bytes(n), f"{n:,}") for k, n in moved.items()]
                  + [("total", format_bytes(n_moved), f"{n_moved:,}")]),
        "latency": (("scope", "latency", "time model" if report.time_model else "bound"),
                    _latency_rows(report)),
        "uncounted": (("op", "calls"), [(k, f"{n:,}") for k, n in report.uncounted.items()]),
        "entries": (("entry", "citation"), sorted(report.entries.items())),
        "nature": (("what", "value"), _nature_rows(report)),
    }


def _nature_rows(report: EnergyReport) -> list[tuple[str, str]]:
    """What the figures are: bound or estimate, model, validation, exclusions, decisions."""
    err = report.validation_error
    rows = [("figures are", report.bound),
            ("execution model", report.execution_model or "(not recorded)"),
            ("validation error of this device kind",
             f"{100 * err:.0f}% (median |predicted / measured - 1| over held-out published "
             "measurements)" if err is not None
             else "not validated (no held-out measurement of this kind can be rebuilt yet; "
             "see neuroedge validate)")]
    rows += [("excludes", x) for x in report.excluded]
    rows += [("note", x) for x in report.notes]
    return rows


def comparison_rows(reports: Sequence[EnergyReport]) -> list[dict]:
    """The cross-profile comparison as plain floats, one dict per report.

    Keys: ``profile``, ``kind``, ``total_j``, ``dynamic_j``, ``static_j``, ``latency_s``,
    ``relative_energy`` (total over the first report's total) and one ``"SCOPE J/sample"``
    per scope that recorded samples in any report (nan where a report has none).

    Raises
    ------
    ReportError
        ``reports`` is empty.
    """
    reports = list(reports)
    if not reports:
        raise ReportError("comparison_rows: got no energy reports; pass at least one "
                          "(the first is the reference of relative_energy)")
    ref = reports[0].total_j
    rows = []
    for r in reports:
        row = {"profile": r.profile, "kind": r.kind, "total_j": float(r.total_j),
               "dynamic_j": float(r.total_j - r.static_j), "static_j": float(r.static_j),
               "latency_s": float(r.total_latency_s),
               "relative_energy": float(r.total_j / ref) if ref > 0 else math.nan}
        per_sample = r.per_sample_j()
        for scope in _sampled_scopes(reports):
            row[f"{scope} J/sample"] = float(per_sample.get(scope, math.nan))
        rows.append(row)
    return rows


def _comparison(reports: Sequence[EnergyReport]) -> tuple[tuple[str, ...], list]:
    rows = comparison_rows(reports)
    keys = [k for k in rows[0] if k.endswith(" J/sample")]
    return (("profile", "total", "dynamic", "static", *keys, "latency", "vs first"), [
        (r["profile"], format_energy(r["total_j"]), format_energy(r["dynamic_j"]),
         format_energy(r["static_j"]), *(format_energy(r[k]) for k in keys),
         format_seconds(r["latency_s"]), f"{significant(r['relative_energy'])}x") for r in rows])


# -- terminal -------------------------------------------------------------------------------
def _console(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)


def _table(title: str, header: Sequence[str], rows, numeric: bool = True) -> Table:
    """A rich table; columns after the first are right-aligned when ``numeric``."""
    # Cells are Text, never markup: citation lines hold "[derived: ...]", which rich
    # would otherwise read as a style tag and drop.
    t = Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD)
    rows = list(rows)
    # on a narrow terminal the first column keeps up to 10 characters (rich would squeeze
    # it to nothing before wrapping the figures)
    first = min(10, max((len(str(r[0])) for r in rows), default=0), len(str(header[0])) + 10)
    for i, h in enumerate(header):
        # the first column (a scope, or a profile label with its file path) folds rather
        # than squeeze the figures out of the table
        t.add_column(Text(h), justify="right" if numeric and i else "left",
                     no_wrap=0 < i < len(header) - 1, overflow="fold" if i == 0 else "ellipsis",
                     min_width=first if i == 0 else None)
    for row in rows:
        t.add_row(*(Text(str(c)) for c in row))
    return t


def _latency_title(report: EnergyReport) -> str:
    """The latency table's title names its execution model (issue 13 item 5)."""
    if report.time_model:
        return "Estimated latency (per step: slowest core + barrier)"
    return "Estimated latency"   # the "What these figures are" table names the model


def terminal_report(run: Run, report: EnergyReport, width: int = 100, **options) -> str:
    """Render ``report`` (the pricing of ``run``'s ledger) for a terminal, headline first:
    :func:`deploy.terminal.terminal_report` (options ``compared``, ``full``, ``sources``,
    ``max_lines``). By default at most 60 lines of at most ``width`` characters; citations
    only with ``sources=True``."""
    from deploy.terminal import terminal_report as render  # it imports this module
    return render(run, report, width, **options)


def comparison_table(reports: Sequence[EnergyReport], width: int = 100) -> str:
    """One row per profile: totals, per-sample energy, latency and ratio to the first.

    The numbers are those of :func:`comparison_rows`, formatted.

    Raises
    ------
    ReportError
        ``reports`` is empty.
    """
    con = _console(width)
    kinds = sorted({r.bound for r in reports})
    con.print(_table(f"Comparison across profiles ({', '.join(kinds)})", *_comparison(reports)))
    return con.file.getvalue()


# -- HTML -----------------------------------------------------------------------------------
_CSS = """body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.4}h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:.2em 0 1em}
th,td{padding:2px 10px;border-bottom:1px solid #eee}th{text-align:left;background:#f4f4f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}
#headline{border:2px solid #4C72B0;background:#f3f6fb;padding:.4em 1em;margin:1em 0}
#headline h2{border:none;margin-top:.3em}#headline .lead{font-size:1.15em}
.note{border:2px solid #d9a400;background:#fff8dc;padding:.6em 1em;font-weight:600}
p.dl{margin:.6em 0 0;font-size:.8em}
.muted{color:#666}img{max-width:100%;display:block;margin:.5em 0}"""


def _e(x) -> str:
    return html.escape(str(x))


def _html_table(header: Sequence[str], rows, numeric: bool = True, *, csv: str, **kw) -> str:
    """A table with its CSV download (``deploy.report_html.html_table``)."""
    return html_table(header, rows, numeric, csv=csv, **kw)


def _json_text(v) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


TABLE_ROWS_SHOWN = 200
"""A table trace shows its first rows only (the run file keeps them all, and so does its
CSV download)."""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-") or "table"


_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}


def _trace_section(run: Run, name: str, trace) -> str:
    """One trace drawn by its kind (``sim.traces``): a line, a raster with its firing-rate
    histogram, bars per core, pictures, or an HTML table; its unit labels the axis."""
    data, unit = trace.data, trace.unit
    if trace.kind == "table":
        shown = data[:TABLE_ROWS_SHOWN]
        more = f"; first {TABLE_ROWS_SHOWN} shown" if data.shape[0] > TABLE_ROWS_SHOWN else ""
        head = f"<h3>{_e(name)} ({data.shape[0]:,} rows{more}{', ' + unit if unit else ''})</h3>"
        return head + _html_table(trace.columns, [tuple(_cell(x) for x in row)
                                                  for row in shown],
                                  csv=f"trace-{_slug(name)}", csv_rows=data.tolist())
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
    """A table cell: integers with thousands separators, floats to 6 digits, text as is."""
    if isinstance(x, (np.integer, int)) and not isinstance(x, (bool, np.bool_)):
        return f"{int(x):,}"
    if isinstance(x, (np.floating, float)):
        return f"{float(x):.6g}"
    return str(x)


def _html_sections(run: Run, reports: list[EnergyReport]):
    """Yield the HTML document piece by piece (plots are drawn as their section comes):
    the headline first, then the per-layer table, the comparison, and the detail."""
    first, tables = reports[0], _tables(reports[0])
    title = f"neuroedge report: {run.model} on {run.dataset}"
    yield (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_e(title)}"
           f"</title><style>{_CSS}</style></head><body><h1>{_e(title)}</h1>")
    yield headline_section(run, reports)
    yield _html_table(("field", "value"), [
        ("model", run.model), ("dataset", run.dataset), ("preset", run.preset),
        ("run profile", run.profile.label),
        ("priced on", ", ".join(r.profile for r in reports)), ("run created", run.created or "-"),
        ("run file", run.path or "-")], numeric=False, csv="run")
    yield f"<p class=note>{_e(ESTIMATE_NOTE)}.</p>"
    yield layers_section(run, first)

    yield ("<h2>Comparison across profiles</h2><p>Totals on a log axis; the split by "
           "category as shares of each profile's own total.</p>"
           + _img(plot_comparison_shares(reports), "comparison"))
    yield _html_table(*_comparison(reports), csv="comparison",
                      csv_header=tuple(comparison_rows(reports)[0]),
                      csv_rows=[tuple(r.values()) for r in comparison_rows(reports)])
    scopes = _sampled_scopes(reports)
    yield "<h2>Energy per sample</h2>" + (_html_table(
        ("scope", "samples", *(r.profile for r in reports)),
        [(s, f"{first.samples.get(s, 0):,}",
          *(format_energy(r.per_sample_j().get(s, math.nan)) for r in reports))
         for s in scopes], csv="per-sample")
        if scopes else "<p class=muted>No scope recorded samples.</p>")
    yield epoch_section(run, first)

    yield "<h2>Metrics</h2>" + _html_table(
        ("metric", "value", "unit"),
        [(k, f"{v:.6g}", run.unit(k)) for k, v in run.metrics.items()], csv="metrics")
    yield neurobench_section(run, first)
    yield "<h2>What these figures are</h2>" + _html_table(*tables["nature"], numeric=False,
                                                          csv="nature")
    total = first.total_j
    yield (f"<h2>Energy on {_e(first.profile)} ({_e(first.kind)})</h2><p>Total "
           f"{_e(format_energy(total))}: dynamic {_e(format_energy(total - first.static_j))}, "
           f"static {_e(format_energy(first.static_j))}; estimated latency "
           f"{_e(format_seconds(first.total_latency_s))}.</p>")
    yield _img(plot_energy_bars(energy_breakdown(first), f"Energy by category on "
                                f"{first.profile}"), "by category")
    yield _html_table(*tables["category"], csv="category")
    top = {r["item"]: r["energy_j"] for r in _op_rows(first)[:12]}
    yield "<h3>By op</h3>" + _img(plot_energy_bars(top, "Energy by op (top 12)"), "by op")
    yield _html_table(*tables["op"], csv="op")
    for depth in (1, 2):
        # at depth 2 a one-part key holds only the charges made directly in that scope
        scopes = {k if k.count("/") + 1 >= depth else f"{k} (direct)": v
                  for k, v in first.by_scope(depth).items()}
        yield f"<h3>By scope (depth {depth})</h3>" + _img(plot_energy_bars(
            scopes, f"Energy by scope, depth {depth}"), f"scope depth {depth}")
    yield "<h3>Bytes moved</h3>" + _html_table(*tables["bytes"], csv="bytes")
    yield f"<h3>{_e(_latency_title(first))}</h3>" + _html_table(*tables["latency"],
                                                               csv="latency")

    yield "<h2>Traces</h2>" + ("" if run.traces else "<p class=muted>No traces.</p>")
    for name, trace in run.traces.items():
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
    yield "<h2>Versions</h2>" + _html_table(("package", "version"), run.versions.items(),
                                             numeric=False, csv="versions")
    yield "</body></html>\n"


def html_report(run: Run, reports: Sequence[EnergyReport], path: str | os.PathLike, *,
                force: bool = False, inputs: Sequence[str | os.PathLike] = ()) -> Path:
    """Write one self-contained HTML report (no external assets) atomically.

    Parameters
    ----------
    run : the run whose ledger was priced
    reports : its pricings; the first is the run's own profile and the comparison reference
    path : target file; written under a temporary name in the same directory, then renamed
    force : replace an existing ``path`` (otherwise an existing file is refused)
    inputs : files the command read; ``path`` may be none of them, nor the run file itself

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ReportError
        No reports, or the target directory does not exist. Any error while building the
        report removes the temporary file and leaves an existing ``path`` untouched.
    OutputError
        ``path`` is a directory, an existing file without ``force``, or an input.
    """
    reports, path = list(reports), Path(path)
    if not reports:
        raise ReportError(f"html_report {str(path)!r}: got no energy reports; pass at least "
                          "the pricing of the run on its own profile")
    if not path.parent.is_dir():
        raise ReportError(f"cannot write report {str(path)!r}: directory "
                          f"{str(path.parent)!r} does not exist")
    inputs = [*inputs, *([run.path] if run.path else [])]
    with write_file(path, force=force, inputs=inputs) as tmp, \
            open(tmp, "w", encoding="utf-8") as f:
        f.writelines(_html_sections(run, reports))
    return path
