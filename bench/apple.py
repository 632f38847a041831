"""APPLE-CrossQ against random glimpses (APPLE-RND), with the readiness rule, over seeds.

Per dataset (``digits``: 8 x 8 digit, 3 x 3 glimpses, 6 steps; ``digits-locate``: find the
8 x 8 digit on a 20 x 20 canvas, 5 x 5 glimpses, 8 steps) the card trains, on the same
seeds (``full`` preset: 150 rollouts of 32 episodes = 28.8k / 38.4k env steps, 8 critic
steps per rollout): APPLE-RND, optionally APPLE-GRID (``--scan``), APPLE with the card's
gradient routing and APPLE with each ``--readings`` routing (``NAME=critic_backbone_lr,
sac_backbone_grad``; default: the paper's, both 1). Reported per policy:
final-step accuracy (locate: hits within 2 px and the mean error in px) per seed; per APPLE
reading its predictor on the random-glimpse test episodes, the readiness rule and the
verdict (``models/apple/experiment.py``), the gradient norms each loss sends into the
backbone; paired differences, wins, Wilcoxon signed-rank and sign tests. Each (policy,
reading, seed) is one job; ``--workers`` jobs run side by side (one torch thread each).
``--fashion`` adds the digest's check c: the supervised term alone with random glimpses on
Fashion-MNIST beats 1/K + 0.2.

    nice -n 10 .venv/bin/python bench/apple.py [--datasets digits,digits-locate]
        [--seeds 3] [--iterations 150] [--scan] [--workers 2] [--fashion]
        [--readings "paper=1,1;tenth=0.1,0.1"] [--out bench/out/apple.json]

Writes ``--out`` (the figures of the README's results table) and ends with
``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import types
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench._results import store  # noqa: E402
from models.apple.experiment import summarize  # noqa: E402
from sim.traces import Trace  # noqa: E402


def job(spec):
    """One runner run of one seed; back only what ``summarize`` reads (no ledger)."""
    from models import runner
    dataset, seed, overrides = spec
    t0 = time.time()
    r = runner.run("apple", profile="a100", dataset=dataset, preset="full", seed=seed,
                   overrides={**overrides, "seeds": 1})
    return types.SimpleNamespace(facts=r.facts, metrics=r.metrics, traces=r.traces,
                                 seconds=round(time.time() - t0, 1))


def merge(per_seed: list) -> types.SimpleNamespace:
    """One-seed runs of the same policy and settings as one run over their seeds, as
    ``summarize`` reads it: per-seed lists joined in seed order, per-step glance curves and
    the other metrics averaged over the seeds (the card's own mean over seeds)."""
    first = per_seed[0]
    facts = dict(first.facts)
    facts["per_seed_final"] = {p: [v for r in per_seed for v in r.facts["per_seed_final"][p]]
                               for p in first.facts["per_seed_final"]}
    facts["per_seed_predictor_on_random"] = [v for r in per_seed for v in
                                             r.facts["per_seed_predictor_on_random"]]
    metrics = {k: float(np.mean([r.metrics[k] for r in per_seed])) for k in first.metrics}
    traces = {k: Trace("curve", np.mean([r.traces[k].data for r in per_seed], 0))
              for k in first.traces if k.startswith("glance_")}
    return types.SimpleNamespace(facts=facts, metrics=metrics, traces=traces,
                                 seconds=sum(r.seconds for r in per_seed))


def claim_text(result: dict) -> str:
    """The card default routing's verdict on ``digits`` as docs/claims.md states it
    (tests/models/apple/test_results.py pins the two together)."""
    s = result["digits"]
    r, rnd = s["ready"]["apple"], s["final"]["random"]["mean"]
    text = (f"card default routing, {result['iterations']} rollouts x {r['n']} seeds "
            f"({s['env_steps'] / 1000:.1f}k env steps): predictor on random glimpses "
            f"{s['predictor_on_random']['apple']['mean']:.3f} vs random's {rnd:.3f}, at the "
            f"random level on {r['seeds_at_level']}/{r['n']} seeds (needs {r['needed']})")
    if not r["ready"]:
        return text + ": void"
    t = s["paired"]["apple_vs_random"]
    return (text + f"; policy {s['final']['apple']['mean']:.3f} vs random {rnd:.3f}, ahead "
            f"on {t['wins']}/{t['n']} seeds (one-sided Wilcoxon p {t['wilcoxon_p_greater']:.3f}"
            f"): {s['verdict']['apple']}")


def readings(text: str) -> dict:
    out = {}
    for item in filter(None, text.split(";")):
        name, _, pair = item.partition("=")
        c, s = (float(v) for v in pair.split(","))
        out[f"apple_{name.strip()}"] = {"critic_backbone_lr": c, "sac_backbone_grad": s}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="digits")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=150)
    ap.add_argument("--scan", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--readings", default="paper=1,1")
    ap.add_argument("--fashion", action="store_true")
    ap.add_argument("--out", default="bench/out/apple.json")
    args = ap.parse_args(argv)
    base = {"count": False, "iterations": args.iterations}
    plan = {}   # (dataset, name) -> overrides
    for ds in args.datasets.split(","):
        plan[(ds, "random")] = {**base, "policies": "random"}
        if args.scan:
            plan[(ds, "scan")] = {**base, "policies": "scan"}
        plan[(ds, "apple")] = {**base, "policies": "apple"}
        for name, setting in readings(args.readings).items():
            plan[(ds, name)] = {**base, **setting, "policies": "apple"}
    if args.fashion:
        plan[("fashion-mnist", "check_c")] = {**base, "policies": "random"}
    t0 = time.time()
    specs = [(key, s) for key in plan for s in range(args.seeds)]   # one job per seed
    with ProcessPoolExecutor(args.workers) as pool:
        out = list(pool.map(job, [(ds, s, plan[(ds, n)]) for (ds, n), s in specs]))
    done = {key: merge([r for (k, _), r in zip(specs, out, strict=True) if k == key])
            for key in plan}
    result = {"seeds": args.seeds, "iterations": args.iterations,
              "seconds": round(time.time() - t0, 1),
              "job_seconds": {f"{ds}/{n}": r.seconds for (ds, n), r in done.items()}}
    for ds in args.datasets.split(","):
        s = summarize({n: r for (d, n), r in done.items() if d == ds})
        result[ds] = s
        print(f"== {ds} ({s['task']}, {int(s['env_steps'])} env steps, {args.seeds} seeds) ==")
        for p, f in s["final"].items():
            px = s.get("final_error_px", {}).get(p)
            print(f"  {p:22s} final-step accuracy {f['mean']:.3f} +- {f['std']:.3f} "
                  f"[{f['min']:.3f}, {f['max']:.3f}]" + (f", error {px:.2f} px" if px else ""))
        for p, f in s["predictor_on_random"].items():
            r, g = s["ready"][p], s["grad_norms"][p]
            print(f"  {p:22s} predictor on random glimpses {f['mean']:.3f}; at level on "
                  f"{r['seeds_at_level']}/{r['n']} (needs {r['needed']}); grad norms critic "
                  f"{g['critic']:.3g} sac {g['sac']:.3g} predictor {g['predictor']:.3g}; "
                  f"{s['verdict'][p]}")
        for name, t in s["paired"].items():
            print(f"  {name:32s} diff {t['diff']['mean']:+.3f} +- {t['diff']['std']:.3f}, "
                  f"wins {t['wins']}/{t['n']}, Wilcoxon p(>) {t['wilcoxon_p_greater']:.3f}, "
                  f"sign p(>) {t['sign_p_greater']:.3f}, holds {t['holds']}")
    if args.fashion:
        seeds = done[("fashion-mnist", "check_c")].facts["per_seed_final"]["random"]
        result["fashion_supervised_random"] = {"final": seeds, "threshold": 0.3,
                                               "holds": min(seeds) > 0.3}
        print(f"== check c: Fashion-MNIST, random glimpses, supervised term only: final-step "
              f"accuracy per seed {[round(v, 3) for v in seeds]} (> 0.3: {min(seeds) > 0.3})")
    if "apple" in result.get("digits", {}).get("ready", {}):
        print("claim: " + claim_text(result))
    store(Path(args.out), result)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
