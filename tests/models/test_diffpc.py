"""DiffPC: Theorem 4.1, closeness to float PC, digits accuracy, counts, bad input."""
import numpy as np
import pytest
import torch

from hw_profiles.errors import ModelError
from models.diffpc import (
    KERNEL,
    PARAMS,
    STATE,
    DiffPCConfig,
    DiffPCNetwork,
    diffpc_update,
    simulate,
)
from models.pc import PCNet
from sim.neuromorphic import NeuromorphicDevice


def _params(h, n, m, gamma=0.0, clamped=0.0, emit_err=1.0, sched=0, a=1.0, T_iter=None,
            c=0.01):
    vals = {"gamma": gamma, "ncyc": n, "m": m, "clamped": clamped, "emit_err": emit_err,
            "sched": sched, "a": a, "T_iter": T_iter or n, "c": c}
    return np.array([[vals[p]] * 2 * h for p in PARAMS], float)


@pytest.mark.parametrize("seed", range(5))
def test_one_cycle_meets_theorem_4_1(seed):
    # |xT - xA| < 2^(m+1), xT > 0 and fixed in the cycle => after n steps < 2^(m+1-n);
    # the error compartment (eT fixed: no input) obeys the same bound
    rng = np.random.default_rng(seed)
    h = 500
    for n in (1, 3, 6, 10):
        m = int(rng.integers(-3, 3))
        state = np.zeros((len(STATE), 2 * h))
        xT = rng.uniform(1e-3, 3.0, h) * 2.0 ** m
        gap = rng.uniform(-1, 1, h) * 2.0 ** (m + 1) * 0.999
        state[0, :h] = xT
        state[1, :h] = np.maximum(xT - gap, 0.0)      # announced copy >= 0
        state[2, :h] = xT - rng.uniform(-1, 1, h) * 2.0 ** (m + 1) * 0.999   # xF
        state[4, :h] = 0.0
        eT = xT - state[2, :h]
        inp = np.zeros((2 * h, 2))
        pl = np.zeros(2 * h, np.int32)
        sent = np.zeros(h)
        for _ in range(n):
            pl[:] = 0
            diffpc_update(inp, state, _params(h, n, m), pl)
            k = int(state[6, 0]) - 1
            sent += pl[:h] * 2.0 ** (m - n + 1)    # payload x weight scale = s T(t)
            assert set(np.unique(np.abs(pl[pl != 0]))) <= {2 ** (n - 1 - k)}
        bound = 2.0 ** (m + 1 - n)
        assert np.all(state[0, :h] == xT)                           # gamma = 0: fixed
        assert np.max(np.abs(state[0, :h] - state[1, :h])) <= bound
        assert np.max(np.abs(eT - state[4, :h])) <= bound
        # the announced copy is exactly the start value plus the graded spikes sent
        np.testing.assert_allclose(state[1, :h], np.maximum(xT - gap, 0.0) + sent)


def test_spiking_relu_never_announces_negative():
    h = 64
    state = np.zeros((len(STATE), 2 * h))
    state[0, :h] = -np.linspace(0.01, 1.5, h)   # negative targets
    state[1, :h] = np.linspace(0.0, 0.5, h)
    pl = np.zeros(2 * h, np.int32)
    for _ in range(8):
        diffpc_update(np.zeros((2 * h, 2)), state, _params(h, 8, 0), pl)
        assert np.all(state[1, :h] >= 0.0)
    assert np.max(state[1, :h]) < 2.0 ** -7 + 1e-12   # driven to (almost) 0


def _gap_to_pc(n, cycles=120):
    sizes = (12, 10, 4)
    net = PCNet(sizes, 1e-3, 0.0, seed=3)
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (3, sizes[0]))
    y1h = np.eye(sizes[-1])[[0, 2, 3]]
    eta = 0.1
    xs, eps = net.infer(torch.as_tensor(x, dtype=torch.float32),
                        torch.as_tensor(y1h, dtype=torch.float32), steps=600, eta=eta)
    cfg = DiffPCConfig(hidden=sizes[1:-1], n=n, cycles=cycles, gamma=eta, batch_size=3)
    eng = DiffPCNetwork(net, 3, cfg, NeuromorphicDevice("loihi2"))
    st = eng.iterate(x, y1h)
    hid = np.abs(st[1]["xA"] - torch.relu(xs[1]).numpy()).mean()
    err = np.abs(st[2]["eA"] - eps[2].numpy()).mean()
    return hid, err


def test_announced_states_approach_float_pc_as_cycles_lengthen():
    gaps = [_gap_to_pc(n) for n in (3, 6, 10)]
    hid = [g[0] for g in gaps]
    err = [g[1] for g in gaps]
    assert hid[0] > hid[1] > hid[2] and err[0] > err[1] > err[2], gaps
    assert hid[2] < 1e-2 and err[2] < 1e-2, gaps


