"""Vogels-Abbott CUBA at scale: NeuromorphicDevice vs Brian2 (cpp_standalone, runtime).

For each size N (default 4,000 / 16,000 / 64,000 / 256,000 neurons) the connection
probability is p = 80 / N, so every neuron keeps ~80 targets (4,000 x 0.02 = 80, the Brian2
example). Every simulator runs in its own fresh process, one thread, on the *same* network:
the same connectivity and initial potentials, from ``models.snn_cuba`` (above 16,384
neurons the pairs are skip-sampled, ``model.connectivity``), dt = 0.1 ms, 1 s simulated.

- ``engine``: NeuromorphicDevice, its built-in loop (``kernels.run_builtin``), on a profile
  that holds the network (``loihi`` up to 4,000 neurons, else ``loihi-pohoiki-beach``: the
  64-chip system, see hw_profiles/data);
- ``standalone``: Brian2 ``cpp_standalone`` with Brian2's default g++ flags (-O3
  -ffast-math -fno-finite-math-only -march=native), no OpenMP: the speed anchor;
- ``exact``: the same standalone project built without -ffast-math (-O3 -march=native):
  its floating-point arithmetic is IEEE, as the engine's, so its spikes can be compared
  one for one (-ffast-math lets g++ reassociate the exp/multiply-add chain, and a chaotic
  network turns a last-bit difference into a few different spikes);
- ``runtime`` (``--runtime``): Brian2 runtime mode, cython target.

Timed: the CPU time of the run only. Engine: ``time.process_time`` around ``dev.run``
(after a 1-step warm-up that loads the numba cache). Standalone: ``device._last_run_time``,
which without OpenMP Brian2 measures with ``std::clock()`` around the main loop
(templates/network.cpp), i.e. the process CPU time of the loop alone (no array loading,
no result writing). Runtime: ``time.process_time`` around ``net.run``. Wall times are
printed too; on the shared machine they mostly measure waiting for a core.

Checked in the same run: the spike count of the engine equals that of the exact
standalone build (and of runtime, when run), spike for spike (the same (step, neuron)
pairs); the engine's synop count equals spikes x out-degree. Memory: bytes of the engine's
per-synapse arrays of the run (``col``, ``w``, ``dly``) per synapse, and Brian2's
per-synapse arrays (the ``_synaptic_pre``/``_synaptic_post`` int32 index arrays and the
synapse-to-delay arrays it allocates), from the standalone project's array files.

Memory bound (issue 36): after its run the engine's process measures this machine's
streaming read bandwidth and the time to fetch one randomly placed synapse row (out-degree x
bytes per synapse, from a 256 MB array, one thread); each spike's delivery fetches one such
row, so spikes x that time bounds delivery from below when rows miss the cache. Where the
bound exceeds half of cpp_standalone's time, 2x is impossible for this layout
(``memory_rules_out_2x``); where it does not, the gap is not the memory's.

Second bound, on the neuron updates (issue 36 item 2): every step each neuron's float64
state ``v``, ``ge``, ``gi`` is read and written (48 B; Brian2 does the same, and the engine
also reads its input buffer and refractory step and writes marks: ~89 B with two
channels), so the engine's process also times one single pass over three float64 arrays of
N that reads and writes each element once (:func:`_state_pass`, best of several, the
arrays as warm in the caches as repeated passes make them); steps x that time bounds the
neuron updates from below. ``memory_bound`` = the two bounds added (the engine runs the
neuron pass and delivery one after the other); ``memory_rules_out_2x`` compares it with
half of cpp_standalone's time.

Usage: ``python bench/snn_cuba.py [--sizes 4000,16000] [--duration 1.0] [--runtime]``.
The last line is ``RESULT {json}``: per size the ratio standalone CPU / engine CPU (> 1:
the engine is faster) and whether the spikes matched; ``targets.ge_2x_all`` is the issue's
target (at least 2x at every size).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = (4000, 16000, 64000, 256000)
STATE_BYTES = 48          # v, ge, gi float64, each read and written once per neuron step
OUT_DEGREE = 80
FAST = ["-w", "-O3", "-ffast-math", "-fno-finite-math-only", "-march=native", "-std=c++11"]
EXACT = ["-w", "-O3", "-march=native", "-std=c++11"]


def profile_for(n: int) -> str:
    return "loihi" if n <= 4000 else "loihi-pohoiki-beach"


def _cfg(n: int, duration: float):
    from models.snn_cuba.card import CubaConfig
    return CubaConfig(n=n, p=OUT_DEGREE / n if n != 4000 else 0.02, duration=duration)


def _events(spike_idx, pre, n):
    import numpy as np
    out_degree = np.bincount(pre, minlength=n)
    return int(out_degree[spike_idx].sum())


def _digest(steps, idx) -> str:
    import hashlib

    import numpy as np
    o = np.lexsort((idx, steps))
    pairs = np.stack([np.asarray(steps)[o], np.asarray(idx)[o]]).astype(np.int64)
    return hashlib.sha256(pairs.tobytes()).hexdigest()[:16]


def _state_pass_fn():
    """The single-pass update of three float64 arrays (njit, built on first use so the Brian2
    children never import numba): ``ge *= a``, ``gi *= b``, ``v = c v + ge + gi``, each
    element read and written once: 48 B per neuron, the least any float64 CUBA update
    moves."""
    from numba import njit

    @njit(cache=True)
    def _state_pass(v, ge, gi, a, b, c):
        for i in range(v.size):
            e = a * ge[i]
            g = b * gi[i]
            ge[i] = e
            gi[i] = g
            v[i] = c * v[i] + e + g
    return _state_pass


def state_pass_s(n: int, reps: int = 7, passes: int = 50) -> float:
    """Seconds of CPU time for one :func:`_state_pass_fn` pass over n neurons, the best of
    ``reps`` runs of ``passes`` passes (after a warm-up that compiles or loads it)."""
    import numpy as np
    f = _state_pass_fn()
    v, ge, gi = np.full(n, -55.0), np.full(n, 1.0), np.full(n, -1.0)
    f(v, ge, gi, 0.98, 0.99, 0.995)
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        for _ in range(passes):
            f(v, ge, gi, 0.98, 0.99, 0.995)
        best = min(best, (time.process_time() - t) / passes)
    return best


def memory_rates(row_bytes: int, total_bytes: int = 256 << 20, reps: int = 3) -> dict:
    """This machine's memory, measured here, one thread: streaming read bandwidth (a sum over
    ``total_bytes``, far above the last-level cache) and the time to fetch one randomly
    placed ``row_bytes`` row of that array (``np.take`` of 512 random rows at a time into a
    buffer that stays in cache): what the engine's delivery does for each spike (one
    synapse row of ~80 entries)."""
    import numpy as np
    width = max(1, row_bytes // 8)
    rows = np.ones((total_bytes // (8 * width), width))
    flat = rows.reshape(-1)
    idx = np.random.default_rng(0).integers(0, rows.shape[0], 512 * 200)
    buf = np.empty((512, width))

    def gather():
        for s in range(0, idx.size, 512):
            np.take(rows, idx[s:s + 512], axis=0, out=buf)

    def best(f):
        times = []
        for _ in range(reps):
            t = time.process_time()
            f()
            times.append(time.process_time() - t)
        return min(times)
    return {"stream_read_bytes_per_s": flat.nbytes / best(flat.sum),
            "random_row_s": best(gather) / idx.size, "row_bytes": 8 * width}


def run_engine(n: int, duration: float, profile: str) -> dict:
    from models import runner
    from models.snn_cuba.model import build, connectivity
    cfg = _cfg(n, duration)
    t0 = time.perf_counter()
    net = build(cfg)
    dev = runner.device_for(runner.method_of("snn_cuba"), profile)
    c = dev.compile(net)
    t1 = time.perf_counter()
    warm = dev.run(1, scope="warmup")   # numba: load the cached machine code (or JIT)
    t2 = time.perf_counter()
    n_steps = int(round(duration / cfg.dt))
    c0 = time.process_time()
    res = dev.run(n_steps)
    cpu = time.process_time() - c0
    t3 = time.perf_counter()
    import numpy as np
    st, idx, _ = res.spikes["cuba"]
    pre, _ = connectivity(cfg)
    events = _events(idx, pre, cfg.n)       # of the timed run: its synop count must match
    # the compared trains: steps 0 .. n_steps-1, as Brian2 standalone runs them (the
    # warm-up is step 0; the timed run's last step, n_steps, has no Brian2 counterpart)
    st = np.concatenate([warm.spikes["cuba"][0], st])
    idx = np.concatenate([warm.spikes["cuba"][1], idx])
    keep = st < n_steps
    st, idx = st[keep], idx[keep]
    syn_bytes = c.col.nbytes + c.w.nbytes + c.dly.nbytes
    # the memory bound, measured in the same process after the run: every spike fetches
    # its synapse row (out-degree x bytes per synapse) from a random place, so delivery
    # alone takes at least spikes x (one random row fetch) when rows miss the cache
    mem = memory_rates(int(round(syn_bytes / cfg.n)))   # bytes of one neuron's row
    # and the neuron updates: steps x one pass over the float64 state v, ge, gi
    mem["state_pass_s"] = state_pass_s(cfg.n)
    return {"sim": "engine", "build_s": t1 - t0, "jit_s": t2 - t1, "run_s": t3 - t2,
            "run_cpu_s": cpu, "spikes": int(idx.size), "digest": _digest(st, idx),
            "events": events, "synop_counted": res.counts.get("synop", 0),
            "synapses": int(c.w.size), "bytes_per_synapse": syn_bytes / max(1, c.w.size),
            "row_bytes": c.row_ptr.nbytes, "cores": c.n_cores,
            "chip_hops": res.counts.get("chip_hop", 0), "hops": res.counts.get("hop", 0),
            "rate_hz": idx.size / (cfg.n * duration), "memory": mem,
            "delivery_bound_cpu_s": idx.size * mem["random_row_s"],
            "state_bound_cpu_s": n_steps * mem["state_pass_s"]}


def run_brian2(n: int, duration: float, mode: str) -> dict:
    import brian2 as b2
    import numpy as np

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
        connectivity,
    )
    from sim import seeds
    cfg = _cfg(n, duration)
    pre, post = connectivity(cfg)
    rng = seeds.rng(cfg.seed, "v_init")     # the engine's initial potentials (model.py)
    v0 = VR + rng.random(cfg.n) * (VT - VR)
    workdir = tempfile.mkdtemp(prefix="cuba_standalone_")
    standalone = mode in ("standalone", "exact")
    if standalone:
        b2.set_device("cpp_standalone", directory=workdir, build_on_run=False)
        b2.prefs.codegen.cpp.extra_compile_args_gcc = FAST if mode == "standalone" else EXACT
    else:
        b2.prefs.codegen.target = "cython"
    mV = b2.mV
    b2.defaultclock.dt = cfg.dt * b2.second
    eqs = """dv/dt  = (ge+gi-(v-El))/taum : volt (unless refractory)
             dge/dt = -ge/taue : volt
             dgi/dt = -gi/taui : volt"""
    ns = {"taum": TAUM * b2.second, "taue": TAUE * b2.second, "taui": TAUI * b2.second,
          "El": EL * mV, "Vt": VT * mV, "Vr": VR * mV, "we": WE * mV, "wi": WI * mV}
    P = b2.NeuronGroup(cfg.n, eqs, threshold="v>Vt", reset="v = Vr",
                       refractory=REFRACTORY * b2.second, method="exact", namespace=ns)
    P.v = v0 * mV
    P.ge, P.gi = 0 * mV, 0 * mV
    n_exc = cfg.n * 4 // 5
    exc = pre < n_exc
    Ce = b2.Synapses(P, P, on_pre="ge += we", namespace=ns)
    Ci = b2.Synapses(P, P, on_pre="gi += wi", namespace=ns)
    Ce.connect(i=pre[exc], j=post[exc])
    Ci.connect(i=pre[~exc], j=post[~exc])
    s_mon = b2.SpikeMonitor(P)
    net = b2.Network(P, Ce, Ci, s_mon)
    out = {"sim": mode}
    if standalone:
        t0 = time.perf_counter()
        net.run(duration * b2.second)
        b2.device.build(directory=workdir, compile=True, run=True, debug=False)
        total = time.perf_counter() - t0
        # Network::run times its loop with std::clock() (process CPU time) when OpenMP
        # is off: the main loop alone, no loading of arrays, no writing of results
        cpu = float(b2.device._last_run_time)
        out.update(build_s=total, jit_s=0.0, run_s=float("nan"), run_cpu_s=cpu)
        syn = sum(p.stat().st_size for p in (Path(workdir) / "results").iterdir()
                  if "synapses" in p.name and ("_synaptic_" in p.name or "delay" in p.name
                                               or "_N_" in p.name))
        out["brian_syn_bytes"] = syn
    else:
        t0 = time.perf_counter()
        net.run(cfg.dt * b2.second)     # code generation + cython compile (or cache load)
        t1 = time.perf_counter()
        c0 = time.process_time()
        net.run(duration * b2.second)
        cpu = time.process_time() - c0
        out.update(build_s=t1 - t0, jit_s=0.0, run_s=time.perf_counter() - t1, run_cpu_s=cpu)
    idx = np.asarray(s_mon.i, np.int64)
    steps = np.round(np.asarray(s_mon.t / b2.second) / cfg.dt).astype(np.int64)
    if not standalone:
        # the warm-up step is step 0 of the same trajectory: compare steps 0 .. n-1
        keep = steps < int(round(duration / cfg.dt))
        idx, steps = idx[keep], steps[keep]
    out.update(spikes=int(idx.size), digest=_digest(steps, idx),
               events=_events(idx, pre, cfg.n), synapses=int(pre.size),
               rate_hz=idx.size / (cfg.n * duration))
    if standalone and out.get("brian_syn_bytes"):
        out["bytes_per_synapse"] = out.pop("brian_syn_bytes") / max(1, pre.size)
    return out


def _child(mode: str, n: int, duration: float, profile: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--n", str(n),
                          "--duration", str(duration), "--profile", profile],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    lines = [line for line in out.stdout.splitlines() if line.startswith("CHILD ")]
    if out.returncode != 0 or not lines:
        return {"sim": mode, "error": (out.stderr or out.stdout)[-800:]}
    return json.loads(lines[-1][6:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--duration", type=float, default=1.0, help="simulated seconds")
    ap.add_argument("--runtime", action="store_true", help="also run Brian2 runtime (cython)")
    ap.add_argument("--profile", default=None, help="engine profile (default: by size)")
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.child == "engine":
            r = run_engine(args.n, args.duration, args.profile)
        else:
            r = run_brian2(args.n, args.duration, args.child)
        print("CHILD " + json.dumps(r))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    modes = ["engine", "standalone", "exact"] + (["runtime"] if args.runtime else [])
    print(f"Vogels-Abbott CUBA, ~{OUT_DEGREE} synapses per neuron, dt = 0.1 ms, "
          f"{args.duration:g} s simulated, one thread each; CPU s/sim s = CPU time of the run "
          "(standalone: its main loop, std::clock) per simulated second")
    print(f"{'N':>8} {'simulator':<11}{'CPU s/sim s':>12}{'build s':>9}{'spikes':>9}"
          f"{'rate Hz':>9}{'B/synapse':>10}  notes")
    result = {"duration_s": args.duration, "out_degree": OUT_DEGREE, "sizes": {}}
    for n in sizes:
        prof = args.profile or profile_for(n)
        rows = {m: _child(m, n, args.duration, prof) for m in modes}
        for m, r in rows.items():
            if "error" in r:
                print(f"{n:>8} {m:<11} failed: {r['error']}")
                continue
            note = f"profile {prof}, {r['cores']} cores" if m == "engine" else ""
            bps = r.get("bytes_per_synapse")
            print(f"{n:>8} {m:<11}{r['run_cpu_s'] / args.duration:>12.4f}"
                  f"{r['build_s']:>9.1f}{r['spikes']:>9d}{r['rate_hz']:>9.3f}"
                  f"{(f'{bps:.1f}' if bps else '-'):>10}  {note}")
        eng = rows["engine"]
        entry = {"profile": prof}
        if "error" not in eng:
            entry.update(engine_cpu_per_sim_s=eng["run_cpu_s"] / args.duration,
                         engine_spikes=eng["spikes"], synapses=eng["synapses"],
                         engine_bytes_per_synapse=eng["bytes_per_synapse"],
                         synop_equals_events=eng["synop_counted"] == eng["events"],
                         cores=eng["cores"], chip_hops=eng["chip_hops"])
            mem = eng["memory"]
            entry.update(memory=mem, delivery_bound_cpu_per_sim_s=eng["delivery_bound_cpu_s"]
                         / args.duration,
                         state_bound_cpu_per_sim_s=eng["state_bound_cpu_s"] / args.duration)
            entry["memory_bound_cpu_per_sim_s"] = (entry["delivery_bound_cpu_per_sim_s"]
                                                   + entry["state_bound_cpu_per_sim_s"])
            print(f"{n:>8} memory, measured here: stream read "
                  f"{mem['stream_read_bytes_per_s'] / 1e9:.1f} GB/s, one random "
                  f"{mem['row_bytes']} B synapse row {mem['random_row_s'] * 1e9:.0f} ns; "
                  f"delivery bound {entry['delivery_bound_cpu_per_sim_s']:.4f} CPU s/sim s "
                  f"({eng['spikes']} spikes x one row each); neuron-state bound "
                  f"{entry['state_bound_cpu_per_sim_s']:.4f} (one {STATE_BYTES} B/neuron pass "
                  f"{mem['state_pass_s'] * 1e6:.1f} us x steps)")
        for m in modes[1:]:
            r = rows[m]
            if "error" in r or "error" in eng:
                entry[f"speedup_vs_{m}"] = None
                continue
            entry[f"{m}_cpu_per_sim_s"] = r["run_cpu_s"] / args.duration
            entry[f"speedup_vs_{m}"] = r["run_cpu_s"] / eng["run_cpu_s"]
            entry[f"{m}_spikes"] = r["spikes"]
            entry[f"same_spikes_{m}"] = r["digest"] == eng["digest"]
            if r.get("bytes_per_synapse"):
                entry[f"{m}_bytes_per_synapse"] = r["bytes_per_synapse"]
            if m == "standalone" and "memory_bound_cpu_per_sim_s" in entry:
                # 2x is ruled out by memory only if the bound exceeds half the anchor's time
                half = entry["standalone_cpu_per_sim_s"] / 2
                entry["memory_rules_out_2x"] = entry["memory_bound_cpu_per_sim_s"] > half
                print(f"{n:>8} 2x standalone = {half:.4f} CPU s/sim s; the memory bound "
                      f"{'rules it out' if entry['memory_rules_out_2x'] else 'allows it'}")
            print(f"{n:>8} engine vs {m}: {entry[f'speedup_vs_{m}']:.2f}x less CPU time; "
                  f"spikes {eng['spikes']} vs {r['spikes']} "
                  f"({'identical' if entry[f'same_spikes_{m}'] else 'differ'})")
        result["sizes"][str(n)] = entry
    ok = [e.get("speedup_vs_standalone") or 0 for e in result["sizes"].values()]
    result["targets"] = {"ge_2x_all": bool(ok) and min(ok) >= 2.0,
                         "exact_spikes_all": all(e.get("same_spikes_exact", False)
                                                 for e in result["sizes"].values())}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
