"""Reports of priced runs: unit formatting, terminal tables, profile comparison and HTML.

This module owns how :class:`~sim.pricing.EnergyReport` figures are *shown*. It computes
nothing new: every number is an aggregate of the report's charges, so every figure is an
estimate built from the profile entries the report lists (``report.entries``).

- :func:`format_energy`, :func:`format_bytes`, :func:`format_seconds`: engineering units,
  3 significant digits;
- :func:`terminal_report`, :func:`comparison_table`: plain-text tables rendered by rich;
- :func:`comparison_rows`: the comparison as plain floats (tables and JSON share it);
- :func:`html_report`: one self-contained HTML file (plots inlined as base64 PNG), written
  atomically. Plots use :class:`matplotlib.figure.Figure` directly: no pyplot, no global
  backend state.
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
import os
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from deploy.runfile import Run
from hw_profiles.errors import NeuroedgeError
from hw_profiles.ops import CATEGORIES
from hw_profiles.profile import PROVENANCES
from sim.pricing import PJ, EnergyReport

ESTIMATE_NOTE = ("All energy and latency figures are estimates built from the profile entries "
                 "listed at the bottom; provenance: " + "/".join(PROVENANCES))
_ENERGY_UNITS = ((1e-12, "pJ"), (1e-9, "nJ"), (1e-6, "uJ"), (1e-3, "mJ"), (1.0, "J"))
_BYTE_UNITS = ((1.0, "B"), (1e3, "kB"), (1e6, "MB"), (1e9, "GB"), (1e12, "TB"))
_SECOND_UNITS = ((1e-9, "ns"), (1e-6, "us"), (1e-3, "ms"), (1.0, "s"))
_COLORS = dict(zip(CATEGORIES, ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8C8C8C")))
_LOG_RATIO = 100.0  # comparison plots switch to a log axis past this spread of totals


class ReportError(NeuroedgeError):
    """A report cannot be built from what it was given (no reports, missing directory)."""


# -- formatting ----------------------------------------------------------------------------
def _sig(x: float) -> str:
    """``x`` to 3 significant digits, without an exponent where readable (50.1, 44, 1230)."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    r = float(f"{x:.3g}")
    decimals = max(0, 2 - math.floor(math.log10(abs(r))))
    if decimals > 9 or abs(r) >= 1e15:
        return f"{x:.3g}"
    text = f"{r:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _engineering(value: float, units) -> str:
    value = float(value)
    if not math.isfinite(value):
        return f"{value} {units[-1][1]}"
    # Round first, so 999.96 pJ reads "1 nJ" rather than "1000 pJ".
    mag = float(f"{abs(value):.3g}")
    base = next(u for s, u in units if s == 1.0)
    if mag == 0:
        return f"0 {base}"
    scale, unit = units[0]
    for s, u in units:
        if mag >= s:
            scale, unit = s, u
    return f"{'-' if value < 0 else ''}{_sig(mag / scale)} {unit}"


def format_energy(j: float) -> str:
    """Joules in pJ, nJ, uJ, mJ or J with 3 significant digits.

    Examples
    --------
    >>> format_energy(50.1e-9), format_energy(0.5e-12), format_energy(0.0)
    ('50.1 nJ', '0.5 pJ', '0 J')
    """
    return _engineering(j, _ENERGY_UNITS)


def format_bytes(n: float) -> str:
    """Bytes in B, kB, MB, GB or TB (base 1000) with 3 significant digits.

    Examples
    --------
    >>> format_bytes(4400), format_bytes(400)
    ('4.4 kB', '400 B')
    """
    return _engineering(n, _BYTE_UNITS)


def format_seconds(s: float) -> str:
    """Seconds in ns, us, ms or s with 3 significant digits.

    Examples
    --------
    >>> format_seconds(44e-9), format_seconds(0.0123)
    ('44 ns', '12.3 ms')
    """
    return _engineering(s, _SECOND_UNITS)


