"""Activity counts, model facts and layers: recorded, summed, serialised, merged, refused."""
import h5py
import pytest

from sim.errors import LedgerError
from sim.ledger import MODEL_FACTS, Ledger

FACTS = dict(zip(MODEL_FACTS, (10, 40, 8, 6, 2), strict=True))


def _ledger() -> Ledger:
    led = Ledger()
    with led.scope("infer"):
        led.add("mac_fp32", 12)
        led.add_activity("effective_macs", 5, scope="fc1")
        led.add_activity("effective_macs", 2, scope="fc2")
        led.add_activity("dense_synops", 12)
    led.record_model("net", **FACTS)
    led.record_layer("fc1", "Linear", (1, 3), 12)
    return led


def test_activity_sums_within_scopes():
    led = _ledger()
    assert led.activity() == {"effective_macs": 7, "dense_synops": 12}   # 5 + 2
    assert led.activity("infer/fc1") == {"effective_macs": 5}
    assert led.activity("train") == {}


def test_round_trips_json_and_hdf5(tmp_path):
    led = _ledger()
    assert Ledger.from_json(led.to_json()) == led
    with h5py.File(tmp_path / "l.h5", "w") as f:
        led.to_hdf5(f.create_group("ledger"))
    with h5py.File(tmp_path / "l.h5") as f:
        back = Ledger.from_hdf5(f["ledger"])
    assert back == led
    assert back.layers() == {"fc1": {"type": "Linear", "output_shape": [1, 3],
                                     "parameters": 12}}
    assert back.models()["net"]["connection_zero_weights"] == 2


def test_merge_adds_activity_under_prefix_and_keeps_models():
    merged = Ledger().merge(_ledger(), scope="run").merge(_ledger(), scope="run")
    assert merged.activity("run/infer") == {"effective_macs": 14, "dense_synops": 24}
    assert merged.models() == {"net": FACTS}       # the same model recorded twice: once


def test_refuses_unknown_names_and_missing_facts():
    led = Ledger()
    with pytest.raises(LedgerError, match="unknown activity 'synops'"):
        led.add_activity("synops", 1)
    with pytest.raises(LedgerError, match="expected the facts"):
        led.record_model("net", parameters=3)
    with pytest.raises(LedgerError, match=">= 0"):
        led.add_activity("activations", -1)


def test_a_ledger_without_extras_serialises_as_before():
    led = Ledger()
    led.add("synop", 3)
    assert set(led.to_dict()) == {"type", "version", "scopes"}
    only_layer = Ledger()
    only_layer.record_layer("fc", "Linear", (1,), 0)
    assert Ledger().is_empty() and not only_layer.is_empty()
