"""XNOR-popcount GEMM of BitwiseDevice against torch float32 matmul, and against a measured peak.

One run, same shape (default 1024 x 1024 x 1024), all single-threaded, CPU time:

- neuroedge: ``BitwiseDevice.sign_matmul`` on +/-1 matrices packed in 64-bit words (the
  numba kernel: ``K - 2 popcount(a XOR b)``, b copied into lane-major blocks of 128 rows, each
  word of a row of a XOR-popcounted against those 128 rows with one accumulator per row of
  b, four words of a per pass), timed through the device method (validation + ledger flush
  included) and as the bare kernel; the same on 32-bit words, which the kernel pairs into
  64-bit words first (so it runs 64-bit popcounts too);
- anchor: ``torch.matmul`` of the same +/-1 matrices as float32 (MKL/oneDNN sgemm), with
  ``torch.set_num_threads(1)``: the full N x M product, computed eagerly; its result must
  equal the packed product exactly.

What the kernel runs is read from its own machine code, not assumed. The compiled
dispatcher's assembly (``inspect_asm``, or that of an uncached twin compiled for the same
signature) is split into its innermost loops (a backward branch with no other backward
branch inside); every one that popcounts is printed with its popcount instructions, each
counted at its register's width (``vpopcntq`` on zmm: 8 lanes of 64 bits, ymm 4, xmm 2,
``vpopcntd`` 32-bit lanes, scalar ``popcnt`` 1), so popcounts per iteration, and with its
induction step (rows of b per iteration): their ratio is the words of a per row of b of
one pass, i.e. which source loop it is (the four-word pass or the one-word tail pass).
Each pass has a vector loop (with epilogue loops) and LLVM's scalar copy, which runs when
the runtime alias check before the vector loop fails. Which of them the time goes to is
measured, not modelled: the kernel's inner call (``kernels._acc_block``) is timed on the
kernel's own operands at this shape, one pass at a time, once with separate accumulators
(all rows per call, as in the kernel: the alias check passes) and once with the
accumulators a view of the b words being read (a row per call: the check fails, the scalar
copy runs). The whole kernel cannot run faster than the loops it runs, so its own rate
bounds the share of its words any slower path can carry (``max_share``); the fastest path
is the hot one, and the widest loop of that path (most popcounts per iteration) is marked
HOT, its instructions printed. On the Zen 5 machine that is the
four-word pass's vector loop: 4 ``vpxorq`` (b loads folded in), 4 512-bit ``vpopcntq``,
4 ``vpaddq``, one store of 8 accumulators, 32 word popcounts per iteration.

Peak, measured in the same run, two ways (``_chain`` / ``_chain_mul``, ``_l1_popcount_loop``):

- clock: a chain of dependent integer ``add`` and ``xor`` (1 cycle latency each on x86-64),
  2 cycles per iteration, timed with CPU time: cycles per CPU-second = 2 x iterations / s.
  CPU time, not the nominal /proc/cpuinfo clock: the core boosts above it (and in a VM,
  time stolen by the host also shows up as fewer cycles per second, to both sides alike).
- popcount-loop peak: ``s += popcount(a[v] ^ b[v])`` over two rows of 512 words (8 KB, in
  L1, 64-byte aligned) re-read many times, so LLVM runs its widest vector loop (4 x 512-bit
  VPOPCNTQ per iteration, the width of the kernel's hot loop) with no memory traffic past
  L1: peak binary MAC/s = word bits x words/s of that loop; divided by the measured clock it
  gives words per cycle (2026-12-01, Zen 5 VM: 8.0, i.e. per cycle one 512-bit VPOPCNTQ and
  two 512-bit loads; rows not 64-byte aligned split every load across two cache lines and
  get 4.0). The kernel's hot loop is the same instructions on the same kind of data, plus a
  load and store of accumulators and loop and block overhead, so its fraction of this peak
  is at most 1 up to timing noise. Both word widths' rows are given as a fraction of the
  64-bit peak (the 32-bit kernel pairs its words; the 32-bit peak loop is printed for
  reference). A second chain (``imul`` + ``xor``, 3 + 1 cycles) checks the clock.

Also printed: the rate against one scalar 64-bit POPCNT per cycle at the measured clock
(64 binary MACs per cycle): a vectorised kernel can pass it, which is why it is a multiple,
not a "% of peak".

Timing: best of ``--repeats`` samples, each looping one side for ~0.25 s of CPU time, the
sides (and the clock and peak loops) taking turns (``bench._timing.best_interleaved``), so
load on a shared machine hits all of them alike. Last line: ``RESULT {json}``.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bitwise_gemm.py [--n 1024] [--repeats 5]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import warnings
from collections import Counter
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench._timing import best_interleaved  # noqa: E402
from sim.bitwise import BitwiseDevice, kernels, pack_signs  # noqa: E402

CHAIN_ITERS = 20_000_000      # ~12 ms at 3 GHz: one call of the clock chain
PEAK_WORDS = 512              # words per row in the L1 peak loop: two rows = 8 KB of 64-bit words
PEAK_REPS = 4_000             # re-reads of those rows per call (~2 M words, ~0.1 ms at 16/cycle)
PATH_REPS = 200               # repetitions of one path of the inner call (~6.5 M words)


# ---- measured clock and popcount peak ---------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def _chain(n, x):
    """n iterations of ``x = (x + c) ^ i``: two dependent 1-cycle ops per iteration.

    The xor with the induction variable keeps LLVM from folding the loop into a closed form
    (it would for a plain ``x += c``); the chain through ``x`` cannot overlap, so the loop
    takes 2 cycles per iteration whatever the core's width.
    """
    for i in range(n):
        x = (x + 0x9E3779B97F4A7C15) ^ i
    return x


@numba.njit(cache=True, nogil=True)
def _chain_mul(n, x):
    """n iterations of ``x = (x * c) ^ i``: imul (3 cycles on current x86-64 cores) + xor,
    4 cycles per iteration; agrees with ``_chain`` when both latencies hold."""
    for i in range(n):
        x = (x * 0x9E3779B97F4A7C15) ^ i
    return x


@numba.njit(cache=True, nogil=True)
def _l1_popcount_loop(a, b, reps, out):
    """``reps`` times, s = sum_v popcount(a[v] ^ b[v]) over two L1-resident rows.

    The store to ``out`` each repetition keeps the inner loop from being hoisted (numba's
    arrays may alias, so LLVM must re-read a and b); it costs one store per 512 words.
    """
    w = a.shape[0]
    for r in range(reps):
        s = 0
        for v in range(w):
            s += kernels.popc(a[v] ^ b[v])
        out[r & 7] = s


def _aligned_words(rng, dtype) -> np.ndarray:
    """PEAK_WORDS random words starting on a 64-byte boundary (one cache line, one zmm load)."""
    buf = rng.integers(0, np.iinfo(dtype).max, PEAK_WORDS + 64, dtype=dtype, endpoint=True)
    off = (-buf.ctypes.data % 64) // buf.itemsize
    return buf[off:off + PEAK_WORDS]


# ---- what the compiled kernel runs --------------------------------------------------------------

# popcount instructions and the bits of each lane they count (vpsadbw: the byte sums of the
# nibble-table popcount of an AVX2-only build, one per 64-bit lane; vpshufb, its table
# lookup, is not a count of its own)
_VECTOR_POPCOUNT_BITS = {"vpopcntq": 64, "vpopcntd": 32, "vpopcntw": 16, "vpopcntb": 8,
                         "vpsadbw": 64}
_REGISTER_BITS = {"zmm": 512, "ymm": 256, "xmm": 128}


def _instructions(asm: str):
    """(labels {name: index}, [(mnemonic, operands)]) of one function's assembly."""
    labels, ins = {}, []
    for line in asm.splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        if line.endswith(":"):
            labels[line[:-1]] = len(ins)
        elif not line.startswith("."):
            mnem, _, ops = line.partition("\t")
            ins.append((mnem.strip(), ops.strip()))
    return labels, ins


