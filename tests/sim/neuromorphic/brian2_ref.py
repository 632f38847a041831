"""The same networks in Brian2 (an independent simulator), for the agreement tests.

Integration scheme stated on the Brian2 side so that it is the engine's (network.py):
the network schedule puts ``synapses`` before ``groups``, so the spikes arriving in a step
are added before the state update (the engine's "input first" order); a spike emitted in
step ``s`` is pushed in step ``s + 1``, so a Brian2 delay of ``d - 1`` steps is the
engine's delay ``d``. LIF input is a per-step variable ``x`` summed by the synapses and
cleared at the end of each step (the engine's ``x_0[t]``); CUBA-LIF currents jump by
``(dt/tau_syn) w_in w`` per spike. ``method`` is ``'euler'`` or ``'exact'`` as in the engine.
"""
from __future__ import annotations

import numpy as np


def run_brian2(net, compiled, n_steps: int, target: str = "numpy"):
    """Run ``net`` (a sim.neuromorphic.Network) in Brian2; return name -> (steps, index)."""
    import brian2 as b2
    b2.prefs.codegen.target = target
    dt = net.dt
    b2.defaultclock.dt = dt * b2.second
    objs, groups, monitors = [], {}, {}
    for name, pop in net.populations.items():
        P = pop.params
        ref = float(np.round(P["refractory"][0] / dt)) * dt
        if pop.model == "lif":
            eqs = """dv/dt = (v_leak - v + r*x)/tau_mem : 1 (unless refractory)
                     x : 1
                     v_leak : 1 (constant)
                     r : 1 (constant)
                     tau_mem : second (constant)
                     v_th : 1 (constant)
                     v_r : 1 (constant)"""
        else:
            terms = " + ".join(f"I{c}" for c in range(pop.n_channels))
            eqs = f"dv/dt = (v_leak - v + r*({terms}))/tau_mem : 1 (unless refractory)\n"
            for c in range(pop.n_channels):
                eqs += f"dI{c}/dt = -I{c}/tau_s{c} : 1\ntau_s{c} : second (constant)\n"
            eqs += """v_leak : 1 (constant)
                      r : 1 (constant)
                      tau_mem : second (constant)
                      v_th : 1 (constant)
                      v_r : 1 (constant)"""
        reset = "v = v_r" if pop.reset == "value" else "v -= v_th - v_r"
        g = b2.NeuronGroup(pop.n, eqs, threshold="v > v_th", reset=reset,
                           refractory=ref * b2.second, method=pop.method, name=name)
        g.v_leak, g.r = P["v_leak"], P["r"]
        g.tau_mem = P["tau_mem"] * b2.second
        g.v_th, g.v_r = P["v_threshold"], P["v_reset"]
        g.v = P.get("v_init", P["v_reset"])
        if pop.model == "lif":
            objs.append(g.run_regularly("x = 0", when="end"))
        else:
            for c in range(pop.n_channels):
                setattr(g, f"tau_s{c}", P[f"tau_syn{c}"] * b2.second)
        groups[name] = g
        objs.append(g)
    for name, src in net.sources.items():
        g = b2.SpikeGeneratorGroup(src.n, src.index, src.steps * dt * b2.second, name=name)
        groups[name] = g
        objs.append(g)
    for k, proj in enumerate(net.projections.values()):
        post = net.populations[proj.post]
        if post.model == "lif":
            on_pre = "x_post += w"
        else:
            c = proj.channel
            on_pre = f"I{c}_post += w * g_in"
        s = b2.Synapses(groups[proj.pre], groups[proj.post],
                        "w : 1\ng_in : 1" if post.model != "lif" else "w : 1",
                        on_pre=on_pre, name=f"syn{k}")
        s.connect(i=proj.pre_idx, j=proj.post_idx)
        s.w = compiled.weights_of(proj.name)
        if post.model != "lif":
            P = post.params
            s.g_in = dt / P[f"tau_syn{proj.channel}"][proj.post_idx] * P["w_in"][proj.post_idx]
        s.delay = (proj.delay - 1) * dt * b2.second
        objs.append(s)
    for name in net.populations:
        monitors[name] = b2.SpikeMonitor(groups[name])
        objs.append(monitors[name])
    bnet = b2.Network(*objs)
    bnet.schedule = ["start", "synapses", "groups", "thresholds", "resets", "end"]
    bnet.run(n_steps * dt * b2.second)
    return {name: (np.round(np.asarray(m.t / b2.second) / dt).astype(np.int64),
                   np.asarray(m.i, np.int64)) for name, m in monitors.items()}
