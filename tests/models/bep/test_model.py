"""BEP: the gated backward solves its relaxation exactly, one step equals a plain integer twin,
the ledger holds no float op, it learns, and the exported C agrees bit for bit."""
import itertools
from fractions import Fraction

import numpy as np
import pytest
import torch

from models import bep_data
from models import bep_kernels as K
from models.bep import (
    BEP,
    BEPConfig,
    next_divisor,
    output_frame,
    reinforce_threshold,
)
from models.bep_qat import QAT, QATConfig
from models.bep_tt import BEPTT, BEPTTConfig
from sim.bitwise import BitwiseDevice
from sim.bitwise.packing import pack_bits, pack_signs
from sim.errors import ModelError
from sim.torch_engine import TorchDevice

FLOAT_OPS = ("mac_fp", "flop_fp")


def _signs(rng, shape):
    return rng.choice(np.array([-1, 1], np.int8), size=shape)


# -- Lemma: sign(W^T (g * b)) maximises <b, W a>_g over a in {+-1}^K --------------------------
@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 12])
def test_gated_backward_solves_relaxation_exactly(k):
    rng = np.random.default_rng(k)
    dev = BitwiseDevice("cortex-m4")
    cands = np.array(list(itertools.product([-1, 1], repeat=k)), np.int64)  # (2^K, K)
    for case in range(20):
        k_next = int(rng.integers(1, 40))
        w = _signs(rng, (k_next, k))                                   # W_{l+1} (K_next, K)
        b = _signs(rng, (3, k_next))                                   # a*_{l+1}, 3 samples
        g = rng.integers(0, 2, size=(3, k_next)).astype(np.uint8)
        if case == 0:
            g[:] = 0                                                   # every gate closed
        current = _signs(rng, (3, k))
        u = dev.masked_sign_matmul(pack_signs(b, 32), pack_signs(np.ascontiguousarray(w.T), 32),
                                   pack_bits(g, 32), k=k_next)
        # the device's gated product is W^T (g * b)
        assert np.array_equal(u, (g * b).astype(np.int64) @ w.astype(np.int64))
        a_star = np.empty((3, k), np.int8)
        K.desired(u, current, a_star, np.zeros(64, np.int64))
        for s in range(3):
            coef = (g[s] * b[s]).astype(np.int64) @ w                  # objective = coef . a
            best = (cands @ coef).max()                                # brute force, 2^K
            assert coef @ a_star[s] == best
            # where the coefficient is 0 the tie rule keeps the forward bit
            assert np.array_equal(a_star[s][coef == 0], current[s][coef == 0])


# -- one BEP step equals a plain numpy twin ------------------------------------------------
def _naive_step(h_list, frame, x, y, cfg, gamma):
    """Plain integer numpy BEP step (no reinforcement): returns the new counters."""
    acts, zs = [2 * x.astype(np.int64) - 1], []
    for h in h_list:
        w = np.where(h >= 0, 1, -1)
        zs.append(acts[-1] @ w.T)
        acts.append(np.where(zs[-1] >= 0, 1, -1))
    logits = acts[-1] @ frame.T.astype(np.int64)
    k_last = h_list[-1].shape[0]
    other = np.where(np.arange(frame.shape[0])[None] == y[:, None], -10 ** 9, logits).max(1)
    trig = logits[np.arange(len(y)), y] - other < cfg.r * k_last
    new = [h.astype(np.int64).copy() for h in h_list]
    idx = np.flatnonzero(trig)
    target = frame[y[idx]].astype(np.int64)
    for l in range(len(h_list) - 1, -1, -1):
        z, a_in = zs[l][idx], acts[l][idx]
        k_out = h_list[l].shape[0]
        for s in range(len(idx)):
            for g0 in range(0, k_out, gamma[l]):
                grp = np.arange(g0, min(g0 + gamma[l], k_out))
                sgn = np.where(z[s, grp] >= 0, 1, -1)
                wrong = grp[sgn != target[s, grp]]
                if len(wrong):
                    j = wrong[np.argmin(np.abs(z[s, wrong]))]
                    new[l][j] += 2 * target[s, j] * a_in[s]
        if l:
            w = np.where(h_list[l] >= 0, 1, -1)
            gate = np.abs(z) <= int(cfg.nu * h_list[l].shape[1])
            u = (gate * target) @ w
            target = np.where(u > 0, 1, np.where(u < 0, -1, acts[l][idx]))
    return [np.clip(h, -2 ** 15, 2 ** 15 - 1) for h in new]


