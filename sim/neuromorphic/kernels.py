"""numba kernels of NeuromorphicDevice: neuron updates, spike delivery, placement, routing.

Kernels take only arrays and scalars, check nothing, and add counts into an int64 array
indexed by ``hw_profiles.ops.OP_CODES`` (op codes come in as integers). The owning class
(``engine.py``) validates, allocates and flushes. Only spikes travel: a spike of neuron
``j`` walks row ``j`` of the CSR synapse table and adds ``weight x payload`` into the ring
buffer slot of step ``t + delay``; no dense matrix-vector product runs per step.

Layouts (N neurons, S source channels, C synaptic channels per neuron slot, D ring slots):
``inbuf`` (D, C*N) float64, column ``channel*N + post``; currents ``I`` (C, N); CSR rows
over the N+S presynaptic indices (neurons first, then sources); ``payload`` (N+S,) int32,
0 = silent; ``spk_list`` holds the indices that spiked in the current step.

Spikes with delay 1 into a ``cuba_lif`` channel skip the ring buffer (network.py,
"Discrete-time semantics", 1): ``Ip`` (C, N) float64 (flat: a ring-buffer row's column
layout) holds each CUBA channel's *pending* current ``a_c I_c[t-1]`` plus the delay-1
arrivals added so far, one at a time (``g_c x (weight x payload)``; ``gcol`` (C*N,): g of
each column); ``sdir`` (per synapse, uint8) is 1 for such a synapse. Delivery sets bit 2
of the target's ``mark`` byte (``MARK_IN``) when the added amount is non-zero: the update's
"had input".
The update computes ``I_c[t] = Ip + g_c x_c[t]`` (``x_c``: the ring-buffer sum of the
longer delays), writes ``Ip = a_c I_c[t]`` for the next step and clears the bit. ``Ip`` and ``mark``
persist between calls; ``I`` is written where it is read (probes, a call's last step).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

LIF, IF, CUBA, CUSTOM = 0, 1, 2, 3
MARK_IN = np.uint8(4)      # mark bit 2: a delay-1 spike with non-zero input arrived


@intrinsic
def prefetch(typingctx, arr, idx):
    """``prefetch(a, i)``: LLVM's ``llvm.prefetch`` of element ``a[i]`` (a 1-D array; for
    reading, high locality, data cache): a hint, it reads or changes nothing, and an address
    outside the array is harmless (a prefetch never faults)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1
            and isinstance(idx, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = builder.bitcast(builder.gep(ary.data, [i]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.void(arr, idx), codegen


@njit(cache=True)
def _splitmix(state, k):
    """One uniform in [0, 1) from the 64-bit SplitMix generator state[k] (advanced)."""
    state[k] += np.uint64(0x9E3779B97F4A7C15)
    z = state[k]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def sources_step(t, n_neurons, payload, ev_steps, ev_index, ev_payload, ev_ptr,
                 pois_prob, rng_state, spk_list, nspk):
    """Write the step's source spikes into ``payload[n_neurons:]`` and the spike list."""
    p = ev_ptr[0]
    while p < ev_steps.size and ev_steps[p] < t:  # events before a resumed start
        p += 1
    while p < ev_steps.size and ev_steps[p] == t:
        j = n_neurons + ev_index[p]
        if payload[j] == 0:
            spk_list[nspk[0]] = j
            nspk[0] += 1
        payload[j] = ev_payload[p]
        p += 1
    ev_ptr[0] = p
    for k in range(pois_prob.size):
        if pois_prob[k] > 0.0 and _splitmix(rng_state, k) < pois_prob[k]:
            if payload[n_neurons + k] == 0:
                spk_list[nspk[0]] = n_neurons + k
                nspk[0] += 1
            payload[n_neurons + k] = 1


@njit(cache=True)
def _integrate(t, I0, P0, x0, a0, g0, k0, I1, P1, x1, a1, g1, k1, v, until, inj, a_v, b_v,
               k_in, flag, mark):
    """Pass 1 of the uniform CUBA update: currents (``I = Ip + g x``, then ``Ip = a I``) and
    membrane, refractory v held; marks in ``flag`` the neurons that received input (ring
    buffer, delay-1 mark bit, injection), clears their ring-buffer slot and mark bit.

    Only 1-D contiguous arrays and scalars, selects instead of branches: LLVM vectorises
    this loop (checked with inspect_asm). With one channel, pass I1 = P1 = x1 = a zero array.
    """
    for i in range(v.size):
        xa = x0[i]
        xb = x1[i]
        j0 = P0[i] + g0 * xa
        j1 = P1[i] + g1 * xb
        I0[i] = j0
        I1[i] = j1
        P0[i] = a0 * j0
        P1[i] = a1 * j1
        vn = a_v * v[i] + b_v + (k_in * inj[i] + k0 * j0 + k1 * j1)
        v[i] = vn if until[i] <= t else v[i]
        m = mark[i]
        flag[i] = np.uint8((xa != 0.0) | (xb != 0.0) | (inj[i] != 0.0)) | ((m >> np.uint8(2))
                                                                    & np.uint8(1))
        mark[i] = m & np.uint8(3)
        x0[i] = 0.0              # the slot is consumed: ready for step t + D
        x1[i] = 0.0


@njit(cache=True)
def _fire(t, lo, v, until, payload, flag, th, vr, sub, mode, rs, spk_list, nspk):
    """Pass 2: strict threshold, reset, refractory end; count active neurons.

    Arrays are the population's slices; ``lo`` turns a slice index into a global one.
    """
    active = 0
    for i in range(v.size):
        active += flag[i]
        if v[i] > th and until[i] <= t:
            payload[i] = 1
            spk_list[nspk[0]] = lo + i
            nspk[0] += 1
            v[i] = vr if mode == 0 else v[i] - sub
            until[i] = t + rs
            active += 1 - flag[i]
            flag[i] = 1          # active this step: end_step's per-core tally reads flag
    return active


@njit(cache=True)
def _cuba_uniform(t, slot, lo, hi, nch, q, v, I, until, av, bv, kin, thr, vreset, rmode,  # noqa: E741 (I: synaptic current, NIR's name)
                  refsteps, aI, gI, kI, inj, inbuf, Ip, payload, zeros, flag, mark, spk_list,
                  nspk):
    """neurons_step's CUBA update for a population with one coefficient row and <= 2
    channels, in two passes (Brian2's state-update / threshold split): the same
    arithmetic in the same order as the general loop."""
    N = v.size
    x = inbuf[slot]
    x0 = x[lo:hi]
    x1 = x[N + lo:N + hi] if nch > 1 else zeros[:hi - lo]
    I0 = I[0, lo:hi]
    I1 = I[1, lo:hi] if nch > 1 else zeros[:hi - lo]
    P1 = Ip[1, lo:hi] if nch > 1 else zeros[:hi - lo]
    a1 = aI[q, 1] if nch > 1 else 0.0
    g1 = gI[q, 1] if nch > 1 else 0.0
    k1 = kI[q, 1] if nch > 1 else 0.0
    _integrate(t, I0, Ip[0, lo:hi], x0, aI[q, 0], gI[q, 0], kI[q, 0], I1, P1, x1, a1, g1, k1,
               v[lo:hi], until[lo:hi], inj[lo:hi], av[q], bv[q], kin[q], flag[lo:hi],
               mark[lo:hi])
    return _fire(t, lo, v[lo:hi], until[lo:hi], payload[lo:hi], flag[lo:hi], thr[q],
                 vreset[q], thr[q] - vreset[q], rmode[q], refsteps[q], spk_list, nspk)


@intrinsic
def popcount(typingctx, x):
    """``popcount(x)``: the set bits of a 64-bit integer (LLVM's ``ctpop``: one ``popcnt``
    instruction on x86-64), as an int64."""
    if not (isinstance(x, types.Integer) and x.bitwidth == 64):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64]),
                                            "llvm.ctpop.i64")
        return builder.call(fn, [args[0]])
    return types.int64(x), codegen


