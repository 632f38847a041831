"""Ledger: scoped counts, merge, flush from engine arrays (serialisation: test_ledger_io.py)."""
import numpy as np
import pytest

from hw_profiles.ops import OP_CODES, OP_NAMES
from sim.errors import LedgerError
from sim.ledger import Ledger


def _sample_ledger() -> Ledger:
    led = Ledger()
    with led.scope("train"):
        with led.scope("fc1"):
            led.add("mac_fp32", 1000)
            led.add_bytes("offchip", read=400, write=40)
        led.add("flop_fp32", 7)
        led.add_samples(10)
        led.add_uncounted("aten.weird_op", 2)
    led.add("synop", 12, scope="infer/layer2")
    led.add_samples(3, scope="infer")
    return led


def test_scopes_nest_and_totals_include_subscopes():
    led = _sample_ledger()
    assert led.scopes() == ["infer", "infer/layer2", "train", "train/fc1"]
    assert led.ops("train") == {"flop_fp32": 7}
    assert led.total_ops("train") == {"mac_fp32": 1000, "flop_fp32": 7}
    assert led.total_ops() == {"mac_fp32": 1000, "flop_fp32": 7, "synop": 12}
    assert led.total_bytes() == {("offchip", "read"): 400, ("offchip", "write"): 40}
    assert led.samples() == {"train": 10, "infer": 3}
    assert led.uncounted() == {"aten.weird_op": 2}
    # 'trainX' is not inside 'train'
    led.add("mac_fp32", 5, scope="trainX")
    assert led.total_ops("train")["mac_fp32"] == 1000


def test_counts_accumulate():
    led = Ledger()
    led.add("spike", 3, scope="a")
    led.add("spike", 4, scope="a")
    assert led.ops("a") == {"spike": 7}


@pytest.mark.parametrize("op,count,match", [
    ("synopz", 1, "unknown op 'synopz'"),
    ("synop", -1, "counts must be >= 0"),
    ("synop", 1.5, "counts must be integers"),
    ("synop", True, "counts must be integers"),
])
def test_bad_counts_rejected(op, count, match):
    with pytest.raises(LedgerError, match=match):
        Ledger().add(op, count)


def test_bad_scope_and_level_rejected():
    led = Ledger()
    with pytest.raises(LedgerError, match="scope 'a//b'"):
        led.add("synop", 1, scope="a//b")
    with pytest.raises(LedgerError, match="unknown memory level 'l7'"):
        led.add_bytes("l7", read=1)


def test_flush_engine_array():
    led = Ledger()
    counts = np.zeros(len(OP_NAMES), dtype=np.int64)
    counts[OP_CODES["synop"]] = 4 * 3  # 4 spikes x fan-out 3
    counts[OP_CODES["spike"]] = 4
    led.flush(counts, scope="step")
    led.flush(counts, scope="step")
    assert led.ops("step") == {"synop": 24, "spike": 8}
    with pytest.raises(LedgerError, match="shape"):
        led.flush(np.zeros(3, dtype=np.int64))
    counts[0] = -1
    with pytest.raises(LedgerError, match="negative"):
        led.flush(counts)


def test_merge_adds_and_prefixes():
    a, b = _sample_ledger(), _sample_ledger()
    both = a + b
    assert both.total_ops()["mac_fp32"] == 2000
    assert both.samples() == {"train": 20, "infer": 6}
    assert a.total_ops()["mac_fp32"] == 1000  # operands untouched
    c = Ledger().merge(a, scope="run1")
    assert c.total_ops("run1/train") == {"mac_fp32": 1000, "flop_fp32": 7}
