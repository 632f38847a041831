"""The Vogels-Abbott CUBA network on NeuromorphicDevice: the engine's reference workload.

Vogels & Abbott, "Signal propagation and logic gating in networks of integrate-and-fire
neurons", J. Neurosci. 25(46):10786, 2005, doi:10.1523/JNEUROSCI.2055-05.2005, as in the
Brian2 example ``examples/CUBA.py`` (Brette et al. 2007 benchmark 2, doi:10.1007/s10827-
007-0038-6): 4000 LIF neurons (3200 excitatory, 800 inhibitory), current-based exponential
synapses, random connectivity p = 0.02, no external input; activity self-sustains from
random initial potentials.

Equations (Brian2 example, ``method='exact'``)::

    dv/dt  = (ge + gi - (v - El)) / taum  (unless refractory)
    dge/dt = -ge / taue ;  dgi/dt = -gi / taui
    taum = 20 ms, taue = 5 ms, taui = 10 ms, Vt = -50 mV, Vr = -60 mV, El = -49 mV,
    refractory 5 ms, we = 60 * 0.27 / 10 mV = 1.62 mV, wi = -20 * 4.5 / 10 mV = -9 mV,
    v(0) ~ U(Vr, Vt).

Mapped onto the engine's ``cuba_lif`` with two synaptic channels (exc, inh), ``method=
'exact'``, v in mV, ``r = 1``. A spike adds ``(dt/tau_syn) w_in w`` to its current
(network.py), so the engine weights are ``we * taue/dt`` and ``wi * taui/dt`` with
``w_in = 1``: each excitatory spike raises ``ge`` by exactly 1.62 mV, as in Brian2.
Both weights are a single value per projection, so quantisation to the profile's bits is
exact.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from models.registry import ModelCard, Progress, RunResult, register
from sim.errors import ModelError
from sim.neuromorphic import Network, NeuromorphicDevice


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


# Brian2 examples/CUBA.py, in mV and seconds
TAUM, TAUE, TAUI = 20e-3, 5e-3, 10e-3
VT, VR, EL = -50.0, -60.0, -49.0
WE, WI = 60 * 0.27 / 10, -20 * 4.5 / 10
REFRACTORY = 5e-3


def connectivity(cfg: CubaConfig) -> tuple[np.ndarray, np.ndarray]:
    """Random pre/post index pairs, each pair present with probability p (no autapse rule,
    as in Brian2's ``connect(p=0.02)``, which allows i == j)."""
    rng = np.random.default_rng(cfg.seed)
    # Bernoulli per pair, drawn row by row to keep memory at O(n) per row
    pre, post = [], []
    for start in range(0, cfg.n, 500):
        block = rng.random((min(500, cfg.n - start), cfg.n)) < cfg.p
        i, j = np.nonzero(block)
        pre.append(i + start)
        post.append(j)
    return np.concatenate(pre), np.concatenate(post)


def build(cfg: CubaConfig) -> Network:
    """The VA CUBA network for the engine (see the module docstring for the mapping)."""
    rng = np.random.default_rng(cfg.seed + 1)
    n_exc = cfg.n * 4 // 5
    net = Network(dt=cfg.dt)
    net.population("cuba", cfg.n, "cuba_lif", method="exact", n_channels=2,
                   tau_mem=TAUM, tau_syn=(TAUE, TAUI), v_threshold=VT, v_reset=VR,
                   v_leak=EL, r=1.0, w_in=1.0, refractory=REFRACTORY,
                   v_init=VR + rng.random(cfg.n) * (VT - VR))
    pre, post = connectivity(cfg)
    exc = pre < n_exc
    net.connect("cuba", "cuba", pre_idx=pre[exc], post_idx=post[exc],
                weight=WE * TAUE / cfg.dt, channel=0, name="exc")
    net.connect("cuba", "cuba", pre_idx=pre[~exc], post_idx=post[~exc],
                weight=WI * TAUI / cfg.dt, channel=1, name="inh")
    net.probe("cuba")
    return net


def simulate(profile="loihi", dataset="va-cuba", seed: int = 0, quick: bool = True,
             progress: Progress | None = None, **overrides) -> RunResult:
    """Run VA CUBA on ``profile``: 0.25 s when ``quick``, 1 s otherwise (4000 neurons)."""
    if dataset != "va-cuba":
        raise ModelError(f"snn_cuba takes dataset 'va-cuba' (no external data); got {dataset!r}")
    cfg = CubaConfig(seed=seed, **{"duration": 0.25 if quick else 1.0, **overrides})
    net = build(cfg)
    dev = NeuromorphicDevice(profile)
    dev.compile(net)
    n_steps = int(round(cfg.duration / cfg.dt))
    chunk = max(1, n_steps // 10)
    spikes = []
    for done in range(0, n_steps, chunk):
        res = dev.run(min(chunk, n_steps - done), scope="run")
        spikes.append(res.raster("cuba"))       # absolute times: steps count from 0
        if progress:
            progress(min(done + chunk, n_steps), n_steps,
                     {"rate_hz": float(sum(s.shape[0] for s in spikes)
                                       / (cfg.n * (done + res.n_steps) * cfg.dt))})
    dev.ledger.add_samples(1, scope="run")  # one sample = one run of `duration` seconds
    raster = np.concatenate(spikes)
    place = dev.placement_report()
    util = place["utilisation"]
    metrics = {"rate_hz": raster.shape[0] / (cfg.n * cfg.duration),
               "spikes": float(raster.shape[0]),
               "synapses": float(net.summary()["synapses"]),
               "cores_used": util["cores_used"],
               "neurons_util_mean": util["neurons_util_mean"],
               "synapse_bytes_util_mean": util["synapse_bytes_util_mean"],
               "fan_in_util_max": util["fan_in_util_max"],
               "fan_out_util_max": util["fan_out_util_max"],
               "mean_hops_per_spike": float(dev.ledger.total_ops().get("hop", 0)
                                            / max(1, raster.shape[0])),
               "routes": float(len(place["routes"])),
               "max_route_hops": float(max((r["hops"] for r in place["routes"]), default=0))}
    cores = place["cores"]
    traces = {"spike_raster": raster.astype(np.float64),
              "core_neurons_util": np.array([c["neurons_util"] for c in cores]),
              "core_synapse_bytes_util": np.array([c["synapse_bytes_util"] for c in cores]),
              "core_fan_in_util": np.array([c["fan_in_util"] for c in cores]),
              "core_fan_out_util": np.array([c["fan_out_util"] for c in cores]),
              # one entry per core-to-core route (src, dst, X-Y hops, neurons using it)
              "routes": np.array([[r["src_core"], r["dst_core"], r["hops"], r["neurons"]]
                                  for r in place["routes"]], dtype=np.int64).reshape(-1, 4)}
    return RunResult("snn_cuba", dev.profile, dataset, asdict(cfg), metrics, dev.ledger,
                     traces)


def export(target: str, out, *, seed: int = 0, quick: bool = True, progress=None,
           force: bool = False):
    """Write the network as a NIR graph (``deploy/nir_export.py``), with the weights the
    loihi profile quantises to. NIR has no sparse weights, so each projection is a dense
    matrix: ``quick`` exports a 1000-neuron version with the same in-degree (p = 0.08,
    80 inputs per neuron; two 1000 x 1000 matrices), ``--full`` the 4000-neuron network
    (two 4000 x 4000 float64 matrices, ~256 MB in memory while writing)."""
    from sim.errors import ModelError as ExportError
    from deploy.nir_export import export_nir
    if target != "nir":
        raise ModelError(f"snn_cuba exports to 'nir' only, not {target!r}")
    cfg = CubaConfig(seed=seed, n=1000, p=0.08) if quick else CubaConfig(seed=seed)
    net = build(cfg)
    dev = NeuromorphicDevice("loihi")
    compiled = dev.compile(net)
    if progress:
        progress(1, 1, {"neurons": float(cfg.n)})
    return export_nir(net, out, compiled=compiled, force=force)


CARD = register(ModelCard(
    name="snn_cuba",
    title="Vogels-Abbott CUBA network (4000 LIF neurons, current-based synapses)",
    reference="Vogels & Abbott 2005, doi:10.1523/JNEUROSCI.2055-05.2005; Brian2 examples/CUBA.py",
    claim="self-sustained asynchronous irregular activity; spikes, synops, hops and energy "
          "of the run on neuromorphic cores (engine agrees with Brian2 spike for spike)",
    device_kinds=("neuromorphic",),
    datasets=("va-cuba",),
    default_dataset="va-cuba",
    default_profile="loihi",
    simulate=simulate,
    exports=("nir",),
    export=export,
))
