"""Neuroedge's `loihi` profile against SANA-FE's shipped Loihi architecture (issue 29, item 5).

The same networks with the same spike activity run in SANA-FE (pip package `sanafe`, its
Python API and its shipped `examples/loihi.yaml`; an oracle in the `dev` extra, none of its
code copied) and in neuroedge's NeuromorphicDevice on the `loihi` profile:

- **dvs_gesture**: SANA-FE's shipped DVS gesture network, built with `sanafe.layers` from the
  package's `examples/dvs_challenge.npz` exactly as its tutorial 5 does (input 32x32 with
  constant biases, four convolutions, a dense layer of 11; 18,678 neurons, 3.5 M synapses);
  neuroedge gets the identical synapse list read back from SANA-FE's network object.
- **va_cuba**: the Vogels-Abbott CUBA network (models/snn_cuba: random p = 0.02 connectivity,
  80 % excitatory, self-sustained from random initial potentials) in Loihi's one-current
  CUBA compartment (both synapse kinds share tau_syn = 5 ms: Loihi's compartment has one
  current; the inhibitory weight carries tau_i / tau_e = 2 to keep each spike's charge).
- **diffpc_digits**: a trained DiffPC net (models/diffpc, 64-32-10 on digits, 32 samples
  side by side): one training iteration's signed graded spikes, weights and connectivity,
  replayed on Loihi 1 LIF pairs (+/-) because SANA-FE's Loihi architecture has binary spikes
  and a LIF soma (the reading and what it changes: ``diffpc_spec``); the same net without
  the DiffPC synapses is run too, so that the replay harness's share is shown apart.

How "same activity" is made: both simulators are driven by the same inputs (DVS: the
same constant biases; VA CUBA: the same initial potentials) and must produce the same spikes,
which the bench checks per step and per population (`spikes_identical`). That holds because
the dynamics are made bit-equal: every weight, threshold, bias and initial potential is an
integer, so sums are exact in float64 in any order; DVS uses neuroedge's built-in `if`
neuron (no leak, strict threshold, reset to 0 = SANA-FE's Loihi LIF with leak_decay 1 and
input_decay 0); VA CUBA uses a NeuronKernel in this file with the fixed-point Loihi CUBA
update as SANA-FE's Loihi LIF defines it (current and potential decay by multiplication, no
decay on a neuron's first step, potential truncated to 1/64, strict threshold, hard reset,
inputs dropped while refractory). Neuroedge's compile runs with quantize=False because the
weights are already the integers both sides use (DVS's reach 289, above the profile's 9-bit
range: Loihi stores such weights with a weight exponent). The placement is neuroedge's
(compiler.py, within Loihi's per-core limits); SANA-FE maps each neuron to the same core
(neuroedge core c sits on router c // 4 at x = r % 8, y = r // 8 of the 8 x 4 mesh, SANA-FE's
tile x * 4 + y, core c % 4), so both see the same cores and router distances.

Printed: energy and latency per step (the first steps) and in total, side by side, and the
per-event breakdown. Energy is compared as *dynamic* energy: SANA-FE models no static
power; neuroedge's static share (the profile's 0.104 W x its run time) is printed apart.
Latency: SANA-FE's default "detailed" timing model beside neuroedge's step model (slowest
core + barrier), split into each side's barrier and cores' work (``latency_parts``), and
SANA-FE's "simple" timing model (no NoC model) beside it. Factor = max(r, 1/r) of
neuroedge / SANA-FE.

Run: PYTHONPATH=. python bench/sanafe_compare.py [--steps N] [--cuba-n N] [--diffpc-epochs E]
[--out FILE]
(writes bench/out/sanafe_compare.json by default; figures in RESULTS.md and docs come from it).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import yaml
from numba import njit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.neuromorphic import Network, NeuromorphicDevice  # noqa: E402
from sim.neuromorphic.network import NeuronKernel  # noqa: E402

LOIHI_TOML = ROOT / "hw_profiles" / "data" / "loihi.toml"
OUT = ROOT / "bench" / "out" / "sanafe_compare.json"
CORES_PER_ROUTER, MESH_X, MESH_Y = 4, 8, 4      # loihi.toml [interconnect] = SANA-FE loihi.yaml


def _sanafe():
    try:
        import sanafe
    except ModuleNotFoundError as exc:
        raise SystemExit("sanafe_compare: the oracle `sanafe` is not installed; "
                         "pip install sanafe (the `dev` extra) and rerun") from exc
    return sanafe


def sanafe_loihi_yaml() -> dict:
    """SANA-FE's shipped Loihi architecture description, parsed."""
    _sanafe()
    return yaml.safe_load((resources.files("sanafe") / "examples" / "loihi.yaml").read_text())


# -- the network description both simulators are built from -------------------------------------
@dataclass
class Group:
    """One population: ``n`` neurons of Loihi's LIF with per-neuron integer parameters."""

    name: str
    n: int
    threshold: np.ndarray
    bias: np.ndarray
    v_init: np.ndarray
    reset: float = 0.0
    leak_decay: float = 1.0      # potential multiplier per step (1 = no leak)
    input_decay: float = 0.0     # current multiplier per step (0 = the input lasts one step)
    refractory: int = 0          # steps


@dataclass
class Drive:
    """Replayed spike trains from outside the network: channel k fires in ``steps`` where
    ``index == k`` and drives neuron k of group ``target`` through one synapse of
    ``weight`` (neuroedge: a spike source; SANA-FE: an ``input`` neuron on the target's
    core, soma unit ``loihi_inputs``)."""

    name: str
    target: str
    n: int
    steps: np.ndarray
    index: np.ndarray
    weight: float


@dataclass
class Spec:
    name: str
    dt: float
    groups: list[Group]
    edges: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    note: str = ""
    shared_weights: bool = False   # convolutions: Loihi stores a kernel once, not per synapse
    drives: list[Drive] = field(default_factory=list)
    neurons_per_core: int | None = None   # a lower placement limit (room for drivers)

    def offsets(self) -> dict[str, int]:
        out, k = {}, 0
        for g in self.groups:
            out[g.name] = k
            k += g.n
        return out


