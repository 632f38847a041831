"""Run files: round trip, atomic write, and clear errors for truncated or foreign files."""
import dataclasses
import json
import os

import h5py
import numpy as np
import pytest

import deploy.runfile as runfile
from deploy.errors import RunFileError
from hw_profiles import load
from models.registry import RunFile, RunResult, Trained
from sim.errors import ModelError
from sim.ledger import Ledger
from sim.traces import Trace, curve


def _result(toy_gpu_path, **kw) -> RunResult:
    """A small run on the toy GPU profile; ``kw`` replaces any of its fields."""
    led = Ledger()
    led.add("mac_fp32", 1234, scope="train/fc1/forward")
    led.add_bytes("offchip", read=99, write=11, scope="train")
    led.add_samples(7, scope="train")
    fields = dict(model="mlp", profile=load(toy_gpu_path), dataset="digits",
                  config={"hidden": [32], "lr": 1e-3, "name": "x"},
                  metrics={"test_accuracy": 0.95, "n": np.int64(3)}, ledger=led,
                  traces={"train_loss": curve([1.0, 0.5, 0.25], "nats")})
    fields.update(kw)
    return RunResult(**fields)


def _write(path, toy_gpu_path, force=False, **kw):
    result = _result(toy_gpu_path, **kw)
    return runfile.write_run(path, result, force=force), result.ledger


def test_round_trip(tmp_path, toy_gpu_path):
    path, led = _write(tmp_path / "run.h5", toy_gpu_path)
    run = runfile.read_run(path)
    assert run.model == "mlp" and run.dataset == "digits"
    assert run.profile.name == "toy-gpu"
    assert run.profile.energy_pj["mac_fp32"].value == 2.0     # snapshot, not a reference
    assert run.config == {"hidden": [32], "lr": 1e-3, "name": "x"}
    assert run.metrics == {"test_accuracy": 0.95, "n": 3.0}
    assert run.ledger == led
    assert run.traces == {"train_loss": run.traces["train_loss"]}
    loss = run.traces["train_loss"]
    assert (loss.kind, loss.unit, loss.columns) == ("curve", "nats", ())
    np.testing.assert_array_equal(loss.data, [1.0, 0.5, 0.25])
    assert run.preset == "quick" and run.facts == {} and run.trained is None
    assert isinstance(run, RunResult) and isinstance(run.file, RunFile)
    assert run.file.path == str(path) and run.file.format_version == 3
    assert "numpy" in run.file.versions and "python" in run.file.versions
    assert run.file.created.endswith("+00:00")          # ISO 8601 in UTC
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
        _write(path, toy_gpu_path, force=True)   # a rewrite that crashes halfway
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
                       match=r"format version 99; this neuroedge reads versions \(1, 2, 3\)$"):
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


# -- the user's own profile is the profile used (issue 11 item 3) --------------------------
def _user_profile(tmp_path, toy_gpu_text, filename, name):
    path = tmp_path / filename
    path.write_text(toy_gpu_text.replace('name = "toy-gpu"', f'name = "{name}"', 1))
    return path


@pytest.mark.parametrize("filename,name", [("my-gpu.toml", "my-gpu"), ("a100.toml", "a100")])
def test_simulate_with_a_user_file_is_priced_with_its_own_numbers(tmp_path, toy_gpu_text,
                                                                  filename, name):
    """mlp on a user file with its own name, and on one that reuses the shipped name a100:
    the run file holds the file's numbers and its label, and prices with them."""
    from hw_profiles import load
    from models import runner
    path = _user_profile(tmp_path, toy_gpu_text, filename, name)
    prof = load(path)
    # one epoch, large batches: the numbers matter here, not the accuracy
    result = runner.run("mlp", profile=prof, dataset="digits", seed=0,
                        overrides={"epochs": 1, "batch_size": 512})
    assert result.profile is prof                      # the object flowed, never a name
    run = runfile.read_run(runfile.write_run(tmp_path / "run.h5", result))
    label = f"{name} (file: {path.resolve()})"
    assert run.profile.label == label and run.profile.name == name
    with h5py.File(tmp_path / "run.h5") as f:
        assert f.attrs["profile"] == label
    assert run.profile.energy_pj["mac_fp32"].value == 2.0          # toy-gpu: 2 pJ per MAC
    assert run.profile.memory["offchip"].read_pj_per_byte.value == 10.0
    rep = run.ledger.price(run.profile)
    assert rep.profile == label
    assert {c.unit_pj for c in rep.charges if c.item == "mac_fp32"} == {2.0}
    assert {c.unit_pj for c in rep.charges if c.item == "offchip:read"} == {10.0}
    assert rep.total_j == result.ledger.price(path).total_j
    assert rep.total_j != result.ledger.price("a100").total_j     # not the shipped numbers


