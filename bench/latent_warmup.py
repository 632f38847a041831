"""How the latent model's warm-up trains (issue 33 item 2): the held-out next-observation
error over copying the last observation, along the warm-up's Adam steps, with the digest's
predictability weights (alpha 1, beta 0.1) and the card's (0.1, 0.01), on the masked
pendulum and four rooms. The evidence for the card's defaults: the weights were chosen on
this held-out prediction error, never on the entropy comparison.

    OMP_NUM_THREADS=1 nice -n 10 python bench/latent_warmup.py [--seeds 3] [--steps 300]

The warm-up as the quick preset runs it (its config, the run's seed streams, a held-out
random-policy batch). Writes ``bench/out/latent_warmup.json``; last line ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# run from a checkout without installing: this checkout, not an installed copy, is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import sim  # noqa: E402
from bench._results import store  # noqa: E402
from models.latent import envs  # noqa: E402
from models.latent import model as M  # noqa: E402
from models.latent import run as R  # noqa: E402
from models.latent.card import PRESETS, LatEntConfig  # noqa: E402
from sim import seeds  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "latent_warmup.json"
WEIGHTS = {"digest (alpha 1, beta 0.1)": (1.0, 0.1), "card (alpha 0.1, beta 0.01)": (0.1, 0.01)}


def curve(env_name: str, alpha: float, beta: float, seed: int, steps: int, every: int):
    """Held-out ratio after every ``every`` warm-up steps (the warm-up's data and the held-out
    batch drawn as ``run.warm_up`` draws them)."""
    cfg = LatEntConfig(**{**PRESETS["quick"][env_name], "alpha": alpha, "beta": beta})
    dev = sim.device("a100")
    env = envs.make(env_name, cfg.num_envs, cfg.horizon, seed=seeds.child(seed, "env"))
    gen = torch.Generator().manual_seed(seeds.child(seed, "actions"))
    model, mopt, _, _ = R.build(env, cfg, dev, seeds.child(seed, "init"))
    data = [M.rollout(env, model, None, dev, gen, seeds.child(seed, "warmup", i))
            for i in range(cfg.warmup_batches)][-cfg.model_buffer:]
    held = M.rollout(env, model, None, dev, gen, seeds.child(seed, "heldout"))
    out = []
    for _ in range(steps // every):
        M.model_update(model, mopt, data, every, alpha, beta)
        mse, copy = M.next_obs_mse(model, held)
        out.append(mse / copy)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--envs", default="masked-pendulum,four-rooms")
    args = ap.parse_args()
    torch.set_num_threads(1)   # tiny tensors: one thread (models/latent/card.py simulate)
    t0 = time.time()
    res = {"steps": list(range(args.every, args.steps + 1, args.every)), "envs": {},
           "command": f"OMP_NUM_THREADS=1 nice -n 10 python bench/latent_warmup.py --seeds "
                      f"{args.seeds} --steps {args.steps} --every {args.every}"}
    for env in args.envs.split(","):
        res["envs"][env] = {}
        for name, (a, b) in WEIGHTS.items():
            rows = np.array([curve(env, a, b, s, args.steps, args.every)
                             for s in range(args.seeds)])
            res["envs"][env][name] = {"per_seed": rows.tolist(), "min": rows.min(0).tolist(),
                                      "max": rows.max(0).tolist()}
            print(f"{env:>16s} {name:>28s}: " + " ".join(
                f"{st}:{lo:.2f}-{hi:.2f}" for st, lo, hi in
                zip(res["steps"], rows.min(0), rows.max(0), strict=True)), flush=True)
    res["wall_s"] = round(time.time() - t0, 1)
    store(OUT, res)   # never a half-written file
    print("RESULT " + json.dumps(res))


if __name__ == "__main__":
    main()