@pytest.mark.parametrize("gamma0,wb", [(1, 32), (3, 64)])
def test_train_batch_equals_naive_twin(gamma0, wb):
    data = bep_data.random_prototypes(n_samples=400, n_features=70, seed=1)
    dev = BitwiseDevice("cortex-m4" if wb == 32 else "fpga-bnn")
    cfg = BEPConfig(hidden=(33, 16), gamma0=gamma0, p_r=0.0, r=0.5, nu=0.3, seed=2)
    model = BEP(70, 10, cfg, dev)
    for step in range(3):
        x, y = data.x_train[step * 50:(step + 1) * 50], data.y_train[step * 50:(step + 1) * 50]
        want = _naive_step([lay.h for lay in model.layers], model.frame, x, y, cfg, model.gamma)
        model.train_batch(x, y)
        for lay, h in zip(model.layers, want):
            assert np.array_equal(lay.h, h)
            assert np.array_equal(lay.w, pack_signs(np.where(h >= 0, 1, -1).astype(np.int8), wb))


def test_reinforce_kernel_matches_python_xorshift():
    h = np.array([[0, -4, 7], [-32768, 32767, 2]], np.int16)
    thr = 2 ** 31  # probability 1/2
    state = np.array([12345], np.uint32)
    want, x, want_hits = h.astype(np.int64).copy(), 12345, 0
    for j, i in itertools.product(range(2), range(3)):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        if x < thr:
            want_hits += 1
            want[j, i] = np.clip(want[j, i] + (2 if want[j, i] >= 0 else -2), -32768, 32767)
    counts = np.zeros(64, np.int64)
    hits = K.reinforce(h, thr, state, -32768, 32767, counts)
    assert np.array_equal(h, want) and state[0] == x
    assert hits == want_hits and 0 < hits < 6  # this seed draws some but not all
    assert counts[K.XOR] == 3 * 6  # 3 xorshift EORs per counter


def test_integer_thresholds():
    # p = p_r sqrt(2 / (pi K)) sqrt(err): 0.5 * sqrt(2 / (pi 100)) * 1 = 0.0398942 -> x 2^32
    assert abs(reinforce_threshold(Fraction(1, 2), 100, Fraction(1)) - 0.0398942 * 2 ** 32) < 2e-6 * 2 ** 32
    assert reinforce_threshold(Fraction(1, 2), 100, Fraction(0)) == 0
    assert [next_divisor(120, g) for g in (15, 20, 60, 120)] == [20, 24, 120, 120]
    p = output_frame(10, 64, 0)
    assert p.shape == (10, 64) and np.array_equal(p.astype(int) @ p.T, 64 * np.eye(10))


# -- ledger, learning, determinism -------------------------------------------------------
@pytest.fixture(scope="module")
def protos():
    return bep_data.random_prototypes(n_samples=3000, n_features=256, flip=0.4, seed=3)


def test_bep_learns_prototypes_with_no_float_op(protos):
    dev = BitwiseDevice("cortex-m4")
    cfg = BEPConfig(hidden=(64, 64), epochs=4, gamma0=8, nu=0.5, r=0.5, seed=0)
    model = BEP(256, 10, cfg, dev).fit(protos.x_train, protos.y_train)
    acc = model.evaluate(protos.x_test, protos.y_test)["accuracy"]
    assert acc > 0.6, acc  # chance is 0.1
    ops = dev.ledger.total_ops("train")
    assert not [op for op in ops if op.startswith(FLOAT_OPS)], ops
    assert dev.ledger.total_ops("infer") and not [
        op for op in dev.ledger.total_ops() if op.startswith(FLOAT_OPS)]
    # forward products: per sample and output row one xor+popcount per 32-bit word
    assert ops["popcount_word"] >= 2700 * 4 * (64 * 8 + 64 * 2)
    assert ops["xor_word"] > 0 and ops["int_add"] > 0
    # the held-out error drove the gamma schedule or training stopped improving early
    assert len(model.history) == 4 and model.history[-1]["train_error"] < 0.5


def test_local_rule_learns_and_is_not_bep(protos):
    dev = BitwiseDevice("cortex-m4")
    cfg = BEPConfig(hidden=(64, 64), epochs=2, gamma0=8, nu=0.5, r=0.5, seed=0, local=True)
    local = BEP(256, 10, cfg, dev).fit(protos.x_train, protos.y_train)
    bep = BEP(256, 10, BEPConfig(**{**cfg.__dict__, "local": False}), BitwiseDevice("cortex-m4"))
    bep.fit(protos.x_train, protos.y_train)
    assert local.evaluate(protos.x_test, protos.y_test)["accuracy"] > 0.3
    assert not np.array_equal(local.layers[0].h, bep.layers[0].h)


