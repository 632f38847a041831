"""COLA's building blocks: split-conformal thresholds and sets, coverage on held-out source
data, the set weights and soft labels, UWHD, plain Hamming on packed codes, MAP."""
import math

import numpy as np
import pytest
import torch

from models.conformal_hashing.model import (
    average_precision,
    code_bytes,
    conformal_threshold,
    hamming_bitwise,
    mmd2,
    prediction_sets,
    rank_map,
    set_weights,
    soft_labels,
    uwhd,
    uwhd_lut,
    uwhd_lut_kernel,
    uwhd_tables,
)
from sim.bitwise import BitwiseDevice
from sim.errors import ModelError


def test_threshold_is_the_finite_sample_rank():
    scores = torch.arange(1, 101, dtype=torch.float64) / 100       # 0.01 .. 1.00, shuffled
    scores = scores[torch.randperm(100, generator=torch.Generator().manual_seed(0))]
    # alpha 0.1: k = ceil(101 * 0.9) = ceil(90.9) = 91 -> the 91st smallest = 0.91
    assert conformal_threshold(scores, 0.1) == pytest.approx(0.91)
    # alpha 0.2: k = ceil(101 * 0.8) = ceil(80.8) = 81 -> 0.81
    assert conformal_threshold(scores, 0.2) == pytest.approx(0.81)
    # alpha 0.005: k = ceil(101 * 0.995) = ceil(100.495) = 101 > 100 -> every label in every set
    assert conformal_threshold(scores, 0.005) == math.inf
    with pytest.raises(ModelError, match="alpha = 1.5"):
        conformal_threshold(scores, 1.5)


def test_sets_weights_and_soft_labels():
    probs = torch.tensor([[0.7, 0.2, 0.1], [0.4, 0.35, 0.25], [0.5, 0.3, 0.2]])
    sets = prediction_sets(probs, qhat=0.68)   # keep p >= 1 - 0.68 = 0.32
    assert sets.tolist() == [[True, False, False], [True, True, False], [True, False, False]]
    assert set_weights(sets).tolist() == pytest.approx([1.0, 0.5, 1.0])
    # row 2: 0.4 / 0.75 and 0.35 / 0.75 over the set {0, 1}
    assert soft_labels(probs, sets)[1].tolist() == pytest.approx([0.4 / 0.75, 0.35 / 0.75, 0])
    empty = prediction_sets(probs, qhat=0.2)   # p >= 0.8: no label -> weight 0
    assert set_weights(empty).tolist() == [0.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def heldout_probs(fashion_mnist):
    """A nearest-class-mean classifier of 5000 Fashion-MNIST training images, ``p(y|x) =
    softmax(-|x - mu_y|^2 / 10)`` (no training: conformal coverage holds for any model);
    probabilities and labels of the 10000 held-out test images, from which calibration and
    test sets are both drawn (exchangeable)."""
    from models.shared import datasets
    d = datasets.fashion_mnist(limit_train=5000)
    x, y = torch.as_tensor(d.x_train), torch.as_tensor(d.y_train)
    means = torch.stack([x[y == c].mean(0) for c in range(10)])
    xt = torch.as_tensor(d.x_test)
    return (-torch.cdist(xt, means).pow(2) / 10).softmax(1), torch.as_tensor(d.y_test)


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_coverage_on_heldout_source_for_most_splits(heldout_probs, alpha):
    """The acceptance check: coverage in [1 - alpha - 0.02, 1 - alpha + 0.03] on held-out
    data, for at least 9 of 10 random 5000/5000 calibration/test splits (never one lucky
    split). The std of one split's coverage is about sqrt(2 alpha (1 - alpha) / 5000), i.e.
    0.004-0.008, so the band is > 2.5 std wide on each side."""
    probs, y = heldout_probs
    inside, covs = 0, []
    for seed in range(10):
        perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
        cal, test = perm[:5000], perm[5000:]
        scores = 1.0 - probs[cal].gather(1, y[cal, None])[:, 0]
        sets = prediction_sets(probs[test], conformal_threshold(scores, alpha))
        cov = float(sets.gather(1, y[test, None]).float().mean())
        covs.append(cov)
        inside += 1 - alpha - 0.02 <= cov <= 1 - alpha + 0.03
    assert inside >= 9, (alpha, covs)
    # and not trivially: the sets are smaller than all 10 labels
    assert float(sets.sum(1).float().mean()) < 9


def test_hamming_on_packed_codes_and_its_counts():
    rng = np.random.default_rng(0)
    bq = rng.choice([-1, 1], size=(3, 70)).astype(np.int8)
    bd = rng.choice([-1, 1], size=(5, 70)).astype(np.int8)
    dev = BitwiseDevice("x86-avx2")                          # 64-bit words: 70 bits -> 2
    ham = hamming_bitwise(dev, bq, bd)
    assert ham.tolist() == (bq[:, None, :] != bd[None, :, :]).sum(2).tolist()
    ops = dev.ledger.total_ops()
    # 3 x 5 outputs x 2 words: 30 XOR and 30 popcounts
    assert ops["xor_word"] == 30 and ops["popcount_word"] == 30


def test_uwhd_weights_the_differing_bits():
    bq = torch.tensor([[1.0, -1.0, 1.0, 1.0]])
    bd = torch.tensor([[1.0, 1.0, 1.0, -1.0], [1.0, -1.0, 1.0, 1.0]])
    w = torch.tensor([[0.9, 0.2, 0.5, 0.7]])
    # db 0 differs in bits 1 and 3: 0.2 + 0.7 = 0.9; db 1 equals the query: 0
    assert uwhd(w, bq, bd).tolist()[0] == pytest.approx([0.9, 0.0])
    # unit weights: the plain Hamming distance
    assert uwhd(torch.ones_like(w), bq, bd).tolist()[0] == pytest.approx([2.0, 0.0])


def test_average_precision_and_ties_keep_database_order():
    # ranked labels [1, 0, 1] for a query of class 1: (1/1 + 2/3) / 2 = 5/6
    ap = average_precision(torch.tensor([[1, 0, 1]]), torch.tensor([1]))
    assert ap.tolist() == pytest.approx([5 / 6])
    # all distances tied: the stable sort keeps the database order [0, 1, 1] -> (1/2 + 2/3) / 2
    got = rank_map(torch.zeros(1, 3), torch.tensor([0, 1, 1]), torch.tensor([1]))
    assert got == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_mmd_vanishes_for_equal_batches_and_grows_with_shift():
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(1))
    assert float(mmd2(x, x)) == pytest.approx(0.0, abs=1e-6)
    assert float(mmd2(x, x + 1.0)) > float(mmd2(x, x + 0.1)) > 0


