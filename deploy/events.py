"""Event-camera data as spike arrays: tonic's ``.npy`` event layout and a synthetic set.

tonic (and the DVS Gesture / N-MNIST loaders built on it) keeps events as a numpy
structured array with fields ``x``, ``y``, ``t`` (microseconds) and ``p`` (polarity 0/1).
:func:`events_to_spikes` bins them into the dense ``(T, 2, H, W)`` spike counts an NIR
``Input`` of shape ``(2, H, W)`` takes, one bin per time step ``dt``; all events at once
(``np.add.at`` over index arrays, no loop per event). :func:`synthetic_events` makes a
small bundled stand-in: a bright bar sweeping across the sensor (ON events at its leading
edge, OFF at its trailing edge), seeded.

AEDAT files are not read: tonic's AEDAT4 reader needs the ``aedat`` package, which is not a
dependency here; convert them to tonic's ``.npy`` layout first.
"""
from __future__ import annotations

import numpy as np

from deploy.errors import ExportError

EVENT_FIELDS = ("x", "y", "t", "p")


def is_events(arr) -> bool:
    """Whether ``arr`` is a structured array of events (fields x, y, t, p)."""
    names = getattr(getattr(arr, "dtype", None), "names", None) or ()
    return all(f in names for f in EVENT_FIELDS)


def events_to_spikes(events, shape, dt: float, steps: int, *, what="the events") -> np.ndarray:
    """Spike counts ``(steps, *shape)`` (int64) of ``events`` binned by ``dt`` seconds from
    the first event's time; ``shape`` is ``(2, H, W)`` (polarity, row, column). Events past
    ``steps`` bins are dropped (the run is shorter than the recording)."""
    shape = tuple(int(s) for s in shape)
    if len(shape) != 3 or shape[0] != 2:
        raise ExportError(f"stimulus {what}: events need an Input of shape (2, H, W) "
                          f"(polarity, height, width); this Input has shape {shape}")
    ev = np.asarray(events)
    x, y = ev["x"].astype(np.int64), ev["y"].astype(np.int64)
    p = (ev["p"].astype(np.int64) > 0).astype(np.int64)
    t = ev["t"].astype(np.float64)
    bad = (x < 0) | (x >= shape[2]) | (y < 0) | (y >= shape[1])
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ExportError(f"stimulus {what}: event {i} at (x={x[i]}, y={y[i]}) lies outside "
                          f"the Input's {shape[2]} x {shape[1]} (width x height) sensor")
    out = np.zeros((steps, *shape), np.int64)
    if ev.size:
        step = np.floor((t - t.min()) / (dt * 1e6)).astype(np.int64)   # t in microseconds
        keep = step < steps
        np.add.at(out, (step[keep], p[keep], y[keep], x[keep]), 1)
    return out


def synthetic_events(width: int = 128, height: int = 128, duration_us: int = 100_000,
                     rate_per_us: float = 0.5, seed: int = 0) -> np.ndarray:
    """A bar of width/8 pixels sweeping left to right over ``duration_us``: ON events
    (p=1) near its leading edge, OFF (p=0) near its trailing edge, Poisson in time at
    ``rate_per_us`` events per microsecond, rows uniform. tonic's dtype (x, y int16;
    t int64 us; p int8), sorted by t."""
    rng = np.random.default_rng(seed)
    n = rng.poisson(rate_per_us * duration_us)
    t = np.sort(rng.integers(0, duration_us, n))
    bar = max(1, width // 8)
    lead = (t / duration_us * (width + bar)).astype(np.int64)   # leading edge column
    p = rng.integers(0, 2, n)
    x = np.where(p == 1, lead, lead - bar) + rng.integers(-1, 2, n)
    y = rng.integers(0, height, n)
    keep = (x >= 0) & (x < width)
    ev = np.zeros(int(keep.sum()), dtype=[("x", "<i2"), ("y", "<i2"), ("t", "<i8"),
                                          ("p", "<i1")])
    ev["x"], ev["y"], ev["t"], ev["p"] = x[keep], y[keep], t[keep], p[keep]
    return ev
