"""The needle task: multi-key needle-in-a-haystack (after RULER's MK-NIAH), synthetic vocabulary.

A sequence of ``length`` tokens is random filler with ``n_pairs`` needles hidden in it,
followed by a query section that asks every needle's key once, in random order:
``Q key value`` per needle. The model must predict ``value`` at each query's ``key``
position; filler carries no loss (it is unpredictable noise). Keys are distinct within a
sequence (the other needles are distractors), values are random, so the answer can only
come from the needle. Needles lie before the chunk holding the first query, so a query can
reach them only through long-range attention / retrieval.

Reading chosen for a CPU-sized experiment: a needle is ONE token that names its key and
value pair (RULER's needle is a sentence "the magic number for KEY is VALUE"). Binding a
two-token needle needs an induction circuit (two attention layers composing), which on
this shared 2-core machine did not leave its loss plateau within the few hundred steps
we can afford; a one-token needle keeps the retrieval problem (find the chunk holding the
key among many, read the value) and drops the binding.

Several keys per chunk (``keys_per_chunk`` = g > 1, issue 34): the needles sit g to a chunk
(``n_pairs / g`` chunks hold needles, the rest is filler). A chunk then holds the asked key
and g - 1 distractor keys, and a distractor chunk holds g other keys of the same small set, so
which chunk holds the asked key is a set-membership question over the chunk's tokens -- the
reason (Sec. 3 of the paper) a landmark must be a non-linear function of its chunk. With
g = 1 (the default) needles are spread at random as before.

Vocabulary (ids): filler ``[0, n_filler)``, needle ``(k, v)`` at ``n_filler + k * n_values
+ v``, then query keys ``n_keys``, values ``n_values`` and the query marker ``Q``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.errors import ModelError


@dataclass(frozen=True)
class NeedleTask:
    """Vocabulary sizes and needle count. Defaults: 4 keys, all present, each asked once
    (3 distractor needles per query); 4 values, so chance is 1/4 per query. Larger needle
    vocabularies (8 x 8 = 64 needle tokens) did not leave the loss plateau within 300 steps."""

    n_filler: int = 16
    n_keys: int = 4
    n_values: int = 4
    n_pairs: int = 4      # needles per sequence: each is asked once, the others distract
    keys_per_chunk: int = 1   # needles per needle-holding chunk (1: spread at random)

    def __post_init__(self):
        for name in ("n_filler", "n_keys", "n_values", "n_pairs", "keys_per_chunk"):
            if getattr(self, name) < 1:
                raise ModelError(f"NeedleTask.{name} = {getattr(self, name)}: must be >= 1")
        if self.n_pairs > self.n_keys:
            raise ModelError(f"NeedleTask.n_pairs = {self.n_pairs} > n_keys = {self.n_keys}: "
                             "keys in one sequence must be distinct")
        if self.n_pairs % self.keys_per_chunk:
            raise ModelError(f"NeedleTask.keys_per_chunk = {self.keys_per_chunk}: must divide "
                             f"n_pairs = {self.n_pairs} (every needle chunk holds as many)")

    @property
    def key_base(self) -> int:
        return self.n_filler + self.n_keys * self.n_values

    @property
    def value_base(self) -> int:
        return self.key_base + self.n_keys

    @property
    def query_token(self) -> int:
        return self.value_base + self.n_values

    @property
    def vocab(self) -> int:
        return self.query_token + 1

    def min_length(self, chunk: int) -> int:
        """Shortest sequence that fits the needles in complete chunks before the queries."""
        if self.keys_per_chunk > chunk:
            raise ModelError(f"NeedleTask.keys_per_chunk = {self.keys_per_chunk} > chunk = "
                             f"{chunk}: a chunk cannot hold that many needles")
        if self.keys_per_chunk > 1:       # n_pairs / g whole chunks, then the query chunk
            return 3 * self.n_pairs + chunk * (1 + self.n_pairs // self.keys_per_chunk)
        return 3 * self.n_pairs + chunk * (1 + -(-self.n_pairs // chunk))

    def batch(self, rng: np.random.Generator, n: int, length: int, chunk: int):
        """``n`` sequences of ``length`` tokens.

        Returns
        -------
        tokens : (n, length) int64
        query_pos : (n, n_pairs) int64, positions of the queried keys (predict the next token)
        answers : (n, n_pairs) int64, the value tokens to predict there
        needle_pos : (n, n_pairs) int64, position of the needle each query asks for
        """
        p = self.n_pairs
        if length < self.min_length(chunk):
            raise ModelError(f"NeedleTask.batch: length = {length} is too short for {p} "
                             f"needles with chunk size {chunk}; need >= "
                             f"{self.min_length(chunk)}")
        tokens = rng.integers(0, self.n_filler, (n, length))
        hay_end = ((length - 3 * p) // chunk) * chunk    # chunks complete before any query
        g = self.keys_per_chunk
        if g == 1:
            pos = np.argsort(rng.random((n, hay_end)), axis=1)[:, :p]      # distinct slots
        else:   # p / g distinct chunks, g distinct slots in each
            chunks = np.argsort(rng.random((n, hay_end // chunk)), axis=1)[:, :p // g]
            slots = np.argsort(rng.random((n, p // g, chunk)), axis=2)[:, :, :g]
            pos = (chunks[:, :, None] * chunk + slots).reshape(n, p)
        keys = np.argsort(rng.random((n, self.n_keys)), axis=1)[:, :p]     # distinct keys
        values = rng.integers(0, self.n_values, (n, p))
        tokens[np.arange(n)[:, None], pos] = self.n_filler + keys * self.n_values + values
        order = np.argsort(rng.random((n, p)), axis=1)                    # query order
        q0 = length - 3 * p + 3 * np.arange(p)                            # Q marker positions
        tokens[:, q0] = self.query_token
        tokens[:, q0 + 1] = np.take_along_axis(keys, order, 1) + self.key_base
        answers = np.take_along_axis(values, order, 1) + self.value_base
        tokens[:, q0 + 2] = answers
        query_pos = np.broadcast_to(q0 + 1, (n, p)).copy()
        return tokens, query_pos, answers, np.take_along_axis(pos, order, 1)
