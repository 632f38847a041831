"""Screener's comparison over seeds and the digest's acceptance checks a-e.

Per seed: one run of every variant on training volumes 15 % of which hold lesions (the
paper's premise, Goncharov et al., ICLR 2026, Sec. 1: lesions rare, not absent) and one run
of the deployed variant trained on 0 % (check d). The checks are judged on the mean over
seeds and also counted seed by seed (k of n), thresholds as the digest states them:

- a. the deployed Gaussian with the masking-invariant condition: AUROC >= 0.85, >= the
  marginal Gaussian + 0.05 and >= the sin-cos condition + 0.03 (the paper's v1 Tab. 3 row
  gap: 0.96 vs 0.81 / 0.82 on LIDC);
- b. >= the same density on a random-init descriptor + 0.05 (v1 Tab. 4: STU-Net 0.52 vs
  VICReg 0.96 under a flow);
- c. invariance ratio mean |dc| / mean |dy| over lesion voxels <= 0.5;
- d. |AUROC(15 %) - AUROC(0 %)| <= 0.03;
- e. |flow - Gaussian| AUROC gap with the masking-invariant condition smaller than with
  none (Tab. 3: conditioning matters only for the Gaussian).
"""
from __future__ import annotations

import numpy as np

VARIANTS = ("gauss_none", "gauss_sincos", "gauss_mask", "flow_none", "flow_mask",
            "gauss_mask_randf")


def checks(per_seed: list[dict]) -> dict:
    """The five checks from per-seed metric dicts (each with ``auroc_<variant>``,
    ``invariance_ratio`` and ``auroc_clean_gauss_mask``, the 0 % run's AUROC)."""
    def arr(key):
        return np.array([m[key] for m in per_seed], dtype=float)
    a = {v: arr(f"auroc_{v}") for v in VARIANTS}
    ratio, clean = arr("invariance_ratio"), arr("auroc_clean_gauss_mask")
    gm = a["gauss_mask"]
    tests = {
        "a_auroc_ge_0.85": gm >= 0.85,
        "a_vs_none_ge_+0.05": gm - a["gauss_none"] >= 0.05,
        "a_vs_sincos_ge_+0.03": gm - a["gauss_sincos"] >= 0.03,
        "b_vs_randf_ge_+0.05": gm - a["gauss_mask_randf"] >= 0.05,
        "c_ratio_le_0.5": ratio <= 0.5,
        "d_contamination_gap_le_0.03": np.abs(gm - clean) <= 0.03,
        "e_gap_mask_lt_gap_none": np.abs(a["flow_mask"] - gm)
        < np.abs(a["flow_none"] - a["gauss_none"]),
    }
    means = {
        "a_auroc_ge_0.85": gm.mean() >= 0.85,
        "a_vs_none_ge_+0.05": (gm - a["gauss_none"]).mean() >= 0.05,
        "a_vs_sincos_ge_+0.03": (gm - a["gauss_sincos"]).mean() >= 0.03,
        "b_vs_randf_ge_+0.05": (gm - a["gauss_mask_randf"]).mean() >= 0.05,
        "c_ratio_le_0.5": ratio.mean() <= 0.5,
        "d_contamination_gap_le_0.03": abs((gm - clean).mean()) <= 0.03,
        "e_gap_mask_lt_gap_none": np.abs(a["flow_mask"] - gm).mean()
        < np.abs(a["flow_none"] - a["gauss_none"]).mean(),
    }
    return {k: {"holds_on_mean": bool(means[k]), "seeds_holding": int(v.sum()),
                "seeds": len(v)} for k, v in tests.items()}


def summarize(per_seed: list[dict]) -> dict:
    """Mean and std over seeds of every AUROC, the paired differences the checks use, the
    invariance ratio, and the checks."""
    out = {}
    keys = [f"auroc_{v}" for v in VARIANTS] + ["auroc_clean_gauss_mask", "invariance_ratio",
                                                "delta_condition", "delta_descriptor"]
    for k in keys:
        vals = np.array([m[k] for m in per_seed], dtype=float)
        out[f"{k}_mean"], out[f"{k}_std"] = float(vals.mean()), float(vals.std())
    diffs = {"mask_minus_none": ("gauss_mask", "gauss_none"),
             "mask_minus_sincos": ("gauss_mask", "gauss_sincos"),
             "mask_minus_randf": ("gauss_mask", "gauss_mask_randf"),
             "flow_minus_gauss_none": ("flow_none", "gauss_none"),
             "flow_minus_gauss_mask": ("flow_mask", "gauss_mask")}
    for name, (x, y) in diffs.items():
        d = np.array([m[f"auroc_{x}"] - m[f"auroc_{y}"] for m in per_seed])
        out[f"{name}_mean"], out[f"{name}_std"] = float(d.mean()), float(d.std())
    d = np.array([m["auroc_gauss_mask"] - m["auroc_clean_gauss_mask"] for m in per_seed])
    out["contaminated_minus_clean_mean"], out["contaminated_minus_clean_std"] = \
        float(d.mean()), float(d.std())
    out["checks"] = checks(per_seed)
    out["seeds"] = len(per_seed)
    return out


def seed_runs(preset: str, seeds, profile=None, overrides=None, progress=None) -> dict:
    """``{f"seed{s}": run, f"seed{s}_clean": run}``: every variant at 15 % contamination
    and the deployed variant alone at 0 %, through the runner."""
    from models import runner
    ov = dict(overrides or {})
    runs = {}
    for s in seeds:
        runs[f"seed{s}"] = runner.run("screener", profile=profile, preset=preset, seed=s,
                                      overrides=ov, progress=progress)
        runs[f"seed{s}_clean"] = runner.run(
            "screener", profile=profile, preset=preset, seed=s, progress=progress,
            overrides={**ov, "contamination": 0.0, "variants": ("gauss_mask",),
                       "deployed": "gauss_mask"})
    return runs


def per_seed_metrics(runs: dict) -> list[dict]:
    """The metric dicts ``summarize`` takes, from ``seed_runs``' runs."""
    out = []
    for name, r in runs.items():
        if name.endswith("_clean"):
            continue
        m = dict(r.metrics)
        m["auroc_clean_gauss_mask"] = runs[f"{name}_clean"].metrics["auroc_gauss_mask"]
        out.append(m)
    return out
