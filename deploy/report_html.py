"""Parts of the HTML report that only the HTML needs: tables with a CSV download, source
links, the headline figures, the per-layer rows, per-epoch energy, firing rates and the
NeuroBench table.

Everything here is a view of figures already in the run and its
:class:`~sim.energy_report.EnergyReport`\\ s; nothing is priced again. The document itself is
assembled by :func:`deploy.report.html_report`.
"""
from __future__ import annotations

import base64
import csv
import html
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deploy.formatting import format_bytes, format_energy, format_seconds, printable, significant
from deploy.headline import headline, neurobench, train_scope
from deploy.plots import fig_to_img, plot_epoch_energy
from models.registry import RunResult
from sim.energy_report import EnergyReport

MAX_RATE_NEURONS = 10_000_000
"""The largest population (a run config's ``n``) the firing-rate histogram spreads its
silent neurons over (80 MB of counts); past it, the histogram is of the neurons that fired."""
MAX_EPOCH_BARS = 100_000
"""The most epochs (a run config's ``epochs``) the energy-per-epoch chart draws a bar for."""


def _e(x) -> str:
    """``x`` as HTML text: escaped, and its control characters written as escapes (a run
    file's text may hold them; a browser would drop them silently)."""
    return html.escape(printable(x))


# -- tables and their CSV ---------------------------------------------------------------------
class Linked(str):
    """A cell whose text holds URLs: ``str`` is the plain text (what the CSV gets), ``html``
    the escaped text with each URL or DOI as a link."""

    @property
    def html(self) -> str:
        return linkify(str(self))


# http(s) URLs up to white space or a closing bracket/quote; a DOI as "doi:10.x/y"
_URL = re.compile(r"https?://[^\s<>\"')\]]+|\bdoi:\s?10\.\d{4,9}/[^\s<>\"')\];,]+")
_TRAILING = ".,;:"   # punctuation that ends a sentence, not the URL


def linkify(text: str) -> str:
    """``text`` escaped for HTML with every http(s) URL and ``doi:10...`` as an ``<a href>``."""
    out, at = [], 0
    for m in _URL.finditer(text):
        url = m.group(0).rstrip(_TRAILING)
        end = m.start() + len(url)
        href = url if url.startswith("http") else "https://doi.org/" + url[4:].lstrip()
        out += [_e(text[at:m.start()]), f'<a href="{_e(href)}">{_e(url)}</a>']
        at = end
    return "".join(out) + _e(text[at:])


