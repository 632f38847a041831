"""The step-timing record (sim/step_timing.py): sums, serialised form, and what it refuses."""
import json

import numpy as np
import pytest

from sim.errors import LedgerError
from sim.ledger import Ledger
from sim.step_timing import COL, TIMED_OPS, StepTiming


def _record(profile="x", key="k1", rows=2, synops=0):
    ops = np.zeros((rows, len(TIMED_OPS)), np.int64)
    ops[1, COL["synop"]] = synops
    return StepTiming(profile, key, 1, 0.0, 1e-7, 1e-7, 0.0, 0, ops)


def test_timing_records_of_two_profiles_do_not_sum():
    a = StepTiming("x", "k1", 1, 0.0, 1e-7, 1e-7, 0.0, 0, np.zeros((2, 6), np.int64))
    b = StepTiming("y", "k2", 1, 0.0, 1e-7, 1e-7, 0.0, 0, np.zeros((2, 6), np.int64))
    led = Ledger()
    led.add_timing(a, scope="s")
    with pytest.raises(LedgerError, match="cannot be summed"):
        led.add_timing(b, scope="s")
    bad = json.loads(json.dumps(a.to_dict()))
    bad["steps"] = -1
    with pytest.raises(LedgerError, match="negative"):
        StepTiming.from_dict(bad)


def test_plus_sums_every_field_and_pads_the_core_rows():
    a, b = _record(rows=2, synops=3), _record(rows=3, synops=4)
    s = a.plus(b)
    # 1 + 1 steps; 1e-7 + 1e-7 s; core tables padded to the larger: 3 rows
    assert (s.steps, s.step_s, s.paced_s) == (2, pytest.approx(2e-7), pytest.approx(2e-7))
    assert s.core_ops.shape == (3, len(TIMED_OPS))
    assert s.covered() == {"synop": 7}        # 3 + 4 synops on core 0 (row 1)


def test_dict_form_round_trips_and_names_its_columns():
    rec = _record(synops=5)
    d = json.loads(json.dumps(rec.to_dict()))
    assert d["columns"] == list(TIMED_OPS)
    back = StepTiming.from_dict(d)
    assert back == rec and np.array_equal(back.core_ops, rec.core_ops)
    d["columns"] = ["synop"]
    with pytest.raises(LedgerError, match=r"step timing columns \['synop'\]"):
        StepTiming.from_dict(d)
