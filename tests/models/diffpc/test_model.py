"""DiffPC's model: closeness to float PC, counts, the learning step, bad input."""
import numpy as np
import pytest
import torch

import sim
from models.baselines.pc.model import PCNet
from models.diffpc.card import DiffPCConfig
from models.diffpc.kernels import STATE
from models.diffpc.model import DiffPCNetwork
from sim.errors import ModelError


def _chip(profile="loihi2"):
    return sim.device(profile)


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
    eng = DiffPCNetwork(net, 3, cfg, _chip())
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
    dev = _chip()
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
    # the iteration's spikes kept for a replay: the same spikes, steps 0..11 of its 12
    kept = [eng.last_spikes[k] for k in ("h1", "h2")]
    steps = np.concatenate([k[0] for k in kept])
    assert steps.size == engine_spikes and steps.min() >= 0 and steps.max() < 12
    assert np.all(np.concatenate([k[2] for k in kept]) != 0)    # signed, never 0
    ff_syn = np.count_nonzero(x) * 5 + (ff_spikes - np.count_nonzero(x)) * 3
    assert ops["synop"] == eng.spikes["act"] * 3 + eng.spikes["err"] * 5 + ff_syn
    # 12 steps x (2 copies x 2 compartments x (5 + 3) neurons) = 384 updates, each active
    # or idle; the feed-forward sweep: one active update per neuron, 2 x (5 + 3) = 16
    run = dev.ledger.ops("t")                     # the engine's own scope (not t/ffinit)
    assert run["neuron_update_active"] + run["neuron_update_idle"] == 12 * 2 * 2 * (5 + 3)
    assert dev.ledger.total_ops("t/ffinit")["neuron_update_active"] == 2 * (5 + 3)


def test_each_batch_starts_from_its_own_feed_forward_state():
    # no spike of the previous batch arrives in the next (clear_in_flight) and every state
    # is reset (set_custom_state(reset=True)): the same batch twice gives the same iteration
    sizes = (6, 5, 3)
    net = PCNet(sizes, 1e-3, 0.0, seed=1)
    dev = _chip()
    # n = 4, one cycle: 4 spikes are sent in the last step (still in flight at the end)
    eng = DiffPCNetwork(net, 2, DiffPCConfig(hidden=(5,), n=4, cycles=1, batch_size=2), dev)
    x, y1h = np.random.default_rng(1).uniform(0, 1, (2, 6)), np.eye(3)[[0, 1]]
    first = eng.iterate(x, y1h, scope="a")
    sent = dict(eng.spikes)
    second = eng.iterate(x, y1h, scope="b")
    assert {k: eng.spikes[k] - sent[k] for k in sent} == sent
    # a spike left in flight would make its target an active (not idle) update in step 0
    assert dev.ledger.ops("a") == dev.ledger.ops("b")
    for layer in (1, 2):
        assert list(first[layer]) == list(STATE[:-1])
        for var in STATE[:-1]:
            np.testing.assert_array_equal(first[layer][var], second[layer][var])
    # the output layer is clamped to the one-hot label
    np.testing.assert_array_equal(first[2]["xT"], y1h)


def test_push_weights_rewrites_both_copies_and_the_first_layer():
    # sizes (4, 3, 2), B = 2: W_2 has 2 x 3 = 6 weights per copy, in the forward and the
    # transposed synapses: 2 x 2 x 6 = 24 updates; W_1 (no engine synapses) 2 x 4 x 3 = 24
    net = PCNet((4, 3, 2), 1e-3, 0.0, seed=0)
    dev = _chip()
    eng = DiffPCNetwork(net, 2, DiffPCConfig(hidden=(3,), batch_size=2), dev)
    net.W[1] += 0.125
    eng.push_weights(scope="s")
    eb = dev.compiled.entry_bytes
    assert dev.ledger.total_ops("s") == {"syn_update": 24 + 24}
    assert dev.ledger.total_bytes("s") == {("local", "read"): 48 * eb,
                                           ("local", "write"): 48 * eb}
    # the forward copy now holds W_2 x 2^(m - n + 1) (m = 0, n = 8: / 128)
    np.testing.assert_allclose(dev.compiled.weights_of("fwd2"),
                               np.tile(net.W[1].numpy().ravel(), 2) / 128, rtol=1e-12)
    eng.push_weights(scope="again")               # nothing changed: only W_1's 24 writes
    assert dev.ledger.total_ops("again") == {"syn_update": 24}


