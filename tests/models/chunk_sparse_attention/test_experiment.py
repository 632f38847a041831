"""The comparison's summary (experiment.compare) on constructed metrics."""
import math

from models.chunk_sparse_attention.experiment import compare


def _m(acc_1x, acc_16x):
    return {"accuracy_L256": acc_1x, "accuracy_L4096": acc_16x}


def test_claim_met():
    s = compare({"hsa": _m(0.8, 0.72), "full": _m(0.8, 0.3), "meanpool": _m(0.8, 0.5),
                 "dense": _m(0.7, 0.7)}, 256)
    # hsa 0.72 / 0.8 = 0.9 >= 0.8; full 0.3 / 0.8 = 0.375 < 0.8; both ablations below 0.72
    assert s["retention_16x"]["hsa"] == 0.72 / 0.8
    assert s["checks"] == {"hsa_keeps_80pct_at_16x": True, "full_collapses_at_16x": True,
                           "meanpool_worse_at_16x": True, "dense_worse_at_16x": True}
    assert s["claim_met"] is True and s["train_len"] == 256


def test_claim_not_met_and_missing_lengths():
    s = compare({"hsa": _m(0.8, 0.6), "full": _m(0.5, 0.5), "no_cls": _m(0.9, 0.7)}, 256)
    # hsa 0.6 / 0.8 = 0.75 < 0.8; full keeps 1.0; no_cls 0.7 > 0.6 is not worse
    assert s["checks"] == {"hsa_keeps_80pct_at_16x": False, "full_collapses_at_16x": False,
                           "no_cls_worse_at_16x": False}
    assert s["claim_met"] is False
    # a run without 16x: no retention, no checks, claim not met
    s = compare({"hsa": {"accuracy_L512": 0.5}}, 512)
    assert math.isnan(s["retention_16x"]["hsa"]) and s["checks"] == {}
    assert s["claim_met"] is False
