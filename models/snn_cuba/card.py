"""The VA CUBA card: its config, presets and the contract functions.

Light (no numba): the network and its run are in ``model.py``. The "data" is the network
itself (no external input): the one dataset name ``va-cuba`` loads nothing.

Presets (as the model ran before it had a room): ``quick`` runs the 4000-neuron network
for 0.25 s of biological time, ``full`` for the benchmark's 1 s.

Export (``nir``): the export is of the run's network, rebuilt from the run's arrays
(``artifact``; nothing reruns) and placed on the profile the run used (its quantised
weights). NIR has no sparse weights, so each projection is written as a dense matrix: the
quick run's 4000 neurons give two 4000 x 4000 float64 matrices (~256 MB in memory while
writing). For a small file, export a smaller network with the same in-degree (80 inputs
per neuron), e.g. ``--set n=1000 --set p=0.08`` (``overrides={"n": 1000, "p": 0.08}``):
the size the export used before it was built from the run.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, Trained, register
from sim.errors import ModelError

if TYPE_CHECKING:   # the engine, imported only for the annotation (cards stay light)
    from sim.neuromorphic.engine import NeuromorphicDevice


@dataclass
class CubaConfig:
    """Network size and run length; defaults are the Brian2 example's."""

    n: int = 4000                # 3200 excitatory + 800 inhibitory (4:1)
    p: float = 0.02              # connection probability
    dt: float = 1e-4             # 0.1 ms, the benchmark's step
    duration: float = 1.0        # seconds of biological time
    seed: int = 0

    def __post_init__(self):
        if self.n < 5:
            raise ModelError(f"CubaConfig.n = {self.n}: need >= 5 neurons (4:1 exc:inh)")
        if not 0 < self.p <= 1:
            raise ModelError(f"CubaConfig.p = {self.p}: expected 0 < p <= 1")
        if not (self.dt > 0 and self.duration > 0):
            raise ModelError(f"CubaConfig: dt = {self.dt}, duration = {self.duration}: "
                             "both must be > 0 seconds")
        # the run is round(duration / dt) steps (model.simulate): fewer than one step would
        # run nothing and leave no raster to report
        if round(self.duration / self.dt) < 1:
            raise ModelError(f"CubaConfig.duration = {self.duration}: round(duration / dt) = 0 "
                             f"steps at dt = {self.dt} s; expected duration >= dt")


PRESETS = {"quick": {"va-cuba": {"duration": 0.25}}, "full": {"va-cuba": {}}}


def load_data(dataset: str, cfg: CubaConfig) -> None:
    """No external data: the network is built from the config in ``simulate``."""
    return None


def simulate(cfg: CubaConfig, device: NeuromorphicDevice, data=None, progress=None) -> Outcome:
    """Run VA CUBA on ``device`` (a NeuromorphicDevice); see ``model.simulate``."""
    from models.snn_cuba import model
    return model.simulate(cfg, device, progress)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """The claim at the preset's scale: activity self-sustains (a non-zero firing rate
    over the whole run) on ``profiles["neuromorphic"]``."""
    from models import runner
    run = runner.run("snn_cuba", profile=profiles.get("neuromorphic"), preset=preset,
                     seed=seed, progress=progress)
    rate = run.metrics["rate_hz"]
    return Study({"snn_cuba": run}, {"rate_hz": rate, "claim": "self-sustained activity "
                                     "(rate > 0 Hz without external input)",
                                     "claim_met": bool(rate > 0)})


def artifact(trained: Trained, target: str):
    """The run's Network and profile (target ``nir``), rebuilt from the trained arrays."""
    if target != "nir":
        raise ModelError(f"snn_cuba exports to 'nir' only, not {target!r}")
    from models.snn_cuba.model import nir_artifact
    return nir_artifact(trained)


METRICS = {"rate_hz": "Hz", "spikes": "spikes", "synapses": "count", "cores_used": "count",
           "neurons_util_mean": "1", "synapse_bytes_util_mean": "1", "fan_in_util_max": "1",
           "fan_out_util_max": "1", "mean_hops_per_spike": "hops", "routes": "count",
           "max_route_hops": "hops"}
"""Metric units: the utilisations are fractions of a core's limits."""

CARD = Card(
    name="snn_cuba",
    title="Vogels-Abbott CUBA network (4000 LIF neurons, current-based synapses)",
    reference="Vogels & Abbott 2005, doi:10.1523/JNEUROSCI.2055-05.2005; Brian2 examples/CUBA.py",
    claim="self-sustained asynchronous irregular activity; spikes, synops, hops and energy "
          "of the run on neuromorphic cores (engine agrees with Brian2 spike for spike)",
    device_kinds=("neuromorphic",),
    datasets=("va-cuba",),
    config=CubaConfig,
    presets=PRESETS,
    default_profile="loihi",
    default_dataset="va-cuba",
    exports=("nir",),
    study_profiles={"neuromorphic": "loihi"},
    metrics=METRICS,
    # a firing rate is a measurement of the network, not a score: no rate is the better one
    main_metric="rate_hz",
    main_metric_better="neither",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, artifact=artifact,
                  load_data=load_data)