_ONES = np.uint64(0x0101010101010101)
_TWOS = np.uint64(0x0202020202020202)


@njit(cache=True)
def _integrate_mark(t, I0, P0, x0, a0, g0, k0, I1, P1, x1, a1, g1, k1, v, until, inj,
                    a_v, b_v, k_in, th, mark):
    """The fused CUBA pass over one population's slices: currents, membrane (refractory v
    held), strict threshold, the ring-buffer slot consumed. ``mark[i]`` = 1 (active: had
    input) | 3 (crossed the threshold: active and spiking) | 0, bit 2 (delay-1 input
    arrived) read and cleared; returns the crossings.

    The arithmetic is :func:`_integrate`'s term for term; selects, no branches, 1-D slices
    from index 0: LLVM vectorises it (as :func:`_integrate`). No loop-invariant flags
    here (``I`` written and the injected term added every step): with the input slot,
    ``Ip`` and the mark read in one loop, a flag (skipping ``I``, or :func:`_direct_mark`'s
    ``use_inj``) made this loop ~20x slower (64k neurons: ~25 against ~1.3 ns per neuron;
    not vectorised then, presumably)."""
    ns = 0
    for i in range(v.size):
        xa = x0[i]
        xb = x1[i]
        j0 = P0[i] + g0 * xa
        j1 = P1[i] + g1 * xb
        I0[i] = j0
        I1[i] = j1
        P0[i] = a0 * j0
        P1[i] = a1 * j1
        fm = (mark[i] >> np.uint8(2)) & np.uint8(1)
        vn = a_v * v[i] + b_v + (k_in * inj[i] + k0 * j0 + k1 * j1)
        f = (xa != 0.0) | (xb != 0.0) | (inj[i] != 0.0)
        ok = until[i] <= t
        vv = vn if ok else v[i]
        v[i] = vv
        s = (vv > th) & ok
        mark[i] = (np.uint8(f | s) | fm) | (np.uint8(s) << np.uint8(1))
        ns += s
        x0[i] = 0.0
        x1[i] = 0.0
    return ns


@njit(cache=True)
def _direct_mark(t, I0, P0, a0, k0, I1, P1, a1, k1, v, until, inj, use_inj, pub, a_v, b_v,
                 k_in, th, mark):
    """:func:`_integrate_mark` for a population whose ring-buffer columns no synapse writes
    (every synapse has delay 1, so all its input went into ``Ip``): the slot is neither
    read nor cleared and ``I = Ip`` (``Ip + g x`` with x = +0 is ``Ip``, up to the sign of
    a zero current), 32 B per neuron less; "had input" is the mark's bit 2 alone."""
    ns = 0
    for i in range(v.size):
        j0 = P0[i]
        j1 = P1[i]
        if pub:
            I0[i] = j0
            I1[i] = j1
        P0[i] = a0 * j0
        P1[i] = a1 * j1
        f = (mark[i] >> np.uint8(2)) & np.uint8(1)
        if use_inj:
            vn = a_v * v[i] + b_v + (k_in * inj[i] + k0 * j0 + k1 * j1)
            f |= np.uint8(inj[i] != 0.0)
        else:
            vn = a_v * v[i] + b_v + (k0 * j0 + k1 * j1)
        ok = until[i] <= t
        vv = vn if ok else v[i]
        v[i] = vv
        s = (vv > th) & ok
        mark[i] = (f | np.uint8(s)) | (np.uint8(s) << np.uint8(1))
        ns += s
    return ns


