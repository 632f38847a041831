"""Run files: round trip, atomic write, and clear errors for truncated or foreign files."""
import os

import h5py
import numpy as np
import pytest

import deploy.runfile as runfile
from hw_profiles.errors import RunFileError
from sim.ledger import Ledger


def _write(path, toy_gpu_path, **kw):
    led = Ledger()
    led.add("mac_fp32", 1234, scope="train/fc1/forward")
    led.add_bytes("offchip", read=99, write=11, scope="train")
    led.add_samples(7, scope="train")
    args = dict(model="mlp", profile=toy_gpu_path, dataset="digits",
                config={"hidden": [32], "lr": 1e-3, "name": "x"},
                metrics={"test_accuracy": 0.95, "n": np.int64(3)}, ledger=led,
                traces={"train_loss": np.array([1.0, 0.5, 0.25])})
    args.update(kw)
    return runfile.write_run(path, **args), led


def test_round_trip(tmp_path, toy_gpu_path):
    path, led = _write(tmp_path / "run.h5", toy_gpu_path)
    run = runfile.read_run(path)
    assert run.model == "mlp" and run.dataset == "digits"
    assert run.profile.name == "toy-gpu"
    assert run.profile.energy_pj["mac_fp32"].value == 2.0     # snapshot, not a reference
    assert run.config == {"hidden": [32], "lr": 1e-3, "name": "x"}
    assert run.metrics == {"test_accuracy": 0.95, "n": 3.0}
    assert run.ledger == led
    np.testing.assert_array_equal(run.traces["train_loss"], [1.0, 0.5, 0.25])
    assert "numpy" in run.versions and "python" in run.versions
    # the snapshot prices exactly like the original profile
    assert run.ledger.price(run.profile).total_j == led.price(toy_gpu_path).total_j


def test_crash_during_write_leaves_no_file(tmp_path, toy_gpu_path, monkeypatch):
    def boom(self, group):
        raise RuntimeError("simulated crash while writing the ledger")
    monkeypatch.setattr(Ledger, "to_hdf5", boom)
    with pytest.raises(RuntimeError, match="simulated crash"):
        _write(tmp_path / "run.h5", toy_gpu_path)
    assert os.listdir(tmp_path) == []


def test_crash_keeps_previous_file_intact(tmp_path, toy_gpu_path, monkeypatch):
    path, led = _write(tmp_path / "run.h5", toy_gpu_path)
    monkeypatch.setattr(Ledger, "to_hdf5", lambda self, g: (_ for _ in ()).throw(OSError("disk")))
    with pytest.raises(OSError):
        _write(path, toy_gpu_path)
    assert runfile.read_run(path).ledger == led
    assert os.listdir(tmp_path) == ["run.h5"]


def test_truncated_file_rejected(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    data = path.read_bytes()
    cut = tmp_path / "cut.h5"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(RunFileError, match="cut.h5"):
        runfile.read_run(cut)


def test_foreign_hdf5_rejected(tmp_path):
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f["x"] = [1, 2, 3]
    with pytest.raises(RunFileError, match="not a neuroedge run file"):
        runfile.read_run(path)


def test_not_hdf5_rejected(tmp_path):
    path = tmp_path / "notes.h5"
    path.write_text("hello")
    with pytest.raises(RunFileError, match="not a readable HDF5 file"):
        runfile.read_run(path)


def test_future_version_rejected(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path, "a") as f:
        f.attrs["format_version"] = 99
    with pytest.raises(RunFileError,
                       match=r"format version 99; this neuroedge reads versions \(1, 2\)$"):
        runfile.read_run(path)


def test_missing_group_is_corrupt(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path, "a") as f:
        del f["ledger"]
    with pytest.raises(RunFileError, match="corrupt"):
        runfile.read_run(path)


def test_missing_file_and_directory(tmp_path, toy_gpu_path):
    with pytest.raises(RunFileError, match="does not exist"):
        runfile.read_run(tmp_path / "nope.h5")
    with pytest.raises(RunFileError, match="directory .* does not exist"):
        _write(tmp_path / "no" / "run.h5", toy_gpu_path)


def test_non_scalar_metric_rejected(tmp_path, toy_gpu_path):
    with pytest.raises(RunFileError, match="metric 'curve'"):
        _write(tmp_path / "run.h5", toy_gpu_path, metrics={"curve": [1, 2]})
    assert os.listdir(tmp_path) == []
