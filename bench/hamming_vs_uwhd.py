"""Retrieval cost of COLA's codes on the host CPU: plain Hamming (XOR + popcount) against UWHD.

The digest's efficiency check (COLA, ICLR 2026, OpenReview fBmRLVAw4T, its UWHD retrieval):
CPU time, in one run, of Q target queries against an N-code database (default 1000 x 10000)
at 16, 32 and 64 bits, every path single-threaded (``torch.set_num_threads(1)``; numba
kernels are serial), each computing every distance eagerly (no lazy result; each path's
output is checked against the others after timing):

- ``hamming``: the bitwise engine, ``BitwiseDevice("x86-avx2").sign_matmul`` on 64-bit
  packed words (what ``sim.bitwise`` prices: ``ceil(L/64)`` XOR + popcount words per pair),
  queries packed inside the timed call; it returns ``dot = L - 2 d_H``, which ranks the
  database exactly as ``d_H`` does, so the conversion (a numpy pass over Q x N, about as
  long as the kernel itself) is left out; ``hamming_kernel``: the bare numba kernel
  (``kernels.xor_popcount_matmul``) without the device's input checks and ledger flush;
- ``uwhd_naive``: ``sum_k w_qk (1 - b_qk b_xk) / 2`` as Q x N x L float multiply-adds in
  torch (broadcast product and sum, in query chunks of ~8M elements);
- ``uwhd_matmul``: the same distance as the room computes it (``model.uwhd``: one float32
  sgemm, Q x N x L MACs in MKL/oneDNN);
- ``uwhd_lut``: per query and code byte a 256-entry table (``model.uwhd_tables``, Q x L/8 x
  256 x 8 MACs), then Q x N x L/8 lookups and adds on the packed database bytes
  (``model.uwhd_lut_kernel``, numba);
- ``uwhd_lut_torch``: the room's counted form of the lookups (``model.uwhd_lut``: a gather
  and a sum; ``--set uwhd_kernel=lut``), query chunks of ~8M gathered elements;
- ``uwhd_gemm``: the matmul form as one ``addmm`` into a reused output (no Q x N
  temporaries).

Two tiers: the first four allocate their Q x N results (and temporaries) per call, as the
engine and the room do; ``hamming_kernel``, ``uwhd_gemm`` and ``uwhd_lut`` write into
outputs allocated once. At these sizes a fresh 40 MB result costs its page faults (system
CPU time, in ``process_time``), which is a large part of the allocating tier's times.

Timing: best of ``--repeats`` samples, each looping one path for ~0.25 s of CPU time
(``time.process_time``), the paths taking turns so load on a shared machine hits all alike
(as ``bench/bitwise_gemm.py`` does). Ratios are path time / Hamming time; ``gap_closed`` =
(naive - lut) / (naive - hamming), the share of naive UWHD's extra cost the tables remove.
Last line: ``RESULT {json}``.

    python bench/hamming_vs_uwhd.py                  # 1000 x 10000 at 16/32/64 bits
    python bench/hamming_vs_uwhd.py --queries 200    # smaller
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench._timing import best_interleaved  # noqa: E402
from hw_profiles.ops import OP_CODES  # noqa: E402
from models.conformal_hashing.retrieval import (  # noqa: E402
    code_bytes,
    uwhd,
    uwhd_lut,
    uwhd_lut_kernel,
    uwhd_tables,
)
from sim.bitwise import BitwiseDevice, kernels  # noqa: E402
from sim.bitwise.packing import pack_signs  # noqa: E402

CHUNK = 8_000_000   # elements of a broadcast / gathered block (32 MB of float32)




def paths(w, bq, bdb, bits):
    """The five timed paths, each from the stored form of the database it reads."""
    bdev = BitwiseDevice("x86-avx2")
    db_words = pack_signs(bdb.astype(np.int8), 64)        # the stored database: packed codes
    db_bytes = code_bytes(bdb)                              # the same bits, as bytes
    bq8 = bq.astype(np.int8)
    wt, bqt, bdbt = (torch.tensor(a, dtype=torch.float32) for a in (w, bq, bdb))
    dbt_bytes = torch.tensor(db_bytes)
    q, n = len(bq), len(bdb)

    def hamming():
        return bdev.sign_matmul(pack_signs(bq8, 64), db_words, bits)

    ham_out = np.empty((q, n), np.int32)     # the kernel tier writes into reused outputs
    gemm_out = torch.empty((q, n))
    lut_out = np.empty((q, n), np.float32)

    def hamming_kernel():
        kernels.xor_popcount_matmul(pack_signs(bq8, 64), db_words, bits, ham_out,
                                    np.zeros(len(OP_CODES), np.int64))
        return ham_out

    def uwhd_gemm():
        # sum_k w (1 - b_q b_x) / 2 = 0.5 sum_k w - 0.5 (w b_q) . b_x: one sgemm with beta
        wb, ws = wt * bqt, 0.5 * wt.sum(1, keepdim=True)
        return torch.addmm(ws, wb, bdbt.T, alpha=-0.5, out=gemm_out)

    def uwhd_naive():
        wb, ws = wt * bqt, wt.sum(1, keepdim=True)
        step = max(1, CHUNK // (n * bits))
        return torch.cat([0.5 * (ws[i:i + step] - (wb[i:i + step, None, :] * bdbt[None]).sum(2))
                          for i in range(0, q, step)])

    def uwhd_matmul():
        return uwhd(wt, bqt, bdbt)

    def lut():
        uwhd_lut_kernel(uwhd_tables(wt, bqt).numpy(), db_bytes, lut_out)
        return lut_out

    def lut_torch():
        tables = uwhd_tables(wt, bqt)
        step = max(1, CHUNK // (n * db_bytes.shape[1]))
        return torch.cat([uwhd_lut(tables[i:i + step], dbt_bytes) for i in range(0, q, step)])

    return {"hamming": hamming, "uwhd_naive": uwhd_naive, "uwhd_matmul": uwhd_matmul,
            "uwhd_lut_torch": lut_torch, "hamming_kernel": hamming_kernel,
            "uwhd_gemm": uwhd_gemm, "uwhd_lut": lut}


def check(outs, w, bq, bdb) -> dict:
    """Every path computed every distance: Hamming equals the count of differing bits;
    the UWHD paths agree with the naive one to float32 rounding (1e-5 relative)."""
    bits = bq.shape[1]
    want = (bq[:8, None, :] != bdb[None, :, :]).sum(2)     # first 8 queries, exactly
    for name in ("hamming", "hamming_kernel"):
        assert np.array_equal((bits - outs[name][:8]) // 2, want), name
    naive = np.asarray(outs["uwhd_naive"], np.float64)
    err = {}
    for name in ("uwhd_matmul", "uwhd_gemm", "uwhd_lut", "uwhd_lut_torch"):
        got = np.asarray(outs[name], np.float64)
        assert got.shape == naive.shape, name
        err[name] = float(np.abs(got - naive).max())
        assert np.allclose(got, naive, rtol=1e-5, atol=1e-5), (name, err[name])
    # and naive itself against the definition on the first 8 queries, in float64
    ref = (w[:8, None, :] * (bq[:8, None, :] != bdb[None, :, :])).sum(2)
    err["uwhd_naive_vs_float64"] = float(np.abs(naive[:8] - ref).max())
    assert err["uwhd_naive_vs_float64"] < 1e-4
    return err


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--database", type=int, default=10000)
    ap.add_argument("--bits", default="16,32,64")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    q, n = args.queries, args.database
    result = {"queries": q, "database": n, "repeats": args.repeats,
              "cpu": platform.processor() or platform.machine(), "per_bits": {}}
    print(f"{q} queries x {n} database codes, CPU s per full distance matrix "
          f"(best of {args.repeats}, single-threaded)")
    for bits in (int(b) for b in args.bits.split(",")):
        bq = np.where(rng.random((q, bits)) < 0.5, 1.0, -1.0)
        bdb = np.where(rng.random((n, bits)) < 0.5, 1.0, -1.0)
        w = rng.random((q, bits))
        fns = paths(w, bq, bdb, bits)
        best, outs = best_interleaved(fns, args.repeats)
        err = check(outs, w, bq, bdb)
        nb, words = -(-bits // 8), -(-bits // 64)
        ham = best["hamming"]
        hk = best["hamming_kernel"]
        entry = {"cpu_s": best, "ratio_to_hamming": {k: v / ham for k, v in best.items()},
                 "ratio_to_hamming_kernel": {k: v / hk for k, v in best.items()},
                 "gap_closed_lut": (best["uwhd_naive"] - best["uwhd_lut"])
                 / (best["uwhd_naive"] - ham),
                 "gap_closed_lut_vs_gemm": (best["uwhd_gemm"] - best["uwhd_lut"])
                 / (best["uwhd_gemm"] - hk),
                 "lut_vs_matmul": best["uwhd_lut"] / best["uwhd_matmul"],
                 "lut_vs_gemm": best["uwhd_lut"] / best["uwhd_gemm"],
                 "max_abs_err_vs_naive": err,
                 "ops": {"hamming_xor_popcount_words": q * n * words,
                         "uwhd_macs": q * n * bits,
                         "lut_table_macs": q * nb * 256 * 8, "lut_lookups": q * n * nb}}
        result["per_bits"][str(bits)] = entry
        names = list(best)
        print(f"L={bits:>2} allocating: " + "  ".join(
            f"{k} {best[k] * 1e3:.2f} ms (x{best[k] / ham:.1f})" for k in names[:4]))
        print("     reused outputs: " + "  ".join(
            f"{k} {best[k] * 1e3:.2f} ms (x{best[k] / hk:.1f})" for k in names[4:]))
        print(f"     lookup tables close {100 * entry['gap_closed_lut']:.0f}% of the naive "
              f"UWHD - Hamming gap, {100 * entry['gap_closed_lut_vs_gemm']:.0f}% of the sgemm "
              f"- Hamming-kernel gap; lut / matmul = {entry['lut_vs_matmul']:.2f}, lut / gemm "
              f"= {entry['lut_vs_gemm']:.2f}; max |lut - naive| = {err['uwhd_lut']:.1e}")
    result["wall_s"] = time.perf_counter() - t0
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