def test_same_seed_same_counters(protos):
    runs = [BEP(256, 10, BEPConfig(hidden=(32, 16), epochs=1, seed=5), BitwiseDevice("cortex-m4"))
            .fit(protos.x_train[:500], protos.y_train[:500]) for _ in range(2)]
    assert all(np.array_equal(a.h, b.h) for a, b in zip(runs[0].layers, runs[1].layers))


def test_bep_tt_learns_digit_rows_with_no_float_op():
    data = bep_data.digits_rows()
    dev = BitwiseDevice("cortex-m4")
    cfg = BEPTTConfig(epochs=5, nu=0.2, gamma0=4, seed=0)
    model = BEPTT(data.n_features, 10, cfg, dev).fit(data.x_train, data.y_train)
    acc = model.evaluate(data.x_test, data.y_test)["accuracy"]
    assert acc > 0.2, acc  # chance is 0.1 (BEP-TT is weak here: see README)
    assert not [op for op in dev.ledger.total_ops() if op.startswith(FLOAT_OPS)]


def test_qat_forward_is_the_same_binary_network(protos):
    dev = BitwiseDevice("cortex-m4")
    model = BEP(256, 10, BEPConfig(hidden=(64, 32), seed=1), dev)
    qat = QAT(256, 10, QATConfig(hidden=(64, 32), seed=1), TorchDevice("x86-avx2"))
    with torch.no_grad():
        for lat, lay in zip(qat.net.layers, model.layers):
            lat.weight.copy_(torch.as_tensor(lay.signs() * 0.5, dtype=torch.float32))
    x = protos.x_test[:50]
    want = model.logits(model.forward(x)[2][-1])                     # int32 (50, 10)
    got = qat.net(qat._x(x)) * np.sqrt(32)
    assert np.array_equal(np.rint(got.detach().numpy()).astype(np.int32), want)


def test_bad_inputs_are_named():
    with pytest.raises(ModelError, match="hidden"):
        BEPConfig(hidden=())
    with pytest.raises(ModelError, match="nu"):
        BEPConfig(nu=1.5)
    model = BEP(20, 3, BEPConfig(hidden=(8,)), BitwiseDevice("cortex-m4"))
    with pytest.raises(ModelError, match=r"uint8 bits \(N, 20\)"):
        model.fit(np.zeros((4, 21), np.uint8), np.zeros(4, np.int64))
    with pytest.raises(ModelError, match="labels in 0..2"):
        model.fit(np.zeros((4, 20), np.uint8), np.array([0, 1, 2, 3]))


# -- C export ------------------------------------------------------------------------------
def test_exported_c_agrees_with_bitwise_device(tmp_path):
    from deploy.c_export import (
        CORTEX_M_BOARDS,
        check_c_project,
        export_c,
        missing_tools,
    )
    from models.bep_card import packed_network
    data = bep_data.digits_bits()
    dev = BitwiseDevice("cortex-m4")
    model = BEP(data.n_features, 10, BEPConfig(hidden=(64, 32), epochs=2, gamma0=4, seed=0), dev)
    model.fit(data.x_train, data.y_train)
    x = data.x_test[:24]
    layers = packed_network(model)
    want = BitwiseDevice("cortex-m4").run(layers, pack_bits(x, 32))
    assert np.array_equal(want.labels, model.predict(x))          # the packed net is BEP's net
    out = export_c(layers, pack_bits(x, 32), tmp_path / "bep-c", profile="cortex-m4")
    targets = ["host"] + [m for m in sorted(CORTEX_M_BOARDS) if m == "cortex-m4"]
    ran = 0
    for target in targets:
        if missing_tools(target):
            continue
        run = check_c_project(out, want, target=target)
        assert run.all_match and np.array_equal(run.scores, want.scores), f"generated C in {out}"
        ran += 1
    if not ran:
        pytest.skip("no C compiler found")


def test_card_simulate_and_export(tmp_path):
    import models
    from deploy.c_export import missing_tools, run_c_project
    from deploy.export import export_model
    card = models.get("bep")
    assert card.device_kinds == ("bitwise",) and card.exports == ("c",)
    run = card.simulate(profile="cortex-m4", dataset="digits", quick=True, seed=0)
    assert run.metrics["test_accuracy"] > 0.7 and run.metrics["state_bits_per_weight"] == 18
    assert not [op for op in run.ledger.total_ops() if op.startswith(FLOAT_OPS)]
    with pytest.raises(ModelError, match="bitwise profiles"):
        card.simulate(profile="a100", dataset="digits")
    out = export_model("bep", "c", tmp_path / "bep-c")
    assert (out / "model_weights.h").is_file() and (out / "golden.h").is_file()
    if not missing_tools("host"):  # the harness compares with the golden outputs it holds
        assert run_c_project(out).all_match, f"generated C in {out}"
