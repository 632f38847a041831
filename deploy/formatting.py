"""Figures as people read them: engineering units with 3 significant digits, the fixed
order of energy categories, and every table of an :class:`~sim.pricing.EnergyReport` as rows
of strings.

The one place that turns figures into text: the terminal report (:mod:`deploy.terminal`),
the HTML report (:mod:`deploy.report`, :mod:`deploy.report_html`), the plots and
``neuroedge estimate`` all take their units and tables from here, so a figure reads the
same everywhere. Nothing here renders (no rich, no HTML) and nothing computes a new figure.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from deploy.errors import ReportError
from hw_profiles.ops import CATEGORIES
from sim.energy_report import PJ, EnergyReport

# Characters a terminal obeys rather than shows: C0 and C1 controls and DEL (ESC[2J clears
# the screen, a carriage return rewrites the line), the line and paragraph separators, and
# Unicode's bidirectional overrides and isolates, which reorder what is shown ("Trojan
# Source", CVE-2021-42574), and lone surrogates (h5py reads a byte that is not UTF-8 as
# one: no terminal, font or UTF-8 encoder takes it). Each is written as its escape.
_CONTROLS = (*range(0x20), *range(0x7f, 0xa0), 0x2028, 0x2029, 0x200e, 0x200f,
             *range(0x202a, 0x202f), *range(0x2066, 0x206a), *range(0xd800, 0xe000))
_ESCAPES = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _CONTROLS}
_ESCAPES_KEEP_LINES = {c: e for c, e in _ESCAPES.items() if chr(c) not in "\n\t"}


def printable(text, *, lines: bool = False) -> str:
    """``text`` with every control character written as its escape (``\\x1b``, ``\\n``
    as ``\\x0a``, a bidi override as ``\\u202e``): the one helper for text read from a
    file (a run file's model name, a profile's description, a NIR node's name) before it is
    printed, to a terminal (where ESC[2J or a carriage return would rewrite what the user
    sees) or into HTML. A field is one line, so a newline in it is escaped too;
    ``lines=True`` keeps newline and tab, for a whole report whose fields were escaped
    already (a second pass changes nothing: escapes are printable)."""
    return str(text).translate(_ESCAPES_KEEP_LINES if lines else _ESCAPES)


NOT_AVAILABLE = "\u2014"
"""What a figure that does not exist reads as (an em dash): a run without training has no
energy per training sample, and people are never shown "nan"."""

ENERGY_UNITS = ((1e-12, "pJ"), (1e-9, "nJ"), (1e-6, "uJ"), (1e-3, "mJ"), (1.0, "J"))
"""(scale in joules, unit) from the smallest up: :func:`format_energy` and the plots' axes."""
_BYTE_UNITS = ((1.0, "B"), (1e3, "kB"), (1e6, "MB"), (1e9, "GB"), (1e12, "TB"))
_SECOND_UNITS = ((1e-9, "ns"), (1e-6, "us"), (1e-3, "ms"), (1.0, "s"))


def significant(x: float) -> str:
    """``x`` to 3 significant digits, without an exponent where readable (50.1, 44, 1230);
    :data:`NOT_AVAILABLE` for nan."""
    if math.isnan(x):
        return NOT_AVAILABLE
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
    if math.isnan(value):
        return NOT_AVAILABLE
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
    if mag / scale >= 1e6:   # past the largest unit: 3.51e+13 J, as 6.19e+16 J, not 14 digits
        return f"{'-' if value < 0 else ''}{mag / scale:.3g} {unit}"
    return f"{'-' if value < 0 else ''}{significant(mag / scale)} {unit}"


def format_energy(j: float) -> str:
    """Joules in pJ, nJ, uJ, mJ or J with 3 significant digits; an em dash for nan (a figure
    that does not exist, such as the energy per training sample of a run without training).

    Examples
    --------
    >>> format_energy(50.1e-9), format_energy(0.5e-12), format_energy(0.0)
    ('50.1 nJ', '0.5 pJ', '0 J')
    >>> format_energy(7e-4), format_energy(float("nan"))
    ('700 uJ', '\u2014')
    """
    return _engineering(j, ENERGY_UNITS)


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


def energy_breakdown(report: EnergyReport) -> dict[str, float]:
    """Energy per category in joules, in the fixed order of ``hw_profiles.ops.CATEGORIES``.

    Every category is present (0.0 where nothing was charged), so plots of several
    profiles line up.
    """
    by_cat = report.by_category()
    return {cat: float(by_cat.get(cat, 0.0)) for cat in CATEGORIES}


# -- the tables of an energy report, as rows of strings -------------------------------------
def percent(part: float, total: float) -> str:
    """``part`` as a share of ``total``, one decimal (``"50.2%"``); ``"-"`` for a zero total."""
    return f"{100.0 * part / total:.1f}%" if total > 0 else "-"


def op_rows(report: EnergyReport) -> list[dict]:
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
    """The price of one op (or byte, or second of static power) in scaled units: 7e8 pJ
    reads "700 uJ", not "700000000 pJ"."""
    if row["category"] == "static":
        return f"{significant(row['unit_pj'] * PJ)} W"  # static lines carry pJ per second
    return format_energy(row["unit_pj"] * PJ) + ("/B" if row["category"] == "memory" else "")


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


def sampled_scopes(reports: Sequence[EnergyReport]) -> list[str]:
    """Every scope that recorded samples in any of ``reports``, in first-seen order."""
    scopes: list[str] = []
    for r in reports:
        scopes += [s for s, n in r.samples.items() if n > 0 and s not in scopes]
    return scopes


def report_tables(report: EnergyReport) -> dict[str, tuple[tuple[str, ...], list]]:
    """Every table of one report, as ``key -> (header, rows of strings)``; renderers pick."""
    total, moved = report.total_j, report.bytes_moved()
    n_moved = sum(moved.values())
    return {
        "category": (("category", "energy", "%"), [
            (c, format_energy(e), percent(e, total)) for c, e in energy_breakdown(report).items()]
            + [("total", format_energy(total), percent(total, total))]),
        "op": (("op", "count", "each", "energy", "%"), [
            (r["item"], _count_text(r), _unit_text(r), format_energy(r["energy_j"]),
             percent(r["energy_j"], total)) for r in op_rows(report)]),
        "scope1": (("scope", "energy", "%"), [
            (s, format_energy(e), percent(e, total)) for s, e in report.by_scope(1).items()]),
        "scope": (("scope", "energy", "%"), [
            (s, format_energy(e), percent(e, total)) for s, e in report.by_scope().items()]),
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


def figures_are(report: EnergyReport) -> str:
    """What the report's figures are, in words: its bound, or "lower bound" and why where
    an op ran uncounted or a time was built as a lower bound (``EnergyReport.energy_bound``)."""
    if report.uncounted:
        return "lower bound (ops ran uncounted)"
    if report.energy_bound() != report.bound or report.latency_bound() != report.bound:
        return ("lower bound where a scope's time is one (the latency table's time model), "
                f"and so its static energy; {report.bound} elsewhere")
    return report.bound


def _nature_rows(report: EnergyReport) -> list[tuple[str, str]]:
    """What the figures are: bound or estimate, model, validation, exclusions, decisions."""
    from hw_profiles.validation import PER_PROFILE_KINDS
    from sim.pricing import error_rows_text
    err = report.validation_error
    of = (report.validation or {}).get("error_rows")
    # whose rows the figure is over, in its label: a neuromorphic report is validated on
    # its own profile's rows only (PER_PROFILE_KINDS); any other on its device kind's rows,
    # or, for a profile no row measures, its profile kind's rows named by their device
    # kinds (an fpga-bnn report: the STM32 boards' mcu rows, none on an FPGA)
    per_profile = report.kind in PER_PROFILE_KINDS
    if err is None:
        label, value = "validation error", (
            f"not validated (no held-out measurement of this "
            f"{'profile' if per_profile else 'profile kind'} can be rebuilt yet; see "
            "neuroedge validate)")
    else:
        value = f"{100 * err:.0f}% (median |predicted / measured - 1| over held-out published "
        if per_profile:
            label, value = "validation error of this profile", value + "measurements)"
        elif of is not None:
            label = f"validation error of {', '.join(of['device_kinds'])} rows"
            value += f"measurements: {error_rows_text(of, report.profile)})"
        else:
            # a report built without the rows' names: its figure is its profile kind's rows
            label = f"validation error of {report.kind}-profile rows"
            value += "measurements)"
    rows = [("figures are", figures_are(report)),
            ("execution model", report.execution_model or "(not recorded)"),
            (label, value)]
    if report.validation is not None:
        from sim.pricing import describe_error
        rows.append((f"held-out error (stack {report.stack})" if report.stack
                     else "held-out error", describe_error(report.validation)))
    rows += [("excludes", x) for x in report.excluded]
    rows += [("note", x) for x in report.notes]
    return rows


def comparison_rows(reports: Sequence[EnergyReport]) -> list[dict]:
    """The cross-profile comparison as plain floats, one dict per report.

    Keys: ``profile``, ``kind``, ``total_j``, ``dynamic_j``, ``static_j``,
    ``launch_idle_j`` (idle power during per-op launches: never dynamic), ``latency_s``,
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
               "dynamic_j": float(r.dynamic_j), "static_j": float(r.static_j),
               "launch_idle_j": float(r.launch_idle_j),
               "latency_s": float(r.total_latency_s),
               "relative_energy": float(r.total_j / ref) if ref > 0 else math.nan}
        per_sample = r.per_sample_j()
        for scope in sampled_scopes(reports):
            row[f"{scope} J/sample"] = float(per_sample.get(scope, math.nan))
        rows.append(row)
    return rows


def comparison_cells(reports: Sequence[EnergyReport]) -> tuple[tuple[str, ...], list]:
    """(header, rows of strings): :func:`comparison_rows` formatted for a table. A "launch
    idle" column (idle power while the host dispatches ops: never dynamic) is shown when some
    report has any."""
    rows = comparison_rows(reports)
    keys = [k for k in rows[0] if k.endswith(" J/sample")]
    idle = ["launch_idle_j"] if any(r["launch_idle_j"] for r in rows) else []
    return (("profile", "total", "dynamic", "static", *(["launch idle"] if idle else []),
             *keys, "latency", "vs first"), [
        (r["profile"], format_energy(r["total_j"]), format_energy(r["dynamic_j"]),
         format_energy(r["static_j"]), *(format_energy(r[k]) for k in idle + keys),
         format_seconds(r["latency_s"]), _times(r["relative_energy"])) for r in rows])


def _times(ratio: float) -> str:
    return NOT_AVAILABLE if math.isnan(ratio) else f"{significant(ratio)}x"


def latency_title(report: EnergyReport) -> str:
    """The latency table's title names its execution model (issue 13 item 5)."""
    if report.time_model:
        return "Estimated latency (per step: slowest core + barrier)"
    return "Estimated latency"   # the "What these figures are" table names the model


def validation_summary(summary: dict) -> list[str]:
    """``neuroedge validate``'s closing lines from its summary (``sim.validation.summarise``
    with ``heldout_factors`` under ``"heldout"``): the rows, how many were predicted,
    held-out against calibration, and the held-out error overall and per device kind in the
    words ``neuroedge estimate`` uses (``sim.pricing.error_factors``), leaving out what no
    row gives; the whole dict is ``--json``'s."""
    from sim.pricing import error_factors

    def rows(n: int) -> str:
        return f"{n:,} row{'' if n == 1 else 's'}"

    def errors(stats: dict) -> str:
        parts = [f"{q} {f}" for q in ("energy", "latency")
                 if (f := error_factors(stats, q)) is not None]
        return "; ".join(parts) or NOT_AVAILABLE

    held = summary["heldout"]
    # calibration rows set fitted profile numbers: an error over them would claim nothing
    lines = [f"summary: {rows(summary['rows'])}, {summary['all']['predicted']:,} predicted "
             f"({summary['held-out']['predicted']:,} held-out, "
             f"{summary['calibration']['predicted']:,} calibration: fitted on), "
             f"{summary['status']['not rebuildable']:,} not rebuildable"]
    if not held["heldout_rows"]:
        return lines + ["held-out error: none (no held-out row was predicted)"]
    # the factor max(r, 1/r) of predicted / measured r, as the estimate's error lines give it
    lines.append(f"held-out error, max(r, 1/r): {errors(held)}")
    lines += [f"  {kind} ({rows(stats['rows'])}): {errors(stats)}"
              for kind, stats in held["device_kind_factors"].items() if stats["rows"]]
    return lines