def test_result_with_a_profile_name_is_refused(toy_gpu_path):
    from models.registry import RunResult
    from sim.errors import ModelError
    with pytest.raises(ModelError, match=r"^RunResult\('mlp'\): profile = 'a100' is a str; "
                                         r"pass the device's HardwareProfile \(dev.profile\)"):
        RunResult("mlp", "a100", "digits", {}, {}, Ledger())


def test_profile_changed_in_memory_is_not_snapshotted(tmp_path, toy_gpu_path):
    import dataclasses
    from types import MappingProxyType

    from hw_profiles import load
    toy = load(toy_gpu_path)
    q = dataclasses.replace(toy.energy_pj["mac_fp32"], value=3.0)
    changed = dataclasses.replace(toy, energy_pj=MappingProxyType({**toy.energy_pj,
                                                                   "mac_fp32": q}))
    with pytest.raises(RunFileError, match=r"^cannot snapshot profile 'toy-gpu \(file: .*\)': "
                                           r"its numbers differ from its document"):
        _write(tmp_path / "run.h5", toy_gpu_path, profile=changed)
    assert os.listdir(tmp_path) == []


# -- run files are verified (issue 11 item 4) --------------------------------------------
def _edit_snapshot(path, edit):
    with h5py.File(path, "a") as f:
        doc = json.loads(f["profile"].attrs["json"])
        edit(doc)
        f["profile"].attrs["json"] = json.dumps(doc)


def _one_line_error(path, match):
    with pytest.raises(RunFileError, match=match) as info:
        runfile.read_run(path)
    assert "\n" not in str(info.value)


def test_snapshot_carries_its_digest(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path) as f:
        doc = json.loads(f["profile"].attrs["json"])
        assert f["profile"].attrs["digest"] == runfile.document_digest(doc)
        fields = json.loads(f["profile"].attrs["field_digests"])
        assert f.attrs["format_version"] == 3
    assert runfile.document_digest(doc).startswith("sha256:") and len(fields) > 40
    assert fields == runfile.field_digests(doc)
    # key order does not change the digest (canonical JSON sorts keys)
    assert runfile.document_digest(dict(reversed(doc.items()))) == runfile.document_digest(doc)
    assert runfile.read_run(path).file.format_version == 3


def test_edited_snapshot_is_refused_naming_the_field(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)

    def edit(doc):   # another valid number: 2 -> 3 pJ per MAC
        doc["energy_pj"]["mac_fp32"]["value"] = 3.0
    _edit_snapshot(path, edit)
    _one_line_error(path, r"^run file '.*run.h5': profile snapshot field "
                          r"energy_pj.mac_fp32.value = 3.0 differs from the digest written with "
                          r"the run \(1 field\(s\) differ\); the snapshot was edited after the "
                          r"run. Rerun the simulation, or price the run on another profile with "
                          r"--profile$")


