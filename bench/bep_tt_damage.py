"""Why BEP-TT struggles here: damage spreading in the binary RNN it trains.

Flip the sign of ``--flips`` random recurrent weights of a freshly initialised BEP-TT
network (the size of change one BEP-TT update makes) and measure the fraction of bits of the
final state s_T that change, per dataset, over the test set. A value near 0.5 means the
final state after a tiny weight change is as different as a random one: the recurrent map
is chaotic, so an update aimed at making s_t match s*_t at some steps moves s_T (what the
readout sees) almost at random. Compare the input-bits-per-step column: a stronger input
drive tames the dynamics only partly.

Second part: the same digits (256 thermometer bits) cut into T = 1, 2, 4, 8 steps of
256 / T bits and learnt by BEP-TT (paper RNN values, batch 20, 10 epochs): T = 1 is a
two-layer MLP, so this separates "BEP-TT's rule is broken" from "long chains fail".

    PYTHONPATH=. .venv/bin/python bench/bep_tt_damage.py [--flips 1]

This diagnostic works inside the model (it flips weights of a fresh network and trains on
digits cut into steps, which is no card dataset), so it builds BEP-TT itself on
``sim.device("cortex-m4")`` instead of going through ``models.runner``.

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import sim  # noqa: E402
from bench import _checks  # noqa: E402
from models.bep import data as bep_data  # noqa: E402
from models.bep.card import TT_SETTING, BEPConfig  # noqa: E402
from models.bep.model_tt import BEPTT  # noqa: E402


def tt_config(**kw) -> BEPConfig:
    """BEP-TT's preset values (the paper's RNN runs) with ``kw`` on top."""
    return BEPConfig(**{**TT_SETTING, "epochs": 30, **kw})


def damage(data, flips: int, seed: int = 0) -> float:
    m = BEPTT(bep_data.bits_per_step(data), data.n_classes, tt_config(seed=seed),
              sim.device("cortex-m4"))
    x = data.x_test[:200]
    before = m.forward(x)[1][0][-1]                               # s_T, int8 (N, K_s)
    ss = m.layers[1]
    rng = np.random.default_rng(seed)
    idx = rng.choice(ss.h.size, size=flips, replace=False)
    flat = ss.h.reshape(-1)
    flat[idx] = np.where(flat[idx] >= 0, -1, 0).astype(np.int16)  # flip those signs
    ss.repack()
    after = m.forward(x)[1][0][-1]
    return float((before != after).mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flips", type=int, default=1)
    args = ap.parse_args()
    res = {}
    print(f"fraction of s_T bits changed by {args.flips} flipped recurrent weight(s) of 120 x 120")
    for name, kw in (("digits-rows", {}), ("synthetic-control", {}),
                     ("synthetic-control", {"levels": 64}), ("cylinder-bell-funnel", {})):
        data = bep_data.load(name, **kw)
        vals = [damage(data, args.flips, s) for s in range(5)]
        steps, bits = data.x_train.shape[1:]
        key = f"{name}(T={steps},F={bits})"
        res[key] = float(np.mean(vals))
        print(f"  {key:38s} {np.mean(vals):.3f} +/- {np.std(vals):.3f} (5 seeds; 0.5 = random)")
    print("digits cut into T steps, BEP-TT (K_s 120, K_y 64), 10 epochs, test accuracy")
    d = bep_data.digits_bits()
    for steps in (1, 2, 4, 8):
        xt, xe = (x.reshape(len(x), steps, -1) for x in (d.x_train, d.x_test))
        cfg = tt_config(epochs=10, batch_size=20)
        m = BEPTT(xt.shape[2], 10, cfg, sim.device("cortex-m4")).fit(xt, d.y_train)
        _checks.epochs_trained(f"BEP-TT at T = {steps}", len(m.history), cfg.epochs)
        acc = m.evaluate(xe, d.y_test)["accuracy"]
        res[f"digits_T{steps}_accuracy"] = acc
        print(f"  T = {steps}: {100 * acc:.1f}%", flush=True)
    print("RESULT " + json.dumps(res))


if __name__ == "__main__":
    main()