def test_bad_config_and_payload_limit():
    with pytest.raises(ModelError, match="schedule"):
        DiffPCConfig(schedule="linear")
    with pytest.raises(ModelError, match="hidden"):
        DiffPCConfig(hidden=())
    # ternary spikes carry no power of two: n = 40 cycles of thresholds fit any chip with
    # signed payloads (before: refused, graded payloads up to 2^39 needed 41 bits)
    net = PCNet((4, 3, 2), 1e-3, 0.0, seed=0)
    DiffPCNetwork(net, 1, DiffPCConfig(hidden=(3,), n=40, batch_size=1), _chip())


@pytest.mark.parametrize("schedule", ["cyclic", "cyclic-decay", "constant-decay"])
def test_receivers_rebuild_what_senders_announced(schedule):
    # xF^2 = W_2 xA^1 + b_2 and b^1 = W_2^T eA^2, except for the spikes of the last step
    # (still in flight): each is off by at most sum |W| x T(last step)
    sizes = (10, 8, 4)
    net = PCNet(sizes, 1e-3, 0.0, seed=5)
    cfg = DiffPCConfig(hidden=(8,), n=6, cycles=5, batch_size=3, schedule=schedule,
                       decay_a=0.3, const_c=0.05)
    eng = DiffPCNetwork(net, 3, cfg, _chip())
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


def test_iterate_rejects_a_batch_of_the_wrong_shape():
    net = PCNet((4, 3, 2), 1e-3, 0.0, seed=0)
    eng = DiffPCNetwork(net, 2, DiffPCConfig(hidden=(3,), batch_size=2),
                        _chip())
    with pytest.raises(ModelError, match=r"compiled for batches of 2"):
        eng.iterate(np.zeros((3, 4)), np.zeros((3, 2)))


def test_learning_step_is_counted_as_float_pcs():
    """DiffPC's weight gradients and AdamW are in its ledgers, counted as PC's same step."""
    from models.diffpc.model import DiffPCClassifier
    sizes, B = (6, 5, 3), 2
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, (4, 6)), np.array([0, 1, 2, 1])
    cfg = DiffPCConfig(hidden=(5,), n=2, cycles=1, epochs=1, batch_size=B)
    dev = _chip()
    model = DiffPCClassifier(6, 3, cfg, dev).fit(x, y)
    host = model.host_ledger.total_ops("train")
    # 2 batches x 2 samples x (5 x 6 + 3 x 5) weights = 180 gradient multiply-accumulates
    assert host["mac_fp32"] == 2 * B * (5 * 6 + 3 * 5)
    assert model.host_ledger.samples() == {"train": 4}
    # the chip reading: one learning-engine update per arithmetic op of the step (the
    # host's kernel launches are torch's dispatch, not rule evaluations)
    assert host["kernel_launch"] > 0
    assert dev.ledger.total_ops("train/learn/rule") == {
        "syn_update": host["mac_fp32"] + host["flop_fp32"]}
    # float PC's step on the same shapes counts the same ops and bytes
    ref = sim.device("x86-avx2", prefer_cuda=False)
    net = PCNet(sizes, 1e-3, 1e-4, seed=0)
    for _ in range(2):
        pre = [torch.rand(B, 6), torch.rand(B, 5)]
        eps = [None, torch.rand(B, 5), torch.rand(B, 3)]
        with ref.count("train", samples=B), torch.no_grad():
            net.step(pre, eps)
    assert ref.ledger.total_ops() == host
    assert ref.ledger.total_bytes() == model.host_ledger.total_bytes()


