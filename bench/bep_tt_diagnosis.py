"""What BEP-TT's recurrent map does, before its loss to QAT is called a loss (issue 33,
item 1).

For BEP-TT's binary RNN (``models/bep/model_tt.py``; K_s = 120, K_y = 64: the paper's
widths were not retrieved, these are the room's) on the three sequence sets, fresh
(initialised) and after ``--epochs`` epochs of BEP-TT (the paper's RNN values, batch 20),
over the first 200 test sequences:

1. Dynamics: the fraction of state bits that flip per step (``flip``), and, driving the
   map with the last input held for 256 further steps, how many sequences end on a fixed
   point, on a cycle of length <= 64, or on no cycle that short (``fixed / cycle /
   none``). A map that keeps flipping ~half its bits and finds no short cycle is chaotic;
   one that freezes forgets its input.
2. Error signal: BEP-TT's binary targets s*_t (``BEPTT.desired_states``) against the
   float reference, the gradient of QAT's loss (cross-entropy of ``P s_y / sqrt(K_y)``)
   back through time on the same binary forward with Larq's straight-through sign
   (``models/baselines/qat``: window |z / sqrt(K_in)| <= 1). At each distance d = T - t
   from the end: ``want`` = fraction of state bits BEP-TT asks to flip (s*_t != s_t),
   ``gate`` = fraction of z_t inside BEP's gate |z| <= nu K_in, and ``agree`` = among the
   bits BEP-TT asks to flip where the float gradient is nonzero, the fraction whose
   gradient asks for the same flip (0.5 = chance).
3. The same agreement for the BEP MLP (1000-64-64-10 on Random Prototypes, after 3
   epochs) at its first hidden layer: one step of the binary chain rule, no recurrence.
4. An ablation that tests the reading of 2: BEP-TT whose update uses only the targets of
   the last :data:`WINDOW` steps (earlier steps ask for no flip, so they neither vote in
   the shared mask nor add to the summed update; not the paper's rule), against BEP-TT,
   ``--epochs`` epochs, seeds 0-2, test accuracy.

    PYTHONPATH=. OMP_NUM_THREADS=1 nice -n 10 python bench/bep_tt_diagnosis.py [--write]

``--write`` stores the RESULT in ``bench/out/bep_tt_diagnosis.json``, from which the tables
in ``bench/RESULTS.md`` and ``models/bep/README.md`` are rendered (:func:`render`;
``tests/bench/test_bep_tuning.py`` pins them).

Works inside the models (their weights, their targets), so it builds them itself on
``sim.device("cortex-m4")`` instead of going through ``models.runner``. Last line:
``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import sim  # noqa: E402
from bench import _checks  # noqa: E402
from bench._results import store  # noqa: E402
from models.bep import data as bep_data  # noqa: E402
from models.bep.card import TT_SETTING, BEPConfig  # noqa: E402
from models.bep.model import BEP, to_signs  # noqa: E402
from models.bep.model_tt import BEPTT  # noqa: E402

RESULT_FILE = Path(__file__).resolve().parents[1] / "bench" / "out" / "bep_tt_diagnosis.json"
EPOCHS = 10
N_SEQ = 200
HOLD, MAX_CYCLE = 256, 64
DISTANCES = (0, 1, 2, 4, 8, 16, 29)
WINDOW = 4
ABLATION_SEEDS = (0, 1, 2)


class LastSteps(BEPTT):
    """BEP-TT learning from its last ``WINDOW`` steps' targets only (the ablation of 4)."""

    def desired_states(self, zs, z_y, states, y):
        targets = super().desired_states(zs, z_y, states, y)
        cut = len(targets) - WINDOW
        if cut > 0:
            # no target before the window: those steps neither vote in the mask nor add to
            # the update (kernels.time_stability, accumulate_time). It was s*_t = s_t, no
            # flip asked, which the rule that summed only wrong steps left out too.
            targets[:cut] = 0
        return targets


def signs_of(layer) -> np.ndarray:
    return layer.signs().astype(np.int32)


def dynamics(w_xs, w_ss, x_last, states) -> dict:
    """Flip rate per step of ``states`` (T + 1, N, K_s) and the attractor the map
    s <- sign(W_xs x_last + W_ss s) reaches from s_T with the last input bits ``x_last``
    (N, F) held: the final state's period (1: a fixed point; 0: no cycle <= MAX_CYCLE)."""
    flip = float((states[2:] != states[1:-1]).mean())      # steps 2..T (s_1 starts from +1)
    drive = to_signs(x_last).astype(np.int32) @ w_xs.T      # (N, K_s), held fixed
    s = states[-1].astype(np.int32)
    trail = np.empty((HOLD, *s.shape), np.int8)
    for t in range(HOLD):                                   # the recurrence: one step at a time
        s = np.where(drive + s @ w_ss.T >= 0, 1, -1)
        trail[t] = s
    # the final state's period: the smallest lag p <= MAX_CYCLE with s_{end - p} == s_end
    same = (trail[-1 - MAX_CYCLE:-1] == trail[-1]).all(axis=2)     # (MAX_CYCLE, N), lag 64..1
    period = np.where(same.any(axis=0), 1 + np.argmax(same[::-1], axis=0), 0)
    return {"flip": flip, "fixed": float(np.mean(period == 1)),
            "cycle": float(np.mean(period > 1)), "none": float(np.mean(period == 0)),
            "median_period": float(np.median(period[period > 0])) if (period > 0).any() else 0,
            "period": period}


