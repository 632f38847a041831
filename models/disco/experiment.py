"""The paper's protocol (Sec. 5) in miniature: internal indices against ARI over clusterings.

For one data set (``data.make``) every clustering of ``data.clusterings`` is scored by DISCO
(counted on the device; the dc structure once per data set, the index once per clustering),
by Silhouette (Euclidean, on the non-noise points only, sklearn; the digest's reading) and by
ARI against the ground truth. An index is good when it correlates with ARI across the
clusterings: the paper's table reports the Pearson correlation (PCC) x 100 per data set.
An index undefined on a clustering (Silhouette with fewer than two clusters among the
non-noise points) is left out of that index's PCC, and the count says so.

``experiment`` repeats the protocol over 3 seeds and the four data sets and checks the
digest's claim: PCC(DISCO, ARI) >= PCC(Silhouette, ARI) on moons and circles.
"""
from __future__ import annotations

import numpy as np

from models.registry import Progress, Study

PLANS = {"quick": {"seeds": 3, "overrides": {}}, "full": {"seeds": 3, "overrides": {}}}
"""Seeds per data set (from the study's seed up) and config overrides of the preset."""


def silhouette(x: np.ndarray, labels: np.ndarray) -> float:
    """Euclidean Silhouette of the non-noise points; NaN when it is undefined there."""
    from sklearn.metrics import silhouette_score
    keep = labels != -1
    n_lab = len(np.unique(labels[keep]))
    if not 2 <= n_lab <= keep.sum() - 1:
        return float("nan")
    return float(silhouette_score(x[keep], labels[keep]))


def pcc(index, ari) -> tuple[float, int]:
    """Pearson correlation of an index with ARI over the clusterings where it is defined,
    and how many those are; NaN when fewer than 3 or either side is constant."""
    index, ari = np.asarray(index, float), np.asarray(ari, float)
    ok = np.isfinite(index) & np.isfinite(ari)
    if ok.sum() < 3 or np.ptp(index[ok]) == 0 or np.ptp(ari[ok]) == 0:
        return float("nan"), int(ok.sum())
    return float(np.corrcoef(index[ok], ari[ok])[0, 1]), int(ok.sum())


def protocol(ps, dev, cfg, extra=None, labelings=None) -> dict:
    """Score every clustering of ``ps`` (``labelings``, default ``data.clusterings``);
    ``extra`` maps an index name to ``f(x, labels)`` (the bench adds DBCV). Returns rows per
    clustering, the pointwise DISCO scores and each index's PCC with ARI."""
    from sklearn.metrics import adjusted_rand_score

    from models.disco import data
    from models.disco.model import dc_structure, disco_samples
    chunk = int(cfg.chunk_mb * 2**20)
    labelings = labelings if labelings is not None else data.clusterings(ps, cfg.seed)
    dc = dc_structure(ps.x, cfg.min_pts, dev, chunk)
    rows, pointwise = {}, {}
    for name, lab in labelings.items():
        scores = disco_samples(ps.x, lab, dev, cfg.min_pts, dc, chunk, scope=f"index/{name}")
        pointwise[name] = scores
        row = {"ari": float(adjusted_rand_score(ps.y, lab)),
               "disco": float(scores.mean()),
               "silhouette": silhouette(ps.x, lab),
               "clusters": int(len(np.unique(lab[lab != -1]))),
               "noise": float((lab == -1).mean()),
               "disco_noise": float(scores[lab == -1].mean()) if (lab == -1).any()
               else float("nan")}
        for key, fn in (extra or {}).items():
            row[key] = fn(ps.x, lab)
        rows[name] = row
    out = {"rows": rows, "pointwise": pointwise, "labels": labelings}
    ari = [r["ari"] for r in rows.values()]
    for key in ("disco", "silhouette", *(extra or {})):
        out[f"pcc_{key}"], out[f"n_{key}"] = pcc([r[key] for r in rows.values()], ari)
        vals = np.array([r[key] for r in rows.values()], float)
        names = list(rows)
        best = names[int(np.nanargmax(vals))] if np.isfinite(vals).any() else None
        out[f"top_{key}"] = best
        out[f"top_ari_{key}"] = rows[best]["ari"] if best else float("nan")
    return out


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """PCC with ARI of DISCO and Silhouette, per data set over the seeds of :data:`PLANS`."""
    from models import runner
    from models.disco.card import DATASETS
    plan = PLANS[preset]
    seeds = plan["seeds"]
    runs, per = {}, {d: {"disco": [], "silhouette": []} for d in DATASETS}
    total, done = len(DATASETS) * seeds, 0
    for dataset in DATASETS:
        for s in range(seed, seed + seeds):
            run = runner.run("disco", profile=profiles.get("gpu"), dataset=dataset,
                             preset=preset, seed=s, overrides=plan["overrides"])
            runs[f"{dataset}/seed{s}"] = run
            per[dataset]["disco"].append(run.metrics["pcc_disco_ari"])
            per[dataset]["silhouette"].append(run.metrics["pcc_silhouette_ari"])
            done += 1
            if progress:
                progress(done, total, {"dataset": dataset, "seed": s})
    summary = {"seeds": seeds}
    for dataset, vals in per.items():
        for key, v in vals.items():
            summary[f"{dataset}_pcc_{key}_mean"] = float(np.nanmean(v))
            summary[f"{dataset}_pcc_{key}_std"] = float(np.nanstd(v))
    summary["claim"] = ("PCC(DISCO, ARI) >= PCC(Silhouette, ARI) on moons and circles "
                        "(mean over seeds)")
    summary["claim_met"] = bool(all(
        summary[f"{d}_pcc_disco_mean"] >= summary[f"{d}_pcc_silhouette_mean"]
        for d in ("moons", "circles")))
    return Study(runs, summary)
