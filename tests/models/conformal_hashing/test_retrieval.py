"""COLA's retrieval: UWHD (matmul and lookup tables), plain Hamming on packed codes, MAP."""
import numpy as np
import pytest
import torch

from models.conformal_hashing.retrieval import (
    average_precision,
    code_bytes,
    hamming_bitwise,
    rank_map,
    uwhd,
    uwhd_lut,
    uwhd_lut_kernel,
    uwhd_tables,
)
from sim.bitwise import BitwiseDevice


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
    dev = TorchDevice("a100")
    bq = dev.tensor(_codes(rng, q, bits))                        # float32
    w = torch.rand(q, bits, generator=torch.Generator().manual_seed(0)).to(dev.torch_device)
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
