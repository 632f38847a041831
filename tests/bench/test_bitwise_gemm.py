"""The GEMM bench's reading of the kernel's machine code (bench/bitwise_gemm.py) and the
benches' epoch check (bench/_checks.py), on hand-written inputs: no compile, no timing."""
import pytest

from bench import _checks
from bench.bitwise_gemm import hot_loops

# The shape of LLVM's output for ``s += popcount(a[v] ^ b[v])`` on an AVX-512 VPOPCNTDQ
# core (numba 0.68, LLVM 14): a 32-word main loop (4 x 8 words), a 4-word epilogue loop and
# a scalar tail; an outer loop around them that must not count as innermost.
AVX512 = """
.LBB0_13:
\tcmpq\t$32, %rdx
\tjae\t.LBB0_17
.LBB0_17:
\txorl\t%r9d, %r9d
.LBB0_18:
\tvmovdqu64\t-128(%r11,%r9,8), %zmm5
\tvmovdqu64\t-192(%r11,%r9,8), %zmm4
\tvmovdqu64\t-64(%r11,%r9,8), %zmm6
\tvmovdqu64\t(%r11,%r9,8), %zmm7
\tvpxorq\t-128(%r10,%r9,8), %zmm5, %zmm5
\tvpxorq\t-192(%r10,%r9,8), %zmm4, %zmm4
\tvpxorq\t-64(%r10,%r9,8), %zmm6, %zmm6
\tvpxorq\t(%r10,%r9,8), %zmm7, %zmm7
\taddq\t$32, %r9
\tvpopcntq\t%zmm5, %zmm5
\tvpopcntq\t%zmm4, %zmm4
\tvpopcntq\t%zmm6, %zmm6
\tvpaddq\t%zmm1, %zmm5, %zmm1
\tvpopcntq\t%zmm7, %zmm5
\tvpaddq\t%zmm0, %zmm4, %zmm0
\tvpaddq\t%zmm2, %zmm6, %zmm2
\tvpaddq\t%zmm3, %zmm5, %zmm3
\tcmpq\t%r9, %r13
\tjne\t.LBB0_18
.LBB0_22:
\tvmovdqu\t(%r11,%r9,8), %ymm1
\tvpxor\t(%r8,%r9,8), %ymm1, %ymm1
\taddq\t$4, %r9
\tvpopcntq\t%ymm1, %ymm1
\tvpaddq\t%ymm0, %ymm1, %ymm0
\tcmpq\t%r9, %rcx
\tjne\t.LBB0_22
.LBB0_25:
\tmovq\t(%rbp,%rbx,8), %r9
\txorq\t(%r8,%rbx,8), %r9
\tincq\t%rbx
\tpopcntq\t%r9, %r9
\taddq\t%r9, %r11
\tcmpq\t%rbx, %rdx
\tjne\t.LBB0_25
\tdecq\t%rdi
\tjg\t.LBB0_13
"""


def test_hot_loop_at_16_words_is_the_4_word_epilogue():
    # 16 words: the 32-word loop takes 16 // 32 * 32 = 0, the 4-word loop 16 // 4 * 4 = 16,
    # the scalar tail the 0 left
    loops = hot_loops(AVX512, words_per_row=16, word_bytes=8)
    assert [(d["label"], d["words_per_iter"], d["words"]) for d in loops] == [
        (".LBB0_18", 32, 0), (".LBB0_22", 4, 16), (".LBB0_25", 1, 0)]
    assert loops[1]["instructions"] == {"vmovdqu": 1, "vpxor": 1, "addq": 1, "vpopcntq": 1,
                                        "vpaddq": 1, "cmpq": 1, "jne": 1}


def test_hot_loop_split_at_71_words():
    # 71 = 2 x 32 (main) + 1 x 4 (epilogue) + 3 (scalar)
    loops = hot_loops(AVX512, words_per_row=71, word_bytes=8)
    assert [d["words"] for d in loops] == [64, 4, 3]
    assert loops[0]["instructions"]["vpopcntq"] == 4


def test_pointer_stepped_loop_reads_bytes():
    # an induction pointer stepped by 64 bytes over 32-bit words: 16 words per iteration
    asm = (".LBB1_3:\n\tvmovdqu64\t(%rax), %zmm1\n\tvpopcntd\t%zmm1, %zmm1\n"
           "\taddq\t$64, %rax\n\tcmpq\t%rax, %rcx\n\tjne\t.LBB1_3\n")
    (loop,) = hot_loops(asm, words_per_row=32, word_bytes=4)
    assert (loop["words_per_iter"], loop["words"]) == (16, 32)


def test_loop_without_popcount_is_left_out():
    asm = ".LBB2_1:\n\taddq\t$1, %rax\n\tcmpq\t%rax, %rcx\n\tjne\t.LBB2_1\n"
    assert hot_loops(asm, words_per_row=8, word_bytes=8) == []


def test_epochs_check_raises_on_fewer_epochs():
    assert _checks.epochs_trained("anchor", 10, 10) == 10
    with pytest.raises(RuntimeError, match="anchor trained 2 epochs, but the bench asked "
                                           "for 10"):
        _checks.epochs_trained("anchor", 2, 10)
    count = _checks.EpochCounter()
    for epoch in range(3):
        count(epoch + 1, 3, {})
    assert count.epochs == 3