def test_counts_are_the_engine_spikes():
    # every delivered spike walks its fan-out: synops = act spikes x K_out + err x K_in
    sizes = (6, 5, 3)
    net = PCNet(sizes, 1e-3, 0.0, seed=1)
    dev = NeuromorphicDevice("loihi2")
    cfg = DiffPCConfig(hidden=(5,), n=4, cycles=3, batch_size=2)
    eng = DiffPCNetwork(net, 2, cfg, dev)
    x = np.random.default_rng(1).uniform(0, 1, (2, 6))
    eng.iterate(x, np.eye(3)[[0, 1]], scope="t")
    ops = dev.ledger.total_ops("t")
    engine_spikes = eng.spikes["act"] + eng.spikes["err"]
    ff_spikes = np.count_nonzero(x) + int(np.count_nonzero(
        np.maximum(net.feedforward(torch.as_tensor(x, dtype=torch.float32))[1].numpy(), 0)))
    assert engine_spikes > 0
    assert ops["spike"] == engine_spikes + ff_spikes
    ff_syn = np.count_nonzero(x) * 5 + (ff_spikes - np.count_nonzero(x)) * 3
    assert ops["synop"] == eng.spikes["act"] * 3 + eng.spikes["err"] * 5 + ff_syn


def test_bad_config_and_payload_limit():
    with pytest.raises(ModelError, match="schedule"):
        DiffPCConfig(schedule="linear")
    with pytest.raises(ModelError, match="hidden"):
        DiffPCConfig(hidden=())
    net = PCNet((4, 3, 2), 1e-3, 0.0, seed=0)
    with pytest.raises(ModelError, match="spike_payload_bits"):
        DiffPCNetwork(net, 1, DiffPCConfig(hidden=(3,), n=40, batch_size=1),
                      NeuromorphicDevice("loihi2"))
    assert KERNEL.n_channels == 2


def test_digits_quick_reaches_90_percent():
    r = simulate(profile="loihi2", dataset="digits", quick=True)
    assert r.metrics["test_accuracy"] >= 0.90, r.metrics
    # float PC sends 960 bits per neuron per sample at 15 steps; DiffPC >= 10x fewer here
    assert r.metrics["bits_per_neuron_per_sample"] < 96.0, r.metrics
    assert r.ledger.total_ops("train")["syn_update"] > 0


@pytest.mark.parametrize("schedule", ["cyclic", "cyclic-decay", "constant-decay"])
def test_receivers_rebuild_what_senders_announced(schedule):
    # xF^2 = W_2 xA^1 + b_2 and b^1 = W_2^T eA^2, except for the spikes of the last step
    # (still in flight): each is off by at most sum |W| x T(last step)
    sizes = (10, 8, 4)
    net = PCNet(sizes, 1e-3, 0.0, seed=5)
    cfg = DiffPCConfig(hidden=(8,), n=6, cycles=5, batch_size=3, schedule=schedule,
                       decay_a=0.3, const_c=0.05)
    eng = DiffPCNetwork(net, 3, cfg, NeuromorphicDevice("loihi2"))
    x = np.random.default_rng(2).uniform(0, 1, (3, 10))
    st = eng.iterate(x, np.eye(4)[[1, 2, 3]])
    W, b = net.W[1].numpy().astype(float), net.b[1].numpy().astype(float)
    last = cfg.steps - 1
    d = 1.0 if schedule == "cyclic" else 1 - (1 - 0.3) * last / cfg.steps
    T_last = 0.05 * d if schedule == "constant-decay" else d * 2.0 ** (0 - last % 6)
    tol_f = np.abs(W).sum(1) * T_last + 1e-5
    tol_b = np.abs(W).sum(0) * T_last + 1e-5
    assert np.all(np.abs(st[2]["xF"] - (st[1]["xA"] @ W.T + b)) <= tol_f)
    assert np.all(np.abs(st[1]["b"] - st[2]["eA"] @ W) <= tol_b)
    assert eng.spikes["act"] > 0 and eng.spikes["err"] > 0


def test_card_is_the_cli_default():
    import models
    from deploy import cli
    card = models.get("diffpc")
    assert cli.DEFAULT_MODEL == "diffpc"
    assert card.device_kinds == ("neuromorphic",)
    assert (card.default_profile, card.default_dataset) == ("loihi2", "digits")


def test_iterate_rejects_a_batch_of_the_wrong_shape():
    net = PCNet((4, 3, 2), 1e-3, 0.0, seed=0)
    eng = DiffPCNetwork(net, 2, DiffPCConfig(hidden=(3,), batch_size=2),
                        NeuromorphicDevice("loihi2"))
    with pytest.raises(ModelError, match=r"compiled for batches of 2"):
        eng.iterate(np.zeros((3, 4)), np.zeros((3, 2)))
