"""The engine's step loop for networks with custom :class:`NeuronKernel` populations, in numba.

``run_custom`` runs steps ``t0 .. t1-1`` in one call: per step the per-step kernels of
``kernels.py`` (``sources_step``, ``neurons_step`` for the built-in neurons,
``record_step``, ``tally_neurons``, ``deliver_step``, ``end_step``) and, between the
built-in update and delivery, every custom population's own ``update`` function, called
from inside the compiled loop. It reproduces the engine's per-step Python path
(``NeuromorphicDevice.run(..., loop="python")``) exactly: the same float operations in the
same order, so the same spikes, states, counts, bytes and step times.

Per custom population and step (the Python path's order):

1. gather: ``inp[i, c]`` = the ring-buffer slot of step t for (channel c, neuron i), then
   the slot is cleared (consumed); channel 0 adds the injected current (``x + inj``);
2. ``update(inp, state, params, payload)``;
3. check every non-zero payload against the profile's range (``payload_lo..payload_hi``):
   the first one outside stops the loop (the caller raises ``HardwareLimitError``);
4. append the population's spikes (ascending index) to the step's spike list, after the
   built-in neurons' and the earlier custom populations' (so delivery sums in the same
   order); an update is active when the neuron had input on any channel or emitted, and
   is tallied per core.

Only the columns some synapse targets are gathered each step: a (channel, neuron) column
that no synapse reaches holds 0 in the ring buffer for ever, so its ``inp`` entry is
``0 + inj`` (channel 0) or 0, written once per call (``g_*``: per population and channel
the interval of targeted neurons). This is why ``update`` must not write ``inp``
(the kernel authors' contract, ``NeuronKernel``).

Caching is off for ``run_custom``: it takes the user's functions as arguments (a tuple of
numba dispatchers, iterated with ``literal_unroll``), and numba cannot cache a function
typed on another dispatcher. It is compiled once per process for each distinct tuple of
kernels (a few seconds); networks that differ only in sizes or in how many populations use
which kernel share that compilation.
"""
from __future__ import annotations

import numpy as np
from numba import literal_unroll, njit
from numba.extending import is_jitted

from sim.neuromorphic import kernels as K
from sim.neuromorphic.network import MAX_CHANNELS


@njit(cache=True)
def prepare_inputs(cu_lo, cu_n, cu_nch, inp_flat, inp_off, g_lo, g_hi, inj, base_nz):
    """Write every custom population's un-gathered ``inp`` entries (``0 + inj`` on channel
    0, 0 elsewhere) and ``base_nz`` (1 where such an entry is non-zero: had input)."""
    for p in range(cu_lo.size):
        a, n, nch = cu_lo[p], cu_n[p], cu_nch[p]
        o = inp_off[p]
        for i in range(n):
            nz = 0
            for c in range(nch):
                x = 0.0
                if c == 0:
                    x = 0.0 + inj[a + i]
                inp_flat[o + i * nch + c] = x
                inside = g_lo[p, c] <= i < g_hi[p, c]
                if not inside and x != 0.0:
                    nz = 1
            base_nz[a + i] = nz


@njit
def _gather(t, D, N, a, n, nch, inp, glo, ghi, inj, inbuf, base_nz, flag):
    """Step ``t``'s input of one custom population (module docstring, 1); ``flag`` = had
    input (non-zero on a channel)."""
    fl = flag[a:a + n]
    fl[:] = base_nz[a:a + n]
    row = inbuf[t % D]
    for c in range(nch):
        lo, hi = glo[c], ghi[c]
        src = row[c * N + a + lo:c * N + a + hi]
        f = fl[lo:hi]
        if c == 0:   # channel 0 carries the injected current: x + inj, as the Python path
            jj = inj[a + lo:a + hi]
            for i in range(hi - lo):
                x = src[i] + jj[i]
                src[i] = 0.0          # consumed: the slot is free for step t + D
                inp[lo + i, 0] = x
                f[i] |= x != 0.0
        else:
            for i in range(hi - lo):
                x = src[i]
                src[i] = 0.0
                inp[lo + i, c] = x
                f[i] |= x != 0.0


