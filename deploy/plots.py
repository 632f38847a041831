"""Plots for reports (matplotlib ``Figure`` objects, no global pyplot state) and their
encoding as self-contained base64 PNG ``<img>`` tags."""
from __future__ import annotations

import base64
import functools
import html
import io
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from deploy.formatting import ENERGY_UNITS, energy_breakdown, format_energy, printable
from hw_profiles.ops import CATEGORIES
from sim.energy_report import EnergyReport

_COLORS = dict(zip(CATEGORIES, ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8C8C8C",
                                 "#937860"), strict=True))
_LOG_RATIO = 100.0  # comparison plots switch to a log axis past this spread of totals


def plain_label(text: str) -> str:
    """A file's text (a trace's name or unit, a profile's name) as a plot label: control
    characters escaped (:func:`deploy.formatting.printable`) and ``$`` as ``\\$``, so
    matplotlib draws it as written rather than parsing it as mathtext (``a$\\frac{$`` was a
    ParseException traceback in ``report --html``)."""
    return printable(text).replace("$", r"\$")


def _plain_labels(plot):
    """``plot`` with every text argument (a string, or a tuple of strings: a table's
    series names) passed through :func:`plain_label`; figures are what it takes else."""
    def label(arg):
        if isinstance(arg, str):
            return plain_label(arg)
        if isinstance(arg, tuple) and all(isinstance(a, str) for a in arg):
            return tuple(map(plain_label, arg))
        return arg

    @functools.wraps(plot)
    def plot_with_plain_labels(*args, **kw):
        return plot(*map(label, args), **{k: label(v) for k, v in kw.items()})
    return plot_with_plain_labels


def _scale(values, units=ENERGY_UNITS) -> tuple[float, str]:
    top = max((abs(v) for v in values), default=0.0)
    return next(((s, u) for s, u in reversed(units) if top >= s), units[0])