@njit(cache=True)
def _cuba_fused(t, slot, lo, hi, nch, q, v, I, until, av, bv, kin, thr, vreset, rmode,  # noqa: E741 (I: synaptic current, NIR's name)
                refsteps, aI, gI, kI, inj, use_inj, ring, pub, inbuf, Ip, payload, zeros, mark,
                words, spk_list, nspk):
    """The uniform CUBA update (:func:`_cuba_uniform`) as one vectorised pass that writes a
    mark byte per neuron (:func:`_integrate_mark`); the spikes are found 8 marks at a time
    and reset in index order. Same values, same spike order as the two-pass update; the
    per-core tally reads the marks afterwards (:func:`_tally_runs`)."""
    N = v.size
    x = inbuf[slot]
    n = hi - lo
    a1 = aI[q, 1] if nch > 1 else 0.0
    g1 = gI[q, 1] if nch > 1 else 0.0
    k1 = kI[q, 1] if nch > 1 else 0.0
    x1 = x[N + lo:N + hi] if nch > 1 else zeros[:n]
    I1 = I[1, lo:hi] if nch > 1 else zeros[:n]
    P1 = Ip[1, lo:hi] if nch > 1 else zeros[:n]
    if ring:
        ns = _integrate_mark(t, I[0, lo:hi], Ip[0, lo:hi], x[lo:hi], aI[q, 0], gI[q, 0],
                             kI[q, 0], I1, P1, x1, a1, g1, k1, v[lo:hi], until[lo:hi],
                             inj[lo:hi], av[q], bv[q], kin[q], thr[q], mark[lo:hi])
    else:
        ns = _direct_mark(t, I[0, lo:hi], Ip[0, lo:hi], aI[q, 0], kI[q, 0], I1, P1, a1, k1,
                          v[lo:hi], until[lo:hi], inj[lo:hi], use_inj, pub, av[q], bv[q],
                          kin[q], thr[q], mark[lo:hi])
    if ns:
        vr, sub, mode, rs = vreset[q], thr[q] - vreset[q], rmode[q], refsteps[q]
        k = lo >> 3
        last = words.size - 8
        while ns > 0:                   # the crossings, in index order
            # spikes are sparse (~0.06% of neurons a step in VA CUBA): skip 64 marks at a
            # time while none crossed (only a filter: the words past hi are never taken)
            if k <= last and ((words[k] | words[k + 1] | words[k + 2] | words[k + 3]
                               | words[k + 4] | words[k + 5] | words[k + 6]
                               | words[k + 7]) & _TWOS) == 0:
                k += 8
                continue
            if words[k] & _TWOS:
                for i in range(max(lo, k << 3), min(hi, (k << 3) + 8)):
                    if mark[i] & 2:
                        payload[i] = 1
                        spk_list[nspk[0]] = i
                        nspk[0] += 1
                        v[i] = vr if mode == 0 else v[i] - sub
                        until[i] = t + rs
                        ns -= 1
            k += 1


@njit(cache=True)
def _tally_runs(words, lo, r0, r1, run_end, run_n, run_row, ct):
    """Per-core neuron tally of one fused population [lo, hi) from its mark bytes (bit 0:
    active). ``P(i)``, the active marks among the population's neurons below ``i``, is a
    running sum of ``popcount(word & 0x01..01)`` over whole words plus the masked word of
    ``i`` (x86 is little-endian: byte i & 7 of word i >> 3 is bits 8 (i & 7) ..); the core
    runs ``r0 .. r1-1`` tile the population in order, so run r holds ``P(run_end[r]) -
    P(run_end[r - 1])`` active neurons: one popcount per word and one per run (the previous
    version summed each run's words with a multiply per word and masks per run: twice the
    time, measured at 4k-256k neurons). The marks of the bytes below ``lo`` in its word
    cancel in the differences. Active into ``ct[1, row]``, idle into ``ct[2, row]``
    (``ct``: the column-major per-core table of :func:`run_builtin`); returns the
    population's active neurons. Integer counts: the same in any order."""
    k = lo >> 3
    acc = np.int64(0)           # active marks in the whole words lo >> 3 .. k-1
    prev = popcount(words[k] & _ONES & ((np.uint64(1) << np.uint64(8 * (lo & 7)))
                                        - np.uint64(1)))
    active = 0
    for r in range(r0, r1):
        b = run_end[r]
        kb = b >> 3
        while k < kb:
            acc += popcount(words[k] & _ONES)
            k += 1
        # P(b): the whole words below kb, and word kb's bytes below b (none when b & 7 = 0)
        pb = acc + popcount(words[kb] & _ONES & ((np.uint64(1) << np.uint64(8 * (b & 7)))
                                                 - np.uint64(1)))
        act = pb - prev
        prev = pb
        row = run_row[r]
        ct[1, row] += act
        ct[2, row] += run_n[r] - act
        active += act
    return active


