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


def test_streamed_reads_add_up_over_blocks_and_round_trip(tmp_path):
    led = Ledger()
    led.add_footprint(writable=100, read_only=5_000, streamed=4_000, streamed_read=256,
                      scope="train")
    led.add_footprint(writable=100, read_only=5_000, streamed=4_000, streamed_read=512,
                      scope="train")
    # sizes are maxima, reads a total: 256 + 512 = 768 B gathered over the 2 blocks
    assert led.footprints()["train"] == {"writable": 100, "read_only": 5_000, "blocks": 2,
                                         "streamed": 4_000, "streamed_read": 768}
    assert Ledger.from_dict(led.to_dict()) == led
    with h5py.File(tmp_path / "l.h5", "w") as f:
        led.to_hdf5(f.create_group("ledger"))
    with h5py.File(tmp_path / "l.h5", "r") as f:
        assert Ledger.from_hdf5(f["ledger"]).footprints() == led.footprints()


def test_ledger_without_streamed_reads_keeps_its_old_meaning():
    """A ledger written before streamed reads were recorded: every block read all of its
    streamed data (what pricing assumed then): 3 blocks x 4,000 B = 12,000 B."""
    fp = {"writable": 1, "read_only": 5_000, "streamed": 4_000, "blocks": 3}
    data = {"type": "neuroedge.Ledger", "version": 1, "scopes": [], "footprint": {"train": fp}}
    assert Ledger.from_dict(data).footprints()["train"]["streamed_read"] == 12_000


def test_streamed_read_beyond_the_streamed_data_is_refused():
    with pytest.raises(LedgerError, match="streamed read bytes = 5000 > streamed bytes = 4000"):
        Ledger().add_footprint(read_only=5_000, streamed=4_000, streamed_read=5_000)
    fp = {"writable": 1, "read_only": 5_000, "streamed": 4_000, "streamed_read": 9_000,
          "blocks": 2}
    data = {"type": "neuroedge.Ledger", "version": 1, "scopes": [], "footprint": {"train": fp}}
    with pytest.raises(LedgerError, match="streamed_read = 9000 > streamed 4000 x 2 blocks"):
        Ledger.from_dict(data)
