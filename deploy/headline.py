"""The figures a report leads with, shared by the terminal, the HTML and ``--json``.

A run's answer is a handful of numbers: its main metric with its unit, the total energy,
the energy of one inference and of one training sample, the latency, and how every
compared profile stands against the first. :func:`headline` gives them as (label, text)
pairs for the renderers, :func:`summary` as plain floats for ``--json``.

Which scope is "inference" and which "training", and how many samples each processed, is
the rule of :mod:`sim.phases` (one rule for the terminal, the HTML, ``--json`` and the
NeuroBench metrics); energy and latency of a scope include its sub-scopes.

Every energy and latency figure says how sure it is: an estimate or a bound
(``EnergyReport.energy_bound``, ``latency_bound``), and the held-out error of the profile's kind
and stack beside it (:func:`heldout_text`), from the shipped validation summary
(``hw_profiles.validation.heldout_error``, attached by ``sim.pricing``).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from deploy.formatting import (
    NOT_AVAILABLE,
    format_bytes,
    format_energy,
    format_seconds,
    significant,
)
from sim import phases
from sim.energy_report import EnergyReport
from sim.scope_paths import within


# -- scopes (the rule lives in sim.phases; these read it off a report) ----------------------
def train_scope(report: EnergyReport) -> str | None:
    """The report's depth-1 training scope (:func:`sim.phases.train_scope`)."""
    return phases.train_scope(report.samples)


def inference_scope(report: EnergyReport) -> str | None:
    """The report's depth-1 inference scope (:func:`sim.phases.inference_scope`)."""
    return phases.inference_scope(report.samples)


def scope_samples(report: EnergyReport, scope: str | None) -> int:
    """Samples of ``scope`` and its sub-scopes (:func:`sim.phases.scope_samples`)."""
    return phases.scope_samples(report.samples, scope)


def per_sample_j(report: EnergyReport, scope: str | None) -> float:
    """Energy of ``scope`` (sub-scopes included) per sample of it; nan without samples."""
    n = scope_samples(report, scope)
    return report.energy_within(scope) / n if n else math.nan


def latency_within(report: EnergyReport, scope: str | None) -> float:
    """Estimated seconds of ``scope`` and its sub-scopes; nan for no scope."""
    if scope is None:
        return math.nan
    return sum(s for k, s in report.latency_s.items() if within(k, scope))


# -- how sure a figure is ---------------------------------------------------------------------
def heldout_text(report: EnergyReport, quantity: str, source: bool = True) -> str:
    """The held-out error of ``quantity`` ("energy" or "latency") for the profile's kind and
    stack, e.g. ``"held-out energy error x36 median, x239 worst (gpu/all stacks, 4 rows)"``:
    the factors ``neuroedge estimate`` prints too (``sim.pricing``); ``source=False`` leaves
    out whose rows they are (the headline says it once, on its first figure)."""
    from sim.pricing import error_factors, error_source
    err = report.validation
    factors = error_factors(err, quantity)
    if factors is not None:
        return (f"held-out {quantity} error {factors}"
                + (f" ({error_source(err)})" if source else ""))
    if err is not None:
        return f"{quantity} error unknown: no held-out row of {error_source(err)} gives it"
    return (f"{quantity} error unknown: no held-out {report.kind} measurement of "
            f"{report.profile}" + (" is predicted yet" if source else ""))


# -- metrics ----------------------------------------------------------------------------------
def _card(model: str):
    """The registered card of ``model``; None for a user's model or a name no longer
    registered (its run file then says all there is)."""
    import models
    method = models.REGISTRY.get(model)
    return method.card if method is not None else None


def main_metric(run) -> str | None:
    """The metric the headline leads with: the run file's, else its card's, else an
    accuracy, else the first metric; None for a run without metrics."""
    names = list(run.metrics)
    candidates = [getattr(run, "main_metric", None)]
    if candidates[0] not in run.metrics:
        card = _card(run.model)
        candidates.append(getattr(card, "main_metric", None) if card is not None else None)
    candidates += ["test_accuracy", "accuracy", *names[:1]]
    return next((c for c in candidates if c in run.metrics), None)


def preset_text(run) -> str:
    """``"quick preset"``, ``"full preset"``; ``"preset not recorded"`` for a run whose file
    never recorded it (format version 1-2: ``preset`` None)."""
    preset = getattr(run, "preset", None)
    return "preset not recorded" if preset is None else f"{preset} preset"