# -- Loihi's fixed-point CUBA compartment, as SANA-FE's Loihi LIF defines its update --------------
LOIHI_STATE = ("v", "u", "ref", "started")
LOIHI_PARAMS = ("threshold", "v_reset", "leak_decay", "input_decay", "bias", "refractory")


@njit(cache=True)
def loihi_cuba_update(inp, state, params, payload):
    """One step of Loihi's CUBA compartment (Davies et al. 2018: u decays and sums the
    weighted spikes, v decays and adds u and the bias), in the order SANA-FE's Loihi LIF
    applies it, so that both simulators compute the same float64 values: decay of u and v
    (skipped on the neuron's first step), v truncated to 1/64 (Loihi's 6-bit fraction), then,
    unless refractory, v += bias, u += input, v += u; spike iff v > threshold, v = reset."""
    v, u, ref, started = state[0], state[1], state[2], state[3]
    th, rs, dv, du, bias, refr = params[0], params[1], params[2], params[3], params[4], params[5]
    for i in range(v.size):
        if started[i] > 0:
            u[i] = u[i] * du[i]
            v[i] = v[i] * dv[i]
        v[i] = np.trunc(v[i] * 64.0) / 64.0      # toward zero, as C++ static_cast<int>
        if ref[i] <= 0:
            v[i] = v[i] + bias[i]
            u[i] = u[i] + inp[i, 0]
            v[i] = v[i] + u[i]
            if v[i] > th[i]:
                v[i] = rs[i]
                ref[i] = refr[i]
                payload[i] = 1
        started[i] = 1.0
        ref[i] = max(0.0, ref[i] - 1.0)


LOIHI_CUBA = NeuronKernel("loihi_cuba", loihi_cuba_update, LOIHI_STATE, LOIHI_PARAMS)


def _plain_if(g: Group) -> bool:
    """A group neuroedge's built-in ``if`` neuron reproduces exactly (no leak, no current
    memory, no refractory period)."""
    return g.leak_decay == 1.0 and g.input_decay == 0.0 and g.refractory == 0


def neuroedge_network(spec: Spec) -> Network:
    net = Network(dt=spec.dt)
    for g in spec.groups:
        if _plain_if(g):
            # v[t] = v[t-1] + r dt (x + i_inj) with r dt = 1: SANA-FE's v + bias + input
            net.population(g.name, g.n, "if", v_threshold=g.threshold, v_reset=g.reset,
                           r=1.0 / spec.dt, v_init=g.v_init,
                           i_inj=g.bias if np.any(g.bias) else None)
        else:
            net.population(g.name, g.n, LOIHI_CUBA, threshold=g.threshold, v_reset=g.reset,
                           leak_decay=g.leak_decay, input_decay=g.input_decay,
                           bias=g.bias, refractory=float(g.refractory), v_init=g.v_init)
        net.probe(g.name)
    for k, (pre, post, i, j, w) in enumerate(spec.edges):
        net.connect(pre, post, pre_idx=i, post_idx=j, weight=w, delay=1, name=f"e{k}")
    for d in spec.drives:
        net.spikes(d.name, d.n, d.steps, d.index)
        ch = np.arange(d.n)
        net.connect(d.name, d.target, pre_idx=ch, post_idx=ch, weight=np.full(d.n, d.weight),
                    delay=1, name=f"drive_{d.name}")
    return net


def loihi_profile(spec: Spec):
    """The `loihi` profile; for a convolutional net the per-core synapse-memory and input-axon
    limits are lifted (every price and every other limit unchanged).

    neuroedge's compiler stores one 3-byte entry per synapse and one input axon per
    presynaptic neuron (compiler.py), which puts the DVS net's 3.5 M convolution synapses on
    160 cores (148 with the memory limit alone: SANA-FE orders a layer's neurons channel by
    channel, so a core of one channel sees the whole previous layer), more than a chip's
    128; Loihi encodes a convolution with shared weights and axons (SANA-FE's
    `loihi_conv_synapse`; the DVS net ran on one Loihi chip in Boyle et al. 2025), which
    that model does not know. Without the two limits the placement is bound by 1,024
    neurons per core; SANA-FE gets the same placement."""
    from hw_profiles import load, loads
    if not spec.shared_weights and spec.neurons_per_core is None:
        return load("loihi")
    doc = tomllib.loads(LOIHI_TOML.read_text())
    origin = []
    if spec.shared_weights:
        for key in ("synapse_bytes_per_core", "fan_in_per_core"):
            doc["limits"][key]["value"] = 10 ** 8   # far above any core of this net
        origin.append("synapse memory and fan-in not checked")
    if spec.neurons_per_core is not None:
        # SANA-FE's drivers (input neurons) take core slots next to the neurons they drive
        doc["limits"]["neurons_per_core"]["value"] = spec.neurons_per_core
        origin.append(f"{spec.neurons_per_core} neurons per core")
    import tomli_w
    return loads(tomli_w.dumps(doc), origin=f"loihi ({', '.join(origin)})")


def run_neuroedge(spec: Spec, steps: int) -> dict:
    """Compile on `loihi` (neuroedge's placement) and run step by step, one ledger scope per
    step, so that energy and latency come per step from the engine's own step model."""
    prof = loihi_profile(spec)
    dev = NeuromorphicDevice(prof)
    c = dev.compile(neuroedge_network(spec), quantize=False)
    spikes = np.zeros((steps, len(spec.groups)), np.int64)
    t0 = time.process_time()
    for t in range(steps):
        res = dev.run(1, scope=f"s{t:05d}")
        for k, g in enumerate(spec.groups):
            spikes[t, k] = res.spikes[g.name][0].size
    cpu_s = time.process_time() - t0
    rep = dev.ledger.price(prof)
    scopes = [f"s{t:05d}" for t in range(steps)]
    e_step = np.zeros(steps)
    e_static = np.zeros(steps)
    by_op: dict[str, float] = {}
    counts: dict[str, float] = {}
    index = {s: t for t, s in enumerate(scopes)}
    for ch in rep.charges:
        t = index[ch.scope]
        if ch.item == "static":
            e_static[t] += ch.energy_j
        else:
            e_step[t] += ch.energy_j
            by_op[ch.item] = by_op.get(ch.item, 0.0) + ch.energy_j
            counts[ch.item] = counts.get(ch.item, 0.0) + ch.count
    lat = np.array([rep.latency_s[s] for s in scopes])
    return {"spikes": spikes, "energy_j": e_step, "static_j": e_static, "latency_s": lat,
            "by_op_j": by_op, "counts": counts, "core_of": np.asarray(c.core_of),
            "cores": int(c.core_of.max()) + 1, "cpu_s": cpu_s}