@njit
def _emit(a, payload, flag, lo, hi, seg_lo, seg_hi, seg_row, s0, s1, spk_list, nspk, cc):
    """Range check, spike list, active/idle per core of one custom population (module
    docstring, 3-4). Returns (active updates, -1), or (0, local index of the first payload
    outside lo..hi) with the spike list as it was before this population."""
    k0 = nspk[0]
    k = k0
    active = 0
    for s in range(s0, s1):
        r = seg_row[s]
        on = 0
        for i in range(seg_lo[s], seg_hi[s]):
            pl = payload[a + i]
            m = flag[a + i]
            if pl != 0:
                if pl < lo or pl > hi:
                    nspk[0] = k0
                    return 0, i
                spk_list[k] = a + i
                k += 1
                m = 1
            flag[a + i] = m
            on += m
        cc[r, 1] += on
        cc[r, 2] += seg_hi[s] - seg_lo[s] - on
        active += on
    nspk[0] = k
    return active, -1


@njit
def run_custom(kernels, t0, t1, rec_t0, pop_lo, pop_hi, pop_code, pop_nch, pop_row0,
               pop_stride, C, D, v, I, ref, av, bv, kin, thr, vreset, rmode, refsteps, aI,  # noqa: E741 (I: synaptic current, NIR's name)
               gI, kI, inj, inbuf, Ip, payload, zeros, flag, mark, spk_list, nspk, ev_steps,
               ev_index, ev_payload, ev_ptr, pois_prob, rng_state,
               row_ptr, col, w, dly, sdir, gcol, hops, entry_bytes, counts, nbytes,
               spk_t, spk_i, spk_p, spk_n, probe_idx, probe_var, rec,
               SYNOP, NU_ACTIVE, NU_IDLE, SPIKE, HOP,
               core_row, rc_ptr, rc_row, rc_cnt, cc, tot, tau, sync, stats,
               b_lo, b_hi, cu_kid, cu_lo, cu_n, cu_nch, st_flat, st_off, st_rows,
               pr_flat, pr_off, pr_rows, inp_flat, inp_off, g_lo, g_hi, base_nz,
               seg_ptr, seg_lo, seg_hi, seg_row, cp_ptr, cp_row, cp_col, crec,
               payload_lo, payload_hi, err):
    """Steps ``t0 .. t1-1`` of a network with custom populations in one call.

    ``kernels``: tuple of the distinct update functions; custom population ``p`` (in the
    network's order) uses ``kernels[cu_kid[p]]`` on neurons ``cu_lo[p] ..
    cu_lo[p] + cu_n[p] - 1`` with ``cu_nch[p]`` channels, state ``st_flat[st_off[p]:]``
    as ``(st_rows[p], n)``, params likewise, ``inp`` at ``inp_flat[inp_off[p]:]`` as
    ``(n, nch)``. ``b_lo``/``b_hi``: the built-in populations' neuron ranges (their
    per-core tally). ``seg_*``: per population (``seg_ptr``) the runs of neurons on one
    core (local ranges, table row). ``cp_*``: per population the probed state rows and
    their first column in ``crec`` (n_steps, ...). Call :func:`prepare_inputs` first.

    Returns the first step not run: ``t1``; earlier when the spike record could overflow
    (as ``run_builtin``); or the failing step with ``err`` = [population, neuron, payload]
    when a payload is out of range (``err[0]`` stays -1 otherwise).
    """
    n_neurons = v.size
    N = n_neurons
    for t in range(t0, t1):
        if spk_n[0] + payload.size > spk_t.size:
            return t
        K.sources_step(t, n_neurons, payload, ev_steps, ev_index, ev_payload, ev_ptr,
                       pois_prob, rng_state, spk_list, nspk)
        K.neurons_step(t, pop_lo, pop_hi, pop_code, pop_nch, pop_row0, pop_stride, C, D, v,
                       I, ref, av, bv, kin, thr, vreset, rmode, refsteps, aI, gI, kI, inj,
                       inbuf, Ip, payload, zeros, flag, mark, spk_list, nspk, counts,
                       NU_ACTIVE, NU_IDLE)
        for p in range(cu_lo.size):
            a, n, nch = cu_lo[p], cu_n[p], cu_nch[p]
            inp = inp_flat[inp_off[p]:inp_off[p] + n * nch].reshape(n, nch)
            state = st_flat[st_off[p]:st_off[p] + st_rows[p] * n].reshape(st_rows[p], n)
            params = pr_flat[pr_off[p]:pr_off[p] + pr_rows[p] * n].reshape(pr_rows[p], n)
            pl = payload[a:a + n]
            _gather(t, D, N, a, n, nch, inp, g_lo[p], g_hi[p], inj, inbuf, base_nz, flag)
            k = 0
            for f in literal_unroll(kernels):
                if k == cu_kid[p]:
                    f(inp, state, params, pl)
                k += 1
            active, bad = _emit(a, payload, flag, payload_lo, payload_hi, seg_lo, seg_hi,
                                seg_row, seg_ptr[p], seg_ptr[p + 1], spk_list, nspk, cc)
            if bad >= 0:
                err[0] = p
                err[1] = bad
                err[2] = payload[a + bad]
                return t
            counts[NU_ACTIVE] += active
            counts[NU_IDLE] += n - active
            for q in range(cp_ptr[p], cp_ptr[p + 1]):
                r, c0 = cp_row[q], cp_col[q]
                for i in range(n):
                    crec[t - rec_t0, c0 + i] = state[r, i]
        if probe_idx.size:
            K.record_step(t - rec_t0, probe_idx, probe_var, v, I, rec)
        for b in range(b_lo.size):
            K.tally_neurons(core_row[b_lo[b]:b_hi[b]], flag[b_lo[b]:b_hi[b]], cc)
        K.deliver_step(t, D, payload, spk_list, nspk, row_ptr, col, w, dly, sdir, gcol, hops,
                       entry_bytes, inbuf, Ip, mark, counts, nbytes, spk_t, spk_i, spk_p, spk_n,
                       SYNOP, SPIKE, HOP, core_row, rc_ptr, rc_row, rc_cnt, cc)
        K.end_step(cc, tot, tau, sync, stats)
    return t1


