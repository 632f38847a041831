"""BEP against the local rule (the card's experiment), through the runner."""
from pathlib import Path

import pytest

from models import runner
from models.bep import experiment


def test_study_runs_bep_and_the_local_rule_on_the_same_seeds(monkeypatch):
    monkeypatch.setattr(experiment, "SEEDS", {"quick": 1, "full": 1})
    # QAT's two runs take ~150 s each on the loaded 2-core machine: the slow test below runs
    # them; here a stand-in returns each rate's accuracy so the summary's wiring is checked
    qat = {1e-3: 0.284, 1e-2: 0.864}   # the real quick runs of seed 0 (measured)
    monkeypatch.setattr(experiment, "qat_accuracy", lambda data, cfg, lr: qat[lr])
    st = runner.study("bep", preset="quick", seed=0)
    assert list(st.runs) == ["bep-seed0", "local-seed0"]
    bep, local = st.runs["bep-seed0"], st.runs["local-seed0"]
    assert bep.config["local"] is False and local.config["local"] is True
    assert bep.dataset == local.dataset == "random-prototypes"
    # the BEP run is the card's default quick run (seed 0): 1728 of the 2000 test samples
    # right, a regression pin of the run under named seed streams (1730 with the ad-hoc
    # offsets before issue 28)
    assert bep.metrics["test_accuracy"] == 1728 / 2000
    s = st.summary
    assert s["bep_minus_local_pts"] == pytest.approx(
        100 * (bep.metrics["test_accuracy"] - local.metrics["test_accuracy"]))
    # the QAT half is checked too: QAT at both rates on the same seed, BEP must beat each
    assert set(s["vs"]) == {"local", "qat_lr0.001", "qat_lr0.01"}
    # one seed: each mean is that seed's accuracy; QAT's the stand-in's values set above
    assert s["accuracy"] == {"bep": 1728 / 2000, "local": local.metrics["test_accuracy"],
                             "qat_lr0.001": 0.284, "qat_lr0.01": 0.864}
    for name, v in s["vs"].items():
        assert v["minus_pts"] == pytest.approx(100 * (s["accuracy"]["bep"]
                                                      - s["accuracy"][name]))
    assert s["beats_qat"] == (s["vs"]["qat_lr0.001"]["holds"] and s["vs"]["qat_lr0.01"]["holds"])
    # BEP 0.864 vs QAT 0.284 (lr 1e-3): +58 points, holds; vs 0.864 (lr 1e-2): 0 points, not
    # ahead on the one seed -> BEP does not beat QAT, the claim is not met
    assert s["vs"]["qat_lr0.001"]["holds"] and not s["vs"]["qat_lr0.01"]["holds"]
    assert s["beats_qat"] is False and s["claim_met"] is False
    # 1 seed: ahead on ceil(2/3) = 1 of 1 and by > 0.5 points
    assert s["vs"]["local"]["holds"] == (s["bep_minus_local_pts"] > 0.5) and s["seeds"] == 1
    assert s["claim_met"] == (s["beats_local"] and s["beats_qat"])


def test_beats_needs_k_of_n_seeds_and_a_margin():
    # differences 2, 1, -1 points: ahead on 2 of 3 (ceil(2) needed), mean 0.67 > 0.5
    assert experiment.beats([0.82, 0.81, 0.79], [0.80, 0.80, 0.80])["holds"]
    # 2, 0.2, -1.5: 2 of 3 ahead but mean 0.23 <= 0.5 -> does not hold
    assert not experiment.beats([0.82, 0.802, 0.785], [0.80, 0.80, 0.80])["holds"]
    # 3, -1, -1: mean +0.33 and only 1 of 3 ahead
    assert not experiment.beats([0.83, 0.79, 0.79], [0.80, 0.80, 0.80])["holds"]


@pytest.mark.slow
def test_quick_study_bep_beats_the_local_rule():
    st = runner.study("bep", preset="quick")
    # BEP beats the local rule; against QAT at lr 1e-2 the bench (K = 64) has BEP behind, so
    # the claim is not asserted, only that both halves were checked
    assert st.summary["seeds"] == 3 and st.summary["beats_local"], st.summary
    assert len(st.summary["per_seed"]["qat_lr0.01"]) == 3
    # the room README's seed-0 figures are this study's first seed, at the printed precision
    # (BEP 1728 / 2000 = 86.4%; QAT 0.284 and 0.864 measured 2026-12-06; issue 33)
    first = {k: f"{v[0]:.1%}" for k, v in st.summary["per_seed"].items()}
    readme = (Path(__file__).resolve().parents[3] / "models" / "bep" / "README.md").read_text()
    assert (f"(quick seed 0: BEP {first['bep']}, QAT {first['qat_lr0.001']} at 1e-3 and "
            f"{first['qat_lr0.01']} at 1e-2") in readme
