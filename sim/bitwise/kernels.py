"""numba kernels of the bitwise engine: XOR-popcount products of packed +/-1 matrices, clauses.

Following stumpy/pynndescent: functions of arrays and scalars only, no checks (the owning
:class:`~sim.bitwise.device.BitwiseDevice` validates), counts added into an int64 array
indexed by ``hw_profiles.ops.OP_CODES`` and flushed to the ledger by the caller.

The +/-1 product of two K-bit rows is ``K - 2 popcount(a XOR b)`` (= ``2 popcount(XNOR) - K``
with XNOR over the K real bits): bits that agree contribute +1, bits that differ -1. The
XOR form needs no mask for the zero padding bits and is one instruction per word on
Thumb-2 and x86 (XNOR is two there), so that is what runs and what is counted
(``xor_word``), as the Cortex-M and x86 profiles ask.

Popcount is LLVM's ``ctpop``, which numba compiles for the host CPU: ``POPCNT`` on x86-64,
and ``VPOPCNTQ`` when LLVM vectorises the word loop on a CPU with AVX-512 VPOPCNTDQ.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import config, njit, types
from numba.extending import intrinsic

from hw_profiles.ops import OP_CODES

XOR, AND, OR, POPC, ADD, CMP = (OP_CODES[k] for k in ("xor_word", "and_word", "or_word",
                                                      "popcount_word", "int_add", "int_cmp"))


@intrinsic
def _popc_llvm(typingctx, x):
    """Population count of one unsigned word (LLVM ``llvm.ctpop``) as an int64.

    Returning int64 (not the word's unsigned type) keeps sums integer: numba promotes
    int64 + uint64 to float64.
    """
    sig = types.int64(x)

    def codegen(context, builder, signature, args):
        c = builder.ctpop(args[0])
        return builder.zext(c, ir.IntType(64)) if c.type.width < 64 else c
    return sig, codegen


def _popc_python(x):
    """Pure-Python twin for NUMBA_DISABLE_JIT=1 runs (coverage), where intrinsics cannot run."""
    return int(x).bit_count()


popc = _popc_python if config.DISABLE_JIT else _popc_llvm


@njit(cache=True, nogil=True)
def xor_popcount_matmul(a, b, k, out, counts):
    """out[i, j] = k - 2 * sum_w popcount(a[i, w] ^ b[j, w]).

    a [N, W], b [M, W] packed words of one dtype; out [N, M] int32.
    Per output: W xor_word, W popcount_word, W int_add (accumulate) + 1 int_add (k - 2s).
    """
    n, w = a.shape
    m = b.shape[0]
    tile = 64  # rows of b per tile: 64 x W words stay in L1 while every row of a passes
    for j0 in range(0, m, tile):
        j1 = min(j0 + tile, m)
        for i in range(n):
            for j in range(j0, j1):
                s = 0
                for v in range(w):
                    s += popc(a[i, v] ^ b[j, v])
                out[i, j] = k - 2 * s
    nm = n * m
    counts[XOR] += nm * w
    counts[POPC] += nm * w
    counts[ADD] += nm * (w + 1)


@njit(cache=True, nogil=True)
def mask_popcount(mask, keff, counts):
    """keff[r] = sum_w popcount(mask[r, w]): the number of bits a masked product uses."""
    r, w = mask.shape
    for i in range(r):
        s = 0
        for v in range(w):
            s += popc(mask[i, v])
        keff[i] = s
    counts[POPC] += r * w
    counts[ADD] += r * w


@njit(cache=True, nogil=True)
def masked_xor_popcount_matmul(a, b, mask, keff, mask_of_a, out, counts):
    """out[i, j] = keff[r] - 2 * sum_w popcount((a[i, w] ^ b[j, w]) & mask[r, w]).

    ``r = i`` when ``mask_of_a`` (one mask per row of a), else ``r = j`` (one per row of b);
    keff [R] int64 holds popcount(mask[r]). Only bits with mask 1 contribute.
    Per output: W xor_word, W and_word, W popcount_word, W + 1 int_add.
    """
    n, w = a.shape
    m = b.shape[0]
    tile = 64
    for j0 in range(0, m, tile):
        j1 = min(j0 + tile, m)
        for i in range(n):
            for j in range(j0, j1):
                r = i if mask_of_a else j
                s = 0
                for v in range(w):
                    s += popc((a[i, v] ^ b[j, v]) & mask[r, v])
                out[i, j] = keff[r] - 2 * s
    nm = n * m
    counts[XOR] += nm * w
    counts[AND] += nm * w
    counts[POPC] += nm * w
    counts[ADD] += nm * (w + 1)


@njit(cache=True, nogil=True)
def clause_votes(x, pos, neg, cls, wt, votes, fired, counts):
    """Tsetlin-machine clauses: clause c fires on row i iff every included literal is true,
    i.e. ``(pos[c] AND NOT x[i]) OR (neg[c] AND x[i])`` is 0 in every word; a firing
    clause adds ``wt[c]`` to ``votes[i, cls[c]]`` and sets bit c of ``fired[i]``.

    x [N, W], pos/neg [C, W] include masks of the positive / negated literals, cls, wt [C];
    votes [N, n_classes] int32 (zeroed by the caller), fired [N, ceil(C/wb)] (zeroed).
    Per row and clause: W x (2 and_word (AND / AND-NOT) + 2 or_word), 1 int_cmp (== 0);
    per firing clause 1 int_add.
    """
    n, w = x.shape
    c_total = pos.shape[0]
    wb = fired.itemsize * 8
    one = fired.dtype.type(1)
    adds = 0
    # the host runs word-major over all clauses (include words transposed, clause index
    # innermost: a loop the compiler vectorises); the device evaluates every word of every
    # clause (counted below), so the counts do not depend on the host's order
    pt = np.empty((w, c_total), x.dtype)
    nt = np.empty((w, c_total), x.dtype)
    for c in range(c_total):
        for v in range(w):
            pt[v, c] = pos[c, v]
            nt[v, c] = neg[c, v]
    viol = np.empty(c_total, x.dtype)
    for i in range(n):
        for c in range(c_total):
            viol[c] = 0
        for v in range(w):
            xv = x[i, v]
            nx = ~xv
            prow = pt[v]
            nrow = nt[v]
            for c in range(c_total):
                viol[c] |= (prow[c] & nx) | (nrow[c] & xv)
        for c in range(c_total):
            if viol[c] == 0:
                votes[i, cls[c]] += wt[c]
                fired[i, c // wb] |= one << fired.dtype.type(c % wb)
                adds += 1
    counts[AND] += n * c_total * w * 2
    counts[OR] += n * c_total * w * 2
    counts[CMP] += n * c_total
    counts[ADD] += adds
