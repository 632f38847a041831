"""Hostile run files (issue 32): nothing read that the file does not hold, nothing
allocated without bound. Each case edits a valid run file the way an attacker could."""
import h5py
import numpy as np
import pytest

import deploy.runfile as runfile
from deploy.errors import RunFileError
from hw_profiles import load
from models.registry import RunResult
from sim.ledger import Ledger
from sim.traces import curve


def _valid(tmp_path, toy_gpu_path):
    result = RunResult(model="mlp", profile=load(toy_gpu_path), dataset="digits",
                       config={"lr": 0.1}, metrics={"test_acc": 0.9}, ledger=Ledger(),
                       traces={"loss": curve([1.0, 0.5])})
    path = tmp_path / "run.h5"
    runfile.write_run(path, result)
    return path


def _refused(path, *words):
    with pytest.raises(RunFileError) as info:
        runfile.read_run(path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg
    for word in words:
        assert word in msg, msg


def test_external_raw_storage_is_not_read(tmp_path, toy_gpu_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"root:x:0:0\n" * 10)
    path = _valid(tmp_path, toy_gpu_path)
    with h5py.File(path, "a") as f:
        del f["traces/loss"]
        ds = f["traces"].create_dataset("loss", shape=(110,), dtype="u1",
                                        external=[(str(secret), 0, 110)])
        ds.attrs["kind"] = "curve"
    _refused(path, "/traces/loss", "external raw storage")


def test_virtual_dataset_is_refused(tmp_path, toy_gpu_path):
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as g:
        g["x"] = np.arange(4.0)
    path = _valid(tmp_path, toy_gpu_path)
    with h5py.File(path, "a") as f:
        del f["traces/loss"]
        layout = h5py.VirtualLayout(shape=(4,), dtype="f8")
        layout[:] = h5py.VirtualSource(str(other), "x", shape=(4,))
        f["traces"].create_virtual_dataset("loss", layout).attrs["kind"] = "curve"
    _refused(path, "/traces/loss", "virtual")


@pytest.mark.parametrize("make", [
    lambda f: f["traces"].__setitem__("loop", h5py.SoftLink("/traces/loop")),
    lambda f: f["traces"].__setitem__("ext", h5py.ExternalLink("/etc/hostname", "/")),
])
def test_soft_and_external_links_are_not_followed(tmp_path, toy_gpu_path, make):
    path = _valid(tmp_path, toy_gpu_path)
    with h5py.File(path, "a") as f:
        make(f)
    _refused(path, "Link", "not followed")


def test_decompression_bomb_is_refused_before_reading(tmp_path, toy_gpu_path):
    path = _valid(tmp_path, toy_gpu_path)
    with h5py.File(path, "a") as f:
        del f["traces/loss"]
        # 40M float64 zeros = 320 MB logical; gzip chunks of zeros make the file ~0.4 MB,
        # so the limit is max(256 MiB, 100 x ~0.4 MB) = 256 MiB < 305 MiB: refused
        ds = f["traces"].create_dataset("loss", shape=(40_000_000,), dtype="f8",
                                        chunks=(1_000_000,), compression="gzip")
        ds.attrs["kind"] = "curve"
    assert path.stat().st_size < 2 * 2**20
    _refused(path, "/traces/loss", "MiB", "limit")


def test_valid_file_still_reads(tmp_path, toy_gpu_path):
    path = _valid(tmp_path, toy_gpu_path)
    assert runfile.read_run(path).metrics == {"test_acc": 0.9}


def _trained_run(tmp_path, toy_gpu_path, meta, arrays):
    from models.registry import Trained
    result = RunResult(model="mlp", profile=load(toy_gpu_path), dataset="digits",
                       config={}, metrics={"test_accuracy": 0.9}, ledger=Ledger(), traces={},
                       trained=Trained(arrays, meta))
    path = tmp_path / "run.h5"
    runfile.write_run(path, result)
    return path


@pytest.mark.parametrize("meta, arrays, words", [
    # 2 x 3 + 3 = 9 stored elements: a 1e6-wide layer cannot be rebuilt from them
    ({"sizes": [1_000_000, 1_000_000]}, {"param/0.weight": np.ones((3, 2)),
                                         "param/0.bias": np.ones(3)}, ["sizes", "0..9"]),
    ({"sizes": [2, -3]}, {"param/0.weight": np.ones((3, 2))}, ["sizes", "0..6"]),
    ({"sizes": [2, 3]}, {"param/0.weight": np.array([[1.0, np.nan]] * 3)},
     ["'param/0.weight'", "NaN"]),
    ({"sizes": "abc"}, {"param/0.weight": np.ones((3, 2))}, ["does not rebuild", "mlp"]),
    ({}, {"param/0.weight": np.ones((3, 2))}, ["does not rebuild", "KeyError"]),
])
def test_export_from_a_hostile_trained_state_is_one_line(tmp_path, toy_gpu_path, meta,
                                                         arrays, words):
    from deploy.errors import ExportError
    from deploy.export import export_run
    path = _trained_run(tmp_path, toy_gpu_path, meta, arrays)
    out = tmp_path / "out.onnx"
    with pytest.raises(ExportError) as info:
        export_run(path, "onnx", out)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg
    for word in words:
        assert word in msg, msg
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]   # nothing written


def test_report_escapes_control_characters_from_the_file(tmp_path, toy_gpu_path, capsys):
    from deploy.cli import main
    path = _valid(tmp_path, toy_gpu_path)
    with h5py.File(path, "a") as f:
        f.attrs["dataset"] = "digits\x1b[2J\rgone"
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out
    assert "digits\\x1b[2J" in out    # the escape is shown, not obeyed
