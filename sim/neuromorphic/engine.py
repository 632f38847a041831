"""NeuromorphicDevice: run a compiled spiking network step by step and count what the chip does.

The device owns the state arrays of a compiled network and calls the numba kernels of
``kernels.py``. A network of built-in neurons runs whole in one kernel call
(``run_builtin``); a network with custom :class:`NeuronKernel` populations whose updates are
numba-jitted runs whole in one call of ``custom_loop.run_custom``, the same per-step
kernels around the users' update functions, called inside the compiled loop. Updates that
are not jitted (plain Python) run one step per Python iteration (``run(...,
loop="python")``, also the reference the compiled loop is tested against). Counts are
accumulated in an int64 array inside the kernels and flushed to the ledger once per
``run`` call (a batch of steps), under the scope given to ``run``.

Time: the kernels also count every op per core and reduce each step to its critical path
(slowest core + barrier, :mod:`sim.execution.neuromorphic`) under this device's profile,
through a :class:`~sim.neuromorphic.step_clock.StepClock`; ``run`` adds the sums to the
ledger as a :class:`~sim.step_timing.StepTiming` record of its scope.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numba.core.errors import NumbaExperimentalFeatureWarning

from hw_profiles.ops import OP_CODES, OP_NAMES
from sim.device import Device, register_engine
from sim.errors import HardwareLimitError, ModelError
from sim.neuromorphic import custom_loop as CL
from sim.neuromorphic import kernels as K
from sim.neuromorphic import step_clock
from sim.neuromorphic import weights as W
from sim.neuromorphic.compiler import MODEL_CODES, Compiled, compile_network
from sim.neuromorphic.network import Network

LOOPS = ("compiled", "python")
_OPS = tuple(OP_CODES[k] for k in ("synop", "neuron_update_active", "neuron_update_idle",
                                   "spike", "hop"))


@dataclass
class SimResult:
    """What one ``run`` recorded.

    Attributes
    ----------
    t0, n_steps : first step and number of steps run
    spikes : population/source name -> (steps, local indices, payloads) int arrays; steps
        count from the device's step 0, not from ``t0``
    states : "pop.var" -> float64 (n_steps, n) trace, for probed state variables
    counts : op name -> count added to the ledger by this run
    bytes_read : synapse-memory bytes read (ledger level "local")
    """

    t0: int
    n_steps: int
    dt: float
    spikes: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    states: dict[str, np.ndarray]
    counts: dict[str, int]
    bytes_read: int

    def rates_hz(self, name: str, n: int) -> float:
        """Mean firing rate of ``name`` (``n`` neurons) over the run, in Hz."""
        return self.spikes[name][0].size / (n * self.n_steps * self.dt)

    def raster(self, name: str) -> np.ndarray:
        """(k, 2) float array of (time in s since step 0, neuron index), for plots."""
        st, ix, _ = self.spikes[name]
        return np.stack([st * self.dt, ix.astype(float)], axis=1)


class NeuromorphicDevice(Device):
    """Event-driven spiking engine on a neuromorphic profile (Loihi, TrueNorth, SpiNNaker2).

    Examples
    --------
    >>> from sim.neuromorphic import Network
    >>> net = Network(dt=1e-3)
    >>> _ = net.population("out", 1, "lif", tau_mem=0.01, v_threshold=1.0)
    >>> _ = net.spikes("in", 1, steps=[0], index=[0])
    >>> _ = net.connect("in", "out", weight=[[20.0]])
    >>> net.probe("out")
    >>> dev = NeuromorphicDevice("loihi")
    >>> _ = dev.compile(net)
    >>> res = dev.run(5)
    >>> res.spikes["out"][0].tolist()   # arrives in step 1: v = 0.1 x 20 = 2 > 1
    [1]
    """

    kinds = ("neuromorphic",)

    def __init__(self, profile, **options):
        super().__init__(profile)  # refuses a profile of another kind (Device.kinds)
        if options:   # the torch engine's (replay=, prefer_cuda=) would be silently ignored
            raise ModelError(f"NeuromorphicDevice ({self.profile.label}) takes no options; "
                             f"got {', '.join(f'{k}={v!r}' for k, v in options.items())} "
                             "(replay and prefer_cuda are the torch engine's, for gpu, cpu "
                             "and microcontroller profiles)")
        self.compiled: Compiled | None = None
        self.t = 0

    # -- compile ---------------------------------------------------------------------------
    def compile(self, net: Network, *, quantize: bool = True,
                weight_lsb: float | None = None) -> Compiled:
        """Quantise, place and route ``net`` (see compiler.py); allocate fresh state."""
        if not isinstance(net, Network):
            raise ModelError(f"[NeuromorphicDevice.compile] expected a Network, got "
                             f"{type(net).__name__}")
        if not net.populations:
            raise ModelError("[NeuromorphicDevice.compile] the network has no population")
        self.compiled = c = compile_network(net, self.profile, quantize=quantize,
                                            weight_lsb=weight_lsb)
        self._syn_rows = {}     # update_weights: per projection, its synapses' core rows
        self._syn_zero = {}     # ... and which of its synapses' weights are 0
        self._alloc(c)
        self._record_network(c)
        return c

    # -- NeuroBench facts and activity (sim/neurobench.py) ---------------------------------
    def _record_network(self, c: Compiled) -> None:
        """Model facts and one layer record per population; per-row synapse counts for the
        activity of each run (:meth:`_record_activity`).

        NeuroBench's reading of a spiking network on a chip (Yik et al. 2025, Methods
        "Complexity metrics"): the stored synapses are its connection weights, a population
        is a neuron layer whose parameters are its incoming synapses; the model's
        parameters and footprint are its producer's (``net.model_facts``) or its weights."""
        net = c.net
        pops = list(net.populations)
        n_pre = c.row_ptr.size - 1
        pop_lo = np.array([c.offsets[p][0] for p in pops], np.int64)
        row = np.repeat(np.arange(n_pre, dtype=np.int64), np.diff(c.row_ptr))
        target_pop = np.searchsorted(pop_lo, c.col % c.n_neurons, side="right") - 1
        nz = c.w != 0
        # non-zero synapses of every presynaptic row into every population: the effective
        # accumulates one spike of that row causes there
        self._row_pop_nz = np.bincount(row[nz] * len(pops) + target_pop[nz],
                                       minlength=n_pre * len(pops)).reshape(n_pre, len(pops))
        self._pop_synapses = np.bincount(target_pop, minlength=len(pops))
        # NeuroBench's Dense per population: its synapses, plus the weights of 0 a
        # projection's producer held but the network does not store (dense_connections)
        self._pop_dense = self._pop_synapses.copy()
        for p in net.projections.values():
            if p.dense_connections is not None:
                self._pop_dense[pops.index(p.post)] += p.dense_connections - p.weight.size
        self._nz_pop_lo = pop_lo              # update_weights keeps _row_pop_nz current
        self._zero_weights = int(c.w.size - nz.sum())
        for k, p in enumerate(pops):
            pop = net.populations[p]
            kind = pop.model if isinstance(pop.model, str) else type(pop.model).__name__
            self.ledger.record_layer(p, kind, (pop.n,), int(self._pop_synapses[k]))
        # the model's own facts where its producer's are known (net.model_facts: a NIR
        # import, or the torch module it came from); else the network's synapse weights as
        # it holds them (float64). The chip's synapse memory is not NeuroBench's Footprint:
        # placement_report()["chip_synapse_memory_bytes"]
        # (the network keeps only non-zero synapses: a producer's zero weights, which
        # NeuroBench's ConnectionSparsity counts, are known from its facts alone)
        self._record_facts(c)

    def _record_facts(self, c: Compiled) -> None:
        """The model facts of :meth:`_record_network`, with the zero weights as they are now
        (after ``update_weights``)."""
        net = c.net
        facts = dict(parameters=int(c.w.size),
                     parameter_bytes=int(sum(p.weight.nbytes for p in net.projections.values())),
                     buffer_bytes=0, connection_weights=int(c.w.size),
                     connection_zero_weights=self._zero_weights)
        facts.update(getattr(net, "model_facts", None) or {})
        self.ledger.record_model("network", **facts)

    def _record_activity(self, scope: str | None, n_steps: int, spk_i, spk_p) -> None:
        """NeuroBench activity of one run, per population under ``<scope>/<population>``:
        ``effective_acs`` the non-zero synapses reached by binary spikes (graded payloads
        other than +-1: ``effective_macs``), ``dense_synops`` its incoming connections x steps
        (the synapses, and the weights of 0 a projection's ``dense_connections`` adds),
        ``activations`` neurons x steps, ``activations_zero`` those without a spike,
        ``membrane_updates`` neurons x steps (every neuron's state is updated each step)."""
        c = self.compiled
        n_pre = c.row_ptr.size - 1
        binary = np.abs(spk_p) == 1
        acs = np.bincount(spk_i[binary], minlength=n_pre) @ self._row_pop_nz
        macs = np.bincount(spk_i[~binary], minlength=n_pre) @ self._row_pop_nz
        for k, (name, pop) in enumerate(c.net.populations.items()):
            a, b = c.offsets[name]
            where = name if scope is None else f"{scope}/{name}"
            fired = int(np.count_nonzero((spk_i >= a) & (spk_i < b)))
            self.ledger.add_activity("effective_acs", int(acs[k]), scope=where)
            self.ledger.add_activity("effective_macs", int(macs[k]), scope=where)
            self.ledger.add_activity("dense_synops", int(self._pop_dense[k]) * n_steps,
                                     scope=where)
            self.ledger.add_activity("activations", pop.n * n_steps, scope=where)
            self.ledger.add_activity("activations_zero", pop.n * n_steps - fired, scope=where)
            self.ledger.add_activity("membrane_updates", pop.n * n_steps, scope=where)

    def _alloc(self, c: Compiled) -> None:
        net = c.net
        pops = list(net.populations.values())
        self._pop_lo = np.array([c.offsets[p.name][0] for p in pops], np.int64)
        self._pop_hi = np.array([c.offsets[p.name][1] for p in pops], np.int64)
        self._pop_code = np.array([K.CUSTOM if p.custom else MODEL_CODES[p.model]
                                   for p in pops], np.int64)
        self._pop_nch = np.array([p.n_channels for p in pops], np.int64)
        self.v = c.coeff["v0"].copy()
        self.I = np.zeros((c.C, c.n_neurons))
        self.ref = np.zeros(c.n_neurons, np.int64)
        self.inj = np.zeros(c.n_neurons)
        # (start step, slice, current) of every injected current; _set_inj switches them on
        self._inj = [(p.i_inj_start, *c.offsets[p.name], p.i_inj) for p in pops
                     if p.i_inj is not None]
        self._set_inj(0)
        self._inbuf = np.zeros((c.D, c.C * c.n_neurons))
        # delay-1 spikes into CUBA channels skip the ring buffer (kernels.py): per column
        # (channel x N + neuron) its a_c and g_c, 0 off the CUBA channels; per synapse
        # whether it goes straight into the pending currents Ip = a I + arrivals
        N = c.n_neurons
        self._acol = np.zeros((c.C, N))
        self._gcol = np.zeros((c.C, N))
        cuba_col = np.zeros((c.C, N), bool)
        for k, p in enumerate(pops):
            if p.custom or p.model != "cuba_lif":
                continue
            a, b = c.offsets[p.name]
            q = c.coeff["row0"][k] + np.arange(b - a) * c.coeff["stride"][k]  # table rows
            self._acol[:p.n_channels, a:b] = c.coeff["aI"][q, :p.n_channels].T
            self._gcol[:p.n_channels, a:b] = c.coeff["gI"][q, :p.n_channels].T
            cuba_col[:p.n_channels, a:b] = True
        self._sdir = ((c.dly == 1) & cuba_col.reshape(-1)[c.col]).astype(np.uint8)
        self._gcol_flat = self._gcol.reshape(-1)
        self._Ip = self._acol * self.I          # a_c I_c[-1]: no arrivals yet
        # per neuron: bit 2 = delay-1 input arrived (the fused loop's mark byte keeps bits
        # 0-1); whole 8-byte words, as the fused loop reads them
        self._mark = np.zeros((N + 15) // 8 * 8, np.uint8)
        self.payload = np.zeros(c.n_neurons + c.n_sources, np.int32)
        self.zeros = np.zeros(c.n_neurons)   # the absent second channel of 1-channel CUBA
        self.flag = np.zeros(c.n_neurons, np.uint8)   # scratch: "had input this step"
        # this step's spiking indices (neurons and sources), so delivery walks spikes only
        self.spk_list = np.zeros(c.n_neurons + c.n_sources, np.int64)
        self.nspk = np.zeros(1, np.int64)
        # custom populations: their state and params, and the compiled loop's tables
        self._customs, self._cu = CL.custom_tables(c, pops)
        # sources: events merged into one sorted list; Poisson probabilities per channel
        ev_s, ev_i, ev_p = [], [], []
        self.pois_prob = np.zeros(c.n_sources)
        seeds = np.zeros(c.n_sources, np.uint64)
        for s in net.sources.values():
            a = c.offsets[s.name][0] - c.n_neurons
            if s.kind == "events":
                ev_s.append(s.steps)
                ev_i.append(s.index + a)
                ev_p.append(s.payload)
            else:
                self.pois_prob[a:a + s.n] = s.rate_hz * net.dt
                # one independent SplitMix stream per channel, from the source's seed and
                # its position among the Poisson sources (network.py: Source.channel_seeds)
                seeds[a:a + s.n] = s.channel_seeds()
        if ev_s:
            st, ix, pl = np.concatenate(ev_s), np.concatenate(ev_i), np.concatenate(ev_p)
            o = np.lexsort((ix, st))
            self.ev = (st[o], ix[o].astype(np.int64), pl[o].astype(np.int32))
        else:
            self.ev = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32))
        self.ev_ptr = np.zeros(1, np.int64)
        self.rng = seeds
        self.t = 0
        # per-core timing: table row of every presynaptic index (1 + core; sources, which
        # the host injects, row 0) and each row's synapse count per destination core
        self.core_row = np.concatenate([c.core_of + 1, np.zeros(c.n_sources, np.int64)])
        self.rc = step_clock.row_core_counts(c.row_ptr, c.col, c.n_neurons, c.core_of)
        cpr = self.profile.interconnect.get("cores_per_router")
        routers = np.unique(c.core_of // (int(cpr.value) if cpr else 1)).size
        self.clock = step_clock.StepClock(self.profile, c.n_cores, routers, net.dt)
        # graded spikes: signed payloads of spike_payload_bits; without it, binary (1 only)
        self.payload_range = self.profile.payload_range()

    def _set_inj(self, t: int) -> int:
        """Injected currents as they are in step ``t``; returns the next step > t at which
        one switches on (a kernel call must stop there), or 2**62 when none does."""
        nxt = 2**62
        for start, a, b, cur in self._inj:
            self.inj[a:b] = cur if t >= start else 0.0
            if start > t:
                nxt = min(nxt, start)
        return nxt

    # -- run -------------------------------------------------------------------------------
    def run(self, n_steps: int, scope: str | None = "run", *,
            loop: str = "compiled") -> SimResult:
        """Advance ``n_steps`` steps from the current step; count into ``ledger[scope]``.

        Inside ``with dev.count(outer):`` the counts go to ``outer/scope`` (``scope=None``:
        the block's own scope), the one nesting rule of every engine (``Device.count``).

        ``loop``: ``"compiled"`` runs all steps inside numba (``kernels.run_builtin``, or
        ``custom_loop.run_custom`` when the network has custom populations whose updates are
        all jitted; otherwise the Python path); ``"python"`` runs a network with custom
        populations one step per Python iteration (the reference the compiled loop is
        tested against: the same spikes, states, counts, bytes and times).
        """
        c = self._need_compiled()
        if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) \
                or n_steps < 0:
            raise ModelError(f"[NeuromorphicDevice.run] n_steps = {n_steps!r}; expected an "
                             "integer >= 0")
        if loop not in LOOPS:
            raise ModelError(f"[NeuromorphicDevice.run] loop = {loop!r}; expected one of "
                             f"{LOOPS}")
        n_steps = int(n_steps)
        net = c.net
        probes = [(t, w) for t, w in net.probes if w != "spikes"]
        cols_idx, cols_var, spans = [], [], {}
        for target, what in probes:
            a, b = c.offsets[target]
            pop = net.populations[target]
            if pop.custom:
                continue
            var = 0 if what == "v" else 1 + int(what[1:])
            spans[f"{target}.{what}"] = (len(cols_idx), len(cols_idx) + b - a)
            cols_idx += range(a, b)
            cols_var += [var] * (b - a)
        probe_idx = np.array(cols_idx, np.int64)
        probe_var = np.array(cols_var, np.int64)
        rec = np.zeros((n_steps, probe_idx.size))
        custom_rec = {f"{t}.{w}": np.zeros((n_steps, net.populations[t].n))
                      for t, w in probes if net.populations[t].custom}
        counts = np.zeros(len(OP_NAMES), np.int64)
        nbytes = np.zeros(1, np.int64)
        cap = max(1024, 4 * self.payload.size)
        spk_t, spk_i = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
        spk_p, spk_n = np.zeros(cap, np.int32), np.zeros(1, np.int64)
        t0, t1 = self.t, self.t + n_steps
        co = c.coeff
        args_neur = (self._pop_lo, self._pop_hi, self._pop_code, self._pop_nch, co["row0"],
                     co["stride"], c.C, c.D,
                     self.v, self.I, self.ref, co["av"], co["bv"], co["kin"], co["thr"],
                     co["vreset"], co["rmode"], co["refsteps"], co["aI"], co["gI"], co["kI"],
                     self.inj, self._inbuf, self._Ip, self.payload, self.zeros, self.flag,
                     self._mark, self.spk_list, self.nspk)
        args_syn = (c.row_ptr, c.col, c.w, c.dly, self._sdir, self._gcol_flat, c.hops,
                    c.entry_bytes)
        SYNOP, NU_A, NU_I, SPIKE, HOP = _OPS
        clk = self.clock
        clk.start()
        args_core = (self.core_row, *self.rc, clk.cc)
        args_clock = (clk.tot, clk.tau, clk.sync, clk.stats)
        cu = self._cu if loop == "compiled" else None
        if cu is not None:
            custom_rec, *args_probe = CL.probe_tables(cu["names"], net, probes, n_steps)
            err = np.full(3, -1, np.int64)
            args_cu = (cu["b_lo"], cu["b_hi"], cu["cu_kid"], cu["cu_lo"], cu["cu_n"],
                       cu["cu_nch"], cu["st_flat"], cu["st_off"], cu["st_rows"],
                       cu["pr_flat"], cu["pr_off"], cu["pr_rows"], cu["inp_flat"],
                       cu["inp_off"], cu["g_lo"], cu["g_hi"], cu["base_nz"], cu["seg_ptr"],
                       cu["seg_lo"], cu["seg_hi"], cu["seg_row"], *args_probe,
                       *self.payload_range, err)
        t = t0
        while t < t1:
            if spk_n[0] + 2 * self.payload.size > spk_t.size:   # run_builtin's rule
                grow = max(spk_t.size, self.payload.size)
                spk_t = np.concatenate([spk_t, np.zeros(grow, np.int64)])
                spk_i = np.concatenate([spk_i, np.zeros(grow, np.int64)])
                spk_p = np.concatenate([spk_p, np.zeros(grow, np.int32)])
            stop = min(t1, self._set_inj(t))
            if not self._customs:
                t = K.run_builtin(t, stop, t0, *args_neur, *self.ev, self.ev_ptr,
                                  self.pois_prob, self.rng, *args_syn, counts, nbytes,
                                  spk_t, spk_i, spk_p, spk_n, probe_idx, probe_var, rec,
                                  SYNOP, NU_A, NU_I, SPIKE, HOP, *args_core, *args_clock)
                continue
            if cu is not None:
                CL.prepare_inputs(cu["cu_lo"], cu["cu_n"], cu["cu_nch"], cu["inp_flat"],
                                  cu["inp_off"], cu["g_lo"], cu["g_hi"], self.inj,
                                  cu["base_nz"])
                with warnings.catch_warnings():
                    # literal_unroll over dispatchers is numba's first-class function
                    # feature, flagged experimental when the loop is compiled
                    warnings.simplefilter("ignore", NumbaExperimentalFeatureWarning)
                    t = CL.run_custom(cu["kernels"], t, stop, t0, *args_neur, *self.ev,
                                      self.ev_ptr, self.pois_prob, self.rng, *args_syn,
                                      counts, nbytes, spk_t, spk_i, spk_p, spk_n, probe_idx,
                                      probe_var, rec, SYNOP, NU_A, NU_I, SPIKE, HOP,
                                      *args_core, *args_clock, *args_cu)
                if err[0] >= 0:
                    self._payload_error(cu["names"][err[0]], int(err[1]), int(err[2]))
                continue
            K.sources_step(t, c.n_neurons, self.payload, *self.ev, self.ev_ptr,
                           self.pois_prob, self.rng, self.spk_list, self.nspk)
            K.neurons_step(t, *args_neur, counts, NU_A, NU_I)
            self._custom_step(t, counts, custom_rec, t - t0)
            if probe_idx.size:
                K.record_step(t - t0, probe_idx, probe_var, self.v, self.I, rec)
            K.tally_neurons(self.core_row, self.flag, clk.cc)
            K.deliver_step(t, c.D, self.payload, self.spk_list, self.nspk, *args_syn,
                           self._inbuf, self._Ip, self._mark, counts, nbytes, spk_t, spk_i,
                           spk_p, spk_n, SYNOP, SPIKE, HOP, *args_core)
            K.end_step(clk.cc, *args_clock)
            t += 1
        self.t = t1
        if c.chip_hops.any():    # chip-to-chip crossings of the multicast trees (compiler.py)
            counts[OP_CODES["chip_hop"]] += int(c.chip_hops[spk_i[:spk_n[0]]].sum())
        self.ledger.flush(counts, scope=scope)
        self.ledger.add_bytes("local", read=int(nbytes[0]), scope=scope)
        if n_steps:
            self.ledger.add_timing(clk.record(n_steps, n_steps * net.dt), scope=scope)
        self._record_activity(scope, n_steps, spk_i[:spk_n[0]], spk_p[:spk_n[0]])
        # what the neurons' spikes carried: a chip must carry it to run the model (the
        # payload_range check above, for this run's profile). Sources' payloads are the
        # host's input (binned event counts), not checked on the run's chip either.
        sent = spk_p[:spk_n[0]][spk_i[:spk_n[0]] < c.n_neurons]
        if sent.size:
            self.ledger.record_payloads(int(sent.min()), int(sent.max()))
        return self._result(t0, n_steps, spk_t[:spk_n[0]], spk_i[:spk_n[0]],
                            spk_p[:spk_n[0]], rec, spans, custom_rec, counts, int(nbytes[0]))

    def _custom_step(self, t, counts, custom_rec, row) -> None:
        c = self.compiled
        slot = t % c.D
        for name, (state, params) in self._customs.items():
            a, b = c.offsets[name]
            pop = c.net.populations[name]
            slot_view = self._inbuf[slot].reshape(c.C, c.n_neurons)[:pop.n_channels, a:b]
            inp = slot_view.T.copy()
            slot_view[:] = 0.0                # consumed, as the built-in updates do
            inp[:, 0] += self.inj[a:b]
            pl = self.payload[a:b]
            pop.model.update(inp, state, params, pl)
            lo, hi = self.payload_range
            bad = np.flatnonzero((pl != 0) & ((pl < lo) | (pl > hi)))
            if bad.size:
                self._payload_error(name, int(bad[0]), int(pl[bad[0]]))
            fired = np.flatnonzero(pl) + a
            k = int(self.nspk[0])
            self.spk_list[k:k + fired.size] = fired
            self.nspk[0] = k + fired.size
            mask = np.any(inp != 0, axis=1) | (pl != 0)
            self.flag[a:b] = mask          # the per-core tally (kernels.tally_neurons)
            active = int(np.count_nonzero(mask))
            counts[OP_CODES["neuron_update_active"]] += active
            counts[OP_CODES["neuron_update_idle"]] += pop.n - active
            for k, sname in enumerate(pop.model.state_names):
                key = f"{name}.{sname}"
                if key in custom_rec:
                    custom_rec[key][row] = state[k]

    def _payload_error(self, name: str, i: int, payload: int) -> None:
        lo, hi = self.payload_range
        raise HardwareLimitError(
            f"[NeuromorphicDevice.run] population {name!r} neuron {i} emitted payload "
            f"{payload}; {self.profile.name} carries payloads in {lo}..{hi} "
            "(limits.spike_payload_bits; binary spikes when absent)")

    def _result(self, t0, n_steps, st, si, sp, rec, spans, custom_rec, counts, nbytes):
        c = self.compiled
        spikes = {}
        for name, (a, b) in c.offsets.items():
            m = (si >= a) & (si < b)
            spikes[name] = (st[m], si[m] - a, sp[m])
        states = {k: rec[:, lo:hi] for k, (lo, hi) in spans.items()}
        states.update(custom_rec)
        return SimResult(t0, n_steps, c.net.dt, spikes, states,
                         {OP_NAMES[i]: int(n) for i, n in enumerate(counts) if n},
                         nbytes)

    # -- on-chip learning hook -------------------------------------------------------------
    def update_weights(self, projection: str, delta: np.ndarray,
                       scope: str | None = "learn") -> int:
        """Add ``delta`` (one value per synapse, the projection's order) to its weights.

        The new weights are rounded to the projection's quantisation step (the chip stores
        integers); each synapse whose stored value changes counts one ``syn_update`` and its
        entry is written back to synapse memory. Returns the number of updated synapses.
        """
        c = self._need_compiled()
        if projection not in c.proj_perm:
            raise ModelError(f"[NeuromorphicDevice.update_weights] no projection "
                             f"{projection!r}; known: {sorted(c.proj_perm)}")
        perm = c.proj_perm[projection]
        delta = np.asarray(delta, np.float64)
        if delta.shape != perm.shape or not np.all(np.isfinite(delta)):
            raise ModelError(f"[NeuromorphicDevice.update_weights] delta for {projection!r} "
                             f"has shape {delta.shape}; expected finite values of shape "
                             f"{perm.shape} (one per synapse)")
        q = next((x for x in c.quantisation if x.projection == projection), None)
        rows = self._syn_rows.get(projection)
        if rows is None:     # each synapse's target core (1 + core), kept: the layout is fixed
            rows = (c.core_of[c.col[perm] % c.n_neurons] + 1).astype(np.int32)
            self._syn_rows[projection] = rows
        per_row = np.zeros(self.clock.rows, np.int64)
        was_zero = self._syn_zero.get(projection)
        if was_zero is None:    # kept: only update_weights changes the weights
            was_zero = c.w[perm] == 0
        changed = int(W.add_weights(c.w, perm, delta, 0.0 if q is None else q.scale,
                                    0.0 if q is None else 2.0 ** (q.bits - 1) - 1, rows,
                                    per_row))
        self.ledger.add("syn_update", changed, scope=scope)
        self.ledger.add_bytes("local", read=changed * c.entry_bytes,
                              write=changed * c.entry_bytes, scope=scope)
        if changed:
            # one learning phase: each update on the core of its synapse's target neuron
            self.ledger.add_timing(self.clock.phase(per_row, "syn_update"), scope=scope)
            now_zero = c.w[perm] == 0
            flip = np.flatnonzero(was_zero != now_zero)
            if flip.size:   # synapses now zero or no longer zero: the NeuroBench activity
                self._count_nonzero(c, perm[flip], np.where(was_zero[flip], 1, -1))
            was_zero = now_zero
        self._syn_zero[projection] = was_zero
        return changed

    def _count_nonzero(self, c: Compiled, pos: np.ndarray, sign: np.ndarray) -> None:
        """Add ``sign`` (+1: now non-zero, -1: now zero) of the synapses at CSR positions
        ``pos`` to the non-zero counts of :meth:`_record_network` (the effective accumulates
        of a run, the zero weights of the model facts)."""
        row = np.searchsorted(c.row_ptr, pos, side="right") - 1
        pop = np.searchsorted(self._nz_pop_lo, c.col[pos] % c.n_neurons, side="right") - 1
        np.add.at(self._row_pop_nz, (row, pop), sign)
        self._zero_weights -= int(sign.sum())
        self._record_facts(c)

    def count_synapse_writes(self, n: int, scope: str | None = "learn") -> None:
        """Count ``n`` synapse entries rewritten by the learning engine outside any projection.

        For weights the chip holds but the network routes no spikes through (DiffPC's first
        layer, whose input is clamped): each write is one ``syn_update`` and a read-modify-
        write of one synapse entry (``entry_bytes`` of the compiled network), as
        :meth:`update_weights` counts a changed synapse. No learning phase time is added:
        these synapses are not placed, so no core is known to do the work.
        """
        c = self._need_compiled()
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ModelError(f"[NeuromorphicDevice.count_synapse_writes] n = {n!r}; expected "
                             "an integer >= 0 (synapse entries written)")
        n = int(n)
        self.ledger.add("syn_update", n, scope=scope)
        self.ledger.add_bytes("local", read=n * c.entry_bytes, write=n * c.entry_bytes,
                              scope=scope)

    # -- state of custom populations and spikes in flight ----------------------------------
    def _custom_arrays(self, population: str, where: str):
        self._need_compiled()
        if population not in self._customs:
            raise ModelError(f"[NeuromorphicDevice.{where}] {population!r} is not a "
                             f"custom-kernel population; custom populations: "
                             f"{sorted(self._customs) or 'none'}")
        return self._customs[population]

    def custom_state(self, population: str) -> dict[str, np.ndarray]:
        """The state variables of custom-kernel population ``population``: name -> a copy of
        its ``(n,)`` values, in the kernel's ``state_names`` order."""
        state, _ = self._custom_arrays(population, "custom_state")
        names = self.compiled.net.populations[population].model.state_names
        return {name: state[k].copy() for k, name in enumerate(names)}

    def set_custom_state(self, population: str, values: Mapping[str, np.ndarray] | None = None,
                         *, reset: bool = False) -> None:
        """Write state variables of a custom-kernel population before the next ``run``.

        ``values`` maps a state name to a scalar or ``(n,)`` array; ``reset=True`` first sets
        every state variable (the kernel's own clock too) to 0, as at compile time without
        ``state_init``.
        """
        state, _ = self._custom_arrays(population, "set_custom_state")
        names = self.compiled.net.populations[population].model.state_names
        values = dict(values or {})
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ModelError(f"[NeuromorphicDevice.set_custom_state] {population!r} has no "
                             f"state {', '.join(unknown)}; its state is {', '.join(names)}")
        arrays = {}
        for name, v in values.items():
            a = np.asarray(v, np.float64)
            if a.ndim not in (0, 1) or (a.ndim == 1 and a.shape != (state.shape[1],)) \
                    or not np.all(np.isfinite(a)):
                raise ModelError(f"[NeuromorphicDevice.set_custom_state] {population}.{name} "
                                 f"has shape {a.shape}; expected a finite scalar or "
                                 f"({state.shape[1]},)")
            arrays[name] = a
        if reset:
            state[:] = 0.0
        for name, a in arrays.items():
            state[names.index(name)] = a

    def clear_in_flight(self) -> None:
        """Drop every spike sent but not yet integrated (the delay buffer), e.g. between two
        independent inputs, so nothing of the previous one arrives during the next."""
        self._need_compiled()
        self._inbuf[:] = 0.0
        self._Ip[:] = self._acol * self.I     # the delay-1 arrivals dropped too
        self._mark &= np.uint8(3)

    def _need_compiled(self) -> Compiled:
        c = self.compiled
        if c is None:
            raise ModelError("[NeuromorphicDevice] call compile(network) before run()")
        # a population, source or projection added since compile would be missing from
        # the compiled arrays (a bare KeyError, or synapses silently left out)
        net = c.net
        added = [k for k in (*net.populations, *net.sources) if k not in c.offsets] + \
            [k for k in net.projections if k not in c.proj_perm]
        if added:
            raise ModelError(f"[NeuromorphicDevice] {added[0]!r} was added to the network "
                             "after compile(): the network changed since compile; call "
                             "compile(network) again before run()")
        return c

    # -- reports ---------------------------------------------------------------------------
    def placement_report(self) -> dict:
        """Per-core utilisation, routes with hop counts, quantisation errors (plain data)."""
        c = self._need_compiled()
        return {"profile": self.profile.name, "cores": c.cores,
                "routes": [{"src_core": s, "dst_core": d, "hops": h, "neurons": n}
                           for s, d, h, n in c.routes],
                "quantisation": [q.__dict__ for q in c.quantisation],
                "utilisation": c.utilisation(), "entry_bytes": c.entry_bytes,
                "chip_synapse_memory_bytes": c.synapse_memory_bytes,
                "connectivity": dict(c.connectivity)}


register_engine("neuromorphic", NeuromorphicDevice)