def preset_note(run) -> str | None:
    """What the run's preset cannot show, from its card (``models.registry.preset_note``):
    a quick run too small to show its claim says so; None when the card has no note or the
    preset is not recorded (a version-2 file may hold a full run)."""
    from models.registry import preset_note as card_note
    preset = getattr(run, "preset", None)
    return None if preset is None else card_note(_card(run.model), preset)


def unit_of(run, name: str) -> str:
    """The unit the run file records for ``name``; for a file without units the card's
    (``models.registry.metric_unit``), else ``"?"``."""
    units = getattr(run, "units", None) or {}
    if name in units:
        return units[name]
    card = _card(run.model)
    if card is not None:
        from models.registry import metric_unit
        unit = metric_unit(card, name)
        if unit is not None:
            return unit
    return "?"


def value_text(value: float, unit: str) -> str:
    """A metric as read: 6 significant digits, then its unit (none shown for ``"1"``,
    ``"unit not recorded"`` for ``"?"``); bytes in engineering units, joules as energies."""
    if math.isnan(value):
        return NOT_AVAILABLE
    if not math.isfinite(value):
        return f"{value} {unit}" if unit not in ("1", "?") else str(value)
    if unit == "B":
        return format_bytes(value)
    if unit == "J":
        return format_energy(value)
    text = f"{value:,.0f}" if unit == "count" and value == int(value) else f"{value:.6g}"
    if unit == "1":
        return text
    return text + (" (unit not recorded)" if unit == "?" else f" {unit}")


def metrics_title(run, priced: str | None = None) -> str:
    """The metrics table's title: the run's metrics are what it recorded on its own profile
    (an energy metric among them), which a report priced on another profile says, lest they
    read as that profile's (its headline is)."""
    if priced is None or priced == run.profile.label:
        return "Metrics"
    return f"Metrics (as the run recorded them on {run.profile.label}, not repriced)"


def metric_rows(run) -> list[tuple[str, str, str]]:
    """(metric, value, unit) of every metric, the main metric first."""
    main = main_metric(run)
    order = ([main] if main else []) + [k for k in run.metrics if k != main]
    return [(k, NOT_AVAILABLE if math.isnan(run.metrics[k]) else f"{run.metrics[k]:.6g}",
             unit_of(run, k)) for k in order]


def neurobench(run, report: EnergyReport | None = None) -> dict[str, tuple[float, str]]:
    """NeuroBench's metrics of the run (``sim.neurobench``), flat: ``{name: (value, unit)}``
    with SynapticOperations' parts as ``SynapticOperations.KEY``; workload metrics per
    sample of the inference scope (``sim.phases``)."""
    from sim import neurobench as nb
    values = nb.flat(nb.metrics(run.ledger, inference_scope(report) if report else None))
    return {k: (float(v), nb.METRIC_UNITS.get(k, "")) for k, v in values.items()}