def _pct(part: float, total: float) -> str:
    return f"{100.0 * part / total:.1f}%" if total > 0 else "-"


# -- aggregates shared by every rendering ---------------------------------------------------
def energy_breakdown(report: EnergyReport) -> dict[str, float]:
    """Energy per category in joules, in the fixed order of ``hw_profiles.ops.CATEGORIES``.

    Every category is present (0.0 where nothing was charged), so plots of several
    profiles line up.
    """
    by_cat = report.by_category()
    return {cat: float(by_cat.get(cat, 0.0)) for cat in CATEGORIES}


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
        return f"{_sig(row['unit_pj'] * PJ)} W"  # static lines carry pJ per second
    return f"{_sig(row['unit_pj'])} pJ" + ("/B" if row["category"] == "memory" else "")


def _latency_rows(report: EnergyReport) -> list[tuple[str, float, str]]:
    """(scope, seconds, bound) with bound "compute" or "memory" (the roofline's larger side)."""
    out = []
    for scope, seconds in report.latency_s.items():
        mem = sum(c.seconds for c in report.charges if c.scope == scope and c.category == "memory")
        comp = sum(c.seconds for c in report.charges
                   if c.scope == scope and c.category not in ("memory", "static"))
        out.append((scope or "(root)", seconds, "memory" if mem > comp else "compute"))
    return out


def _sampled_scopes(reports: Sequence[EnergyReport]) -> list[str]:
    scopes: list[str] = []
    for r in reports:
        scopes += [s for s, n in r.samples.items() if n > 0 and s not in scopes]
    return scopes


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


# -- terminal -------------------------------------------------------------------------------
def _console(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)


def _table(title: str, header: Sequence[str], rows) -> Table:
    # Cells are Text, never markup: citation lines hold "[derived: ...]", which rich
    # would otherwise read as a style tag and drop.
    t = Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD)
    for i, h in enumerate(header):
        t.add_column(Text(h), justify="left" if i == 0 else "right", no_wrap=i < len(header) - 1)
    for row in rows:
        t.add_row(*(Text(str(c)) for c in row))
    return t


def terminal_report(run: Run, report: EnergyReport, width: int = 100) -> str:
    """Render ``report`` (the pricing of ``run``'s ledger) as plain-text tables.

    Parameters
    ----------
    run : the run whose ledger was priced (header, metrics)
    report : the priced ledger
    width : characters per line

    Returns
    -------
    str
        Header, metrics, energy by category / op / scope, per-sample energy, bytes moved,
        latency, uncounted ops and the profile entries every figure was built from.
    """
    con = _console(width)
    total = report.total_j
    con.print(Text(f"neuroedge report: {run.model} on {run.dataset}"))
    con.print(_table("Run", ("field", "value"), [
        ("model", run.model), ("dataset", run.dataset),
        ("profile", f"{report.profile} ({report.kind})"), ("run created", run.created or "-")]))
    con.print(_table("Metrics", ("metric", "value"),
                     [(k, f"{v:.6g}") for k, v in run.metrics.items()]))
    cats = [(c, format_energy(e), _pct(e, total)) for c, e in energy_breakdown(report).items()]
    con.print(_table("Energy by category", ("category", "energy", "%"),
                     cats + [("total", format_energy(total), _pct(total, total))]))
    con.print(_table("Energy by op", ("op", "count", "each", "energy", "%"), [
        (r["item"], _count_text(r), _unit_text(r), format_energy(r["energy_j"]),
         _pct(r["energy_j"], total)) for r in _op_rows(report)]))
    for title, depth in (("Energy by scope (depth 1)", 1), ("Energy by scope (full)", None)):
        con.print(_table(title, ("scope", "energy", "%"), [
            (s, format_energy(e), _pct(e, total)) for s, e in report.by_scope(depth).items()]))
    per_sample = report.per_sample_j()
    con.print(_table("Energy per sample", ("scope", "samples", "energy", "per sample"), [
        (s, f"{report.samples[s]:,}", format_energy(report.energy_within(s)), format_energy(j))
        for s, j in per_sample.items()]))
    moved = report.bytes_moved()
    con.print(_table("Bytes moved", ("level:direction", "bytes", "exact"),
                     [(k, format_bytes(n), f"{n:,}") for k, n in moved.items()]
                     + [("total", format_bytes(sum(moved.values())), f"{sum(moved.values()):,}")]))
    con.print(_table("Estimated latency (roofline)", ("scope", "latency", "bound"),
                     [(s, format_seconds(t), b) for s, t, b in _latency_rows(report)]
                     + [("total", format_seconds(report.total_latency_s), "")]))
    if report.uncounted:
        con.print(_table("Uncounted ops: executed but not priced (their energy is in no total)",
                         ("op", "calls"), [(k, f"{n:,}") for k, n in report.uncounted.items()]))
    else:
        con.print(Text("Uncounted ops: none (every executed op was priced)"))
    con.print(Text(f"All figures are estimates from the entries of profile {report.profile!r} "
                   f"listed below (provenance: {'/'.join(PROVENANCES)})."))
    con.print(_table("Profile entries", ("entry", "citation"), sorted(report.entries.items())))
    return con.file.getvalue()


