"""Ledger footprints: recorded per block, kept by every serialisation path and by merge."""
import h5py
import pytest

from sim.errors import LedgerError
from sim.ledger import Ledger


def _led() -> Ledger:
    led = Ledger()
    led.add("int_add", 3, scope="train")
    led.add_footprint(writable=100, read_only=50, scope="train")
    led.add_footprint(writable=80, read_only=70, scope="train")   # max of each, 2 blocks
    return led


def test_footprint_keeps_max_and_counts_blocks():
    assert _led().footprints() == {"train": {"writable": 100, "read_only": 70, "blocks": 2}}


def test_footprint_round_trips(tmp_path):
    led = _led()
    assert Ledger.from_dict(led.to_dict()) == led
    assert Ledger.from_json(led.to_json()).footprints() == led.footprints()
    with h5py.File(tmp_path / "l.h5", "w") as f:
        led.to_hdf5(f.create_group("ledger"))
    with h5py.File(tmp_path / "l.h5", "r") as f:
        assert Ledger.from_hdf5(f["ledger"]).footprints() == led.footprints()


def test_ledger_without_footprint_serialises_as_before():
    led = Ledger()
    led.add("int_add", 1)
    assert "footprint" not in led.to_dict()


def test_merge_prefixes_footprints():
    out = Ledger().merge(_led(), scope="run1")
    assert out.footprints() == {"run1/train": {"writable": 100, "read_only": 70, "blocks": 2}}


def test_negative_footprint_rejected():
    with pytest.raises(LedgerError, match="footprint writable bytes = -1"):
        Ledger().add_footprint(writable=-1)
