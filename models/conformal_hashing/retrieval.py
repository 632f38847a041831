"""COLA's retrieval: ranking by plain Hamming (packed codes on a ``BitwiseDevice``) and by
the uncertainty-weighted Hamming distance (UWHD), and MAP over the full ranking.

UWHD (the paper's Sec. 3.3): ``d(q, x) = sum_k w_qk (1 - b_qk b_xk) / 2`` with query-side bit
weights; computed either as one matrix product or by per-query byte lookup tables on the
packed codes that plain Hamming reads (reading 9 of ``model.py``). Retrieval protocol
(UDAH's, reading 8): target queries against the source training database, ties kept in
database order (a stable sort).
"""
from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch.nn import functional as F  # noqa: N812


def average_precision(order_labels: torch.Tensor, query_labels: torch.Tensor) -> torch.Tensor:
    """Per query: AP over the full ranking (``order_labels``: database labels in rank order)."""
    rel = (order_labels == query_labels[:, None]).to(torch.float32)
    ranks = torch.arange(1, rel.shape[1] + 1, device=rel.device, dtype=torch.float32)
    prec = rel.cumsum(1) / ranks
    return (prec * rel).sum(1) / rel.sum(1).clamp(min=1.0)


def rank_map(dist: torch.Tensor, db_labels: torch.Tensor, q_labels: torch.Tensor) -> float:
    """MAP@all of a distance matrix (queries x database), stable ascending ranking."""
    order = torch.sort(dist, dim=1, stable=True).indices
    return float(average_precision(db_labels[order], q_labels).mean())


def uwhd(w_q: torch.Tensor, b_q: torch.Tensor, b_db: torch.Tensor) -> torch.Tensor:
    """``sum_k w_qk (1 - b_qk b_xk) / 2`` for every query/database pair, one matmul."""
    return 0.5 * (w_q.sum(1, keepdim=True) - (w_q * b_q) @ b_db.T)


_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float32)
"""(256, 8): bit i of byte value v, LSB first (the packed layout of ``sim.bitwise.packing``)."""


def code_bytes(b: np.ndarray) -> np.ndarray:
    """+-1 codes (N, L) as bytes (N, ceil(L/8)) uint8: bit i of byte j is element ``8j + i``,
    bit 1 = +1, zero padding; the first bytes of ``sim.bitwise.packing.pack_signs``'s
    little-endian words, i.e. the same stored database as plain Hamming reads."""
    return np.packbits(np.asarray(b) > 0, axis=1, bitorder="little")


def uwhd_tables(w_q: torch.Tensor, b_q: torch.Tensor) -> torch.Tensor:
    """UWHD as table lookups, step 1: per query and code byte ``j`` the 256-entry table
    ``T[q, j, v] = sum_i w_q,8j+i [bit i of v != bit 8j+i of q]`` (Q, ceil(L/8), 256).

    With ``b`` in +-1 and ``p_i`` bit i of ``v``, a bit differs iff ``p_i != (1 + b_i)/2``,
    so ``T = sum_i w_i (1 + b_i)/2 - sum_i p_i w_i b_i``: one (Q ceil(L/8), 8) x (8, 256)
    matmul, Q ceil(L/8) 256 8 MACs, independent of the database size. Padding bits of a
    last partial byte get weight 0 (they never count).
    """
    q, bits = w_q.shape
    nb = -(-bits // 8)
    pad = nb * 8 - bits
    w = F.pad(w_q, (0, pad)) if pad else w_q
    b = F.pad(b_q, (0, pad), value=1.0) if pad else b_q
    wb = w * b
    base = (0.5 * (w + wb)).reshape(q, nb, 8).sum(2, keepdim=True)
    p = torch.as_tensor(_BYTE_BITS, dtype=w.dtype, device=w.device)
    return base - wb.reshape(q, nb, 8) @ p.T


def uwhd_lut(tables: torch.Tensor, db_bytes: torch.Tensor) -> torch.Tensor:
    """UWHD as table lookups, step 2: ``d[q, n] = sum_j T[q, j, byte_j(x_n)]``, Q N ceil(L/8)
    lookups (a gather: bytes, no arithmetic) and adds (the sum), on the packed database.
    Equal to :func:`uwhd` up to float rounding (tests/models/conformal_hashing)."""
    q, nb, _ = tables.shape
    idx = db_bytes.to(torch.int64) + 256 * torch.arange(nb, device=db_bytes.device)
    return tables.reshape(q, nb * 256)[:, idx].sum(2)


@njit(cache=True, nogil=True)
def uwhd_lut_kernel(tables, db_bytes, out):
    """:func:`uwhd_lut` on the host CPU: ``out[q, n] = sum_j tables[q, j, db_bytes[n, j]]``.

    tables (Q, nb, 256) float32, db_bytes (N, nb) uint8, out (Q, N) float32. The bytes are
    first laid out byte-major (nb, N), as the bitwise kernel re-lays its database rows per
    call, so the inner loop runs over database rows (one table of 1 KB, in L1, per pass)
    and LLVM can vectorise it (gathers); the sum over j runs in byte order.
    """
    q, nb, _ = tables.shape
    n = db_bytes.shape[0]
    dbt = np.empty((nb, n), np.uint8)
    for i in range(n):
        for j in range(nb):
            dbt[j, i] = db_bytes[i, j]
    for a in range(q):
        t0 = tables[a, 0]
        c0 = dbt[0]
        for i in range(n):
            out[a, i] = t0[c0[i]]
        for j in range(1, nb):
            t = tables[a, j]
            c = dbt[j]
            for i in range(n):
                out[a, i] += t[c[i]]


def hamming_bitwise(bdev, b_q: np.ndarray, b_db: np.ndarray) -> np.ndarray:
    """Plain Hamming distances of +-1 codes on packed words: ``(L - <b_q, b_x>) / 2``, the
    inner product by XOR + popcount (``BitwiseDevice.sign_matmul``)."""
    from sim.bitwise.packing import pack_signs
    bits = b_q.shape[1]
    qw = pack_signs(b_q.astype(np.int8), bdev.word_bits)
    dw = pack_signs(b_db.astype(np.int8), bdev.word_bits)
    dot = bdev.sign_matmul(qw, dw, bits)
    return (bits - dot) // 2


def signs(h: torch.Tensor) -> torch.Tensor:
    """``sign(h)`` with 0 -> +1 (a bit is always one of two values)."""
    return torch.where(h >= 0, 1.0, -1.0)
