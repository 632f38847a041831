"""The paper's comparison, summarised: length generalisation of HSA, its ablations and full
attention (Leng et al., arXiv:2510.17196, Sec. 5: the ablations of the chunk encoder, the
CLS landmark, the bypassing residual and enforced selection sparsity).

``experiment`` trains each variant through the runner and ``compare`` turns their metrics
into the claims' checks; ``bench/chunk_sparse_attention.py`` prints
the same table with its cost measurements.
"""
from __future__ import annotations

from models.chunk_sparse_attention.card import DATASET, VARIANTS, retention_16x, variant_overrides
from models.registry import Progress, Study


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """The method, its four ablations and full attention at ``preset`` from run seed
    ``seed``, each through the runner, summarised by :func:`compare`."""
    from models import runner
    base = runner.make_config("chunk_sparse_attention", preset, DATASET, seed)
    runs = {}
    for name in VARIANTS:
        runs[name] = runner.run("chunk_sparse_attention", profile=profiles.get("gpu"),
                                dataset=DATASET, preset=preset, seed=seed,
                                overrides=variant_overrides(name, base), progress=progress)
    return Study(runs, compare({k: r.metrics for k, r in runs.items()}, base.train_len))


def compare(metrics: dict[str, dict[str, float]], train_len: int) -> dict:
    """Checks of the claims from ``{variant: metrics}``.

    ``hsa_keeps_80pct_at_16x``: retention (accuracy at 16x / at 1x) >= 0.8;
    ``full_collapses_at_16x``: the full-attention baseline's retention < 0.8;
    ``<ablation>_worse_at_16x``: the ablation's accuracy at 16x is below the method's.
    Checks whose runs are missing are left out.
    """
    far = f"accuracy_L{16 * train_len}"
    summary: dict = {"train_len": train_len, "retention_16x": {}, "checks": {}}
    for name, m in metrics.items():
        ret = retention_16x(m, train_len)
        summary["retention_16x"][name] = float("nan") if ret is None else ret
    checks = summary["checks"]
    hsa = metrics.get("hsa")
    if hsa is not None and far in hsa:
        checks["hsa_keeps_80pct_at_16x"] = bool(summary["retention_16x"]["hsa"] >= 0.8)
        if "full" in metrics:
            checks["full_collapses_at_16x"] = bool(summary["retention_16x"]["full"] < 0.8)
        for name, m in metrics.items():
            if name not in ("hsa", "full") and far in m:
                checks[f"{name}_worse_at_16x"] = bool(m[far] < hsa[far])
    summary["claim"] = "HSA keeps >= 80% of its accuracy at 16x the training length, full " \
                       "attention does not, and every ablation is worse at 16x"
    summary["claim_met"] = bool(checks) and all(checks.values())
    return summary
