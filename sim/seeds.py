"""Named seed streams: one run seed, one independent seed per named use of randomness.

A run has one seed (``Config.seed``, ``--seed``). Everything random inside it draws from a
*named child* of that seed instead of an ad-hoc offset such as ``seed + 1`` or ``seed * 7``:

>>> from sim import seeds
>>> init = seeds.child(0, "init")             # weights
>>> order = seeds.child(0, "train", "order")  # the mini-batch order
>>> init != order and init == seeds.child(0, "init")
True

Why not offsets: ``seed + 1`` of run 0 is ``seed`` of run 1, so two "independent" seeds of a
multi-seed study share a stream (run 0's data is run 1's initialisation). A named child is
drawn through numpy's ``SeedSequence`` with the name hashed into its spawn key, so streams of
different names or different run seeds are statistically independent.

Stable across versions: the derivation below uses only BLAKE2b (hashlib) and numpy's
``SeedSequence``, whose output numpy guarantees across versions and platforms (NEP 19). The
value is therefore the same on every machine and in every release of neuroedge; changing it
changes every figure a run produces, so it never changes silently (``tests/sim/test_seeds.py``
pins a few values).

Children are integers in ``0 .. SEED_MAX`` (2**32 - 1), the range every consumer accepts:
``torch.manual_seed``, ``np.random.default_rng``, scikit-learn's ``random_state`` and
numpy's legacy ``RandomState`` (which refuses anything from 2**32 on).

A multi-seed study runs seeds ``seed, seed + 1, ...`` as *run* seeds: each is a seed a user
can rerun alone (``neuroedge simulate --seed k``), and each run draws its own named children,
so neighbouring runs share no stream.
"""
from __future__ import annotations

import hashlib

import numpy as np

from sim.errors import ModelError

SEED_MAX = 2**32 - 1
"""The largest run seed and the largest child: torch, numpy and scikit-learn all take it."""

_PERSON = b"neuroedge.seed"   # BLAKE2b personalisation: these hashes mean nothing elsewhere


def check(seed, what: str = "seed") -> int:
    """``seed`` as an int in ``0 .. SEED_MAX``, or a one-line :class:`ModelError`."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ModelError(f"{what} = {seed!r}: seeds are integers 0..{SEED_MAX}")
    if not 0 <= int(seed) <= SEED_MAX:
        raise ModelError(f"{what} = {seed}: out of range; seeds are integers 0..{SEED_MAX}")
    return int(seed)


def _name_key(names: tuple) -> tuple[int, ...]:
    """The path of names as four 32-bit words of its BLAKE2b hash (a SeedSequence spawn key)."""
    if not names:
        raise ModelError("seeds.child: give at least one name for the stream (e.g. 'init')")
    parts = []
    for name in names:
        if isinstance(name, bool) or not isinstance(name, str | int | np.integer):
            raise ModelError(f"seeds.child: stream name {name!r} is a {type(name).__name__}; "
                              "names are strings or integers (a seed index)")
        # the type is part of the key: "3" and 3 are different streams
        parts.append(f"{'i' if not isinstance(name, str) else 's'}:{name}")
    digest = hashlib.blake2b("/".join(parts).encode(), digest_size=16, person=_PERSON).digest()
    return tuple(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))


def child(seed: int, *names: str | int) -> int:
    """The seed of the stream ``names`` below the run seed ``seed``: an int in 0..SEED_MAX.

    Parameters
    ----------
    seed : the run's seed (0..SEED_MAX)
    names : the stream's path, e.g. ``("init",)``, ``("train", "order")`` or
        ``("study", 3)`` for the fourth seed of a study. Strings and ints; ``"3"`` and ``3``
        are different streams.
    """
    seq = np.random.SeedSequence(check(seed), spawn_key=_name_key(names))
    return int(seq.generate_state(1, np.uint32)[0])


def rng(seed: int, *names: str | int) -> np.random.Generator:
    """``np.random.default_rng`` on the named stream ``names`` of ``seed``."""
    return np.random.default_rng(child(seed, *names))