def neurobench_text(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    if unit == "B":
        return format_bytes(value)
    # per-sample counts are means (fractional); thousands separated from 1000 up
    text = f"{value:,.0f}" if abs(value) >= 1000 else significant(value)
    if unit.endswith("/sample"):   # "MACs/sample": the title says per sample
        unit = unit[:-len("/sample")]
    return f"{text} {unit}" if unit and unit not in ("fraction", "parameters") else text


# -- the headline -------------------------------------------------------------------------
def ratio_text(a: float, b: float) -> str:
    return f"{significant(a / b)}x" if b > 0 and math.isfinite(a) and a >= 0 else "-"


def _samples_text(n: int) -> str:
    return f"{n:,} sample{'s' if n != 1 else ''}"


def headline(run, reports: Sequence[EnergyReport], errors: bool = True
             ) -> list[tuple[str, str]]:
    """(label, value text) of the figures a report leads with, in order: the main metric
    with its unit, the preset's note when its card has one (:func:`preset_note`), total
    energy on the first report's profile (dynamic, static and idle during launches), energy
    per inference and per training sample (scopes as in the module docstring), latency,
    then one row per further report: its total, its ratio to the first, per inference. Each
    energy and latency figure says whether it is an estimate or a bound and, with
    ``errors``, the held-out error beside it (:func:`heldout_text`).

    Parameters
    ----------
    run : the run (``models.registry.RunResult``) whose ledger the reports priced
    reports : its pricings; the first is the reference (the run's own profile, or the first
        of ``compare --profiles``)
    errors : False leaves the held-out errors out (the HTML's one-paragraph lead, with the
        full table under it)
    """
    first = reports[0]

    def error(quantity: str, source: bool = False) -> str:
        return f"; {heldout_text(first, quantity, source)}" if errors else ""
    inf, train = inference_scope(first), train_scope(first)
    rows: list[tuple[str, str]] = []
    main = main_metric(run)
    if main is not None:
        rows.append((main, value_text(run.metrics[main], unit_of(run, main))))
    note = preset_note(run)
    if note is not None:   # what this preset cannot show, beside the figure it qualifies
        rows.append((preset_text(run), note))
    # idle power during kernel launches is its own part: the device does no work then
    rows.append(("total energy", f"{format_energy(first.total_j)} on {first.profile}, "
                 f"{first.energy_bound(None)}: dynamic {format_energy(first.dynamic_j)}, "
                 f"static {format_energy(first.static_j)}"
                 + (f", idle during launches {format_energy(first.launch_idle_j)}"
                    if first.launch_idle_j else "")
                 + error("energy", source=True)))
    for label, scope, none in (("energy per inference", inf, "inference"),
                               ("energy per train sample", train, "training")):
        if scope is None:
            rows.append((label, f"- (no {none} scope recorded samples)"))
            continue
        rows.append((label, f"{format_energy(per_sample_j(first, scope))}, "
                     f"{first.energy_bound(scope)} ({scope}: "
                     f"{_samples_text(scope_samples(first, scope))})" + error("energy")))
    lat = f"{format_seconds(first.total_latency_s)} whole run, {first.latency_bound(None)}"
    if inf is not None:
        lat += (f"; {inf} {format_seconds(latency_within(first, inf))}, "
                f"{first.latency_bound(inf)}")
    rows.append(("latency", lat + error("latency")))
    for r in reports[1:]:
        # each figure says how sure it is, as the run's own rows do (another chip's time
        # without a re-placement is a lower bound)
        text = (f"{ratio_text(r.total_j, first.total_j)} the energy ({format_energy(r.total_j)}"
                f", {r.energy_bound(None)}; latency {format_seconds(r.total_latency_s)}, "
                f"{r.latency_bound(None)}")
        if inf is not None:
            text += (f"; {format_energy(per_sample_j(r, inf))} per inference, "
                     f"{r.energy_bound(inf)}")
        rows.append((f"vs {r.profile}", text + ")"))
    return rows


def _num(x) -> float | None:
    """A float for strict JSON: nan and infinities as None."""
    x = float(x)
    return x if math.isfinite(x) else None


def profile_row(report: EnergyReport, first: EnergyReport) -> dict:
    """One profile's figures as plain floats (J, s; None where a figure does not exist)."""
    inf, train = inference_scope(first), train_scope(first)
    return {"profile": report.profile, "kind": report.kind, "bound": report.bound,
            "total_bound": report.energy_bound(),
            "per_inference_bound": report.energy_bound(inf) if inf else None,
            "per_train_sample_bound": report.energy_bound(train) if train else None,
            "latency_bound": report.latency_bound(),
            "total_j": _num(report.total_j), "dynamic_j": _num(report.dynamic_j),
            "launch_idle_j": _num(report.launch_idle_j),
            "static_j": _num(report.static_j), "latency_s": _num(report.total_latency_s),
            "per_inference_j": _num(per_sample_j(report, inf)),
            "per_train_sample_j": _num(per_sample_j(report, train)),
            "relative_energy": _num(report.total_j / first.total_j) if first.total_j > 0
            else None,
            "per_sample_j": {s: _num(j) for s, j in report.per_sample_j().items()}}


def summary(run, reports: Sequence[EnergyReport]) -> dict:
    """What ``--json`` writes: the run, its metrics with units, NeuroBench's metrics and
    one row of energy figures per report (the first is the reference). Strict JSON: no
    nan (None instead)."""
    first = reports[0]
    nb = neurobench(run, first)
    return {
        "format": "neuroedge.summary", "format_version": 1,
        "model": run.model, "dataset": run.dataset, "preset": run.preset,
        "run_profile": run.profile.label, "run_file": run.file.path if run.file else None,
        "main_metric": main_metric(run),
        "metrics": {k: {"value": _num(v), "unit": unit_of(run, k)}
                    for k, v in run.metrics.items()},
        "neurobench": None if nb is None else {k: {"value": _num(v), "unit": u}
                                               for k, (v, u) in nb.items()},
        "inference_scope": inference_scope(first), "train_scope": train_scope(first),
        "inference_samples": scope_samples(first, inference_scope(first)),
        "train_samples": scope_samples(first, train_scope(first)),
        "headline": [list(pair) for pair in headline(run, reports)],
        "profiles": [profile_row(r, first) for r in reports],
    }
