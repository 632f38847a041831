"""DiffPC: Theorem 4.1, closeness to float PC, digits accuracy, counts, bad input."""
import numpy as np
import pytest
import torch

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
from sim.errors import ModelError
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
    assert eng.spikes["ff"] == ff_spikes         # the feed-forward messages, for the bits
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


def test_learning_step_is_counted_as_float_pcs():
    """DiffPC's weight gradients and AdamW are in its ledgers, counted as PC's same step."""
    from models.diffpc import DiffPCClassifier
    from sim.torch_engine import TorchDevice
    sizes, B = (6, 5, 3), 2
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, (4, 6)), np.array([0, 1, 2, 1])
    cfg = DiffPCConfig(hidden=(5,), n=2, cycles=1, epochs=1, batch_size=B)
    dev = NeuromorphicDevice("loihi2")
    model = DiffPCClassifier(6, 3, cfg, dev).fit(x, y)
    host = model.host_ledger.total_ops("train")
    # 2 batches x 2 samples x (5 x 6 + 3 x 5) weights = 180 gradient multiply-accumulates
    assert host["mac_fp32"] == 2 * B * (5 * 6 + 3 * 5)
    assert model.host_ledger.samples() == {"train": 4}
    # the chip reading: one learning-engine update per operation of the step
    assert dev.ledger.total_ops("train/learn/rule") == {"syn_update": sum(host.values())}
    # float PC's step on the same shapes counts the same ops and bytes
    ref, net = TorchDevice("x86-avx2", prefer_cuda=False), PCNet(sizes, 1e-3, 1e-4, seed=0)
    for _ in range(2):
        pre = [torch.rand(B, 6), torch.rand(B, 5)]
        eps = [None, torch.rand(B, 5), torch.rand(B, 3)]
        with ref.count("train", samples=B), torch.no_grad():
            net.step(pre, eps)
    assert ref.ledger.total_ops() == host
    assert ref.ledger.total_bytes() == model.host_ledger.total_bytes()


def test_bits_include_the_feed_forward_messages():
    from models.diffpc import FF_PAYLOAD_BITS, DiffPCClassifier
    rng = np.random.default_rng(1)
    x, y = rng.uniform(0, 1, (4, 6)), np.array([0, 1, 2, 1])
    x[:, :2] = 0.0                                # zero pixels send no message
    cfg = DiffPCConfig(hidden=(5,), n=2, cycles=1, epochs=1, batch_size=2)
    model = DiffPCClassifier(6, 3, cfg, NeuromorphicDevice("loihi2")).fit(x, y)
    sp, c = model.engine.spikes, model.comm()
    per = 4 * (5 + 3)                             # 4 training samples x 8 neurons
    # every non-zero pixel (4 x 4 = 16) sends one message, plus at most 4 x 5 hidden ones
    assert 16 <= sp["ff"] <= 16 + 4 * 5
    assert c["ff_messages_per_neuron_per_sample"] == sp["ff"] / per
    assert c["bits_per_neuron_per_sample"] == \
        (2 * (sp["act"] + sp["err"]) + FF_PAYLOAD_BITS * sp["ff"]) / per
    assert FF_PAYLOAD_BITS == 32                  # the float32 each message carries


def test_comparison_prices_both_readings_of_the_learning_step():
    """train@loihi2 keeps the rule on the chip; train@loihi2+P swaps it for the host step."""
    from hw_profiles import load
    from models.diffpc_experiment import GPU_PROFILES, compare
    from models.registry import RunResult
    from sim.ledger import Ledger
    chip, host, other = Ledger(), Ledger(), Ledger()
    chip.add("synop", 1000, scope="train")
    chip.add("syn_update", 300, scope="train/learn/rule")
    chip.add_samples(10, scope="train")
    host.add("mac_fp32", 200, scope="train")
    host.add("flop_fp32", 100, scope="train")
    host.add_samples(10, scope="train")
    other.add("mac_fp32", 50, scope="train")
    other.add_samples(10, scope="train")
    res = {"diffpc": RunResult("diffpc", load("loihi2"), "d", {}, {"bits_per_neuron_per_sample":
                                                                  2.0}, chip),
           "diffpc_learn": RunResult("diffpc", load("x86-avx2"), "d", {}, {}, host),
           "pc": RunResult("pc", load("a100"), "d", {}, {"bits_per_neuron_per_sample": 960.0}, other),
           "bp": RunResult("mlp", load("a100"), "d", {}, {"bits_per_neuron_per_sample": 32.0}, other)}
    d = compare(res)["diffpc"]
    rep = chip.price("loihi2")
    rule = rep.energy_within("train/learn/rule") / 10
    lo = load("loihi2")
    # 300 updates x syn_update pJ (+ static over its latency) per 10 samples
    assert rule >= 300 * lo.energy_pj["syn_update"].value * 1e-12 / 10
    assert d["learn_rule_j_per_sample@loihi2"] == pytest.approx(rule)
    for p in GPU_PROFILES:
        step = host.price(p).per_sample_j()["train"]
        assert d[f"learn_j_per_sample@{p}"] == pytest.approx(step)
        assert d[f"train_j_per_sample@loihi2+{p}"] == \
            pytest.approx(d["train_j_per_sample@loihi2"] - rule + step)
