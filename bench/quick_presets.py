"""Does a room's quick preset show its claim's direction? (issue 34, item 9)

``neuroedge simulate ROOM`` runs the ``quick`` preset by default, and the README promises
quick runs of seconds to a minute. Some rooms' quick runs are too small to show anything of
their paper's claim; their report headline then says so (``Card.preset_notes``). This bench
decides which, from measurements:

1. Each room of :data:`ROOMS` runs its quick preset exactly as ``neuroedge simulate ROOM``
   does (``models.runner.run``, the card's default profile and dataset, no overrides but
   the compared condition) on seeds 0, 1, 2 (``--seeds N``: 0 .. N-1), timing every run.
   APPLE's quick preset already trains its 3 seeds inside one run (``AppleConfig.seeds``),
   so it runs once and its per-seed finals are the seeds.
2. Per seed, the room's own claim metric gives a difference whose sign is the claim's
   direction (:data:`ROOMS` names it): positive means the claim's side is ahead.
3. Rule: the quick preset shows the direction when the difference is > 0 on at least
   ceil(2n/3) of the n seeds (2 of 3), the project's k-of-n rule (docs/claims.md). A
   room that fails it gets a ``quick`` note on its card (``tests/bench/test_quick_presets.py``
   pins the notes to this file's RESULT).

Single threaded; the six rooms took about 20 minutes wall on the shared 2-core machine
under load (bench/RESULTS.md).

    PYTHONPATH=. OMP_NUM_THREADS=1 nice -n 5 python bench/quick_presets.py [--write]
        [--rooms ROOM,ROOM] [--seeds N]

``--write`` stores the RESULT in ``bench/out/quick_presets.json`` (rooms not run keep their
stored entry, so rooms can be run one at a time). Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

# the repository root first, so `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._results import store  # noqa: E402
from models.shared.power import seeds_to_hold  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULT_FILE = ROOT / "bench" / "out" / "quick_presets.json"


def _runs(room: str, seed: int, conditions: dict[str, dict]) -> tuple[dict, float]:
    """``{condition: run}`` of ``room``'s quick preset at ``seed`` and their wall seconds."""
    from models import runner
    t = time.perf_counter()
    runs = {c: runner.run(room, preset="quick", seed=seed, overrides=ov)
            for c, ov in conditions.items()}
    return runs, time.perf_counter() - t


def decoupled_prototypes(seeds) -> dict:
    out = {}
    for s in seeds:
        runs, sec = _runs("decoupled_prototypes", s, {"both": {}})
        m = runs["both"].metrics
        out[s] = {"claim_side": m["decoupled_unique_eps0.025"],
                  "other_side": m["joint_unique_eps0.025"], "wall_s": [sec],
                  "also": {f"decoupled_minus_joint_unique_eps{e}":
                           m[f"decoupled_unique_eps{e}"] - m[f"joint_unique_eps{e}"]
                           for e in (0.1, 0.25)}}
    return out


def screener(seeds) -> dict:
    out = {}
    for s in seeds:
        runs, sec = _runs("screener", s, {"all": {}})
        m = runs["all"].metrics
        out[s] = {"claim_side": m["auroc_gauss_mask"], "other_side": m["auroc_gauss_none"],
                  "wall_s": [sec],
                  # the paper's other row (sin-cos condition) and the digest's check b (the
                  # SSL descriptor against a random-init one): recorded, not judged
                  "also": {"mask_minus_sincos": m["auroc_gauss_mask"] - m["auroc_gauss_sincos"],
                           "mask_minus_randf": m["auroc_gauss_mask"]
                           - m["auroc_gauss_mask_randf"]}}
    return out


def ppl(seeds) -> dict:
    out = {}
    for s in seeds:
        runs, sec = _runs("ppl", s, {"learned": {"prior": "learned"},
                                     "frozen": {"prior": "frozen_random"}})
        # keypoint error: lower is better, so the claim's side is the negated error
        out[s] = {"claim_side": -runs["learned"].metrics["keypoint_error"],
                  "other_side": -runs["frozen"].metrics["keypoint_error"], "wall_s": [sec]}
    return out


def dave(seeds) -> dict:
    out = {}
    for s in seeds:
        runs, sec = _runs("dave", s, {"quick": {}})
        m = runs["quick"].metrics
        out[s] = {"claim_side": m["merged_box_f1"], "other_side": m["average_box_f1"],
                  "wall_s": [sec]}
    return out


def chunk_sparse_attention(seeds) -> dict:
    from models.chunk_sparse_attention.card import VARIANTS
    out = {}
    for s in seeds:
        runs, sec = _runs("chunk_sparse_attention", s,
                          {"hsa": VARIANTS["hsa"], "full": VARIANTS["full"]})
        far = max((k for k in runs["hsa"].metrics if k.startswith("accuracy_L")),
                  key=lambda k: int(k.removeprefix("accuracy_L")))
        out[s] = {"claim_side": runs["hsa"].metrics[far],
                  "other_side": runs["full"].metrics[far], "wall_s": [sec], "metric": far}
    return out