def float_gradient(model: BEPTT, x_bits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """d loss / d s_t (T, N, K_s) of QAT's loss on this binary RNN, straight-through sign."""
    from models.baselines.qat.model import SignSTE
    w_xs, w_ss, w_sy = (torch.tensor(signs_of(lay), dtype=torch.float64, requires_grad=True)
                        for lay in model.layers)   # requires_grad: a graph to take d / d s_t
    frame = torch.tensor(model.frame, dtype=torch.float64)
    x = torch.tensor(to_signs(x_bits), dtype=torch.float64)
    k_in = w_xs.shape[1] + w_ss.shape[1]
    s = torch.ones(len(x), w_ss.shape[0], dtype=torch.float64)
    kept = []
    for t in range(x.shape[1]):
        s = SignSTE.apply((x[:, t] @ w_xs.T + s @ w_ss.T) / math.sqrt(k_in))
        s.retain_grad()
        kept.append(s)
    s_y = SignSTE.apply(s @ w_sy.T / math.sqrt(w_sy.shape[1]))
    logits = s_y @ frame.T / math.sqrt(frame.shape[1])
    torch.nn.functional.cross_entropy(logits, torch.tensor(y), reduction="sum").backward()
    return np.stack([k.grad.numpy() for k in kept])


def error_signal(model: BEPTT, x_bits, y, zs, z_y, states) -> dict:
    """BEP-TT's targets against the float gradient, by distance from the last step."""
    targets = model.desired_states(zs, z_y, states, y)      # (T, N, K_s), for states[1:]
    grad = float_gradient(model, x_bits, y)
    s = states[1:]
    want = targets != s
    floatwants = -np.sign(grad)                               # the flip the gradient asks for
    nu_k = int(math.floor(model.config.nu * model.layers[0].fan_in))
    steps = len(s)
    out = {}
    for d in (d for d in DISTANCES if d < steps):
        t = steps - 1 - d
        m = want[t] & (grad[t] != 0)
        out[str(d)] = {"want": float(want[t].mean()),
                       "gate": float((np.abs(zs[t]) <= nu_k).mean()),
                       "agree": float((floatwants[t][m] == targets[t][m]).mean()) if m.any()
                       else None, "n": int(m.sum())}
    return out


def mlp_agreement(epochs: int) -> dict:
    """BEP's MLP targets vs the STE gradient at its hidden layers (no recurrence)."""
    from models.baselines.qat.model import SignSTE
    data = bep_data.cached("random-prototypes")
    model = BEP(data.n_features, 10, BEPConfig(hidden=(64, 64), epochs=epochs),
                sim.device("cortex-m4")).fit(data.x_train, data.y_train)
    _checks.epochs_trained("BEP MLP", len(model.history), epochs)
    x, y = data.x_test[:N_SEQ], data.y_test[:N_SEQ]
    zs, acts, _ = model.forward(x)
    # the targets of every sample, triggered or not (Eq. 7 through the gates)
    targets = model.desired_activations(zs, acts, np.arange(len(y)), y)[:-1]   # hidden layers
    a = torch.tensor(to_signs(x), dtype=torch.float64)
    kept = []
    for lay in model.layers:
        w = torch.tensor(signs_of(lay), dtype=torch.float64, requires_grad=True)
        a = SignSTE.apply(a @ w.T / math.sqrt(w.shape[1]))
        a.retain_grad()
        kept.append(a)
    frame = torch.tensor(model.frame, dtype=torch.float64)
    torch.nn.functional.cross_entropy(a @ frame.T / math.sqrt(frame.shape[1]),
                                      torch.tensor(y), reduction="sum").backward()
    out = {}
    for li, tgt in enumerate(targets):          # hidden layer 1 (the first), as targets' order
        grad = kept[li].grad.numpy()
        want = tgt != acts[li + 1]
        m = want & (grad != 0)
        out[f"layer{li + 1}"] = {"want": float(want.mean()),
                                 "agree": float((-np.sign(grad)[m] == tgt[m]).mean())}
    return out


def render(res: dict) -> str:
    """The tables of bench/RESULTS.md and the room README, from a RESULT."""
    ds = [d for d in DISTANCES if d <= 8]
    lines = ["| set (T x F) | net | test % | flips / step | held input: fixed / cycle <= 64 / "
             "none | BEP-TT asks to flip (d = 0) | "
             + " | ".join(f"agree d = {d}" for d in ds) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(ds)]
    for name, r in res["sets"].items():
        for stage in ("fresh", "trained"):
            dy, err = r[stage]["dynamics"], r[stage]["error"]
            lines.append(
                f"| {name} ({r['T']} x {r['F']}) | {stage} | "
                f"{100 * r[stage]['test_accuracy']:.1f} | {dy['flip']:.3f} | "
                f"{dy['fixed']:.2f} / {dy['cycle']:.2f} / {dy['none']:.2f} | "
                f"{err['0']['want']:.2f} | "
                + " | ".join(f"{err[str(d)]['agree']:.2f}" if str(d) in err else "-"
                             for d in ds) + " |")
    mlp = res["mlp"]["layer1"]
    lines += ["", f"BEP MLP (1000-64-64-10, Random Prototypes, 3 epochs), hidden layer 1: asks "
              f"to flip {mlp['want']:.2f}, agrees with the float gradient on "
              f"{mlp['agree']:.2f}.", "",
              f"| set | BEP-TT test % | BEP-TT on its last {WINDOW} steps test % |",
              "|---|---|---|"]
    for name, row in res["ablation"].items():
        lines.append(f"| {name} | " + " | ".join(
            f"{100 * np.mean(v):.1f} ({', '.join(f'{100 * a:.1f}' for a in v)})"
            for v in row.values()) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=EPOCHS,
                    help="BEP-TT epochs of the trained net and the ablation")
    ap.add_argument("--write", action="store_true", help=f"store the RESULT in {RESULT_FILE}")
    args = ap.parse_args(argv)
    if args.write and args.epochs != EPOCHS:
        ap.error(f"--write stores the {EPOCHS}-epoch run only")
    torch.set_num_threads(1)
    res = {"epochs": args.epochs, "sets": {}}
    for name in ("synthetic-control", "cylinder-bell-funnel", "digits-rows"):
        data = bep_data.cached(name)
        x, y = data.x_test[:N_SEQ], data.y_test[:N_SEQ]
        cfg = BEPConfig(**{**TT_SETTING, "epochs": args.epochs})
        model = BEPTT(bep_data.bits_per_step(data), data.n_classes, cfg, sim.device("cortex-m4"))
        rows = {}
        for stage in ("fresh", "trained"):
            if stage == "trained":
                model.fit(data.x_train, data.y_train)
                _checks.epochs_trained(f"BEP-TT on {name}", len(model.history), args.epochs)
            (zs, z_y), (states, _), _ = model.forward(x)
            dyn = dynamics(signs_of(model.layers[0]), signs_of(model.layers[1]), x[:, -1],
                           states)
            dyn.pop("period")
            rows[stage] = {"dynamics": dyn,
                           "error": error_signal(model, x, y, zs, z_y, states),
                           "test_accuracy": model.evaluate(data.x_test, data.y_test)["accuracy"]}
        steps, bits = data.x_train.shape[1:]
        res["sets"][name] = {"T": steps, "F": bits, **rows}
        print(f"== {name} (T = {steps}, F = {bits}), K_s 120, K_y 64")
        for stage, r in rows.items():
            dy = r["dynamics"]
            print(f"  {stage:7s} acc {100 * r['test_accuracy']:5.1f}%  flip/step {dy['flip']:.3f}"
                  f"  held input: fixed {dy['fixed']:.2f} cycle<=64 {dy['cycle']:.2f} "
                  f"none {dy['none']:.2f} (median period {dy['median_period']:.0f})")
            print("          d=T-t: " + "  ".join(
                f"{d}: want {e['want']:.3f} gate {e['gate']:.3f} agree "
                + (f"{e['agree']:.2f}" if e["agree"] is not None else "  - ")
                for d, e in r["error"].items()), flush=True)
    print(f"== ablation: BEP-TT vs BEP-TT on its last {WINDOW} steps' targets, "
          f"{args.epochs} epochs, seeds {ABLATION_SEEDS} (test accuracy %)")
    res["ablation"] = {}
    for name in ("synthetic-control", "cylinder-bell-funnel", "digits-rows"):
        data = bep_data.cached(name)
        row = {}
        for label, cls in (("bep_tt", BEPTT), (f"last{WINDOW}", LastSteps)):
            row[label] = []
            for seed in ABLATION_SEEDS:
                cfg = BEPConfig(**{**TT_SETTING, "epochs": args.epochs, "seed": seed})
                m = cls(bep_data.bits_per_step(data), data.n_classes, cfg,
                        sim.device("cortex-m4")).fit(data.x_train, data.y_train)
                _checks.epochs_trained(f"{label} on {name}", len(m.history), args.epochs)
                row[label].append(m.evaluate(data.x_test, data.y_test)["accuracy"])
        res["ablation"][name] = row
        print(f"  {name:22s} " + "  ".join(
            f"{k} {100 * np.mean(v):5.1f} ({', '.join(f'{100 * a:.1f}' for a in v)})"
            for k, v in row.items()), flush=True)
    res["mlp"] = mlp_agreement(3)
    print("== BEP MLP 1000-64-64-10, Random Prototypes, 3 epochs (a*_1: one step of Eq. 7 "
          "below a*_2 = rho_c): "
          + "  ".join(f"{k}: want {v['want']:.3f} agree {v['agree']:.2f}"
                      for k, v in res["mlp"].items()))
    print(render(res))
    if args.write:
        store(RESULT_FILE, res)
    print("RESULT " + json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
