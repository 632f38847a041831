"""FS-KAN groups: orbit counts against the paper's closed forms, closure, errors."""
import numpy as np
import pytest

from models.fs_kan.groups import (
    cyclic,
    fixed,
    generated,
    natural,
    pair_orbits,
    point_orbits,
    symmetric,
    tuples,
)
from sim.errors import ModelError


def n_orbits(out, inp=None):
    return int(pair_orbits(out, inp or out).max()) + 1


def bell(k):  # Bell numbers by the Bell triangle
    row = [1]
    for _ in range(k):
        new = [row[-1]]
        for v in row:
            new.append(new[-1] + v)
        row = new
    return row[0]


@pytest.mark.parametrize("n", [2, 3, 7, 12])
def test_orbit_counts_of_the_digest(n):
    assert n_orbits(natural(symmetric(n))) == 2                        # diagonal, off-diagonal
    assert n_orbits(natural(cyclic(n))) == n                           # offsets q - p mod n
    assert n_orbits(natural(symmetric(n) * symmetric(3))) == 4         # ratings matrices
    assert n_orbits(natural(symmetric(n) * cyclic(5))) == 2 * 5        # sets of signals: 2T
    assert n_orbits(natural(cyclic(n) * cyclic(4))) == n * 4           # images: C_H x C_W


def test_one_point_groups():
    assert n_orbits(natural(symmetric(1))) == 1 and n_orbits(natural(cyclic(1))) == 1


def test_invariant_orbits_and_trivial_group():
    for g in (symmetric(6), cyclic(6), symmetric(3) * cyclic(4), symmetric(2) * symmetric(5)):
        a = natural(g)
        assert n_orbits(fixed(g), a) == 1 and (point_orbits(a) == 0).all()  # transitive
    ident = generated(np.arange(5))                                    # trivial group: plain KAN
    assert n_orbits(natural(ident)) == 25
    assert (point_orbits(natural(ident)) == np.arange(5)).all()


@pytest.mark.parametrize("k,l,n", [(1, 1, 3), (2, 1, 4), (1, 2, 4), (2, 2, 4), (2, 2, 5)])
def test_tensor_orbits_are_bell_numbers(k, l, n):  # noqa: E741 (the paper's k, l)
    # S_n on [n]^k -> [n]^l: one orbit per partition of the k + l index slots (n >= k + l)
    a = natural(symmetric(n))
    assert n_orbits(tuples(a, l), tuples(a, k)) == bell(k + l)        # 2, 5, 5, 15, 15


def test_generated_group_dihedral():
    for n in (5, 6, 8):
        rot, ref = np.roll(np.arange(n), -1), (-np.arange(n)) % n
        assert n_orbits(natural(generated([rot, ref]))) == n // 2 + 1  # pair distances


def test_orbits_are_closed_under_every_generator():
    g = symmetric(3) * cyclic(4)
    a = natural(g)
    o = pair_orbits(a, a)
    for perm in a.generator_perms():
        assert np.array_equal(o[np.ix_(perm, perm)], o)                # O[g q, g p] = O[q, p]
    assert o[0, 0] == 0 and o.max() == 7                               # ids by first appearance


def test_group_errors():
    with pytest.raises(ModelError, match=r"generator 0 = \[0, 0, 1\] is not a permutation"):
        generated([[0, 0, 1]])
    with pytest.raises(ModelError, match="n = 0"):
        symmetric(0)
    with pytest.raises(ModelError, match="same Group object"):
        pair_orbits(natural(symmetric(3)), natural(symmetric(3)))


def test_pair_orbits_are_remembered_per_action_and_handed_out_as_copies():
    from models.fs_kan import groups
    act = natural(symmetric(3) * cyclic(4))
    first = pair_orbits(act, act)
    hits = groups._pair_orbits.cache_info().hits
    first[:] = -1                               # a caller scribbling on its copy ...
    again = pair_orbits(act, act)
    assert groups._pair_orbits.cache_info().hits == hits + 1       # ... the second call is
    assert int(again.max()) + 1 == 2 * 4 and again.min() == 0      # remembered, unchanged
    # a new Action object of the same group is computed afresh, with the same orbits
    other = natural(act.group)
    assert np.array_equal(pair_orbits(other, other), again)
