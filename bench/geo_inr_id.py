"""Intrinsic dimension of small geographic INRs: resolution, probes, coverage, local ID maps.

Runs the room's study (``models/geo_inr_id/experiment.py``; paper: arXiv:2511.02101) over
four encoder families (spherical harmonics degree L, random Fourier features sigma, grid-cell
sin/cos with S frequencies, SIREN omega_0) at four resolutions each, three seeds, on the
procedural Earth, uncounted (the study's runs), and prints:

1. ID (FisherS, MLE k = 20, TwoNN) against resolution per family, mean +- std over seeds, and
   Spearman rho(resolution, FisherS) per family (the digest's check: >= 0.8);
2. representativeness rho(FisherS, MLP-probe R^2) across the 16 encoders (check: > 0) and task
   alignment rho(TwoNN of the probe's hidden activations, R^2) (check: < 0);
3. the coverage-bias check (an sh L = 10 encoder pre-trained with a cap 10x denser: mean local
   ID inside minus outside the cap, against uniform coverage) and the grid-cell artifact
   check (base frequency 4: the longitude power spectrum's peak of the local ID map);
4. one counted run of the quick preset on the A100 profile: MACs per scope (the kNN GEMM's
   share: the digest's compute profile calls it dominant at N = 1e5; at the quick N = 2000 the
   pre-training dominates) and the ledger priced in joules and seconds.

Pictures: ``bench/geo_inr_id.png`` (local ID maps as equirectangular globes: sh L = 20,
rff sigma = 16, the base-4 grid-cell encoder, the 10x cap), ``bench/geo_inr_id_curves.png``
(ID against resolution; FisherS against probe R^2).

    nice -n 5 OMP_NUM_THREADS=1 .venv/bin/python bench/geo_inr_id.py [--quick] [--seeds 3]

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

# run from a checkout without installing: this checkout, not an installed copy, is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from models import runner  # noqa: E402
from models.geo_inr_id import experiment as X  # noqa: E402

HERE = Path(__file__).resolve().parent


def globe_panels(study, seed: int):
    """(title, raster) of the four maps of the picture, from the study's runs at ``seed``."""
    want = [(f"resolution/sh/20/seed{seed}", "sh, L = 20"),
            (f"resolution/rff/16/seed{seed}", "rff, sigma = 16"),
            (f"artifact/grid/4/grid_base=4/seed{seed}", "grid-cell, S = 4, base 4 (whole sphere)"),
            (f"coverage/sh/10/cap_boost=10/seed{seed}", "sh, L = 10, cap 10x denser"),
            (f"coverage/sh/10/cap_boost=1/seed{seed}", "sh, L = 10, uniform coverage")]
    out = []
    for key, title in want:
        run = study.runs.get(key)
        if run is not None:
            out.append((title, run.traces["local_id_map"].data[0], run))
    return out


