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

from dataclasses import asdict

import numpy as np

from models.registry import Outcome, Trained
from models.snn_cuba.card import CubaConfig
from sim import seeds
from sim.artifacts import NetworkArtifact
from sim.errors import HardwareLimitError
from sim.neuromorphic import Network, NeuromorphicDevice
from sim.traces import Trace

# Brian2 examples/CUBA.py, in mV and seconds
TAUM, TAUE, TAUI = 20e-3, 5e-3, 10e-3
VT, VR, EL = -50.0, -60.0, -49.0
WE, WI = 60 * 0.27 / 10, -20 * 4.5 / 10
REFRACTORY = 5e-3
PROJECTIONS = ("exc", "inh")   # synaptic channel 0 and 1 of the one population
ROUTE_COLUMNS = ("src_core", "dst_core", "hops", "neurons")


DENSE_DRAW_MAX_N = 16384
"""Up to this size the pairs are drawn as one Bernoulli trial per (pre, post) pair, row block
by row block (the stream every run so far used); above it that is O(n^2) random numbers
(6.6e10 at 256k neurons), so the gaps between connected pairs are drawn instead."""


def connectivity(cfg: CubaConfig) -> tuple[np.ndarray, np.ndarray]:
    """Random pre/post index pairs, each pair present with probability p (no autapse rule,
    as in Brian2's ``connect(p=0.02)``, which allows i == j), sorted by (pre, post).

    For ``n > DENSE_DRAW_MAX_N`` the same distribution comes from skip sampling: over the
    n^2 pairs in row-major order the gap to the next connected pair is Geometric(p), so
    each pair is present independently with probability p, in O(n^2 p) time and memory.
    """
    rng = seeds.rng(cfg.seed, "connectivity")
    if cfg.n > DENSE_DRAW_MAX_N:
        return _skip_sample(rng, cfg.n, cfg.p)
    # Bernoulli per pair, drawn row by row to keep memory at O(n) per row
    pre, post = [], []
    for start in range(0, cfg.n, 500):
        block = rng.random((min(500, cfg.n - start), cfg.n)) < cfg.p
        i, j = np.nonzero(block)
        pre.append(i + start)
        post.append(j)
    return np.concatenate(pre), np.concatenate(post)


def _skip_sample(rng: np.random.Generator, n: int, p: float) -> tuple[np.ndarray,
                                                                      np.ndarray]:
    total = n * n
    out, last = [], -1
    chunk = max(1024, int(total * p * 1.01) + 1024)
    while True:
        pos = last + np.cumsum(rng.geometric(p, chunk))
        done = pos[-1] >= total
        pos = pos[pos < total]
        out.append(pos)
        if done:
            break
        last = int(pos[-1])
    pos = np.concatenate(out)
    return pos // n, pos % n


def trained_state(cfg: CubaConfig) -> Trained:
    """The network as plain arrays: initial potentials, each projection's synapses (pre,
    post) and its one weight, with the config (what a run file stores; ``network_from``
    rebuilds the identical Network from it, so an export never reruns)."""
    rng = seeds.rng(cfg.seed, "v_init")
    v_init = VR + rng.random(cfg.n) * (VT - VR)
    pre, post = connectivity(cfg)
    exc = pre < cfg.n * 4 // 5
    arrays = {"v_init": v_init}
    for name, mask, w in (("exc", exc, WE * TAUE / cfg.dt), ("inh", ~exc, WI * TAUI / cfg.dt)):
        # indices fit in int32 (n < 2^31), half the bytes of the run file's int64
        arrays[f"{name}/pre_idx"] = pre[mask].astype(np.int32)
        arrays[f"{name}/post_idx"] = post[mask].astype(np.int32)
        arrays[f"{name}/weight"] = np.array([w])
    return Trained(arrays, {"config": asdict(cfg)})


def network_from(trained: Trained) -> Network:
    """The VA CUBA Network for the engine from its arrays (module docstring: the mapping)."""
    cfg, a = trained.meta["config"], trained.arrays
    n = int(cfg["n"])
    net = Network(dt=float(cfg["dt"]))
    net.population("cuba", n, "cuba_lif", method="exact", n_channels=2,
                   tau_mem=TAUM, tau_syn=(TAUE, TAUI), v_threshold=VT, v_reset=VR,
                   v_leak=EL, r=1.0, w_in=1.0, refractory=REFRACTORY, v_init=a["v_init"])
    for channel, name in enumerate(PROJECTIONS):
        net.connect("cuba", "cuba", pre_idx=a[f"{name}/pre_idx"].astype(np.int64),
                    post_idx=a[f"{name}/post_idx"].astype(np.int64),
                    weight=float(a[f"{name}/weight"][0]), channel=channel, name=name)
    net.probe("cuba")
    return net


def build(cfg: CubaConfig) -> Network:
    """The VA CUBA network of ``cfg`` for the engine."""
    return network_from(trained_state(cfg))


def simulate(cfg: CubaConfig, device: NeuromorphicDevice, progress=None) -> Outcome:
    """Run VA CUBA for ``cfg.duration`` on ``device`` (a NeuromorphicDevice) in 10 chunks."""
    net = build(cfg)
    dev = device
    try:
        dev.compile(net)
    except HardwareLimitError as exc:   # the compiler names the limit; say which setting
        raise HardwareLimitError(
            f"{exc} (snn_cuba: --set n=N sets the neurons, now {cfg.n}, and --set p=P the "
            f"connection probability, now {cfg.p:g}: p x n = {cfg.p * cfg.n:g} inputs per "
            "neuron)") from exc
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
    traces = {"spike_raster": Trace("raster", raster.astype(np.float64), "s"),
              **{f"core_{k}": Trace("per_core", np.array([c[k] for c in cores], float))
                 for k in ("neurons_util", "synapse_bytes_util", "fan_in_util",
                           "fan_out_util")},
              # one row per core-to-core route (src, dst, X-Y hops, neurons using it)
              "routes": Trace("table", np.array(
                  [[r["src_core"], r["dst_core"], r["hops"], r["neurons"]]
                   for r in place["routes"]], dtype=np.int64).reshape(-1, 4),
                  columns=ROUTE_COLUMNS)}
    trained = trained_state(cfg)
    prof = dev.profile
    # the profile the export is placed on: this run's (a user's file by its path)
    trained.meta["profile"] = prof.name if prof.label == prof.name else str(prof.path)
    facts = {"neurons": cfg.n, "steps": n_steps}
    return Outcome(metrics, traces, trained, facts)


def nir_artifact(trained: Trained) -> NetworkArtifact:
    """The run's network rebuilt from its arrays (nothing runs), with the profile it ran on:
    the NIR exporter places it there (its quantised weights)."""
    return NetworkArtifact(network_from(trained), trained.meta.get("profile", "loihi"))
