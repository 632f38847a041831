"""LatEnt on the PROBE-style environments: true-state entropy and coverage of LatEnt,
observation-entropy maximisation and a random policy over seeds, the noise trap, the
no-regulariser ablation, and a sparse downstream task from LatEnt pre-training vs scratch.

Paper: Ashlag et al., "Probing in the Dark: State Entropy Maximization for POMDPs", ICLR
2026. Every run goes through the runner (``runner.run("latent", dataset=ENV, ...)``); each
claim is a paired comparison over the same seeds, one-sided Wilcoxon signed-rank
(``scipy.stats.wilcoxon``; with 5 seeds p < 0.05 needs all five differences positive),
the sign test beside it. Spreads: standard deviation and min..max over seeds.

    nice -n 5 OMP_NUM_THREADS=1 .venv/bin/python bench/latent.py [--seeds 5]
        [--iterations 20] [--finetune 20] [--warmup-steps 200]
        [--envs masked-pendulum,noisy-puck,four-rooms]

Last line: ``RESULT {json}``.
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

from models import runner  # noqa: E402
from models.latent.experiment import summarise  # noqa: E402

METHODS = {"masked-pendulum": ("latent", "observation", "random"),
           "noisy-puck": ("latent", "observation", "random", "latent_noreg"),
           "four-rooms": ("latent", "observation", "random")}
DOWNSTREAM = ("four-rooms",)   # the sparse task fine-tuned (when --finetune)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--finetune", type=int, default=20)
    ap.add_argument("--envs", default="masked-pendulum,noisy-puck,four-rooms")
    ap.add_argument("--warmup-steps", type=int, default=200)   # the card's default
    ap.add_argument("--profile", default="a100")
    args = ap.parse_args()
    runs, out = {}, {"seeds": args.seeds, "iterations": args.iterations,
                     "finetune_iterations": args.finetune, "envs": {}}
    for env in args.envs.split(","):
        t0 = time.time()
        overrides = {"seeds": args.seeds, "iterations": args.iterations,
                     "methods": METHODS[env], "warmup_steps": args.warmup_steps,
                     "finetune_iterations": args.finetune if env in DOWNSTREAM else 0}
        run = runner.run("latent", profile=args.profile, dataset=env, preset="quick",
                         overrides=overrides)
        runs[env] = run
        wall = time.time() - t0
        print(f"== {env}: {args.seeds} seeds x {args.iterations} iterations of "
              f"{run.config['num_envs']} x {run.config['horizon']} steps ({wall:.0f} s) ==")
        res = {"wall_s": round(wall, 1)}
        for key in ("state_entropy", "coverage", "observed_puck_entropy", "puck_distance",
                    "puck_travel"):
            tr = run.traces.get(f"final_{key}_per_seed")
            if tr is None:
                continue
            for i, m in enumerate(tr.columns[1:]):
                v = tr.data[:, i + 1]
                res[f"{m}_{key}"] = {"mean": float(v.mean()), "std": float(v.std()),
                                     "min": float(v.min()), "max": float(v.max())}
                print(f"  {m:>13s} {key:>22s}: {v.mean():7.3f} +- {v.std():.3f} "
                      f"[{v.min():.3f}, {v.max():.3f}]")
        if "model_mse_ratio" in run.metrics:
            res["model_mse_ratio"] = run.metrics["model_mse_ratio"]
            print(f"  latent model next-obs MSE / copy-last MSE after warm-up: "
                  f"{run.metrics['model_mse_ratio']:.3f}")
        ft = run.traces.get("finetune_success_per_seed")
        if ft is not None:
            for j, tag in enumerate(("pretrained", "scratch")):
                v = ft.data[:, j + 1]
                res[f"finetune_success_{tag}"] = {"mean": float(v.mean()),
                                                  "std": float(v.std()),
                                                  "per_seed": v.tolist()}
                print(f"  fine-tune success ({tag:>10s}, last third): {v.mean():.3f} +- "
                      f"{v.std():.3f} per seed {np.round(v, 3).tolist()}")
        out["envs"][env] = res
        out["tests"] = summarise(runs)
        for name, t in out["tests"].items():
            if isinstance(t, dict) and name.startswith(env):
                print(f"  {name}: wins {t['wins']}/{t['n']}, mean diff {t['mean_diff']:+.3f} "
                      f"[{t['min_diff']:+.3f}, {t['max_diff']:+.3f}], Wilcoxon p "
                      f"{t['wilcoxon_p']:.3f}, sign p {t['sign_p']:.3f} -> "
                      f"{'holds' if t['holds'] else 'does not hold'}")
        sys.stdout.flush()
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