def comparison_table(reports: Sequence[EnergyReport], width: int = 100) -> str:
    """One row per profile: energy totals, per-sample energy, latency and ratio to the first.

    Raises
    ------
    ReportError
        ``reports`` is empty.
    """
    rows = comparison_rows(reports)
    sample_keys = [k for k in rows[0] if k.endswith(" J/sample")]
    header = ("profile", "total", "dynamic", "static", *sample_keys, "latency", "vs first")
    con = _console(width)
    con.print(_table("Comparison across profiles (estimates)", header, [
        (r["profile"], format_energy(r["total_j"]), format_energy(r["dynamic_j"]),
         format_energy(r["static_j"]), *(format_energy(r[k]) for k in sample_keys),
         format_seconds(r["latency_s"]), f"{_sig(r['relative_energy'])}x") for r in rows]))
    return con.file.getvalue()


# -- plots ----------------------------------------------------------------------------------
def _scale(values, units=_ENERGY_UNITS) -> tuple[float, str]:
    top = max((abs(v) for v in values), default=0.0)
    return next(((s, u) for s, u in reversed(units) if top >= s), units[0])


def plot_energy_bars(values: dict[str, float], title: str) -> Figure:
    """Horizontal bars of joules per label (largest on top), each labelled with its value."""
    labels, joules = list(values), list(values.values())
    scale, unit = _scale(joules)
    fig = Figure(figsize=(7.0, 0.9 + 0.32 * max(len(labels), 1)), layout="constrained")
    ax = fig.add_subplot()
    bars = ax.barh(range(len(labels)), [v / scale for v in joules], color="#4C72B0")
    ax.bar_label(bars, labels=[format_energy(v) for v in joules], padding=3, fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.margins(x=0.18)
    ax.set_xlabel(f"estimated energy ({unit})")
    ax.set_title(title, fontsize=10)
    return fig


def plot_comparison(reports: Sequence[EnergyReport]) -> Figure:
    """Grouped bars: energy by category (bars) per profile (groups).

    The axis is logarithmic when the largest total exceeds the smallest by more than 100x,
    so the cheaper profiles stay visible.
    """
    data = [energy_breakdown(r) for r in reports]
    cats = [c for c in CATEGORIES if any(d[c] > 0 for d in data)]
    totals = [r.total_j for r in reports if r.total_j > 0]
    log = bool(totals) and max(totals) / min(totals) > _LOG_RATIO
    scale, unit = (1.0, "J") if log else _scale([v for d in data for v in d.values()])
    fig = Figure(figsize=(max(6.0, 1.6 * len(reports)), 3.6), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / max(len(cats), 1)
    for i, cat in enumerate(cats):
        xs = [j - 0.4 + width * (i + 0.5) for j in range(len(reports))]
        ax.bar(xs, [d[cat] / scale for d in data], width, label=cat, color=_COLORS[cat])
    ax.set_xticks(range(len(reports)), [r.profile for r in reports], fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(f"estimated energy ({unit})" + (", log scale" if log else ""))
    ax.set_title("Energy by category per profile", fontsize=10)
    ax.legend(fontsize=8)
    return fig


def plot_trace(name: str, values: np.ndarray) -> Figure:
    """A 1-D trace (e.g. ``train_loss`` per epoch) as a line plot, x counted from 1."""
    values = np.asarray(values, dtype=float)
    fig = Figure(figsize=(6.0, 3.0), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(np.arange(1, values.size + 1), values, marker="o" if values.size <= 50 else None,
            markersize=3)
    ax.set_xlabel("entry (epoch for per-epoch traces)")
    ax.set_ylabel(name)
    ax.set_title(name, fontsize=10)
    ax.grid(alpha=0.3)
    return fig


def _img(fig: Figure, alt: str) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{_e(alt)}">'


# -- HTML -----------------------------------------------------------------------------------
_CSS = """body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.4}h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{padding:2px 10px;border-bottom:1px solid #eee}
th{text-align:left;background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
.note{border:2px solid #d9a400;background:#fff8dc;padding:.6em 1em;font-weight:600}
.muted{color:#666}img{max-width:100%;display:block;margin:.5em 0}"""


def _e(x) -> str:
    return html.escape(str(x))


def _html_table(header: Sequence[str], rows, numeric: bool = True) -> str:
    """A table; every cell but the first of a row is right-aligned when ``numeric``."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(
        f'<td{" class=n" if numeric and i else ""}>{_e(c)}</td>' for i, c in enumerate(row))
        + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _json_text(v) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


def _html_sections(run: Run, reports: list[EnergyReport]):
    """Yield the HTML document piece by piece (plots are drawn as their section comes)."""
    first = reports[0]
    title = f"neuroedge report: {run.model} on {run.dataset}"
    yield (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_e(title)}"
           f"</title><style>{_CSS}</style></head><body><h1>{_e(title)}</h1>")
    yield _html_table(("field", "value"), [
        ("model", run.model), ("dataset", run.dataset), ("run profile", run.profile.name),
        ("priced on", ", ".join(r.profile for r in reports)), ("run created", run.created or "-"),
        ("run file", run.path or "-")], numeric=False)
    yield f'<p class=note>{_e(ESTIMATE_NOTE)}.</p>'
    yield "<h2>Metrics</h2>" + _html_table(("metric", "value"),
                                           [(k, f"{v:.6g}") for k, v in run.metrics.items()])

    total = first.total_j
    yield (f"<h2>Energy on {_e(first.profile)} ({_e(first.kind)})</h2><p>Total "
           f"{_e(format_energy(total))}: dynamic {_e(format_energy(total - first.static_j))}, "
           f"static {_e(format_energy(first.static_j))}; estimated latency "
           f"{_e(format_seconds(first.total_latency_s))}.</p>")
    cats = energy_breakdown(first)
    yield _img(plot_energy_bars(cats, f"Energy by category on {first.profile}"), "by category")
    yield _html_table(("category", "energy", "%"),
                      [(c, format_energy(e), _pct(e, total)) for c, e in cats.items()])
    ops = _op_rows(first)
    yield "<h3>By op</h3>" + _img(plot_energy_bars(
        {r["item"]: r["energy_j"] for r in ops[:12]}, "Energy by op (top 12)"), "by op")
    yield _html_table(("op", "count", "each", "energy", "%"), [
        (r["item"], _count_text(r), _unit_text(r), format_energy(r["energy_j"]),
         _pct(r["energy_j"], total)) for r in ops])
    for depth in (1, 2):
        yield f"<h3>By scope (depth {depth})</h3>" + _img(plot_energy_bars(
            first.by_scope(depth), f"Energy by scope, depth {depth}"), f"scope depth {depth}")
    moved = first.bytes_moved()
    yield "<h3>Bytes moved</h3>" + _html_table(
        ("level:direction", "bytes", "exact"),
        [(k, format_bytes(n), f"{n:,}") for k, n in moved.items()])
    yield "<h3>Estimated latency (roofline)</h3>" + _html_table(
        ("scope", "latency", "bound"),
        [(s, format_seconds(t), b) for s, t, b in _latency_rows(first)])

    rows = comparison_rows(reports)
    keys = [k for k in rows[0] if k.endswith(" J/sample")]
    yield "<h2>Comparison across profiles</h2>" + _img(plot_comparison(reports), "comparison")
    yield _html_table(("profile", "total", "dynamic", "static", *keys, "latency", "vs first"), [
        (r["profile"], format_energy(r["total_j"]), format_energy(r["dynamic_j"]),
         format_energy(r["static_j"]), *(format_energy(r[k]) for k in keys),
         format_seconds(r["latency_s"]), f"{_sig(r['relative_energy'])}x") for r in rows])
    scopes = _sampled_scopes(reports)
    yield "<h2>Energy per sample</h2>" + (_html_table(
        ("scope", "samples", *(r.profile for r in reports)),
        [(s, f"{first.samples.get(s, 0):,}",
          *(format_energy(r.per_sample_j().get(s, math.nan)) for r in reports))
         for s in scopes]) if scopes else "<p class=muted>No scope recorded samples.</p>")

    yield "<h2>Traces</h2>"
    if not run.traces:
        yield "<p class=muted>No traces in this run.</p>"
    for name, arr in run.traces.items():
        arr = np.asarray(arr)
        if arr.ndim == 1 and arr.size:
            yield _img(plot_trace(name, arr), name)
        else:
            yield (f"<p class=muted>Trace {_e(name)} ({_e(arr.dtype)}, shape {_e(arr.shape)}) "
                   "is not plotted: only non-empty 1-D traces are drawn for now.</p>")

    yield "<h2>Uncounted ops</h2>" + (
        "<p>These ops were executed but not priced: their energy is in no total above.</p>"
        + _html_table(("op", "calls"), [(k, f"{n:,}") for k, n in first.uncounted.items()])
        if first.uncounted else "<p class=muted>None: every executed op was priced.</p>")
    yield f"<h2>Profile entries</h2><p>{_e(ESTIMATE_NOTE)}.</p>"
    for r in reports:
        yield f"<h3>{_e(r.profile)}</h3>" + _html_table(
            ("entry", "citation"), sorted(r.entries.items()), numeric=False)
    yield "<h2>Config</h2>" + _html_table(
        ("key", "value"), [(k, _json_text(v)) for k, v in run.config.items()], numeric=False)
    yield "<h2>Versions</h2>" + _html_table(("package", "version"), run.versions.items(),
                                             numeric=False)
    yield "</body></html>\n"


def html_report(run: Run, reports: Sequence[EnergyReport], path: str | os.PathLike) -> Path:
    """Write one self-contained HTML report (no external assets) atomically.

    Parameters
    ----------
    run : the run whose ledger was priced
    reports : its pricings; the first is the run's own profile and the comparison reference
    path : target file; written under a temporary name in the same directory, then renamed

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ReportError
        No reports, or the target directory does not exist. Any error while building the
        report removes the temporary file and leaves an existing ``path`` untouched.
    """
    reports, path = list(reports), Path(path)
    if not reports:
        raise ReportError(f"html_report {str(path)!r}: got no energy reports; pass at least "
                          "the pricing of the run on its own profile")
    if not path.parent.is_dir():
        raise ReportError(f"cannot write report {str(path)!r}: directory "
                          f"{str(path.parent)!r} does not exist")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for part in _html_sections(run, reports):
                f.write(part)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
