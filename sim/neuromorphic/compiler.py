"""Compile a Network onto a neuromorphic profile: quantise, place, build CSR tables, route.

Hardware model (an estimate; each choice is stated):

- **Weights** are signed integers of ``limits.weight_bits`` bits times one scale per
  projection (Loihi's shared weight exponent; Lava's Dense ``num_weight_bits``):
  ``scale = max|w| / (2**(bits-1) - 1)``, or a fixed ``weight_lsb`` for the whole chip.
  The run uses the quantised weights. A projection whose weights all round to 0 is an
  error (the layer would be dead on the chip).
- **Synapse memory**: one entry per synapse of ``ceil((weight_bits + target-index bits +
  delay bits) / 8)`` bytes, stored on the core of the *target* neuron (Loihi's fan-in
  synaptic memory); the target index addresses a neuron within its core.
- **Crossbar synapse memory**: a profile stating ``limits.synapse_crossbar`` (TrueNorth: each
  core a 256-axon x 256-neuron binary crossbar, Merolla et al. 2014) stores connectivity as one
  bit per (axon, neuron) pair, whatever the pattern: a core costs ``axons in use x neurons on
  it`` bits, and the weight is not stored per synapse (TrueNorth takes it from the axon's type,
  one of 4 values per neuron). Placement is then bounded by ``neurons_per_core`` and
  ``fan_in_per_core`` alone (the loader checks that their crossbar fits
  ``synapse_bytes_per_core``). Memory *traffic* per synaptic event stays ``entry_bytes``. The
  4-values-per-neuron weight rule is not checked: weights stay ``weight_bits`` integers.
- **Shared (convolutional) weights**: a projection built from a convolution or pooling
  (``Projection.kernel_weights``, set by the NIR import) is stored as its kernel on a chip
  whose profile states ``limits.weight_sharing`` (Loihi's weight sharing, which NxTF's
  compiler uses to compress conv layers, Rueckauer et al. 2021): every core holding its
  targets keeps the kernel once (``kernel_weights`` entries), its synapses cost no
  per-synapse memory. Elsewhere (no such key) it is unrolled: one entry per synapse.
  ``Compiled.connectivity`` says which each projection got. Synaptic events are the same
  either way (one synop per synapse a spike reaches).
- **Placement**: populations in order, each on its own cores, neurons in order, a core
  filled while it stays within ``neurons_per_core``, ``synapse_bytes_per_core`` and
  ``fan_in_per_core`` (distinct presynaptic axons). ``fan_out_per_core`` (core-to-core
  edges: one per neuron and destination core, Loihi's Naxout; on a chip stating
  ``limits.fan_out_multicast``, SpiNNaker, one key per neuron that sends) and ``cores`` are
  checked after placement.
- **Routing**: cores sit ``cores_per_router`` to a router on a ``mesh_x x mesh_y`` mesh,
  numbered row-major; spikes travel by dimension-order (X-Y) multicast, one packet per
  spike, replicated where paths branch, so the hop count of a spike is the edge count of
  its tree. Inputs from outside (sources) enter at router (0, 0), the host link.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hw_profiles.profile import HardwareProfile
from sim.errors import HardwareLimitError, ModelError
from sim.neuromorphic import kernels as K
from sim.neuromorphic.network import Network, refractory_steps

MODEL_CODES = {"lif": K.LIF, "if": K.IF, "cuba_lif": K.CUBA}
_UNLIMITED = 2 ** 62
MAX_DELAY_BUFFER_BYTES = 4 * 2 ** 30
"""Largest ring buffer of pending synaptic input the simulator allocates (4 GiB of host RAM).

