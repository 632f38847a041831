"""Where the event engine's CPU time goes on Vogels-Abbott CUBA (issue 36 item 2).

Runs the network of ``bench/snn_cuba.py`` (same sizes, connectivity, profiles) for a short
stretch twice from the same state: once through ``NeuromorphicDevice.run`` (the CPU time
that the bench reports) and once through :func:`_run_timed`, a copy of
``kernels.run_builtin``'s step loop for this network (one uniform CUBA population, one
delay) that calls the same kernels and reads the processor's cycle counter
(``llvm.readcyclecounter``: rdtsc, constant rate) around each phase of a step: the fused
neuron pass (``_cuba_fused``), the per-core neuron tally (``_tally_runs``), delivery
(``_deliver_cols``) and the end-of-step reduction (``_end_cols``). The copy's spikes are
checked against the engine's (``same_spikes``); each phase's share of the counted cycles,
times the engine's CPU time, is its CPU time per simulated second.

Usage: ``python bench/snn_cuba_profile.py [--sizes 4000,64000] [--steps 1000]``. Last
line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.neuromorphic import kernels as K  # noqa: E402

PHASES = ("neuron_pass", "tally", "delivery", "end_of_step")


@intrinsic
def _cycles(typingctx):
    """The processor's cycle counter (rdtsc on x86: a constant rate, wall time)."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(64), []), "llvm.readcyclecounter")
        return builder.call(fn, [])
    return types.int64(), codegen


@njit(cache=True)
def _run_timed(t0, t1, lo, hi, nch, row0, D, v, I, ref, av, bv, kin, thr, vreset, rmode,  # noqa: E741 (I: synaptic current, NIR's name)
               refsteps, aI, gI, kI, inj, inbuf, Ip, payload, zeros, mark, spk_list, nspk,
               row_ptr, col, w, dly, sdir, gcol, hops, entry_bytes, counts, nbytes, spk_t,
               spk_i, spk_p, spk_n, core_row, R, n_ops, tau, sync, stats, cyc):
    """``run_builtin``'s steps for one fused CUBA population [lo, hi) and one delay, the
    same kernel calls in the same order (its per-call tables built as it builds them), with
    the cycles of each phase added into ``cyc``."""
    n_neurons = v.size
    ct = np.zeros((n_ops, R), np.int64)
    tt = np.zeros((n_ops, R), np.int64)
    sb = np.zeros(R)
    bits = np.zeros(1, np.int64)
    syn_row, d0, mode, gch = K.syn_tables(col, dly, sdir, gcol, core_row, n_neurons,
                                          I.shape[0])
    words = mark.view(np.uint64)
    run_row = np.zeros(n_neurons, np.int64)
    run_n = np.zeros(n_neurons, np.int64)
    run_end = np.zeros(n_neurons, np.int64)
    n_runs = K.core_runs(core_row, lo, hi, run_row, run_n, run_end, 0)
    for t in range(t0, t1):
        c0 = _cycles()
        K._cuba_fused(t, t % D, lo, hi, nch, row0, v, I, ref, av, bv, kin, thr, vreset,
                      rmode, refsteps, aI, gI, kI, inj, False, d0 != 1, t + 1 == t1, inbuf, Ip,
                      payload, zeros, mark, words, spk_list, nspk)
        c1 = _cycles()
        K._tally_runs(words, lo, 0, n_runs, run_end, run_n, run_row, ct)
        c2 = _cycles()
        K._deliver_cols(t, D, payload, spk_list, nspk, row_ptr, col, w, dly, sdir, gcol,
                        hops, entry_bytes, inbuf, Ip, mark, counts, nbytes, spk_t, spk_i,
                        spk_p, spk_n, 0, 1, 2, core_row, syn_row, d0, mode, gch, ct,
                        K.PREFETCH_AHEAD)
        c3 = _cycles()
        K._end_cols(ct, tt, tau, sync, stats, sb, bits)
        c4 = _cycles()
        cyc[0] += c1 - c0
        cyc[1] += c2 - c1
        cyc[2] += c3 - c2
        cyc[3] += c4 - c3