@njit(cache=True)
def _general_pop(t, lo, hi, code, nch, row0, stride, slot, N, v, I, ref, av, bv, kin, thr,  # noqa: E741 (I: synaptic current, NIR's name)
                 vreset, rmode, refsteps, aI, gI, kI, inj, inbuf, Ip, payload, flag, mark,
                 spk_list, nspk):
    """neurons_step's per-neuron update of one population (any model, any coefficient
    stride); returns its active neurons."""
    active = 0
    for i in range(lo, hi):
        q = row0 + (i - lo) * stride
        had_input = inj[i] != 0.0
        if code == CUBA:
            drive = kin[q] * inj[i]
            if mark[i] & MARK_IN:
                had_input = True
                mark[i] &= np.uint8(3)
            for c in range(nch):
                x = inbuf[slot, c * N + i]
                inbuf[slot, c * N + i] = 0.0
                if x != 0.0:
                    had_input = True
                j = Ip[c, i] + gI[q, c] * x
                I[c, i] = j
                Ip[c, i] = aI[q, c] * j
                drive += kI[q, c] * j
        else:
            x = inbuf[slot, i]
            inbuf[slot, i] = 0.0
            if x != 0.0:
                had_input = True
            drive = kin[q] * (x + inj[i])
        if t < ref[i]:           # refractory: v held, currents integrate
            flag[i] = had_input
            if had_input:
                active += 1
            continue
        vi = av[q] * v[i] + bv[q] + drive
        if vi > thr[q]:          # strict threshold (NIR)
            payload[i] = 1
            spk_list[nspk[0]] = i
            nspk[0] += 1
            if rmode[q] == 0:
                vi = vreset[q]
            else:
                vi -= thr[q] - vreset[q]
            ref[i] = t + refsteps[q]
            had_input = True
        v[i] = vi
        flag[i] = had_input      # per-core tally (end_step) reads it
        if had_input:
            active += 1
    return active


@njit(cache=True)
def neurons_step(t, pop_lo, pop_hi, pop_code, pop_nch, pop_row0, pop_stride, C, D, v, I,  # noqa: E741 (I: synaptic current, NIR's name)
                 ref, av, bv, kin, thr, vreset, rmode, refsteps, aI, gI, kI, inj, inbuf, Ip,
                 payload, zeros, flag, mark, spk_list, nspk, counts, NU_ACTIVE, NU_IDLE):
    """Update every built-in neuron for step ``t`` (see network.py for the equations).

    Coefficients live in a table: neuron ``i`` of population ``p`` uses row
    ``pop_row0[p] + (i - pop_lo[p]) * pop_stride[p]``; a population whose parameters are
    all equal has stride 0, so its one row stays in cache while its neurons stream by.
    Currents ``I`` are (C, N); the ring buffer column of (neuron i, channel c) is c*N + i.
    ``ref[i]`` is the first step neuron ``i`` may integrate again (a spike in step s with
    ``refractory_steps`` r sets it to s + r: refractory while t < s + r, Brian2's rule).
    """
    slot = t % D
    N = v.size
    for p in range(pop_lo.size):
        code = pop_code[p]
        if code == CUSTOM:
            continue
        nch = pop_nch[p]
        lo = pop_lo[p]
        row0 = pop_row0[p]
        stride = pop_stride[p]
        if stride == 0 and code == CUBA and nch <= 2:
            active = _cuba_uniform(t, slot, lo, pop_hi[p], nch, row0, v, I, ref, av, bv,
                                   kin, thr, vreset, rmode, refsteps, aI, gI, kI, inj, inbuf,
                                   Ip, payload, zeros, flag, mark, spk_list, nspk)
            counts[NU_ACTIVE] += active
            counts[NU_IDLE] += pop_hi[p] - lo - active
            continue
        active = _general_pop(t, lo, pop_hi[p], code, nch, row0, stride, slot, N, v, I, ref,
                              av, bv, kin, thr, vreset, rmode, refsteps, aI, gI, kI, inj,
                              inbuf, Ip, payload, flag, mark, spk_list, nspk)
        counts[NU_ACTIVE] += active
        counts[NU_IDLE] += pop_hi[p] - lo - active


@njit(cache=True)
def deliver_step(t, D, payload, spk_list, nspk, row_ptr, col, w, dly, sdir, gcol, hops,
                 entry_bytes, inbuf, Ip, mark, counts, nbytes, spk_t, spk_i, spk_p, spk_n,
                 SYNOP, SPIKE, HOP, core_row, rc_ptr, rc_row, rc_cnt, cc):
    """Send every spike of step ``t`` along its CSR row; record it; clear ``payload``.

    (The neuron updates clear the ring-buffer slot of step ``t`` as they consume it.) A
    synapse with ``sdir[k]`` = 1 (delay 1 into a CUBA channel) adds ``gcol x (w x payload)``
    into the pending current ``Ip`` instead, one spike at a time (module docstring).

    Counts: one ``spike`` packet per spike, ``hops[j]`` router hops (its multicast tree),
    one ``synop`` and ``entry_bytes`` synapse-memory bytes per target synapse. The same
    counts go per core into ``cc`` (rows 1 + core, row 0 off the cores; columns
    ``sim.step_timing.TIMED_OPS``): the spike and its hops to the sender's row ``core_row[j]``, the
    synops to each destination core's row (``rc_*``: per presynaptic row, its target rows
    and synapse counts).
    """
    n = spk_n[0]
    base = t % D
    N = Ip.shape[1]
    Ipf = Ip.reshape(-1)
    for s in range(nspk[0]):
        j = spk_list[s]
        r = core_row[j]
        cc[r, 3] += 1
        cc[r, 4] += hops[j]
        for k in range(rc_ptr[j], rc_ptr[j + 1]):
            cc[rc_row[k], 0] += rc_cnt[k]
        pl = payload[j]
        payload[j] = 0
        spk_t[n] = t
        spk_i[n] = j
        spk_p[n] = pl
        n += 1
        lo, hi = row_ptr[j], row_ptr[j + 1]
        for k in range(lo, hi):
            if sdir[k]:
                _direct_add(col[k], w[k] * pl, gcol, Ipf, mark, N)
                continue
            # slot (t + d) mod D without a division per synapse: 0 <= d < D
            q = base + dly[k]
            q = q - D if q >= D else q
            inbuf[q, col[k]] += w[k] * pl
        counts[SPIKE] += 1
        counts[HOP] += hops[j]
        counts[SYNOP] += hi - lo
        nbytes[0] += (hi - lo) * entry_bytes
    spk_n[0] = n
    nspk[0] = 0