def test_edited_memory_entry_is_named_by_index(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    _edit_snapshot(path, lambda doc: doc["memory"][0]["read_pj_per_byte"].update(value=1.0))
    _one_line_error(path, r"profile snapshot field memory.0.read_pj_per_byte.value = 1.0 "
                          r"differs")


def test_added_field_is_named(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    _edit_snapshot(path, lambda doc: doc["energy_pj"]["mac_fp32"].update(note="cheaper"))
    _one_line_error(path, r": profile snapshot field energy_pj.mac_fp32.note was added after "
                          r"the digest was written; the snapshot was edited")


def test_edit_without_field_digests_is_a_digest_mismatch(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    _edit_snapshot(path, lambda doc: doc["static"]["power_w"].update(value=5.0))
    with h5py.File(path, "a") as f:
        del f["profile"].attrs["field_digests"]
    _one_line_error(path, r"^run file '.*run.h5': profile snapshot digest mismatch; the "
                          r"snapshot was edited after the run")


def test_edited_digest_is_a_digest_mismatch(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path, "a") as f:
        f["profile"].attrs["digest"] = "sha256:" + "0" * 64
    _one_line_error(path, r": profile snapshot digest mismatch; the snapshot was edited")


def test_edited_label_is_refused(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path, "a") as f:
        f["profile"].attrs["label"] = "a100"
    _one_line_error(path, r": profile label 'a100' does not name the snapshot's profile "
                          r"'toy-gpu' \(expected 'toy-gpu' or 'toy-gpu \(file: PATH\)'\)$")
    with h5py.File(path, "a") as f:
        f["profile"].attrs["label"] = "toy-gpu"
    _one_line_error(path, r": root attribute profile = 'toy-gpu \(file: .*toy-gpu.toml\)' "
                          r"differs from the snapshot's label 'toy-gpu'$")


def test_version_1_file_is_read_unverified(tmp_path, toy_gpu_path):
    """A file of the previous format (no label, no digest) is still read: the label is the
    profile's name and the version read is reported."""
    path, led = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path, "a") as f:
        f.attrs["format_version"] = 1
        f.attrs["profile"] = "toy-gpu"
        for k in ("label", "digest", "field_digests"):
            del f["profile"].attrs[k]
    run = runfile.read_run(path)
    assert run.file.format_version == 1 and run.profile.label == "toy-gpu"
    assert run.ledger == led


def _rewrite(path, key, data):
    with h5py.File(path, "a") as f:
        del f["ledger"][key]
        f["ledger"].create_dataset(key, data=data)


@pytest.mark.parametrize("key,data,match", [
    # _write's ledger has 2 scopes (train, train/fc1/forward); 8 byte columns (4 levels x 2)
    ("ops", np.zeros(5, np.int64), r"ops has shape \(5,\); expected \(2, \d+\) "
                                   r"\(scope_names x op_names\)"),
    ("ops", np.zeros((2, 3, 1), np.int64), r"ops has shape \(2, 3, 1\); expected \(2, \d+\)"),
    ("bytes", np.zeros((2, 1), np.int64), r"bytes has shape \(2, 1\); expected \(2, 8\) "
                                          r"\(scope_names x byte_columns\)"),
    ("ops", np.zeros((2, 3), np.float64), r"ops must be an integer array, got float64$"),
    ("samples", np.zeros(3, np.int64), r"samples has shape \(3,\); expected \(2,\) "
                                       r"\(one per scope name\)$"),
    ("samples", np.array([-1, -7], np.int64), r"samples has -7; expected >= 0, or -1 for a "
                                              r"scope without samples$"),
    ("scope_names", np.array([[b"a"], [b"b"]]), r"scope_names must be a 1-D array of "
                                                r"strings, got \|S1 shape \(2, 1\)$"),
    ("scope_names", np.array([b"train", b"train"]), r"scope_names lists 'train' twice"),
    ("byte_columns", np.array([b"offchip:read", b"disk:read"] + [b"x%d:y" % i for i in range(6)]),
     r"byte column 'disk:read'; expected LEVEL:read\|write with LEVEL one of local, shared"),
])
def test_malformed_ledger_arrays_are_one_line_errors(tmp_path, toy_gpu_path, key, data, match):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path) as f:
        assert f["ledger"]["ops"].shape[0] == 2          # scopes: train, train/fc1/forward
    _rewrite(path, key, data)
    _one_line_error(path, r"^run file '.*run.h5' is corrupt: HDF5 ledger in '/ledger': "
                    + match)


def test_malformed_uncounted_attribute(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path, "a") as f:
        f["ledger"].attrs["uncounted"] = "[1, 2]"
    _one_line_error(path, r"attribute uncounted must be a JSON object \{scope: \{op name: "
                          r"calls\}\}$")


def test_array_metric_is_a_one_line_error(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path, "a") as f:
        f["metrics"].attrs["test_accuracy"] = np.array([0.5, 0.6])
    _one_line_error(path, r"/metrics attribute test_accuracy = array\(\[0.5, 0.6\]\).*"
                          r"expected a real number")


# -- format 3: preset, facts, trained state, typed traces (issue 12 items 4, 6) -------------
def _typed_traces():
    return {
        "train_loss": curve([2.0, 1.0], "nats"),
        "spike_raster": Trace("raster", np.array([[0.001, 3], [0.002, 0]]), "s"),
        "neurons": Trace("per_core", np.array([0.5, 0.25, 1.0]), "fraction of the core's limit"),
        "prototypes": Trace("images", np.arange(12, dtype=np.float32).reshape(3, 2, 2)),
        "overlays": Trace("pictures", np.linspace(0, 1, 24).reshape(2, 2, 2, 3)),
        "routes": Trace("table", np.array([[0, 1, 1, 7], [1, 3, 2, 9]], np.int64), "",
                        ("src_core", "dst_core", "hops", "neurons")),
        "labels": Trace("table", np.array([["a", "b"], ["c", "d"]]), "", ("x", "y")),
    }


def _trained():
    return Trained({"param/0.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
                    "param/0.bias": np.array([1.5, -2.5], np.float64),
                    "words": np.array([2**63 + 5], np.uint64),
                    "mask": np.array([True, False])},
                   {"sizes": [3, 2], "note": "ok"})


def test_format_3_round_trip_of_trained_state_and_typed_traces(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path, traces=_typed_traces(),
                     preset="full", facts={"n_inputs": np.int64(64), "device": "cpu"},
                     trained=_trained())
    run = runfile.read_run(path)
    assert run.preset == "full" and run.facts == {"n_inputs": 64, "device": "cpu"}
    want = _typed_traces()
    assert list(run.traces) == list(want)            # stored in the order given
    for name, tr in want.items():
        got = run.traces[name]
        assert (got.kind, got.unit, got.columns) == (tr.kind, tr.unit, tr.columns), name
        np.testing.assert_array_equal(got.data, tr.data, err_msg=name)
        assert got.data.dtype.kind == tr.data.dtype.kind, name
    assert run.traces["labels"].data.tolist() == [["a", "b"], ["c", "d"]]
    assert isinstance(run.trained, Trained) and run.trained.meta == {"sizes": [3, 2],
                                                                     "note": "ok"}
    src = _trained().arrays
    assert sorted(run.trained.arrays) == sorted(src)   # nested names keep their slash
    for k, v in src.items():
        assert run.trained.arrays[k].dtype == v.dtype, k
        np.testing.assert_array_equal(run.trained.arrays[k], v)
    assert run.trained.arrays["words"][0] == 2**63 + 5   # uint64 survives exactly


def test_a_run_without_trained_state_has_no_trained_group(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path) as f:
        assert "trained" not in f and f.attrs["preset"] == "quick"
        assert dict(f["traces"]["train_loss"].attrs) == {"kind": "curve", "unit": "nats",
                                                          "columns": "[]"}
    assert runfile.read_run(path).trained is None


def test_write_run_keeps_preset_facts_and_trained(tmp_path, toy_gpu):
    led = Ledger()
    led.add("mac_fp32", 10, scope="infer")
    result = RunResult("mlp", toy_gpu, "digits", {"seed": 3}, {"acc": 0.5}, led,
                       {"loss": curve([1.0])}, preset="full", facts={"k": 1},
                       trained=_trained())
    run = runfile.read_run(runfile.write_run(tmp_path / "r.h5", result))
    assert (run.preset, run.facts, run.config) == ("full", {"k": 1}, {"seed": 3})
    assert sorted(run.trained.arrays) == sorted(_trained().arrays)
    assert (run.units, run.main_metric) == ({}, None)   # the result declared none


def test_metric_units_and_main_metric_round_trip(tmp_path, toy_gpu):
    led = Ledger()
    led.add("mac_fp32", 10, scope="infer")
    result = RunResult("mlp", toy_gpu, "digits", {"seed": 3}, {"acc": 0.5, "loss": 1.2}, led,
                       units={"acc": "1", "loss": "nats"}, main_metric="acc")
    run = runfile.read_run(runfile.write_run(tmp_path / "r.h5", result))
    assert run.units == {"acc": "1", "loss": "nats"} and run.main_metric == "acc"
    assert (run.unit("loss"), run.unit("other")) == ("nats", "?")
    bad = RunResult("m", toy_gpu, "d", {}, {"acc": 0.5}, led, units={"acc": 1})
    with pytest.raises(RunFileError, match=r"^unit of metric 'acc' = 1: units are text"):
        runfile.write_run(tmp_path / "bad.h5", bad)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_file_without_units_reads_every_unit_as_unknown(tmp_path, toy_gpu_path, version):
    """Files of formats 1-3 written before units were stored have no /metric_units."""
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path, "a") as f:
        del f["metric_units"]
        f.attrs["format_version"] = version
        if version == 1:
            f.attrs["profile"] = "toy-gpu"
            for k in ("label", "digest", "field_digests"):
                del f["profile"].attrs[k]
    run = runfile.read_run(path)
    assert run.file.format_version == version and run.units == {} and run.main_metric is None
    assert all(run.unit(k) == "?" for k in run.metrics) and run.metrics


