"""KLAS's stitch score against CKA, settled (issue 34, item 2): 8-block anchors, 300-step
stitch fine-tunes, 3,000 test images, Spearman rho within FLOPs buckets.

The first bench (``bench/klas.py``) found the KL stitch score -Gamma tied with linear CKA
in rank correlation with fine-tuned stitched accuracy, on 4-block anchors, 60-step
fine-tunes, 1,500 test images and one ranking across all FLOPs levels (where FLOPs alone
orders much of the accuracy, so the scores are partly ranked on cost, not on stitch
quality). Here, per seed (the pipeline pieces of ``models/klas/model.py``, unchanged):

1. three anchors (:data:`CONFIG`: widths 12/16/24, 8 blocks, the KLAS defaults otherwise)
   trained on 6,000 Fashion-MNIST images; probes, Theta, Gamma and CKA on D_v (1,000 held-out
   training images), as in the room;
2. every stitch of every anchor pair (3 x 8 x 7 = 168) gets its FLOPs per sample from the
   ledger (LS-initialised stitch run on :data:`FLOPS_IMAGES` test images: the count per
   sample does not depend on which images); the FLOPs range anchor 0 .. anchor 2 is cut
   into :data:`N_BUCKETS` equal buckets and :data:`PER_BUCKET` stitches are drawn per
   bucket uniformly at random (seed stream "settle", "pick"; fewer if the bucket holds
   fewer);
3. each drawn stitch: LS init, then ``stitch_steps`` = 300 Adam steps of T and g_{>j}
   (f frozen), then accuracy on 3,000 test images (the ground truth);
4. per bucket, Spearman rho of -Gamma, of -Omega (the un-normalised probe KL, ablation) and
   of CKA with the fine-tuned accuracy; the seed's figure is the mean over buckets.

Rule (the room's, ``models/klas/experiment.py``, stated before any seed ran): per seed the
difference d = rho(-Gamma) - rho(CKA) (bucket means); the KL score "beats" CKA when
d > 0.05 on >= 2 of 3 seeds and in the mean, "loses" in the mirror case, else "tie". With
fewer than 3 seeds finished the comparison is "not settled".

Budget: the shared 2-core CPU, one thread per process. Seeds run as separate processes
(``--seed S --part``: each writes ``bench/out/klas_settle.seed<S>.json`` when it ends),
then ``--merge`` assembles ``bench/out/klas_settle.json`` from the parts present; the
table in bench/RESULTS.md and the room README and the ``klas`` row of docs/claims.md are
rendered from it (:func:`render`, :func:`claim_text`; ``tests/bench/test_klas_settle.py``).

    PYTHONPATH=. OMP_NUM_THREADS=1 nice -n 5 python bench/klas_settle.py --seed 0 --part
    python bench/klas_settle.py --merge
    python bench/klas_settle.py --quick        # smoke run: tiny, never written

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sys
import time
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench._results import store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULT_FILE = ROOT / "bench" / "out" / "klas_settle.json"
SEEDS = (0, 1, 2)
CONFIG = dict(widths=(12, 16, 24), heads=(2, 2, 2), depth=8, n_train=6000, n_val=1000,
              n_test=3000, anchor_epochs=4, stitch_steps=300)
"""The KLASConfig overrides (the rest are the room's defaults): 8-block anchors narrow
enough that three of them and the stitch fine-tunes fit a shared CPU core."""
N_BUCKETS = 4
PER_BUCKET = 4   # 16 fine-tuned stitches per seed: what fits the shared CPU by the deadline
FLOPS_IMAGES = 20
MARGIN = 0.05
SCORES = ("klas_gamma", "kl_omega", "cka")


def part_file(seed: int) -> Path:
    return RESULT_FILE.with_name(f"klas_settle.seed{seed}.json")


def pick(members: list, k: int, seed: int) -> list:
    """``k`` of ``members`` drawn uniformly without replacement (all if fewer), in order."""
    from sim import seeds
    if len(members) <= k:
        return list(members)
    idx = seeds.rng(seed, "settle", "pick", len(members)).choice(len(members), k,
                                                                  replace=False)
    return [members[i] for i in sorted(idx)]


def bucket_rho(rows: list[dict], n_buckets: int) -> dict:
    """Per bucket Spearman rho of each score (higher = predicted better) with ``acc_ft``,
    over buckets with >= 3 stitches and a non-constant accuracy; and their means."""
    from scipy import stats
    per = []
    for b in range(n_buckets):
        rs = [r for r in rows if r["bucket"] == b]
        acc = np.array([r["acc_ft"] for r in rs])
        if len(rs) < 3 or np.ptp(acc) == 0:
            continue
        sc = {"klas_gamma": [-r["gamma"] for r in rs], "kl_omega": [-r["omega"] for r in rs],
              "cka": [r["cka"] for r in rs]}
        per.append({"bucket": b, "n": len(rs),
                    **{k: float(stats.spearmanr(v, acc).statistic) for k, v in sc.items()}})
    means = {k: float(np.nanmean([p[k] for p in per])) for k in SCORES}
    return {"per_bucket": per, "mean": means}


def study_seed(seed: int, quick: bool = False, progress=print) -> dict:
    """One seed: anchors, probes, scores, drawn stitches fine-tuned, per-bucket rho."""
    import torch
    import torch.nn.functional as F
    from scipy import stats

    from models import runner
    from models.klas import data as kdata
    from models.klas import scores as sc
    from models.klas.card import KLASConfig
    from models.klas.model import _train, evaluate, probe_logp, train_anchors, train_probes
    from models.klas.stitch import StitchedViT, StitchLayer
    from sim import seeds

    over = dict(CONFIG)
    n_buckets, per_bucket = N_BUCKETS, PER_BUCKET
    if quick:
        over.update(widths=(8, 12, 16), depth=4, n_train=600, n_val=200, n_test=300,
                    anchor_epochs=2, probe_epochs=2, stitch_steps=10)
        n_buckets, per_bucket = 2, 4
    cfg = KLASConfig(**over, seed=seed)
    dev = runner.device_for(runner.method_of("klas"), "a100")
    dev.replay = True   # same ledger, repeated steps priced once (~2x faster on this CPU)
    d = kdata.load("fashion-mnist", cfg)
    x_all = dev.tensor(d.x_train)
    y_all = dev.tensor(d.y_train, dtype=torch.int64)
    x, y, x_val = x_all[: cfg.n_train], y_all[: cfg.n_train], x_all[cfg.n_train:]
    x_te, y_te = dev.tensor(d.x_test), dev.tensor(d.y_test, dtype=torch.int64)
    k, t0 = len(cfg.widths), time.perf_counter()

    anchors = train_anchors(cfg, dev, x, y)
    anchor = [evaluate(dev, m, x_te, y_te, f"infer/anchor{a}") for a, m in enumerate(anchors)]
    progress(f"seed {seed}: anchors {[round(a, 4) for a, _ in anchor]} "
             f"({time.perf_counter() - t0:.0f} s)")
    logp = [probe_logp(dev, m, train_probes(cfg, dev, m, x, y, f"train/probe/anchor{a}",
                                            seeds.child(cfg.seed, "probe", a)),
                       x_val, f"score/anchor{a}") for a, m in enumerate(anchors)]
    theta = {(a, b): sc.theta_matrix(logp[a], logp[b]) for a in range(k) for b in range(k)}
    with torch.no_grad(), dev.count("score/features", samples=k * cfg.ls_samples):
        feats = [m.block_outputs(x_val[: cfg.ls_samples]) for m in anchors]

    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    stitches = sc.all_stitches([cfg.depth] * k, pairs)
    edges = sc.bucket_edges(anchor[0][1], anchor[-1][1], n_buckets)
    layers, flops = {}, {}
    for s in stitches:   # FLOPs of every stitch (ledger, a few images), to bucket them
        layers[s] = dev.compile(StitchLayer(cfg.widths[s.front], cfg.widths[s.back])).ls_init(
            feats[s.front][s.i - 1], feats[s.back][s.j - 1])
        model = StitchedViT(anchors[s.front], anchors[s.back], s.i, s.j, layers[s])
        _, flops[s] = evaluate(dev, model, x_te[:FLOPS_IMAGES], y_te[:FLOPS_IMAGES],
                               f"infer/flops/{s.name}")
    drawn = []
    for b in range(n_buckets):
        members = [s for s in stitches if sc.bucket_of(flops[s], edges) == b]
        drawn += [(b, s) for s in pick(members, per_bucket, seeds.child(seed, "bucket", b))]
    progress(f"seed {seed}: {len(drawn)} stitches drawn from {len(stitches)} "
             f"({time.perf_counter() - t0:.0f} s)")

    rows = []
    for n, (b, s) in enumerate(drawn):
        src, dst = feats[s.front][s.i - 1], feats[s.back][s.j - 1]
        gamma = sc.stitch_scores(theta[s.front, s.back], theta[s.back, s.back])[s.i - 1, s.j - 1]
        ft = StitchedViT(anchors[s.front], anchors[s.back], s.i, s.j, layers[s])
        acc_ls, _ = evaluate(dev, ft, x_te, y_te, f"infer/ls/{s.name}")
        ft = copy.deepcopy(ft).train()        # f_{<=i} frozen; T and g_{>j} learn
        for part, learns in ((ft.embed, False), (ft.front, False), (ft.stitch, True),
                             (ft.back, True), (ft.norm, True), (ft.head, True)):
            part.requires_grad_(learns)
        _train(dev, ft.parameters(), lambda st, xb, yb, ft=ft: F.cross_entropy(ft(xb), yb),
               x, y, f"train/finetune/{s.name}", cfg.stitch_steps, cfg.batch_size // 2,
               cfg.stitch_lr, seeds.child(cfg.seed, "finetune", stitches.index(s)))
        acc_ft, _ = evaluate(dev, ft, x_te, y_te, f"infer/ft/{s.name}")
        rows.append({"stitch": s.name, "bucket": b, "flops": flops[s], "gamma": float(gamma),
                     "omega": float(theta[s.front, s.back][s.i - 1, s.j - 1]),
                     "cka": sc.linear_cka(src, dst), "acc_ls": acc_ls, "acc_ft": acc_ft})
        progress(f"seed {seed}: {n + 1}/{len(drawn)} {s.name} bucket {b} acc_ft {acc_ft:.4f} "
                 f"({time.perf_counter() - t0:.0f} s)")
    within = bucket_rho(rows, n_buckets)
    acc = [r["acc_ft"] for r in rows]
    pooled = {"klas_gamma": [-r["gamma"] for r in rows],
              "kl_omega": [-r["omega"] for r in rows], "cka": [r["cka"] for r in rows]}
    return {"seed": seed, "config": {**{k_: list(v) if isinstance(v, tuple) else v
                                        for k_, v in over.items()}},
            "n_buckets": n_buckets, "per_bucket": per_bucket, "n_stitches_all": len(stitches),
            "anchor_accuracy": [a for a, _ in anchor], "anchor_flops": [f for _, f in anchor],
            "rows": rows, "within": within,
            "pooled": {k_: float(stats.spearmanr(v, acc).statistic) for k_, v in pooled.items()},
            "diff": within["mean"]["klas_gamma"] - within["mean"]["cka"],
            "wall_s": round(time.perf_counter() - t0, 1)}


def verdict(recs: list[dict]) -> dict:
    """The room's rule on the per-seed differences; "not settled" before all of SEEDS ran."""
    from models.klas.experiment import verdict as room_verdict
    diffs = [r["diff"] for r in recs]
    done = sorted(r["seed"] for r in recs)
    missing = [s for s in SEEDS if s not in done]
    word = room_verdict(diffs, MARGIN) if not missing and diffs else "not settled"
    return {"diffs": diffs, "mean": float(np.mean(diffs)) if diffs else None,
            "above": int(sum(x > MARGIN for x in diffs)), "seeds": done,
            "missing": missing, "verdict": word}


def assemble(recs: list[dict]) -> dict:
    recs = sorted(recs, key=lambda r: r["seed"])
    import torch
    # the seeds' own settings (a quick run's differ from CONFIG)
    first = recs[0] if recs else {"config": CONFIG, "n_buckets": N_BUCKETS,
                                  "per_bucket": PER_BUCKET}
    return {"benchmark": "klas_settle", "config": {k: list(v) if isinstance(v, tuple) else v
                                                   for k, v in first["config"].items()},
            "n_buckets": first["n_buckets"], "per_bucket": first["per_bucket"],
            "margin": MARGIN,
            "seeds": recs, "verdict": verdict(recs),
            "machine": f"shared 2-core CPU ({platform.machine()}, {os.cpu_count()} cores), "
                       f"torch {torch.__version__}, 1 thread per seed process",
            "command": "PYTHONPATH=. OMP_NUM_THREADS=1 nice -n 5 python bench/klas_settle.py "
                       "--seed S --part (S = 0, 1, 2, one process each); then --merge"}


def _f(v) -> str:
    return "n/a" if v is None or v != v else f"{v:+.3f}"


def render(result: dict) -> str:
    """The per-seed table and the verdict (bench/RESULTS.md and the room README)."""
    c = result["config"]
    lines = [f"Anchors: widths {'/'.join(map(str, c['widths']))}, {c['depth']} blocks, "
             f"{c['anchor_epochs']} epochs on {c['n_train']} images; {c['stitch_steps']}-step "
             f"stitch fine-tunes; {c['n_test']} test images; {result['n_buckets']} FLOPs "
             f"buckets, up to {result['per_bucket']} random stitches each. Spearman rho with "
             "fine-tuned accuracy, mean over buckets (pooled over all drawn stitches in "
             "brackets).", "",
             "| seed | anchor acc | stitches | -Gamma (KLAS) | -Omega (probe KL) | CKA | "
             "KLAS - CKA | wall s |", "|---|---|---|---|---|---|---|---|"]
    for r in result["seeds"]:
        m, p = r["within"]["mean"], r["pooled"]
        lines.append(
            f"| {r['seed']} | {'/'.join(f'{a:.3f}' for a in r['anchor_accuracy'])} | "
            f"{len(r['rows'])} | {_f(m['klas_gamma'])} ({_f(p['klas_gamma'])}) | "
            f"{_f(m['kl_omega'])} ({_f(p['kl_omega'])}) | {_f(m['cka'])} ({_f(p['cka'])}) | "
            f"{_f(r['diff'])} | {r['wall_s']:.0f} |")
    acc = [row["acc_ft"] for r in result["seeds"] for row in r["rows"]]
    if acc:
        # the ground truth's own noise: the binomial standard error of one accuracy on
        # n_test images, against the spread of the fine-tuned accuracies within a bucket
        p = float(np.mean(acc))
        se = (p * (1 - p) / c["n_test"]) ** 0.5
        spread = [max(x) - min(x) for r in result["seeds"] for b in range(result["n_buckets"])
                  if len(x := [row["acc_ft"] for row in r["rows"] if row["bucket"] == b]) > 1]
        lines += ["", f"Fine-tuned accuracies {min(acc):.3f}-{max(acc):.3f} (mean {p:.3f}); "
                  f"one accuracy on {c['n_test']} test images has a standard error of "
                  f"{se:.4f}; the best and worst stitch of a bucket differ by "
                  f"{float(np.median(spread)):.4f} (median over buckets), i.e. "
                  f"{float(np.median(spread)) / se:.1f} standard errors."]
    v, m = result["verdict"], result["margin"]
    tail = (f"missing seeds {', '.join(map(str, v['missing']))}" if v["missing"]
            else f"mean {_f(v['mean'])}")
    # the count the verdict rests on: seeds past +margin for "better", past -margin for
    # "worse"; both for a tie (or an unsettled run)
    above = f"above +{m} on {sum(x > m for x in v['diffs'])}"
    below = f"below -{m} on {sum(x < -m for x in v['diffs'])}"
    count = {"better": above, "worse": below}.get(v["verdict"], f"{above}, {below}")
    lines += ["", f"KLAS - CKA {count} of {len(v['diffs'])} finished seeds ({tail}): "
              f"**{v['verdict']}**."]
    return "\n".join(lines)


def claim_text(result: dict) -> str:
    """The verdict as docs/claims.md states it (tests/bench pins the two together)."""
    v, c = result["verdict"], result["config"]
    diffs = ", ".join(_f(x) for x in v["diffs"])
    word = {"better": "KL score beats CKA", "worse": "CKA beats the KL score",
            "tie": "stitch score ties CKA", "not settled": "not settled"}[v["verdict"]]
    miss = (f"; seeds {', '.join(map(str, v['missing']))} did not finish" if v["missing"]
            else "")
    return (f"**{word}** within FLOPs buckets ({c['depth']}-block anchors, "
            f"{c['stitch_steps']}-step fine-tunes, {c['n_test']} test images; Spearman "
            f"differences {diffs} on seeds {', '.join(map(str, v['seeds']))}{miss})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=None, help="run this one seed")
    ap.add_argument("--part", action="store_true",
                    help="write the seed's record to bench/out/klas_settle.seed<S>.json")
    ap.add_argument("--merge", action="store_true",
                    help=f"assemble {RESULT_FILE.name} from the seed parts present")
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny, never written")
    args = ap.parse_args(argv)
    if args.quick and (args.part or args.merge):
        ap.error("--quick runs are not written")
    if args.merge:
        recs = [json.loads(part_file(s).read_text()) for s in SEEDS if part_file(s).exists()]
        result = assemble(recs)
        store(RESULT_FILE, result)
        print(render(result))
        print("RESULT " + json.dumps(result))
        return 0
    import torch
    torch.set_num_threads(1)
    seed = SEEDS[0] if args.seed is None else args.seed
    rec = study_seed(seed, quick=args.quick, progress=lambda s: print(s, flush=True))
    if args.part:
        store(part_file(seed), rec)   # never a half-written part
    print(render(assemble([rec])))
    print("RESULT " + json.dumps(rec))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
