"""BEP-TT: Binary Error Propagation through time for binary recurrent networks.

Same paper as ``models/bep/model.py`` (arXiv:2512.04189, the section on recurrent
networks). Network, with x_t the input bits of step t and s_0 = +1 (reading: the paper does
not state s_0):

    z_t = W_xs x_t + W_ss s_{t-1},  s_t = sign(z_t)          t = 1..T
    z_y = W_sy s_T,                 s_y = sign(z_y),  logits = P s_y

Backward of a triggered sample (gates g = 1[|z| <= nu K_in] as in the MLP):

    s*_y = rho_c;  s*_T = sign(W_sy^T (g_y * s*_y));  s*_t = sign(W_ss^T (g_{t+1} * s*_{t+1}))

and the counters of W_xs, W_ss move by ``2 M sum_t s*_t (x_t | s_{t-1})^T``, W_sy by the MLP
rule. The masks of W_xs and W_ss are shared across time, so masking commutes with the time
sum and the tied weights get one update. Reading chosen for the shared mask (the paper
does not spell it out): the time-summed stability ``S_j = sum_t s*_{t,j} z_{t,j}``; a
neuron is wrong when ``S_j < 0`` and each group updates its wrong neuron of smallest
``|S_j|``. Ties of the backward sign keep the forward bit (see ``models/bep/model.py``).

The config is the card's :class:`models.bep.card.BEPConfig` with ``hidden = (K_s, K_y)``
(state width, readout width) and ``local = False``; :data:`models.bep.card.TT_SETTING`
holds the paper's RNN values (r = 0.5, p_r = 0.5, gamma_0 = 15, nu = 0.05, batch 20).
"""
from __future__ import annotations

import numpy as np

from models.bep import kernels as K
from models.bep.card import BEPConfig
from models.bep.model import BEP, Layer, frac, to_signs
from sim import seeds
from sim.bitwise.device import BitwiseDevice
from sim.bitwise.packing import pack_bits, pack_signs, unpack_signs
from sim.errors import ModelError


