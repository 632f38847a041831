"""The study's summary on hand-made rows: Spearman per family, representativeness, task
alignment, the coverage and artifact checks."""
import math

import pytest

from models.geo_inr_id import experiment as X


def row(group, fam, res, seed, **m):
    base = {k: 1.0 for k in X.ROW_METRICS}
    return {"group": group, "family": fam, "resolution": float(res), "seed": seed,
            "cap_boost": m.pop("cap_boost", 1.0), **base, **m}


def test_summary_reads_the_checks():
    rows = []
    for fam in ("sh", "rff"):
        for i, res in enumerate(X.RESOLUTIONS[fam]):
            for s in (0, 1):
                # FisherS rises with resolution in both families, R^2 with FisherS, the
                # activation ID falls as R^2 rises
                rows.append(row("resolution", fam, res, s, fishers=3.0 + i + 0.1 * s,
                                mlp_r2=0.5 + 0.1 * i + (0.05 if fam == "rff" else 0),
                                probe_activation_twonn=5.0 - i - (0.5 if fam == "rff" else 0)))
    rows += [row("coverage", "sh", 10, s, cap_boost=b, local_id_in_cap=3.0 + 0.1 * b,
                 local_id_out_cap=3.0) for b in (1.0, 10.0) for s in (0, 1)]
    rows += [row("artifact", "grid", 4, s, local_id_lon_peak=p, local_id_lon_power_at_base=f)
             for s, p, f in ((0, 4, 0.9), (1, 5, 0.6))]
    out = X.summarize(rows)
    assert out["resolution_rho_fishers"] == {"rff": 1.0, "sh": 1.0}
    assert out["encoders"]["sh/10"]["fishers"]["mean"] == pytest.approx(5.05)
    assert out["encoders"]["sh/10"]["fishers"]["std"] == pytest.approx(0.05)
    # across the 8 encoders FisherS means are 3.05, 4.05, 5.05, 6.05 in both families (tied
    # pairs: ranks 1.5, 3.5, 5.5, 7.5), MLP R^2 sh 0.5-0.8, rff 0.55-0.85 (ranks sh 1, 3,
    # 5, 7; rff 2, 4, 6, 8). Deviations from the mean rank 4.5: FisherS -3, -1, 1, 3 twice
    # (squares 40), R^2 1..8 (squares 42); products rff 7.5 + 0.5 + 1.5 + 10.5 = 20, sh
    # 10.5 + 1.5 + 0.5 + 7.5 = 20: rho = 40 / sqrt(40 x 42) = sqrt(20 / 21) = 0.9759
    assert out["representativeness_rho_fishers_mlp_r2"] == pytest.approx(math.sqrt(20 / 21))
    assert out["representativeness_rho_per_family"] == {"rff": 1.0, "sh": 1.0}
    # activation TwoNN sh 5, 4, 3, 2 and rff 4.5, 3.5, 2.5, 1.5: ranks sh 8, 6, 4, 2, rff
    # 7, 5, 3, 1, against R^2 ranks sh 1, 3, 5, 7, rff 2, 4, 6, 8: every pair sums to 9, a
    # perfectly reversed order, rho = -1
    assert out["task_alignment_rho_act_twonn_mlp_r2"] == pytest.approx(-1.0)
    # boost 10: in - out = 1.0; boost 1: 0.1
    assert out["coverage_in_minus_out"]["boost10"]["mean"] == pytest.approx(1.0)
    assert out["artifact_lon_peaks"] == [4, 5]
    # 5 is within 4 +- 1 but not a multiple of 4
    assert out["checks"].pop("artifact_periodic") is False
    assert all(out["checks"].values())


def test_rho_is_nan_for_a_constant_side():
    assert math.isnan(X.rho([1, 2, 3], [1, 1, 1]))
    assert X.rho([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)


def test_cells_cover_every_resolution_plus_coverage_and_artifact():
    c = X.cells(X.PLANS["full"])
    assert len(c) == 16 + 2 + 1
    assert ("artifact", "grid", 4.0, {"grid_base": 4, "eval_region": "sphere"}) in c


@pytest.mark.slow
def test_quick_study_runs_and_reads_the_resolution_check():
    # 11 cells x 3 seeds, uncounted, 1000 land points each (113 s on one thread, load ~6)
    from models import runner
    study = runner.study("geo_inr_id", preset="quick")
    s = study.summary
    assert len(study.runs) == 33 and len(s["rows"]) == 33
    # two resolutions per family: rho is +-1; the bench's four-resolution run reads 1.0
    assert set(s["resolution_rho_fishers"]) == {"sh", "rff", "grid", "siren"}
    # (scipy's rho of two pairs is 1 - 1e-16, hence approx)
    assert all(v == pytest.approx(1.0) for v in s["resolution_rho_fishers"].values())
    assert s["checks"]["resolution_monotone"]
    assert set(s["checks"]) == {"resolution_monotone", "representativeness", "task_alignment",
                                "artifact_peak", "artifact_periodic", "coverage_bias"}
