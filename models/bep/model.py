"""Binary Error Propagation (BEP): training +/-1 networks with bits and small integers only.

Colombo, Pittorino, Zambon, Baldassi, Roveri & Alippi, "BEP: A Binary Error Propagation
Algorithm for Binary Neural Networks Training", ICLR 2026, arXiv:2512.04189 (v2); equation
and section numbers are the paper's.

Every weight has a hidden int16 counter ``H`` (B = 16 bits, clipped to [-2^15, 2^15 - 1]);
the visible weight is ``W = sign(H)`` (sign(0) = +1). With ``a_0 = x`` (bits, 1 <-> +1):

- forward: ``z_l = W_l a_{l-1}``, ``a_l = sign(z_l)``; logits ``P a_L`` with a fixed +/-1
  frame ``P`` (C x K_L), never trained;
- trigger (Eq. 1): a sample learns iff ``y_c - max_{c' != c} y_c' < r K_L``;
- backward (Eq. 5, 7): ``a*_L = rho_c`` (row c of P); ``a*_l = sign(W_{l+1}^T (g_{l+1} *
  a*_{l+1}))`` with the gate ``g = 1[|z| <= nu K_in]``;
- mask (Eq. 9): per sample and group of ``gamma_l`` consecutive neurons, the neuron with
  ``a* != sign(z)`` of smallest ``|z|`` (nearest to flipping) is the only one updated;
- update (Eq. 8): ``H_l <- clip(H_l + 2 sum_mu M_l (a*_l a_{l-1}^T))`` summed over the
  triggered samples of a mini-batch;
- reinforcement (CP+R, Sec. 3.3): each counter, with probability ``p_r sqrt(2 / (pi
  K_in)) sqrt(train error of the last epoch)``, moves 2 away from 0;
- gamma schedule: when the held-out error has not improved for ``patience`` epochs, every
  ``gamma_l`` rises to the next divisor of ``K_l``.

Readings chosen where the paper (as digested) is silent:

- P: rows 1..C of the Sylvester Hadamard matrix of order K_L (mutually orthogonal, i.e. a
  maximally separated +/-1 codebook) when K_L is a power of two >= C + 1, else a seeded
  random +/-1 frame (the precursor's frozen random layer).
- sign(0) = +1 in the forward. In the backward, where the gated sum is exactly 0 the
  desired bit keeps the forward activation: both choices maximise the relaxed objective
  (the Lemma), and "keep" asks for no change where no error reached the neuron.
- The stability in the mask is the visible pre-activation ``z`` (the precursor code's
  reading; the note's ``a* H`` would need an integer matmul with H).
- The gate only filters the error passed down; the mask is chosen among all wrong neurons.
- Init: ``H`` uniform integers in [-111, 111] (std 64, the precursor's N(0, 64^2) variance,
  drawn as integers so nothing in BEP touches a float). Reinforcement runs after every
  mini-batch update; its probability is an integer threshold on a xorshift32 draw,
  computed with integer arithmetic (pi ~ 355/113).

Everything runs on a :class:`~sim.bitwise.device.BitwiseDevice`: products, gated products,
sign and saturating counter updates are the device's word ops; the steps above that are
specific to BEP are integer numba kernels (``models/bep/kernels.py``) whose ops and bytes
go into the same ledger, as do those of the bookkeeping around them (packing a* and the
gates into words, unpacking a_l, the error tallies, the scans of the trigger and touched
flags, setting the refreshed bits of W and W^T: ``_pack`` ... ``_refresh``). No
floating-point number is computed on the training or inference path.

BEP-TT (recurrent networks) is in ``models/bep/model_tt.py``; the local rule baseline
(Colombo et al. 2025: every layer learns against its own fixed random head, nothing is
propagated) is :class:`BEP` with ``local=True``. The hyperparameters are
:class:`models.bep.card.BEPConfig`. A trained network leaves as plain arrays
(:meth:`BEP.trained`) from which :func:`packed_network` rebuilds the packed layers the
bitwise engine runs and the C exporter writes, with no training.
"""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from hw_profiles.ops import OP_NAMES
from models.bep import kernels as K
from models.bep.card import BEPConfig
from models.registry import Progress, Trained
from sim import seeds
from sim.bitwise.device import BitwiseDevice
from sim.bitwise.network import ScoresLayer, SignLayer
from sim.bitwise.packing import pack_bits, pack_signs, unpack_signs
from sim.errors import ModelError, NotExportable

