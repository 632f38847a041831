"""The terminal report: the headline first, then what fits the terminal.

By default the report fits ``width`` characters and :data:`MAX_LINES` lines: the headline
(:func:`deploy.headline.headline`), then the top rows of the comparison, metrics (with
units), NeuroBench metrics, layers, energy by category, scope and op, and what the figures
are. A table shows its first rows and says how many more there are; a section that does not
fit is named at the end. ``full=True`` shows every table and row (the report as it was
before the headline, plus the new sections); ``sources=True`` appends the citation of every
profile entry the figures were built from, which never counts against the line limit.

No figure or unit is ever cut to fit the width: a table too wide for it wraps its text
columns (names, notes, citations) at spaces, and where that is not enough prints one line
per row with each column named (:func:`deploy.text_fit.records`, as ``neuroedge estimate``
does).

Scope tables say what they sum: a depth-1 row includes its sub-scopes ("incl.
sub-scopes"); a row of the full scope table holds only the charges made in that scope
("own").

This module owns the rich rendering of every terminal table (and :func:`comparison_table`,
the comparison across profiles on its own); the figures in the cells, as strings, come from
:mod:`deploy.formatting`. :mod:`deploy.report` re-exports :func:`terminal_report` and
:func:`comparison_table`.
"""
from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from deploy import headline as hl
from deploy import text_fit
from deploy.formatting import (
    comparison_cells,
    energy_breakdown,
    figures_are,
    format_bytes,
    format_energy,
    format_seconds,
    latency_title,
    percent,
    printable,
    report_tables,
)
from hw_profiles.profile import PROVENANCES
from sim.energy_report import EnergyReport

MAX_LINES = 60
"""Lines of the default terminal report (the headline and what fits after it)."""
TOP_ROWS = 5
"""Rows a table shows by default (the metrics table: :data:`TOP_METRICS`)."""
TOP_METRICS = 8

FULL_TITLES = {"category": "Energy by category",
               "op": "Energy by op (summed over scopes)",
               "scope1": "Energy by scope, depth 1 (incl. sub-scopes)",
               "scope": "Energy by scope (own charges; sub-scopes apart)",
               "per_sample": "Energy per sample (incl. sub-scopes)",
               "bytes": "Bytes moved"}


# -- rendering -----------------------------------------------------------------------------
def _text(text) -> Text:
    """Plain text (never rich markup) with its control characters escaped: titles and cells
    hold a run file's text (model, dataset, metric, scope and layer names)."""
    return Text(printable(text))


def _console(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)


NBSP = "\u00a0"
WHOLE_WORD = 24
"""A word of a text column (a name, a path, a URL) up to this long stays whole; a longer one
may fold inside its column, which is then at least :data:`FOLDED_WIDTH` wide. Figures never
fold."""
FOLDED_WIDTH = 10


@dataclass
class _Grid:
    """A table as text: its cells are laid out by :func:`_grid_lines` at the width asked.
    The first column (a scope, a layer, a profile label with its file path) is text, and so
    is the last where ``text_last`` (a citation, a note, the latency table's time model);
    every other column holds figures."""

    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]]
    numeric: bool = True
    text_last: bool = False
    edge: bool = True     # False: no blank lines above the header and below the rows


def _table(title: str, header: Sequence[str], rows, numeric: bool = True,
           text_last: bool | None = None) -> _Grid:
    """A table; columns after the first are right-aligned when ``numeric``; the last column
    is text (wraps at spaces) where ``text_last``, by default in a table that is not
    ``numeric``. Cells are plain text with their control characters escaped: they hold a
    run file's text (model, dataset, metric, scope and layer names), and citation lines
    hold "[derived: ...]", which rich would otherwise read as a style tag and drop."""
    return _Grid(printable(title), tuple(printable(h) for h in header),
                 [tuple(printable(str(c)) for c in row) for row in rows], numeric,
                 not numeric if text_last is None else text_last)