def popcount_lanes(mnem: str, ops: str) -> tuple[int, int] | None:
    """(bits per lane, lanes) one instruction popcounts, or None when it counts no bits.

    ``vpopcntq %zmm4, %zmm4`` counts 8 lanes of 64 bits, ``vpopcntd`` on ymm 8 of 32,
    ``popcntq %rax, %rax`` one of 64 (``popcntl`` 32); the width is the destination
    register's (the last operand).
    """
    if mnem.startswith("popcnt"):
        dest = ops.rsplit(",", 1)[-1].strip()
        return (64 if mnem == "popcntq" or dest.startswith("%r") else
                16 if mnem == "popcntw" else 32), 1
    bits = _VECTOR_POPCOUNT_BITS.get(mnem)
    if bits is None:
        return None
    dest = ops.rsplit(",", 1)[-1].strip().lstrip("%")[:3]
    return bits, _REGISTER_BITS.get(dest, 128) // bits


def _elements_per_iteration(body, element_bytes: int) -> int | None:
    """Array elements the loop's induction variable advances per iteration.

    LLVM steps an index register by elements (``addq $8, %r12`` with operands
    ``(%base,%r12,8)``) or an offset / pointer by bytes (``addq $8, %r13`` with
    ``(%rsi,%r13)``, ``addq $256, %rax`` with ``(%rax)``).
    """
    for mnem, ops in body:
        m = re.fullmatch(r"\$(-?\d+), %(\w+)", ops)
        if mnem.startswith(("add", "sub")) and m:
            step, reg = abs(int(m.group(1))), m.group(2)
        elif mnem.startswith("inc") and re.fullmatch(r"%\w+", ops):
            step, reg = 1, ops[1:]
        else:
            continue
        for _, o in body:
            scaled = re.search(rf"\(%\w+,%{reg},(\d)\)", o)
            if scaled:
                return step * int(scaled.group(1)) // element_bytes
            if re.search(rf"\(%\w+,%{reg}\)|\(%{reg}[,)]", o):
                return step // element_bytes
    return None