H_LO, H_HI = -(2 ** 15), 2 ** 15 - 1   # int16 counters: B = 16 bits (the paper's choice)
INIT_HALF_WIDTH = 111                   # uniform integer init with std ~64 (111 / sqrt(3))
PI = Fraction(355, 113)                 # integer-only reinforcement probability




def frac(x) -> Fraction:
    """A hyperparameter as an exact small fraction, so thresholds are integer arithmetic."""
    return Fraction(str(x)).limit_denominator(10_000)


def output_frame(n_classes: int, k: int, seed: int) -> np.ndarray:
    """The fixed +/-1 classifier P (C, K): Hadamard rows 1..C, else a seeded random frame."""
    if k >= n_classes + 1 and k & (k - 1) == 0:
        h = np.ones((1, 1), dtype=np.int8)
        while h.shape[0] < k:  # Sylvester: [[H, H], [H, -H]]
            h = np.block([[h, h], [h, -h]])
        return np.ascontiguousarray(h[1:n_classes + 1])
    g = seeds.rng(seed, "frame")
    return (2 * g.integers(0, 2, size=(n_classes, k)) - 1).astype(np.int8)


def reinforce_threshold(p_r: Fraction, k_in: int, err: Fraction) -> int:
    """floor(2^32 p), p = p_r sqrt(2 / (pi k_in)) sqrt(err), in integers only."""
    num = (1 << 64) * p_r.numerator ** 2 * 2 * PI.denominator * err.numerator
    den = p_r.denominator ** 2 * PI.numerator * k_in * err.denominator
    return math.isqrt(num // den)


def next_divisor(k: int, g: int) -> int:
    """The smallest divisor of k above g (k itself at most)."""
    return next(d for d in range(g + 1, k + 1) if k % d == 0) if g < k else k


def to_signs(bits: np.ndarray) -> np.ndarray:
    """0/1 bits -> int8 +/-1 (bit 1 <-> +1)."""
    return (2 * bits.astype(np.int8) - 1).astype(np.int8)


class Layer:
    """One trainable binary layer: int16 counters and the packed visible weights (both ways).

    ``w`` packs rows of sign(H) (K_out, words(K_in)) for the forward; ``wt`` packs its
    transpose (K_in, words(K_out)) for the backward's column access. Both are refreshed
    only where an update touched a row (reinforcement never changes a sign).
    """

    def __init__(self, k_in: int, k_out: int, word_bits: int, rng: np.random.Generator):
        self.k_in, self.k_out, self.word_bits = k_in, k_out, word_bits
        self.fan_in = k_in  # the K_in of the reinforcement probability (BEP-TT: K_x + K_s)
        self.h = rng.integers(-INIT_HALF_WIDTH, INIT_HALF_WIDTH + 1, size=(k_out, k_in),
                              dtype=np.int16)  # (K_out, K_in)
        self.repack()

    def signs(self) -> np.ndarray:
        return np.where(self.h >= 0, np.int8(1), np.int8(-1))

    def repack(self) -> None:
        s = self.signs()
        self.w = pack_signs(s, self.word_bits)
        self.wt = pack_signs(np.ascontiguousarray(s.T), self.word_bits)


class BEP:
    """A binary MLP trained by BEP (or by the local rule) on a BitwiseDevice.

    Parameters
    ----------
    n_inputs, n_classes : int
    config : BEPConfig
    device : BitwiseDevice
    """

    x_ndim = 2  # inputs (N, K_0)

    def __init__(self, n_inputs: int, n_classes: int, config: BEPConfig,
                 device: BitwiseDevice):
        rng = seeds.rng(config.seed, "init")
        sizes = (n_inputs, *config.hidden)
        layers = [Layer(a, b, device.word_bits, rng) for a, b in itertools.pairwise(sizes)]
        # local rule: each hidden layer below the last gets its own frozen random head
        heads = [(2 * rng.integers(0, 2, size=(n_classes, k)) - 1).astype(np.int8)
                 for k in config.hidden[:-1]]
        self._init_state(n_inputs, n_classes, config, device, layers, heads)

    def _init_state(self, n_inputs, n_classes, config, device, layers, heads):
        """State shared with BEP-TT: layers, the frame P (C, K_last), counters of the run."""
        self.config, self.dev = config, device
        self.n_inputs, self.n_classes = n_inputs, n_classes
        self.wb = device.word_bits
        self.layers = layers
        self.frame = output_frame(n_classes, layers[-1].k_out, config.seed)  # (C, K_L)
        self.heads = heads + [self.frame]
        self.head_words = [pack_signs(p, self.wb) for p in self.heads]
        self.gamma = [min(config.gamma0, k) for k in config.hidden]
        self.counts = np.zeros(len(OP_NAMES), dtype=np.int64)
        self.mem = np.zeros(2, dtype=np.int64)   # the kernels' bytes [read, written]
        self.history: list[dict] = []
        # the reinforcement draws' xorshift32 state: any nonzero word (0 is its fixed point)
        self.rng_state = np.array([seeds.child(config.seed, "reinforce") or 1], dtype=np.uint32)
        self.set_error(Fraction(1))

    # -- helpers -----------------------------------------------------------------------
    def _flush(self):
        """The kernels' ops and bytes into the ledger; the bytes at the device's memory level
        (where the state is placed), as the device's own word ops put theirs."""
        dev = self.dev
        dev.ledger.flush(self.counts)
        dev.ledger.add_bytes(dev.memory_level, read=int(self.mem[0]), write=int(self.mem[1]))
        self.counts[:] = 0
        self.mem[:] = 0

    # the bookkeeping around the kernels, counted as the device executes it
    def _pack(self, x: np.ndarray, signs: bool) -> np.ndarray:
        """``x`` (..., K) int8 (+/-1 when ``signs``, else 0/1 flags) packed into words, counted:
        per element 1 or_word (``ORR w, w, b, LSL #i``: the bit into its word), after 1 int_cmp
        for a +/-1 value (its sign bit, as ``BitwiseDevice.sign`` counts); the bytes read,
        the words written."""
        words = pack_signs(x, self.wb) if signs else pack_bits(x, self.wb)
        self.counts[K.OR] += x.size
        self.counts[K.CMP] += x.size if signs else 0
        self.mem += (x.size * K.I8, words.size * self.dev.word_bytes)
        return words

    def _count_unpack(self, n: int, k: int) -> None:
        """Count unpacking ``n`` rows of ``k`` packed sign bits to int8 +/-1 (the a_l the
        update and the tie rule read, of the learning samples only): per bit 1 and_word (the
        bit, ``UBFX``) + 1 int_add (2 b - 1); each word read once, a byte written per bit."""
        self.counts[K.AND] += n * k
        self.counts[K.ADD] += n * k
        self.mem += (n * -(-k // self.wb) * self.dev.word_bytes, n * k * K.I8)

    def _scan(self, flags: np.ndarray) -> np.ndarray:
        """Indices of the set ``flags`` (trigger, touched), counted as the device's scan: per
        flag 1 int_cmp and its byte read; per set flag 1 int_add (the list's end) and its
        int32 index written."""
        idx = np.flatnonzero(flags)
        self.counts[K.CMP] += flags.size
        self.counts[K.ADD] += len(idx)
        self.mem += (flags.size * K.I8, len(idx) * K.I32)
        return idx

    def _tally(self, pred: np.ndarray, y: np.ndarray) -> int:
        """Errors among ``pred`` (the train error that sets the reinforcement rate, the
        held-out error of the gamma schedule), counted: per sample 1 int_cmp (pred != y) + 1
        int_add, reading the predicted class and the label (1 B each)."""
        self.counts[K.CMP] += len(y)
        self.counts[K.ADD] += len(y)
        self.mem[0] += 2 * len(y) * K.I8
        return int(np.count_nonzero(pred != y))

    def _check(self, x, y, what):
        """x: uint8 bits of the network's input shape; y (when given): integer labels (a
        float or list went to the numba kernels as another type)."""
        name = type(self).__name__
        x = np.asarray(x)
        if x.ndim != self.x_ndim or x.shape[-1] != self.n_inputs or x.dtype != np.uint8:
            raise ModelError(f"{name}.{what}: x is {x.dtype} {x.shape}; expected uint8 bits "
                             f"({'N, T' if self.x_ndim == 3 else 'N'}, {self.n_inputs})")
        if x.size and x.max() > 1:
            raise ModelError(f"{name}.{what}: x holds values up to {int(x.max())}; expected "
                             "bits (0 or 1)")
        if y is not None:
            y = np.asarray(y)
            if y.shape != (len(x),) or y.dtype.kind not in "iub" or (
                    y.size and not 0 <= y.min() <= y.max() < self.n_classes):
                raise ModelError(f"{name}.{what}: y is {y.dtype} {y.shape}; expected "
                                 f"({len(x)},) integer labels in 0..{self.n_classes - 1}")

    def set_error(self, err: Fraction) -> None:
        """Rescale the reinforcement probability by sqrt(last epoch's train error)."""
        p_r = frac(self.config.p_r)
        self.rein_thr = [reinforce_threshold(p_r, lay.fan_in, err) for lay in self.layers]

    # -- forward -----------------------------------------------------------------------
    def forward(self, x_bits: np.ndarray):
        """Packed forward pass. Returns (z list int32 (B, K_l), activations int8 list incl. a_0,
        activation words list incl. a_0). The input arrives as words (its packing is not
        counted, as in inference); the int8 activations are unpacked here for every sample
        but counted where training reads them, for the learning samples only."""
        dev = self.dev
        words = [pack_bits(x_bits, self.wb)]
        acts = [to_signs(x_bits)]
        zs = []
        for lay in self.layers:
            z = dev.sign_matmul(words[-1], lay.w, lay.k_in)       # (B, K_out) int32
            w_next = dev.sign(z, 0)                                # bit = z >= 0
            zs.append(z)
            words.append(w_next)
            acts.append(unpack_signs(w_next, lay.k_out))
        return zs, acts, words

    def logits(self, words_last: np.ndarray, head: int = -1) -> np.ndarray:
        return self.dev.sign_matmul(words_last, self.head_words[head], self.heads[head].shape[1])

    # -- training ----------------------------------------------------------------------
    def train_batch(self, x_bits: np.ndarray, y: np.ndarray) -> int:
        """One mini-batch of BEP (or local-rule) learning. Returns the number of errors."""
        cfg = self.config
        zs, acts, words = self.forward(x_bits)
        out = self.logits(words[-1])                                # (B, C)
        n = len(y)
        trig, pred = np.zeros(n, np.bool_), np.zeros(n, np.int64)
        k_last = self.layers[-1].k_out
        K.trigger(out, y, -(-frac(cfg.r) * k_last // 1), trig, pred, self.counts, self.mem)
        errors = self._tally(pred, y)
        deltas = self._local_deltas(zs, acts, words, y) if cfg.local else \
            self._bep_deltas(zs, acts, self._scan(trig), y)
        self._apply(deltas)
        self._flush()
        return errors

    def _layer_delta(self, li: int, z, target, inputs, gamma: int | None = None):
        """Mask (Eq. 9) and summed Hebbian step (Eq. 8) of layer li for the given samples."""
        lay = self.layers[li]
        gamma = self.gamma[li] if gamma is None else gamma
        wrong = np.empty(z.shape, np.uint8)
        K.wrong_bits(z, target, wrong, self.counts, self.mem)
        sel = np.empty((len(z), -(-lay.k_out // gamma)), np.int32)
        K.select(z, wrong, gamma, sel, self.counts, self.mem)
        delta = np.zeros((lay.k_out, lay.k_in), np.int32)
        touched = np.zeros(lay.k_out, np.uint8)
        K.accumulate(sel, target, inputs, delta, touched, self.counts, self.mem)
        return delta, touched

    def desired_activations(self, zs, acts, idx, y) -> list[np.ndarray]:
        """Top-down binary desired activations a*_l (int8 (len(idx), K_l), one per layer)
        of the samples ``idx``: a*_L = rho_c, then Eq. 7 through the gates of Eq. 5."""
        dev, nu, top = self.dev, frac(self.config.nu), len(self.layers) - 1
        targets = [self.frame[y[idx]]]                               # a*_L = rho_c, (T, K_L)
        for li in range(top, 0, -1):
            lay, z = self.layers[li], zs[li][idx]
            g = np.empty(z.shape, np.uint8)
            K.gate(z, int(nu * lay.k_in), g, self.counts, self.mem)  # Eq. 5
            # a*_L's words are P's rows, held packed for the logits; a*_l below is packed here
            a_words = self.head_words[-1][y[idx]] if li == top else self._pack(targets[0], True)
            u = dev.masked_sign_matmul(a_words, lay.wt, self._pack(g, False),
                                       k=lay.k_out)                  # (T, K_in)
            nxt = np.empty(u.shape, np.int8)
            K.desired(u, acts[li][idx], nxt, self.counts, self.mem)  # Eq. 7
            targets.insert(0, nxt)
        return targets

    def _bep_deltas(self, zs, acts, idx, y):
        """Mask and update of every layer toward the triggered samples' desired activations."""
        if len(idx) == 0:
            return [None] * len(self.layers)
        for lay in self.layers:   # a_0 .. a_{L-1} of the learning samples, from their words
            self._count_unpack(len(idx), lay.k_in)
        targets = self.desired_activations(zs, acts, idx, y)
        return [self._layer_delta(li, zs[li][idx], targets[li], acts[li][idx])
                for li in range(len(self.layers))]

    def _local_deltas(self, zs, acts, words, y):
        """Local rule: layer l's target is row y of its own head, triggered by its own margin."""
        deltas = []
        for li, lay in enumerate(self.layers):
            out = self.logits(words[li + 1], head=li)
            trig, pred = np.zeros(len(y), np.bool_), np.zeros(len(y), np.int64)
            K.trigger(out, y, -(-frac(self.config.r) * lay.k_out // 1), trig, pred, self.counts,
                      self.mem)
            idx = self._scan(trig)
            if len(idx):
                self._count_unpack(len(idx), lay.k_in)
            deltas.append(self._layer_delta(li, zs[li][idx], self.heads[li][y[idx]], acts[li][idx])
                          if len(idx) else None)
        return deltas

    def _apply(self, deltas):
        """Saturating counter update of the touched rows, repack, then reinforcement."""
        for li, (lay, d) in enumerate(zip(self.layers, deltas, strict=True)):
            if d is not None:
                delta, touched = d
                rows = self._scan(touched)
                if len(rows):
                    self.dev.counter_add(lay.h, delta[rows], H_LO, H_HI, rows=rows)
                    self._refresh(lay, rows)
            if self.rein_thr[li]:
                K.reinforce(lay.h, self.rein_thr[li], self.rng_state, H_LO, H_HI, self.counts,
                            self.mem)

    def _refresh(self, lay: Layer, rows: np.ndarray) -> None:
        """Refresh the sign bits of the touched ``rows`` (sorted, distinct) in W and W^T.

        Counted: one int_cmp per bit of each (the sign of a counter); W's rows rebuilt whole,
        1 or_word per bit (as ``BitwiseDevice.sign`` sets a bit), and in W^T each bit cleared
        and set in its word, 1 and_word (``BIC``) + 1 or_word; the rows' int16 counters read
        once; W's rows (words(K_in) each) written whole; in each of W^T's K_in rows, the words
        that hold a touched bit (column ``j // word_bits``) read and written
        (read-modify-write: the other bits of the word stay)."""
        wbytes, bits = self.dev.word_bytes, len(rows) * lay.k_in
        self.counts[K.CMP] += 2 * bits
        self.counts[K.OR] += 2 * bits
        self.counts[K.AND] += bits
        cols = len(np.unique(rows // self.wb))               # W^T words per row touched
        self.mem[0] += len(rows) * lay.k_in * K.I16 + lay.k_in * cols * wbytes
        self.mem[1] += (len(rows) * lay.w.shape[1] + lay.k_in * cols) * wbytes
        lay.repack()

    def fit(self, x, y, progress: Progress | None = None):
        """Train for ``epochs`` with a held-out split driving the gamma schedule."""
        self._check(x, y, "fit")
        if len(x) == 0:
            raise ModelError(f"{type(self).__name__}.fit: x has no samples; give at least one")
        x, y = np.asarray(x), np.asarray(y).astype(np.int64)
        cfg = self.config
        g = seeds.rng(cfg.seed, "order")   # the held-out split, then each epoch's order
        perm = g.permutation(len(x))
        n_val = int(len(x) * frac(cfg.val_fraction)) if cfg.val_fraction else 0
        val, tr = perm[:n_val], perm[n_val:]
        best, stale = None, 0
        for epoch in range(cfg.epochs):
            order = tr[g.permutation(len(tr))]
            errors = 0
            with self.dev.count("train", samples=len(order)):
                for s in range(0, len(order), cfg.batch_size):
                    b = order[s:s + cfg.batch_size]
                    errors += self.train_batch(x[b], y[b])
            self.set_error(Fraction(errors, len(order)))
            rec = {"epoch": epoch + 1, "train_error": errors / len(order),
                   "gamma": list(self.gamma)}
            if n_val:
                wrong = self._tally(self.predict(x[val], scope="validate"), y[val])
                with self.dev.count("validate"):
                    self._flush()
                val_err = wrong / n_val
                rec["val_error"] = val_err
                if best is None or val_err < best:
                    best, stale = val_err, 0
                else:
                    stale += 1
                if stale >= cfg.patience:  # gamma schedule: sparser updates late
                    self.gamma = [next_divisor(k, gm) for k, gm in zip(cfg.hidden, self.gamma,
                                                                       strict=True)]
                    stale = 0
            self.history.append(rec)
            if progress:
                progress(epoch + 1, cfg.epochs, rec)
        return self

    # -- inference ---------------------------------------------------------------------
    def predict_scores(self, x, scope: str = "infer", batch: int = 1000):
        """Logits int32 (N, C) and labels (N,) (the first maximum), counted under ``scope``."""
        self._check(x, None, "predict")
        x = np.asarray(x)
        if len(x) == 0:   # no rows: no scores (np.concatenate of nothing raised)
            return np.zeros((0, self.n_classes), np.int32), np.zeros(0, np.int64)
        scores, preds = [], []
        with self.dev.count(scope, samples=len(x)):
            for s in range(0, len(x), batch):
                out = self.logits(self.forward(x[s:s + batch])[2][-1])
                trig, pred = np.zeros(len(out), np.bool_), np.zeros(len(out), np.int64)
                K.trigger(out, np.zeros(len(out), np.int64), 0, trig, pred, self.counts,
                          self.mem)
                scores.append(out)
                preds.append(pred)
            self._flush()
        return np.concatenate(scores), np.concatenate(preds)

    def predict(self, x, scope: str = "infer", batch: int = 1000) -> np.ndarray:
        return self.predict_scores(x, scope, batch)[1]

    def evaluate(self, x, y, scope: str = "infer") -> dict[str, float]:
        self._check(x, y, "evaluate")
        return {"accuracy": float(np.mean(self.predict(x, scope) == np.asarray(y)))}

    @property
    def n_weights(self) -> int:
        return sum(lay.k_in * lay.k_out for lay in self.layers)

    # -- the trained network as plain data ---------------------------------------------
    def trained(self, golden_x: np.ndarray, golden_scores: np.ndarray,
                golden_labels: np.ndarray, profile: str) -> Trained:
        """Packed visible weights, the packed frame and golden vectors, as arrays.

        ``golden_x`` are test inputs (bits), ``golden_scores`` / ``golden_labels`` this
        model's outputs on them (from :meth:`predict_scores`); ``profile`` is the profile the
        export targets. What :func:`packed_network` and the card's ``artifact`` read.
        """
        arrays = {f"layer{i}/w": lay.w for i, lay in enumerate(self.layers)}
        arrays["frame_words"] = self.head_words[-1]
        arrays["golden_x"] = pack_bits(np.ascontiguousarray(golden_x), self.wb)
        arrays["golden_scores"] = np.asarray(golden_scores, np.int32)
        arrays["golden_labels"] = np.asarray(golden_labels, np.int64)
        meta = {"network": type(self).__name__, "recurrent": self.x_ndim == 3,
                "n_inputs": self.n_inputs, "n_classes": self.n_classes,
                "k_in": [lay.k_in for lay in self.layers],
                "k_out": [lay.k_out for lay in self.layers],
                "word_bits": self.wb, "profile": profile}
        return Trained(arrays, meta)


def packed_network(trained: Trained) -> list:
    """The trained BEP MLP as packed layers for ``BitwiseDevice.run`` and the C exporter: one
    SignLayer (threshold 0: sign(0) = +1) per hidden layer, then the frame P as scores.

    Built from :meth:`BEP.trained`'s arrays only, so a run file rebuilds it without training.
    """
    meta = trained.meta
    if meta.get("recurrent"):
        raise NotExportable(f"bep: a trained {meta.get('network', 'BEPTT')} (recurrent) has no "
                         "feed-forward packed network; export a BEP MLP trained on a static "
                         "set (digits, random-prototypes, fashion-mnist)")
    layers = [SignLayer(trained.arrays[f"layer{i}/w"], k_in, np.zeros(k_out, np.int32),
                        name=f"bep{i}")
              for i, (k_in, k_out) in enumerate(zip(meta["k_in"], meta["k_out"], strict=True))]
    layers.append(ScoresLayer(trained.arrays["frame_words"], meta["k_out"][-1],
                              np.zeros(meta["n_classes"], np.int32)))
    return layers
