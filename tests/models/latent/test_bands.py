"""The report's seed bands: a table trace ``x, "A mean", "A min", "A max", ...`` is drawn
as mean lines over min..max bands (``deploy.plots.plot_bands``)."""
import numpy as np

from deploy.plots import band_series, plot_bands


def test_band_series_reads_only_mean_min_max_triples():
    assert band_series(("iteration", "latent mean", "latent min", "latent max",
                        "random mean", "random min", "random max")) == ["latent", "random"]
    assert band_series(("seed", "latent", "random")) is None          # a per-seed table
    assert band_series(("iteration", "a mean", "a max", "a min")) is None   # wrong order
    assert band_series(("iteration",)) is None


def test_plot_bands_draws_a_line_and_a_band_per_series():
    data = np.array([[1, 0.0, -1.0, 1.0, 5.0, 4.0, 6.0],
                     [2, 1.0, 0.0, 2.0, 5.0, 4.5, 5.5]])
    cols = ("iteration", "a mean", "a min", "a max", "b mean", "b min", "b max")
    ax = plot_bands("entropy", data, cols, "nats").axes[0]
    assert [line.get_label() for line in ax.lines] == ["a", "b"]
    assert ax.lines[1].get_ydata().tolist() == [5.0, 5.0]
    assert len(ax.collections) == 2                       # one fill_between per series
    assert ax.get_ylabel() == "entropy (nats)"