def popcount_loops(asm: str) -> list[dict]:
    """Every innermost loop that popcounts (a backward branch with no other inside), in order.

    Each: {"label", "instructions" (mnemonic counts), "popcounts" ({"vpopcntq zmm": 4}),
    "lane_bits", "vector" (a vector popcount in it), "popcounts_per_iter" (lanes counted per
    iteration, summed over its popcount instructions), "elements_per_iter" (the induction
    step in elements of lane_bits), "words_per_element" (popcounts_per_iter /
    elements_per_iter: how many words of a row of a each element of b meets per pass, i.e.
    which source loop this is; None where the step is not read)}.
    """
    labels, ins = _instructions(asm)
    loops = []
    for j, (mnem, ops) in enumerate(ins):
        if mnem.startswith("j") and ops in labels and labels[ops] <= j:
            loops.append((labels[ops], j, ops))
    inner = [(s, e, name) for s, e, name in loops
             if not any(s <= s2 and e2 < e for s2, e2, _ in loops if (s2, e2) != (s, e))]
    found = []
    for s, e, name in inner:
        body = ins[s:e + 1]
        pops, per_iter, bits, vector = Counter(), 0, None, False
        for mnem, ops in body:
            lanes = popcount_lanes(mnem, ops)
            if lanes is None:
                continue
            bits = lanes[0] if bits is None else bits
            per_iter += lanes[1]
            vector |= not mnem.startswith("popcnt")
            reg = ops.rsplit(",", 1)[-1].strip().lstrip("%")[:3]
            pops[f"{mnem} {reg if reg in _REGISTER_BITS else 'gpr'}"] += 1
        if not per_iter:
            continue
        elems = _elements_per_iteration(body, bits // 8)
        found.append({"label": name, "instructions": dict(Counter(m for m, _ in body)),
                      "popcounts": dict(pops), "lane_bits": bits, "vector": vector,
                      "popcounts_per_iter": per_iter, "elements_per_iter": elems,
                      "words_per_element": per_iter // elems if elems else None})
    return found


def loops_of_path(loops: list[dict], words_per_element: int, vector: bool) -> list[dict]:
    """The loops of one source path (words of a per element of b, vector or scalar code),
    widest (most popcounts per iteration) first: the first is the one that path runs in
    full iterations, the others its epilogue / remainder loops."""
    return sorted((d for d in loops if d["words_per_element"] == words_per_element
                   and d["vector"] == vector), key=lambda d: -d["popcounts_per_iter"])


def kernel_asm(signature_index: int) -> tuple[str, str]:
    """Assembly of the dispatcher's compiled kernel for one signature, and where it came from.

    The cached dispatcher answers ``inspect_asm`` where numba keeps the library; where it
    cannot, an uncached twin of the same Python function is compiled for the same signature
    on this CPU (the same LLVM input and target, so the same code).
    """
    d = kernels.xor_popcount_matmul
    sig = d.signatures[signature_index]
    with warnings.catch_warnings():
        # code loaded from numba's cache answers with a warning and a placeholder string
        warnings.simplefilter("error")
        try:
            return d.inspect_asm(sig), "dispatcher"
        except Exception:                          # noqa: BLE001 - any failure: use the twin
            pass
    twin = numba.njit(d.py_func)
    twin.compile(sig)
    return twin.inspect_asm(twin.signatures[0]), "uncached twin of the cached dispatcher"


@numba.njit(cache=True, nogil=True)
def _drive_acc_block(accs, a64, bt, rows, words, span, per_row, reps):
    """The product's inner call ``kernels._acc_block`` over ``rows`` rows of a and ``words``
    words, ``span`` words per call (a multiple of 4: only its four-word pass runs; 1: only its
    one-word pass).

    ``per_row`` False: all rows in one call on accumulators ``accs[0]``, a separate array as
    in the kernel, so LLVM's runtime alias check passes and the vector loops run (with span
    = the words, this is the kernel's own call). ``per_row`` True: one row per call on
    ``accs[v]``, a view of word v of block 0 of b, which that call reads: every check fails
    and the scalar copies of the loops run. The timings say which code the kernel's rate
    matches.
    """
    for _ in range(reps):
        for v in range(0, words - span + 1, span):
            if per_row:
                for i in range(rows):
                    kernels._acc_block(accs[v], a64, i, i + 1, bt, 0, v, v + span)
            else:
                kernels._acc_block(accs[0], a64, 0, rows, bt, 0, v, v + span)


def _path_words(rows: int, words: int, span: int, lanes: int) -> int:
    """Word popcounts of one ``_drive_acc_block`` repetition."""
    return rows * (words // span) * span * lanes


def max_share(kernel: float, fast: float, slow: float) -> float:
    """Most of the kernel's words a path of rate ``slow`` can carry, the rest going at the
    fastest path's rate ``fast``, when the whole kernel runs at ``kernel`` (any one unit).

    Time per word: x / slow + (1 - x) / fast <= 1 / kernel, so
    x <= (1 / kernel - 1 / fast) / (1 / slow - 1 / fast), clipped to [0, 1] (1 when slow is
    not slower than fast: the time says nothing then).
    """
    if slow >= fast:
        return 1.0
    return min(1.0, max(0.0, (1 / kernel - 1 / fast) / (1 / slow - 1 / fast)))


def _popcount_summary(d: dict) -> str:
    return ", ".join(f"{k} x{c}" for k, c in d["popcounts"].items())


# ---- timing --------------------------------------------------------------------------------



def _cpu():
    model, mhz = platform.processor() or "unknown", None
    try:
        text = open("/proc/cpuinfo").read()
        model = re.search(r"model name\s*:\s*(.*)", text).group(1).strip()
        mhz = float(re.search(r"cpu MHz\s*:\s*([\d.]+)", text).group(1))
    except (OSError, AttributeError):
        pass
    return model, mhz


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1024, help="N = M = K")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    n = args.n
    rng = np.random.default_rng(args.seed)
    a = rng.choice(np.array([-1, 1], np.int8), size=(n, n))
    b = rng.choice(np.array([-1, 1], np.int8), size=(n, n))    # rows of b = columns of B
    macs = n * n * n

    dev = BitwiseDevice("fpga-bnn")                              # 64-bit words
    aw, bw = pack_signs(a, 64), pack_signs(b, 64)
    got = dev.sign_matmul(aw, bw, n)                             # compiles (cached) + warms up
    out = np.empty((n, n), np.int32)
    counts = np.zeros(64, np.int64)

    dev32 = BitwiseDevice("cortex-m4")                           # 32-bit words, same host
    aw32, bw32 = pack_signs(a, 32), pack_signs(b, 32)
    dev32.sign_matmul(aw32, bw32, n)

    af, bf = torch.from_numpy(a.astype(np.float32)), torch.from_numpy(b.astype(np.float32))
    ref = torch.matmul(af, bf.T)
    exact = bool(np.array_equal(got, ref.numpy().astype(np.int32)))

    pa, pb = _aligned_words(rng, np.uint64), _aligned_words(rng, np.uint64)
    pa32, pb32 = _aligned_words(rng, np.uint32), _aligned_words(rng, np.uint32)
    pout = np.zeros(8, np.int64)
    _chain(10, 1)
    _chain_mul(10, 1)
    _l1_popcount_loop(pa, pb, 1, pout)
    _l1_popcount_loop(pa32, pb32, 1, pout)

    # the kernel's inner call on its own operands at this shape: 64-bit words (the 32-bit
    # kernel pairs its words into these first), one chunk of words, its rows of a
    w64 = -(-n // 64)
    a64, bt = kernels._wide_rows(aw, w64), kernels._lane_blocks(bw, w64)
    rows, words, lanes = min(kernels._ROWS, n), min(kernels._CHUNK, w64), bt.shape[2]
    bt_alias = bt[:1].copy()                           # written through by the aliased path
    accs = {False: np.zeros((1, rows, lanes), np.int64),
            True: bt_alias[0].view(np.int64).reshape(w64, 1, lanes)[:words]}
    spans = {4: words - words % 4, 1: 1}               # four-word pass, one-word pass
    paths = {(p, alias): (lambda p=p, al=alias: _drive_acc_block(
        accs[al], a64, bt_alias if al else bt, rows, words, spans[p] if not al else p, al,
        PATH_REPS)) for p in (4, 1) for alias in (False, True)}
    for fn in paths.values():
        fn()

    t, _ = best_interleaved({
        "device": lambda: dev.sign_matmul(aw, bw, n),
        "kernel": lambda: kernels.xor_popcount_matmul(aw, bw, n, out, counts),
        "device32": lambda: dev32.sign_matmul(aw32, bw32, n),
        "torch": lambda: torch.matmul(af, bf.T),
        "clock": lambda: _chain(CHAIN_ITERS, 1),
        "clock_mul": lambda: _chain_mul(CHAIN_ITERS, 1),
        "peak64": lambda: _l1_popcount_loop(pa, pb, PEAK_REPS, pout),
        "peak32": lambda: _l1_popcount_loop(pa32, pb32, PEAK_REPS, pout),
        **{("path", *k): fn for k, fn in paths.items()}}, args.repeats)
    t_dev, t_kernel, t_dev32, t_torch = t["device"], t["kernel"], t["device32"], t["torch"]

    clock_hz = 2 * CHAIN_ITERS / t["clock"]                      # 2 dependent 1-cycle ops/iter
    clock_mul_hz = 4 * CHAIN_ITERS / t["clock_mul"]              # imul 3 + xor 1 cycles/iter
    peak64 = 64 * PEAK_WORDS * PEAK_REPS / t["peak64"]           # binary MAC/s: 64 per word
    peak32 = 32 * PEAK_WORDS * PEAK_REPS / t["peak32"]
    scalar_bound = 64 * clock_hz                                 # one 64-bit POPCNT per cycle
    # 64-bit word popcounts per cycle: the kernel's (n x n outputs, w64 words each) and each
    # path's
    kernel_wpc = n * n * w64 / t_kernel / clock_hz
    path_wpc = {k: _path_words(rows, words, spans[k[0]] if not k[1] else k[0], lanes)
                * PATH_REPS / t[("path", *k)]
                / clock_hz for k in paths}
    hot_path = max(path_wpc, key=path_wpc.get)
    share = {k: max_share(kernel_wpc, path_wpc[hot_path], r) for k, r in path_wpc.items()}

    sig_index = {sig[0].dtype.bitwidth: i                        # word width -> signature
                 for i, sig in enumerate(kernels.xor_popcount_matmul.signatures)}
    loops = {}
    for bits in (64, 32):
        asm, src = kernel_asm(sig_index[bits])
        found = popcount_loops(asm)
        of_path = loops_of_path(found, hot_path[0], vector=not hot_path[1])
        loops[bits] = (found, of_path[0] if of_path else None, src)

    model, mhz = _cpu()
    r_dev, r_kernel, r_dev32, r_torch = (macs / t_dev, macs / t_kernel, macs / t_dev32,
                                         macs / t_torch)
    print(f"shape {n} x {n} x {n}; single-threaded (serial numba kernel; "
          f"torch.set_num_threads(1)); CPU time; CPU {model} (nominal {mhz} MHz)")
    print(f"measured clock: {clock_hz / 1e9:.2f} G cycles per CPU-second "
          f"(dependent add+xor chain, 2 cycles/iteration; imul+xor chain, 4 cycles/iteration: "
          f"{clock_mul_hz / 1e9:.2f})")
    for bits, peak in ((64, peak64), (32, peak32)):
        print(f"measured {bits}-bit popcount-loop peak: {peak / 1e9:.1f} G binary MAC/s = "
              f"{bits} x {peak / bits / 1e9:.2f} G words/s (two {PEAK_WORDS}-word rows in L1) "
              f"= {peak / bits / clock_hz:.2f} words/cycle")
    names = {4: "four-word pass", 1: "one-word pass"}
    print(f"the kernel's inner call (_acc_block: {rows} rows of a x {lanes} rows of b x "
          f"{words} 64-bit words), measured per path, in 64-bit word popcounts per cycle; "
          f"the whole kernel: {kernel_wpc:.2f}")
    for k, wpc in path_wpc.items():
        how = ("a row per call, accumulators a view of the b words read: alias check fails, "
               "scalar copy" if k[1] else
               "all rows per call, separate accumulators as in the kernel: vector loop")
        bound = "" if k == hot_path else f"; can carry at most {share[k]:.0%} of the kernel's words"
        print(f"  {'HOT' if k == hot_path else '   '} {names[k[0]]}, {how}: {wpc:.2f}{bound}")
    print("  HOT = the fastest path; a slower path's share x of the kernel's words is bounded by "
          "the kernel's time: x / path + (1 - x) / HOT <= 1 / kernel (rates per cycle)"
          + ("" if kernel_wpc <= 1.05 * path_wpc[hot_path] else
             "; WARNING: the kernel outruns every measured path, so this reading is doubtful"))
    for bits in (64, 32):
        found, hot, src = loops[bits]
        paired = "; 32-bit words paired into 64-bit ones" if bits == 32 else ""
        print(f"{bits}-bit kernel ({src}{paired}), innermost popcount loops:")
        for d in found:
            wpe = d["words_per_element"]
            role = (f"{names.get(wpe, f'{wpe}-word pass')}, {'vector' if d['vector'] else 'scalar'}"
                    if wpe else "pass not read")
            print(f"  {'HOT' if d is hot else '   '} {d['label']}: {_popcount_summary(d)} = "
                  f"{d['popcounts_per_iter']} x {d['lane_bits']}-bit popcounts/iteration, "
                  f"step {d['elements_per_iter']} rows of b; {role}")
        if hot:
            print("        every instruction of the hot loop: " + ", ".join(
                f"{m} x{c}" for m, c in hot["instructions"].items()))
    print("  (HOT: the widest loop of the measured hot path; the others are that pass's "
          "epilogue/remainder loops, the other pass, and the scalar copies run when an alias "
          "check fails)")
    print(f"{'':34s}{'ms':>10s}{'G MAC/s':>10s}{'x torch':>9s}{'MAC/cyc':>9s}"
          f"{'of peak':>9s}{'x POPCNT':>9s}")
    rows_out = [("BitwiseDevice.sign_matmul, 64-bit", t_dev, r_dev, peak64),
                ("  bare numba kernel, 64-bit", t_kernel, r_kernel, peak64),
                ("BitwiseDevice.sign_matmul, 32-bit", t_dev32, r_dev32, peak64),
                ("torch.matmul float32 (anchor)", t_torch, r_torch, None)]
    for name, sec, r, peak in rows_out:
        frac = f"{r / peak:8.0%}" if peak else "      --"
        sc = f"{r / scalar_bound:9.2f}" if peak else "       --"
        print(f"{name:34s}{sec * 1e3:10.3f}{r / 1e9:10.1f}{r / r_torch:9.2f}{r / clock_hz:9.1f}"
              f"{frac:>9s}{sc}")
    print("of peak = rate / measured 64-bit popcount-loop peak (the 32-bit kernel pairs its "
          "words into 64-bit ones, so it runs 64-bit popcounts too); x POPCNT = rate / "
          "(64 binary MACs x measured clock), one scalar 64-bit POPCNT per cycle (a vector "
          "loop can pass it)")
    print(f"packed product equals the float32 product exactly: {exact}")
    print(f"targets: >= 4x float32 -> {r_dev / r_torch:.2f}x "
          f"({'met' if r_dev / r_torch >= 4 else 'NOT met'}); >= 70% of peak -> "
          f"{r_dev / peak64:.0%} ({'met' if r_dev / peak64 >= 0.7 else 'NOT met'})")
    result = {"n": n, "threads": 1, "timer": "process_time", "cpu": model,
              "nominal_clock_mhz": mhz, "measured_clock_hz": clock_hz,
              "measured_clock_imul_chain_hz": clock_mul_hz,
              "popcount_peak_64_macs_per_s": peak64, "popcount_peak_32_macs_per_s": peak32,
              "peak_words_per_cycle_64": peak64 / 64 / clock_hz,
              "device_binary_macs_per_s": r_dev, "kernel_binary_macs_per_s": r_kernel,
              "device32_binary_macs_per_s": r_dev32,
              "torch_fp32_macs_per_s": r_torch, "ratio_vs_torch_fp32": r_dev / r_torch,
              "fraction_of_peak": r_dev / peak64, "kernel_fraction_of_peak": r_kernel / peak64,
              "device32_fraction_of_peak_64": r_dev32 / peak64,
              "multiple_of_scalar_popcnt_rate": r_dev / scalar_bound,
              "kernel_words_per_cycle": kernel_wpc,
              "path_words_per_cycle": {f"{names[k[0]]}{', aliased' if k[1] else ''}": v
                                       for k, v in path_wpc.items()},
              "hot_path": f"{names[hot_path[0]]}{', aliased' if hot_path[1] else ''}",
              "path_max_share_of_words": {
                  f"{names[k[0]]}{', aliased' if k[1] else ''}": v for k, v in share.items()
                  if k != hot_path},
              "hot_loop_64": loops[64][1], "hot_loop_32": loops[32][1],
              "asm_source": loops[64][2],
              "exact": exact, "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
