"""Typed traces: each kind's shape is checked, tables name their columns, bare arrays refused."""
import numpy as np
import pytest

from sim.errors import ModelError
from sim.traces import TRACE_KINDS, Trace, as_traces, curve


def test_curve_is_a_float_line_with_its_unit():
    t = curve([1, 2, 3], "J")
    assert (t.kind, t.unit, t.data.dtype, t.data.tolist()) == ("curve", "J", np.float64,
                                                               [1.0, 2.0, 3.0])


@pytest.mark.parametrize("kind,data,match", [
    ("line", np.zeros(3), r"^Trace kind 'line' is not known; kinds are curve, raster, per_core, "
                          r"images, table, bands$"),
    ("curve", np.zeros((2, 2)), r"^Trace of kind 'curve' has shape \(2, 2\); expected 1-D$"),
    ("raster", np.zeros((4, 3)), r"^Trace of kind 'raster' has shape \(4, 3\); expected "
                                 r"\(k, 2\)$"),
    ("images", np.zeros((2, 3)), r"^Trace of kind 'images' has shape \(2, 3\); expected "
                                 r"\(N, H, W\)$"),
    ("bands", np.zeros(4), r"^Trace of kind 'bands' has shape \(4,\); expected \(S, T\): one "
                           r"row per seed$"),
])
def test_shape_must_fit_the_kind(kind, data, match):
    with pytest.raises(ModelError, match=match):
        Trace(kind, data)


def test_bands_plot_mean_and_min_max_band():
    """A (S, T) bands trace: the line is the seed mean, the band the seeds' min and max."""
    from deploy.plots import plot_bands
    data = np.array([[0.0, 1.0, 2.0], [2.0, 3.0, 6.0]])   # 2 seeds x 3 points
    fig = plot_bands("acc", Trace("bands", data).data, "1")
    ax = fig.axes[0]
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), [1.0, 2.0, 4.0])
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == 0.0 and band.max() == 6.0
    assert "mean of 2 seeds" in ax.get_title()


def test_table_columns():
    t = Trace("table", [[1, 2], [3, 4]], columns=("a", "b"))
    assert t.columns == ("a", "b") and t.data.shape == (2, 2)
    with pytest.raises(ModelError, match=r"^table Trace has 2 columns but 1 column names$"):
        Trace("table", np.zeros((3, 2)), columns=("a",))
    with pytest.raises(ModelError, match=r"^Trace of kind 'curve' has column names; only a "
                                         r"table has them$"):
        Trace("curve", np.zeros(3), columns=("a",))


def test_as_traces_refuses_a_bare_array():
    assert as_traces({"loss": curve([0.5])})["loss"].data.tolist() == [0.5]
    assert as_traces(None) == {}
    with pytest.raises(ModelError, match=r"^trace 'loss' is a ndarray; wrap it in "
                                         r"sim.traces.Trace\(kind, data, unit\) with kind one "
                                         r"of " + ", ".join(TRACE_KINDS) + "$"):
        as_traces({"loss": np.zeros(3)})