@njit(cache=True)
def _direct_add(c, wp, gcol, Ipf, mark, N):
    """One delay-1 spike into CUBA column ``c`` (channel x N + neuron): ``Ipf[c] += g x wp``
    (``Ipf``: ``Ip`` flat) and, when the amount ``wp`` (weight x payload) is non-zero, the
    target's input bit."""
    Ipf[c] += gcol[c] * wp
    i = c
    while i >= N:
        i -= N
    mark[i] |= np.uint8(wp != 0.0) << np.uint8(2)


@njit(cache=True)
def _prefetch_row(j, row_ptr, col, w, syn_row):
    """Prefetch presynaptic row ``j``'s synapses (its ``col``, ``w``, ``syn_row`` entries,
    one prefetch per 64-byte line) into the caches."""
    lo, hi = row_ptr[j], row_ptr[j + 1]
    if hi > lo:
        for k in range(lo, hi, 8):
            prefetch(w, k)
        for k in range(lo, hi, 16):
            prefetch(col, k)
            prefetch(syn_row, k)
        prefetch(w, hi - 1)
        prefetch(col, hi - 1)
        prefetch(syn_row, hi - 1)


@njit(cache=True)
def _deliver_cols(t, D, payload, spk_list, nspk, row_ptr, col, w, dly, sdir, gcol, hops,
                  entry_bytes, inbuf, Ip, mark, counts, nbytes, spk_t, spk_i, spk_p, spk_n,
                  SYNOP, SPIKE, HOP, core_row, syn_row, d0, mode, gch, ct, ahead):
    """:func:`deliver_step` for :func:`run_builtin`: per-core counts into its column-major
    table ``ct`` (a synop into ``ct[0, syn_row[k]]``, ``syn_row``: each synapse's
    destination table row). ``mode`` 0: no synapse goes straight into ``Ip`` and every
    synapse has delay ``d0`` (one ring-buffer row takes the whole step); 1: per synapse,
    into ``Ip`` where ``sdir`` says so, else into the ring-buffer slot of its delay; 2:
    every synapse into ``Ip``, with a g per channel only (``gch[c]`` equals ``gcol`` on
    every column of channel c that a synapse reaches: the same products, no table read).

    A spike's synapses are a random row of arrays far larger than the caches (20 M synapses
    x 16 B at 256k neurons), so each row costs DRAM latency per line when walked cold;
    while spike ``s`` is delivered, the rows of spike ``s + ahead`` are prefetched
    (``ahead`` = 0: off). Measured at 64k / 256k neurons (VA CUBA, one thread): ~15% / ~10%
    less CPU time per simulated second; prefetching the ring-buffer elements of the next
    spike as well gained nothing. Prefetches change no value: the same sums, in the same
    order."""
    n = spk_n[0]
    base = t % D
    row = inbuf[(t + max(d0, 0)) % D]
    N = Ip.shape[1]
    N2, N3 = 2 * N, 3 * N                 # MAX_CHANNELS = 4
    Ipf = Ip.reshape(-1)
    m = nspk[0]
    if ahead > 0:
        for s in range(min(ahead, m)):
            _prefetch_row(spk_list[s], row_ptr, col, w, syn_row)
    for s in range(m):
        j = spk_list[s]
        if ahead > 0 and s + ahead < m:
            _prefetch_row(spk_list[s + ahead], row_ptr, col, w, syn_row)
        lo, hi = row_ptr[j], row_ptr[j + 1]
        r = core_row[j]
        ct[3, r] += 1
        ct[4, r] += hops[j]
        pl = payload[j]
        payload[j] = 0
        spk_t[n] = t
        spk_i[n] = j
        spk_p[n] = pl
        n += 1
        counts[SPIKE] += 1
        counts[HOP] += hops[j]
        counts[SYNOP] += hi - lo
        nbytes[0] += (hi - lo) * entry_bytes
        if mode == 2:
            for k in range(lo, hi):
                c = col[k]
                # column = channel x N + target; the channel by compares, not a loop whose
                # exit the branch predictor misses on every other exc/inh synapse
                # (measured: ~18 against ~11 cycles per synaptic event at 4k)
                ch = np.int64(c >= N) + np.int64(c >= N2) + np.int64(c >= N3)
                i = c - ch * N
                wp = w[k] * pl
                Ipf[c] += gch[ch] * wp
                mark[i] |= np.uint8(wp != 0.0) << np.uint8(2)
                ct[0, syn_row[k]] += 1
        elif mode == 0 and d0 >= 0:
            for k in range(lo, hi):
                row[col[k]] += w[k] * pl
                ct[0, syn_row[k]] += 1
        else:
            for k in range(lo, hi):
                if sdir[k]:
                    _direct_add(col[k], w[k] * pl, gcol, Ipf, mark, N)
                else:
                    # slot (t + d) mod D without a division per synapse: 0 <= d < D
                    q = base + dly[k]
                    q = q - D if q >= D else q
                    inbuf[q, col[k]] += w[k] * pl
                ct[0, syn_row[k]] += 1
    spk_n[0] = n
    nspk[0] = 0