def _sanafe_core_index(core: int) -> int:
    """neuroedge core -> SANA-FE's core list index at the same mesh position (module doc)."""
    r = core // CORES_PER_ROUTER
    x, y = r % MESH_X, r // MESH_X
    return (x * MESH_Y + y) * CORES_PER_ROUTER + core % CORES_PER_ROUTER


def run_sanafe(spec: Spec, steps: int, core_of: np.ndarray, timing_model: str = "detailed",
               snn=None) -> dict:
    """Build (or take) the network in SANA-FE, map each neuron to neuroedge's core, run."""
    sanafe = _sanafe()
    arch = sanafe.load_loihi()
    groups = {}
    if snn is None:
        snn = sanafe.Network()
        for g in spec.groups:
            groups[g.name] = snn.create_neuron_group(g.name, g.n, model_attributes={})
        for pre, post, i, j, w in spec.edges:
            groups[pre].connect_neurons_sparse(groups[post], {"w": [float(x) for x in w]},
                                               list(zip(i.tolist(), j.tolist(), strict=True)))
    else:
        groups = snn.groups
    for d in spec.drives:
        groups[d.name] = snn.create_neuron_group(d.name, d.n, model_attributes={})
        groups[d.name].connect_neurons_sparse(groups[d.target], {"w": [d.weight] * d.n},
                                              [(k, k) for k in range(d.n)])
    cores = arch.cores()
    off = spec.offsets()
    for g in spec.groups:
        grp = groups[g.name]
        core_ix = [_sanafe_core_index(int(c)) for c in core_of[off[g.name]:off[g.name] + g.n]]
        for k in range(g.n):
            attrs = {"threshold": float(g.threshold[k]), "reset": float(g.reset),
                     "leak_decay": float(g.leak_decay), "input_decay": float(g.input_decay),
                     "refractory_delay": int(g.refractory), "potential": float(g.v_init[k])}
            if g.bias[k]:
                attrs["bias"] = float(g.bias[k])
            nrn = grp[k]
            nrn.set_attributes(log_spikes=True, model_attributes=attrs)
            nrn.map_to_core(cores[core_ix[k]])
    slots: dict[int, int] = {}     # next free `loihi_inputs[k]` soma unit per core
    groups_by_name = {g.name: g for g in spec.groups}
    for d in spec.drives:
        trains = np.zeros((d.n, steps), np.int64)
        keep = d.steps < steps
        trains[d.index[keep], d.steps[keep]] = 1
        o = off[d.target]
        assert groups_by_name[d.target].n == d.n
        for k in range(d.n):
            core = _sanafe_core_index(int(core_of[o + k]))
            slot = slots.get(core, 0)
            slots[core] = slot + 1
            nrn = groups[d.name][k]
            nrn.set_attributes(soma_hw_name=f"loihi_inputs[{slot}]",
                               model_attributes={"spikes": trains[k].tolist()})
            nrn.map_to_core(cores[core])
    chip = sanafe.SpikingChip(arch)
    chip.load(snn)
    t0 = time.process_time()
    r = chip.sim(steps, timing_model=timing_model, spike_trace=True, perf_trace=True,
                 processing_threads=1)
    cpu_s = time.process_time() - t0
    # the same run under SANA-FE's "simple" timing model (no NoC model: a step is the
    # slowest core's events + the barrier, as neuroedge's step model), on a fresh chip
    simple = sanafe.SpikingChip(arch)
    simple.load(snn)
    r_simple = simple.sim(steps, timing_model="simple", perf_trace=True, processing_threads=1)
    col = {g.name: k for k, g in enumerate(spec.groups)}
    spikes = np.zeros((steps, len(spec.groups)), np.int64)
    for t, fired in enumerate(r["spike_trace"]):
        for a in fired:
            if a.group_name in col:          # drivers are not the network's neurons
                spikes[t, col[a.group_name]] += 1
    pt = r["perf_trace"]
    return {"spikes": spikes, "energy_j": np.asarray(pt["total_energy"], float),
            "latency_s": np.asarray(pt["sim_time"], float),
            "latency_simple_s": float(np.sum(r_simple["perf_trace"]["sim_time"])),
            "spikes_simple": int(np.sum(r_simple["perf_trace"]["fired"])),
            "parts_j": {k: float(np.sum(pt[f"{k}_energy"])) for k in
                        ("synapse", "dendrite", "soma", "network")},
            "counts": {"synaptic events": int(np.sum(pt["spikes"])),
                       "neurons fired": int(np.sum(pt["fired"])),
                       "neurons updated": int(np.sum(pt["updated"])),
                       "hops": int(np.sum(pt["hops"])), "packets": int(r["packets_sent"])},
            "cpu_s": cpu_s}


