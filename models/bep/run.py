"""BEP's run: the network the data set calls for, trained and tested on a BitwiseDevice.

``model.py`` holds BEP (the MLP), ``model_tt.py`` BEP-TT (the RNN); this module builds the
one the data set's input shape calls for ((N, F) or (N, T, F)), checks that its training
state fits the device's writable memory, trains and tests it, and packs what the card
returns (model.py is long already, so the run sits beside it).
"""
from __future__ import annotations

import numpy as np

from models.bep import data as bits
from models.bep.card import N_GOLDEN, BEPConfig, state_bytes
from models.bep.model import BEP
from models.bep.model_tt import BEPTT
from models.registry import Outcome
from sim.bitwise.device import BitwiseDevice, profile_ref
from sim.traces import curve


def build(data, cfg: BEPConfig, device: BitwiseDevice):
    """BEP for a static set, BEP-TT for a sequence set (inputs (N, T, F))."""
    if bits.is_sequence(data):
        return BEPTT(bits.bits_per_step(data), data.n_classes, cfg, device)
    return BEP(bits.bits_per_step(data), data.n_classes, cfg, device)


def simulate(cfg: BEPConfig, device: BitwiseDevice, data, progress=None) -> Outcome:
    """The card's run: train BEP (or BEP-TT) on ``data`` on ``device``, test it, and return
    the metrics, the training-error curve and the trained state with ``N_GOLDEN`` golden
    test samples for the C export."""
    model = build(data, cfg, device)
    n_w = model.n_weights
    # the training state must fit the device's writable memory (a capacity error otherwise;
    # runner.prepare refused it already, from the config and the data set's shape: this is
    # the check on the network really built, with the same formula)
    need = state_bytes([(lay.k_in, lay.k_out) for lay in model.layers], device.word_bits)
    device.reserve(need, scope="train")
    model.fit(data.x_train, data.y_train, progress=progress)
    scores, pred = model.predict_scores(data.x_test, scope="infer")
    metrics = {"test_accuracy": float(np.mean(pred == data.y_test)),
               "train_error": model.history[-1]["train_error"],
               "weights": float(n_w),
               "state_bits_per_weight": 8 * need / n_w,   # 18 + the rows' word padding
               "state_bytes": float(need)}
    traces = {"train_error": curve([h["train_error"] for h in model.history])}
    facts = {"network": type(model).__name__, "n_inputs": model.n_inputs,
             "n_classes": data.n_classes, "word_bits": device.word_bits,
             "data_source": data.source}
    k = min(N_GOLDEN, len(data.x_test))
    trained = model.trained(data.x_test[:k], scores[:k], pred[:k],
                            profile_ref(device.profile))
    return Outcome(metrics, traces, trained, facts)
