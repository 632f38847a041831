"""Typed traces: arrays a run records beside its ledger, each saying what it is.

A trace declares its ``kind`` (how it is drawn) and ``unit`` (what its values are in), so
the report draws by kind and never guesses from a name:

========== ================================ ===========================================
kind       data                             drawn as
========== ================================ ===========================================
curve      1-D, one value per step / epoch  a line over the index
raster     (k, 2): spike time (s), neuron   a spike raster
per_core   1-D, one value per core          bars per core
images     (N, H, W)                        a row of pictures
pictures   (N, H, W, 3): RGB in [0, 1]          a row of colour pictures (overlays drawn in:
                                            keypoints, boxes, heat over a slice)
table      2-D, rows x ``columns``          an HTML table
scatter    (k, 3): x, y, value              points at (x, y) coloured by value
bands      (A, S, T): A series (``columns`` one line per series: the mean over the S
           name them) x S seeds x T steps   seeds, shaded from mean - std to mean + std
========== ================================ ===========================================
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from sim.errors import ModelError

TRACE_KINDS = ("curve", "raster", "per_core", "images", "pictures", "table", "scatter",
               "bands")
NUMBER_DTYPES = "biuf"
"""numpy dtype kinds a trace of every kind may hold: bool, signed, unsigned, float (real
numbers; no complex, compound, object or text)."""
TABLE_DTYPES = NUMBER_DTYPES + "US"
"""A table may also hold text."""


@dataclass(frozen=True)
class Trace:
    """One recorded array with its kind and unit (``""``: a plain count or a fraction).

    ``columns`` names the columns of a ``table`` and the series of ``bands`` (and only
    those).
    """

    kind: str
    data: np.ndarray
    unit: str = ""
    columns: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in TRACE_KINDS:
            raise ModelError(f"Trace kind {self.kind!r} is not known; kinds are "
                              f"{', '.join(TRACE_KINDS)}")
        data = np.asarray(self.data)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "columns", tuple(str(c) for c in self.columns))
        allowed = TABLE_DTYPES if self.kind == "table" else NUMBER_DTYPES
        if data.dtype.kind not in allowed:
            # every plot converts to float: text was a ValueError traceback, complex a
            # warning that dropped the imaginary part, a compound dtype a TypeError
            raise ModelError(f"Trace of kind {self.kind!r} has dtype {data.dtype}; expected "
                             "real numbers (bool, int or float"
                             + (") or text" if self.kind == "table" else "; only a table "
                                "holds text)"))
        expected = {"curve": "1-D", "per_core": "1-D", "raster": "(k, 2)",
                    "images": "(N, H, W)", "pictures": "(N, H, W, 3)", "table": "2-D",
                    "scatter": "(k, 3)",
                    "bands": "(series, seeds, steps)"}[self.kind]
        ok = {"curve": data.ndim == 1, "per_core": data.ndim == 1,
              "raster": data.ndim == 2 and data.shape[1] == 2,
              "images": data.ndim == 3,
              "pictures": data.ndim == 4 and data.shape[3] == 3, "table": data.ndim == 2,
              "scatter": data.ndim == 2 and data.shape[1] == 3,
              "bands": data.ndim == 3}[self.kind]
        if not ok:
            raise ModelError(f"Trace of kind {self.kind!r} has shape {data.shape}; expected "
                              f"{expected}")
        if self.kind == "pictures" and data.size and not (
                np.isfinite(data).all() and data.min() >= 0.0 and data.max() <= 1.0):
            raise ModelError(f"pictures Trace holds values in [{np.nanmin(data):.4g}, "
                              f"{np.nanmax(data):.4g}] or non-finite ones; expected RGB in [0, 1]")
        if self.kind == "raster" and data.size and not (
                data.dtype.kind in "iuf" and np.isfinite(data).all()
                and (data[:, 1] >= 0).all() and (data[:, 1] < 2**53).all()
                and (data[:, 1] == np.floor(data[:, 1])).all()):
            # a reader bins spikes by neuron: a negative, fractional, huge or non-finite
            # index (a hand-edited run file) would fail there, or overflow its int64
            raise ModelError("raster Trace holds a non-finite time or a neuron index that is "
                             "not an integer in 0 .. 2**53; expected (time, neuron) rows")
        if self.kind in ("per_core", "scatter") and data.size and not np.isfinite(
                data if self.kind == "per_core" else data[:, :2]).all():
            # a core's load and a point's place are numbers; inf drew no bar but a warning
            raise ModelError(f"{self.kind} Trace holds a non-finite "
                             + ("value; expected a finite value per core" if self.kind ==
                                "per_core" else "x or y; expected finite (x, y, value) rows"))
        if self.kind == "table" and len(self.columns) != data.shape[1]:
            raise ModelError(f"table Trace has {data.shape[1]} columns but "
                              f"{len(self.columns)} column names")
        if self.kind == "bands" and len(self.columns) != data.shape[0]:
            raise ModelError(f"bands Trace has {data.shape[0]} series but "
                              f"{len(self.columns)} series names")
        if self.kind not in ("table", "bands") and self.columns:
            raise ModelError(f"Trace of kind {self.kind!r} has column names; only a "
                              "table or bands have them")


def curve(values, unit: str = "") -> Trace:
    """A 1-D trace (one value per epoch or step)."""
    return Trace("curve", np.asarray(values, dtype=float), unit)


def bands(series: Mapping[str, object], unit: str = "") -> Trace:
    """A ``bands`` trace from ``{name: (seeds, steps) array}``: curves over seeds per series."""
    names = list(series)
    return Trace("bands", np.stack([np.asarray(series[k], dtype=float) for k in names]), unit,
                 tuple(names))


def as_traces(traces: Mapping) -> dict[str, Trace]:
    """Check that every value is a :class:`Trace` (a bare array does not say how to draw it)."""
    out = {}
    for name, trace in dict(traces or {}).items():
        if not isinstance(trace, Trace):
            raise ModelError(f"trace {name!r} is a {type(trace).__name__}; wrap it in "
                              f"sim.traces.Trace(kind, data, unit) with kind one of "
                              f"{', '.join(TRACE_KINDS)}")
        out[str(name)] = trace
    return out