# -- tables (numpy, once per compile / run) ------------------------------------------------
def custom_tables(c, pops) -> tuple[dict, dict | None]:
    """The custom populations' state and parameter matrices, and ``run_custom``'s tables.

    Returns ``(customs, tables)``: ``customs`` maps a population to its ``(rows, n)`` state
    and params, views into one flat array each, so ``custom_state``/``set_custom_state``
    and both loops see the same memory; ``tables`` is ``None`` when there is no custom
    population or one of their updates is not jitted (the engine then runs the Python path).
    """
    cus = [p for p in pops if p.custom]
    customs = {}
    if not cus:
        return customs, None
    sizes = [len(p.model.state_names) * p.n for p in cus]
    psizes = [len(p.model.param_names) * p.n for p in cus]
    st_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pr_off = np.concatenate([[0], np.cumsum(psizes)]).astype(np.int64)
    st_flat, pr_flat = np.zeros(int(st_off[-1])), np.zeros(int(pr_off[-1]))
    for j, p in enumerate(cus):
        st = st_flat[st_off[j]:st_off[j + 1]].reshape(len(p.model.state_names), p.n)
        for k, name in enumerate(p.model.state_names):
            if name in p.state_init:
                st[k] = p.state_init[name]
        prm = pr_flat[pr_off[j]:pr_off[j + 1]].reshape(len(p.model.param_names), p.n)
        for k, name in enumerate(p.model.param_names):
            prm[k] = p.params[name]
        customs[p.name] = (st, prm)
    # the compiled loop calls jitted updates only; any other kind runs the Python path
    updates = [p.model.update for p in cus]
    if not all(is_jitted(f) for f in updates):
        return customs, None
    distinct = list(dict.fromkeys(updates))
    lo = np.array([c.offsets[p.name][0] for p in cus], np.int64)
    n = np.array([p.n for p in cus], np.int64)
    nch = np.array([p.n_channels for p in cus], np.int64)
    inp_off = np.concatenate([[0], np.cumsum(n * nch)]).astype(np.int64)
    # per population and channel, the interval of neurons some synapse targets (the only
    # ring-buffer columns that can be non-zero; module docstring)
    N = c.n_neurons
    ch, post = c.col // N, c.col % N
    g_lo = np.zeros((len(cus), MAX_CHANNELS), np.int64)
    g_hi = np.zeros((len(cus), MAX_CHANNELS), np.int64)
    for j in range(len(cus)):
        for k in range(nch[j]):
            hit = post[(ch == k) & (post >= lo[j]) & (post < lo[j] + n[j])]
            if hit.size:
                g_lo[j, k], g_hi[j, k] = hit.min() - lo[j], hit.max() + 1 - lo[j]
    # runs of neurons on one core: the per-core tally of a population in O(cores)
    seg_ptr, seg_lo, seg_hi, seg_row = [0], [], [], []
    for j in range(len(cus)):
        rows = c.core_of[lo[j]:lo[j] + n[j]] + 1
        cut = np.flatnonzero(np.diff(rows)) + 1
        starts = np.concatenate([[0], cut])
        seg_lo += starts.tolist()
        seg_hi += np.concatenate([cut, [n[j]]]).tolist()
        seg_row += rows[starts].tolist()
        seg_ptr.append(len(seg_lo))
    builtin = [p for p in pops if not p.custom]

    def i64(x):
        return np.array(x, np.int64)

    return customs, dict(
        kernels=tuple(distinct),
        b_lo=i64([c.offsets[p.name][0] for p in builtin]),
        b_hi=i64([c.offsets[p.name][1] for p in builtin]),
        cu_kid=i64([distinct.index(f) for f in updates]), cu_lo=lo, cu_n=n, cu_nch=nch,
        st_flat=st_flat, st_off=st_off, st_rows=i64([len(p.model.state_names) for p in cus]),
        pr_flat=pr_flat, pr_off=pr_off, pr_rows=i64([len(p.model.param_names) for p in cus]),
        inp_flat=np.zeros(int(inp_off[-1])), inp_off=inp_off, g_lo=g_lo, g_hi=g_hi,
        base_nz=np.zeros(c.n_neurons, np.uint8),
        seg_ptr=i64(seg_ptr), seg_lo=i64(seg_lo), seg_hi=i64(seg_hi), seg_row=i64(seg_row),
        names=[p.name for p in cus])


def probe_tables(names, net, probes, n_steps):
    """Probed custom state variables as ``run_custom`` records them: returns
    ``(custom_rec, cp_ptr, cp_row, cp_col, crec)``, ``custom_rec`` mapping "pop.var" to
    its (n_steps, n) view of the one record array ``crec``; per population in ``names``
    (``cp_ptr``) the probed state rows and their first columns."""
    cp, cols = [[] for _ in names], {}
    for target, what in probes:
        key, pop = f"{target}.{what}", net.populations[target]
        if pop.custom and key not in cols:
            w0 = sum(b - a for a, b in cols.values())
            cols[key] = (w0, w0 + pop.n)
            cp[names.index(target)].append((pop.model.state_names.index(what), w0))
    crec = np.zeros((n_steps, sum(b - a for a, b in cols.values())))
    custom_rec = {k: crec[:, a:b] for k, (a, b) in cols.items()}
    cp_ptr = np.cumsum([0] + [len(x) for x in cp]).astype(np.int64)
    cp_row = np.array([r for x in cp for r, _ in x], np.int64)
    cp_col = np.array([k for x in cp for _, k in x], np.int64)
    return custom_rec, cp_ptr, cp_row, cp_col, crec