@njit(cache=True)
def _end_cols(ct, tt, tau, sync, stats, sb, bits):
    """:func:`end_step` on :func:`run_builtin`'s column-major table ``ct`` (6, rows):
    each core's work sum_op ct[op, row] x tau[op] built op by op over all rows at once
    (per row the same additions in the same order as end_step's loop: the same value),
    ``ct`` added into the totals ``tt`` and cleared, all vectorised; the slowest core
    (rows >= 1) found as the largest bit pattern (every work is >= +0.0, and non-negative
    IEEE doubles order as their int64 bit patterns, whose max LLVM vectorises)."""
    R = ct.shape[1]
    for r in range(R):
        sb[r] = 0.0 + ct[0, r] * tau[0]
    for k in range(1, ct.shape[0]):
        tk = tau[k]
        for r in range(R):
            sb[r] += ct[k, r] * tk
    for k in range(ct.shape[0]):
        for r in range(R):
            tt[k, r] += ct[k, r]
            ct[k, r] = 0
    sv = sb.view(np.int64)
    m = np.int64(0)
    for r in range(1, R):
        m = max(m, sv[r])
    bits[0] = m
    work = bits.view(np.float64)[0]
    step = max(sync[1], work + sync[0])
    stats[0] += work
    stats[1] += step
    stats[2] += max(sync[2], step)
    if step > sync[2]:
        stats[3] += 1.0


# delivery prefetches the synapse rows of the spike this many ahead (_deliver_cols): at
# ~80 synapses a spike's delivery takes ~0.4 us, so 2 spikes cover a DRAM miss
PREFETCH_AHEAD = 2


@njit(cache=True)
def tally_neurons(core_row, flag, cc):
    """Per-core neuron updates of this step: ``flag[i]`` = 1 when neuron i was active."""
    for i in range(flag.size):
        r = core_row[i]
        a = flag[i]
        cc[r, 1] += a
        cc[r, 2] += 1 - a


@njit(cache=True)
def end_step(cc, tot, tau, sync, stats):
    """Reduce one step's per-core counts to its time (sim/execution/neuromorphic.py).

    work = max over cores (rows >= 1) of sum_op cc[row, op] x tau[op]; step = max(tick,
    work + barrier); paced = max(dt, step). ``sync`` = [barrier, tick, dt] seconds; adds
    [work, step, paced, overrun] into ``stats``, ``cc`` into ``tot``, and clears ``cc``.
    """
    work = 0.0
    for r in range(cc.shape[0]):
        s = 0.0
        for k in range(cc.shape[1]):
            s += cc[r, k] * tau[k]
            tot[r, k] += cc[r, k]
            cc[r, k] = 0
        if r > 0 and s > work:
            work = s
    step = max(sync[1], work + sync[0])
    stats[0] += work
    stats[1] += step
    stats[2] += max(sync[2], step)
    if step > sync[2]:
        stats[3] += 1.0


@njit(cache=True)
def record_step(row, probe_idx, probe_var, v, I, rec):  # noqa: E741 (I: synaptic current, NIR's name)
    for k in range(probe_idx.size):
        i = probe_idx[k]
        rec[row, k] = v[i] if probe_var[k] == 0 else I[probe_var[k] - 1, i]


@njit(cache=True)
def core_runs(core_row, lo, hi, run_row, run_n, run_end, k):
    """The runs of consecutive neurons of [lo, hi) placed on one core (the per-core tally
    counts each run by popcounts between its boundaries): each run's core row, length and
    end written from index ``k`` on; returns the index after the last run."""
    a = lo
    for i in range(lo + 1, hi + 1):
        if i == hi or core_row[i] != core_row[i - 1]:
            run_row[k] = core_row[a]
            run_n[k] = i - a
            run_end[k] = i
            k += 1
            a = i
    return k


@njit(cache=True)
def syn_tables(col, dly, sdir, gcol, core_row, n_neurons, C):
    """:func:`_deliver_cols`' per-call tables: each synapse's destination table row (1 +
    core of its target), ``d0`` (the delay every synapse has, or -1), the delivery mode (2:
    every synapse goes straight into ``Ip`` with one g per channel, ``gch``; 1: some do; 0:
    none does). O(synapses), once per call."""
    syn_row = np.empty(col.size, np.int32)
    gch = np.zeros(C)
    seen = np.zeros(C, np.bool_)
    n_dir = 0
    uniform_g = True
    for k in range(col.size):
        x = col[k]
        ch = 0
        while x >= n_neurons:             # column = channel x N + target
            x -= n_neurons
            ch += 1
        syn_row[k] = core_row[x]
        if sdir[k]:
            n_dir += 1
            g = gcol[col[k]]
            if not seen[ch]:
                seen[ch] = True
                gch[ch] = g
            elif gch[ch] != g:
                uniform_g = False
    d0 = dly[0] if dly.size else 0
    for k in range(dly.size):
        if dly[k] != d0:
            d0 = -1
            break
    mode = 0 if n_dir == 0 else (2 if n_dir == col.size and uniform_g else 1)
    return syn_row, d0, mode, gch