def csv_text(header: Sequence, rows) -> str:
    """RFC 4180 CSV (``\\r\\n`` line ends) of ``header`` and ``rows``, cells as text."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow([str(h) for h in header])
    w.writerows([[str(c) for c in row] for row in rows])
    return buf.getvalue()


def csv_link(name: str, header: Sequence, rows) -> str:
    """A link that downloads ``name``.csv from a data: URI (the file stays self-contained)."""
    data = base64.b64encode(csv_text(header, rows).encode("utf-8")).decode("ascii")
    return (f'<a class=csv download="{_e(name)}.csv" href="data:text/csv;charset=utf-8;'
            f'base64,{data}">{_e(name)}.csv</a>')


def html_table(header: Sequence[str], rows, numeric: bool = True, *, csv: str,
               table_id: str = "", csv_header: Sequence[str] | None = None,
               csv_rows=None) -> str:
    """A table with its CSV download link above it.

    Every cell but the first of a row is right-aligned when ``numeric``. The CSV holds the
    table's cells as shown, unless ``csv_header``/``csv_rows`` give full-precision values
    (figures in base units, every row of a table that shows only its first ones).
    """
    rows = [tuple(r) for r in rows]
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(
        f'<td{" class=n" if numeric and i else ""}>{getattr(c, "html", None) or _e(c)}</td>'
        for i, c in enumerate(row)) + "</tr>" for row in rows)
    link = csv_link(csv, header if csv_header is None else csv_header,
                    rows if csv_rows is None else csv_rows)
    ident = f" id={table_id}" if table_id else ""
    # in a box that scrolls sideways: a wide table (many profiles, long layer names) on a
    # narrow screen scrolls by itself, not the page
    return (f"<p class=dl>{link}</p><div class=wide><table{ident}><thead><tr>{head}</tr>"
            f"</thead><tbody>{body}</tbody></table></div>")


# -- per-layer rows ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ScopeRow:
    """A per-layer row made from one ledger scope, for runs that recorded no layers; the
    fields are those of ``sim.layers.LayerRow``."""

    name: str
    type: str
    output_shape: tuple
    parameters: int
    work: int
    work_unit: str
    bytes: int
    energy_j: float
    latency_s: float
    bound: str


LAYER_HEADER = ("layer", "type", "output shape", "parameters", "work", "bytes", "energy",
                "latency", "bound")
LAYER_CSV_HEADER = ("name", "type", "output_shape", "parameters", "work", "work_unit",
                    "bytes", "energy_j", "latency_s", "bound")


def scope_rows(report: EnergyReport) -> list[ScopeRow]:
    """One row per scope that was charged, its own charges only (exclusive), in recording
    order: work is the count of priced compute, learning and communication ops."""
    rows: dict[str, dict] = {}
    for c in report.charges:
        r = rows.setdefault(c.scope, {"work": 0, "bytes": 0, "energy": 0.0,
                                      "compute": 0.0, "memory": 0.0, "launch": 0.0})
        r["energy"] += c.energy_j
        if c.category == "memory":
            r["bytes"] += int(c.count)
            r["memory"] += c.seconds
        elif c.category == "overhead":
            r["launch"] += c.seconds
        elif c.category != "static":
            r["work"] += int(c.count)
            r["compute"] += c.seconds
    out = []
    for scope, r in rows.items():
        parts = {k: r[k] for k in ("compute", "memory", "launch")}
        bound = report.time_model.get(scope) or (max(parts, key=parts.get)
                                                 if any(parts.values()) else "-")
        out.append(ScopeRow(scope or "(root)", "scope", (), 0, r["work"], "ops", r["bytes"],
                            r["energy"], float(report.latency_s.get(scope, 0.0)), bound))
    return out


def layer_rows(run: RunResult, report: EnergyReport) -> tuple[list, str]:
    """The per-layer rows of ``report`` and a line saying what they are.

    The rows are ``sim.layers.layer_rows`` (one per recorded layer, its forward and backward
    scopes under every top scope summed); a run that recorded no layers (a spiking network,
    a bitwise machine) gets one row per ledger scope instead (:func:`scope_rows`).
    """
    from sim.layers import layer_rows as from_ledger
    rows = list(from_ledger(run.ledger, report))
    if rows:
        return rows, ("One row per recorded layer (a torch layer: its forward and backward "
                      "scopes under every top scope summed; a spiking population: the synops "
                      "it received and its share of the run's synapse and neuron energy).")
    return scope_rows(report), ("This run recorded no layers: one row per ledger scope, "
                                "each with its own charges only (exclusive of sub-scopes).")


def layer_cells(row) -> tuple:
    """A row as shown: ``-`` where a field does not apply (no parameters, no latency of its
    own: a spiking population's steps are timed for the whole run)."""
    shape = "x".join(str(d) for d in row.output_shape) or "-"
    return (row.name, row.type, shape, f"{row.parameters:,}" if row.parameters else "-",
            f"{row.work:,} {row.work_unit}", format_bytes(row.bytes),
            format_energy(row.energy_j),
            format_seconds(row.latency_s) if math.isfinite(row.latency_s) else "-",
            row.bound or "-")


def layer_csv(row) -> tuple:
    return (row.name, row.type, "x".join(str(d) for d in row.output_shape), row.parameters,
            row.work, row.work_unit, row.bytes, repr(float(row.energy_j)),
            repr(float(row.latency_s)), row.bound)


# -- per-epoch energy -------------------------------------------------------------------------
@dataclass(frozen=True)
class EpochEnergy:
    """The training energy as the ledger counted it: ``bars_j`` holds one bar per epoch
    where each epoch was counted in its own scope (``labels`` "1", "2", ...), else one bar,
    the total of all ``epochs`` (label ``"1-N"``): an epoch's share of a total counted once
    is not a measurement, so it is not drawn as one."""
    scope: str
    bars_j: np.ndarray
    labels: tuple[str, ...]
    epochs: int
    per_epoch: bool          # True: one scope per epoch, one bar each
    curve_name: str
    curve: np.ndarray | None
    curve_unit: str
    note: str


_EPOCH = re.compile(r"epoch_?(\d+)$")


def epoch_energy(run: RunResult, report: EnergyReport) -> EpochEnergy | None:
    """The training energy per epoch where it was counted per epoch, else its total; None
    for a run without training epochs.

    Where the training scope has one sub-scope per epoch (``train/epoch1``, ``train/epoch_2``
    ...), each epoch is its own scope's energy, one bar each, with the epoch's curve (the
    first ``train_*`` curve trace with one entry per epoch, else the first such curve)
    beside it. The models' training today records every epoch into the one training scope
    (``device.count("train")`` once per epoch), so the ledger holds only the sum: then one
    bar, the total of the ``config["epochs"]`` epochs, and a sentence saying why (the total
    over the epoch count would draw identical bars that no count supports).
    """
    scope = train_scope(report)
    if scope is None:
        return None
    children = {}
    for s in report.latency_s.keys() | {c.scope for c in report.charges}:
        parent, _, last = s.rpartition("/")
        if parent == scope and _EPOCH.match(last):
            children[int(_EPOCH.match(last)[1])] = s
    total = report.energy_within(scope)
    if children:
        bars = np.array([report.energy_within(children[k]) for k in sorted(children)])
        curves = [(k, t) for k, t in run.traces.items()
                  if t.kind == "curve" and t.data.size == bars.size]
        name, trace = next(((k, t) for k, t in curves if k.startswith("train")),
                           curves[0] if curves else ("", None))
        note = (f"Each epoch is its own scope under {scope!r} ({len(children)} epochs, "
                f"{format_energy(total)} in all).")
        return EpochEnergy(scope, bars, tuple(str(k) for k in sorted(children)),
                           len(children), True, name,
                           None if trace is None else trace.data,
                           "" if trace is None else trace.unit, note)
    epochs = run.config.get("epochs")
    if (isinstance(epochs, bool) or not isinstance(epochs, int)
            or not 1 <= epochs <= MAX_EPOCH_BARS):
        return None
    note = (f"The ledger counted all {epochs} epochs together in one scope ({scope!r}): "
            f"{format_energy(total)} is their total, drawn as one bar. The energy of each "
            "epoch was not counted (the training records every epoch into that one scope), "
            "so it is not shown; the run's curves are under Traces.")
    return EpochEnergy(scope, np.array([total]), (f"1-{epochs}" if epochs > 1 else "1",),
                       epochs, False, "", None, "", note)


# -- firing rates -----------------------------------------------------------------------------
def firing_rates(run: RunResult, raster: np.ndarray) -> tuple[np.ndarray, str]:
    """Per-neuron firing rates (Hz) of a (k, 2) raster of (time in s, neuron) and a title
    saying how the population and duration were taken.

    The population is ``config["n"]`` when the run has it (silent neurons are then in the
    first bin), otherwise the neurons that fired; the duration is ``config["duration"]``
    (s) when given, otherwise the span of the spike times.
    """
    raster = np.asarray(raster, dtype=float).reshape(-1, 2)
    ids = raster[:, 1].astype(np.int64)
    fired = int(ids.max()) + 1 if ids.size else 0
    # spikes per neuron that fired, by sorting, so an index of 10**12 allocates nothing
    who_fired, counts = (np.unique(ids, return_counts=True) if ids.size
                         else (ids, np.zeros(0, np.int64)))
    n = run.config.get("n")
    if (isinstance(n, int) and not isinstance(n, bool) and fired <= n <= MAX_RATE_NEURONS
            and n > 0):
        # every neuron in order, the silent ones at 0; a config n past the limit (a
        # hand-edited run file's 10**13) is not believed: then only the neurons that fired
        counts = np.bincount(who_fired, weights=counts, minlength=n).astype(np.int64)
        who = f"all {n:,} neurons"
    else:
        who = f"the {counts.size:,} neurons that fired"
    duration = run.config.get("duration")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration > 0:
        seconds, span = float(duration), f"{significant(float(duration))} s run"
    else:
        seconds = float(raster[:, 0].max() - raster[:, 0].min()) if ids.size else 0.0
        span = f"{significant(seconds)} s between first and last spike"
    rates = counts / seconds if seconds > 0 else np.zeros(counts.size)
    mean = float(rates.mean()) if rates.size else 0.0
    return rates, f"Firing rates of {who} over the {span} (mean {significant(mean)} Hz)"


# -- NeuroBench -------------------------------------------------------------------------------
def neurobench_rows(run: RunResult, report: EnergyReport) -> list[tuple[str, str, str]]:
    """(metric, value, unit) rows of NeuroBench's metrics (:func:`deploy.headline.neurobench`,
    the terminal's figures) at full precision; ``-`` where the run cannot give one."""
    return [(name, "-" if math.isnan(v) else f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}",
             unit) for name, (v, unit) in neurobench(run, report).items()]


