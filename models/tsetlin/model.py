"""Tsetlin machines on the bitwise engine: bit-plane automata, Type I/II feedback, absorbing states.

Papers
------
- Granmo, "The Tsetlin Machine -- A Game Theoretic Bandit Driven Approach to Optimal Pattern
  Recognition with Propositional Logic", arXiv:1804.01508 (Algorithm 1, Tables 2-3: Type I
  and Type II feedback; the multiclass machine of Sec. 5).
- Jiao, Zhang, Granmo et al., "Convergence Analysis of Tsetlin Machines under Noise-Free and
  Noisy Training Conditions: from 2 Bits to k Bits", ICLR 2026 (OpenReview feOrSQdD9Y):
  AND converges for any T (Thm 1); OR needs T <= floor(m/2) (Thm 2).

What is implemented (the papers above: Granmo's Algorithm 1 and Tables 2-3):

- literals ``l = [x_1..x_o, NOT x_1..NOT x_o]`` packed in the device's words;
- per class ``m`` clauses, polarity +1 for even and -1 for odd clauses (multiclass), or all
  +1 (``polarity="positive"``, the single-output setting of the convergence paper);
- 2N-state automata, N = 2^(state_bits - 1), stored as ``state_bits`` bit-planes whose top
  plane is the include mask; all start at N - 1 (exclude, one step from include: the
  bit-plane code's state 127 of 0..255);
- clause output = AND of the included literals (empty clause: 1 in training, 0 at inference);
- vote v = sum of the clause polarities of firing clauses, clipped to [-T, T] for feedback;
  each clause is selected with probability (T - v)/(2T) (y = 1) or (T + v)/(2T) (y = 0);
- Type I (y agrees with the clause polarity): fired clause -> literals that are 1 step
  towards include with probability (s-1)/s (1 with ``boost_true_positive``), literals that
  are 0 towards exclude with 1/s; silent clause -> every automaton towards exclude with 1/s;
- Type II (the other polarity): fired clause -> excluded literals that are 0 step towards include;
- multiclass: per sample the true class is updated with y = 1 and one uniformly drawn other
  class with y = 0.

Readings chosen where sources differ or are unsure:

- prediction is argmax of the *unclipped* class sums (the ClauseLayer that the C export
  runs); clipping only shapes feedback. pyTsetlinMachine clips at prediction too, which
  only creates ties; it changes no decision when one class sum exceeds T.
- the Type I 1/s mask sets every literal independently (TsetlinMachineC), not the
  normal-approximated count of the fast bit-plane code. The ledger counts the device's
  one draw per literal; the host samples the same law bit-parallel (64 literals per
  random word and digit of 1/s, ``kernels._mask_rows``), so the masks match in
  distribution, not stream for stream. Likewise the clause selection: the device draws
  once per clause (counted), the host draws the selected set as one mask over the clauses.
- absorbing state (:meth:`TsetlinMachine.is_absorbing`): clause outputs, votes and selection
  probabilities depend only on the include/exclude actions, so an action configuration
  is absorbing iff no sample with positive probability can push any automaton towards the
  other action; if one can, repeating that sample N times (positive probability) flips it.
  This is exact for the finite-state machine, not a window heuristic.
"""
from __future__ import annotations

import time

import numpy as np

from hw_profiles.ops import OP_NAMES
from models.registry import Outcome, Trained
from models.shared.checks import check_xy
from models.tsetlin import kernels as K
from models.tsetlin.card import N_GOLDEN, TsetlinConfig
from models.tsetlin.data import BOOLEANISE
from sim import seeds
from sim.bitwise.device import BitwiseDevice, profile_ref
from sim.bitwise.network import ClauseLayer, network_bytes
from sim.bitwise.packing import n_words, pack_bits, unpack_bits
from sim.errors import ModelError