@njit(cache=True)
def run_builtin(t0, t1, rec_t0, pop_lo, pop_hi, pop_code, pop_nch, pop_row0, pop_stride, C,
                D, v, I, ref, av, bv, kin, thr, vreset, rmode, refsteps, aI, gI, kI, inj, inbuf,  # noqa: E741 (I: synaptic current, NIR's name)
                Ip, payload, zeros, flag, mark, spk_list, nspk, ev_steps, ev_index, ev_payload,
                ev_ptr, pois_prob, rng_state,
                row_ptr, col, w, dly, sdir, gcol, hops, entry_bytes, counts, nbytes,
                spk_t, spk_i, spk_p, spk_n, probe_idx, probe_var, rec,
                SYNOP, NU_ACTIVE, NU_IDLE, SPIKE, HOP,
                core_row, rc_ptr, rc_row, rc_cnt, cc, tot, tau, sync, stats):
    """Steps ``t0 .. t1-1`` of a network of built-in neurons in one call.

    The per-core counts of a step go into a column-major table ``ct`` (op, row) private to
    the call (the per-step kernels' ``cc`` is (row, op): a row's six counts touched at
    once there, one op over all rows at once here, so :func:`_end_cols` reduces a step in
    vector loops); its totals are added into ``tot`` when the call returns. ``rc_*`` and
    ``cc`` are not read (kept for the per-step kernels' call layout). Each step ends with
    the tally and :func:`_end_cols`: its per-core work reduced to the step's time inside
    the loop, the same values as tally_neurons + deliver_step + end_step.

    ``I`` is written in a step that records it (a probe on a current) and in the call's
    last step, so that it holds ``I_c[t]`` between calls; the loop itself carries the
    pending currents ``Ip`` (module docstring). ``mark`` (N rounded up to whole 8-byte
    words, uint8) persists between calls: its bit 2 holds delay-1 input delivered in the
    previous step.

    Returns the first step not run: ``t1``, or earlier when the spike record could
    overflow (the caller grows it and calls again; all state lives in the arrays). A step
    after which the record could not take another step's spikes (``2 x (N + S)`` free
    entries needed before it) is the call's last.
    """
    n_neurons = v.size
    R = tot.shape[0]
    n_ops = tot.shape[1]
    ct = np.zeros((n_ops, R), np.int64)
    tt = np.zeros((n_ops, R), np.int64)
    sb = np.zeros(R)
    bits = np.zeros(1, np.int64)
    # per population: fused (uniform CUBA, <= 2 channels) or general; its core runs; and
    # whether any injected current is on (constant within a call: the engine stops a
    # call where one switches on)
    n_pop = pop_lo.size
    fused = np.zeros(n_pop, np.bool_)
    use_inj = np.zeros(n_pop, np.bool_)
    # each synapse's destination table row (1 + core of its target neuron); O(synapses)
    # once per call
    syn_row, d0, mode, gch = syn_tables(col, dly, sdir, gcol, core_row, n_neurons, C)
    # every synapse has delay 1: nothing writes a CUBA column of the ring buffer (they all
    # go into Ip), so the fused pass need not read or clear it
    ring = d0 != 1
    pub_all = False                       # a probe records a current every step
    for k in range(probe_var.size):
        if probe_var[k] > 0:
            pub_all = True
    words = mark.view(np.uint64)
    run_ptr = np.zeros(n_pop + 1, np.int64)
    # the core runs of the fused populations, in neuron order: table row, size, end
    run_row = np.zeros(n_neurons, np.int64)
    run_n = np.zeros(n_neurons, np.int64)
    run_end = np.zeros(n_neurons, np.int64)
    k = 0
    for p in range(n_pop):
        lo, hi = pop_lo[p], pop_hi[p]
        fused[p] = pop_stride[p] == 0 and pop_code[p] == CUBA and pop_nch[p] <= 2 and hi > lo
        for i in range(lo, hi):
            if inj[i] != 0.0:
                use_inj[p] = True
                break
        if fused[p]:
            k = core_runs(core_row, lo, hi, run_row, run_n, run_end, k)
        run_ptr[p + 1] = k
    t = t0
    while t < t1:
        if spk_n[0] + payload.size > spk_t.size:
            break
        last = t + 1 == t1 or spk_n[0] + 2 * payload.size > spk_t.size
        sources_step(t, n_neurons, payload, ev_steps, ev_index, ev_payload, ev_ptr,
                     pois_prob, rng_state, spk_list, nspk)
        slot = t % D
        pub = pub_all or last
        for p in range(n_pop):
            lo, hi = pop_lo[p], pop_hi[p]
            if fused[p]:
                _cuba_fused(t, slot, lo, hi, pop_nch[p], pop_row0[p], v, I, ref, av, bv, kin,
                            thr, vreset, rmode, refsteps, aI, gI, kI, inj, use_inj[p], ring,
                            pub, inbuf, Ip, payload, zeros, mark, words, spk_list,
                            nspk)
                active = _tally_runs(words, lo, run_ptr[p], run_ptr[p + 1], run_end, run_n,
                                     run_row, ct)
            else:
                active = _general_pop(t, lo, hi, pop_code[p], pop_nch[p], pop_row0[p],
                                      pop_stride[p], slot, n_neurons, v, I, ref, av, bv, kin,
                                      thr, vreset, rmode, refsteps, aI, gI, kI, inj, inbuf,
                                      Ip, payload, flag, mark, spk_list, nspk)
                for i in range(lo, hi):
                    a = flag[i]
                    ct[1, core_row[i]] += a
                    ct[2, core_row[i]] += 1 - a
            counts[NU_ACTIVE] += active
            counts[NU_IDLE] += hi - lo - active
        if probe_idx.size:
            record_step(t - rec_t0, probe_idx, probe_var, v, I, rec)
        _deliver_cols(t, D, payload, spk_list, nspk, row_ptr, col, w, dly, sdir, gcol, hops,
                      entry_bytes, inbuf, Ip, mark, counts, nbytes, spk_t, spk_i, spk_p, spk_n,
                      SYNOP, SPIKE, HOP, core_row, syn_row, d0, mode, gch, ct, PREFETCH_AHEAD)
        _end_cols(ct, tt, tau, sync, stats, sb, bits)
        t += 1
        if last:
            break
    for r in range(R):
        for k in range(n_ops):
            tot[r, k] += tt[k, r]
    return t