def _grid_lines(grid: _Grid, width: int) -> list[str]:
    """``grid`` in at most ``width`` characters, its title on a line of its own; a figure
    or unit is never cut.

    The table is drawn with its columns as wide as their longest cell when that fits; else
    its text columns wrap at spaces (a word longer than :data:`WHOLE_WORD` may fold); when
    even that does not fit, one line per row with each column named
    (``deploy.text_fit.records``, as ``neuroedge estimate`` prints), folded at spaces but
    never inside a figure.
    """
    title = _lines(width, Text(grid.title))
    n = len(grid.header)
    text = [i == 0 or (grid.text_last and i == n - 1) for i in range(n)]
    cols = [[grid.header[i], *(row[i] for row in grid.rows)] for i in range(n)]
    natural = [max(cell_len(ln) for c in col for ln in c.splitlines() or [""]) for col in cols]
    # a text column down to its longest word (a longer one than WHOLE_WORD folds); a figure
    # column whole
    least = [_text_width(col) if text[i] else natural[i] for i, col in enumerate(cols)]
    # rich's padding: one space each side of a cell, one between columns, the edges
    extra = 2 * n + (n - 1) + (2 if grid.edge else 0)
    spare = width - extra - sum(least)
    if spare < 0:   # a figure's spaces (9.47 J) do not break: textwrap breaks at ASCII ones
        head = [h if text[i] else h.replace(" ", NBSP) for i, h in enumerate(grid.header)]
        body = [[c if text[i] else c.replace(" ", NBSP) for i, c in enumerate(row)]
                for row in grid.rows]
        return title + [ln.replace(NBSP, " ") for ln in text_fit.fold(
            ["  " + ln for ln in text_fit.records(head, body)], width)]
    widths = list(least)
    for i in range(n):   # the room left goes to the first columns first (the names)
        add = min(spare, natural[i] - widths[i])
        widths[i] += add
        spare -= add
    t = Table(box=box.SIMPLE_HEAD, show_edge=grid.edge)
    for i, (h, w) in enumerate(zip(grid.header, widths, strict=True)):
        right = grid.numeric and not text[i]
        t.add_column(Text(h), width=w, justify="right" if right else "left",
                     no_wrap=not text[i], overflow="fold")
    for row in grid.rows:
        t.add_row(*(Text(c) for c in row))
    con = _console(width)
    con.print(t)
    return title + [ln.rstrip() for ln in con.file.getvalue().splitlines()]


def _text_width(cells) -> int:
    """The narrowest a text column gets: its longest word, or :data:`FOLDED_WIDTH` where a
    word longer than :data:`WHOLE_WORD` folds anyway."""
    words = [cell_len(w) for c in cells for w in c.split()]
    return max([w for w in words if w <= WHOLE_WORD]
               + [FOLDED_WIDTH for w in words if w > WHOLE_WORD], default=0)


def _lines(width: int, *renderables) -> list[str]:
    """Rendered lines: tables by :func:`_grid_lines`, text wrapped by rich."""
    out = []
    for r in renderables:
        if isinstance(r, _Grid):
            out += _grid_lines(r, width)
            continue
        con = _console(width)
        con.print(r)
        out += [ln.rstrip() for ln in con.file.getvalue().splitlines()]
    return out


def _compact(title: str, header, rows, numeric: bool = True) -> _Grid:
    """A table without its top and bottom blank lines (title, header, rule, rows)."""
    t = _table(title, header, rows, numeric)
    t.edge = False
    return t


def _top(title: str, header, rows, n: int, width: int, numeric: bool = True,
         what: str = "rows") -> list[str]:
    """A compact table of the first ``n`` rows, a line saying how many more there are,
    and a blank line."""
    rows = list(rows)
    out = _lines(width, _compact(title, header, rows[:n], numeric))
    if len(rows) > n:
        out.append(f"  ... {len(rows) - n} more {what} (--all)")
    return out + [""]


