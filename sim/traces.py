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
table      2-D, rows x ``columns``          an HTML table
bands      (S, T): S seeds' curves          their mean over the index, a min-max band
========== ================================ ===========================================
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from sim.errors import ModelError

TRACE_KINDS = ("curve", "raster", "per_core", "images", "table", "bands")


@dataclass(frozen=True)
class Trace:
    """One recorded array with its kind and unit (``""``: a plain count or a fraction).

    ``columns`` names the columns of a ``table`` (and only of a table).
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
        expected = {"curve": "1-D", "per_core": "1-D", "raster": "(k, 2)",
                    "images": "(N, H, W)", "table": "2-D",
                    "bands": "(S, T): one row per seed"}[self.kind]
        ok = {"curve": data.ndim == 1, "per_core": data.ndim == 1,
              "raster": data.ndim == 2 and data.shape[1] == 2,
              "images": data.ndim == 3, "table": data.ndim == 2,
              "bands": data.ndim == 2}[self.kind]
        if not ok:
            raise ModelError(f"Trace of kind {self.kind!r} has shape {data.shape}; expected "
                              f"{expected}")
        if self.kind == "table" and len(self.columns) != data.shape[1]:
            raise ModelError(f"table Trace has {data.shape[1]} columns but "
                              f"{len(self.columns)} column names")
        if self.kind != "table" and self.columns:
            raise ModelError(f"Trace of kind {self.kind!r} has column names; only a "
                              "table has them")


def curve(values, unit: str = "") -> Trace:
    """A 1-D trace (one value per epoch or step)."""
    return Trace("curve", np.asarray(values, dtype=float), unit)


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
