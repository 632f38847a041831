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


def _export_refused(tmp_path, toy_gpu_path, model, meta, arrays, target, *words):
    from deploy.errors import ExportError
    from deploy.export import export_run
    from models.registry import Trained
    result = RunResult(model=model, profile=load(toy_gpu_path), dataset="digits", config={},
                       metrics={"test_accuracy": 0.9}, ledger=Ledger(), traces={},
                       trained=Trained(arrays, meta))
    path = tmp_path / "run.h5"
    runfile.write_run(path, result)
    with pytest.raises(ExportError) as info:
        export_run(path, target, tmp_path / "out")
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg
    for word in words:
        assert word in msg, msg
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]   # nothing written


def test_export_from_checks_each_array_against_the_shape_the_meta_implies(tmp_path,
                                                                         toy_gpu_path):
    # sizes [3, 2] make Linear(3 -> 2), whose weight is (2, 3); the file stores (3, 2)
    arrays = {"param/0.weight": np.ones((3, 2), np.float32),
              "param/0.bias": np.ones(3, np.float32),
              "example_x": np.ones((4, 2), np.float32)}
    _export_refused(tmp_path, toy_gpu_path, "mlp", {"sizes": [3, 2]}, arrays, "onnx",
                    "/trained/arrays/param/0.weight", "shape (3, 2)", "implies (2, 3)",
                    '"sizes": [3, 2]')


def test_export_from_never_allocates_what_the_meta_claims(tmp_path, toy_gpu_path):
    # 10**6 stored elements let every size up to 10**6 pass the generic bound, but
    # sizes [10**6, 10**6] is a 10**12-weight layer (4 TB in float32): the rebuild runs on
    # torch's meta device, so the mismatch is found with no allocation at all
    n = 10**6
    arrays = {"param/0.weight": np.ones((3, 2), np.float32),
              "param/0.bias": np.ones(3, np.float32),
              "example_x": np.zeros((n, 1), np.float32)}
    _export_refused(tmp_path, toy_gpu_path, "mlp", {"sizes": [n, n]}, arrays, "onnx",
                    "/trained/arrays/param/0.weight", "shape (3, 2)",
                    f"implies ({n}, {n})")


def test_export_from_a_bitwise_state_of_mismatched_shapes_names_the_file(tmp_path,
                                                                         toy_gpu_path):
    # include (2 classes, 4 clauses, 2 x 3 literals) but 3 clause polarities, not 4
    arrays = {"include": np.zeros((2, 4, 6), np.uint8), "polarity": np.ones(3, np.int64),
              "golden_x": np.zeros((1, 1), np.uint32),
              "golden_scores": np.zeros((1, 2), np.int32),
              "golden_labels": np.zeros(1, np.int64)}
    meta = {"n_features": 3, "n_classes": 2, "clauses": 4, "state_bits": 8, "word_bits": 32,
            "profile": "cortex-m4"}
    _export_refused(tmp_path, toy_gpu_path, "tsetlin", meta, arrays, "c",
                    "does not rebuild a tsetlin model")


def _report_html(tmp_path, toy_gpu_path, config, traces, edit=None):
    from deploy.cli import main
    led = Ledger()
    with led.scope("train"):
        led.add("mac_fp32", 10)
        led.add_samples(1)
    result = RunResult(model="mlp", profile=load(toy_gpu_path), dataset="digits",
                       config=config, metrics={"a": 1.0}, ledger=led, traces=traces)
    path = tmp_path / "run.h5"
    runfile.write_run(path, result)
    if edit is not None:
        with h5py.File(path, "a") as f:
            edit(f)
    html = tmp_path / "r.html"
    return main(["report", str(path), "--html", str(html), "--quiet"]), html


def test_a_config_population_or_epoch_count_sizes_no_allocation(tmp_path, toy_gpu_path):
    from sim.traces import Trace
    raster = Trace("raster", np.array([[0.1, 0], [0.2, 3]]), "s")
    # n = 10**13 silent neurons were 73 TiB of counts; 10**13 epochs as many bars
    rc, html = _report_html(tmp_path, toy_gpu_path, {"n": 10**13, "epochs": 10**13},
                            {"spikes_raster": raster, "loss": curve([1.0])})
    assert rc == 0 and "No training epochs" in html.read_text()   # no chart of 10**13 bars
    from deploy.report_html import firing_rates
    run = runfile.read_run(tmp_path / "run.h5")
    rates, title = firing_rates(run, run.traces["spikes_raster"].data)
    # n not believed: the 2 neurons that fired, one spike each over the 10**13-epoch...
    # config's run, whose duration is the spikes' span: 0.2 - 0.1 = 0.1 s -> 10 Hz each
    assert "the 2 neurons that fired" in title and rates.tolist() == pytest.approx([10, 10])


@pytest.mark.parametrize("rows", [[[0.1, -5.0], [0.2, 3.0]], [[np.nan, 1.0], [0.2, 3.0]],
                                  [[0.1, 1e30], [0.2, 3.0]], [[0.1, 1.5], [0.2, 3.0]]])
def test_a_raster_with_a_bad_neuron_index_or_time_is_one_line(tmp_path, toy_gpu_path, capsys,
                                                              rows):
    from sim.traces import Trace

    def edit(f):
        del f["traces/r"]
        f["traces"].create_dataset("r", data=np.array(rows)).attrs["kind"] = "raster"
    rc, html = _report_html(tmp_path, toy_gpu_path, {},
                            {"r": Trace("raster", np.array([[0.1, 1], [0.2, 3]]), "s")}, edit)
    err = capsys.readouterr().err
    assert rc == 2 and not html.exists()
    assert err.count("\n") == 1 and "trace 'r'" in err and "0 .. 2**53" in err


