"""DAVE's acceptance checks over seeds (the digest's checks a-e, Huang et al. 2026 Sec. 4).

Each seed is one ``simulate`` run (its own pages, MAE, Stage-2 copies, merge, generalist,
fresh decoders D); a check is a per-seed difference against a threshold, reported as its
mean +- std over seeds, how many seeds pass, and ``holds`` when the mean passes. Check a
is a property of the pages, measured on the first seed's pages against Fashion-MNIST. A
pass is ``clear`` when the mean minus two standard errors still passes.
"""
from __future__ import annotations

import numpy as np

from models.registry import Progress, Study

PLANS = {   # preset -> seeds and the overrides of every run
    "quick": {"seeds": 3, "overrides": {}},
    "bench": {"seeds": 3, "overrides": {}},
    "full": {"seeds": 3, "overrides": {}},
}

CHECKS = (   # (name, metric, comparison, threshold, what the digest asks)
    ("b_probe_vs_random", "probe_pixel_minus_random", ">=", 0.10,
     "MAE-pixel linear probe >= random-init + 10 pts"),
    ("b_probe_vs_norm_pix", "probe_pixel_minus_norm_pix", ">=", 0.0,
     "MAE-pixel linear probe >= norm-pix MAE"),
    ("c_merge_vs_average", "merge_minus_average_box_f1", ">=", -0.005,
     "learned merge box F1 >= plain average - 0.5 pt (fresh decoder D)"),
    ("c_merge_vs_single", "merge_minus_single_box_f1", ">=", 0.01,
     "learned merge box F1 >= mean of single copies + 1 pt (fresh decoder D)"),
    ("c_distill", "distill_gap", ">", 0.0,
     "distillation MSE: average - learned merge > 0"),
    ("d_semantic", "fused_minus_specialist_figure_accuracy", ">=", 0.10,
     "fused figure-class accuracy >= specialist-only + 10 pts"),
    ("d_structure_vs_specialist", "fused_minus_specialist_box_f1", ">=", -0.02,
     "fused box F1 >= specialist-only - 2 pts"),
    ("d_structure_vs_generalist", "fused_minus_generalist_box_f1", ">=", 0.10,
     "fused box F1 >= generalist-only + 10 pts"),
    ("e_two_stage (soft)", "fused_minus_finetuned_generalist_box_f1", ">", 0.0,
     "fused box F1 > the generalist fine-tuned on the labelled pages alone"),
)


def mean_std(values) -> dict:
    a = np.asarray(values, float)
    return {"mean": float(a.mean()), "std": float(a.std()), "n": int(a.size),
            "values": a.tolist()}


def _passes(v: float, op: str, thr: float) -> bool:
    return bool(v >= thr if op == ">=" else v > thr)     # a Python bool: JSON-safe


def judge(per_seed: list[dict]) -> dict:
    """Every check of :data:`CHECKS` the runs measured: mean +- std, seeds passing,
    ``holds`` (the mean passes the threshold) and ``clear`` (mean - 2 standard errors still
    passes: the seeds' spread cannot explain the pass; every threshold is a lower bound)."""
    out = {}
    for name, metric, op, thr, text in CHECKS:
        vals = [m[metric] for m in per_seed if metric in m]
        if not vals:
            continue
        s = mean_std(vals)
        sem = float(s["std"] / np.sqrt(s["n"] - 1)) if s["n"] > 1 else float("inf")
        out[name] = {"metric": metric, "threshold": f"{op} {thr:g}", "asks": text, **s,
                     "sem": sem,
                     "seeds_passing": sum(_passes(v, op, thr) for v in vals),
                     "holds": _passes(s["mean"], op, thr),
                     "clear": _passes(s["mean"] - 2 * sem, op, thr)}
    return out


def flat_fraction(images, patch: int, thr: float = 0.01) -> float:
    """Check a: the fraction of ``patch`` x ``patch`` patches whose pixel std is < ``thr``."""
    from models.dave.data import patch_std
    return float((patch_std(np.asarray(images, np.float32), patch) < thr).mean())


def check_a(pages, fashion_x, patch: int) -> dict:
    """Flat patches on pages (digest: >= 50%) against Fashion-MNIST (<= 10%; the central
    24 px of the 28 px items, so whole patches tile them)."""
    f = np.asarray(fashion_x[:2000, 2:26, 2:26], np.float32)
    pages_frac = flat_fraction(pages, patch)
    fashion_frac = flat_fraction(f, patch)
    return {"pages_flat_fraction": pages_frac, "fashion_flat_fraction": fashion_frac,
            "asks": "pages >= 0.5 and Fashion-MNIST <= 0.1 of patches with std < 0.01",
            "holds": bool(pages_frac >= 0.5 and fashion_frac <= 0.1)}


def with_derived(m: dict) -> dict:
    m = dict(m)
    if "distill_mse_average" in m:
        m["distill_gap"] = m["distill_mse_average"] - m["distill_mse_merged"]
    return m


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None,
               overrides=None, seeds: int | None = None) -> Study:
    """``seeds`` (default 3) runs of the ``preset`` pipeline with the checks on, seeds
    ``seed .. seed + seeds - 1``; the summary holds every metric's mean +- std and the
    verdict of each check."""
    from models import runner
    from models.dave import data as D
    from models.dave.card import DaveConfig
    plan = PLANS[preset]
    n = seeds or plan["seeds"]
    runs, per_seed = {}, []
    for k in range(n):
        extra = {"checks": True, **plan["overrides"], **(overrides or {})}
        run = runner.run("dave", profile=profiles.get("gpu"), preset=preset, seed=seed + k,
                         overrides=extra, progress=progress)
        runs[f"seed{seed + k}"] = run
        per_seed.append(with_derived(run.metrics))
    keys = [k for k in per_seed[0] if all(k in m for m in per_seed)]
    summary = {"metrics": {k: mean_std([m[k] for m in per_seed]) for k in keys},
               "checks": judge(per_seed), "seeds": n}
    cfg = DaveConfig(seed=seed)
    fm = D.datasets.fashion_mnist(limit_train=2000, flatten=False)
    pages = D.make_pages(256, D.unlabeled_seed(seed), fm.x_train.reshape(-1, 28, 28),
                         fm.y_train, cfg.side)
    summary["checks"]["a_low_variance"] = check_a(pages.images,
                                                  fm.x_train.reshape(-1, 28, 28), cfg.patch)
    summary["claim"] = ("with a fresh decoder D, the learned merge >= the plain average and "
                        "> the mean single copy on box F1; the fused encoder adds the "
                        "generalist's semantics (figure class) without losing layout")
    summary["claim_met"] = all(summary["checks"][c]["holds"] for c in
                               ("c_merge_vs_average", "c_merge_vs_single", "d_semantic",
                                "d_structure_vs_specialist")
                               if c in summary["checks"])
    return Study(runs, summary)