# -- the networks -----------------------------------------------------------------------------
def dvs_gesture() -> tuple[Spec, object]:
    """SANA-FE's shipped DVS gesture net, built as its tutorial 5 builds it, and its synapse
    list read back from SANA-FE's network object (so both sides hold the same synapses)."""
    sanafe = _sanafe()
    import sanafe.layers as layers
    import sanafe.tutorial as tutorial
    with tutorial.get_dvs_data() as fh:
        data = np.load(fh)
        a = {k: data[k] for k in data.files}
    th = a["thresholds"]
    snn = sanafe.Network()
    l0 = layers.Input2D(snn, 32, 32, threshold=th[0])
    l1 = layers.Conv2D(snn, l0, a["conv1"], stride_width=2, stride_height=2, threshold=th[1])
    l2 = layers.Conv2D(snn, l1, a["conv2"], threshold=th[2])
    l3 = layers.Conv2D(snn, l2, a["conv3"], threshold=th[3])
    l4 = layers.Conv2D(snn, l3, a["conv4"], threshold=th[4])
    l5 = layers.Dense(snn, l4, 11, a["dense1"], threshold=th[5])
    layer_list = [l0, l1, l2, l3, l4, l5]
    groups, edges = [], []
    for k, lay in enumerate(layer_list):
        name = lay.group.get_name()
        n = len(lay)
        bias = np.asarray(a["inputs"], float) if k == 0 else np.zeros(n)
        groups.append(Group(name, n, np.full(n, float(th[k])), bias, np.zeros(n)))
        if k == 0:
            continue
        prev = layer_list[k - 1]
        i, j, w = [], [], []
        for src, nrn in enumerate(prev):
            for e in nrn.edges_out:
                i.append(src)
                j.append(e.post_neuron.neuron_offset)
                w.append(e.synapse_attributes["w"])
        edges.append((prev.group.get_name(), name, np.asarray(i), np.asarray(j),
                      np.asarray(w, float)))
    for _, _, _, _, w in edges:
        assert np.all(w == np.round(w)), "DVS weights are integers in the shipped npz"
    return Spec("dvs_gesture", 1e-3, groups, edges,
                "SANA-FE's shipped DVS gesture net (tutorial 5, dvs_challenge.npz)",
                shared_weights=True), snn


def va_cuba(n: int = 4000, seed: int = 0) -> Spec:
    """VA CUBA (models/snn_cuba) in Loihi's one-current CUBA compartment, integer units.

    Voltages in units of 1/1024 mV measured from El = -49 mV: threshold Vt - El = -1 mV, reset
    Vr - El = -11 mV, v(0) ~ U(Vr, Vt), as in the model card. Each spike's charge into v
    equals the Brian2 example's w tau_syn / tau_m (1.62 mV x 5/20 excitatory, -9 mV x 10/20
    inhibitory), delivered through one current with tau_syn = 5 ms: per-step weight
    charge x (1 - exp(-dt / tau_syn)), rounded to an integer unit.
    """
    from models.snn_cuba.card import CubaConfig
    from models.snn_cuba.model import (
        EL,
        REFRACTORY,
        TAUE,
        TAUI,
        TAUM,
        VR,
        VT,
        WE,
        WI,
        trained_state,
    )
    cfg = CubaConfig(n=n, seed=seed)
    st = trained_state(cfg)
    unit = 1024.0                                   # integer units per mV
    dt = cfg.dt
    # decays rounded to float32 values: with float64 decays SANA-FE's current differed from
    # ours in the 9th digit after one decay (as if it held the decay in float32); a float32
    # value is the same number on both sides
    du = float(np.float32(np.exp(-dt / TAUE)))
    w_e = round(WE * TAUE / TAUM * (1 - du) * unit)
    w_i = round(WI * TAUI / TAUM * (1 - du) * unit)
    v0 = np.round((st.arrays["v_init"] - EL) * unit)
    g = Group("cuba", n, np.full(n, (VT - EL) * unit), np.zeros(n), v0, reset=(VR - EL) * unit,
              leak_decay=float(np.float32(np.exp(-dt / TAUM))), input_decay=du,
              refractory=int(round(REFRACTORY / dt)))
    edges = []
    for name, w in (("exc", w_e), ("inh", w_i)):
        i = st.arrays[f"{name}/pre_idx"].astype(np.int64)
        j = st.arrays[f"{name}/post_idx"].astype(np.int64)
        edges.append(("cuba", "cuba", i, j, np.full(i.size, float(w))))
    return Spec(f"va_cuba_{n}", dt, [g], edges,
                f"VA CUBA n={n} seed={seed} in Loihi's one-current CUBA, w_e={w_e}, "
                f"w_i={w_i} (1/1024 mV)")


RELAY_THRESHOLD = 1024.0     # relay neurons fire only when their driver fires (diffpc_spec)