@_plain_labels
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
    ax.set_xticks(range(len(reports)), [plain_label(r.profile) for r in reports], fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(f"estimated energy ({unit})" + (", log scale" if log else ""))
    ax.set_title("Energy by category per profile", fontsize=10)
    if cats:   # an empty ledger has no bars to name
        ax.legend(fontsize=8)
    return fig


def _with_unit(label: str, unit: str) -> str:
    return f"{label} ({unit})" if unit else label


@_plain_labels
def plot_trace(name: str, values: np.ndarray, unit: str = "") -> Figure:
    """A ``curve`` trace (e.g. ``train_loss`` per epoch) as a line plot, x counted from 1;
    the y axis is the trace's name with its unit."""
    values = np.asarray(values, dtype=float)
    fig = Figure(figsize=(6.0, 3.0), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(np.arange(1, values.size + 1), values, marker="o" if values.size <= 50 else None,
            markersize=3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("entry (epoch for per-epoch traces)")
    ax.set_ylabel(_with_unit(name, unit))
    ax.set_title(name, fontsize=10)
    ax.grid(alpha=0.3)
    return fig


@_plain_labels
def plot_bands(name: str, data: np.ndarray, series: Sequence[str], unit: str = "") -> Figure:
    """A ``bands`` trace (series, seeds, steps): per series the mean over seeds as a line and
    a band from mean - std to mean + std (population std over seeds), x counted from 1."""
    data = np.asarray(data, dtype=float)
    fig = Figure(figsize=(6.0, 3.2), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(1, data.shape[2] + 1)
    for label, runs in zip(series, data, strict=True):
        mean, std = runs.mean(0), runs.std(0)
        (line,) = ax.plot(x, mean, marker="o" if x.size <= 50 else None, markersize=3,
                          label=label)
        ax.fill_between(x, mean - std, mean + std, color=line.get_color(), alpha=0.2,
                        linewidth=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("entry (iteration / epoch)")
    ax.set_ylabel(_with_unit(name, unit))
    ax.set_title(f"{name}: mean over {data.shape[1]} seeds, band +-1 std", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


@_plain_labels
def plot_image_grid(name: str, images: np.ndarray, unit: str = "",
                    max_images: int = 16) -> Figure:
    """An ``images`` trace (N, H, W) as a row of grey pictures (e.g. learned prototypes),
    N <= 16; the title carries the unit of the grey scale."""
    images = np.asarray(images, dtype=float)[:max_images]
    if len(images) == 1:
        return _plot_one_image(name, images[0], unit)
    lo, hi = float(images.min()), float(images.max())
    fig = Figure(figsize=(0.9 * len(images) + 0.4, 1.4), layout="constrained")
    for i, ax in enumerate(fig.subplots(1, len(images), squeeze=False)[0]):
        ax.imshow(images[i], cmap="gray", vmin=lo, vmax=hi if hi > lo else lo + 1.0)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(str(i), fontsize=7)
    fig.suptitle(_with_unit(name, unit), fontsize=9)
    return fig


@_plain_labels
def plot_pictures(name: str, pictures: np.ndarray, unit: str = "",
                  max_images: int = 8) -> Figure:
    """A ``pictures`` trace (N, H, W, 3), RGB in [0, 1], as a row of colour pictures large
    enough to read the overlays drawn into them (keypoints, boxes, anomaly heat), N <= 8."""
    pictures = np.asarray(pictures, dtype=float)[:max_images]
    n = len(pictures)
    fig = Figure(figsize=(2.2 * n + 0.4, 2.6), layout="constrained")
    for i, ax in enumerate(fig.subplots(1, n, squeeze=False)[0]):
        ax.imshow(pictures[i], interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(str(i), fontsize=7)
    fig.suptitle(_with_unit(name, unit), fontsize=9)
    return fig


@_plain_labels
def plot_scatter(name: str, points: np.ndarray, unit: str = "",
                 max_points: int = 50_000) -> Figure:
    """A ``scatter`` trace (k, 3) of (x, y, value): the points coloured by value (a diverging
    map centred on 0 when the values change sign, e.g. per-point scores in [-1, 1]), with a
    colour bar in the trace's unit; thinned evenly past ``max_points``."""
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    step = max(1, -(-points.shape[0] // max_points))
    shown = points[::step]
    lo, hi = float(shown[:, 2].min()), float(shown[:, 2].max())
    fig = Figure(figsize=(5.6, 4.4), layout="constrained")
    ax = fig.add_subplot()
    if lo < 0 < hi:
        lim = max(-lo, hi)
        kw = {"cmap": "RdBu", "vmin": -lim, "vmax": lim}
    else:
        kw = {"cmap": "viridis"}
    sc = ax.scatter(shown[:, 0], shown[:, 1], c=shown[:, 2], s=6, linewidths=0, **kw)
    fig.colorbar(sc, ax=ax, label=_with_unit("value", unit))
    ax.set_aspect("equal", adjustable="datalim")
    note = f", every {step}th of {points.shape[0]:,}" if step > 1 else \
        f", {points.shape[0]:,} points"
    ax.set_title(f"{name}{note}", fontsize=10)
    return fig


def _plot_one_image(name: str, image: np.ndarray, unit: str) -> Figure:
    """A single picture (a map: a local-ID globe) drawn large in colour with a colour bar;
    nan cells (no data) stay blank."""
    finite = image[np.isfinite(image)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    h, w = image.shape
    fig = Figure(figsize=(7.0, max(1.5, 6.0 * h / w + 0.6)), layout="constrained")
    ax = fig.add_subplot()
    shown = ax.imshow(np.ma.masked_invalid(image), cmap="viridis", vmin=lo,
                      vmax=hi if hi > lo else lo + 1.0, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    fig.colorbar(shown, ax=ax, shrink=0.8).set_label(unit or "value", fontsize=8)
    ax.set_title(name, fontsize=10)
    return fig


def fig_to_img(fig: Figure, alt: str) -> str:
    """The figure as a PNG embedded in an HTML <img> tag (no external file)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    # class=plot: the report's plots are found by it (and checked for size in a browser)
    alt = html.escape(printable(alt))
    return f'<img src="data:image/png;base64,{data}" class=plot alt="{alt}">'


@_plain_labels
def plot_raster(name: str, raster: np.ndarray, unit: str = "s",
                max_points: int = 200_000) -> Figure:
    """Spike raster from a (k, 2) array of (spike time in ``unit``, neuron index); thinned
    evenly past ``max_points`` spikes so the PNG stays small (the title says so)."""
    raster = np.asarray(raster, dtype=float).reshape(-1, 2)
    step = max(1, -(-raster.shape[0] // max_points))
    shown = raster[::step]
    fig = Figure(figsize=(7.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    ax.scatter(shown[:, 0], shown[:, 1], s=0.5, c="k", marker=".", linewidths=0)
    ax.set_xlabel(_with_unit("time", unit or "s"))
    ax.set_ylabel("neuron")
    note = f", every {step}th of {raster.shape[0]:,} spikes" if step > 1 else \
        f", {raster.shape[0]:,} spikes"
    ax.set_title(f"{name}{note}", fontsize=10)
    return fig


@_plain_labels
def plot_per_core(name: str, values: np.ndarray, unit: str = "") -> Figure:
    """A ``per_core`` trace: one bar per core, the y axis in the trace's unit."""
    values = np.asarray(values, dtype=float)
    fig = Figure(figsize=(7.0, 2.8), layout="constrained")
    ax = fig.add_subplot()
    ax.bar(np.arange(values.size), values, color="#4C72B0")
    ax.set_xlabel("core")
    ax.set_ylabel(_with_unit(name, unit))
    if values.size and float(values.min()) >= 0:
        ax.set_ylim(bottom=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(name, fontsize=10)
    return fig


def plot_comparison_shares(reports: Sequence[EnergyReport]) -> Figure:
    """Two panels per profile, readable however far apart the totals are: the total energy
    on a log axis (each bar labelled with its value), and the energy split by category as
    stacked shares of that profile's own total (each bar sums to 100 %)."""
    names = [plain_label(r.profile) for r in reports]
    totals = [float(r.total_j) for r in reports]
    data = [energy_breakdown(r) for r in reports]
    cats = [c for c in CATEGORIES if any(d[c] > 0 for d in data)]
    fig = Figure(figsize=(9.0, 1.5 + 0.45 * max(len(reports), 1)), layout="constrained")
    ax_total, ax_share = fig.subplots(1, 2, sharey=True, width_ratios=(1, 1.3))
    ys = np.arange(len(reports))
    positive = [t for t in totals if t > 0]
    # a zero total has no place on a log axis: drawn at the axis floor, labelled "0 J"
    floor = min(positive) / 10 if positive else 1e-12
    bars = ax_total.barh(ys, [t if t > 0 else floor for t in totals], color="#4C72B0")
    ax_total.bar_label(bars, labels=[format_energy(t) for t in totals], padding=3, fontsize=8)
    ax_total.set_xscale("log")
    if positive:   # room for the labels right of the longest bar
        ax_total.set_xlim(floor, max(positive) * 30)
    ax_total.set_yticks(ys, names, fontsize=8)
    ax_total.invert_yaxis()
    ax_total.set_xlabel("estimated energy (J, log scale)")
    ax_total.set_title("Total energy per profile", fontsize=10)
    left = np.zeros(len(reports))
    for cat in cats:
        share = np.array([100.0 * d[cat] / t if t > 0 else 0.0
                          for d, t in zip(data, totals, strict=True)])
        ax_share.barh(ys, share, left=left, color=_COLORS[cat], label=cat)
        left += share
    ax_share.set_xlim(0, 100)
    ax_share.set_xlabel("share of the profile's total (%)")
    ax_share.set_title("Energy by category (stacked shares)", fontsize=10)
    if cats:   # below the panels, where it hides no bar
        fig.legend(*ax_share.get_legend_handles_labels(), loc="outside lower center",
                   ncols=len(cats), fontsize=8, frameon=False)
    return fig


@_plain_labels
def plot_rate_histogram(rates_hz: np.ndarray, title: str) -> Figure:
    """Histogram of per-neuron firing rates (Hz), silent neurons included in the first bin."""
    rates = np.asarray(rates_hz, dtype=float)
    fig = Figure(figsize=(6.0, 3.0), layout="constrained")
    ax = fig.add_subplot()
    top = float(rates.max()) if rates.size else 0.0
    ax.hist(rates, bins=min(50, max(1, rates.size)), range=(0.0, top if top > 0 else 1.0),
            color="#4C72B0")
    ax.set_xlabel("firing rate (Hz)")
    ax.set_ylabel("neurons")
    ax.set_title(title, fontsize=10)
    return fig


@_plain_labels
def plot_epoch_energy(bars_j: np.ndarray, curve_name: str = "",
                      curve: np.ndarray | None = None, curve_unit: str = "",
                      title: str = "Training energy per epoch",
                      labels: Sequence[str] | None = None) -> Figure:
    """Bars of the training energy (J, scaled to a readable unit), one per entry of
    ``bars_j`` labelled by ``labels`` (default 1, 2, ...: one per epoch) and, when a
    per-epoch curve of the same length is given (a loss), that curve on a second axis."""
    bars = np.asarray(bars_j, dtype=float)
    scale, unit = _scale(bars)
    x = np.arange(1, bars.size + 1)
    fig = Figure(figsize=(7.0, 3.2), layout="constrained")
    ax = fig.add_subplot()
    ax.bar(x, bars / scale, color="#4C72B0", alpha=0.8, label="energy of the epoch",
           width=0.8 if bars.size > 1 else 0.4)
    ax.set_xlabel("epoch" if labels is None or bars.size > 1 else "epochs")
    ax.set_ylabel(f"estimated energy ({unit})")
    if labels is not None:
        ax.set_xticks(x, list(labels))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if curve is not None and np.asarray(curve).size == bars.size:
        twin = ax.twinx()
        twin.plot(x, np.asarray(curve, dtype=float), color="#C44E52", marker="o",
                  markersize=3)
        twin.set_ylabel(_with_unit(curve_name, curve_unit), color="#C44E52")
    ax.set_title(title, fontsize=10)
    return fig