def test_rule_updates_leave_out_kernel_launches():
    """Bug fix: ``train/learn/rule`` counted the host's kernel launches as syn_update (302 on a
    4-3-2 net, B = 2, one batch, where the rule's own ops are 275)."""
    from hw_profiles.ops import OPS
    from models.diffpc.model import DiffPCClassifier
    dev = _chip()
    cfg = DiffPCConfig(hidden=(3,), n=4, cycles=3, batch_size=2, epochs=1)
    clf = DiffPCClassifier(4, 2, cfg, dev)
    clf.fit(np.random.default_rng(0).uniform(0, 1, (2, 4)), np.array([0, 1]))
    host = clf.host_ledger.total_ops("train")
    # the gradients' MACs: 2 samples x (3 x 4 + 2 x 3) weights = 36
    assert host["mac_fp32"] == 2 * (3 * 4 + 2 * 3)
    # torch ran the step as kernels (27 launches with torch 2.x here), not counted
    assert host["kernel_launch"] > 0
    assert {op for op in host if OPS[op] != "compute"} == {"kernel_launch"}
    # 36 MACs + the flops of the batch means and AdamW (239 here) = 275, not 302
    rule = dev.ledger.total_ops("train/learn/rule")
    assert rule == {"syn_update": sum(host.values()) - host["kernel_launch"]}
    assert rule == {"syn_update": host["mac_fp32"] + host["flop_fp32"]}


def test_bits_include_the_feed_forward_messages():
    from models.diffpc.model import FF_PAYLOAD_BITS, DiffPCClassifier
    rng = np.random.default_rng(1)
    x, y = rng.uniform(0, 1, (4, 6)), np.array([0, 1, 2, 1])
    x[:, :2] = 0.0                                # zero pixels send no message
    cfg = DiffPCConfig(hidden=(5,), n=2, cycles=1, epochs=1, batch_size=2)
    model = DiffPCClassifier(6, 3, cfg, _chip()).fit(x, y)
    sp, c = model.engine.spikes, model.comm()
    per = 4 * (5 + 3)                             # 4 training samples x 8 neurons
    # every non-zero pixel (4 x 4 = 16) sends one message, plus at most 4 x 5 hidden ones
    assert 16 <= sp["ff"] <= 16 + 4 * 5
    assert c["ff_messages_per_neuron_per_sample"] == sp["ff"] / per
    assert c["bits_per_neuron_per_sample"] == \
        (2 * (sp["act"] + sp["err"]) + FF_PAYLOAD_BITS * sp["ff"]) / per
    assert FF_PAYLOAD_BITS == 32                  # the float32 each message carries


def test_compiled_loop_gives_the_python_paths_ledger_op_by_op():
    # 3 training batches of 32 on digits (64-32-10), n = 4, 3 cycles: every ledger record
    # (ops, bytes, step timing, activity), the host's torch counts, the weights and the
    # spike tallies equal those of the per-step Python path
    from models.diffpc.model import DiffPCClassifier
    from models.shared import datasets
    d = datasets.digits()
    x, y = d.x_train[:96], d.y_train[:96]
    cfg = DiffPCConfig(hidden=(32,), n=4, cycles=3, epochs=1, batch_size=32)
    runs = []
    for loop in ("compiled", "python"):
        m = DiffPCClassifier(d.n_features, d.n_classes, cfg, _chip(), loop=loop)
        m.fit(x, y)
        runs.append(m)
    a, b = runs
    assert a.device.ledger.to_dict() == b.device.ledger.to_dict()
    assert a.host_ledger.to_dict() == b.host_ledger.to_dict()
    assert a.engine.spikes == b.engine.spikes and a.engine.spikes["err"] > 0
    assert a.device.ledger.total_ops("train")["syn_update"] > 0
    for wa, wb in zip(a.net.W, b.net.W, strict=True):
        assert torch.equal(wa, wb)
    np.testing.assert_array_equal(a.device.compiled.w, b.device.compiled.w)


