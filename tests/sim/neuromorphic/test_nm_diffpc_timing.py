"""Acceptance (issue 13): DiffPC's neuromorphic latency is the slowest core's time per step
plus the barrier, summed over steps -- checked against a naive twin on a toy chip.

The twin rebuilds every step's per-core work from the spikes the engine returned and the
weights in force during that batch (plain numpy loops, no kernel): a neuron is active when
its summed input on a channel is non-zero or it spikes; synops go to the target's core, a
spike to its sender's core. DiffPC spikes arrive one step after they are sent (delay 1).
"""
import numpy as np
import pytest

import sim
from models.diffpc.card import DiffPCConfig
from models.diffpc.model import DiffPCClassifier
from tests.sim.neuromorphic.timing_toy import toy_chip

NS = 1e-9
TAU = {"synop": 1.0, "active": 10.0, "idle": 2.0, "spike": 5.0}   # toy_chip, ns
BARRIER = 100.0


def _naive_batch_ns(c, w, res):
    """Sum over the batch's steps of (slowest core's work + barrier), in ns."""
    N, n_cores = c.n_neurons, c.n_cores
    sent = {}                                  # step -> [(global index, payload)]
    for name, (st, ix, pl) in res.spikes.items():
        lo = c.offsets[name][0]
        for s, i, p in zip(st.tolist(), ix.tolist(), pl.tolist(), strict=True):
            sent.setdefault(s, []).append((lo + i, p))
    total = 0.0
    for t in range(res.t0, res.t0 + res.n_steps):
        work = np.zeros(n_cores)
        inp = np.zeros(c.C * N)
        for j, p in sent.get(t - 1, []):       # spikes of step t-1 arrive now
            for k in range(c.row_ptr[j], c.row_ptr[j + 1]):
                inp[c.col[k]] += w[k] * p
        fired = {j for j, _ in sent.get(t, [])}
        for i in range(N):
            active = any(inp[ch * N + i] != 0.0 for ch in range(c.C)) or i in fired
            work[c.core_of[i]] += TAU["active"] if active else TAU["idle"]
        for j, _ in sent.get(t, []):
            work[c.core_of[j]] += TAU["spike"]
            for k in range(c.row_ptr[j], c.row_ptr[j + 1]):
                work[c.core_of[c.col[k] % N]] += TAU["synop"]
        total += work.max() + BARRIER
    return total


def test_diffpc_latency_is_slowest_core_plus_barrier_per_step():
    # 4-3-2 network, batch 1: h1 = 2 x 3 = 6 two-compartment rows on 2 cores (4 per core),
    # h2 = 2 x 2 = 4 rows on a third core; n = 4 steps per cycle needs 5-bit payloads
    prof = toy_chip(neurons_per_core=4, payload_bits=8, fan_in=16, synapse_bytes=256)
    cfg = DiffPCConfig(hidden=(3,), n=4, cycles=2, epochs=1, batch_size=1, seed=3)
    dev = sim.device(prof)
    model = DiffPCClassifier(4, 2, cfg, dev)
    assert dev.compiled.n_cores == 3
    batches = []
    run = dev.run

    def recording_run(n_steps, scope="run", **kw):
        w = dev.compiled.w.copy()              # the weights in force during this batch
        res = run(n_steps, scope=scope, **kw)
        batches.append((w, res))
        return res
    dev.run = recording_run
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (3, 4))
    y = np.array([0, 1, 0])
    model.fit(x, y)
    assert len(batches) == 3                    # 3 samples / batch 1, cfg.steps = 8 each
    spikes = sum(r.spikes["h1"][0].size + r.spikes["h2"][0].size for _, r in batches)
    assert spikes > 0                           # the network did send spikes
    expected = sum(_naive_batch_ns(dev.compiled, w, r) for w, r in batches) * NS
    rec = dev.ledger.timing("train")
    assert rec.steps == 3 * 8
    assert rec.step_s == pytest.approx(expected, rel=1e-12)
    assert dev.report().latency_s["train"] == pytest.approx(expected, rel=1e-12)
    # the slowest core's work alone: the same sum without the 100 ns barrier of each of
    # the 24 steps (and not the old chip-wide figure, the work divided over the cores)
    assert rec.work_s == pytest.approx(expected - 3 * 8 * BARRIER * NS, rel=1e-12)