# -- compile-time kernels -----------------------------------------------------------------
@njit(cache=True)
def _new_axons(i, core, tag, in_ptr, in_pre, stamp_core, stamp_tag):
    """Distinct presynaptic axons of neuron ``i`` not yet counted on ``core``."""
    n = 0
    for k in range(in_ptr[i], in_ptr[i + 1]):
        a = in_pre[k]
        if stamp_core[a] != core and stamp_tag[a] != tag:
            stamp_tag[a] = tag
            n += 1
    return n


@njit(cache=True)
def place_population(lo, hi, in_ptr, in_pre, neuron_bytes, max_neurons, max_bytes,
                     max_fan_in, first_core, core_of, n_pre):
    """Greedy in-order placement of neurons ``lo..hi-1`` on cores from ``first_core``.

    A core takes neurons while it stays within ``max_neurons``, ``max_bytes`` of synapse
    memory (``neuron_bytes``: each neuron's own synapse entries) and ``max_fan_in``
    distinct presynaptic axons (``in_ptr``/``in_pre``: the presynaptic indices of each
    neuron, CSC). Returns ``(cores used, -1)``, or
    ``(-1, neuron)`` when that neuron alone exceeds a core's synapse memory or fan-in.
    """
    stamp_core = np.full(n_pre, -1, np.int64)
    stamp_tag = np.full(n_pre, -1, np.int64)
    tag = 0
    core = first_core
    n_on, bytes_on, fan_on = 0, 0, 0
    for i in range(lo, hi):
        nbytes = neuron_bytes[i]
        new = _new_axons(i, core, tag, in_ptr, in_pre, stamp_core, stamp_tag)
        tag += 1
        if n_on > 0 and (n_on + 1 > max_neurons or bytes_on + nbytes > max_bytes
                         or fan_on + new > max_fan_in):
            core += 1
            n_on, bytes_on, fan_on = 0, 0, 0
            new = _new_axons(i, core, tag, in_ptr, in_pre, stamp_core, stamp_tag)
            tag += 1
        if nbytes > max_bytes or new > max_fan_in:
            return -1, i
        for k in range(in_ptr[i], in_ptr[i + 1]):
            stamp_core[in_pre[k]] = core
        core_of[i] = core
        n_on += 1
        bytes_on += nbytes
        fan_on += new
    return core - first_core + 1, -1


@njit(cache=True)
def multicast_hops(n_pre, row_ptr, post, core_of, src_core, core_x, core_y, grid_x, chip_w,
                   chip_h, n_cores, hops, chip_hops):
    """Multicast trees with dimension-order (X then Y) routing over the router mesh.

    ``core_x``/``core_y``: the router coordinates of each core on the whole mesh
    (``grid_x`` columns; several chips of ``chip_w x chip_h`` routers extend one mesh, as
    Loihi's off-chip interfaces do). For presynaptic index ``j`` on core ``src_core[j]``
    the packet goes once along the source row in X to every destination column, then
    along each column in Y; shared segments are traversed once (the tree's edges), so
    ``hops[j]`` = X span + sum over destination columns of their Y span. ``chip_hops[j]``
    counts the tree edges that cross a chip boundary (included in ``hops[j]``).
    """
    mark = np.full(n_cores, -1, np.int64)
    col_lo = np.empty(grid_x, np.int64)
    col_hi = np.empty(grid_x, np.int64)
    for j in range(n_pre):
        s = src_core[j]
        sx, sy = core_x[s], core_y[s]
        xmin, xmax = sx, sx
        for c in range(grid_x):
            col_lo[c] = sy
            col_hi[c] = sy
        for k in range(row_ptr[j], row_ptr[j + 1]):
            d = core_of[post[k]]
            if mark[d] == j:
                continue
            mark[d] = j
            dx, dy = core_x[d], core_y[d]
            xmin = min(xmin, dx)
            xmax = max(xmax, dx)
            col_lo[dx] = min(col_lo[dx], dy)
            col_hi[dx] = max(col_hi[dx], dy)
        h = xmax - xmin
        ch = xmax // chip_w - xmin // chip_w
        for c in range(grid_x):
            h += col_hi[c] - col_lo[c]
            ch += col_hi[c] // chip_h - col_lo[c] // chip_h
        hops[j] = h
        chip_hops[j] = ch
