"""KLAS against its baselines on a family of three tiny ViTs (Fashion-MNIST subset), in one run.

Scores every stitch of every anchor pair exhaustively and measures it (LS init, then a short
fine-tune of T and g_{>j}), then compares:
1. ranking: Spearman / Kendall of the KLAS stitch score (-Gamma) against the CKA baseline
   (and the un-normalised KL Omega as an ablation) with stitched accuracy;
2. selection: area under the accuracy-FLOPs frontier of the stitches each selector keeps
   (measured accuracies), and per-bucket recovery of the best stitch;
3. stitched fine-tuning: one SN-Net supernet per selection (same steps), frontier AUC.
FLOPs per stitched model are the TorchDevice ledger's counts of its test-set inference.
The runs are one sweep over ``--seeds`` (``deploy.sweep``, serially in this process, one
thread; run files and table in ``bench/out/klas-<preset>-sweep``), each a runner call as
``neuroedge simulate klas``: the tables are the first seed's run, then each headline
figure's spread over seeds (mean, std, min, max).

    OMP_NUM_THREADS=1 nice -n 10 /work/main/.venv/bin/python bench/klas.py [--quick] [--seed 0]
    OMP_NUM_THREADS=1 nice -n 10 /work/main/.venv/bin/python bench/klas.py --seeds 0,1,2

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

# run from a checkout without installing: this checkout, not an installed copy, is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench import _sweeps  # noqa: E402
from models.klas.model import STITCH_COLUMNS  # noqa: E402

HEADLINE = ("anchor0_accuracy", "anchor1_accuracy", "anchor2_accuracy",
            "spearman_klas_gamma_vs_acc_ft", "spearman_cka_vs_acc_ft",
            "kendall_klas_gamma_vs_acc_ft", "kendall_cka_vs_acc_ft",
            "oracle_auc_klas", "oracle_auc_snnet", "recovery_klas", "recovery_snnet",
            "supernet_auc_klas", "supernet_auc_snnet")
"""The metrics whose spread over seeds the bench prints (the RESULTS table's rows)."""


def report(run, wall: float) -> None:
    """The tables of one run (a run file's content: metrics, facts, config, traces);
    ``wall``: the sweep's wall seconds per run."""
    m, facts, cfg = run.metrics, run.facts, run.config
    sel = facts["selected"]
    print(f"\nmachine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"1 thread, shared; device {facts['torch_device']}; wall {wall:.0f} s per run")
    print(f"config: {cfg}")
    print("\nanchors   width  test acc  FLOPs/sample (ledger)  probe acc per block (D_v)")
    for a, w in enumerate(cfg["widths"]):
        pa = " ".join(f"{p:.3f}" for p in facts["probe_accuracy"][a])
        print(f"  anchor{a}  {w:5d}  {m[f'anchor{a}_accuracy']:.4f}  "
              f"{m[f'anchor{a}_flops']:>14,.0f}         {pa}")
    print("\nlast-block KL (anchor selection): " + ", ".join(
        f"{k.replace('-', '->')}: {v:.4f}" for k, v in facts["last_block_kl"].items()))
    print(f"  KLAS anchor chain: {facts['klas_pairs']}   SN-Net nearest: [[0, 1], [1, 2]]")

    print("\nstitch        FLOPs      Gamma    Omega    CKA    acc(LS)  acc(ft)  KLAS SN-Net")
    for row in run.traces["stitches"].data:
        r = dict(zip(STITCH_COLUMNS, row, strict=True))
        name = f"s{int(r['front'])}{int(r['back'])}-{int(r['i'])}-{int(r['j'])}"
        print(f"  {name:10s} {r['flops']:>10,.0f} {r['gamma']:8.3f} {r['omega']:8.4f} "
              f"{r['cka']:6.3f} {r['acc_ls']:8.4f} {r['acc_ft']:8.4f}   "
              f"{'x' if name in sel['klas'] else ' '}    {'x' if name in sel['snnet'] else ' '}")

    print("\nrank correlation with stitched accuracy (all stitches; higher = better ranking)")
    print("  target   score        Spearman  Kendall")
    for target in ("acc_ft", "acc_ls"):
        for score in ("klas_gamma", "kl_omega", "cka"):
            print(f"  {target:7s}  {score:11s} {m[f'spearman_{score}_vs_{target}']:+8.3f} "
                  f"{m[f'kendall_{score}_vs_{target}']:+8.3f}")
    ds = m["spearman_klas_gamma_vs_acc_ft"] - m["spearman_cka_vs_acc_ft"]
    dk = m["kendall_klas_gamma_vs_acc_ft"] - m["kendall_cka_vs_acc_ft"]
    print(f"  KLAS - CKA (fine-tuned acc): Spearman {ds:+.3f}, Kendall {dk:+.3f}")

    print("\nselection on measured (fine-tuned) accuracies: frontier AUC over the family "
          "FLOPs range")
    for name in ("klas", "snnet", "all"):
        print(f"  {name:6s} |S| = {m[f'n_selected_{name}']:3.0f}  AUC "
              f"{m[f'oracle_auc_{name}']:.4f}  bucket recovery (within 1 pp) "
              f"{m[f'recovery_{name}']:.2f}")
    print("\nsupernet fine-tuning (SN-Net recipe, same steps): frontier AUC")
    for name, accs in facts["supernet_accuracy"].items():
        listed = ", ".join(f"{k} {v:.3f}" for k, v in accs.items())
        print(f"  {name:6s} AUC {m[f'supernet_auc_{name}']:.4f}   [{listed}]")
    k, s = m["supernet_auc_klas"], m["supernet_auc_snnet"]
    print(f"  KLAS / SN-Net AUC ratio {k / s:.4f} (difference {k - s:+.4f})")



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the quick (~1 min) preset")
    ap.add_argument("--seed", type=int, default=0, help="one seed (the tables of its run)")
    ap.add_argument("--seeds", default=None,
                    help="comma-separated seeds: one sweep; tables of the first seed's run, "
                         "then the spread over seeds")
    ap.add_argument("--profile", default="a100")
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [args.seed]
    preset = "quick" if args.quick else "full"
    t0 = time.perf_counter()
    result = _sweeps.sweep({"name": f"klas-{preset}", "models": ["klas"], "presets": [preset],
                            "seeds": seeds, "profiles": [args.profile]})
    wall = time.perf_counter() - t0
    rows = sorted(_sweeps.ok_rows(result), key=lambda r: seeds.index(int(r["seed"])))
    first = _sweeps.read(result, rows[0])
    print(f"\ntables of seed {rows[0]['seed']}'s run (of {len(rows)})")
    report(first, wall / len(rows))
    spreads = {k: _sweeps.spread(rows, k) for k in HEADLINE}
    ratios = [r["supernet_auc_klas"] / r["supernet_auc_snnet"] for r in rows]
    if len(rows) > 1:
        print(f"\nspread over seeds {seeds} (mean +/- std [min, max]):")
        for k, sp in spreads.items():
            print(f"  {k:32s} {_sweeps.fmt(sp, scale=1, digits=4)}")
        print("  KLAS / SN-Net supernet AUC ratio per seed: "
              + ", ".join(f"{x:.4f}" for x in ratios))
    out = {"wall_s": round(wall, 1), "quick": args.quick, "seeds": seeds,
           **{k: round(v, 5) for k, v in first.metrics.items()},
           "klas_pairs": first.facts["klas_pairs"], "selected": first.facts["selected"],
           "spread": spreads, "supernet_auc_ratio": ratios,
           "sweep_table": str(result.table_path)}
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
