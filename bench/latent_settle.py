"""LatEnt settled (issue 33 item 2): with a latent model that predicts better than copying the
last observation, LatEnt against observation entropy, the state-entropy oracle, a random
policy and the no-regulariser ablation on the masked pendulum and four rooms over 5 seeds,
and the four-rooms downstream task from LatEnt pre-training against scratch.

    OMP_NUM_THREADS=1 nice -n 10 python bench/latent_settle.py --envs ENV [--seeds 5]
        [--iterations 40] [--finetune 40] [--model-steps 20]

One process per environment (they run in parallel on two cores). Verdicts: k of n seeds,
fixed before the runs (``models/latent/experiment.verdict``: holds on >= 4 of 5 seeds with a
positive mean difference; void when LatEnt's latent model does not beat copying the last
observation on 4 of 5 seeds at the end of pre-training). Writes
``bench/out/latent_settle_<env>.json``; the README / RESULTS rows are rendered from it by
``models/latent/experiment.settle_rows`` (``tests/models/latent/test_results.py`` checks the
docs show them). Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

# run from a checkout without installing: this checkout, not an installed copy, is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._results import store  # noqa: E402
from models import runner  # noqa: E402
from models.latent.experiment import SETTLE_METHODS, settle_rows, settle_summary  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
DOWNSTREAM = ("four-rooms",)   # the sparse task fine-tuned


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", default="masked-pendulum,four-rooms")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--finetune", type=int, default=40)
    # twice the card's 10 Adam steps per model update: over 40 iterations the policy moves
    # to states the warm-up never saw, and the model must keep up to stay "ready"
    ap.add_argument("--model-steps", type=int, default=20)
    ap.add_argument("--profile", default="a100")
    ap.add_argument("--out", default=str(OUT), help="folder of the results files")
    args = ap.parse_args()
    out = {}
    for env in args.envs.split(","):
        t0, c0 = time.time(), resource.getrusage(resource.RUSAGE_SELF)
        overrides = {"seeds": args.seeds, "iterations": args.iterations,
                     "methods": SETTLE_METHODS, "model_steps": args.model_steps,
                     "finetune_iterations": args.finetune if env in DOWNSTREAM else 0}
        run = runner.run("latent", profile=args.profile, dataset=env, preset="quick",
                         overrides=overrides)
        c1 = resource.getrusage(resource.RUSAGE_SELF)
        res = settle_summary(run)
        res.update(env=env, profile=args.profile, config=dict(run.config),
                   wall_s=round(time.time() - t0, 1),
                   cpu_s=round(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, 1),
                   command="OMP_NUM_THREADS=1 nice -n 10 python bench/latent_settle.py "
                           f"--envs {env} --seeds {args.seeds} --iterations "
                           f"{args.iterations} --finetune {args.finetune} --model-steps "
                           f"{args.model_steps}")
        res["config"]["methods"] = list(res["config"]["methods"])
        path = Path(args.out) / f"latent_settle_{env}.json"
        store(path, res)   # never a half-written file
        print(f"== {env}: {args.seeds} seeds x {args.iterations} iterations, "
              f"{res['wall_s']:.0f} s wall, {res['cpu_s']:.0f} s CPU -> {path} ==")
        print("\n".join(settle_rows(env, res)))
        sys.stdout.flush()
        out[env] = res
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