def diffpc_spec(engine, name: str, harness_only: bool = False) -> Spec:
    """A DiffPC iteration's spikes replayed on Loihi 1 compartments, with its weights.

    ``engine`` is a :class:`models.diffpc.model.DiffPCNetwork` after ``iterate`` (its
    ``last_spikes``: per layer the steps, rows and signed graded payloads of every spike,
    rows [0, h) the state compartments' activity spikes, [h, 2h) the error ports').
    SANA-FE's shipped Loihi architecture has binary spikes and a LIF soma, so the reading is:

    - a signed spike is a binary spike on one of two compartments, ``+`` and ``-``: each
      DiffPC compartment (state, error port) is two Loihi LIF neurons (``h{l}.act+/-``,
      ``h{l}.err+/-``), and a synapse of weight w is stored as +w from the ``+`` neuron and
      -w from the ``-`` neuron, both into the target's ``act+`` neuron (which holds the
      state compartment's input): one synaptic event per delivered spike and target, as in
      the DiffPC engine;
    - the grade 2^(n-1-k) of the spike is the known threshold schedule; the receiver would
      scale the step's input by it (a per-step multiplier), so the stored weight is
      W 2^(m-n+1) without it and the grade is not sent;
    - the DiffPC neuron's dynamics (six state variables) cannot run in SANA-FE's LIF; each
      Loihi neuron fires exactly when its DiffPC compartment spiked, driven by a replayed
      spike train (``Drive``: neuroedge spike source / SANA-FE ``input`` neuron on the same
      core) through one synapse heavy enough to cross ``RELAY_THRESHOLD``, while the DiffPC
      weights sum to far less than it; potentials do not persist (leak_decay = 0), so a
      neuron is priced as an updated Loihi compartment in the steps it has input.

    Against the DiffPC engine this doubles the neurons (the ``-`` halves) and adds the
    drivers' events (one spike, one synaptic event, one message per replayed spike);
    ``harness_only`` builds the same net without the DiffPC synapses, so that the drivers'
    and idle neurons' share can be shown apart. Replayed spikes fire one step later (the
    driver's synapse delay), so the replay runs ``cfg.steps + 1`` steps.
    """
    sizes, B, scale = engine.net.sizes, engine.B, engine.scale
    groups, drives, edges = [], [], []
    for layer in range(1, len(sizes)):
        h = B * sizes[layer]
        st, rows, pay = engine.last_spikes[f"h{layer}"]
        st, rows, pay = np.asarray(st), np.asarray(rows), np.asarray(pay)
        if st.size and (st.min() < 0 or st.max() >= engine.cfg.steps):
            raise ValueError(f"diffpc_spec: h{layer}'s spike steps span {st.min()}.."
                             f"{st.max()}; expected 0..{engine.cfg.steps - 1} (steps from "
                             "the iteration's first step, DiffPCNetwork.last_spikes)")
        for port, lo in (("act", 0), ("err", h)):
            for sign, tag in ((1, "_p"), (-1, "_n")):
                g = f"h{layer}.{port}{tag}"
                groups.append(Group(g, h, np.full(h, RELAY_THRESHOLD), np.zeros(h),
                                    np.zeros(h), leak_decay=0.0, input_decay=0.0))
                k = (rows >= lo) & (rows < lo + h) & (np.sign(pay) == sign)
                drives.append(Drive(f"drive.{g}", g, h, st[k].astype(np.int64),
                                    (rows[k] - lo).astype(np.int64), 2 * RELAY_THRESHOLD))
    if not harness_only:
        for layer in range(2, len(sizes)):
            ki, ko = sizes[layer - 1], sizes[layer]
            s, i, j = (g.ravel() for g in np.meshgrid(np.arange(B), np.arange(ko),
                                                      np.arange(ki), indexing="ij"))
            w = np.tile(engine.net.W[layer - 1].cpu().numpy().ravel(), B) * scale
            for sign, tag in ((1.0, "_p"), (-1.0, "_n")):
                edges.append((f"h{layer - 1}.act{tag}", f"h{layer}.act_p", s * ki + j,
                              s * ko + i, sign * w))          # forward: activity spikes
                edges.append((f"h{layer}.err{tag}", f"h{layer - 1}.act_p", s * ko + i,
                              s * ki + j, sign * w))          # feedback: error spikes
    # the relays' firing must not depend on the DiffPC input: its largest possible sum
    fan = {}
    for _, post, _, j, w in edges:
        fan[post] = fan.get(post, 0.0) + float(np.bincount(j, np.abs(w)).max(initial=0.0))
    worst = max(fan.values(), default=0.0)
    if worst >= RELAY_THRESHOLD / 2:
        raise ValueError(f"diffpc_spec: a neuron's DiffPC input can reach {worst:g}, not below "
                         f"RELAY_THRESHOLD / 2 = {RELAY_THRESHOLD / 2:g}: the replayed neurons "
                         "would fire on their own input; expected smaller weights")
    sizes_txt = "-".join(str(k) for k in sizes)
    return Spec(name, 1e-3, groups, edges,
                f"DiffPC {sizes_txt}, {B} samples side by side, one training iteration's "
                "spikes replayed on Loihi 1 LIF pairs (+/-)"
                + (", drivers only" if harness_only else ""),
                drives=drives, neurons_per_core=512)


def trained_diffpc(epochs: int, seed: int = 0):
    """DiffPC (quick: 64-32-10 on digits, n = 8, 15 cycles, batch 32) trained ``epochs``
    epochs on neuroedge's `loihi2` (the profile DiffPC needs: signed graded payloads), then
    one training iteration on the first 32 test samples, whose spikes the replay uses.
    Returns (engine, test accuracy)."""
    from hw_profiles import load
    from models.diffpc.card import DiffPCConfig
    from models.diffpc.model import DiffPCClassifier
    from models.shared.datasets import digits
    data = digits()
    cfg = DiffPCConfig(seed=seed, epochs=epochs)
    model = DiffPCClassifier(data.n_features, data.n_classes, cfg,
                             NeuromorphicDevice(load("loihi2")))
    model.fit(data.x_train, data.y_train)
    acc = model.evaluate(data.x_test, data.y_test)["accuracy"]
    B = cfg.batch_size
    model.engine.iterate(data.x_test[:B], np.eye(data.n_classes)[data.y_test[:B]],
                         scope="replay")
    return model.engine, acc


# -- per-event prices (the table of the first version, kept: it explains the factors) --------
def _unit(arch: dict, section: str, name: str) -> dict:
    core = arch["architecture"]["tile"][0]["core"][0]
    for unit in core[section]:
        if unit["name"].split("[")[0] == name:
            return unit["attributes"]
    raise KeyError(f"SANA-FE loihi.yaml has no {section} unit {name!r}")


