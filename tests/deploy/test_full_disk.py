"""A full disk (issue 32): every writer ends in one OutputError line naming the output and
the space needed, leaves no temporary, and the interpreter survives (HDF5 is built in
memory, so h5py never sees the failing write)."""
import errno
import os

import pytest

import deploy.outputs as outputs
import deploy.runfile as runfile
from deploy.errors import OutputError
from hw_profiles import load
from models.registry import RunResult
from sim.ledger import Ledger
from sim.traces import curve


def _full(*_args, **_kw):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _result(toy_gpu_path):
    return RunResult(model="mlp", profile=load(toy_gpu_path), dataset="digits", config={},
                     metrics={"test_accuracy": 0.9}, ledger=Ledger(),
                     traces={"loss": curve([1.0, 0.5])})


def _one_line(info, path, *words):
    msg = str(info.value)
    assert "\n" not in msg and repr(str(path)) in msg
    for word in ("No space left on device", *words):
        assert word in msg, msg


def test_run_file_on_a_full_disk(tmp_path, toy_gpu_path, monkeypatch):
    size = len(_bytes_of_a_run(tmp_path, toy_gpu_path))
    monkeypatch.setattr(outputs.os, "fsync", _full)
    dest = tmp_path / "run.h5"
    with pytest.raises(OutputError) as info:
        runfile.write_run(dest, _result(toy_gpu_path))
    _one_line(info, dest, f"it needs {size:,} bytes", "free there")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["probe.h5"]   # no temporary


def _bytes_of_a_run(tmp_path, toy_gpu_path):
    # the same content written for real: its size is what the full disk needed (the
    # creation time is the only field that changes, and its text has a fixed width)
    probe = tmp_path / "probe.h5"
    runfile.write_run(probe, _result(toy_gpu_path))
    return probe.read_bytes()


def test_text_writer_on_a_full_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(outputs.os, "fsync", _full)
    dest = tmp_path / "report.json"
    with pytest.raises(OutputError) as info:
        outputs.write_text(dest, "x" * 1234, option="--json")
    _one_line(info, dest, "it needs 1,234 bytes", "another --json")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("exc", [
    OSError(errno.ENOSPC, "No space left on device"),
    OSError(errno.EIO, "Input/output error"),
    # h5py keeps only HDF5's text, with the errno inside it
    OSError("Can't write data (file write failed: time = Sat, filename = 'x', file "
            "descriptor = 5, errno = 28, error message = 'No space left on device')"),
])
def test_a_writer_that_hits_a_full_disk(tmp_path, exc):
    dest = tmp_path / "plot.html"
    with pytest.raises(OutputError) as info, outputs.write_file(dest) as tmp:
        tmp.write_text("partial")
        raise exc
    assert "\n" not in str(info.value) and "nothing was written" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_other_os_errors_are_not_called_a_full_disk(tmp_path):
    with pytest.raises(PermissionError), outputs.write_file(tmp_path / "x.txt"):
        raise PermissionError(errno.EACCES, "Permission denied")
    assert list(tmp_path.iterdir()) == []


def test_directory_export_on_a_full_disk(tmp_path):
    dest = tmp_path / "c-export"
    with pytest.raises(OutputError) as info, outputs.write_directory(dest) as tmp:
        (tmp / "model.c").write_text("int x;")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert "\n" not in str(info.value) and repr(str(dest)) in str(info.value)
    assert list(tmp_path.iterdir()) == []
