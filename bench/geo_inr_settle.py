"""Geo-INR: does intrinsic dimension track downstream performance once every encoder is
trained far enough to be usable? (issue 34, item 7)

``bench/geo_inr_id.py`` pre-trains every encoder for a fixed 400 steps and finds
rho(FisherS ID, MLP-probe R^2) = -0.00 across its 16 encoders; but the over-resolved random
Fourier encoders are noise there (probe R^2 < 0), so the paper's "ID tracks downstream
performance" (arXiv:2511.02101, Sec. 5) was not tested on usable encoders. Here:

1. Each encoder (4 families x 4 resolutions, ``models/geo_inr_id/experiment.RESOLUTIONS``)
   is pre-trained :data:`FIRST_STEPS` steps (the bench's length), then, while its
   **validation** probe R^2 is <= 0, :data:`CHUNK_STEPS` more, up to :data:`STEP_CAP`
   (the digest's 2k). The validation probe is the room's MLP probe (``model.mlp_probe``) on
   :data:`N_VAL` land points of their own stream ``("settle", "val")``, half training it
   and half scoring it: neither the ID points nor the downstream probe's test half steer
   when training stops. Training resumes the same run (``model.Pretraining``), so an
   encoder stopped at 800 steps is the network a run of 800 steps gives.
2. An encoder whose validation R^2 is still <= 0 at the cap is **unusable**: listed as such
   in the RESULT, left out of the correlation, never dropped silently.
3. Per seed, Spearman rho(FisherS ID, downstream MLP-probe R^2) across that seed's usable
   encoders, where ID and downstream are measured as the room's run does (2500 land points,
   the 8 held-out fields, probe trained on half and tested on the other half). The same
   runs at the first checkpoint (400 steps, every encoder) give the fixed-length protocol's
   rho for comparison.
4. Rule, stated before the run: the claim holds when rho > 0 on at least ceil(2n/3) of the
   n seeds (:func:`verdict`).

Uncounted (accuracy study), one torch thread; ~10-15 min on one core.

    OMP_NUM_THREADS=1 nice -n 5 python bench/geo_inr_settle.py [--write] [--quick]

``--write`` stores the RESULT in ``bench/out/geo_inr_settle.json``, from which the table in
``bench/RESULTS.md`` and ``models/geo_inr_id/README.md`` and the row of ``docs/claims.md`` are
rendered (:func:`render`, :func:`claim_text`; ``tests/bench/test_geo_inr_settle.py`` pins
them). ``--quick``: 2 resolutions per family, small sets, 1 seed (smoke; never written).
Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench._results import store  # noqa: E402
from models.geo_inr_id import data as geo_data  # noqa: E402
from models.geo_inr_id import estimators as est  # noqa: E402
from models.geo_inr_id import model as M  # noqa: E402
from models.geo_inr_id.card import GeoIdConfig  # noqa: E402
from models.geo_inr_id.experiment import RESOLUTIONS, rho  # noqa: E402
from models.shared.power import seeds_to_hold  # noqa: E402
from sim import seeds as S  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULT_FILE = ROOT / "bench" / "out" / "geo_inr_settle.json"
SEEDS = (0, 1, 2)
# the sizes of bench/geo_inr_id.py, so the first checkpoint is its protocol
BASE = {"n_pretrain": 6000, "n_eval": 2500, "probe_steps": 150, "count": False}
FIRST_STEPS = 400
CHUNK_STEPS = 400
STEP_CAP = 2000
N_VAL = 1000


def validation_set(data, seed: int, n_val: int):
    """(lonlat, held-out fields) of ``n_val`` land points from the stream
    ``("settle", "val")``: not the ID / downstream points (those are ``("data", "eval")``)."""
    lonlat = geo_data.sample_land(data.earth, n_val, S.rng(seed, "settle", "val"))
    y = geo_data.field_values(data.earth, lonlat)[:, geo_data.N_PRETRAIN_FIELDS:]
    return lonlat, y


def halves(n: int, seed: int, *stream):
    perm = torch.as_tensor(S.rng(seed, *stream).permutation(n))
    return perm[: n // 2], perm[n // 2:]


def validation_r2(enc, val, cfg, dev) -> float:
    """The MLP probe's R^2 on the validation points (trained on one half, scored on the
    other)."""
    z = M.embed(enc, val[0], dev)
    tr, te = halves(len(z), cfg.seed, "settle", "val-split")
    return M.mlp_probe(z, dev.tensor(val[1]), tr, te, cfg, dev)["r2"]


def measure(enc, data, cfg, dev) -> dict:
    """ID of the evaluation points' embeddings and the downstream probes, as ``model.run``
    measures them (same points, same ``("probe", "split")`` halves)."""
    z = M.embed(enc, data.eval_lonlat, dev)
    ids, _ = est.global_ids(z.double(), ks=(20,), dev=dev, chunk=cfg.chunk)
    tr, te = halves(len(z), cfg.seed, "probe", "split")
    y = dev.tensor(data.eval_y)
    return {"fishers": float(ids["fishers"]), "mle_k20": float(ids["mle_k20"]),
            "twonn": float(ids["twonn"]), "mlp_r2": M.mlp_probe(z, y, tr, te, cfg, dev)["r2"],
            "ridge_r2": M.ridge_probe(z, y, tr, te, cfg.ridge, dev)}


def settle_encoder(cfg, data, val, dev, first=FIRST_STEPS, chunk=CHUNK_STEPS,
                   cap=STEP_CAP) -> dict:
    """Train until the validation probe's R^2 > 0 (checked after ``first`` steps and every
    ``chunk`` after) or ``cap`` steps; measure at the first checkpoint and at the stop."""
    enc = M.build_encoder(cfg)
    run = M.Pretraining(enc, data, cfg, dev)
    run.advance(first)
    history = [{"steps": first, "val_r2": validation_r2(enc, val, cfg, dev)}]
    at_first = measure(enc, data, cfg, dev)
    while history[-1]["val_r2"] <= 0 and history[-1]["steps"] < cap:
        step = min(chunk, cap - history[-1]["steps"])
        run.advance(step)
        history.append({"steps": history[-1]["steps"] + step,
                        "val_r2": validation_r2(enc, val, cfg, dev)})
    if not all(map(math.isfinite, run.losses)):
        raise RuntimeError(f"geo_inr_settle: {cfg.family} {cfg.resolution:g} seed {cfg.seed}: "
                           "pre-training diverged")
    final = at_first if len(history) == 1 else measure(enc, data, cfg, dev)
    return {"steps": history[-1]["steps"], "usable": history[-1]["val_r2"] > 0,
            "val_history": history, "at_first": at_first, "final": final,
            "pretrain_r2": run.fit_r2()}



def verdict(rhos: list[float]) -> dict:
    """rho(ID, downstream) > 0 on >= ceil(2n/3) of n seeds (nan counts as not > 0)."""
    k = sum(1 for r in rhos if r > 0)
    return {"positive_seeds": k, "seeds": len(rhos), "needed": seeds_to_hold(len(rhos)),
            "holds": k >= seeds_to_hold(len(rhos))}


def correlate(encoders: dict) -> dict:
    """Per-seed correlations: settled (usable encoders only) and at the first checkpoint."""
    settled = [e for e in encoders.values() if e["usable"]]
    return {"n_encoders": len(encoders), "n_usable": len(settled),
            "unusable": sorted(k for k, e in encoders.items() if not e["usable"]),
            "rho_settled": rho([e["final"]["fishers"] for e in settled],
                               [e["final"]["mlp_r2"] for e in settled]),
            "rho_settled_ridge": rho([e["final"]["fishers"] for e in settled],
                                     [e["final"]["ridge_r2"] for e in settled]),
            "rho_settled_mle20": rho([e["final"]["mle_k20"] for e in settled],
                                     [e["final"]["mlp_r2"] for e in settled]),
            "rho_first": rho([e["at_first"]["fishers"] for e in encoders.values()],
                             [e["at_first"]["mlp_r2"] for e in encoders.values()])}


def study(seeds, resolutions, base, first, chunk, cap, n_val, progress=print) -> dict:
    import sim
    dev = M.Uncounted(sim.device("a100"))
    out = {}
    for seed in seeds:
        cfg0 = GeoIdConfig(**base, seed=seed)
        data = geo_data.load(cfg0.n_pretrain, cfg0.n_eval, seed)
        val = validation_set(data, seed, n_val)
        encs = {}
        for fam, rs in resolutions.items():
            for r in rs:
                t = time.process_time()
                cfg = GeoIdConfig(**base, family=fam, resolution=float(r), seed=seed)
                e = settle_encoder(cfg, data, val, dev, first, chunk, cap)
                encs[f"{fam}/{r:g}"] = e
                progress(f"seed {seed} {fam}/{r:g}: {e['steps']} steps, val R2 "
                         f"{[round(h['val_r2'], 3) for h in e['val_history']]}, FisherS "
                         f"{e['final']['fishers']:.2f}, downstream R2 "
                         f"{e['final']['mlp_r2']:.3f} ({time.process_time() - t:.0f} CPU s)")
        out[str(seed)] = {"encoders": encs, **correlate(encs)}
        c = out[str(seed)]
        progress(f"seed {seed}: {c['n_usable']}/{c['n_encoders']} usable, rho settled "
                 f"{c['rho_settled']:+.2f}, rho at {first} steps {c['rho_first']:+.2f}")
    return out


def render(result: dict) -> str:
    """The table of bench/RESULTS.md and the room README, from a RESULT."""
    lines = ["| seed | usable encoders | unusable (val R^2 <= 0 at the cap) | "
             "rho(FisherS, MLP R^2), settled | rho(FisherS, ridge R^2) | "
             "rho(MLE k=20, MLP R^2) | "
             f"rho(FisherS, MLP R^2) at {result['first_steps']} steps, every encoder |",
             "|---|---|---|---|---|---|---|"]
    for seed, s in result["seeds"].items():
        lines.append(f"| {seed} | {s['n_usable']} / {s['n_encoders']} | "
                     f"{', '.join(s['unusable']) or 'none'} | {s['rho_settled']:+.2f} | "
                     f"{s['rho_settled_ridge']:+.2f} | {s['rho_settled_mle20']:+.2f} | "
                     f"{s['rho_first']:+.2f} |")
    lines.append("")
    steps = {}
    for s in result["seeds"].values():
        for k, e in s["encoders"].items():
            steps.setdefault(k, []).append(e["steps"])
    longer = {k: v for k, v in steps.items() if max(v) > result["first_steps"]}
    lines.append("Encoders trained past the first checkpoint (steps per seed): "
                 + ("; ".join(f"{k} {v}" for k, v in longer.items()) or "none") + ".")
    v = result["verdict"]
    lines.append(f"Verdict (rule fixed before the run: rho > 0 on >= {v['needed']} of "
                 f"{v['seeds']} seeds): {'holds' if v['holds'] else 'does not hold'} "
                 f"({v['positive_seeds']} of {v['seeds']}).")
    return "\n".join(lines)


def claim_text(result: dict) -> str:
    """The verdict as docs/claims.md states it (tests/bench pins the two together)."""
    v, ss = result["verdict"], list(result["seeds"].values())
    usable = "/".join(str(s["n_usable"]) for s in ss)
    total = ss[0]["n_encoders"]
    rhos = "/".join(f"{s['rho_settled']:+.2f}" for s in ss)
    ridge = "/".join(f"{s['rho_settled_ridge']:+.2f}" for s in ss)
    return (f"encoders trained until a validation probe's R^2 > 0 (cap {result['step_cap']} "
            f"steps; {usable} of {total} usable per seed): rho(FisherS ID, MLP-probe R^2) "
            f"{rhos} on {v['seeds']} seeds, {'holds' if v['holds'] else 'does not hold'} "
            f"{v['positive_seeds']}/{v['seeds']} (rule: > 0 on >= {v['needed']}); with the "
            f"ridge probe {ridge}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"store the RESULT in {RESULT_FILE}")
    ap.add_argument("--quick", action="store_true",
                    help="2 resolutions per family, small sets, 1 seed (smoke; not written)")
    args = ap.parse_args(argv)
    if args.quick and args.write:
        ap.error("--quick runs are not written (the stored RESULT is the full protocol)")
    torch.set_num_threads(1)
    seeds, resolutions, base = SEEDS, RESOLUTIONS, BASE
    first, chunk, cap, n_val = FIRST_STEPS, CHUNK_STEPS, STEP_CAP, N_VAL
    if args.quick:
        seeds, resolutions = (0,), {f: (r[0], r[-1]) for f, r in RESOLUTIONS.items()}
        base = {"n_pretrain": 1500, "n_eval": 600, "probe_steps": 60, "count": False}
        first, chunk, cap, n_val = 60, 60, 180, 400
    t0, c0 = time.perf_counter(), time.process_time()
    per_seed = study(seeds, resolutions, base, first, chunk, cap, n_val)
    result = {"seeds": per_seed, "resolutions": {f: list(r) for f, r in resolutions.items()},
              **{k: v for k, v in base.items() if k != "count"}, "first_steps": first,
              "chunk_steps": chunk, "step_cap": cap, "n_val": n_val,
              "verdict": verdict([s["rho_settled"] for s in per_seed.values()]),
              "machine": f"{platform.machine()} {os.cpu_count()} cores (shared)",
              "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
    print(render(result))
    if args.write:
        store(RESULT_FILE, result)
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