def test_compiled_loop_gives_the_python_paths_states_and_spikes():
    # one iteration of 2 hidden layers (3 custom populations, one kernel), 3 copies, the
    # decay schedule: every state variable, every spike (step, index, payload) identical
    sizes = (10, 8, 6, 4)
    x = np.random.default_rng(2).uniform(0, 1, (3, 10))
    y1h = np.eye(4)[[1, 2, 3]]
    cfg = DiffPCConfig(hidden=(8, 6), n=5, cycles=4, batch_size=3, schedule="cyclic-decay",
                       decay_a=0.5)
    out, res = [], []
    for loop in ("compiled", "python"):
        dev = _chip()
        eng = DiffPCNetwork(PCNet(sizes, 1e-3, 0.0, seed=5), 3, cfg, dev, loop=loop)
        run = dev.run
        dev.run = lambda *a, _run=run, **k: res.append(_run(*a, **k)) or res[-1]
        out.append(eng.iterate(x, y1h))
    for layer in (1, 2, 3):
        for var in STATE[:-1]:
            np.testing.assert_array_equal(out[0][layer][var], out[1][layer][var])
    assert res[0].counts == res[1].counts and res[0].bytes_read == res[1].bytes_read
    for pop in ("h1", "h2", "h3"):
        for a, b in zip(res[0].spikes[pop], res[1].spikes[pop], strict=True):
            np.testing.assert_array_equal(a, b)
    assert res[0].spikes["h2"][0].size > 0 and res[0].spikes["h3"][0].size > 0


@pytest.mark.parametrize("schedule", ["cyclic", "constant-decay"])
def test_a_profile_with_binary_spikes_only_is_refused_up_front(schedule):
    # truenorth has no spike_payload_bits: the message said "n <= ... - 1 = None", and
    # constant-decay (no such check) failed mid-run on its first -1 spike
    net = PCNet((4, 3, 2), 1e-3, 0.0, seed=0)
    with pytest.raises(ModelError, match=r"profile 'truenorth' has binary spikes only \(no "
                                         r"spike_payload_bits\); DiffPC's ternary spikes"):
        DiffPCNetwork(net, 1, DiffPCConfig(hidden=(3,), batch_size=1, schedule=schedule),
                      _chip("truenorth"))


@pytest.mark.parametrize("lr, message", [
    # AdamW's first steps move every weight by ~lr: 1e30 weights give feed-forward states
    # past float32's 3.4e38 (inf), which the engine refused as a shape error
    (1e30, r"DiffPCConfig lr = 1e\+30, gamma = 0.1: training diverged \(non-finite "
           r"feed-forward"),
    # 1e38 / (1 - 0.9) = 1e39 is AdamW's first step size: not a float32 (torch RuntimeError)
    (1e38, r"DiffPCConfig.lr = 1e\+38: AdamW's step overflows float32")])
def test_a_diverging_lr_is_a_one_line_error(lr, message):
    from models.diffpc.model import DiffPCClassifier
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, (4, 6)), np.array([0, 1, 2, 1])
    cfg = DiffPCConfig(hidden=(5,), n=2, cycles=1, epochs=3, batch_size=2, lr=lr)
    with pytest.raises(ModelError, match=message):
        DiffPCClassifier(6, 3, cfg, _chip()).fit(x, y)



def test_neurobench_model_facts_are_the_pcnets_at_any_batch():
    """ParameterCount and Footprint are the PCNet's, not the chip's B x 2 synapse copies
    (before: 20,480 at batch 32 and 10,240 at 16 for the 64-32-10 net's 2,410). Sizes (4,
    3, 2): 4 x 3 + 3 x 2 = 18 weights + 3 + 2 biases = 23 parameters, float32: 92 B."""
    for batch in (1, 3):
        net = PCNet((4, 3, 2), 1e-3, 0.0, seed=0)
        dev = _chip()
        eng = DiffPCNetwork(net, batch, DiffPCConfig(hidden=(3,), batch_size=batch), dev)
        facts = dev.ledger.models()["network"]
        assert facts == {"parameters": 23, "parameter_bytes": 92, "buffer_bytes": 0,
                         "connection_weights": 18, "connection_zero_weights": 0}
        # a weight set to 0 in training: 1 of the 18 connection weights is zero
        with torch.no_grad():
            net.W[1][0, 0] = 0.0
        eng.push_weights(scope="s")
        assert dev.ledger.models()["network"]["connection_zero_weights"] == 1


