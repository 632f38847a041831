"""The GEMM bench's reading of the kernel's machine code (bench/bitwise_gemm.py) and the
benches' epoch check (bench/_checks.py), on hand-written inputs: no compile, no timing."""
import pytest

from bench import _checks
from bench.bitwise_gemm import loops_of_path, max_share, popcount_lanes, popcount_loops

# The shape of LLVM's output for the product's inner call (sim/bitwise/kernels.py
# ``_acc_block``) on an AVX-512 VPOPCNTDQ core (numba 0.68, LLVM 14), loops as compiled on
# the Zen 5 machine: the four-word pass over the lanes vectorised (4 x 512-bit VPOPCNTQ, b
# loads folded into the XORs, 8 lanes per iteration) and its scalar copy (4 lanes x 4 words
# unrolled), the one-word pass's 4-word ymm epilogue, and an outer loop around them that must
# not count as innermost.
AVX512 = """
.LBB7_13:
\tcmpq\t$32, %rdx
\tjae\t.LBB7_38
.LBB7_38:
\tvpxorq\t(%r14,%r12,8), %zmm0, %zmm4
\tvpxorq\t(%rsi,%r12,8), %zmm1, %zmm5
\tvpxorq\t(%r9,%r12,8), %zmm2, %zmm6
\tvpxorq\t(%r11,%r12,8), %zmm3, %zmm7
\tvpopcntq\t%zmm4, %zmm4
\tvpaddq\t(%r15,%r12,8), %zmm4, %zmm4
\tvpopcntq\t%zmm5, %zmm5
\tvpopcntq\t%zmm6, %zmm6
\tvpaddq\t%zmm6, %zmm5, %zmm5
\tvpopcntq\t%zmm7, %zmm6
\tvpaddq\t%zmm6, %zmm5, %zmm5
\tvpaddq\t%zmm5, %zmm4, %zmm4
\tvmovdqu64\t%zmm4, (%r15,%r12,8)
\taddq\t$8, %r12
\tcmpq\t%r12, %rcx
\tjne\t.LBB7_38
.LBB7_43:
\tmovq\t(%rsi,%r13), %rcx
\tmovq\t(%r9,%r13), %r10
\tmovq\t(%rbp,%r13), %r8
\txorq\t%rdx, %rcx
\txorq\t%rbx, %r10
\txorq\t%rax, %r8
\tpopcntq\t%rcx, %rcx
\tpopcntq\t%r10, %r10
\tpopcntq\t%r8, %r8
\taddq\t(%r11,%r13), %r8
\taddq\t%rcx, %r10
\tmovq\t(%r14,%r13), %rcx
\txorq\t%rdi, %rcx
\tpopcntq\t%rcx, %rcx
\taddq\t%r10, %rcx
\taddq\t%rcx, %r8
\tmovq\t%r8, (%r11,%r13)
\taddq\t$8, %r13
\tcmpq\t%r13, %r12
\tjne\t.LBB7_43
.LBB7_19:
\tvmovdqu\t(%r15,%r10,8), %ymm1
\tvpxor\t%ymm0, %ymm1, %ymm1
\tvpopcntq\t%ymm1, %ymm1
\tvpaddq\t(%rbx,%r10,8), %ymm1, %ymm1
\tvmovdqu\t%ymm1, (%rbx,%r10,8)
\taddq\t$4, %r10
\tcmpq\t%r10, %rcx
\tjne\t.LBB7_19
\tdecq\t%rdi
\tjg\t.LBB7_13
"""


def test_popcount_lanes_from_register_width():
    # 512 / 64 = 8 lanes, 256 / 32 = 8, 128 / 64 = 2, scalar 1 of 64 or 32 bits
    assert popcount_lanes("vpopcntq", "%zmm4, %zmm4") == (64, 8)
    assert popcount_lanes("vpopcntd", "%ymm1, %ymm2") == (32, 8)
    assert popcount_lanes("vpopcntq", "%xmm1, %xmm1") == (64, 2)
    assert popcount_lanes("popcntq", "%rax, %rax") == (64, 1)
    assert popcount_lanes("popcntl", "%eax, %eax") == (32, 1)
    assert popcount_lanes("vpsadbw", "%ymm2, %ymm1, %ymm1") == (64, 4)
    assert popcount_lanes("vpxorq", "%zmm1, %zmm2, %zmm3") is None


