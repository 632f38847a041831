"""Multi-key needle-in-a-haystack (RULER's MK-NIAH, synthetic vocabulary): the retrieval task.

A sequence of ``length`` tokens is random filler with ``n_pairs`` needles ``key value``
hidden in it (distinct keys, random values, any offset relative to the chunk grid, so a
needle may straddle two chunks), followed by a query section that asks every key once, in
random order: ``Q key value`` per pair. The model must predict ``value`` at each query's
``key`` position; filler carries no loss (it is unpredictable noise). Needles lie before the
chunk holding the first query, so a query can reach them only through retrieval.

Vocabulary (ids): filler ``[0, n_filler)``, keys ``[n_filler, n_filler + n_keys)``, values
next ``n_values``, then the query marker ``Q``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hw_profiles.errors import ModelError


@dataclass(frozen=True)
class NeedleTask:
    """Vocabulary sizes and needle count. Defaults: chance is 1/32 per query."""

    n_filler: int = 16
    n_keys: int = 32
    n_values: int = 32
    n_pairs: int = 4      # keys per sequence: one is asked, the others are distractors

    def __post_init__(self):
        for name in ("n_filler", "n_keys", "n_values", "n_pairs"):
            if getattr(self, name) < 1:
                raise ModelError(f"NeedleTask.{name} = {getattr(self, name)}: must be >= 1")
        if self.n_pairs > self.n_keys:
            raise ModelError(f"NeedleTask.n_pairs = {self.n_pairs} > n_keys = {self.n_keys}: "
                             "keys in one sequence must be distinct")

    @property
    def query_token(self) -> int:
        return self.n_filler + self.n_keys + self.n_values

    @property
    def vocab(self) -> int:
        return self.query_token + 1

    def min_length(self, chunk: int) -> int:
        """Shortest sequence that fits the needles in complete chunks before the queries."""
        return 3 * self.n_pairs + chunk * (1 + (3 * self.n_pairs + chunk - 1) // chunk)

    def batch(self, rng: np.random.Generator, n: int, length: int, chunk: int):
        """``n`` sequences of ``length`` tokens.

        Returns
        -------
        tokens : (n, length) int64
        query_pos : (n, n_pairs) int64, positions of the queried keys (predict the next token)
        answers : (n, n_pairs) int64, the values to predict there
        needle_pos : (n, n_pairs) int64, position of the needle's key for each query
        """
        p = self.n_pairs
        if length < self.min_length(chunk):
            raise ModelError(f"NeedleTask.batch: length = {length} is too short for {p} "
                             f"needles with chunk size {chunk}; need >= "
                             f"{self.min_length(chunk)}")
        tokens = rng.integers(0, self.n_filler, (n, length))
        # needles before the chunk of the first query token: on a grid of 3 so two needles
        # never overlap, with a random offset 0/1 so they sit at any phase of the chunk grid
        hay_end = ((length - 3 * p) // chunk) * chunk
        n_slots = (hay_end - 1) // 3
        slots = np.argsort(rng.random((n, n_slots)), axis=1)[:, :p]
        pos = 3 * slots + rng.integers(0, 2, (n, p))                      # (n, p) key positions
        keys = np.argsort(rng.random((n, self.n_keys)), axis=1)[:, :p] + self.n_filler
        values = rng.integers(0, self.n_values, (n, p)) + self.n_filler + self.n_keys
        rows = np.arange(n)[:, None]
        tokens[rows, pos] = keys
        tokens[rows, pos + 1] = values
        order = np.argsort(rng.random((n, p)), axis=1)                    # query order
        q0 = length - 3 * p + 3 * np.arange(p)                            # Q marker positions
        tokens[:, q0] = self.query_token
        tokens[:, q0 + 1] = np.take_along_axis(keys, order, 1)
        tokens[:, q0 + 2] = np.take_along_axis(values, order, 1)
        query_pos = np.broadcast_to(q0 + 1, (n, p)).copy()
        return (tokens, query_pos, np.take_along_axis(values, order, 1),
                np.take_along_axis(pos, order, 1))
