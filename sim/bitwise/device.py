"""BitwiseDevice: an edge device computing on packed words, with every word op and byte counted.

Models a microcontroller or FPGA fabric that holds +/-1 tensors as packed words of the
profile's width (``limits.word_bits``: 32 on Cortex-M, 64 on x86 and the FPGA fabric; see
:mod:`sim.bitwise.packing` for the layout) and computes with XOR/AND/OR, popcount and
small-integer add/compare. Each method computes *and* counts: the counts are those of the
word-serial kernel a microcontroller runs (the C that :mod:`deploy.c_export` writes), and
they change with the word width (a 64-bit device does half the word ops of a 32-bit one).

Counting conventions (per call; N, M rows, W words per row, K bits):

- ``sign_matmul``: per output N*M: W ``xor_word``, W ``popcount_word``, W + 1 ``int_add``
  (accumulate, then ``K - 2 s``); memory: both rows streamed once per output
  (2 W words read), the int32 result written (4 bytes). No cache reuse is modelled: an MCU
  without a data cache reloads the rows, which is what the exported kernel does.
- ``masked_sign_matmul``: as above plus W ``and_word`` and a third row (the mask) read per
  output; when ``k_eff`` is not given, popcount(mask) per mask row: W ``popcount_word`` and
  W ``int_add`` per row, and the mask rows read once more.
- ``sign``: per element 1 ``int_cmp`` + 1 ``or_word`` (compare, then OR the bit into its
  word); reads the integers, writes the packed words.
- ``flip_bits``: per flipped bit 1 ``xor_word`` (read-modify-write of its word);
  ``xor_words``: 1 ``xor_word`` per word.
- ``counter_add``: per updated counter 1 ``int_add`` + 2 ``int_cmp`` (saturate at lo, hi);
  reads and writes each counter, reads ``delta`` when it is an array.
- ``popcount``: per word 1 ``popcount_word`` + 1 ``int_add``.
- ``argmax``: C - 1 ``int_cmp`` per row of C scores.
- ``clause_votes`` (Tsetlin clauses): per row and clause, W x (2 ``and_word`` + 2
  ``or_word``: ``viol |= pos AND NOT x; viol |= neg AND x``; AND-NOT is one instruction,
  BIC, on Arm) and 1 ``int_cmp`` (viol == 0); 1 ``int_add`` per clause that fires.

Memory bytes go to the logical level ``memory_level`` (``"local"``, i.e. SRAM, by default).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hw_profiles.ops import OP_CODES, OP_NAMES
from sim.bitwise import kernels
from sim.bitwise.network import (
    ClauseLayer,
    Layer,
    NetworkOutput,
    check_network,
    check_vote_sums,
    forward,
    network_bytes,
)
from sim.bitwise.packing import WORD_DTYPES, n_words, pack_bool
from sim.device import Device, register_engine
from sim.errors import ModelError

_INT_BYTES = 4  # products and scores are int32
_INT32 = np.iinfo(np.int32)


def _zeros_counts() -> np.ndarray:
    return np.zeros(len(OP_NAMES), dtype=np.int64)



def _ones(words: np.ndarray) -> int:
    """Set bits in packed words (numpy >= 2: ``bitwise_count``; else unpacked bytes)."""
    if hasattr(np, "bitwise_count"):
        return int(np.bitwise_count(words).sum(dtype=np.int64))
    return int(np.unpackbits(np.ascontiguousarray(words).view(np.uint8)).sum())


def check_word_bits(profile) -> int:
    """The word width of ``profile`` (a HardwareProfile), which the bitwise engine must
    compute in: 32 or 64 bits (:data:`~sim.bitwise.packing.WORD_DTYPES`). Checked where a
    run is prepared, before any data is loaded, and again when the device is built.

    Raises
    ------
    ModelError
        ``limits.word_bits`` is missing or another width (16, 48, 128, ...).
    """
    wb = profile.limit("word_bits")
    if wb is None or int(wb) not in WORD_DTYPES:
        raise ModelError(f"[BitwiseDevice] profile {profile.name!r} has limits.word_bits"
                         f" = {wb}; the bitwise engine needs 32 or 64")
    return int(wb)


def check_state_fits(profile, writable: int, read_only: int = 0, scope: str | None = None,
                     who: str = "BitwiseDevice.reserve") -> None:
    """Check that ``writable`` + ``read_only`` bytes of state fit ``profile``'s memories, as
    :meth:`BitwiseDevice.reserve` does (:func:`sim.execution.mcu.place`), without a device:
    a model whose size its config and its data set's shape tell is refused before it is
    built or trained.

    Raises
    ------
    HardwareLimitError
        The state does not fit; the message names the bytes needed and available.
    """
    from sim.execution.mcu import place
    place(profile, int(writable), int(read_only), scope or "", who)


def profile_ref(profile) -> str:
    """How a trained bitwise model names the profile its export targets (its trained meta's
    ``profile``): a shipped profile's name, else the absolute path of the user's file (a
    relative one meant another file from another directory). The export itself uses the
    run's profile object, its snapshot when read from a run file; this text only says which
    profile that is."""
    if profile.label == profile.name or not profile.path:
        return profile.name
    return str(Path(profile.path).resolve())


class BitwiseDevice(Device):
    """Packed-word engine for ``bitwise`` profiles (Cortex-M, FPGA BNN fabric).

    Parameters
    ----------
    profile : str, path or HardwareProfile
        Any profile stating ``limits.word_bits`` = 32 or 64 (normally of kind ``bitwise``).
    memory_level : str
        Logical memory level that operands are read from and results written to.

    Examples
    --------
    >>> import numpy as np
    >>> from sim.bitwise import BitwiseDevice, pack_signs
    >>> dev = BitwiseDevice("cortex-m4")
    >>> a = pack_signs(np.array([[1, -1, 1]], np.int8), dev.word_bits)
    >>> b = pack_signs(np.array([[1, 1, 1], [-1, 1, -1]], np.int8), dev.word_bits)
    >>> dev.sign_matmul(a, b, 3).tolist()
    [[1, -3]]
    >>> dev.ledger.total_ops()["popcount_word"]   # 1 x 2 outputs x 1 word
    2
    """

    kinds = ("bitwise", "cpu")  # a CPU's word_bits and popcount serve packed bit kernels

    def __init__(self, profile, memory_level: str = "local"):
        super().__init__(profile)  # refuses a profile of another kind (Device.kinds)
        self.word_bits: int = check_word_bits(self.profile)
        self.word_dtype = WORD_DTYPES[self.word_bits]
        # the models flush their word-op counts into this ledger directly: it says their
        # width from the start (sim.pricing prices them only on a profile of this width)
        self.ledger.record_word_bits(self.word_bits)
        if memory_level not in self.profile.memory:
            raise ModelError(f"[BitwiseDevice] memory_level {memory_level!r} is not a memory of "
                             f"profile {self.profile.name!r}; it has "
                             f"{', '.join(self.profile.memory)}")
        self.memory_level = memory_level
        self.word_bytes = self.word_bits // 8

    # -- counting (``count(scope, samples)`` is Device.count: it records through the ledger)
    def _flush(self, counts: np.ndarray, read: int = 0, write: int = 0) -> None:
        if self.ledger.word_bits is None:   # a ledger given to the device after it was made
            self.ledger.record_word_bits(self.word_bits)
        self.ledger.flush(counts)
        if read or write:
            self.ledger.add_bytes(self.memory_level, read=int(read), write=int(write))

    # -- validation --------------------------------------------------------------------
    def _words(self, x, what: str, ndim: int | None = 2) -> np.ndarray:
        x = np.asarray(x)
        if x.dtype.kind != "u" or x.dtype.itemsize * 8 != self.word_bits:
            raise ModelError(f"[BitwiseDevice] {what}: expected packed uint{self.word_bits} "
                             f"words ({self.profile.name} word_bits = {self.word_bits}), got "
                             f"dtype {x.dtype}; pack with pack_signs(x, {self.word_bits})")
        if ndim is not None and x.ndim != ndim:
            raise ModelError(f"[BitwiseDevice] {what}: expected {ndim}-D words [rows, words], "
                             f"got shape {x.shape}")
        if ndim is None and x.ndim < 1:
            raise ModelError(f"[BitwiseDevice] {what}: expected at least 1-D words, got a scalar")
        return np.ascontiguousarray(x, dtype=self.word_dtype)

    def _check_k(self, k, w: int, what: str, *rows: tuple[str, np.ndarray]) -> int:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ModelError(f"[BitwiseDevice] {what}: k = {k!r}; expected the number of bits "
                             "per row, an integer >= 1")
        k = int(k)
        if n_words(k, self.word_bits) != w:
            raise ModelError(f"[BitwiseDevice] {what}: k = {k} bits need "
                             f"{n_words(k, self.word_bits)} words of {self.word_bits} bits, "
                             f"but the rows hold {w}")
        pad = w * self.word_bits - k
        if pad:
            used = k - (w - 1) * self.word_bits  # bits of the last word that hold data
            top = self.word_dtype.type(((1 << self.word_bits) - 1) ^ ((1 << used) - 1))
            for name, arr in rows:
                if arr.size and np.any(arr[..., -1] & top):
                    raise ModelError(f"[BitwiseDevice] {what}: {name} has padding bits set "
                                     f"above bit {k}; padding must be 0 (pack with pack_signs/"
                                     "pack_bits)")
        return k

    def _pair(self, a, b, what: str) -> tuple[np.ndarray, np.ndarray]:
        a = self._words(a, f"{what} a_words")
        b = self._words(b, f"{what} b_words")
        if a.shape[1] != b.shape[1]:
            raise ModelError(f"[BitwiseDevice] {what}: a_words {a.shape} and b_words {b.shape} "
                             "must hold the same number of words per row")
        return a, b

    # -- products ----------------------------------------------------------------------
    def sign_matmul(self, a_words, b_words, k: int) -> np.ndarray:
        """+/-1 dot products of the rows of ``a`` [N, W] with the rows of ``b`` [M, W].

        Returns int32 [N, M]: ``out[i, j] = sum_k a[i, k] b[j, k] = k - 2 popcount(a XOR b)``.
        """
        a, b = self._pair(a_words, b_words, "sign_matmul")
        k = self._check_k(k, a.shape[1], "sign_matmul", ("a_words", a), ("b_words", b))
        out = np.empty((a.shape[0], b.shape[0]), dtype=np.int32)
        counts = _zeros_counts()
        kernels.xor_popcount_matmul(a, b, k, out, counts)
        nm, w = out.size, a.shape[1]
        self._flush(counts, read=nm * 2 * w * self.word_bytes, write=nm * _INT_BYTES)
        return out

    def masked_sign_matmul(self, a_words, b_words, mask_words, k_eff=None, *,
                           mask_of: str = "a", k: int | None = None) -> np.ndarray:
        """Gated +/-1 products: only bit positions whose mask bit is 1 contribute.

        ``out[i, j] = sum_{k: mask[r, k] = 1} a[i, k] b[j, k]
        = k_eff[r] - 2 popcount((a[i] XOR b[j]) AND mask[r])`` with ``r = i`` when
        ``mask_of="a"`` (mask_words [N, W], one gate per row of a: BEP's backward, where a
        row of a is one sample's desired activations and the mask its gate) or ``r = j``
        when ``mask_of="b"`` (mask_words [M, W]).

        Parameters
        ----------
        k_eff : int array [R], optional
            popcount of each mask row; computed (and counted) when not given.
        k : int, optional
            The rows' bit count; when given, the word count and zero padding are checked.
            Without it every bit of the words is a position (the device cannot tell padding
            from data): a mask must then have 0 in its padding bits, as pack_bits makes
            it, or the padding positions count as products of the padding's +-1 values.

        Returns int32 [N, M].
        """
        a, b = self._pair(a_words, b_words, "masked_sign_matmul")
        mask = self._words(mask_words, "masked_sign_matmul mask_words")
        if mask_of not in ("a", "b"):
            raise ModelError(f"[BitwiseDevice] masked_sign_matmul: mask_of = {mask_of!r}; "
                             "expected 'a' (one mask per row of a) or 'b' (per row of b)")
        rows = a.shape[0] if mask_of == "a" else b.shape[0]
        if mask.shape != (rows, a.shape[1]):
            raise ModelError(f"[BitwiseDevice] masked_sign_matmul: mask_words {mask.shape} must "
                             f"be [{rows}, {a.shape[1]}] (one row per row of {mask_of})")
        if k is not None:
            self._check_k(k, a.shape[1], "masked_sign_matmul", ("a_words", a),
                          ("b_words", b), ("mask_words", mask))
        counts = _zeros_counts()
        read = 0
        if k_eff is None:
            keff = np.empty(rows, dtype=np.int64)
            kernels.mask_popcount(mask, keff, counts)
            read += mask.size * self.word_bytes
        else:
            keff = np.asarray(k_eff)
            if keff.dtype.kind not in "iu" or keff.shape != (rows,):
                raise ModelError(f"[BitwiseDevice] masked_sign_matmul: k_eff must be an integer "
                                 f"array of shape ({rows},), got {keff.dtype} {keff.shape}")
            keff = keff.astype(np.int64)
            read += rows * _INT_BYTES
        out = np.empty((a.shape[0], b.shape[0]), dtype=np.int32)
        kernels.masked_xor_popcount_matmul(a, b, mask, keff, mask_of == "a", out, counts)
        nm, w = out.size, a.shape[1]
        self._flush(counts, read=read + nm * 3 * w * self.word_bytes, write=nm * _INT_BYTES)
        return out

    def clause_votes(self, x_words, pos_words, neg_words, clause_class, clause_weight,
                     n_classes: int, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Tsetlin-machine clause evaluation and class votes.

        Clause ``c`` fires on input row ``x`` iff every literal it includes is true:
        ``x AND pos[c] == pos[c]`` (included plain literals are 1) and
        ``NOT x AND neg[c] == neg[c]`` (included negated literals are 0). A firing clause
        adds ``clause_weight[c]`` to the vote of class ``clause_class[c]``. A clause that
        includes nothing fires (training convention); an inference layer that wants empty
        clauses silent gives them weight 0 (:class:`~sim.bitwise.network.ClauseLayer` does).

        Parameters
        ----------
        x_words : [N, W] packed input bits (K features)
        pos_words, neg_words : [C, W] include masks of the plain / negated literals
        clause_class : int array [C], values in [0, n_classes)
        clause_weight : int array [C] (+1 / -1 for the standard multiclass TM's positive /
            negative clauses; any int32 for weighted machines)
        k : int, optional -- checks the word count and that padding bits are 0

        Returns
        -------
        votes : int32 [N, n_classes]
        fired : packed clause outputs [N, ceil(C / word_bits)] (bit c = clause c fired)
        """
        x = self._words(x_words, "clause_votes x_words")
        pos = self._words(pos_words, "clause_votes pos_words")
        neg = self._words(neg_words, "clause_votes neg_words")
        if pos.shape != neg.shape or pos.shape[1] != x.shape[1] or pos.shape[0] < 1:
            raise ModelError(f"[BitwiseDevice] clause_votes: pos_words {pos.shape} and "
                             f"neg_words {neg.shape} must both be [C >= 1, {x.shape[1]}] "
                             f"(the words of x_words {x.shape})")
        if k is not None:
            self._check_k(k, x.shape[1], "clause_votes", ("x_words", x),
                          ("pos_words", pos), ("neg_words", neg))
        n_c = pos.shape[0]
        if isinstance(n_classes, (bool, np.bool_)) or not isinstance(n_classes, (int, np.integer)) \
                or n_classes < 1:
            raise ModelError(f"[BitwiseDevice] clause_votes: n_classes = {n_classes!r}; need an "
                             "integer >= 1")
        cls, wt = np.asarray(clause_class), np.asarray(clause_weight)
        for name, v in (("clause_class", cls), ("clause_weight", wt)):
            if v.dtype.kind not in "iu" or v.shape != (n_c,):
                raise ModelError(f"[BitwiseDevice] clause_votes: {name} must be an integer "
                                 f"array of shape ({n_c},), got {v.dtype} {v.shape}")
        if cls.min() < 0 or cls.max() >= n_classes:
            raise ModelError(f"[BitwiseDevice] clause_votes: clause_class values must lie in "
                             f"[0, {n_classes}), got [{cls.min()}, {cls.max()}]")
        # the votes are int32 sums: weights whose sum could leave int32 would wrap
        check_vote_sums(cls, wt, int(n_classes), "[BitwiseDevice] clause_votes")
        votes = np.zeros((x.shape[0], int(n_classes)), dtype=np.int32)
        fired = np.zeros((x.shape[0], n_words(n_c, self.word_bits)), dtype=self.word_dtype)
        counts = _zeros_counts()
        kernels.clause_votes(x, pos, neg, cls.astype(np.int64), wt.astype(np.int32), votes,
                             fired, counts)
        # per row and clause: pos, neg and x words read, then class and weight (2 x int32)
        read = x.shape[0] * n_c * (3 * x.shape[1] * self.word_bytes + 2 * _INT_BYTES)
        self._flush(counts, read=read, write=votes.nbytes + fired.nbytes)
        return votes, fired

    # -- elementwise -------------------------------------------------------------------
    def sign(self, x_int, threshold=0) -> np.ndarray:
        """Packed signs of integers: bit 1 (+1) iff ``x >= threshold`` (ties give +1).

        ``x_int`` [..., K] integers; ``threshold`` an integer or an integer array that
        broadcasts against ``x_int`` (e.g. one threshold per column, shape [K]).
        Returns words [..., ceil(K / word_bits)].
        """
        x = np.asarray(x_int)
        thr = np.asarray(threshold)
        if x.dtype.kind not in "iu" or x.ndim < 1 or x.shape[-1] < 1:
            raise ModelError(f"[BitwiseDevice] sign: x_int must be an integer array with a "
                             f"non-empty last axis, got {x.dtype} {x.shape}")
        if thr.dtype.kind not in "iu":
            raise ModelError(f"[BitwiseDevice] sign: threshold must be integer (no float on "
                             f"this device), got dtype {thr.dtype}")
        try:
            bits = np.greater_equal(x, thr)
        except ValueError:
            raise ModelError(f"[BitwiseDevice] sign: threshold shape {thr.shape} does not "
                             f"broadcast against x_int {x.shape}") from None
        if bits.shape != x.shape:
            raise ModelError(f"[BitwiseDevice] sign: threshold shape {thr.shape} would "
                             f"broadcast x_int {x.shape} to {bits.shape}")
        out = pack_bool(bits, self.word_bits)
        counts = _zeros_counts()
        counts[OP_CODES["int_cmp"]] = x.size
        counts[OP_CODES["or_word"]] = x.size
        read = x.nbytes + (thr.nbytes if thr.ndim else 0)
        self._flush(counts, read=read, write=out.size * self.word_bytes)
        return out

    def flip_bits(self, words, idx) -> np.ndarray:
        """A copy of ``words`` [..., W] with the bits at ``idx`` inverted (XOR with a 1 bit).

        ``idx`` is an integer array [F, words.ndim] of coordinates in the *unpacked*
        array: leading indices, then the bit index 0..W*word_bits-1 along the last axis
        (``np.argwhere`` of a boolean [..., K] array has this form). A bit listed twice
        flips back.
        """
        w = self._words(words, "flip_bits words", ndim=None)
        idx = np.asarray(idx)
        if idx.dtype.kind not in "iu" or idx.ndim != 2 or idx.shape[1] != w.ndim:
            raise ModelError(f"[BitwiseDevice] flip_bits: idx must be an integer array "
                             f"[n_flips, {w.ndim}] of coordinates, got {idx.dtype} {idx.shape}")
        limits = np.array(w.shape[:-1] + (w.shape[-1] * self.word_bits,))
        if idx.size and (np.any(idx < 0) or np.any(idx >= limits)):
            bad = idx[np.any((idx < 0) | (idx >= limits), axis=1)][0]
            raise ModelError(f"[BitwiseDevice] flip_bits: coordinate {bad.tolist()} is outside "
                             f"the unpacked shape {tuple(limits.tolist())}")
        out = w.copy()
        if idx.size:
            bit = idx[:, -1].astype(np.int64)
            coords = tuple(idx[:, :-1].T) + (bit // self.word_bits,)
            flat = np.ravel_multi_index(coords, w.shape)
            one = self.word_dtype.type(1)
            masks = np.left_shift(one, (bit % self.word_bits).astype(self.word_dtype))
            np.bitwise_xor.at(out.reshape(-1), flat, masks)
        counts = _zeros_counts()
        counts[OP_CODES["xor_word"]] = len(idx)
        self._flush(counts, read=len(idx) * self.word_bytes, write=len(idx) * self.word_bytes)
        return out

    def xor_words(self, words, mask_words) -> np.ndarray:
        """``words XOR mask_words`` (same shape): flips every bit set in the mask."""
        w = self._words(words, "xor_words words", ndim=None)
        m = self._words(mask_words, "xor_words mask_words", ndim=None)
        if w.shape != m.shape:
            raise ModelError(f"[BitwiseDevice] xor_words: words {w.shape} and mask_words "
                             f"{m.shape} must have the same shape")
        counts = _zeros_counts()
        counts[OP_CODES["xor_word"]] = w.size
        self._flush(counts, read=2 * w.size * self.word_bytes, write=w.size * self.word_bytes)
        return w ^ m

    def counter_add(self, counters, delta, lo: int, hi: int, rows=None) -> np.ndarray:
        """Saturating integer counter update, in place: ``c <- clip(c + delta, lo, hi)``.

        Parameters
        ----------
        counters : signed integer array (int8/int16/int32), e.g. BEP's int16 hidden weights
        delta : integer scalar or array broadcasting against ``counters`` (or against
            ``counters[rows]`` when ``rows`` is given)
        lo, hi : saturation bounds, within the counters' dtype
        rows : integer array, optional
            Update only these rows (first-axis indices, distinct) of ``counters``.

        Returns ``counters`` (updated in place). The sum is formed in int64 with ``delta``
        clipped to +-2**62 (beyond any counter's range: the clip's result is the same), so
        it never wraps before the clip.
        """
        c = counters
        if not isinstance(c, np.ndarray) or c.dtype.kind != "i" or c.dtype.itemsize > 4:
            raise ModelError(f"[BitwiseDevice] counter_add: counters must be a signed int8/16/32 "
                             f"numpy array (updated in place), got "
                             f"{getattr(c, 'dtype', type(c).__name__)}")
        info = np.iinfo(c.dtype)
        for name, v in (("lo", lo), ("hi", hi)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) \
                    or not info.min <= v <= info.max:
                raise ModelError(f"[BitwiseDevice] counter_add: {name} = {v!r} must be an "
                                 f"integer in the {c.dtype} range [{info.min}, {info.max}]")
        if lo > hi:
            raise ModelError(f"[BitwiseDevice] counter_add: lo = {lo} > hi = {hi}")
        d = np.asarray(delta)
        if d.dtype.kind not in "iu":
            raise ModelError(f"[BitwiseDevice] counter_add: delta must be integer, got {d.dtype}")
        if rows is not None:
            rows = np.asarray(rows)
            if rows.dtype.kind not in "iu" or rows.ndim != 1:
                raise ModelError(f"[BitwiseDevice] counter_add: rows must be a 1-D integer "
                                 f"array, got {rows.dtype} {rows.shape}")
            if rows.size and (rows.min() < 0 or rows.max() >= c.shape[0]):
                raise ModelError(f"[BitwiseDevice] counter_add: rows outside [0, {c.shape[0]})")
            if np.unique(rows).size != rows.size:
                raise ModelError("[BitwiseDevice] counter_add: rows must be distinct")
            target = c[rows]
        else:
            target = c
        try:
            # int64: an int32 counter at hi plus 1 wrapped in int32 (to -2**31, then
            # clipped to lo); a uint64 delta above 2**62 is clipped before the cast
            d64 = (np.minimum(d, 2**62) if d.dtype == np.uint64
                   else np.clip(d, -2**62, 2**62)).astype(np.int64)
            new = np.clip(target.astype(np.int64) + d64, lo, hi).astype(c.dtype)
        except ValueError:
            raise ModelError(f"[BitwiseDevice] counter_add: delta shape {d.shape} does not "
                             f"broadcast against the counters {target.shape}") from None
        if new.shape != target.shape:
            raise ModelError(f"[BitwiseDevice] counter_add: delta shape {d.shape} would "
                             f"broadcast the counters {target.shape} to {new.shape}")
        if rows is not None:
            c[rows] = new
        else:
            c[...] = new
        n = target.size
        counts = _zeros_counts()
        counts[OP_CODES["int_add"]] = n
        counts[OP_CODES["int_cmp"]] = 2 * n
        isz = c.dtype.itemsize
        self._flush(counts, read=n * isz + (d.nbytes if d.ndim else 0), write=n * isz)
        return c

    def popcount(self, words, per_word: bool = False) -> np.ndarray:
        """Set bits per row (int32 [...], summed over the last axis) or per word."""
        w = self._words(words, "popcount words", ndim=None)
        pc = np.bitwise_count(w)
        out = pc.astype(np.int32) if per_word else pc.sum(axis=-1, dtype=np.int32)
        counts = _zeros_counts()
        counts[OP_CODES["popcount_word"]] = w.size
        if not per_word:
            counts[OP_CODES["int_add"]] = w.size
        self._flush(counts, read=w.size * self.word_bytes, write=out.size * _INT_BYTES)
        return out

    def argmax(self, scores) -> np.ndarray:
        """Index of the largest integer score per row (the lowest index on ties): int64 [N]."""
        s = np.asarray(scores)
        if s.dtype.kind not in "iu" or s.ndim != 2 or s.shape[1] < 1:
            raise ModelError(f"[BitwiseDevice] argmax: scores must be integer [N, C>=1], got "
                             f"{s.dtype} {s.shape}")
        counts = _zeros_counts()
        counts[OP_CODES["int_cmp"]] = s.shape[0] * (s.shape[1] - 1)
        self._flush(counts, read=s.nbytes)
        return np.argmax(s, axis=1).astype(np.int64)

    def add_int(self, x, y) -> np.ndarray:
        """Integer ``x + y`` (int32, broadcasting), one ``int_add`` per result element."""
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype.kind not in "iu" or y.dtype.kind not in "iu":
            raise ModelError(f"[BitwiseDevice] add_int: integer operands only, got {x.dtype} "
                             f"and {y.dtype}")
        total = x.astype(np.int64) + y.astype(np.int64)
        if total.size and (total.min() < _INT32.min or total.max() > _INT32.max or
                           min(x.min(initial=0), y.min(initial=0)) < _INT32.min or
                           max(x.max(initial=0), y.max(initial=0)) > _INT32.max):
            raise ModelError("[BitwiseDevice] add_int: operands or sums outside the device's "
                             f"int32 range [{_INT32.min}, {_INT32.max}] (they would wrap); "
                             "scale the operands down")
        out = total.astype(np.int32)
        counts = _zeros_counts()
        counts[OP_CODES["int_add"]] = out.size
        self._flush(counts, read=x.nbytes + y.nbytes, write=out.nbytes)
        return out

    # -- resident state (MCU capacity) ----------------------------------------------------
    def reserve(self, writable: int, read_only: int = 0, scope: str | None = None) -> None:
        """Hold ``writable`` + ``read_only`` bytes of state on the device for ``scope``.

        Checks the state fits (writable in SRAM and the other writable memories, read-only
        also in flash; see :func:`sim.execution.mcu.place`) and records it in the ledger,
        so pricing on any other bitwise profile checks it again.

        Raises
        ------
        HardwareLimitError
            The state does not fit; the message names the bytes needed and available.
        """
        check_state_fits(self.profile, writable, read_only, scope)
        self.ledger.add_footprint(int(writable), int(read_only), scope=scope)

    # -- networks (Device contract) ------------------------------------------------------
    def compile(self, layers: Sequence[Layer]) -> list[Layer]:
        """Check a packed feed-forward network (see :mod:`sim.bitwise.network`) fits this device.

        The word width must be the device's, consecutive layers must chain, and the
        packed weights plus thresholds must fit the largest memory of the profile.
        """
        layers = check_network(layers, self.word_bits)
        need = network_bytes(layers)
        cap = max(m.capacity_bytes.value for m in self.profile.memory.values())
        if need > cap:
            self._limit_error("packed weights + thresholds", f"{need} B",
                              "largest memory capacity_bytes", f"{cap:.0f} B",
                              "use narrower layers or a device with more memory")
        self._record_network(layers, need)
        return layers

    def _record_network(self, layers, nbytes: int) -> None:
        """NeuroBench's static facts and one layer record per layer (scope ``L{i}_{name}``).

        Weights are +-1 bits (Sign/Scores layers: never zero) or, in a clause layer, the
        include bits of each clause's plain and negated literals (an excluded literal is a
        zero weight); thresholds, biases, clause classes and votes are parameters too."""
        params = weights = zeros = 0
        for i, layer in enumerate(layers):
            if isinstance(layer, ClauseLayer):
                n_clauses = layer.pos.shape[0]
                w = 2 * n_clauses * layer.k
                included = _ones(layer.pos) + _ones(layer.neg)
                own = w + 2 * n_clauses
                zeros += w - included
            else:
                w = layer.n_out * layer.k
                own = w + layer.n_out
            params += own
            weights += w
            self.ledger.record_layer(f"L{i}_{layer.name}", type(layer).__name__,
                                     (layer.n_out,), own)
        self.ledger.record_model("network", parameters=params, parameter_bytes=nbytes,
                                 buffer_bytes=0, connection_weights=weights,
                                 connection_zero_weights=zeros)

    def run(self, layers: Sequence[Layer], x_words: np.ndarray,
            scope: str = "infer") -> NetworkOutput:
        """Inference of a packed network on inputs ``x_words`` [N, W]: a NetworkOutput."""
        layers = self.compile(layers)
        x = self._words(x_words, "run x_words")
        with self.count(scope, samples=x.shape[0]):
            return forward(self, layers, x)


register_engine("bitwise", BitwiseDevice)

__all__ = ["BitwiseDevice", "check_state_fits", "check_word_bits", "profile_ref"]
