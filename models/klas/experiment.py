"""KLAS's claims against its baselines, read off one run of the pipeline (``model.py``).

The run already holds both comparisons the paper makes (every stitch is measured, so
rankings and selections can be judged against ground truth):

1. ranking: Spearman rho of the KLAS stitch score (-Gamma) and of linear CKA with the
   stitched accuracy after fine-tuning, over every stitch;
2. selection: the accuracy-FLOPs frontier (area under it, anchors included) after one
   SN-Net supernet fine-tune per selection, KLAS's against SN-Net's heuristic's.
"""
from __future__ import annotations

from models.registry import Progress, Study


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """One run of the card at ``preset``; the summary says which claims hold."""
    from models import runner
    run = runner.run("klas", profile=profiles.get("gpu"), preset=preset, seed=seed,
                     progress=progress)
    m = run.metrics
    summary = {"spearman_klas_vs_acc_ft": m["spearman_klas_gamma_vs_acc_ft"],
               "spearman_cka_vs_acc_ft": m["spearman_cka_vs_acc_ft"],
               "spearman_kl_omega_vs_acc_ft": m["spearman_kl_omega_vs_acc_ft"],
               "supernet_auc_klas": m["supernet_auc_klas"],
               "supernet_auc_snnet": m["supernet_auc_snnet"],
               "ranks_better_than_cka": m["spearman_klas_gamma_vs_acc_ft"]
               > m["spearman_cka_vs_acc_ft"],
               "frontier_at_least_snnet": m["supernet_auc_klas"] >= m["supernet_auc_snnet"],
               "claim": "the KL stitch score ranks stitches better than CKA, and KLAS's "
                        "frontier after supernet fine-tuning is at least SN-Net's"}
    summary["claim_met"] = bool(summary["ranks_better_than_cka"]
                                and summary["frontier_at_least_snnet"])
    return Study({"klas": run}, summary)
