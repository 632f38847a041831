"""Typed traces: each kind's shape is checked, tables name their columns, bare arrays refused."""
import numpy as np
import pytest

from sim.errors import ModelError
from sim.traces import TRACE_KINDS, Trace, as_traces, bands, curve


def test_curve_is_a_float_line_with_its_unit():
    t = curve([1, 2, 3], "J")
    assert (t.kind, t.unit, t.data.dtype, t.data.tolist()) == ("curve", "J", np.float64,
                                                               [1.0, 2.0, 3.0])


@pytest.mark.parametrize("kind,data,match", [
    ("line", np.zeros(3), r"^Trace kind 'line' is not known; kinds are curve, raster, per_core, "
                          r"images, pictures, table, scatter, bands$"),
    ("curve", np.zeros((2, 2)), r"^Trace of kind 'curve' has shape \(2, 2\); expected 1-D$"),
    ("raster", np.zeros((4, 3)), r"^Trace of kind 'raster' has shape \(4, 3\); expected "
                                 r"\(k, 2\)$"),
    ("images", np.zeros((2, 3)), r"^Trace of kind 'images' has shape \(2, 3\); expected "
                                 r"\(N, H, W\)$"),
    ("pictures", np.zeros((2, 3, 3)), r"^Trace of kind 'pictures' has shape \(2, 3, 3\); "
                                      r"expected \(N, H, W, 3\)$"),
    ("pictures", np.full((1, 2, 2, 3), 1.5), r"^pictures Trace holds values in \[1.5, 1.5\] "
                                             r"or non-finite ones; expected RGB in \[0, 1\]$"),
])
def test_shape_must_fit_the_kind(kind, data, match):
    with pytest.raises(ModelError, match=match):
        Trace(kind, data)


def test_table_columns():
    t = Trace("table", [[1, 2], [3, 4]], columns=("a", "b"))
    assert t.columns == ("a", "b") and t.data.shape == (2, 2)
    with pytest.raises(ModelError, match=r"^table Trace has 2 columns but 1 column names$"):
        Trace("table", np.zeros((3, 2)), columns=("a",))
    with pytest.raises(ModelError, match=r"^Trace of kind 'curve' has column names; only a "
                                         r"table or bands have them$"):
        Trace("curve", np.zeros(3), columns=("a",))


def test_bands_name_their_series():
    t = bands({"a": np.zeros((5, 3)), "b": np.ones((5, 3))}, "nats")   # 2 series x 5 seeds x 3
    assert (t.kind, t.data.shape, t.columns, t.unit) == ("bands", (2, 5, 3), ("a", "b"), "nats")
    with pytest.raises(ModelError, match=r"^bands Trace has 2 series but 1 series names$"):
        Trace("bands", np.zeros((2, 5, 3)), columns=("a",))
    with pytest.raises(ModelError, match=r"^Trace of kind 'bands' has shape \(2, 3\); expected "
                                         r"\(series, seeds, steps\)$"):
        Trace("bands", np.zeros((2, 3)), columns=("a", "b"))


def test_as_traces_refuses_a_bare_array():
    assert as_traces({"loss": curve([0.5])})["loss"].data.tolist() == [0.5]
    assert as_traces(None) == {}
    with pytest.raises(ModelError, match=r"^trace 'loss' is a ndarray; wrap it in "
                                         r"sim.traces.Trace\(kind, data, unit\) with kind one "
                                         r"of " + ", ".join(TRACE_KINDS) + "$"):
        as_traces({"loss": np.zeros(3)})

