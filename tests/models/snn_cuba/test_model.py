"""The VA CUBA model card: a small run, its counts, its pricing on three chips, its export."""
import numpy as np
import pytest

from models import snn_cuba
from models.registry import REGISTRY
from sim.errors import HardwareLimitError, ModelError


@pytest.fixture(scope="module")
def small_run():
    # 800 neurons with the benchmark's in-degree (p = 0.1 -> 80 inputs), 50 ms
    return snn_cuba.simulate("loihi", quick=True, n=800, p=0.1, duration=0.05)


def test_registered():
    card = REGISTRY["snn_cuba"]
    assert card.device_kinds == ("neuromorphic",) and card.exports == ("nir",)


def test_small_run_counts(small_run):
    m, led = small_run.metrics, small_run.ledger
    ops = led.total_ops()
    assert m["spikes"] == ops["spike"] > 0
    # 800 neurons x 500 steps, every update either active or idle
    assert ops["neuron_update_active"] + ops["neuron_update_idle"] == 800 * 500
    cfg = snn_cuba.CubaConfig(n=800, p=0.1, duration=0.05)
    pre, _ = snn_cuba.connectivity(cfg)
    out_degree = np.bincount(pre, minlength=800)
    raster = small_run.traces["spike_raster"]
    assert raster.shape == (ops["spike"], 2)
    # times in [0, 50 ms), spread over the whole run (activity is self-sustained)
    assert raster[:, 0].min() >= 0 and raster[:, 0].max() < 0.05
    assert np.histogram(raster[:, 0], bins=5, range=(0, 0.05))[0].min() > 0
    # synop = sum over spikes of the spiking neuron's out-degree (exactly)
    assert ops["synop"] == out_degree[raster[:, 1].astype(int)].sum()
    assert small_run.traces["core_neurons_util"].size == m["cores_used"]


def test_priced_on_three_chips(small_run):
    for name in ("loihi", "truenorth", "spinnaker2"):
        rep = small_run.ledger.price(name)
        cat = rep.by_category()
        assert cat["compute"] > 0
        assert rep.total_j == pytest.approx(sum(cat.values()))
    loihi = small_run.ledger.price("loihi")
    ops = small_run.ledger.total_ops()
    # 23.6 pJ per synop (Davies 2018 Table 2)
    assert loihi.by_op()["synop"] == pytest.approx(ops["synop"] * 23.6e-12)
    assert loihi.by_category()["communication"] == pytest.approx(
        ops["spike"] * 1.7e-12 + ops.get("hop", 0) * 3.5e-12)
    assert loihi.static_j > 0


def test_truenorth_fan_in_splits_cores():
    # ~80 distinct inputs per neuron and 256 axons per core: at most 3 neurons per core
    run = snn_cuba.simulate("truenorth", n=800, p=0.1, duration=0.001)
    assert run.metrics["fan_in_util_max"] <= 1.0
    assert run.metrics["cores_used"] >= 800 / 3
    assert run.ledger.total_ops()["hop"] > 0


def test_too_large_for_truenorth():
    with pytest.raises(HardwareLimitError, match=r"population 'cuba'.*truenorth limits.cores"):
        snn_cuba.simulate("truenorth", n=20000, p=0.004, duration=0.001)


def test_bad_config():
    with pytest.raises(ModelError, match="p = 1.5"):
        snn_cuba.CubaConfig(p=1.5)
    with pytest.raises(ModelError, match="dataset 'va-cuba'"):
        snn_cuba.simulate("loihi", dataset="digits")