def apple(seeds) -> dict:
    # one quick run trains AppleConfig.seeds seeds (seed, seed + 1, ...) of every policy
    runs, sec = _runs("apple", seeds[0],
                      {"quick": {} if len(seeds) == 3 else {"seeds": len(seeds)}})
    fin = runs["quick"].facts["per_seed_final"]
    return {s: {"claim_side": a, "other_side": r, "wall_s": [sec / len(seeds)]}
            for s, a, r in zip(seeds, fin["apple"], fin["random"], strict=True)}


ROOMS = {   # room -> (runner, the claim's direction as a difference claim_side - other_side)
    "decoupled_prototypes": (decoupled_prototypes,
                             "decoupled - joint unique prototypes at eps 0.025 (final)"),
    "screener": (screener, "AUROC: Gaussian with the SSL (masking-invariant) condition - "
                           "no condition"),
    "apple": (apple, "final-step accuracy: APPLE policy - random glimpses"),
    "ppl": (ppl, "keypoint error: frozen random template - learned prior"),
    "dave": (dave, "box F1 with a fresh decoder: learned merge - plain average"),
    "chunk_sparse_attention": (chunk_sparse_attention,
                               "accuracy at the longest test length (16x the training "
                               "length): HSA - full attention"),
}



def judge(per_seed: dict) -> dict:
    """The rule of the module docstring on ``{seed: {claim_side, other_side, wall_s}}``
    (``also``: further per-seed differences, recorded beside the verdict, not judged)."""
    diffs = [v["claim_side"] - v["other_side"] for v in per_seed.values()]
    n, k = len(diffs), sum(d > 0 for d in diffs)
    return {"per_seed": {str(s): v for s, v in per_seed.items()},
            "diffs": diffs, "n": n, "seeds_showing": k, "needed": seeds_to_hold(n),
            "shows_direction": k >= seeds_to_hold(n),
            "wall_s_per_seed_max": max(sum(v["wall_s"]) for v in per_seed.values())}


def render(result: dict) -> str:
    """The table of bench/RESULTS.md, from a RESULT (``tests/bench/test_quick_presets.py``
    pins it there)."""
    lines = ["| room | claim direction (claim side - other side) | per seed | seeds showing "
             "| shows | slowest seed (s) |", "|---|---|---|---|---|---|"]
    for room, r in result["rooms"].items():
        diffs = " / ".join(f"{d:+.4f}" for d in r["diffs"])
        lines.append(f"| `{room}` | {r['direction']} | {diffs} | {r['seeds_showing']} of "
                     f"{r['n']} (needs {r['needed']}) | {'yes' if r['shows_direction'] else 'no'}"
                     f" | {r['wall_s_per_seed_max']:.0f} |")
    lines.append("")
    for room, r in result["rooms"].items():   # recorded beside the verdict, not judged
        seeds = list(r["per_seed"].values())
        for key in seeds[0].get("also", {}):
            vals = [v["also"][key] for v in seeds]
            lines.append(f"- `{room}`, not judged: {key} "
                         f"{' / '.join(f'{d:+.4f}' for d in vals)} "
                         f"({sum(d > 0 for d in vals)} of {len(vals)} above 0)")
    return "\n".join(lines).rstrip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rooms", default=",".join(ROOMS),
                    help=f"comma-separated subset of {', '.join(ROOMS)}")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1 (default 3)")
    ap.add_argument("--write", action="store_true", help=f"store the RESULT in {RESULT_FILE}")
    args = ap.parse_args(argv)
    rooms = [r for r in args.rooms.split(",") if r]
    bad = [r for r in rooms if r not in ROOMS]
    if bad:
        ap.error(f"--rooms {','.join(bad)}: unknown; rooms are {', '.join(ROOMS)}")
    if args.seeds < 3:
        ap.error(f"--seeds {args.seeds}: the rule needs >= 3 seeds")
    import torch
    torch.set_num_threads(1)
    seeds = list(range(args.seeds))
    result = {"machine": f"shared 2-core CPU ({platform.processor() or platform.machine()}), "
                         "one torch thread",
              "date": time.strftime("%Y-%m-%d", time.gmtime()),
              "command": "PYTHONPATH=. OMP_NUM_THREADS=1 nice -n 5 python "
                         "bench/quick_presets.py --write",
              "rule": "direction shows when claim_side - other_side > 0 on >= ceil(2n/3) "
                      "of n seeds", "rooms": {}}
    if args.write and RESULT_FILE.exists():
        result["rooms"] = json.loads(RESULT_FILE.read_text())["rooms"]
    for room in rooms:
        fn, direction = ROOMS[room]
        t = time.perf_counter()
        verdict = judge(fn(seeds))
        result["rooms"][room] = {"direction": direction, **verdict}
        print(f"{room}: {verdict['seeds_showing']}/{verdict['n']} seeds show the direction "
              f"(diffs {', '.join(f'{d:+.4f}' for d in verdict['diffs'])}); "
              f"{time.perf_counter() - t:.0f} s", flush=True)
    if args.write:
        store(RESULT_FILE, result)
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
