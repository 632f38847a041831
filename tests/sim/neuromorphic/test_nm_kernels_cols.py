"""run_builtin's private kernels against the per-step ones they replace, bit for bit:
_end_cols (column-major per-core table, vectorised) vs end_step, and the prefetch hint
changing nothing it is given."""
import numpy as np
from numba import njit

from sim.neuromorphic import kernels as K


def test_end_cols_equals_end_step():
    rng = np.random.default_rng(11)
    R = 37
    # Loihi-like op times (hop and syn_update: 0 and a value) and sync [barrier, tick, dt]
    tau = np.array([3.5e-9, 8.4e-9, 5.3e-9, 2.1e-9, 0.0, 1.7e-9])
    sync = np.array([1.6e-7, 0.0, 1e-6])
    tot_a, tot_b = np.zeros((R, 6), np.int64), np.zeros((6, R), np.int64)
    st_a, st_b = np.zeros(4), np.zeros(4)
    sb, bits = np.zeros(R), np.zeros(1, np.int64)
    works = []
    for step in range(50):
        cc = rng.integers(0, 200, (R, 6))
        if step % 7 == 0:
            cc[:] = 0                      # an idle step: work 0.0
        if step % 5 == 1:
            cc[0] = 10 ** 6                # row 0 (off the cores) never sets the work
        ct = np.ascontiguousarray(cc.T)
        before = st_a[0]
        K.end_step(cc, tot_a, tau, sync, st_a)
        K._end_cols(ct, tot_b, tau, sync, st_b, sb, bits)
        works.append(st_a[0] - before)
        assert not cc.any() and not ct.any()          # both cleared
        assert np.array_equal(st_a, st_b)             # the same floats, bit for bit
    assert np.array_equal(tot_a, tot_b.T)
    # steps over the 1 us dt counted as overruns: some (busy steps), not all (idle ones)
    assert 0 < st_a[3] < 50 and min(works) == 0.0


@njit
def _sum_with_prefetch(a, idx):
    s = 0.0
    for i in range(a.size):
        K.prefetch(a, idx[i])          # any index: a hint, never a read or a fault
        s += a[i]
    return s


def test_prefetch_is_only_a_hint():
    a = np.arange(100.0)
    idx = np.array([0, 99, 10 ** 9, -(10 ** 9)] * 25, np.int64)
    assert _sum_with_prefetch(a, idx) == 4950.0           # 0 + 1 + ... + 99
    assert np.array_equal(a, np.arange(100.0))