def draw(study, summary, seed: int, radius: float) -> list[str]:
    from matplotlib.figure import Figure
    panels = globe_panels(study, seed)
    fig = Figure(figsize=(11, 2.9 * math.ceil(len(panels) / 2)), layout="constrained")
    axes = fig.subplots(math.ceil(len(panels) / 2), 2, squeeze=False).ravel()
    for ax, (title, raster, run) in zip(axes, panels, strict=False):
        im = ax.imshow(np.ma.masked_invalid(raster), extent=(-180, 180, -90, 90),
                       cmap="viridis", interpolation="nearest")
        ax.set_facecolor("#dde6ee")                                 # ocean / unsampled
        if "cap" in title or "uniform" in title:
            lon0, lat0 = run.facts["cap_centre_lonlat_rad"]
            t = np.linspace(0, 2 * math.pi, 200)
            # the cap's rim: points at angle `radius` from the centre, drawn in degrees
            c = np.array([math.cos(lat0) * math.cos(lon0), math.cos(lat0) * math.sin(lon0),
                          math.sin(lat0)])
            e1 = np.cross(c, [0, 0, 1.0])
            e1 /= np.linalg.norm(e1)
            e2 = np.cross(c, e1)
            rim = (math.cos(radius) * c[:, None] + math.sin(radius)
                   * (np.cos(t) * e1[:, None] + np.sin(t) * e2[:, None]))
            ax.plot(np.degrees(np.arctan2(rim[1], rim[0])), np.degrees(np.arcsin(rim[2])),
                    "r.", ms=1)
        ax.set_title(f"{title}: mean local ID {run.metrics['local_id_mean']:.2f}",
                     fontsize=9)
        ax.set_xlabel("longitude (deg)", fontsize=8)
        ax.set_ylabel("latitude (deg)", fontsize=8)
        fig.colorbar(im, ax=ax, shrink=0.8).set_label("local MLE ID, k = 100", fontsize=8)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(f"Local ID maps of the procedural Earth's land (seed {seed}; 5-degree cells)",
                 fontsize=10)
    maps = HERE / "geo_inr_id.png"
    fig.savefig(maps, dpi=100)

    fig = Figure(figsize=(11, 3.6), layout="constrained")
    ax1, ax2, ax3 = fig.subplots(1, 3)
    enc = summary["encoders"]
    for fam, marker in zip(X.RESOLUTIONS, "osd^", strict=True):
        keys = [k for k in enc if k.startswith(fam + "/")]
        res = [float(k.split("/")[1]) for k in keys]
        order = np.argsort(res)
        for ax, metric in ((ax1, "fishers"), (ax2, "mle_k20")):
            mean = np.array([enc[keys[i]][metric]["mean"] for i in order])
            std = np.array([enc[keys[i]][metric]["std"] for i in order])
            ax.errorbar(np.arange(len(order)), mean, std, marker=marker, capsize=3,
                        label=f"{fam} ({', '.join(f'{res[i]:g}' for i in order)})")
        ax3.scatter([enc[k]["fishers"]["mean"] for k in keys],
                    [enc[k]["mlp_r2"]["mean"] for k in keys], marker=marker, label=fam)
    for ax, what in ((ax1, "FisherS ID"), (ax2, "MLE ID (k = 20)")):
        ax.set_xlabel("resolution step (values in legend)")
        ax.set_ylabel(what)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    ax3.set_xlabel("FisherS ID")
    ax3.set_ylabel("MLP probe R^2 (held-out fields)")
    ax3.set_title(f"rho = {summary['representativeness_rho_fishers_mlp_r2']:.2f}", fontsize=9)
    ax3.legend(fontsize=7)
    ax3.grid(alpha=0.3)
    curves = HERE / "geo_inr_id_curves.png"
    fig.savefig(curves, dpi=100)
    return [str(maps.relative_to(HERE.parent)), str(curves.relative_to(HERE.parent))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the quick plan (2 resolutions)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n-pretrain", type=int, default=6000)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--n-eval", type=int, default=2500)
    ap.add_argument("--probe-steps", type=int, default=150)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    preset = "quick" if args.quick else "full"
    X.PLANS[preset] = {**X.PLANS[preset], "seeds": args.seeds}
    extra = {"n_pretrain": args.n_pretrain, "steps": args.steps, "n_eval": args.n_eval,
             "probe_steps": args.probe_steps}
    print(f"== study: {preset} plan, {args.seeds} seeds, {extra} (uncounted) ==", flush=True)
    t0 = time.time()
    study = X.experiment(preset, 0, {"gpu": "a100"}, extra=extra,
                         progress=lambda i, n, r: print(
                             f"  [{i}/{n}] {r['group']} {r['family']} {r['resolution']:g} "
                             f"seed {r['seed']}: FisherS {r['fishers']:.2f} MLE20 "
                             f"{r['mle_k20']:.2f} TwoNN {r['twonn']:.2f} R2 mlp "
                             f"{r['mlp_r2']:.3f} ridge {r['ridge_r2']:.3f} act-ID "
                             f"{r['probe_activation_twonn']:.2f}", flush=True))
    s = study.summary
    wall = time.time() - t0
    print("\n== 1. ID against resolution (mean +- std over seeds) ==")
    for key, e in s["encoders"].items():
        print(f"  {key:10s} FisherS {e['fishers']['mean']:6.2f} +- {e['fishers']['std']:.2f}"
              f"  MLE20 {e['mle_k20']['mean']:6.2f} +- {e['mle_k20']['std']:.2f}"
              f"  TwoNN {e['twonn']['mean']:5.2f}  local {e['local_id_mean']['mean']:5.2f}"
              f"  R2 mlp {e['mlp_r2']['mean']:.3f} ridge {e['ridge_r2']['mean']:.3f}"
              f"  act-ID {e['probe_activation_twonn']['mean']:.2f}")
    print("  Spearman rho(resolution, FisherS):", s["resolution_rho_fishers"])
    print("  Spearman rho(resolution, MLE k=20):", s["resolution_rho_mle20"])
    print("\n== 2. representativeness and task alignment (16 encoders, seed means) ==")
    for k in ("representativeness_rho_fishers_mlp_r2", "representativeness_rho_fishers_ridge_r2",
              "representativeness_rho_mle20_mlp_r2", "task_alignment_rho_act_twonn_mlp_r2"):
        print(f"  {k}: {s[k]:.3f}")
    print("  per family rho(FisherS, MLP R^2):", s["representativeness_rho_per_family"])
    print("\n== 3. coverage bias and grid artifact ==")
    for b, v in s["coverage_in_minus_out"].items():
        print(f"  {b}: local ID in cap - out of cap = {v['mean']:.3f} +- {v['std']:.3f}")
    print(f"  grid base {X.ARTIFACT_BASE}: longitude-spectrum peaks {s['artifact_lon_peaks']}, "
          "power share at multiples of the base "
          f"{[round(f, 3) for f in s['artifact_power_at_base']]}")
    print("  checks:", s["checks"])
    pictures = draw(study, s, 0, 0.5)
    print("  pictures:", ", ".join(pictures))

    print("\n== 4. one counted quick run on a100 ==")
    t1 = time.time()
    run = runner.run("geo_inr_id", profile="a100")
    rep = run.ledger.price(run.profile)
    led = run.ledger
    macs = {sc: sum(v for k, v in led.total_ops(sc).items() if k.startswith("mac_"))
            for sc in ("train/pretrain", "embed", "id/knn", "id/fishers", "probe")}
    total_macs = sum(v for k, v in led.total_ops().items() if k.startswith("mac_"))
    print(f"  {time.time() - t1:.1f} s; MACs per scope {macs} of {total_macs}; priced "
          f"{rep.total_j:.3e} J, {rep.total_latency_s:.3e} s on a100")
    res = {"preset": preset, "seeds": args.seeds, **extra, "wall_s": round(wall, 1),
           "resolution_rho_fishers": s["resolution_rho_fishers"],
           "resolution_rho_mle20": s["resolution_rho_mle20"],
           "representativeness_rho_per_family": s["representativeness_rho_per_family"],
           **{k: s[k] for k in ("representativeness_rho_fishers_mlp_r2",
                                "representativeness_rho_fishers_ridge_r2",
                                "representativeness_rho_mle20_mlp_r2",
                                "task_alignment_rho_act_twonn_mlp_r2")},
           "coverage_in_minus_out": {b: v["mean"] for b, v in
                                     s["coverage_in_minus_out"].items()},
           "artifact_lon_peaks": s["artifact_lon_peaks"],
           "artifact_power_at_base": s["artifact_power_at_base"], "checks": s["checks"],
           "encoders": {k: {m: round(e[m]["mean"], 4) for m in
                            ("fishers", "mle_k20", "twonn", "mlp_r2", "ridge_r2",
                             "probe_activation_twonn")} for k, e in s["encoders"].items()},
           "quick_run_a100": {"J": rep.total_j, "s": rep.total_latency_s,
                              "knn_mac_share": macs["id/knn"] / total_macs},
           "pictures": pictures}
    print("RESULT " + json.dumps(res, default=float))


if __name__ == "__main__":
    main()