The buffer (``D x C x n_neurons`` float64, see :func:`delay_buffer_bytes`) is the
simulator's own store, not chip memory (a chip keeps a few delay slots per dendritic
accumulator), so the profile's capacities do not bound it. A fixed cap, rather than the
free memory of the machine at hand, makes the same network compile or fail the same way
on every host, and 4 GiB fits a laptop beside the rest of the run."""


@dataclass(frozen=True)
class MeshGeometry:
    """Where each core's router sits: ``chips_x x chips_y`` chips, each a ``mesh_x x mesh_y``
    router mesh with ``cores_per_router`` cores per router, joined edge to edge into one
    mesh of ``grid_x x grid_y`` routers (Loihi: "off-chip communication interfaces that
    hierarchically extend the mesh in 4 planar directions to other chips", Davies et al.
    2018, "Chip overview"). Cores are numbered chip by chip (chips row-major), routers
    row-major within a chip: a population fills one chip before the next."""

    mesh_x: int
    mesh_y: int
    cores_per_router: int
    chips_x: int
    chips_y: int

    @property
    def grid_x(self) -> int:
        return self.mesh_x * self.chips_x

    @property
    def cores_per_chip(self) -> int:
        return self.mesh_x * self.mesh_y * self.cores_per_router

    @property
    def routers(self) -> int:
        return self.mesh_x * self.mesh_y * self.chips_x * self.chips_y

    def core_xy(self, n_cores: int) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) router coordinates on the whole mesh of cores ``0 .. n_cores-1``."""
        c = np.arange(max(n_cores, 1), dtype=np.int64)
        chip, local = c // self.cores_per_chip, (c % self.cores_per_chip) // self.cores_per_router
        x = (chip % self.chips_x) * self.mesh_x + local % self.mesh_x
        y = (chip // self.chips_x) * self.mesh_y + local // self.mesh_x
        return x, y


def mesh_geometry(profile: HardwareProfile) -> MeshGeometry:
    ix = profile.interconnect

    def get(key):
        return int(ix[key].value) if key in ix else 1
    return MeshGeometry(get("mesh_x"), get("mesh_y"), get("cores_per_router"),
                        get("chips_x"), get("chips_y"))


def _limit_error(what: str, value, key: str, limit, profile: HardwareProfile, hint: str):
    return HardwareLimitError(f"[NeuromorphicDevice.compile] {what} = {value} exceeds "
                              f"{profile.name} {key} = {limit:g}; {hint}")


@dataclass
class Quantisation:
    """What rounding the weights of one projection to the hardware did."""

    projection: str
    bits: int
    scale: float              # weight value of one integer step
    max_abs_error: float
    rms_rel_error: float      # ||w_q - w|| / ||w||
    zeroed: int               # non-zero weights that became 0


@dataclass
class Compiled:
    """A network placed on a profile: neuron arrays, CSR synapse table, routes, reports."""

    net: Network
    profile: HardwareProfile
    n_neurons: int
    n_sources: int
    C: int                                # synaptic channel slots per neuron
    D: int                                # ring-buffer slots (max delay + 1)
    offsets: dict[str, tuple[int, int]]   # population/source -> [lo, hi) global index
    coeff: dict[str, np.ndarray]
    row_ptr: np.ndarray
    col: np.ndarray
    w: np.ndarray
    dly: np.ndarray
    syn_proj: np.ndarray                  # projection id of each CSR entry
    proj_perm: dict[str, np.ndarray]      # projection -> CSR positions of its synapses
    hops: np.ndarray                      # per presynaptic index: hops of its multicast tree
    chip_hops: np.ndarray                 # per presynaptic index: its tree's chip crossings
    entry_bytes: int
    core_of: np.ndarray                   # core of each neuron
    cores: list[dict] = field(default_factory=list)
    routes: list[tuple[int, int, int, int]] = field(default_factory=list)
    quantisation: list[Quantisation] = field(default_factory=list)
    connectivity: dict[str, str] = field(default_factory=dict)   # projection -> "shared" |
                                                                  # "unrolled" | "sparse"

    @property
    def synapse_memory_bytes(self) -> int:
        """Synapse memory the placement uses on the chip (sum over cores)."""
        return int(sum(core["synapse_bytes"] for core in self.cores))

    @property
    def n_cores(self) -> int:
        return len(self.cores)

    def weights_of(self, projection: str) -> np.ndarray:
        """The (quantised) weights the chip applies, in the projection's synapse order."""
        return self.w[self.proj_perm[projection]]

    def utilisation(self) -> dict[str, float]:
        """Mean fill of the used cores for each limit, and the share of the chip's cores."""
        out = {"cores_used": float(self.n_cores),
               "cores_fraction": self.n_cores / self.profile.limit("cores", _UNLIMITED)}
        for key in ("neurons", "synapse_bytes", "fan_in", "fan_out"):
            vals = [c[f"{key}_util"] for c in self.cores]
            out[f"{key}_util_mean"] = float(np.mean(vals)) if vals else 0.0
            out[f"{key}_util_max"] = float(np.max(vals)) if vals else 0.0
        return out


def coefficients(net: Network) -> dict[str, np.ndarray]:
    """Per-neuron update coefficients of the built-in models (network.py's table)."""
    n = sum(p.n for p in net.populations.values())
    C = max([p.n_channels for p in net.populations.values()] + [1])
    dt = net.dt
    co = {k: np.zeros(n) for k in ("av", "bv", "kin", "thr", "vreset", "v0")}
    co["rmode"] = np.zeros(n, np.int8)
    co["refsteps"] = np.zeros(n, np.int64)
    for k in ("aI", "gI", "kI"):
        co[k] = np.zeros((n, C))
    lo = 0
    for pop in net.populations.values():
        sl = slice(lo, lo + pop.n)
        lo += pop.n
        if pop.custom:
            continue
        P = pop.params
        co["thr"][sl] = P["v_threshold"]
        co["vreset"][sl] = P["v_reset"]
        co["v0"][sl] = P.get("v_init", P["v_reset"])
        co["rmode"][sl] = 0 if pop.reset == "value" else 1
        co["refsteps"][sl] = refractory_steps(P["refractory"], dt).astype(np.int64)
        if pop.model == "if":
            co["av"][sl], co["bv"][sl], co["kin"][sl] = 1.0, 0.0, P["r"] * dt
            continue
        tm = P["tau_mem"]
        if pop.method == "euler":
            av = 1.0 - dt / tm
        else:
            av = np.exp(-dt / tm)
        co["av"][sl] = av
        co["bv"][sl] = (1.0 - av) * P["v_leak"]
        co["kin"][sl] = (1.0 - av) * P["r"]        # == (dt/tau_mem) r for euler
        for c in range(pop.n_channels if pop.model == "cuba_lif" else 0):
            ts = P[f"tau_syn{c}"]
            co["gI"][sl, c] = dt / ts * P["w_in"]
            if pop.method == "euler":
                co["aI"][sl, c] = 1.0 - dt / ts
                co["kI"][sl, c] = dt / tm * P["r"]
            else:
                a_c = np.exp(-dt / ts)
                co["aI"][sl, c] = a_c
                same = np.isclose(ts, tm, rtol=1e-12)
                safe = np.where(same, 1.0, ts - tm)
                k = np.where(same, P["r"] * dt / tm * av,
                             P["r"] * ts / safe * (a_c - av))
                co["kI"][sl, c] = k
    return _table(net, co)


_TABLE_KEYS = ("av", "bv", "kin", "thr", "vreset", "rmode", "refsteps", "aI", "gI", "kI")


def _table(net: Network, co: dict) -> dict:
    """Compress per-neuron coefficients to one row per population where they are uniform.

    Adds ``row0`` and ``stride`` per population (kernels.neurons_step); ``v0`` stays per
    neuron. Uniform populations (the common case) then read one cached row per step.
    """
    rows = {k: [] for k in _TABLE_KEYS}
    row0, stride, lo, n_rows = [], [], 0, 0
    for pop in net.populations.values():
        sl = slice(lo, lo + pop.n)
        lo += pop.n
        uniform = all(np.all(co[k][sl] == co[k][sl][:1]) for k in _TABLE_KEYS)
        take = slice(sl.start, sl.start + 1) if uniform else sl
        for k in _TABLE_KEYS:
            rows[k].append(co[k][take])
        row0.append(n_rows)
        stride.append(0 if uniform else 1)
        n_rows += 1 if uniform else pop.n
    out = {k: np.ascontiguousarray(np.concatenate(v)) for k, v in rows.items()}
    out["v0"] = co["v0"]
    out["row0"] = np.array(row0, np.int64)
    out["stride"] = np.array(stride, np.int64)
    return out


def _quantise(name: str, w: np.ndarray, bits: int, lsb: float | None) -> tuple[np.ndarray,
                                                                               Quantisation]:
    top = 2 ** (bits - 1) - 1          # signed: one bit is the sign
    wmax = float(np.max(np.abs(w))) if w.size else 0.0
    scale = lsb if lsb is not None else (wmax / top if wmax > 0 else 1.0)
    q = np.clip(np.round(w / scale), -top, top)
    wq = q * scale
    if w.size and not np.any(q):
        raise HardwareLimitError(
            f"[NeuromorphicDevice.compile] projection {name!r}: all {w.size} weights round to "
            f"0 with {bits}-bit weights (step {scale:g}, largest |w| = {wmax:g}); the layer "
            "would be dead on the chip. Scale the weights up or use a finer weight_lsb")
    norm = float(np.linalg.norm(w))
    return wq, Quantisation(name, bits, float(scale),
                            float(np.max(np.abs(wq - w))) if w.size else 0.0,
                            float(np.linalg.norm(wq - w) / norm) if norm > 0 else 0.0,
                            int(np.count_nonzero((q == 0) & (w != 0))))


def delay_buffer_bytes(D: int, C: int, n_neurons: int) -> int:
    """Bytes of the engine's input ring buffer: ``D`` slots x ``C`` channels x neurons, float64."""
    return D * C * n_neurons * 8


def _unique_sorted(x: np.ndarray) -> np.ndarray:
    """``np.unique(x)`` of a 1-D integer array by one sort: numpy >= 2.3 takes a hash table
    for plain ``unique``, ~15 s on the 20 M synapse keys of a 256k-neuron network against
    ~1.5 s for the sort (the same sorted distinct values)."""
    s = np.sort(x)
    if s.size == 0:
        return s
    keep = np.empty(s.size, np.bool_)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def compile_network(net: Network, profile: HardwareProfile, *, quantize: bool = True,
                    weight_lsb: float | None = None) -> Compiled:
    """Place ``net`` on ``profile``; see the module docstring for the hardware model.

    Raises
    ------
    ModelError
        ``weight_lsb`` not a finite number > 0.
    HardwareLimitError
        A projection dead after quantisation, or a population that does not fit (neurons,
        synapse memory, fan-in, fan-out or cores), naming the population and the limit; a
        delay ring buffer above :data:`MAX_DELAY_BUFFER_BYTES`.
    """
    if weight_lsb is not None and (isinstance(weight_lsb, bool)
                                   or not isinstance(weight_lsb, (int, float, np.number))
                                   or not math.isfinite(weight_lsb) or weight_lsb <= 0):
        # 0 would quantise every weight to 0 and nan to nan, both without a word
        raise ModelError(f"[NeuromorphicDevice.compile] weight_lsb = {weight_lsb!r}: expected "
                         "a finite weight step > 0 (or None: one step per projection)")
    offsets: dict[str, tuple[int, int]] = {}
    lo = 0
    for name, pop in net.populations.items():
        offsets[name] = (lo, lo + pop.n)
        lo += pop.n
    n_neurons = lo
    for name, src in net.sources.items():
        offsets[name] = (lo, lo + src.n)
        lo += src.n
    n_pre = lo
    n_sources = n_pre - n_neurons
    C = max([p.n_channels for p in net.populations.values()] + [1])
    bits = int(profile.limit("weight_bits", 32))

    pres, posts, ws, ds, chs, pids = [], [], [], [], [], []
    quant = []
    for pid, proj in enumerate(net.projections.values()):
        w = proj.weight
        if quantize:
            w, qrep = _quantise(proj.name, w, bits, weight_lsb)
            quant.append(qrep)
        pres.append(proj.pre_idx + offsets[proj.pre][0])
        posts.append(proj.post_idx + offsets[proj.post][0])
        ws.append(w)
        ds.append(proj.delay)
        chs.append(np.full(w.size, proj.channel, np.int64))
        pids.append(np.full(w.size, pid, np.int64))
    def cat(xs, dt):
        return np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)
    pre, post = cat(pres, np.int64), cat(posts, np.int64)
    w, dly = cat(ws, np.float64), cat(ds, np.int64)
    ch, pid = cat(chs, np.int64), cat(pids, np.int64)
    order = np.argsort(pre, kind="stable")       # CSR by presynaptic index
    row_ptr = np.zeros(n_pre + 1, np.int64)
    np.cumsum(np.bincount(pre, minlength=n_pre), out=row_ptr[1:])
    proj_perm = {}
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    start = 0
    for proj in net.projections.values():
        proj_perm[proj.name] = inv[start:start + proj.weight.size]
        start += proj.weight.size
    max_delay = int(dly.max()) if dly.size else 1
    need = delay_buffer_bytes(max_delay + 1, C, n_neurons)
    if need > MAX_DELAY_BUFFER_BYTES:
        raise HardwareLimitError(
            f"[NeuromorphicDevice.compile] delay buffer = {max_delay + 1} slots (max delay "
            f"{max_delay} steps + 1) x {C} channel(s) x {n_neurons} neurons x 8 B = {need} B "
            f"({need / 2**30:.1f} GiB) exceeds the simulator's MAX_DELAY_BUFFER_BYTES = "
            f"{MAX_DELAY_BUFFER_BYTES} B ({MAX_DELAY_BUFFER_BYTES / 2**30:g} GiB); shorten the "
            "longest delay or use fewer neurons")

    # -- placement (by target: synapse memory lives with the target neuron) ------------
    npc = int(profile.limit("neurons_per_core", _UNLIMITED))
    idx_bits = max(1, math.ceil(math.log2(max(2, min(npc, n_neurons)))))
    delay_bits = math.ceil(math.log2(max_delay + 1)) if max_delay > 1 else 0
    entry_bytes = math.ceil((bits + idx_bits + delay_bits) / 8)
    sharing = profile.limit("weight_sharing", 0) >= 1
    # A binary crossbar (TrueNorth: 256 axons x 256 neurons per core, Merolla et al. 2014)
    # holds one bit for every (axon, neuron) pair of the core, used or not, so a synapse
    # costs no entry of its own: the core's memory is its axons in use x its neurons, in
    # bits (below, per core), and the fan-in and neuron limits alone bound a core. Every
    # other chip stores an entry per synapse (weight + target index + delay bits).
    crossbar = profile.limit("synapse_crossbar", 0) >= 1
    connectivity = {p.name: ("sparse" if p.kernel_weights is None else
                             "shared" if sharing else "unrolled")
                    for p in net.projections.values()}
    per_synapse = np.concatenate([np.full(p.weight.size, connectivity[p.name] != "shared"
                                          and not crossbar)
                                  for p in net.projections.values()] or [np.zeros(0, bool)])
    neuron_bytes = np.bincount(post[per_synapse], minlength=n_neurons) * entry_bytes
    by_post = np.argsort(post, kind="stable")
    in_ptr = np.zeros(n_neurons + 1, np.int64)
    np.cumsum(np.bincount(post, minlength=n_neurons), out=in_ptr[1:])
    in_pre = pre[by_post]
    max_bytes = int(profile.limit("synapse_bytes_per_core", _UNLIMITED))
    max_fan_in = int(profile.limit("fan_in_per_core", _UNLIMITED))
    max_cores = int(profile.limit("cores", _UNLIMITED))
    max_fan_out = int(profile.limit("fan_out_per_core", _UNLIMITED))
    # SpiNNaker's routers copy a multicast packet to every core its key names: a neuron
    # uses one outgoing key whatever cores it reaches (limits.fan_out_multicast)
    multicast = profile.limit("fan_out_multicast", 0) >= 1
    geo = mesh_geometry(profile)
    # Fan-out depends on where the targets land, so it is checked after placement; a
    # population whose cores exceed it is placed again with fewer neurons per core (what
    # Loihi's compiler does: split cores until the constraints pass), until it fits or a
    # single neuron per core still does not.
    cap = {name: npc for name in net.populations}
    # population -> (its worst core, neurons on it, its edges) when fan-out first cut
    # its neurons per core: the refusal for too many cores then names fan-out as the bound
    fan_out_cut: dict[str, tuple[int, int, int]] = {}
    while True:
        core_of, pop_cores = _place(net, offsets, cap, in_ptr, in_pre, neuron_bytes,
                                    entry_bytes, max_bytes, max_fan_in, max_cores, n_pre,
                                    profile, fan_out_cut)
        n_cores = max((hi for _, hi in pop_cores.values()), default=0)
        nc = max(n_cores, 1)
        from_neuron = pre < n_neurons
        # core-to-core edges: one per (presynaptic neuron, destination core); the routes
        edges = _unique_sorted(pre[from_neuron] * nc + core_of[post[from_neuron]])
        edge_src = core_of[edges // nc]
        if multicast:   # one key per neuron that sends, the routers copy it to every core
            fan_out = np.bincount(core_of[_unique_sorted(pre[from_neuron])], minlength=nc)
        else:
            fan_out = np.bincount(edge_src, minlength=nc)
        worst = {}
        for name, (c0, c1) in pop_cores.items():
            if c1 > c0 and fan_out[c0:c1].max() > max_fan_out:
                worst[name] = (c0 + int(np.argmax(fan_out[c0:c1])), int(fan_out[c0:c1].max()))
        if not worst:
            break
        for name, (core, fo) in worst.items():
            on_core = int(np.count_nonzero(core_of == core))
            if on_core <= 1:
                raise _limit_error(f"population {name!r} core {core}: fan-out",
                                   f"{fo} core-to-core edges from one neuron",
                                   "limits.fan_out_per_core", max_fan_out, profile,
                                   "a single neuron reaches more cores than a core may "
                                   "address; reduce its targets")
            fan_out_cut.setdefault(name, (core, on_core, fo))
            cap[name] = max(1, min(on_core - 1, int(on_core * max_fan_out / fo)))

    # -- routing -------------------------------------------------------------------------
    src_core = np.concatenate([core_of, np.full(n_sources, -1, np.int64)])
    # sources sit at the host link: router (0, 0) = core 0's router for the X-Y tree
    tree_core = np.where(src_core < 0, 0, src_core)
    hops = np.zeros(n_pre, np.int64)
    chip_hops = np.zeros(n_pre, np.int64)
    post_sorted = post[order]
    core_x, core_y = geo.core_xy(nc)
    K.multicast_hops(n_pre, row_ptr, post_sorted, core_of, tree_core, core_x, core_y,
                     geo.grid_x, geo.mesh_x, geo.mesh_y, nc, hops, chip_hops)
    route_keys, route_n = np.unique(edge_src * nc + edges % nc, return_counts=True)

    # -- per-core report ------------------------------------------------------------------
    cores = []
    n_on = np.bincount(core_of, minlength=n_cores)
    syn_on = np.bincount(core_of[post], minlength=n_cores) if post.size else \
        np.zeros(n_cores, np.int64)
    syn_bytes = np.bincount(core_of[post[per_synapse]], minlength=n_cores) * entry_bytes \
        if post.size else np.zeros(n_cores, np.int64)
    # distinct presynaptic axons per core
    if post.size:
        pairs = _unique_sorted(core_of[post] * n_pre + pre)
        fan_in = np.bincount(pairs // n_pre, minlength=n_cores)
    else:
        fan_in = np.zeros(n_cores, np.int64)
    if crossbar:    # axons in use x neurons on the core, one bit each (see `crossbar` above)
        syn_bytes = -(-fan_in * n_on // 8)
    for p in net.projections.values():   # a shared kernel: once on every core it reaches
        if connectivity[p.name] == "shared" and p.post_idx.size:
            on = np.unique(core_of[p.post_idx + offsets[p.post][0]])
            syn_bytes[on] += p.kernel_weights * entry_bytes
    if syn_bytes.size and syn_bytes.max() > max_bytes:
        c = int(np.argmax(syn_bytes))
        raise _limit_error(f"core {c} ({pop_of_core_name(pop_cores, c)}): synapse memory "
                           "with its shared kernels", f"{int(syn_bytes[c])} B",
                           "limits.synapse_bytes_per_core", max_bytes, profile,
                           "the kernels of the convolutions it serves do not fit; use "
                           "fewer channels per layer")
    pop_of_core = {}
    for name, (a, b) in pop_cores.items():
        for c in range(a, b):
            pop_of_core[c] = name
    for c in range(n_cores):
        entry = {"core": c, "population": pop_of_core[c], "router_x": int(core_x[c]),
                 "router_y": int(core_y[c]), "chip": int(c // geo.cores_per_chip),
                 "neurons": int(n_on[c]),
                 "synapses": int(syn_on[c]), "synapse_bytes": int(syn_bytes[c]),
                 "fan_in": int(fan_in[c]), "fan_out": int(fan_out[c])}
        for key, lim in (("neurons", npc), ("synapse_bytes", max_bytes),
                         ("fan_in", max_fan_in), ("fan_out", max_fan_out)):
            entry[f"{key}_util"] = entry[key] / lim if lim < _UNLIMITED else 0.0
        cores.append(entry)
    rs, rd = route_keys // nc, route_keys % nc
    route_hops = np.abs(core_x[rs] - core_x[rd]) + np.abs(core_y[rs] - core_y[rd])
    route_list = list(zip((route_keys // nc).tolist(), (route_keys % nc).tolist(),
                          route_hops.tolist(), route_n.tolist(), strict=True))

    # the per-synapse arrays the run reads, in narrow exact integer types: the ring-buffer
    # column (< C x N) fits uint32, the delay (< D <= 2^29, the buffer cap) and the
    # projection id int32; the weights stay float64 (the run's arithmetic)
    col = ch[order] * n_neurons + post_sorted
    # unsigned: numba then indexes without a negative-index check (half the time per synop)
    col = col.astype(np.uint32) if C * n_neurons < 2 ** 32 else col
    return Compiled(net=net, profile=profile, n_neurons=n_neurons, n_sources=n_sources, C=C,
                    D=max_delay + 1, offsets=offsets, coeff=coefficients(net),
                    row_ptr=row_ptr, col=col, w=w[order],
                    dly=dly[order].astype(np.int32), syn_proj=pid[order].astype(np.int32),
                    proj_perm=proj_perm, hops=hops,
                    chip_hops=chip_hops,
                    entry_bytes=entry_bytes, core_of=core_of, cores=cores,
                    routes=route_list, quantisation=quant, connectivity=connectivity)


def pop_of_core_name(pop_cores: dict, core: int) -> str:
    """The population placed on ``core``."""
    return next((name for name, (a, b) in pop_cores.items() if a <= core < b), "?")



def _place(net, offsets, cap, in_ptr, in_pre, neuron_bytes, entry_bytes, max_bytes, max_fan_in,
           max_cores, n_pre, profile, fan_out_cut=None):
    """Place every population in order (``cap``: neurons per core for each population;
    ``fan_out_cut``: the populations whose cap fan-out lowered, see :func:`_why_cores`)."""
    core_of = np.zeros(in_ptr.size - 1, np.int64)
    first = 0
    pop_cores = {}
    for name in net.populations:
        a, b = offsets[name]
        used, bad = K.place_population(a, b, in_ptr, in_pre, neuron_bytes, cap[name],
                                       max_bytes, max_fan_in, first, core_of, n_pre)
        if used < 0:
            i = bad - a
            n_in = int(in_ptr[bad + 1] - in_ptr[bad])
            axons = int(np.unique(in_pre[in_ptr[bad]:in_ptr[bad + 1]]).size)
            if neuron_bytes[bad] > max_bytes:
                raise _limit_error(f"population {name!r} neuron {i}: synapse memory",
                                   f"{n_in} synapses x {entry_bytes} B = {n_in * entry_bytes} B",
                                   "limits.synapse_bytes_per_core", max_bytes, profile,
                                   "one neuron's incoming synapses must fit in one core")
            raise _limit_error(f"population {name!r} neuron {i}: fan-in", f"{axons} axons",
                               "limits.fan_in_per_core", max_fan_in, profile,
                               "reduce the neuron's distinct presynaptic sources")
        pop_cores[name] = (first, first + used)
        first += used
        if first > max_cores:
            raise _limit_error(f"population {name!r}: cores needed (cumulative)", first,
                               "limits.cores", max_cores, profile,
                               _why_cores(name, pop_cores, offsets, cap, fan_out_cut or {},
                                          core_of, in_ptr, neuron_bytes, entry_bytes,
                                          max_bytes, max_fan_in, profile))
    return core_of, pop_cores


def _why_cores(name, pop_cores, offsets, cap, fan_out_cut, core_of, in_ptr, neuron_bytes,
               entry_bytes, max_bytes, max_fan_in, profile) -> str:
    """The tail of the 'cores needed' refusal: which per-core limit set the neurons per core
    of the population that crossed ``limits.cores`` (and of every earlier population whose
    neurons per core fan-out lowered: their extra cores count too), and what to change."""
    names = [name] + [other for other in pop_cores if other != name and other in fan_out_cut]
    whys, changes = [], []
    for pop in names:
        (a, b), (c0, c1) = offsets[pop], pop_cores[pop]
        why, change = _binding(pop, a, b, c1 - c0, cap[pop], fan_out_cut.get(pop), core_of,
                               in_ptr, neuron_bytes, entry_bytes, max_bytes, max_fan_in,
                               profile)
        whys.append(why)
        changes += [change] if change else []
    # each population has cores of its own: one that fills a single core is bound by none
    changes = changes or ["fewer populations (each takes cores of its own)"]
    return f"{'; '.join(whys)}. To fit one chip: {'; or '.join(changes)}"


def _binding(name, a, b, used, cap, cut, core_of, in_ptr, neuron_bytes, entry_bytes,
             max_bytes, max_fan_in, profile) -> tuple[str, str]:
    """Which per-core limit set the neurons per core of population ``name`` (neurons
    ``a..b-1`` on ``used`` cores), with its numbers, and what to change ("" for a population
    on one core, which no per-core limit made larger).

    ``cut``: ``(core, neurons, edges)`` of the core whose fan-out first lowered the
    population's neurons per core to ``cap``, or None. Otherwise the limit that closed most
    of its cores: the one its next neuron would have broken, checked in
    :func:`kernels.place_population`'s order (neurons, synapse memory, fan-in).
    """
    n = b - a
    npc = profile.limit("neurons_per_core", _UNLIMITED)
    most = int(np.bincount(core_of[a:b]).max()) if n else 0
    head = (f"population {name!r} holds {n} neurons on {used} "
            + (f"cores (at most {most} per core)" if used > 1 else "core"))
    fewer = f"fewer neurons in {name!r}"
    if cut is not None:
        core, on, fo = cut
        counts, unit = (("one multicast key per neuron that sends (limits.fan_out_multicast)",
                         "keys") if profile.limit("fan_out_multicast", 0) >= 1 else
                        ("core-to-core edges, one per neuron and destination core", "edges"))
        return (f"{head} because limits.fan_out_per_core = "
                f"{profile.limit('fan_out_per_core'):g} binds: it counts {counts}, and core "
                f"{core} with {on} neurons had {fo} {unit}, so the population was placed again at "
                f"{cap} neurons per core (limits.neurons_per_core = {npc:g})",
                f"{fewer}, or each one's targets on fewer cores")
    if used == 1:      # one core: no per-core limit multiplied its cores
        return head, ""
    n_in = in_ptr[a + 1:b + 1] - in_ptr[a:b]
    mean_in = float(n_in.mean()) if n else 0.0
    nxt = np.flatnonzero(np.diff(core_of[a:b])) + 1        # first neuron of each later core
    start = np.concatenate([[0], nxt])[:-1]                 # first neuron of the core it closes
    tally = {"neurons": 0, "bytes": 0, "fan_in": 0}
    for s0, s1 in zip(start.tolist(), nxt.tolist(), strict=True):
        if s1 - s0 + 1 > cap:
            tally["neurons"] += 1
        elif int(neuron_bytes[a + s0:a + s1 + 1].sum()) > max_bytes:
            tally["bytes"] += 1
        else:
            tally["fan_in"] += 1
    top = max(tally, key=tally.get)
    if top == "neurons":
        return f"{head} because limits.neurons_per_core = {npc:g} binds", fewer
    if top == "bytes":
        return (f"{head} because limits.synapse_bytes_per_core = {max_bytes:g} B binds: "
                f"{entry_bytes} B per synapse entry x {mean_in:.0f} synapses per neuron on "
                f"average = {entry_bytes * mean_in:.0f} B per neuron",
                f"{fewer}, or fewer synapses per neuron")
    return (f"{head} because limits.fan_in_per_core = {max_fan_in:g} binds: distinct "
            f"presynaptic axons per core, {mean_in:.0f} inputs per neuron on average",
            f"{fewer}, or fewer (more shared) inputs per neuron")