@pytest.mark.parametrize("kw, match", [
    ({"trained": Trained({"names": np.array(["a", "b"])})},
     r"^trained array 'names' has dtype <U1; trained arrays are numeric \(put text in "
     r"Trained.meta\)$"),
    ({"trained": Trained({"a//b": np.zeros(2)})}, r"^trained array name 'a//b': names are"),
    ({"trained": Trained({"a": np.zeros(2)}, {"f": {1, 2}})}, r"^trained meta is not JSON"),
    ({"facts": {"f": object()}}, r"^facts are not JSON"),
])
def test_write_refuses_bad_trained_state_and_facts(tmp_path, toy_gpu_path, kw, match):
    with pytest.raises(RunFileError, match=match):
        _write(tmp_path / "run.h5", toy_gpu_path, **kw)
    assert os.listdir(tmp_path) == []


def test_an_untyped_trace_is_refused_by_the_record_and_by_the_writer(tmp_path, toy_gpu_path):
    """The record refuses a bare array when it is made; one put in afterwards is refused by
    the writer, with the same message, before anything is written."""
    match = (r"^trace 'loss' is a ndarray; wrap it in sim.traces.Trace\(kind, data, unit\) "
             r"with kind one of curve, ")
    with pytest.raises(ModelError, match=match):
        _result(toy_gpu_path, traces={"loss": np.array([1.0])})
    result = _result(toy_gpu_path)
    result.traces["loss"] = np.array([1.0])
    with pytest.raises(RunFileError, match=match):
        runfile.write_run(tmp_path / "run.h5", result)
    assert os.listdir(tmp_path) == []


