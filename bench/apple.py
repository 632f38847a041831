"""APPLE-CrossQ against random glimpses (APPLE-RND) and a fixed scan (APPLE-GRID), 5 seeds.

Per dataset (``digits``: 8 x 8 digit, 3 x 3 glimpses, 6 steps; ``digits-locate``: find the
8 x 8 digit on a 20 x 20 canvas, 5 x 5 glimpses, 8 steps) the card trains the three
policies on the same seeds (``full`` preset: 150 rollouts of 32 episodes = 28.8k / 38.4k
env steps, 8 critic steps per rollout), plus the ablation whose RL losses do not train the
shared backbone. Final-step accuracy (locate: hits within 2 px, and the mean error in px)
per seed, paired differences, wins, one-sided and two-sided Wilcoxon signed-rank p and
the sign test (``models/apple/experiment.py``). ``--fashion`` adds the digest's check c:
the supervised term alone with random glimpses on Fashion-MNIST beats 1/K + 0.2.

    nice -n 5 .venv/bin/python bench/apple.py [--datasets digits,digits-locate]
        [--seeds 5] [--iterations 150] [--fashion] [--no-ablation]

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import runner  # noqa: E402
from models.apple.experiment import summarize  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="digits,digits-locate")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=150)
    ap.add_argument("--fashion", action="store_true")
    ap.add_argument("--no-ablation", action="store_true")
    args = ap.parse_args(argv)
    result = {}
    for ds in args.datasets.split(","):
        t0 = time.time()
        ov = {"count": False, "seeds": args.seeds, "iterations": args.iterations}
        run = runner.run("apple", profile="a100", dataset=ds, preset="full", overrides=ov)
        abl = None if args.no_ablation else runner.run(
            "apple", profile="a100", dataset=ds, preset="full",
            overrides={**ov, "policies": "apple", "rl_into_backbone": False})
        s = summarize(ds, run, abl)
        s["seconds"] = round(time.time() - t0, 1)
        result[ds] = s
        print(f"== {ds} ({s['task']}, {int(s['env_steps'])} env steps, {args.seeds} seeds, "
              f"{s['seconds']} s) ==")
        for p, f in s["final"].items():
            px = s.get("final_error_px", {}).get(p)
            print(f"  {p:18s} final-step accuracy {f['mean']:.3f} +- {f['std']:.3f} "
                  f"[{f['min']:.3f}, {f['max']:.3f}]" + (f", error {px:.2f} px" if px else ""))
        for name, t in s["paired"].items():
            print(f"  {name:26s} diff {t['diff']['mean']:+.3f} +- {t['diff']['std']:.3f}, "
                  f"wins {t['wins']}/{t['n']}, Wilcoxon p(>) {t['wilcoxon_p_greater']:.3f}, "
                  f"p(two-sided) {t['wilcoxon_p_two_sided']:.3f}, sign p(>) "
                  f"{t['sign_p_greater']:.3f}, holds {t['holds']}")
        for p, g in s["glance"].items():
            print(f"  glance {p:8s} " + " ".join(f"{v:.2f}" for v in g))
    if args.fashion:
        t0 = time.time()
        run = runner.run("apple", profile="a100", dataset="fashion-mnist", preset="full",
                         overrides={"count": False, "seeds": 3, "iterations": args.iterations,
                                    "policies": "random"})
        seeds = run.facts["per_seed_final"]["random"]
        result["fashion_supervised_random"] = {"final": seeds, "threshold": 0.3,
                                               "holds": min(seeds) > 0.3,
                                               "seconds": round(time.time() - t0, 1)}
        print(f"== check c: Fashion-MNIST, random glimpses, supervised term only: final-step "
              f"accuracy per seed {[round(v, 3) for v in seeds]} (> 0.3: {min(seeds) > 0.3})")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
