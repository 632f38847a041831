"""Vogels-Abbott CUBA (4000 neurons, p = 0.02, dt = 0.1 ms): NeuromorphicDevice vs Brian2.

Three simulators, each in its own fresh process, on the *same* network (the same
connectivity and the same initial potentials, from ``models.snn_cuba``):

- ``engine``: NeuromorphicDevice on the loihi profile (one thread);
- ``runtime``: Brian2 runtime mode, cython code generation (one thread);
- ``standalone``: Brian2 ``cpp_standalone`` (g++ -O3 as Brian2 configures it, no OpenMP).

Printed for each: CPU time and wall time per simulated second (run only; the ratios use
CPU time, because on the shared 2-core machine wall time mostly measures waiting for a
core), synaptic events per CPU second (spikes x out-degree / run CPU time), build/JIT
time apart (engine: compile + numba cache load or JIT; Brian2 runtime: code generation +
cython compile/cache load in the first 1-step run; standalone: code generation + g++), and
the mean firing rate, which must agree across the three (the trajectories are chaotic, so
spike trains differ in detail; the rate is the statistic). Brian2 uses its example's own
equations and default schedule.

Usage: ``python bench/snn_cuba.py [--duration 1.0] [--skip-standalone]``. The last line is
``RESULT {json}`` with the ratios (> 1 means the engine is faster).
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


def _events(spike_idx, pre, n):
    import numpy as np
    out_degree = np.bincount(pre, minlength=n)
    return int(out_degree[spike_idx].sum())


def run_engine(duration: float) -> dict:
    # build, compile, JIT and run are timed apart, so the steps of the card's simulate are
    # taken one by one here; the device still comes from the runner (profile -> engine)
    from models import runner
    from models.snn_cuba.model import build, connectivity
    cfg = runner.make_config("snn_cuba", "full", "va-cuba", 0, {"duration": duration})
    t0 = time.perf_counter()
    net = build(cfg)
    dev = runner.device_for(runner.method_of("snn_cuba"), "loihi")
    dev.compile(net)
    t1 = time.perf_counter()
    dev.run(1, scope="warmup")          # numba: load the cached machine code (or JIT)
    t2 = time.perf_counter()
    n_steps = int(round(duration / cfg.dt))
    c0 = time.process_time()
    res = dev.run(n_steps)
    cpu = time.process_time() - c0
    t3 = time.perf_counter()
    idx = res.spikes["cuba"][1]
    pre, _ = connectivity(cfg)
    return {"sim": "engine", "build_s": t1 - t0, "jit_s": t2 - t1, "run_s": t3 - t2,
            "run_cpu_s": cpu,
            "spikes": int(idx.size), "events": _events(idx, pre, cfg.n),
            "synop_counted": res.counts.get("synop", 0),
            "rate_hz": idx.size / (cfg.n * duration)}


def run_brian2(duration: float, standalone: bool) -> dict:
    import brian2 as b2
    import numpy as np

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
        connectivity,
    )
    cfg = CubaConfig(duration=duration)
    pre, post = connectivity(cfg)
    rng = np.random.default_rng(cfg.seed + 1)     # the engine's initial potentials
    v0 = VR + rng.random(cfg.n) * (VT - VR)
    workdir = tempfile.mkdtemp(prefix="cuba_standalone_")
    if standalone:
        b2.set_device("cpp_standalone", directory=workdir, build_on_run=False)
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
    if standalone:
        import resource
        t0 = time.perf_counter()
        net.run(duration * b2.second)
        b2.device.build(directory=workdir, compile=True, run=True, debug=False)
        total = time.perf_counter() - t0
        run_s = float(b2.device._last_run_time)   # wall time of the C++ main loop
        build_s, jit_s = total - run_s, 0.0
        # CPU time of the whole binary (load + loop + write), run once more by itself
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        binary = "./main.exe" if os.name == "nt" else "./main"
        subprocess.run([binary], cwd=workdir, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    else:
        t0 = time.perf_counter()
        net.run(cfg.dt * b2.second)     # code generation + cython compile (or cache load)
        t1 = time.perf_counter()
        c0 = time.process_time()
        net.run(duration * b2.second)
        cpu = time.process_time() - c0
        run_s = time.perf_counter() - t1
        build_s, jit_s = t1 - t0, 0.0
    idx = np.asarray(s_mon.i, np.int64)
    if not standalone:
        idx = idx[np.asarray(s_mon.t / b2.second) >= cfg.dt]  # drop the 1-step warm-up
    return {"sim": "standalone" if standalone else "runtime", "build_s": build_s,
            "jit_s": jit_s, "run_s": run_s, "run_cpu_s": cpu, "spikes": int(idx.size),
            "events": _events(idx, pre, cfg.n), "rate_hz": idx.size / (cfg.n * duration)}


def _child(mode: str, duration: float) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--duration",
                          str(duration)], capture_output=True, text=True, env=env,
                         cwd=ROOT)
    lines = [line for line in out.stdout.splitlines() if line.startswith("CHILD ")]
    if out.returncode != 0 or not lines:
        return {"sim": mode, "error": (out.stderr or out.stdout)[-800:]}
    return json.loads(lines[-1][6:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=1.0, help="simulated seconds")
    ap.add_argument("--skip-standalone", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.child == "engine":
            r = run_engine(args.duration)
        else:
            r = run_brian2(args.duration, standalone=args.child == "standalone")
        print("CHILD " + json.dumps(r))
        return
    modes = ["engine", "runtime"] + ([] if args.skip_standalone else ["standalone"])
    rows = {m: _child(m, args.duration) for m in modes}
    print(f"Vogels-Abbott CUBA, 4000 neurons, p=0.02, dt=0.1 ms, {args.duration:g} s "
          "simulated, one thread each")
    print("CPU s/sim s = CPU time of the run per simulated second (the comparison: on a "
          "shared machine wall time also counts waiting for a core); Mevents/s per CPU s")
    print(f"{'simulator':<12}{'CPU s/sim s':>12}{'wall s/sim s':>14}{'Mevents/s':>11}"
          f"{'build s':>9}{'JIT s':>7}{'rate Hz':>9}{'spikes':>9}")
    for m, r in rows.items():
        if "error" in r:
            print(f"{m:<12} failed: {r['error']}")
            continue
        r["wall_per_sim_s"] = r["run_s"] / args.duration
        r["cpu_per_sim_s"] = r["run_cpu_s"] / args.duration
        r["events_per_s"] = r["events"] / r["run_cpu_s"]
        print(f"{m:<12}{r['cpu_per_sim_s']:>12.3f}{r['wall_per_sim_s']:>14.3f}"
              f"{r['events_per_s'] / 1e6:>11.2f}{r['build_s']:>9.2f}{r['jit_s']:>7.2f}"
              f"{r['rate_hz']:>9.3f}{r['spikes']:>9d}")
    eng = rows["engine"]
    result = {"duration_s": args.duration, "engine_cpu_per_sim_s": eng.get("cpu_per_sim_s"),
              "engine_wall_per_sim_s": eng.get("wall_per_sim_s")}
    for m in modes[1:]:
        r = rows[m]
        if "error" in r or "error" in eng:
            result[f"speedup_vs_{m}"] = None
            continue
        result[f"speedup_vs_{m}"] = r["run_cpu_s"] / eng["run_cpu_s"]
        result[f"wall_speedup_vs_{m}"] = r["run_s"] / eng["run_s"]
        result[f"rate_ratio_{m}"] = eng["rate_hz"] / r["rate_hz"]
        print(f"engine vs brian2 {m}: {result[f'speedup_vs_{m}']:.2f}x less CPU time (run "
              f"only; wall {result[f'wall_speedup_vs_{m}']:.2f}x); rate ratio "
              f"{result[f'rate_ratio_{m}']:.3f}")
    if "error" not in eng:
        result["engine_rate_hz"] = eng["rate_hz"]
        result["engine_synop_equals_events"] = eng["synop_counted"] == eng["events"]
    result["targets"] = {"vs_runtime_ge_5x": (result.get("speedup_vs_runtime") or 0) >= 5,
                         "vs_standalone_ge_1x": (result.get("speedup_vs_standalone") or 0) >= 1}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