def test_write_run_takes_the_record_only(tmp_path, toy_gpu_path):
    result = _result(toy_gpu_path)
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    with pytest.raises(RunFileError, match=r"^write_run\('.*run.h5', \.\.\.\): the run is a "
                                           r"dict; expected a models.registry.RunResult "
                                           r"\(models.runner.run returns one\)$"):
        runfile.write_run(tmp_path / "run.h5", fields)
    assert os.listdir(tmp_path) == []


def test_a_record_read_back_writes_again_as_itself(tmp_path, toy_gpu_path):
    """write -> read -> write -> read: the second file holds the same record; only what the
    file says about itself (its path and write time) is its own."""
    first, led = _write(tmp_path / "a.h5", toy_gpu_path, trained=_trained(), preset="full",
                        facts={"k": 1}, units={"test_accuracy": "1", "n": "count"},
                        main_metric="test_accuracy")
    a = runfile.read_run(first)
    assert _result(toy_gpu_path).file is None          # a fresh record comes from no file
    b = runfile.read_run(runfile.write_run(tmp_path / "b.h5", a))
    simple = ("model", "dataset", "config", "metrics", "preset", "facts", "units",
              "main_metric")
    assert [getattr(b, k) for k in simple] == [getattr(a, k) for k in simple]
    assert b.profile == a.profile and b.ledger == a.ledger == led
    assert list(b.traces) == list(a.traces) == ["train_loss"]
    np.testing.assert_array_equal(b.traces["train_loss"].data, a.traces["train_loss"].data)
    assert b.trained.meta == a.trained.meta and sorted(b.trained.arrays) == \
        sorted(a.trained.arrays)
    for k, arr in a.trained.arrays.items():
        np.testing.assert_array_equal(b.trained.arrays[k], arr)
    assert (a.file.path, b.file.path) == (str(first), str(tmp_path / "b.h5"))
    assert a.file.format_version == b.file.format_version == runfile.FORMAT_VERSION


def test_trace_of_an_unknown_kind_is_a_one_line_error(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path, "a") as f:
        f["traces"]["train_loss"].attrs["kind"] = "histogram"
    _one_line_error(path, r"^run file '.*run.h5': trace 'train_loss' has kind 'histogram'; "
                          r"kinds are curve, raster, per_core, images, pictures, table, scatter, "
                          r"bands$")


def test_trace_whose_shape_does_not_fit_its_kind_is_a_one_line_error(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path)
    with h5py.File(path, "a") as f:
        f["traces"]["train_loss"].attrs["kind"] = "raster"     # 1-D data: not (k, 2)
    _one_line_error(path, r"^run file '.*run.h5': trace 'train_loss': Trace of kind 'raster' "
                          r"has shape \(3,\); expected \(k, 2\)$")


