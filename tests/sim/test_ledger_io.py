"""Ledger serialisation (sim/ledger_io.py): dict, JSON and HDF5 round trips and refusals."""
import h5py
import pytest

from sim import ledger_io
from sim.errors import LedgerError
from sim.ledger import Ledger
from tests.sim.test_ledger import _sample_ledger


def test_json_round_trip():
    led = _sample_ledger()
    back = Ledger.from_json(led.to_json())
    assert back == led
    assert back.samples() == led.samples() and back.uncounted() == led.uncounted()


def test_hdf5_round_trip(tmp_path):
    led = _sample_ledger()
    led.add("mac_fp32", 2**40, scope="big")
    with h5py.File(tmp_path / "l.h5", "w") as f:
        led.to_hdf5(f.create_group("ledger"))
    with h5py.File(tmp_path / "l.h5", "r") as f:
        back = Ledger.from_hdf5(f["ledger"])
    assert back == led
    assert back.total_ops("big") == {"mac_fp32": 2**40}


def test_hdf5_rejects_counts_beyond_int64(tmp_path):
    led = Ledger()
    led.add("synop", 2**63)
    with h5py.File(tmp_path / "l.h5", "w") as f, pytest.raises(LedgerError, match="int64"):
        led.to_hdf5(f.create_group("ledger"))


def test_from_dict_rejects_foreign_and_versions():
    with pytest.raises(LedgerError, match="not a serialised ledger"):
        Ledger.from_dict({"type": "other"})
    data = _sample_ledger().to_dict()
    data["version"] = 99
    with pytest.raises(LedgerError, match="version 99"):
        Ledger.from_dict(data)
    with pytest.raises(LedgerError, match="not valid JSON"):
        Ledger.from_json("{")


def test_hdf5_reads_back_the_dict_form_in_file_column_order(tmp_path):
    led = _sample_ledger()
    led.add_bytes("local", read=8, scope="train/fc1")
    with h5py.File(tmp_path / "l.h5", "w") as f:
        led.to_hdf5(f.create_group("ledger"))
    with h5py.File(tmp_path / "l.h5") as f:
        data = ledger_io.read_hdf5(f["ledger"])
        cols = [c.decode() if isinstance(c, bytes) else c for c in f["ledger"]["byte_columns"]]
    assert Ledger.from_dict(data) == led
    # bytes come back in the file's column order (pricing adds them in that order), not in
    # to_dict's sorted order: the same figures as before the I/O moved out of ledger.py
    fc1 = next(e for e in data["scopes"] if e["scope"] == "train/fc1")
    assert list(fc1["bytes"]) == [c for c in cols if c in fc1["bytes"]]
    assert fc1["bytes"] == {"offchip:read": 400, "offchip:write": 40, "local:read": 8}


@pytest.mark.parametrize("attr, match", [
    ("footprint", r"corrupt footprint attribute: expected a JSON object"),
    ("extras", r"corrupt extras attribute \(activity, models, layers\): expected a JSON "
               r"object, got list"),
])
def test_hdf5_optional_attribute_that_is_not_an_object_is_refused(tmp_path, attr, match):
    with h5py.File(tmp_path / "l.h5", "w") as f:
        g = f.create_group("ledger")
        _sample_ledger().to_hdf5(g)
        g.attrs[attr] = "[1, 2]"
        with pytest.raises(LedgerError, match=r"^HDF5 ledger in '/ledger' has a " + match):
            Ledger.from_hdf5(g)