def _codes(rng, n, bits):
    return np.where(rng.random((n, bits)) < 0.5, 1.0, -1.0)


def test_code_bytes_are_the_bytes_of_the_packed_words():
    from sim.bitwise.packing import pack_signs
    b = _codes(np.random.default_rng(2), 4, 70)
    words = pack_signs(b.astype(np.int8), 64)                 # 2 words, little-endian
    # 70 bits -> ceil(70 / 8) = 9 bytes: the first 9 of the 16 word bytes (the rest padding)
    assert (code_bytes(b) == words.view(np.uint8)[:, :9]).all()
    assert code_bytes(np.array([[1, -1, -1, 1, -1, -1, -1, -1, 1]])).tolist() == [[9, 1]]


@pytest.mark.parametrize("bits", [16, 32, 64, 70])
def test_lookup_table_uwhd_equals_naive_uwhd(bits):
    """The acceptance check of the lookup-table variant: equal to the naive sum over bits
    to 1e-5 on random codes and weights (in float64 both are exact to ~1e-13, so any
    wrong table entry, byte order or padding shows); in float32 (what the bench times)
    within float rounding of the naive result, sums of <= 70 weights in [0, 1]: at most
    a few ulp of 70, i.e. 1e-5 relative."""
    rng = np.random.default_rng(bits)
    bq, bd = _codes(rng, 40, bits), _codes(rng, 300, bits)
    w = rng.random((40, bits))
    naive = (w[:, None, :] * (bq[:, None, :] != bd[None, :, :])).sum(2)
    db = code_bytes(bd)
    tables = uwhd_tables(torch.tensor(w), torch.tensor(bq))            # float64
    assert tables.shape == (40, -(-bits // 8), 256)
    out = np.empty((40, 300))
    uwhd_lut_kernel(tables.numpy(), db, out)
    assert np.abs(out - naive).max() < 1e-5
    assert np.abs(uwhd_lut(tables, torch.tensor(db)).numpy() - naive).max() < 1e-5
    t32 = uwhd_tables(torch.tensor(w, dtype=torch.float32), torch.tensor(bq, dtype=torch.float32))
    out32 = np.empty((40, 300), np.float32)
    uwhd_lut_kernel(t32.numpy(), db, out32)
    assert np.allclose(out32, naive, rtol=1e-5, atol=1e-5)
    assert np.allclose(uwhd_lut(t32, torch.tensor(db)).numpy(), out32, rtol=1e-6, atol=0)


def test_lookup_table_uwhd_counts():
    from sim.torch_engine.engine import TorchDevice
    rng = np.random.default_rng(0)
    q, n, bits = 3, 5, 24                                        # 3 bytes per code
    bq = torch.tensor(_codes(rng, q, bits), dtype=torch.float32)
    w = torch.rand(q, bits, generator=torch.Generator().manual_seed(0))
    dev = TorchDevice("a100")
    with dev.count("lut", samples=q):
        uwhd_lut(uwhd_tables(w, bq), dev.tensor(code_bytes(_codes(rng, n, bits)), torch.uint8))
    ops = dev.ledger.total_ops("lut")
    # tables: (q * 3, 8) @ (8, 256) = 3 * 3 * 8 * 256 = 18432 MACs, whatever the database
    assert ops["mac_fp32"] == 18432
    # w * b, w + wb, 0.5 *, sum over 8: 4 * q * bits = 288; base - product: q * 3 * 256 = 2304;
    # the lookups' sum: q * n * 3 = 45 adds (the lookups themselves are a gather: bytes only)
    assert ops["flop_fp32"] == 288 + 2304 + 45
    # the byte offsets: 256 * arange(3) and + on the n x 3 bytes: 3 + 15 integer ops
    assert ops["int_add"] == 18 and not dev.ledger.uncounted()


@pytest.mark.parametrize("n_source, holdout, n_ok", [(10, 0.25, 11), (40, 0.99, 60)])
def test_a_source_set_within_the_hold_out_is_refused(n_source, holdout, n_ok):
    # 10 images: the hold-out is max(10, round(0.25 x 10) = 2) = 10, none left to train on;
    # 40 at holdout 0.99: round(39.6) = 40 held out. Before, training ran 0 steps and the
    # empty retrieval database raised "not enough values to unpack" in evaluate. n_ok
    # leaves one: 11 - max(10, round(2.75)) = 1; 60 - round(59.4) = 1
    from models.conformal_hashing.card import ColaConfig
    from models.conformal_hashing.data import DomainPair
    from models.conformal_hashing.model import VARIANTS, train
    from sim.torch_engine.engine import TorchDevice
    x = np.zeros((n_source, 1, 16, 16), np.float32)
    pair = DomainPair("digits", x, np.arange(n_source) % 10, x[:4], np.arange(4), 10, "zeros")
    cfg = ColaConfig(n_source=n_source, holdout=holdout, epochs=1, width=2, feat=4)
    n_hold = max(10, round(holdout * n_source))
    with pytest.raises(ModelError, match=rf"{n_source} source images \(n_source = {n_source}\) "
                       rf"leave none to train on after the calibration hold-out of {n_hold} "):
        train(pair, cfg, TorchDevice("a100"), VARIANTS["full"])
    x1 = np.zeros((n_ok, 1, 16, 16), np.float32)
    pair1 = DomainPair("digits", x1, np.arange(n_ok) % 10, x1[:4], np.arange(4), 10, "zeros")
    res = train(pair1, cfg, TorchDevice("a100"), VARIANTS["full"])
    assert len(res["train_idx"]) == 1 and len(res["hold"]) == n_ok - 1


def test_evaluate_refuses_a_diverged_network():
    # lr = 1e6 left NaN weights: every code sign(NaN) = -1, a MAP of identical codes (the
    # class base rate) and a NaN training loss were reported as a result
    from models.conformal_hashing.card import ColaConfig
    from models.conformal_hashing.data import DomainPair
    from models.conformal_hashing.model import VARIANTS, evaluate, train
    from sim.torch_engine.engine import TorchDevice
    x = np.random.default_rng(0).random((30, 1, 16, 16)).astype(np.float32)
    pair = DomainPair("digits", x, np.arange(30) % 10, x[:8], np.arange(8) % 10, 10, "noise")
    cfg = ColaConfig(n_source=30, epochs=1, width=2, feat=4, bits=8)
    dev, bdev = TorchDevice("a100"), BitwiseDevice("x86-avx2")
    res = train(pair, cfg, dev, VARIANTS["full"])
    assert 0.0 <= evaluate(res, pair, cfg, dev, bdev, VARIANTS["full"])["map"] <= 1.0
    with torch.no_grad():
        res["net"].hash.bias.fill_(float("nan"))
    with pytest.raises(ModelError, match=r"codes or class scores are not finite: training "
                                         r"diverged \(lr = 0.003\); lower lr"):
        evaluate(res, pair, cfg, dev, bdev, VARIANTS["full"])