def test_trained_array_that_is_not_numeric_is_a_one_line_error(tmp_path, toy_gpu_path):
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path, trained=_trained())
    with h5py.File(path, "a") as f:
        del f["trained"]["arrays"]["mask"]
        f["trained"]["arrays"].create_dataset("mask", data=[b"yes", b"no"])
    _one_line_error(path, r"^run file '.*run.h5': trained array 'mask' has dtype object; "
                          r"trained arrays are numeric$")
    with h5py.File(path, "a") as f:
        del f["trained"]["arrays"]["mask"]
        f["trained"].attrs["meta"] = "[1, 2]"
    _one_line_error(path, r"^run file '.*run.h5': /trained attribute meta is not a JSON object$")


def _as_version_2(path, traces: dict):
    """Rewrite a format-3 file as format 2 wrote it: no preset, facts or trained state, and
    traces as bare arrays."""
    with h5py.File(path, "a") as f:
        f.attrs["format_version"] = 2
        del f.attrs["preset"]
        del f["facts"]
        if "trained" in f:
            del f["trained"]
        del f["traces"]
        g = f.create_group("traces")
        for k, arr in traces.items():
            g.create_dataset(k, data=arr)


def test_legacy_format_2_traces_are_converted_once_by_the_naming_rule(tmp_path, toy_gpu_path):
    path, led = _write(tmp_path / "run.h5", toy_gpu_path, trained=_trained())
    bare = {"spike_raster": np.array([[0.001, 3.0], [0.002, 0.0]]),
            "core_neurons_util": np.array([0.5, 0.25]),
            "routes": np.array([[0, 1, 1, 7]], np.int64),
            "train_loss": np.array([2.0, 1.0]),
            "tversky_prototypes": np.zeros((2, 3, 3)),
            "stitch_front_back_i_j": np.array([[1, 2, 3, 4], [5, 6, 7, 8]]),
            "accuracy": np.float64(0.5)}
    _as_version_2(path, bare)
    run = runfile.read_run(path)
    assert run.file.format_version == 2 and run.ledger == led
    # version 2 never recorded the preset (--full runs existed): None, not "quick"
    assert (run.preset, run.facts, run.trained) == (None, {}, None)
    got = {k: (t.kind, t.unit, t.columns, t.data.shape) for k, t in run.traces.items()}
    assert got == {
        "accuracy": ("curve", "", (), (1,)),           # a scalar: a one-point curve
        "core_neurons_util": ("per_core", "fraction of the core's limit", (), (2,)),
        "routes": ("table", "", ("src_core", "dst_core", "hops", "neurons"), (1, 4)),
        "spike_raster": ("raster", "s", (), (2, 2)),
        "stitch_front_back_i_j": ("table", "", ("0", "1", "2", "3"), (2, 4)),
        "train_loss": ("curve", "", (), (2,)),
        "tversky_prototypes": ("images", "", (), (2, 3, 3)),
    }
    for k, arr in bare.items():
        np.testing.assert_array_equal(run.traces[k].data, np.reshape(arr, run.traces[k].data.shape))


@pytest.mark.parametrize("name, shape, kind", [
    ("raster", (4, 2), "raster"),            # the suffix alone, as version 2's report read it
    ("core_raster", (4, 2), "raster"),       # raster wins: the report tested it first
    ("spike_raster", (4, 3), "table"),       # not (k, 2): no raster
    ("core_x", (4, 2), "table"),             # core_ applies to 1-D only
    ("my_core_x", (4,), "curve"),            # core_ is a prefix
    ("routes", (4, 3), "table"),             # 3 columns: numbered, not the route names
    ("x", (1, 2, 3, 4), "images"),           # more than 3-D: pictures of the last two axes
])
def test_legacy_trace_rule(name, shape, kind):
    tr = runfile.legacy_trace(name, np.zeros(shape))
    assert tr.kind == kind
    if kind == "images":
        assert tr.data.shape == (2, 3, 4)     # 1 x 2 = 2 pictures of 3 x 4


def test_a_scalar_trained_array_round_trips(tmp_path, toy_gpu_path):
    """A 0-d array (a learned threshold, a step count) is stored uncompressed: HDF5 refuses
    filters on scalars, which once failed the write of a Tversky run."""
    trained = Trained({"alpha": np.array(0.25), "w": np.arange(6.0).reshape(2, 3)}, {})
    path, _ = _write(tmp_path / "run.h5", toy_gpu_path, trained=trained)
    got = runfile.read_run(path).trained.arrays
    assert got["alpha"].shape == () and float(got["alpha"]) == 0.25
    np.testing.assert_array_equal(got["w"], np.arange(6.0).reshape(2, 3))