# -- sections of the document -----------------------------------------------------------------
def headline_section(run: RunResult, reports: list[EnergyReport]) -> str:
    rows = headline(run, reports)
    # the lead: the figures with their bound; the table under it adds the held-out errors
    lead = "; ".join(f"{k}: {v}" for k, v in headline(run, reports, errors=False)[:5])
    return (f"<section id=headline><h2>The answer</h2><p class=lead>{_e(lead)}.</p>"
            + html_table(("figure", "value"), rows, numeric=False, csv="headline")
            + "</section>")


def layers_section(run: RunResult, first: EnergyReport) -> str:
    rows, what = layer_rows(run, first)
    return (f"<h2>Per layer on {_e(first.profile)}</h2><p>{_e(what)} {len(rows):,} rows.</p>"
            + html_table(LAYER_HEADER, [layer_cells(r) for r in rows], csv="layers",
                          table_id="layers", csv_header=LAYER_CSV_HEADER,
                          csv_rows=[layer_csv(r) for r in rows]))


def epoch_section(run: RunResult, first: EnergyReport) -> str:
    ep = epoch_energy(run, first)
    if ep is None:
        return ("<h2>Energy per epoch</h2><p class=muted>No training epochs in this run "
                "(no training scope with samples, or no epoch count in its config).</p>")
    title = (f"Training energy per epoch on {first.profile}" if ep.per_epoch else
             f"Training energy of all {ep.epochs} epochs on {first.profile} (not counted "
             "per epoch)")
    curve = (ep.curve_name,) if ep.curve is not None else ()
    return ("<h2>Energy per epoch</h2>" + f"<p>{_e(ep.note)}</p>"
            + fig_to_img(plot_epoch_energy(ep.bars_j, ep.curve_name, ep.curve, ep.curve_unit,
                                           title, ep.labels), "energy per epoch")
            + html_table(("epoch", "energy", *curve),
                         [(label, format_energy(j),
                           *((f"{ep.curve[i]:.6g}",) if ep.curve is not None else ()))
                          for i, (label, j) in enumerate(zip(ep.labels, ep.bars_j,
                                                             strict=True))],
                         csv="epochs", csv_header=("epoch", "energy_j", *curve),
                         csv_rows=[(label, repr(float(j)),
                                    *((repr(float(ep.curve[i])),) if ep.curve is not None
                                      else ()))
                                   for i, (label, j) in enumerate(zip(ep.labels, ep.bars_j,
                                                                      strict=True))]))


def neurobench_section(run: RunResult, report: EnergyReport) -> str:
    rows = neurobench_rows(run, report)
    return ("<h2>NeuroBench metrics</h2><p>Under NeuroBench's names, per sample of the "
            "inference scope; - where this run cannot give a metric.</p>"
            + html_table(("metric", "value", "unit"), rows, csv="neurobench"))
