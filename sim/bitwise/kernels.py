"""numba kernels of the bitwise engine: XOR-popcount products of packed +/-1 matrices, clauses.

Following stumpy/pynndescent: functions of arrays and scalars only, no checks (the owning
:class:`~sim.bitwise.device.BitwiseDevice` validates), counts added into an int64 array
indexed by ``hw_profiles.ops.OP_CODES`` and flushed to the ledger by the caller.

The +/-1 product of two K-bit rows is ``K - 2 popcount(a XOR b)`` (= ``2 popcount(XNOR) - K``
with XNOR over the K real bits): bits that agree contribute +1, bits that differ -1. The
XOR form needs no mask for the zero padding bits and is one instruction per word on
Thumb-2 and x86 (XNOR is two there), so that is what runs and what is counted
(``xor_word``), as the Cortex-M and x86 profiles ask.

Popcount is LLVM's ``ctpop``, which numba compiles for the host CPU. The products run one
word of a row of a against the same word of 128 rows of b laid out side by side, a loop over
rows of b that LLVM vectorises at full width for any W (see ``_lane_blocks``); 32-bit words
are paired into 64-bit ones first (same sums). What that loop compiles to, read from the
assembly (``bench/bitwise_gemm.py`` lists it): on an AVX-512 VPOPCNTDQ core (the Zen 5 the
project is benchmarked on) ``vpxorq`` / ``vpopcntq`` / ``vpaddq`` on 512-bit zmm registers,
4 words x 8 rows of b per iteration; a build for an AVX2-only core (``NUMBA_CPU_NAME=haswell``)
has no vector popcount and counts bits with a nibble table, ``vpshufb`` + ``vpsadbw`` on
256-bit ymm; the scalar fallbacks (alias checks failed, loop tails) use ``POPCNT``.
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


# ---- XOR-popcount products ------------------------------------------------------------------
# Rows of b are laid out lane-major (``_lane_blocks``): word v of _LANES consecutive rows of b
# side by side, so one word of a row of a meets _LANES words of b in one loop over lanes that
# LLVM vectorises at full width whatever W is (8 lanes per 512-bit VPOPCNTQ), each lane
# accumulating its own output: no horizontal sum per output, and each word of a is loaded
# once per _LANES outputs. (The row-major loop over W instead ran LLVM's 4-word epilogue at
# W = 16 and summed a vector per output.)

_LANES = 128   # rows of b per block: one int64 accumulator each
_ROWS = 16     # rows of a per block: _ROWS x _LANES accumulators = 16 KB
_CHUNK = 16    # 64-bit words per pass over a block of b: _CHUNK x _LANES x 8 B = 16 KB
# accumulators + that chunk of b = 32 KB, inside the 32-48 KB L1D of current x86-64 cores


@njit(cache=True, nogil=True)
def _wide_rows(x, w64):
    """x [R, W] uint32/uint64 words as uint64 [R, w64]: two 32-bit words per 64-bit word (low
    word first, the last one zero-padded when W is odd).

    popcount(a ^ b) of a 64-bit word is the sum over its two 32-bit halves and zero padding
    meets zero padding, so every product is unchanged; the counts stay those of W words.
    """
    r, w = x.shape
    out = np.zeros((r, w64), np.uint64)
    if x.itemsize == 8:
        for i in range(r):
            for v in range(w):
                out[i, v] = x[i, v]
    else:
        for i in range(r):
            for v in range(w):
                out[i, v >> 1] |= np.uint64(x[i, v]) << np.uint64(32 * (v & 1))
    return out


@njit(cache=True, nogil=True)
def _lane_blocks(x, w64):
    """x [M, W] as uint64 [ceil(M / _LANES), w64, _LANES], word v of row j at
    [j // _LANES, v, j % _LANES] (64-bit words as in ``_wide_rows``). Lanes past M are zero;
    their outputs are computed and never stored."""
    wide = _wide_rows(x, w64)
    m = x.shape[0]
    out = np.zeros((-(-m // _LANES), w64, _LANES), np.uint64)
    for j in range(m):
        for v in range(w64):
            out[j // _LANES, v, j % _LANES] = wide[j, v]
    return out


@njit(cache=True, nogil=True)
def _acc_block(acc, a64, i0, i1, bt, jb, v0, v1):
    """acc[i - i0, l] += sum_{v0 <= v < v1} popcount(a64[i, v] ^ bt[jb, v, l]) for i0 <= i < i1.

    Four words per pass over the lanes: one load and store of acc per four XOR-popcounts.
    Plain indexing (no row views) keeps numba's reference counting out of the loop.
    """
    lanes = bt.shape[2]
    for i in range(i0, i1):
        r = i - i0
        v = v0
        while v + 4 <= v1:
            x0, x1, x2, x3 = a64[i, v], a64[i, v + 1], a64[i, v + 2], a64[i, v + 3]
            for lane in range(lanes):
                acc[r, lane] += ((popc(x0 ^ bt[jb, v, lane]) + popc(x1 ^ bt[jb, v + 1, lane]))
                                 + (popc(x2 ^ bt[jb, v + 2, lane])
                                    + popc(x3 ^ bt[jb, v + 3, lane])))
            v += 4
        while v < v1:
            x0 = a64[i, v]
            for lane in range(lanes):
                acc[r, lane] += popc(x0 ^ bt[jb, v, lane])
            v += 1


@njit(cache=True, nogil=True)
def _acc_block_masked(acc, a64, i0, i1, bt, mt, ma, jb, v0, v1):
    """As ``_acc_block`` with each word ANDed with the mask: mt [blocks, w64, _LANES] (one
    mask per row of b, lane-major like bt) when ma has no rows, else ma [N, w64] (one per
    row of a). Four words per pass over the lanes, as there."""
    lanes = bt.shape[2]
    per_b = ma.shape[0] == 0
    for i in range(i0, i1):
        r = i - i0
        v = v0
        while v + 4 <= v1:
            x0, x1, x2, x3 = a64[i, v], a64[i, v + 1], a64[i, v + 2], a64[i, v + 3]
            if per_b:
                for lane in range(lanes):
                    acc[r, lane] += (
                        (popc((x0 ^ bt[jb, v, lane]) & mt[jb, v, lane])
                         + popc((x1 ^ bt[jb, v + 1, lane]) & mt[jb, v + 1, lane]))
                        + (popc((x2 ^ bt[jb, v + 2, lane]) & mt[jb, v + 2, lane])
                           + popc((x3 ^ bt[jb, v + 3, lane]) & mt[jb, v + 3, lane])))
            else:
                m0, m1, m2, m3 = ma[i, v], ma[i, v + 1], ma[i, v + 2], ma[i, v + 3]
                for lane in range(lanes):
                    acc[r, lane] += ((popc((x0 ^ bt[jb, v, lane]) & m0)
                                      + popc((x1 ^ bt[jb, v + 1, lane]) & m1))
                                     + (popc((x2 ^ bt[jb, v + 2, lane]) & m2)
                                        + popc((x3 ^ bt[jb, v + 3, lane]) & m3)))
            v += 4
        while v < v1:
            x = a64[i, v]
            if per_b:
                for lane in range(lanes):
                    acc[r, lane] += popc((x ^ bt[jb, v, lane]) & mt[jb, v, lane])
            else:
                mx = ma[i, v]
                for lane in range(lanes):
                    acc[r, lane] += popc((x ^ bt[jb, v, lane]) & mx)
            v += 1


@njit(cache=True, nogil=True)
def xor_popcount_matmul(a, b, k, out, counts):
    """out[i, j] = k - 2 * sum_w popcount(a[i, w] ^ b[j, w]).

    a [N, W], b [M, W] packed words of one dtype; out [N, M] int32.
    Per output: W xor_word, W popcount_word, W int_add (accumulate) + 1 int_add (k - 2s):
    the word-serial algorithm's counts, whatever vector width the host runs it at.
    """
    n, w = a.shape
    m = b.shape[0]
    w64 = (w * a.itemsize + 7) // 8
    a64 = _wide_rows(a, w64)
    bt = _lane_blocks(b, w64)
    acc = np.empty((_ROWS, _LANES), np.int64)
    for jb in range(bt.shape[0]):
        j0 = jb * _LANES
        jn = min(_LANES, m - j0)
        for i0 in range(0, n, _ROWS):
            i1 = min(i0 + _ROWS, n)
            acc[:] = 0
            for v0 in range(0, w64, _CHUNK):
                _acc_block(acc, a64, i0, i1, bt, jb, v0, min(v0 + _CHUNK, w64))
            for i in range(i0, i1):
                for lane in range(jn):
                    out[i, j0 + lane] = k - 2 * acc[i - i0, lane]
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
    w64 = (w * a.itemsize + 7) // 8
    a64 = _wide_rows(a, w64)
    bt = _lane_blocks(b, w64)
    if mask_of_a:
        ma = _wide_rows(mask, w64)
        mt = np.zeros((0, w64, _LANES), np.uint64)
    else:
        ma = np.zeros((0, w64), np.uint64)
        mt = _lane_blocks(mask, w64)
    acc = np.empty((_ROWS, _LANES), np.int64)
    for jb in range(bt.shape[0]):
        j0 = jb * _LANES
        jn = min(_LANES, m - j0)
        for i0 in range(0, n, _ROWS):
            i1 = min(i0 + _ROWS, n)
            acc[:] = 0
            for v0 in range(0, w64, _CHUNK):
                _acc_block_masked(acc, a64, i0, i1, bt, mt, ma, jb, v0, min(v0 + _CHUNK, w64))
            for i in range(i0, i1):
                for lane in range(jn):
                    r = i if mask_of_a else j0 + lane
                    out[i, j0 + lane] = keff[r] - 2 * acc[i - i0, lane]
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