def _bits(x, n_features: int, what: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[1] != n_features:
        raise ModelError(f"{what}: x has shape {x.shape}; expected (N, {n_features}) booleans")
    if x.size and (x.dtype.kind not in "biu" or x.min() < 0 or x.max() > 1):
        raise ModelError(f"{what}: x must hold 0/1 values (booleanise with "
                         "models.shared.encoders.booleanise)")
    return x.astype(np.uint8)


class TsetlinMachine:
    """Multiclass (or single-output, ``n_classes=1``) Tsetlin machine on a BitwiseDevice.

    Parameters
    ----------
    n_features : int -- o boolean inputs (2o literals)
    n_classes : int -- 1 = one output trained with y in {0, 1} (convergence setting)
    config : TsetlinConfig
    device : BitwiseDevice -- its word width packs literals and planes; its ledger counts
    """

    def __init__(self, n_features: int, n_classes: int, config: TsetlinConfig,
                 device: BitwiseDevice):
        if n_features < 1 or n_classes < 1:
            raise ModelError(f"TsetlinMachine: n_features = {n_features}, n_classes = "
                             f"{n_classes}; both must be >= 1")
        self.o, self.n_classes, self.config, self.device = int(n_features), int(n_classes), \
            config, device
        wb = device.word_bits
        self.n_lit = 2 * self.o
        self.n_w = n_words(self.n_lit, wb)
        b = int(config.state_bits)
        dt = device.word_dtype
        self.valid = pack_bits(np.ones((1, self.n_lit), np.uint8), wb)[0]          # (W,)
        # every automaton at N - 1: all planes but the top one are ones over the literals
        self.state = np.zeros((self.n_classes, config.clauses, b, self.n_w), dt)   # (C, m, B, W)
        self.state[:, :, :b - 1] = self.valid
        self._pdig = K.probability_digits(1.0 / config.s)
        pol = np.ones(config.clauses, np.int64)
        if config.polarity == "alternate":
            pol[1::2] = -1
        self.sign = pol
        # [xorshift state of the counted draws, splitmix state of the host's mask sampler]
        self._rng = seeds.rng(config.seed, "draws").integers(1, 2**63, size=2, dtype=np.uint64)
        self._order_rng = seeds.rng(config.seed, "order")   # epoch orders, absorption labels
        self.history: list[dict] = []
        self.updates = 0

    # -- literals and counting --------------------------------------------------------
    def literals(self, x) -> np.ndarray:
        """Packed literal words [N, W] of booleans x [N, o]: [x, NOT x] (counted per sample)."""
        x = _bits(x, self.o, "TsetlinMachine.literals")
        lit = pack_bits(np.concatenate([x, 1 - x], axis=1), self.device.word_bits)
        counts = np.zeros(len(OP_NAMES), np.int64)
        # NOT of the packed inputs (one not_word per input word) + an OR to splice halves
        counts[K.OP_CODES["not_word"]] = len(x) * n_words(self.o, self.device.word_bits)
        counts[K.OR] = len(x) * self.n_w
        self._flush(counts, np.array([len(x) * n_words(self.o, self.device.word_bits),
                                      len(x) * self.n_w]))
        return lit

    def _flush(self, counts, mem_words):
        dev = self.device
        dev.ledger.flush(counts)
        dev.ledger.add_bytes(dev.memory_level, read=int(mem_words[0]) * dev.word_bytes,
                             write=int(mem_words[1]) * dev.word_bytes)

    # -- training ---------------------------------------------------------------------
    def fit(self, x, y, epochs: int | None = None, progress=None, scope: str = "train"):
        """Train for ``epochs`` passes (config.epochs by default) over booleans x [N, o]."""
        x = _bits(x, self.o, "TsetlinMachine.fit")   # x first: a 1-D x is x's problem
        # integer labels only: 0.7 was truncated to class 0 without a word
        check_xy(x, y, self.o, max(self.n_classes, 2), "TsetlinMachine.fit")
        y = np.asarray(y).astype(np.int64)
        if epochs is not None and (isinstance(epochs, bool) or not isinstance(
                epochs, (int, np.integer)) or epochs < 0):
            raise ModelError(f"TsetlinMachine.fit: epochs = {epochs!r}; expected an integer "
                             ">= 0")
        epochs = self.config.epochs if epochs is None else int(epochs)
        with self.device.count(scope):
            lit = self.literals(x)
        for e in range(epochs):
            self.train_steps(lit, y, self._order_rng.permutation(len(y)), scope)
            if progress is not None:
                progress(e + 1, epochs, {"epoch": e + 1})
        return self

    def train_steps(self, lit, y, order, scope: str = "train"):
        """Updates for samples ``order`` of packed literals ``lit`` (one kernel call)."""
        cfg = self.config
        counts = np.zeros(len(OP_NAMES), np.int64)
        mem = np.zeros(2, np.int64)
        fn = K.train_single if self.n_classes == 1 else K.train_multiclass
        fn(lit, np.asarray(y, np.int64), np.asarray(order, np.int64), self.state, self.valid,
           self.n_lit, self.sign, int(cfg.T), self._pdig, bool(cfg.s == 1.0),
           bool(cfg.boost_true_positive), self._rng, counts, mem)
        with self.device.count(scope, samples=len(order)):
            self._flush(counts, mem)
        self.updates += len(order)

    # -- state --------------------------------------------------------------------------
    def states(self) -> np.ndarray:
        """Integer automaton states [C, m, 2o] in 0 .. 2^B - 1 (include iff >= 2^(B-1))."""
        b = self.config.state_bits
        out = np.zeros((self.n_classes, self.config.clauses, self.n_lit), np.int64)
        for p in range(b):
            plane = unpack_bits(self.state[:, :, p].reshape(-1, self.n_w), self.n_lit)
            out += plane.reshape(out.shape).astype(np.int64) << p
        return out

    def include(self) -> np.ndarray:
        """Include actions [C, m, 2o] (bool): the top plane."""
        top = self.state[:, :, -1].reshape(-1, self.n_w)
        return unpack_bits(top, self.n_lit).reshape(self.n_classes, self.config.clauses,
                                                    self.n_lit).astype(bool)

    def clause_layer(self) -> ClauseLayer:
        """The trained machine as the engine's ClauseLayer (inference and C export)."""
        return clause_layer(self.include(), self.sign, self.device.word_bits)

    def trained(self, golden_x, golden_scores, golden_labels, profile: str) -> Trained:
        """The include actions, clause polarities and golden vectors, as arrays.

        ``golden_x`` are test booleans, ``golden_scores`` / ``golden_labels`` this machine's
        outputs on them; ``profile`` is the profile the export targets. What
        :func:`clause_layer` rebuilds the ClauseLayer from, with no training.
        """
        if self.n_classes == 1:   # its label is v >= T; the exported ClauseLayer argmaxes
            raise ModelError("TsetlinMachine.trained: a single-output machine (n_classes = 1) "
                             "decides by the sign of its sum, which the exported ClauseLayer "
                             "(argmax over classes) does not compute; export a multiclass "
                             "machine (n_classes >= 2)")
        x = _bits(golden_x, self.o, "TsetlinMachine.trained")
        arrays = {"include": self.include().astype(np.uint8),          # (C, m, 2o)
                  "polarity": self.sign.astype(np.int64),              # (m,)
                  "golden_x": pack_bits(x, self.device.word_bits),
                  "golden_scores": np.asarray(golden_scores, np.int32),
                  "golden_labels": np.asarray(golden_labels, np.int64)}
        meta = {"n_features": self.o, "n_classes": self.n_classes,
                "clauses": int(self.config.clauses), "state_bits": int(self.config.state_bits),
                "word_bits": int(self.device.word_bits), "profile": profile}
        return Trained(arrays, meta)

    # -- inference ---------------------------------------------------------------------
    def scores(self, x, scope: str = "infer", layer: ClauseLayer | None = None) -> np.ndarray:
        """Class sums [N, C] (unclipped; empty clauses silent) run on the device; ``layer``
        is :meth:`clause_layer` built beforehand (rebuilt from the state when None)."""
        x = _bits(x, self.o, "TsetlinMachine.scores")
        layer = self.clause_layer() if layer is None else layer
        out = self.device.run([layer], pack_bits(x, self.device.word_bits), scope)
        return out.scores

    def labels(self, scores: np.ndarray) -> np.ndarray:
        """Predicted labels of class sums: argmax, or for a single output ``v >= T`` (the
        convergence paper's "output 1 iff v >= Th" with its OR construction's Th = T: an
        absorbed machine has v >= T on the patterns of y = 1 and v = 0 on the others).
        It was ``v >= 0``, true for every input: positive clauses vote 0 or more."""
        return (scores[:, 0] >= int(self.config.T)).astype(np.int64) if self.n_classes == 1 \
            else np.argmax(scores, 1)

    def predict(self, x, scope: str = "infer", layer: ClauseLayer | None = None) -> np.ndarray:
        return self.labels(self.scores(x, scope, layer))

    def evaluate(self, x, y, scope: str = "infer") -> dict:
        return {"accuracy": float(np.mean(self.predict(x, scope) == np.asarray(y)))}

    # -- convergence -------------------------------------------------------------------
    def is_absorbing(self, patterns, labels) -> bool:
        """Exactly: can no automaton of class 0 ever change its action again?

        ``patterns`` [P, o] are the inputs drawn with positive probability, ``labels`` [P]
        their label (or -1 when both labels occur: label noise). Single-output machines only.
        """
        if self.n_classes != 1:
            raise ModelError("is_absorbing: defined here for the single-output machine "
                             "(n_classes = 1) of the convergence paper")
        cfg = self.config
        x = _bits(patterns, self.o, "is_absorbing")
        inc = self.include()[0]                                        # (m, 2o)
        lit = np.concatenate([x, 1 - x], axis=1).astype(bool)          # (P, 2o)
        fired = ~np.any(inc[None] & ~lit[:, None], axis=2)             # (P, m), empty fires
        v = np.clip((fired * self.sign).sum(1), -cfg.T, cfg.T)         # (P,)
        inc_up = cfg.boost_true_positive or cfg.s > 1
        for p in range(len(x)):
            for yv in ((0, 1) if labels[p] < 0 else (int(labels[p]),)):
                if (yv == 1 and v[p] >= cfg.T) or (yv == 0 and v[p] <= -cfg.T):
                    continue                                           # never selected
                type1 = (self.sign > 0) == (yv == 1)
                for j in range(cfg.clauses):
                    if type1[j]:
                        if not fired[p, j] and inc[j].any():
                            return False                               # includes decay (1/s)
                        if fired[p, j] and inc_up and np.any(~inc[j] & lit[p]):
                            return False                               # excluded true literal rises
                    elif fired[p, j] and np.any(~inc[j] & ~lit[p]):
                        return False                                   # Type II includes a 0
        return True

    def run_until_absorbed(self, patterns, labels, max_updates: int, check_every: int = 200,
                           noise: float = 0.0) -> int | None:
        """Train on uniform i.i.d. draws of ``patterns`` (each label flipped with probability
        ``noise``) until :meth:`is_absorbing`; returns the updates needed (a multiple of
        ``check_every``), or None when not absorbed within ``max_updates``."""
        x = _bits(patterns, self.o, "run_until_absorbed")
        lab = np.asarray(labels, np.int64)
        if not 0.0 <= noise < 1.0:
            raise ModelError(f"run_until_absorbed: noise = {noise}; a probability in [0, 1)")
        seen = np.full_like(lab, -1) if noise > 0 else lab   # both labels occur under noise
        with self.device.count("train"):
            lit = self.literals(x)
        rs = self._order_rng
        done = 0
        while done < max_updates:
            if self.is_absorbing(x, seen):
                return done
            k = min(check_every, max_updates - done)
            idx = rs.integers(0, len(x), k)
            y = np.where(rs.random(k) < noise, 1 - lab[idx], lab[idx])
            self.train_steps(lit[idx], y, np.arange(k))
            done += k
        return done if self.is_absorbing(x, seen) else None


def clause_layer(include: np.ndarray, polarity: np.ndarray, word_bits: int) -> ClauseLayer:
    """ClauseLayer of include actions [C, m, 2o] (literals ``[x, NOT x]``) and the clause
    polarities [m] (+1 / -1), packed in ``word_bits`` words: what the machine votes with."""
    include, polarity = np.asarray(include), np.asarray(polarity)
    if include.ndim != 3 or include.shape[2] % 2:
        raise ModelError(f"tsetlin clause_layer: include has shape {include.shape}; expected "
                         "(classes, clauses, 2 x features) include actions")
    if include.dtype.kind not in "biuf" or not np.isin(include, (0, 1)).all():
        raise ModelError("tsetlin clause_layer: include holds values other than 0 and 1; "
                         "each automaton's action is include (1) or exclude (0)")
    if polarity.shape != include.shape[1:2] or not np.isin(polarity, (-1, 1)).all():
        raise ModelError(f"tsetlin clause_layer: polarity must be {include.shape[1]} values "
                         "of +1 or -1, one per clause")
    n_classes, m, n_lit = include.shape
    o = n_lit // 2
    inc = include.astype(bool).reshape(-1, n_lit)                       # (C*m, 2o)
    cls = np.repeat(np.arange(n_classes), m)
    return ClauseLayer(pack_bits(inc[:, :o], word_bits), pack_bits(inc[:, o:], word_bits), o,
                       cls, np.tile(np.asarray(polarity, np.int64), n_classes), n_classes,
                       name="tsetlin")


# -- the card's run ---------------------------------------------------------------------

def simulate(cfg: TsetlinConfig, device: BitwiseDevice, data, progress=None) -> Outcome:
    """The card's run: train a Tsetlin machine on ``data`` on ``device``, test it, and
    return the metrics (accuracy, energy per training sample and per inference priced on
    the device's profile, state and model bytes), the host's fit and prediction times (as
    facts) and the trained state with ``N_GOLDEN`` golden test samples."""
    tm = TsetlinMachine(data.n_features, data.n_classes, cfg, device)
    # every update writes the automata's bit-planes: the training state must fit the
    # device's writable memory (a capacity error otherwise, as BEP's; runner.prepare
    # refused it already, from the config and the data set's shape: this is the check on
    # the machine really built)
    device.reserve(tm.state.nbytes, scope="train")
    epochs_run = []

    def counted(done, total, info):         # the epochs fit really ran (bench/tsetlin.py)
        epochs_run.append(done)
        if progress is not None:
            progress(done, total, info)
    t0, c0 = time.perf_counter(), time.process_time()
    tm.fit(data.x_train, data.y_train, progress=counted)
    layer = tm.clause_layer()               # built once, outside the prediction times
    t1, c1 = time.perf_counter(), time.process_time()
    scores = tm.scores(data.x_test, scope="infer", layer=layer)
    t2, c2 = time.perf_counter(), time.process_time()
    pred = tm.labels(scores)
    report = device.ledger.price(device.profile).per_sample_j()
    inc = tm.include()
    metrics = {"test_accuracy": float(np.mean(pred == data.y_test)),
               "energy_per_train_sample_j": report.get("train", float("nan")),
               "energy_per_inference_j": report.get("infer", float("nan")),
               "included_literals_per_clause": float(inc.sum(-1).mean()),
               "state_bytes": float(tm.state.nbytes),
               # what the exported model stores (its words, classes and weights): the
               # run's NeuroBench Footprint and the C export's .rodata
               "model_bytes": float(network_bytes([layer]))}
    # wall and CPU times of this host (not of the device); bench/tsetlin.py compares CPU
    facts = {"n_features": data.n_features, "n_classes": data.n_classes,
             "word_bits": device.word_bits,
             "booleanise": str(BOOLEANISE.get(data.name, "none")),
             "data_source": data.source, "host_fit_s": t1 - t0, "host_infer_s": t2 - t1,
             "host_fit_cpu_s": c1 - c0, "host_infer_cpu_s": c2 - c1,
             "epochs_trained": len(epochs_run)}
    k = min(N_GOLDEN, len(data.x_test))
    return Outcome(metrics, {}, tm.trained(data.x_test[:k], scores[:k], pred[:k],
                                           profile_ref(device.profile)), facts)
