"""Packed feed-forward networks: the layer kinds BitwiseDevice runs and the C exporter writes.

A network is a list of layers; every layer but the last is a :class:`SignLayer`, the last
is a :class:`ScoresLayer` or a :class:`ClauseLayer` (integer scores and their argmax) or
another SignLayer (the network then returns packed bits). Models (BEP, Tsetlin machines,
...) build these from their trained state; ``BitwiseDevice.run`` and the C exporter both
consume them, so the simulator and the exported C compute the same thing by construction
and the tests check that they do, bit for bit.

Semantics (K input bits, M outputs, x the packed input row, w_m a packed weight row):

- ``SignLayer``: ``z_m = K - 2 popcount(x XOR w_m)`` (the +/-1 dot product), output bit
  ``m`` = 1 (+1) iff ``z_m >= thresholds[m]``. Thresholds are integers (a folded bias or
  batch-norm); a neuron that should fire on ``z <= t`` is written with its row inverted
  and threshold ``-t``.
- ``ScoresLayer``: ``scores_c = K - 2 popcount(x XOR w_c) + bias[c]`` (int32), label =
  argmax with the lowest index on ties.
- ``ClauseLayer`` (Tsetlin machine inference): clause ``j`` fires iff ``x`` has a 1 at
  every bit of ``pos[j]`` and a 0 at every bit of ``neg[j]``; ``scores_c`` = sum of
  ``weight[j]`` over firing clauses with ``clause_class[j] = c``; label = argmax. Clauses
  that include no literal are silent at inference (the usual TM convention), written as
  weight 0. Scores are int32: a class whose positive (negative) weights sum past int32 is
  refused when the layer is built (:func:`check_vote_sums`), as biases that would wrap are.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sim.bitwise.packing import WORD_DTYPES, n_words
from sim.errors import ModelError

LAYER_NAME_PATTERN = "[A-Za-z0-9_.-]+"
"""What a layer name may be: it becomes a ledger scope component (``L{i}_{name}``, the
ledger's scope grammar) and part of the C export's identifiers."""
_LAYER_NAME = re.compile(LAYER_NAME_PATTERN)


def _check_name(kind: str, name) -> None:
    # refused when the layer is built, not later as a ledger scope or inside generated C
    if not (isinstance(name, str) and _LAYER_NAME.fullmatch(name)):
        raise ModelError(f"{kind} name {name!r}: layer names must match "
                          f"{LAYER_NAME_PATTERN} (they become ledger scopes and C identifiers)")


def _check_rows(weights, k, what: str) -> tuple[np.ndarray, int]:
    w = np.asarray(weights)
    if w.dtype not in (np.uint32, np.uint64) or w.ndim != 2 or w.shape[0] < 1:
        raise ModelError(f"{what}: weights must be packed uint32/uint64 [M >= 1, W], got "
                         f"{w.dtype} {w.shape}")
    wb = w.dtype.itemsize * 8
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1 \
            or n_words(k, wb) != w.shape[1]:
        raise ModelError(f"{what}: k = {k!r} input bits do not match {w.shape[1]} words of "
                         f"{wb} bits per weight row")
    return np.ascontiguousarray(w), int(k)


def _check_int_vector(v, n: int, what: str) -> np.ndarray:
    v = np.asarray(v)
    if v.dtype.kind not in "iu" or v.shape != (n,):
        raise ModelError(f"{what}: expected an integer vector of shape ({n},), got "
                         f"{v.dtype} {v.shape}")
    if v.size and (v.min() < np.iinfo(np.int32).min or v.max() > np.iinfo(np.int32).max):
        raise ModelError(f"{what}: values must fit int32")
    return v.astype(np.int32)


def check_vote_sums(clause_class, weights, n_classes: int, what: str) -> None:
    """Refuse clause weights whose votes could leave int32: the simulator sums them in int32
    and the exported C in ``int32_t``: a class whose firing clauses add past 2**31 - 1 (or
    below -2**31) wraps silently in the simulator and is undefined behaviour in the C.
    Any set of a class's clauses may fire together, so each class's positive weights must
    sum to at most 2**31 - 1 and its negative ones to at least -2**31 (every partial
    sum, in any order, lies between the two).

    Raises
    ------
    ModelError
        Naming the class, the sum and the range.
    """
    cls = np.asarray(clause_class).astype(np.int64)
    wt = np.asarray(weights).astype(np.int64)
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    for kind, part, bad in (("positive", np.maximum(wt, 0), lambda v: v > hi),
                            ("negative", np.minimum(wt, 0), lambda v: v < lo)):
        sums = np.zeros(int(n_classes), np.int64)
        np.add.at(sums, cls, part)     # int64: 2**32 clauses of int32 weights stay exact
        for c in np.flatnonzero(bad(sums)):
            raise ModelError(f"{what}: the {kind} clause weights of class {c} sum to "
                             f"{int(sums[c])} when they all fire, outside int32 [{lo}, "
                             f"{hi}]: the votes would wrap; scale the weights down")


@dataclass(frozen=True)
class SignLayer:
    """Binary layer: packed +/-1 weights [M, W] over K input bits, integer thresholds [M]."""

    weights: np.ndarray
    k: int
    thresholds: np.ndarray
    name: str = "sign"

    def __post_init__(self):
        _check_name("SignLayer", self.name)
        w, k = _check_rows(self.weights, self.k, f"SignLayer {self.name!r}")
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "thresholds", _check_int_vector(
            self.thresholds, w.shape[0], f"SignLayer {self.name!r} thresholds"))

    @property
    def n_out(self) -> int:
        return self.weights.shape[0]

    @property
    def word_bits(self) -> int:
        return self.weights.dtype.itemsize * 8


@dataclass(frozen=True)
class ScoresLayer:
    """Final layer: integer scores ``dot + bias`` per class [C] and their argmax."""

    weights: np.ndarray
    k: int
    bias: np.ndarray = field(default=None)
    name: str = "scores"

    def __post_init__(self):
        _check_name("ScoresLayer", self.name)
        w, k = _check_rows(self.weights, self.k, f"ScoresLayer {self.name!r}")
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "k", k)
        bias = np.zeros(w.shape[0], np.int32) if self.bias is None else self.bias
        object.__setattr__(self, "bias", _check_int_vector(
            bias, w.shape[0], f"ScoresLayer {self.name!r} bias"))

    @property
    def n_out(self) -> int:
        return self.weights.shape[0]

    @property
    def word_bits(self) -> int:
        return self.weights.dtype.itemsize * 8


@dataclass(frozen=True)
class ClauseLayer:
    """Final Tsetlin-machine layer: include masks [C, W] of plain (``pos``) and negated
    (``neg``) literals over K input bits, each clause's class and integer vote weight."""

    pos: np.ndarray
    neg: np.ndarray
    k: int
    clause_class: np.ndarray
    weights: np.ndarray
    n_classes: int
    name: str = "clauses"

    def __post_init__(self):
        _check_name("ClauseLayer", self.name)
        what = f"ClauseLayer {self.name!r}"
        pos, k = _check_rows(self.pos, self.k, f"{what} pos")
        neg, _ = _check_rows(self.neg, self.k, f"{what} neg")
        if neg.shape != pos.shape or neg.dtype != pos.dtype:
            raise ModelError(f"{what}: neg {neg.dtype} {neg.shape} must match pos "
                             f"{pos.dtype} {pos.shape}")
        n = self.n_classes
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ModelError(f"{what}: n_classes = {n!r}; need an integer >= 1")
        cls = _check_int_vector(self.clause_class, pos.shape[0], f"{what} clause_class")
        if cls.min() < 0 or cls.max() >= n:
            raise ModelError(f"{what}: clause_class values must lie in [0, {n})")
        wt = _check_int_vector(self.weights, pos.shape[0], f"{what} weights")
        empty = ~(pos.any(axis=1) | neg.any(axis=1))
        wt = np.where(empty, 0, wt).astype(np.int32)    # empty clauses vote nothing
        check_vote_sums(cls, wt, int(n), what)          # the int32 votes never wrap
        for name, v in (("pos", pos), ("neg", neg), ("k", k), ("clause_class", cls),
                        ("weights", wt), ("n_classes", int(n))):
            object.__setattr__(self, name, v)

    @property
    def n_out(self) -> int:
        return self.n_classes

    @property
    def word_bits(self) -> int:
        return self.pos.dtype.itemsize * 8


LAYER_KINDS = (SignLayer, ScoresLayer, ClauseLayer)
Layer = SignLayer | ScoresLayer | ClauseLayer
"""One layer of a packed network (the kinds in :data:`LAYER_KINDS`)."""
FINAL_KINDS = (ScoresLayer, ClauseLayer)
"""layer kinds that produce scores and must come last"""


@dataclass(frozen=True)
class NetworkOutput:
    """What a network computes: int32 scores [N, C] and labels [N] (ScoresLayer last), or
    packed output bits [N, W] and their count (SignLayer last; scores/labels are None)."""

    scores: np.ndarray | None
    labels: np.ndarray | None
    bits: np.ndarray | None = None
    n_bits: int = 0


def check_network(layers: Sequence, word_bits: int) -> list:
    """Validate a layer list: known kinds, one word width, chained sizes, scores only last."""
    layers = list(layers)
    if not layers:
        raise ModelError("network: no layers; expected SignLayer ... [ScoresLayer]")
    if word_bits not in WORD_DTYPES:
        raise ModelError(f"network: word_bits = {word_bits}; expected 32 or 64")
    for i, layer in enumerate(layers):
        if not isinstance(layer, LAYER_KINDS):
            raise ModelError(f"network layer {i}: {type(layer).__name__} is not a layer kind "
                             f"({', '.join(c.__name__ for c in LAYER_KINDS)})")
        if layer.word_bits != word_bits:
            raise ModelError(f"network layer {i} ({layer.name!r}): packed in {layer.word_bits}-"
                             f"bit words; this target uses {word_bits}-bit words (repack)")
        if isinstance(layer, FINAL_KINDS) and i != len(layers) - 1:
            raise ModelError(f"network layer {i} ({layer.name!r}): a {type(layer).__name__} "
                             "must be last")
        if i and layer.k != layers[i - 1].n_out:
            raise ModelError(f"network layer {i} ({layer.name!r}): expects k = {layer.k} input "
                             f"bits but layer {i - 1} gives {layers[i - 1].n_out}")
    return layers


def network_bytes(layers: Sequence) -> int:
    """Bytes of packed weights + int32 thresholds/biases: the model's footprint."""
    total = 0
    for layer in layers:
        if isinstance(layer, ClauseLayer):
            total += layer.pos.nbytes + layer.neg.nbytes + 4 * 2 * layer.pos.shape[0]
        else:
            total += layer.weights.nbytes
            total += (layer.thresholds if isinstance(layer, SignLayer) else layer.bias).nbytes
    return total


def forward(device, layers: Sequence, x: np.ndarray) -> NetworkOutput:
    """Run ``layers`` on packed inputs ``x`` [N, W] on ``device``, counting every op."""
    if n_words(layers[0].k, device.word_bits) != x.shape[1]:
        raise ModelError(f"network input: {x.shape[1]} words per row, but layer 0 "
                         f"({layers[0].name!r}) takes k = {layers[0].k} bits")
    for i, layer in enumerate(layers):
        with device.count(f"L{i}_{layer.name}"):
            if isinstance(layer, ClauseLayer):
                scores, _ = device.clause_votes(x, layer.pos, layer.neg, layer.clause_class,
                                                layer.weights, layer.n_classes)  # (N, C)
                return NetworkOutput(scores=scores, labels=device.argmax(scores))
            z = device.sign_matmul(x, layer.weights, layer.k)            # (N, M)
            if isinstance(layer, SignLayer):
                x = device.sign(z, layer.thresholds)                    # (N, ceil(M/wb))
            else:
                scores = device.add_int(z, layer.bias)                  # (N, C)
                return NetworkOutput(scores=scores, labels=device.argmax(scores))
    return NetworkOutput(scores=None, labels=None, bits=x, n_bits=layers[-1].n_out)