def price_pairs() -> list[dict]:
    """Per-event (energy pJ, latency ns) pairs: neuroedge `loihi` beside SANA-FE `loihi.yaml`.

    Pairs are matched by what the event does, not by name: SANA-FE splits a neuron update into
    an access (every neuron, every step) and an update (neurons with input, bias or non-zero
    potential), which together correspond to Davies 2018's 'active neuron update'; its spike
    is the soma's spike-out (once per spike) plus the axon's message-out (once per
    destination core).
    """
    arch = sanafe_loihi_yaml()
    ne = tomllib.loads(LOIHI_TOML.read_text())
    e, t = ne["energy_pj"], ne["core_op_ns"]
    tile = arch["architecture"]["tile"][0]["attributes"]
    syn = _unit(arch, "synapse", "loihi_dense_synapse")
    soma = _unit(arch, "soma", "loihi_lif")
    out = _unit(arch, "axon_out", "loihi_out")
    sync = arch["architecture"]["attributes"]["latency_sync"]
    pairs = [
        ("synaptic op (dense)", e["synop"]["value"], t["synop"]["value"],
         syn["energy_process_spike"] * 1e12, syn["latency_process_spike"] * 1e9),
        ("neuron update (active)", e["neuron_update_active"]["value"],
         t["neuron_update_active"]["value"],
         (soma["energy_access_neuron"] + soma["energy_update_neuron"]) * 1e12,
         (soma["latency_access_neuron"] + soma["latency_update_neuron"]) * 1e9),
        ("neuron update (idle)", e["neuron_update_idle"]["value"],
         t["neuron_update_idle"]["value"], soma["energy_access_neuron"] * 1e12,
         soma["latency_access_neuron"] * 1e9),
        ("spike out (soma)", e["spike"]["value"], t["spike"]["value"],
         soma["energy_spike_out"] * 1e12, soma["latency_spike_out"] * 1e9),
        ("message out (per dest. core)", None, None, out["energy_message_out"] * 1e12,
         out["latency_message_out"] * 1e9),
        ("NoC hop (mean E-W/N-S)", e["hop"]["value"], None,
         (tile["energy_east_hop"] + tile["energy_north_hop"]) / 2 * 1e12,
         (tile["latency_east_hop"] + tile["latency_north_hop"]) / 2 * 1e9),
        ("barrier, whole chip", None, ne["step_sync"]["barrier_ns"]["value"],
         None, max(sync.values()) * 1e9),
        ("barrier, one tile", None, ne["step_sync"]["barrier_one_router_ns"]["value"],
         None, min(sync.values()) * 1e9),
    ]
    rows = []
    for name, ne_e, ne_t, sf_e, sf_t in pairs:
        rows.append({"event": name, "neuroedge_pj": ne_e, "sanafe_pj": sf_e,
                     "energy_ratio": None if ne_e is None or sf_e is None else ne_e / sf_e,
                     "neuroedge_ns": ne_t, "sanafe_ns": sf_t,
                     "latency_ratio": None if ne_t is None or sf_t is None else ne_t / sf_t})
    return rows


def sanafe_barrier_s(tiles: int) -> float:
    """SANA-FE's per-step barrier for a placement on ``tiles`` tiles: its loihi.yaml
    ``latency_sync`` table, the entry of the largest tile count <= ``tiles`` (how SANA-FE
    2.2.9 reads the table: idle one-neuron runs on 1, 2, 3, 4, 5, 28, 29 tiles take
    0.6, 1.0, 1.0, 1.4, 1.4, 1.4, 1.8 us + the 6 ns neuron access)."""
    table = sanafe_loihi_yaml()["architecture"]["attributes"]["latency_sync"]
    return float(table[max(k for k in table if k <= max(tiles, 1))])