def test_loops_read_popcounts_per_iteration_and_pass():
    loops = popcount_loops(AVX512)
    # .LBB7_38: 4 zmm x 8 lanes = 32 popcounts, index +8 scaled by 8 bytes = 8 rows of b,
    #   32 / 8 = 4 words of a per row of b (the four-word pass);
    # .LBB7_43: 4 scalar popcounts, byte offset +8 = 1 row of b, 4 words per row;
    # .LBB7_19: 1 ymm x 4 lanes, index +4 = 4 rows of b, 1 word per row (one-word pass)
    assert [(d["label"], d["popcounts_per_iter"], d["elements_per_iter"],
             d["words_per_element"], d["vector"]) for d in loops] == [
        (".LBB7_38", 32, 8, 4, True), (".LBB7_43", 4, 1, 4, False),
        (".LBB7_19", 4, 4, 1, True)]
    assert loops[0]["popcounts"] == {"vpopcntq zmm": 4}
    assert loops[0]["instructions"] == {"vpxorq": 4, "vpopcntq": 4, "vpaddq": 4,
                                        "vmovdqu64": 1, "addq": 1, "cmpq": 1, "jne": 1}


def test_loops_of_path_picks_vector_or_scalar_copy():
    loops = popcount_loops(AVX512)
    assert [d["label"] for d in loops_of_path(loops, 4, vector=True)] == [".LBB7_38"]
    assert [d["label"] for d in loops_of_path(loops, 4, vector=False)] == [".LBB7_43"]
    assert [d["label"] for d in loops_of_path(loops, 1, vector=True)] == [".LBB7_19"]
    assert loops_of_path(loops, 1, vector=False) == []


def test_pointer_stepped_loop_reads_bytes():
    # an induction pointer stepped by 64 bytes over 32-bit words: 16 elements per iteration,
    # one zmm vpopcntd = 16 lanes of 32 bits, so 1 word per element
    asm = (".LBB1_3:\n\tvmovdqu64\t(%rax), %zmm1\n\tvpopcntd\t%zmm1, %zmm1\n"
           "\taddq\t$64, %rax\n\tcmpq\t%rax, %rcx\n\tjne\t.LBB1_3\n")
    (loop,) = popcount_loops(asm)
    assert (loop["lane_bits"], loop["popcounts_per_iter"], loop["elements_per_iter"],
            loop["words_per_element"]) == (32, 16, 16, 1)


def test_loop_without_popcount_is_left_out():
    asm = ".LBB2_1:\n\taddq\t$1, %rax\n\tcmpq\t%rax, %rcx\n\tjne\t.LBB2_1\n"
    assert popcount_loops(asm) == []


def test_epochs_check_raises_on_fewer_epochs():
    assert _checks.epochs_trained("anchor", 10, 10) == 10
    with pytest.raises(RuntimeError, match="anchor trained 2 epochs, but the bench asked "
                                           "for 10"):
        _checks.epochs_trained("anchor", 2, 10)
    count = _checks.EpochCounter()
    for epoch in range(3):
        count(epoch + 1, 3, {})
    assert count.epochs == 3


def test_max_share_of_a_slower_path():
    # kernel 4 words/cycle, fastest path 5, scalar copy 1: x / 1 + (1 - x) / 5 <= 1 / 4
    # -> x <= (1/4 - 1/5) / (1 - 1/5) = 0.05 / 0.8 = 1/16
    assert max_share(4.0, 5.0, 1.0) == pytest.approx(1 / 16)
    # kernel at the fastest path's rate: no room for any slower path
    assert max_share(5.0, 5.0, 1.0) == 0.0
    # kernel slower than the slow path: the time says nothing, bound 1
    assert max_share(0.5, 5.0, 1.0) == 1.0
    assert max_share(4.0, 5.0, 5.0) == 1.0
