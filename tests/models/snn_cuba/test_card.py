"""VA CUBA's card: presets as before, and the NIR artifact rebuilt from the trained arrays
alone, equal to the network that ran."""
import json

import numpy as np
import pytest

import models
from models import runner
from models.registry import Trained
from models.snn_cuba.card import CubaConfig, artifact
from models.snn_cuba.model import build, trained_state
from sim.artifacts import NetworkArtifact
from sim.errors import ModelError


def _same_network(a, b):
    assert a.dt == b.dt and a.probes == b.probes and not a.sources and not b.sources
    assert list(a.populations) == list(b.populations) == ["cuba"]
    pa, pb = a.populations["cuba"], b.populations["cuba"]
    assert (pa.n, pa.model, pa.method, pa.reset, pa.n_channels) == \
        (pb.n, pb.model, pb.method, pb.reset, pb.n_channels)
    assert sorted(pa.params) == sorted(pb.params)
    for k in pa.params:
        np.testing.assert_array_equal(pa.params[k], pb.params[k])
    assert list(a.projections) == list(b.projections) == ["exc", "inh"]
    for name in a.projections:
        x, y = a.projections[name], b.projections[name]
        assert (x.pre, x.post, x.channel) == (y.pre, y.post, y.channel)
        for f in ("pre_idx", "post_idx", "weight", "delay"):
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
            assert getattr(x, f).dtype == getattr(y, f).dtype


def test_registered_with_its_presets():
    card = models.get("snn_cuba").card
    assert card.device_kinds == ("neuromorphic",) and card.exports == ("nir",)
    assert (card.default_profile, card.default_dataset) == ("loihi", "va-cuba")
    # quick: the 4000-neuron network for 0.25 s; full: the benchmark's 1 s
    assert runner.make_config("snn_cuba", "quick", "va-cuba", 0) == CubaConfig(duration=0.25)
    assert runner.make_config("snn_cuba", "full", "va-cuba", 2) == CubaConfig(seed=2)


def test_artifact_rebuilds_the_network_from_arrays_without_running():
    cfg = CubaConfig(n=200, p=0.05, seed=4)
    trained = trained_state(cfg)
    trained.meta["profile"] = "truenorth"
    json.dumps(trained.meta)                            # a run file stores it as JSON
    # only arrays and meta travel: a fresh Trained with copies stands for the run file
    stored = Trained({k: v.copy() for k, v in trained.arrays.items()},
                     json.loads(json.dumps(trained.meta)))
    art = artifact(stored, "nir")
    assert isinstance(art, NetworkArtifact) and art.profile == "truenorth"
    _same_network(art.network, build(cfg))
    # 200 neurons: 160 excitatory; one weight per projection, we taue / dt, wi taui / dt
    exc = art.network.projections["exc"]
    assert exc.pre_idx.max() < 160 <= art.network.projections["inh"].pre_idx.min()
    assert np.unique(exc.weight).tolist() == [pytest.approx(1.62 * 5e-3 / 1e-4)]
    assert np.unique(art.network.projections["inh"].weight).tolist() == \
        [pytest.approx(-9.0 * 10e-3 / 1e-4)]


def test_artifact_of_a_run_is_its_network():
    overrides = {"n": 300, "p": 0.1, "duration": 0.002}
    r = runner.run("snn_cuba", profile="loihi2", seed=1, overrides=overrides)
    assert r.trained.meta["profile"] == "loihi2"
    assert r.trained.meta["config"] == {**overrides, "dt": 1e-4, "seed": 1}
    art = artifact(r.trained, "nir")
    _same_network(art.network, build(CubaConfig(seed=1, **overrides)))
    assert art.network.summary()["synapses"] == r.metrics["synapses"]
    with pytest.raises(ModelError, match="snn_cuba exports to 'nir' only, not 'onnx'"):
        artifact(r.trained, "onnx")


def test_a_run_shorter_than_one_step_is_a_config_error():
    # 4e-5 s at dt = 1e-4 s is round(0.4) = 0 steps: nothing would run (np.concatenate of no
    # rasters raised ValueError); 1e-4 s is exactly one step and is accepted
    with pytest.raises(ModelError, match=r"CubaConfig.duration = 4e-05: round\(duration / "
                                         r"dt\) = 0 steps at dt = 0.0001 s; expected "
                                         r"duration >= dt"):
        CubaConfig(n=50, duration=4e-5)
    assert round(CubaConfig(n=50, duration=1e-4).duration / 1e-4) == 1