def profile(n: int, steps: int) -> dict:
    from bench.snn_cuba import _cfg, profile_for
    from models import runner
    from models.snn_cuba.model import build
    cfg = _cfg(n, steps * 1e-4)
    dev = runner.device_for(runner.method_of("snn_cuba"), profile_for(n))
    c = dev.compile(build(cfg))
    dev.run(1, scope="warmup")
    state = {k: getattr(dev, k).copy()
             for k in ("v", "I", "ref", "_inbuf", "_Ip", "_mark", "payload")}
    (lo, hi), = c.offsets.values()
    if len(c.offsets) != 1 or np.unique(c.dly).size != 1 or dev.inj.any():
        raise SystemExit("snn_cuba_profile: expected one population, one delay, no injection")
    t0 = dev.t
    c0 = time.process_time()
    res = dev.run(steps)
    cpu = time.process_time() - c0
    for k, a in state.items():                  # the same start, for the timed copy
        getattr(dev, k)[...] = a
    dev.nspk[:] = 0
    cap = dev.payload.size + 2 * res.spikes["cuba"][0].size
    spk_t, spk_i = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
    spk_p, spk_n = np.zeros(cap, np.int32), np.zeros(1, np.int64)
    clk = dev.clock
    clk.start()
    co = c.coeff
    cyc = np.zeros(4, np.int64)
    args = (t0, t0 + steps, lo, hi, dev._pop_nch[0], co["row0"][0], c.D, dev.v, dev.I,
            dev.ref, co["av"], co["bv"], co["kin"], co["thr"], co["vreset"], co["rmode"],
            co["refsteps"], co["aI"], co["gI"], co["kI"], dev.inj, dev._inbuf, dev._Ip,
            dev.payload, dev.zeros, dev._mark, dev.spk_list, dev.nspk, c.row_ptr, c.col, c.w,
            c.dly, dev._sdir, dev._gcol_flat, c.hops, c.entry_bytes, np.zeros(8, np.int64),
            np.zeros(1, np.int64), spk_t, spk_i, spk_p, spk_n, dev.core_row, clk.tot.shape[0],
            clk.tot.shape[1], clk.tau, clk.sync, clk.stats)
    _run_timed(*args, cyc)
    same = bool(np.array_equal(spk_i[:spk_n[0]], res.spikes["cuba"][1])
                and np.array_equal(spk_t[:spk_n[0]], res.spikes["cuba"][0]))
    share = cyc / cyc.sum()
    per_sim_s = cpu / (steps * cfg.dt)
    events = res.counts.get("synop", 0)
    return {"steps": steps, "engine_cpu_per_sim_s": per_sim_s, "same_spikes": same,
            "spikes": int(res.spikes["cuba"][0].size), "synaptic_events": int(events),
            "share": dict(zip(PHASES, share.round(4).tolist(), strict=True)),
            "cpu_per_sim_s": dict(zip(PHASES, (share * per_sim_s).round(4).tolist(),
                                      strict=True)),
            "cycles_per_neuron_step": float(cyc[0] / (steps * n)),
            "cycles_per_synaptic_event": float(cyc[2] / max(1, events))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4000,16000,64000,256000")
    ap.add_argument("--steps", type=int, default=1000, help="steps of 0.1 ms profiled")
    args = ap.parse_args()
    out = {}
    for n in (int(s) for s in args.sizes.split(",")):
        r = profile(n, args.steps)
        out[str(n)] = r
        print(f"{n:>7} engine {r['engine_cpu_per_sim_s']:.4f} CPU s/sim s; "
              + ", ".join(f"{p} {r['cpu_per_sim_s'][p]:.4f} ({100 * r['share'][p]:.0f}%)"
                          for p in PHASES)
              + f"; {r['cycles_per_neuron_step']:.2f} cycles/neuron step, "
              f"{r['cycles_per_synaptic_event']:.1f} cycles/synaptic event (rdtsc); "
              f"spikes same as the engine's: {r['same_spikes']}", flush=True)
    print("RESULT " + json.dumps({"steps": args.steps, "sizes": out}))


if __name__ == "__main__":
    main()