def test_its_signed_spikes_are_not_priced_on_a_binary_chip():
    """The run's ledger records the payloads its neurons sent (signed: DiffPC's ternary
    code), so `compare` refuses a chip of binary spikes (before: priced on loihi as if it
    had run there, though simulate refuses loihi for DiffPC)."""
    from sim.errors import PricingError
    from sim.pricing import price
    net = PCNet((4, 3, 2), 1e-3, 0.0, seed=0)
    dev = _chip()
    eng = DiffPCNetwork(net, 2, DiffPCConfig(hidden=(3,), batch_size=2), dev)
    rng = np.random.default_rng(0)
    eng.iterate(rng.uniform(0, 1, (2, 4)), np.eye(2)[[0, 1]])
    assert dev.ledger.payloads == (-1, 1)        # ternary: signs only
    with pytest.raises(PricingError, match="'loihi' carries binary spikes only"):
        price(dev.ledger, "loihi")


@pytest.mark.parametrize("x, b1, expected", [
    # graded input (0.5, 0.25: not spikes), b = 0. mu1 = W1 x: sample 0 [1, 0.5, -1] ->
    # phi [1, 0.5, 0]; sample 1 [0, 0, 0.25] -> [0, 0, 0.25]. Effective pairs (non-zero
    # input x non-zero weight; non-zeros per column: W1 2, 1, 1, 1; W2 1, 1, 2): layer 1
    # inputs 0, 2 -> 2 + 1 and input 3 -> 1: 4; layer 2 inputs 0, 1 -> 1 + 1 and input 2 ->
    # 2: 4. All MACs: 8 / 2 samples = 4. Dense (12 + 6) x 2 / 2 = 18. Hidden zeros 1 + 2 of
    # 3 x 2 = 0.5. Membrane updates (3 + 2) x 2 / 2 = 5.
    ([[1, 0, 0.5, 0], [0, 0, 0, 0.25]], [0, 0, 0],
     {"ActivationSparsity": 0.5, "SynapticOperations.Effective_MACs": 4.0,
      "SynapticOperations.Effective_ACs": 0.0, "SynapticOperations.Dense": 18.0,
      "MembraneUpdates": 5.0}),
    # spike input (0 / 1): layer 1's 4 pairs (as above) are ACs; b1 = [0, 0.5, 0] makes
    # phi(mu1) graded: [1, 1.5, 0] and [0, 0.5, 1], so layer 2's are MACs: inputs 0, 1 ->
    # 1 + 1 and inputs 1, 2 -> 1 + 2: 5. Per sample: ACs 2, MACs 2.5; hidden zeros 1 + 1
    # of 6 = 1/3; Dense 18, membrane updates 5 as above.
    ([[1, 0, 1, 0], [0, 0, 0, 1]], [0, 0.5, 0],
     {"ActivationSparsity": 1 / 3, "SynapticOperations.Effective_MACs": 2.5,
      "SynapticOperations.Effective_ACs": 2.0, "SynapticOperations.Dense": 18.0,
      "MembraneUpdates": 5.0})])
def test_inference_records_neurobench_activity(x, b1, expected):
    """The report's NeuroBench workload metrics of DiffPC's inference (one feed-forward
    sweep, model.py's docstring) are counted, not n/a (before: infer counted synops but
    recorded no activity). 4-3-2, 2 samples, weights with zeros (arithmetic per case)."""
    from types import SimpleNamespace

    from deploy.headline import neurobench
    from models.diffpc.model import DiffPCClassifier
    dev = _chip()
    model = DiffPCClassifier(4, 2, DiffPCConfig(hidden=(3,), batch_size=2), dev)
    with torch.no_grad():
        model.net.W[0].copy_(torch.tensor([[1., 0, 0, 0], [0, 1, 1, 0], [-1, 0, 0, 1]]))
        model.net.W[1].copy_(torch.tensor([[1., 0, 2], [0, 1, 1]]))
        model.net.b[0].copy_(torch.tensor(b1, dtype=torch.float32))
        model.net.b[1].zero_()
    model.evaluate(np.array(x, dtype=np.float32), np.array([0, 1]))
    got = neurobench(SimpleNamespace(ledger=dev.ledger))
    assert {k: got[k][0] for k in expected} == pytest.approx(expected)
    # per population, as the engine records a run's: the output layer has no activations
    assert sorted(s for s in dev.ledger.to_dict()["activity"]) == ["infer/h1", "infer/h2"]
    assert "activations" not in dev.ledger.activity("infer/h2")
