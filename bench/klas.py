"""KLAS against its baselines on a family of three tiny ViTs (Fashion-MNIST subset), in one run.

Scores every stitch of every anchor pair exhaustively and measures it (LS init, then a short
fine-tune of T and g_{>j}), then compares:
1. ranking: Spearman / Kendall of the KLAS stitch score (-Gamma) against the CKA baseline
   (and the un-normalised KL Omega as an ablation) with stitched accuracy;
2. selection: area under the accuracy-FLOPs frontier of the stitches each selector keeps
   (measured accuracies), and per-bucket recovery of the best stitch;
3. stitched fine-tuning: one SN-Net supernet per selection (same steps), frontier AUC.
FLOPs per stitched model are the TorchDevice ledger's counts of its test-set inference.

    OMP_NUM_THREADS=1 nice -n 10 /work/main/.venv/bin/python bench/klas.py [--quick] [--seed 0]

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import platform
import time

import torch

from models.klas import summarise
from models.klas.experiment import KLASConfig, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the quick (~1 min) configuration")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", default="a100")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = KLASConfig.quick(seed=args.seed) if args.quick else KLASConfig(seed=args.seed)
    t0 = time.perf_counter()
    res = run(cfg, args.profile, progress=lambda i, n, m: print(
        f"  [{m['stage']} {i}/{n}] {m.get('stitch', '')} {time.perf_counter() - t0:.0f} s",
        flush=True))
    wall = time.perf_counter() - t0
    metrics, config, _ = summarise(res)
    tab, sel = res["table"], res["selected"]

    print(f"\nmachine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"1 thread, shared; device {res['device'].torch_device}; wall {wall:.0f} s")
    print(f"config: {config}")
    print("\nanchors   width  test acc  FLOPs/sample (ledger)  probe acc per block (D_v)")
    for a, w in enumerate(cfg.widths):
        pa = " ".join(f"{p:.3f}" for p in res["probe_acc"][a])
        print(f"  anchor{a}  {w:5d}  {res['anchor_acc'][a]:.4f}  {res['anchor_flops'][a]:>14,.0f}"
              f"         {pa}")
    print("\nlast-block KL (anchor selection): " + ", ".join(
        f"{a}->{b}: {v:.4f}" for (a, b), v in res["last_kl"].items()))
    print(f"  KLAS anchor chain: {res['klas_pairs']}   SN-Net nearest: [(0, 1), (1, 2)]")

    print("\nstitch        FLOPs      Gamma    Omega    CKA    acc(LS)  acc(ft)  KLAS SN-Net")
    for s in res["stitches"]:
        r = tab[s]
        print(f"  {s.name:10s} {r['flops']:>10,.0f} {r['gamma']:8.3f} {r['omega']:8.4f} "
              f"{r['cka']:6.3f} {r['acc_ls']:8.4f} {r['acc_ft']:8.4f}   "
              f"{'x' if s in sel['klas'] else ' '}    {'x' if s in sel['snnet'] else ' '}")

    print("\nrank correlation with stitched accuracy (all stitches; higher = better ranking)")
    print("  target   score        Spearman  Kendall")
    for target, by in res["corr"].items():
        for score, c in by.items():
            print(f"  {target:7s}  {score:11s} {c['spearman']:+8.3f} {c['kendall']:+8.3f}")
    c = res["corr"]["acc_ft"]
    print(f"  KLAS - CKA (fine-tuned acc): Spearman {c['klas_gamma']['spearman'] - c['cka']['spearman']:+.3f}"
          f", Kendall {c['klas_gamma']['kendall'] - c['cka']['kendall']:+.3f}")

    print("\nselection on measured (fine-tuned) accuracies: frontier AUC over the family FLOPs range")
    for name, o in res["oracle"].items():
        print(f"  {name:6s} |S| = {o['n']:3d}  AUC {o['auc']:.4f}  bucket recovery (within 1 pp) "
              f"{o['recovery']:.2f}")
    print("\nsupernet fine-tuning (SN-Net recipe, same steps): frontier AUC")
    for name, sn in res["supernets"].items():
        accs = ", ".join(f"{k} {v:.3f}" for k, v in sn["acc"].items())
        print(f"  {name:6s} AUC {sn['auc']:.4f}   [{accs}]")
    k, s = res["supernets"]["klas"]["auc"], res["supernets"]["snnet"]["auc"]
    print(f"  KLAS / SN-Net AUC ratio {k / s:.4f} (difference {k - s:+.4f})")

    out = {"wall_s": round(wall, 1), "quick": args.quick, "seed": args.seed,
           **{k: round(v, 5) for k, v in metrics.items()},
           "klas_pairs": config["klas_pairs"], "selected": config["selected"]}
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