def test_a_trace_name_is_drawn_as_written_not_as_mathtext(tmp_path, toy_gpu_path):
    # matplotlib parsed "$...$" as mathtext: "a$\frac{$" was a ParseException traceback
    rc, html = _report_html(tmp_path, toy_gpu_path, {}, {"a$\\frac{$": curve([1.0, 2.0])})
    assert rc == 0 and "a$\\frac{$" in html.read_text()


def test_damaged_hdf5_structures_are_one_line(tmp_path, toy_gpu_path):
    # 8 bytes of 0xff every 32 bytes over the file's first 2 kB (superblock,
    # object headers, heaps): h5py raised RuntimeError ("bad local heap signature") there,
    # which read_run let through as a traceback
    good = _valid(tmp_path, toy_gpu_path).read_bytes()
    path = tmp_path / "damaged.h5"
    outcomes = set()
    for at in range(0, min(len(good), 2048), 32):
        path.write_bytes(good[:at] + b"\xff" * 8 + good[at + 8:])
        try:
            runfile.read_run(path)
            outcomes.add("read")
        except RunFileError as exc:
            assert "\n" not in str(exc)
            outcomes.add("refused")
    assert "refused" in outcomes


def test_export_from_stored_example_inputs_of_another_dtype_is_one_line(tmp_path,
                                                                       toy_gpu_path):
    # found by tests/deploy/test_hostile_properties.py: float64 example inputs into float32
    # weights failed inside torch.onnx.export ("mat1 and mat2 must have the same dtype")
    arrays = {"param/0.weight": np.ones((3, 2), np.float32),
              "param/0.bias": np.ones(3, np.float32),
              "example_x": np.ones((4, 2), np.float64)}
    _export_refused(tmp_path, toy_gpu_path, "mlp", {"sizes": [2, 3]}, arrays, "onnx",
                    "does not rebuild a mlp model", "RuntimeError", "dtype")


def test_packed_bitwise_weights_bound_the_meta_by_their_bits():
    """A BEP run with 8 hidden units on 1000 inputs stores 8 x 32 uint32 words (1000 bits a
    row, packed): its meta k_in = [1000] was refused as over the 256 stored elements
    (`export --from` failed on a genuine run). Counted in bits (8 x 32 x 32 = 8192) it
    passes; a meta beyond even the bits is still refused."""
    from deploy.errors import ExportError
    from deploy.export import check_stored_state
    from models.registry import Trained
    words = {"w0": np.zeros((8, 32), np.uint32)}
    check_stored_state(Trained(arrays=words, meta={"k_in": [1000]}), "run.h5")
    with pytest.raises(ExportError, match=r"k_in = \[100000\] has a size outside 0\.\.8192"):
        check_stored_state(Trained(arrays=words, meta={"k_in": [100000]}), "run.h5")


def _tsetlin_state(polarity=(1, -1, 1, -1), scores=((0, 0),), include=None):
    """A 2-class, 4-clause machine over 3 features. Every clause empty: silent at inference,
    so the class sums on any input are (0, 0) and the label 0."""
    arrays = {"include": np.zeros((2, 4, 6), np.uint8) if include is None else include,
              "polarity": np.asarray(polarity),
              "golden_x": np.zeros((1, 1), np.uint32),
              "golden_scores": np.asarray(scores, np.int32),
              "golden_labels": np.zeros(1, np.int64)}
    meta = {"n_features": 3, "n_classes": 2, "clauses": 4, "state_bits": 8, "word_bits": 32,
            "profile": "cortex-m4"}
    return meta, arrays


def test_export_from_refuses_polarities_edited_off_plus_minus_one(tmp_path, toy_gpu_path):
    # polarities scaled to +-0.5 were cast to 0: every class sum 0, exported without a word
    meta, arrays = _tsetlin_state(polarity=(0.5, -0.5, 0.5, -0.5))
    _export_refused(tmp_path, toy_gpu_path, "tsetlin", meta, arrays, "c",
                    "does not rebuild a tsetlin model", "+1 or -1")


def test_export_from_refuses_include_actions_other_than_0_and_1(tmp_path, toy_gpu_path):
    include = np.zeros((2, 4, 6), np.int64)
    include[0, 0, 0] = 2
    meta, arrays = _tsetlin_state(include=include)
    _export_refused(tmp_path, toy_gpu_path, "tsetlin", meta, arrays, "c",
                    "does not rebuild a tsetlin model", "other than 0 and 1")


def test_export_from_refuses_a_model_that_misses_its_own_golden_outputs(tmp_path,
                                                                       toy_gpu_path):
    # a valid state whose outputs are (0, 0), stored beside golden scores (3, 0): edited
    # (the C export recomputed its golden vectors from the edited model and passed)
    meta, arrays = _tsetlin_state(scores=((3, 0),))
    _export_refused(tmp_path, toy_gpu_path, "tsetlin", meta, arrays, "c",
                    "does not give the golden scores the run stored", "1 of 1 inputs differ",
                    "edited or is corrupt")


def test_export_from_a_state_with_its_own_golden_outputs_is_written(tmp_path, toy_gpu_path):
    from deploy.export import export_run
    from models.registry import Trained
    meta, arrays = _tsetlin_state()
    result = RunResult(model="tsetlin", profile=load(toy_gpu_path), dataset="digits",
                       config={}, metrics={"test_accuracy": 0.9}, ledger=Ledger(), traces={},
                       trained=Trained(arrays, meta))
    runfile.write_run(tmp_path / "run.h5", result)
    out = export_run(tmp_path / "run.h5", "c", tmp_path / "out")
    assert (out / "golden.h").exists()