# -- sections -------------------------------------------------------------------------------
def headline_lines(run, reports: Sequence[EnergyReport], width: int) -> list[str]:
    """The report's first lines: a title and the headline figures, then a blank line."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in hl.headline(run, reports):
        grid.add_row(_text(label), _text(value))
    title = _text(f"neuroedge report: {run.model} on {run.dataset} ({hl.preset_text(run)}, "
                 f"run on {run.profile.label})")
    out = _lines(width, title, grid)
    for r in reports[:1]:
        if r.uncounted:   # never silent: every figure above is then a lower bound
            names = ", ".join(f"{k} x{n:,}" for k, n in sorted(r.uncounted.items()))
            out += _lines(width, _text(f"LOWER BOUND: {len(r.uncounted)} op(s) ran uncounted "
                                      f"({sum(r.uncounted.values()):,} call(s): {names}); "
                                      "they are in no figure"))
    return out + [""]


def _comparison_rows(reports: Sequence[EnergyReport]) -> list[tuple]:
    first = reports[0]
    train = hl.train_scope(first)
    return [(r.profile, format_energy(r.total_j),
             format_energy(hl.per_sample_j(r, hl.inference_scope(first))),
             # a run without training has no such figure: said in words, never "nan J"
             format_energy(hl.per_sample_j(r, train)) if train else "no training",
             format_seconds(r.total_latency_s), hl.ratio_text(r.total_j, first.total_j),
             _figures(r))
            for r in reports]


def _figures(report: EnergyReport) -> str:
    """How sure a comparison row's figures are: "lower bound" when its energy or time is
    one (another chip's time without a re-placement, an op run uncounted), else the
    report's own word."""
    bounds = {report.energy_bound(None), report.latency_bound(None)}
    return "lower bound" if "lower bound" in bounds else report.bound


def comparison_lines(reports, width: int, n: int | None = 10) -> list[str]:
    first = reports[0]
    rows = _comparison_rows(reports)
    return _top(f"Comparison across profiles (vs {first.profile})",
                ("profile", "total", "per inference", "per train sample", "latency", "vs first",
                 "figures"),
                rows, n or len(rows), width, what="profiles")


def metric_lines(run, width: int, n: int | None = TOP_METRICS,
                 priced: str | None = None) -> list[str]:
    rows = hl.metric_rows(run)
    if not rows:
        return ["Metrics: none recorded.", ""]
    return _top(hl.metrics_title(run, priced), ("metric", "value", "unit"), rows,
                n or len(rows), width, what="metrics")


def neurobench_lines(run, report: EnergyReport, width: int) -> list[str]:
    """NeuroBench's metrics under their names, as three wrapped lines."""
    values = hl.neurobench(run, report)
    text = {k: hl.neurobench_text(v, u) for k, (v, u) in values.items()}
    syn = [k for k in values if k.startswith("SynapticOperations.")]
    model = [k for k in values if "." not in k and k not in ("MembraneUpdates",)
             and k != "SynapticOperations"]
    scope = hl.inference_scope(report)
    lines = [", ".join(f"{k} {text[k]}" for k in model)]
    if syn:
        lines.append("SynapticOperations: " + ", ".join(
            f"{k.split('.', 1)[1]} {text[k]}" for k in syn))
    if "MembraneUpdates" in values:
        lines.append(f"MembraneUpdates {text['MembraneUpdates']}")
    title = "NeuroBench metrics" + (f" (workload per sample of {scope})" if scope else "")
    return _lines(width, _text(title), *(_text("  " + ln) for ln in lines)) + [""]


def _shape(shape) -> str:
    return "x".join(str(d) for d in shape) if shape else "-"


def layer_table_rows(run, report: EnergyReport) -> list | None:
    """``sim.layers.layer_rows`` of the run; None where it recorded no layers."""
    from sim.layers import layer_rows
    return layer_rows(run.ledger, report) or None


def layer_lines(run, report: EnergyReport, width: int, n: int | None = TOP_ROWS) -> list[str]:
    rows = layer_table_rows(run, report)
    if rows is None:
        return []
    shown = sorted(rows, key=lambda r: -r.energy_j) if n else rows
    title = (f"Layers, top {min(n, len(rows))} of {len(rows)} by energy" if n
             else f"Layers ({len(rows)}, in recording order)")
    cells = [(r.name, r.type, _shape(r.output_shape), f"{r.parameters:,}",
              f"{r.work:,} {r.work_unit}", format_bytes(r.bytes), format_energy(r.energy_j),
              r.bound or "-") for r in shown]
    what = (" (synops received; its share of the synapse and neuron-update energy)"
            if all(r.work_unit == "synops" for r in rows)
            else " (forward + backward, every top scope)")
    return _top(title + what,
                ("layer", "type", "output", "params", "work", "bytes", "energy", "bound"),
                cells, n or len(cells), width, what="layers")


def category_lines(report: EnergyReport, width: int) -> list[str]:
    total = report.total_j
    rows = [(c, format_energy(e), percent(e, total)) for c, e in energy_breakdown(report).items()
            if e != 0] + [("total", format_energy(total), percent(total, total))]
    return _lines(width, _compact("Energy by category", ("category", "energy", "%"), rows)) \
        + [""]


def scope_lines(report: EnergyReport, width: int, n: int = TOP_ROWS + 1) -> list[str]:
    """Depth-1 scopes with their sub-scopes: energy, share, samples, per sample, latency."""
    total = report.total_j
    rows = []
    for scope, e in report.by_scope(1).items():
        name = "" if scope == "(root)" else scope
        k = hl.scope_samples(report, name) if name else 0
        rows.append((scope, format_energy(e), percent(e, total), f"{k:,}" if k else "-",
                     format_energy(e / k) if k else "-",
                     format_seconds(hl.latency_within(report, name))))
    return _top("Energy by scope, depth 1 (incl. sub-scopes)",
                ("scope", "energy", "%", "samples", "per sample", "latency"), rows, n, width,
                what="scopes")


def op_lines(report: EnergyReport, width: int, n: int = TOP_ROWS) -> list[str]:
    header, rows = report_tables(report)["op"]
    return _top(f"Energy by op (top {min(n, len(rows))} of {len(rows)}, summed over scopes)",
                header, rows, n, width, what="ops")


def nature_lines(report: EnergyReport, width: int) -> list[str]:
    """What the figures are and what they leave out, as one paragraph (``--all``: the
    table of every exclusion and note, and the uncounted ops)."""
    # the execution model by its name only (the text before its rules)
    model = report.execution_model.split(": ", 1)[0] or "execution model not recorded"
    parts = [f"What these figures are: {figures_are(report)} ({model})"]
    if report.excluded or report.notes:
        parts.append(f"{len(report.excluded)} exclusion(s) and {len(report.notes)} note(s) "
                     "(--all lists them)")
    if report.uncounted:
        calls = sum(report.uncounted.values())
        parts.append(f"UNCOUNTED: {len(report.uncounted)} op(s), {calls:,} call(s) executed "
                     "but not priced, in no total (--all lists them)")
    elif not any(c.count for c in report.charges):   # counting was off: nothing to price
        parts.append("NOTHING WAS COUNTED: the run's ops are in no figure")
    else:
        parts.append("every executed op was priced")
    return _lines(width, _text("; ".join(parts) + ".")) + [""]


def uncounted_lines(report: EnergyReport, width: int) -> list[str]:
    if not report.uncounted:
        return _lines(width, _text("Uncounted ops: none (every executed op was priced)."))
    return _lines(width, _text("Uncounted ops: executed but not priced; their energy is in no "
                              "total."),
                  _table("Uncounted ops", *report_tables(report)["uncounted"]))


def source_lines(reports: Sequence[EnergyReport], width: int) -> list[str]:
    """Every profile entry the figures were built from, with its citation, per profile."""
    out = _lines(width, _text(f"Figures ({reports[0].bound}) are built from these profile "
                             f"entries (provenance: {'/'.join(PROVENANCES)})."))
    for r in reports:
        out += _lines(width, _table(f"Profile entries of {r.profile}", *report_tables(r)["entries"],
                                    numeric=False))
    return out


def _full_lines(run, report, compared, width: int) -> list[str]:
    """Every table and row: the report as it was before the headline, plus the new parts."""
    tables = report_tables(report)
    out = _lines(width, _table("Run", ("field", "value"), [
        ("model", run.model), ("dataset", run.dataset),
        ("profile", f"{report.profile} ({report.kind})"),
        ("run created", run.file.created if run.file else "-")],
        numeric=False))
    if compared:
        out += _lines(width, _table(f"Comparison across profiles (vs {report.profile})",
                                    *comparison_cells([report, *compared])))
    out += metric_lines(run, width, None, report.profile) + neurobench_lines(run, report, width)
    out += layer_lines(run, report, width, None)
    out += _lines(width, _table("What these figures are", *tables["nature"], numeric=False))
    for key, title in FULL_TITLES.items():
        out += _lines(width, _table(title, *tables[key]))
    out += _lines(width, _table(latency_title(report) + " (own, per scope)",
                                *tables["latency"], text_last=True))   # the time model
    return out + uncounted_lines(report, width)


def terminal_report(run, report: EnergyReport, width: int = 100, *,
                    compared: Sequence[EnergyReport] = (), full: bool = False,
                    sources: bool = False, max_lines: int = MAX_LINES) -> str:
    """Render ``report`` (the pricing of ``run``'s ledger) for a terminal, headline first.

    Parameters
    ----------
    run : the run whose ledger was priced (``models.registry.RunResult``)
    report : the priced ledger; the reference of every ratio
    width : characters per line; no line is longer
    compared : the same ledger priced on other profiles (headline ratios, comparison table)
    full : every table and every row, no line limit
    sources : append the citation of every profile entry used (outside the line limit)
    max_lines : lines of the default report (headline included; ignored with ``full``)

    Returns
    -------
    str
        The report, one line per line, ending in a newline.
    """
    reports = [report, *compared]
    out = headline_lines(run, reports, width)
    if full:
        out += _full_lines(run, report, compared, width)
    else:
        sections = [("what these figures are", nature_lines(report, width)),
                    ("comparison", comparison_lines(reports, width) if compared else []),
                    ("metrics", metric_lines(run, width, priced=report.profile)),
                    ("NeuroBench metrics", neurobench_lines(run, report, width)),
                    ("layers", layer_lines(run, report, width)),
                    ("energy by category", category_lines(report, width)),
                    ("energy by scope", scope_lines(report, width)),
                    ("energy by op", op_lines(report, width))]
        footer = _lines(width, _text(f"Citations of the {len(report.entries)} profile entries "
                                    "used: --sources. Every table and row: --all."))
        shown: list[tuple[str, list[str]]] = []
        skipped: list[str] = []
        used = len(out) + len(footer) + 2   # two lines for the note naming what is left out
        for name, lines in sections:
            if used + len(lines) <= max_lines:
                shown.append((name, lines))
                used += len(lines)
            elif lines:
                skipped.append(name)
        note = []
        while True:   # a note that wraps to more lines than kept gives up the last section
            if skipped:
                note = _lines(width, _text(f"Not shown for space: {', '.join(skipped)}."))
            body = [ln for _, lines in shown for ln in lines]
            if len(out) + len(body) + len(note) + len(footer) <= max_lines or not shown:
                break
            skipped.insert(0, shown.pop()[0])
        out += body + note + footer
    if sources:
        out += [""] + source_lines(reports, width)
    return "\n".join(out) + "\n"


def comparison_table(reports: Sequence[EnergyReport], width: int = 100) -> str:
    """One row per profile: totals, per-sample energy, latency and ratio to the first.

    The numbers are those of :func:`deploy.formatting.comparison_rows`, formatted.

    Raises
    ------
    ReportError
        ``reports`` is empty.
    """
    kinds = sorted({r.bound for r in reports})
    return "\n".join(_lines(width, _table(f"Comparison across profiles ({', '.join(kinds)})",
                                          *comparison_cells(reports)))) + "\n"