def latency_parts(spec: Spec, steps: int, core_of: np.ndarray, t_ne: float,
                  t_sf: float) -> dict:
    """Each side's total latency split into its barrier (steps x the barrier of the tiles
    in use; neither side's step has any other fixed part) and the cores' work (the rest:
    the slowest core's events, summed over steps)."""
    from sim.step_timing import barrier_s
    routers = int(np.unique(np.asarray(core_of) // CORES_PER_ROUTER).size)
    b_ne = barrier_s(loihi_profile(spec), routers) * steps
    b_sf = sanafe_barrier_s(routers) * steps
    return {"tiles": routers, "neuroedge_barrier": b_ne, "sanafe_barrier": b_sf,
            "neuroedge_cores": t_ne - b_ne, "sanafe_cores": t_sf - b_sf,
            "barrier_ratio": b_ne / b_sf, "cores_ratio": (t_ne - b_ne) / (t_sf - b_sf)}


def _factor(r: float | None) -> float | None:
    return None if r is None or r <= 0 else max(r, 1.0 / r)


# -- one network side by side -------------------------------------------------------------------
def compare(spec: Spec, steps: int, snn=None, show_steps: int = 8, quiet: bool = False) -> dict:
    ne = run_neuroedge(spec, steps)
    sf = run_sanafe(spec, steps, ne["core_of"], snn=snn)
    same = bool(np.array_equal(ne["spikes"], sf["spikes"]))
    mism = np.argwhere(ne["spikes"] != sf["spikes"])
    e_ne, e_sf = float(ne["energy_j"].sum()), float(sf["energy_j"].sum())
    t_ne, t_sf = float(ne["latency_s"].sum()), float(sf["latency_s"].sum())
    out = {
        "network": spec.name, "note": spec.note, "steps": steps,
        "neurons": int(sum(g.n for g in spec.groups)),
        "synapses": int(sum(e[2].size for e in spec.edges)), "cores": ne["cores"],
        "spikes_identical": same, "spikes_neuroedge": int(ne["spikes"].sum()),
        "spikes_sanafe": int(sf["spikes"].sum()),
        "first_mismatch": None if same else [int(x) for x in mism[0]],
        "spikes_per_group": {g.name: int(ne["spikes"][:, k].sum())
                             for k, g in enumerate(spec.groups)},
        "energy_j": {"neuroedge_dynamic": e_ne, "sanafe": e_sf,
                     "neuroedge_static": float(ne["static_j"].sum())},
        "latency_s": {"neuroedge": t_ne, "sanafe": t_sf,
                      "sanafe_simple_timing": sf["latency_simple_s"]},
        "sanafe_simple_same_spikes": sf["spikes_simple"] == sf["counts"]["neurons fired"],
        "energy_ratio": e_ne / e_sf, "latency_ratio": t_ne / t_sf,
        "latency_parts_s": latency_parts(spec, steps, ne["core_of"], t_ne, t_sf),
        "energy_factor": _factor(e_ne / e_sf), "latency_factor": _factor(t_ne / t_sf),
        "per_step": {"neuroedge_energy_j": ne["energy_j"].tolist(),
                     "sanafe_energy_j": sf["energy_j"].tolist(),
                     "neuroedge_latency_s": ne["latency_s"].tolist(),
                     "sanafe_latency_s": sf["latency_s"].tolist()},
        "neuroedge_by_op_j": ne["by_op_j"], "neuroedge_counts": ne["counts"],
        "sanafe_parts_j": sf["parts_j"], "sanafe_counts": sf["counts"],
        "cpu_s": {"neuroedge": ne["cpu_s"], "sanafe": sf["cpu_s"]},
    }
    if not quiet:
        _print_network(out, ne, sf, show_steps)
    return out


def compare_diffpc(epochs: int, quiet: bool = False, engine=None) -> dict:
    """The trained DiffPC net's replay (``diffpc_spec``) side by side, and the same run
    without the DiffPC synapses (drivers and idle neurons only), whose share is shown
    apart: ``net_of_harness`` = full minus harness, on each side."""
    acc = None
    if engine is None:
        engine, acc = trained_diffpc(epochs)
    steps = engine.cfg.steps + 1
    out = compare(diffpc_spec(engine, "diffpc_digits"), steps, quiet=quiet)
    bare = compare(diffpc_spec(engine, "diffpc_digits_harness", harness_only=True), steps,
                   quiet=True)
    e = out["energy_j"]
    he, ht = bare["energy_j"], bare["latency_s"]
    net_ne = e["neuroedge_dynamic"] - he["neuroedge_dynamic"]
    net_sf = e["sanafe"] - he["sanafe"]
    out["diffpc"] = {"epochs": epochs, "test_accuracy": acc, "samples": engine.B,
                     "iteration_steps": engine.cfg.steps,
                     "harness": {"energy_j": he, "latency_s": ht,
                                 "neuroedge_counts": bare["neuroedge_counts"],
                                 "sanafe_counts": bare["sanafe_counts"]},
                     "net_of_harness_energy_j": {"neuroedge": net_ne, "sanafe": net_sf},
                     "net_of_harness_energy_ratio": net_ne / net_sf}
    if not quiet:
        print(f"DiffPC (trained {epochs} epochs, test accuracy "
              f"{'-' if acc is None else f'{acc:.1%}'}): drivers and idle neurons alone "
              f"(no DiffPC synapses) {he['neuroedge_dynamic'] * 1e6:.3f} / "
              f"{he['sanafe'] * 1e6:.3f} uJ, {ht['neuroedge'] * 1e3:.4f} / "
              f"{ht['sanafe'] * 1e3:.4f} ms; the DiffPC synapses' share (full minus that) "
              f"{net_ne * 1e6:.3f} / {net_sf * 1e6:.3f} uJ (ratio {net_ne / net_sf:.3f})")
    return out


def _print_network(o: dict, ne: dict, sf: dict, show_steps: int) -> None:
    print(f"\n== {o['network']}: {o['neurons']:,} neurons, {o['synapses']:,} synapses, "
          f"{o['cores']} cores, {o['steps']} steps ({o['note']})")
    print(f"spikes: neuroedge {o['spikes_neuroedge']:,}, SANA-FE {o['spikes_sanafe']:,}, "
          f"identical per step and population: {o['spikes_identical']}")
    print(f"{'step':>5s} {'spikes':>7s} {'NE nJ':>9s} {'SF nJ':>9s} {'ratio':>6s} "
          f"{'NE us':>8s} {'SF us':>8s} {'ratio':>6s}")
    for t in range(min(show_steps, o["steps"])):
        a, b = ne["energy_j"][t], sf["energy_j"][t]
        c, d = ne["latency_s"][t], sf["latency_s"][t]
        print(f"{t:5d} {int(ne['spikes'][t].sum()):7d} {a * 1e9:9.2f} {b * 1e9:9.2f} "
              f"{a / b:6.2f} {c * 1e6:8.3f} {d * 1e6:8.3f} {c / d:6.2f}")
    e, t = o["energy_j"], o["latency_s"]
    print(f"total  dynamic energy: neuroedge {e['neuroedge_dynamic'] * 1e6:.3f} uJ, SANA-FE "
          f"{e['sanafe'] * 1e6:.3f} uJ (ratio {o['energy_ratio']:.3f}); neuroedge static "
          f"{e['neuroedge_static'] * 1e6:.3f} uJ apart")
    print(f"total  latency: neuroedge {t['neuroedge'] * 1e3:.4f} ms, SANA-FE "
          f"{t['sanafe'] * 1e3:.4f} ms (ratio {o['latency_ratio']:.3f})")
    lp = o["latency_parts_s"]
    print(f"  of which barrier ({lp['tiles']} tiles): neuroedge "
          f"{lp['neuroedge_barrier'] * 1e3:.4f} ms, SANA-FE {lp['sanafe_barrier'] * 1e3:.4f} "
          f"ms (ratio {lp['barrier_ratio']:.3f}); cores' work: neuroedge "
          f"{lp['neuroedge_cores'] * 1e3:.4f} ms, SANA-FE {lp['sanafe_cores'] * 1e3:.4f} ms "
          f"(ratio {lp['cores_ratio']:.3f})")
    nb, sp = o["neuroedge_by_op_j"], o["sanafe_parts_j"]
    ne_neuron = nb.get("neuron_update_active", 0) + nb.get("neuron_update_idle", 0)
    ne_net = nb.get("spike", 0) + nb.get("hop", 0) + nb.get("chip_hop", 0)
    rows = [("synaptic events", nb.get("synop", 0), sp["synapse"] + sp["dendrite"]),
            ("neuron updates + spike out", ne_neuron, sp["soma"]),
            ("messages + hops", ne_net, sp["network"])]
    print("breakdown (uJ)           neuroedge    SANA-FE   ratio")
    for name, a, b in rows:
        print(f"  {name:24s} {a * 1e6:9.3f} {b * 1e6:10.3f} "
              f"{(a / b if b else float('nan')):7.3f}")
    nc, sc = o["neuroedge_counts"], o["sanafe_counts"]
    print(f"  counts: synops {nc.get('synop', 0):,.0f} vs synaptic events "
          f"{sc['synaptic events']:,}; active updates {nc.get('neuron_update_active', 0):,.0f}"
          f" vs SANA-FE 'updated' {sc['neurons updated']:,}; spike packets "
          f"{nc.get('spike', 0):,.0f} vs messages {sc['packets']:,}; hops "
          f"{nc.get('hop', 0):,.0f} vs {sc['hops']:,}")


def render_table(doc: dict) -> str:
    """The side-by-side table of a results file (bench/RESULTS.md and docs/neuromorphic.md
    show it verbatim; tests/test_sanafe_compare.py checks they match the committed file)."""
    lines = ["| network | steps | neurons | cores | spikes (both) | dynamic energy NE / SF (uJ) "
             "| ratio | latency NE / SF (ms) | ratio | NE static (uJ, apart) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for n in doc["networks"]:
        e, t = n["energy_j"], n["latency_s"]
        same = "identical" if n["spikes_identical"] else "DIFFER"
        lines.append(f"| {n['network']} | {n['steps']} | {n['neurons']:,} | {n['cores']} | "
                     f"{n['spikes_neuroedge']:,} {same} | {e['neuroedge_dynamic'] * 1e6:.1f} / "
                     f"{e['sanafe'] * 1e6:.1f} | {n['energy_ratio']:.2f} | "
                     f"{t['neuroedge'] * 1e3:.2f} / {t['sanafe'] * 1e3:.2f} | "
                     f"{n['latency_ratio']:.2f} | {e['neuroedge_static'] * 1e6:.1f} |")
    lines += ["", "| network | part | neuroedge (uJ) | SANA-FE (uJ) | ratio |",
              "|---|---|---|---|---|"]
    for n in doc["networks"]:
        nb, sp = n["neuroedge_by_op_j"], n["sanafe_parts_j"]
        parts = [("synaptic events", nb.get("synop", 0), sp["synapse"] + sp["dendrite"]),
                 ("neuron updates + spike out",
                  nb.get("neuron_update_active", 0) + nb.get("neuron_update_idle", 0),
                  sp["soma"]),
                 ("messages + hops", nb.get("spike", 0) + nb.get("hop", 0), sp["network"])]
        for name, a, b in parts:
            lines.append(f"| {n['network']} | {name} | {a * 1e6:.2f} | {b * 1e6:.2f} | "
                         f"{a / b:.3f} |")
    lines += ["", "| network | tiles | barrier NE / SF (ms) | ratio | cores' work NE / SF (ms) "
                  "| ratio | SF latency, simple / detailed timing (ms) |",
              "|---|---|---|---|---|---|---|"]
    for n in doc["networks"]:
        lp, t = n["latency_parts_s"], n["latency_s"]
        lines.append(f"| {n['network']} | {lp['tiles']} | {lp['neuroedge_barrier'] * 1e3:.2f} / "
                     f"{lp['sanafe_barrier'] * 1e3:.2f} | {lp['barrier_ratio']:.2f} | "
                     f"{lp['neuroedge_cores'] * 1e3:.2f} / {lp['sanafe_cores'] * 1e3:.2f} | "
                     f"{lp['cores_ratio']:.2f} | {t['sanafe_simple_timing'] * 1e3:.3f} / "
                     f"{t['sanafe'] * 1e3:.3f} |")
    r = doc["result"]
    lines += ["", f"energy_factor_max {r['energy_factor_max']:.2f}, latency_factor_max "
                  f"{r['latency_factor_max']:.2f} (goal {r['goal_factor']}: "
                  f"{'met' if r['goal_met'] else 'not met'})"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=128, help="time steps per network")
    ap.add_argument("--cuba-n", type=int, default=4000,
                    help="VA CUBA neurons (4000: the model card's)")
    ap.add_argument("--diffpc-epochs", type=int, default=5,
                    help="training epochs of the DiffPC net whose spikes are replayed")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rows = price_pairs()
    fmt = lambda v: "       -" if v is None else f"{v:8.2f}"  # noqa: E731
    print(f"{'per event':30s} {'NE pJ':>8s} {'SF pJ':>8s} {'ratio':>8s} "
          f"{'NE ns':>8s} {'SF ns':>8s} {'ratio':>8s}")
    for r in rows:
        print(f"{r['event']:30s} {fmt(r['neuroedge_pj'])} {fmt(r['sanafe_pj'])} "
              f"{fmt(r['energy_ratio'])} {fmt(r['neuroedge_ns'])} {fmt(r['sanafe_ns'])} "
              f"{fmt(r['latency_ratio'])}")
    networks = []
    spec, snn = dvs_gesture()
    networks.append(compare(spec, args.steps, snn=snn))
    networks.append(compare(va_cuba(args.cuba_n), args.steps * 8))
    networks.append(compare_diffpc(args.diffpc_epochs))
    e_max = max(n["energy_factor"] for n in networks)
    t_max = max(n["latency_factor"] for n in networks)
    result = {
        "networks": [{k: n[k] for k in ("network", "steps", "neurons", "synapses", "cores",
                                          "spikes_identical", "spikes_neuroedge",
                                          "energy_ratio", "latency_ratio", "energy_factor",
                                          "latency_factor")} for n in networks],
        "energy_factor_max": e_max, "latency_factor_max": t_max,
        "goal_factor": 1.25, "goal_met": bool(e_max <= 1.25 and t_max <= 1.25),
        "energy_basis": "dynamic (SANA-FE models no static power)",
        "sanafe_timing_model": "detailed", "sanafe_version": _sanafe_version(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"result": result, "networks": networks, "per_event": rows},
                              indent=1))
    tmp.replace(args.out)
    print()
    print(render_table(json.loads(args.out.read_text())))
    print("RESULT " + json.dumps(result))
    return result


def _sanafe_version() -> str:
    from importlib.metadata import version
    return version("sanafe")


if __name__ == "__main__":
    main()