class BEPTT(BEP):
    """A binary RNN trained by BEP-TT on a BitwiseDevice. Inputs are (N, T, F) bits."""

    x_ndim = 3

    def __init__(self, n_inputs: int, n_classes: int, config: BEPConfig,
                 device: BitwiseDevice):
        if len(config.hidden) != 2:
            raise ModelError(f"BEPTT: hidden = {config.hidden}; expected (state width, "
                             "readout width)")
        if config.local:
            raise ModelError("BEPTT: local = True; the local rule is an MLP baseline only")
        rng = seeds.rng(config.seed, "init")
        k_s, k_y = config.hidden
        wb = device.word_bits
        xs, ss, sy = (Layer(n_inputs, k_s, wb, rng), Layer(k_s, k_s, wb, rng),
                      Layer(k_s, k_y, wb, rng))
        xs.fan_in = ss.fan_in = n_inputs + k_s  # one neuron's fan-in spans both matrices
        # gamma[0] groups the state neurons (shared by W_xs and W_ss), gamma[1] the readout
        self._init_state(n_inputs, n_classes, config, device, [xs, ss, sy], [])

    def forward(self, x_bits: np.ndarray):
        """Returns ((z (T, B, K_s) int32, z_y), (states int8 (T + 1, B, K_s) incl. s_0, s_y),
        [s_T words, s_y words]); the int8 states are counted where training reads them
        (``_deltas``), as ``BEP.forward``'s activations are."""
        dev = self.dev
        xs, ss, sy = self.layers
        n, steps, _ = x_bits.shape
        s_words = pack_signs(np.ones((n, ss.k_in), np.int8), self.wb)   # s_0 = +1
        zs = np.empty((steps, n, ss.k_out), np.int32)
        states = np.empty((steps + 1, n, ss.k_out), np.int8)
        states[0] = 1
        for t in range(steps):
            xw = pack_bits(np.ascontiguousarray(x_bits[:, t]), self.wb)
            zs[t] = dev.add_int(dev.sign_matmul(xw, xs.w, xs.k_in),
                                dev.sign_matmul(s_words, ss.w, ss.k_in))   # (B, K_s)
            s_words = dev.sign(zs[t], 0)
            states[t + 1] = unpack_signs(s_words, ss.k_out)
        z_y = dev.sign_matmul(s_words, sy.w, sy.k_in)                      # (B, K_y)
        y_words = dev.sign(z_y, 0)
        return (zs, z_y), (states, unpack_signs(y_words, sy.k_out)), [s_words, y_words]

    def train_batch(self, x_bits: np.ndarray, y: np.ndarray) -> int:
        cfg, sy = self.config, self.layers[2]
        (zs, z_y), (states, _), words = self.forward(x_bits)
        out = self.logits(words[-1])
        n = len(y)
        trig, pred = np.zeros(n, np.bool_), np.zeros(n, np.int64)
        K.trigger(out, y, -(-frac(cfg.r) * sy.k_out // 1), trig, pred, self.counts, self.mem)
        errors = self._tally(pred, y)
        idx = self._scan(trig)
        if len(idx):
            self._apply(self._deltas(x_bits[idx], zs[:, idx], z_y[idx], states[:, idx], y[idx]))
        else:
            self._apply([None, None, None])
        self._flush()
        return errors

    def desired_states(self, zs, z_y, states, y) -> np.ndarray:
        """BEP-TT's binary targets s*_t (T, n, K_s) int8, ``targets[t]`` for ``states[t + 1]``
        (the backward above, through the gates of z_y and z_{t+1}); also what
        ``bench/bep_tt_diagnosis.py`` compares with a float gradient."""
        dev, nu = self.dev, frac(self.config.nu)
        xs, ss, sy = self.layers
        steps, n, k_s = zs.shape
        targets = np.empty((steps, n, k_s), np.int8)
        g = np.empty(z_y.shape, np.uint8)
        K.gate(z_y, int(nu * sy.k_in), g, self.counts, self.mem)
        # s*_y = rho_c: P's rows, held packed for the logits
        u = dev.masked_sign_matmul(self.head_words[-1][y], sy.wt, self._pack(g, False),
                                   k=sy.k_out)                               # (n, K_s)
        K.desired(u, np.ascontiguousarray(states[steps]), targets[steps - 1], self.counts,
                  self.mem)
        g = np.empty((n, k_s), np.uint8)
        for t in range(steps - 2, -1, -1):  # s*_t from s*_{t+1} through the gate of z_{t+1}
            K.gate(zs[t + 1], int(nu * xs.fan_in), g, self.counts, self.mem)
            u = dev.masked_sign_matmul(self._pack(targets[t + 1], True), ss.wt,
                                       self._pack(g, False), k=ss.k_out)
            K.desired(u, np.ascontiguousarray(states[t + 1]), targets[t], self.counts, self.mem)
        return targets

    def _deltas(self, x_bits, zs, z_y, states, y):
        xs, ss, _ = self.layers
        steps, n, k_s = zs.shape
        # int8 +/-1 of the learning samples' x_t and s_1 .. s_T, unpacked from their words
        # (s_0 = +1 is a constant)
        self._count_unpack(steps * n, xs.k_in)
        self._count_unpack(steps * n, ss.k_in)
        d_sy = self._layer_delta(2, z_y, self.frame[y], np.ascontiguousarray(states[-1]),
                                 gamma=self.gamma[1])
        targets = self.desired_states(zs, z_y, states, y)
        stab = np.empty((n, k_s), np.int32)
        wrong = np.empty((n, k_s), np.uint8)
        K.time_stability(zs, targets, stab, wrong, self.counts, self.mem)
        sel = np.empty((n, -(-k_s // self.gamma[0])), np.int32)
        K.select(stab, wrong, self.gamma[0], sel, self.counts, self.mem)
        out = []
        for lay, inputs in ((xs, to_signs(np.ascontiguousarray(x_bits.transpose(1, 0, 2)))),
                            (ss, states[:-1])):                             # (T, n, K_in)
            delta = np.zeros((lay.k_out, lay.k_in), np.int32)
            touched = np.zeros(lay.k_out, np.uint8)
            K.accumulate_time(sel, targets, np.ascontiguousarray(inputs), delta, touched,
                              self.counts, self.mem)
            out.append((delta, touched))
        return out + [d_sy]
