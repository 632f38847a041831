"""Hostile run files, second round: hard-link cycles and DAGs, unknown filters (HDF5
plugins), a label that names another file, attributes of the wrong type, traces of the
wrong dtype, many traces. Each case edits a valid run file the way an attacker could and
expects one line naming the run file, the field, what is wrong and what is right."""
import contextlib
import json
import signal
import sys

import h5py
import numpy as np
import pytest

import deploy.runfile as runfile
from deploy import hdf5_checks
from deploy.errors import RunFileError
from hw_profiles import load
from models.registry import RunResult
from sim.ledger import Ledger
from sim.traces import Trace, curve


def _run(tmp_path, toy_gpu_path, traces=None, profile=None, config=None):
    led = Ledger()
    with led.scope("train"):
        led.add("mac_fp32", 10)
        led.add_samples(1)
    led.record_layer("fc1", "Linear", [1, 4], 20)
    result = RunResult(model="mlp", profile=profile or load(toy_gpu_path), dataset="digits",
                       config={"lr": 0.1} if config is None else config,
                       metrics={"test_acc": 0.9}, ledger=led,
                       traces={"loss": curve([1.0, 0.5]),
                               "tbl": Trace("table", np.array([["a", "1"]]), "", ("x", "y"))}
                       if traces is None else traces)
    path = tmp_path / "run.h5"
    runfile.write_run(path, result, force=True)
    return path


class _Hang(BaseException):
    """Raised by the alarm: not an Exception, so no reader's except clause swallows it."""


@contextlib.contextmanager
def _within(seconds):
    def boom(*_):
        raise _Hang(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _refused(path, *words):
    with _within(20), pytest.raises(RunFileError) as info:
        runfile.read_run(path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg, msg
    for word in words:
        assert word in msg, msg
    return msg


def _edit(path, fn):
    with h5py.File(path, "a") as f:
        fn(f)
    return path


def _report_html(path, tmp_path, capsys):
    from deploy.cli import main
    capsys.readouterr()
    html = tmp_path / "r.html"
    rc = main(["report", str(path), "--html", str(html), "--force", "--quiet"])
    return rc, html, capsys.readouterr().err


# -- 1. hard links: cycles, DAGs, depth, count --------------------------------------------------
@pytest.mark.parametrize("make, words", [
    (lambda f: f["traces"].__setitem__("loop", f["traces"]), ("/traces/loop", "cycle")),
    (lambda f: f["versions"].__setitem__("up", f["/"]), ("/versions/up", "cycle")),
])
def test_a_hard_link_cycle_is_one_line_not_a_hang(tmp_path, toy_gpu_path, make, words):
    path = _edit(_run(tmp_path, toy_gpu_path), make)
    _refused(path, *words, "expected")


def test_a_hard_link_dag_is_refused_not_walked_path_by_path(tmp_path, toy_gpu_path):
    def dag(f):   # 45 levels, two links each: 2**45 paths to the last group
        prev = f.create_group("dag/l0")
        for i in range(1, 45):
            nxt = f.create_group(f"dag/l{i}")
            prev["a"], prev["b"] = nxt, nxt
            prev = nxt
    path = _edit(_run(tmp_path, toy_gpu_path), dag)
    _refused(path, "/dag/l", "second hard link", "expected")


def test_the_walk_is_capped_in_objects_and_depth(tmp_path, toy_gpu_path, monkeypatch):
    def deep(f):   # deeper than Python's recursion limit: was a RecursionError line
        g = f["traces"]
        for _ in range(1100):
            g = g.create_group("d")
        g.create_dataset("x", data=np.arange(2.0)).attrs["kind"] = "curve"
    path = _edit(_run(tmp_path, toy_gpu_path), deep)
    msg = _refused(path, "/traces/d/d", "deep", f"at most {hdf5_checks.MAX_DEPTH}")
    assert "RecursionError" not in msg and len(msg) < 400
    path = _run(tmp_path, toy_gpu_path,
                traces={f"t{i}": curve([1.0]) for i in range(30)})
    monkeypatch.setattr(hdf5_checks, "MAX_OBJECTS", 20)
    _refused(path, "over 20 groups and datasets", "at most 20")


# -- 2. filters: only the built-in ones, and no plugin folder ------------------------------------
def _unknown_filter(f):
    ds = f["ledger"].create_dataset("uf", shape=(16,), dtype="f4", chunks=(16,),
                                    compression=32001, allow_unknown_filter=True)
    ds.id.write_direct_chunk((0,), b"\0" * 64)


def test_an_unknown_filter_is_refused_before_any_read(tmp_path, toy_gpu_path):
    path = _edit(_run(tmp_path, toy_gpu_path), _unknown_filter)
    msg = _refused(path, "/ledger/uf", "filter 32001", "gzip")
    assert "plugin" in msg and "/usr/local" not in msg


def test_reading_a_run_file_empties_hdf5s_plugin_search_path(tmp_path, toy_gpu_path):
    path = _edit(_run(tmp_path, toy_gpu_path),
                 lambda f: f.create_dataset("extra", data=np.arange(64.0), shuffle=True,
                                            fletcher32=True, compression="gzip"))
    h5py.h5pl.append(str(tmp_path).encode())
    assert runfile.read_run(path).metrics == {"test_acc": 0.9}   # built-in filters read
    assert h5py.h5pl.size() == 0


# -- 3. a label that names a file: never opened ---------------------------------------------------
_OPENED: list = []
_WATCH: list = []


def _audit(event, args):
    if event == "open" and _WATCH and args and str(args[0]) in _WATCH:
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)


def test_the_report_prices_the_snapshot_and_never_opens_the_labelled_file(tmp_path,
                                                                          toy_gpu_path):
    mine = tmp_path / "mine.toml"
    mine.write_text(toy_gpu_path.read_text())
    path = _run(tmp_path, toy_gpu_path, profile=load(mine))
    # the file now holds another profile: the report prices the snapshot and never opens it
    mine.write_text(toy_gpu_path.read_text().replace("value = 2.0, unit", "value = 3.0, unit"))
    run = runfile.read_run(path)
    _WATCH[:] = [str(mine.resolve()), str(mine)]
    try:
        profile = runfile.stored_profile(run)
    finally:
        _WATCH.clear()
    assert _OPENED == []
    assert profile.label.startswith(f"{run.profile.name} (snapshot stored in the run; file: ")


# -- 4, 7, 8. attributes of the wrong type or form ------------------------------------------------
def _set(where, key, value):
    return lambda f: f[where].attrs.__setitem__(key, value)


def _replace_metrics(f):
    del f["metrics"]
    f["metrics"] = np.arange(3)


def _profile_nan(f):
    doc = json.loads(f["profile"].attrs["json"])
    key = next(iter(doc["energy_pj"]))
    doc["energy_pj"][key]["value"] = float("nan")
    f["profile"].attrs["json"] = json.dumps(doc)


def _layers_bad(f):
    extras = json.loads(f["ledger"].attrs["extras"])
    extras["layers"]["fc1"]["output_shape"] = "x"
    f["ledger"].attrs["extras"] = json.dumps(extras)


@pytest.mark.parametrize("edit, words", [
    # 4: /config not an object
    (_set("config", "json", "[1, 2]"), ("/config attribute json", "a JSON array",
                                        "expected a JSON object")),
    (_set("config", "json", "null"), ("/config attribute json", "JSON null",
                                      "expected a JSON object")),
    # 7: one line, but naming neither the field nor what is right
    (_set("config", "json", "{bad"), ("/config attribute json", "not valid JSON",
                                      "expected a JSON object")),
    (_set("config", "json", 5), ("/config attribute json", "int", "expected JSON text")),
    (_set("metrics", "test_acc", "abc"), ("/metrics attribute test_acc", "'abc'",
                                          "expected a real number")),
    (_set("metrics", "test_acc", np.arange(3.0)), ("/metrics attribute test_acc",
                                                   "shape (3,)", "expected a real number")),
    (_set("traces/loss", "columns", "{{"), ("/traces/loss attribute columns",
                                            "not valid JSON", "expected a JSON array")),
    (_set("traces/loss", "columns", 5), ("/traces/loss attribute columns", "int",
                                         "expected JSON text")),
    (_profile_nan, ("/profile attribute json", "NaN", "expected")),
    (_set("profile", "json", "[]"), ("/profile attribute json", "a JSON array",
                                     "expected a JSON object")),
    (_layers_bad, ("layers", "fc1", "output_shape", "'x'", "expected a list of integers")),
    (_set("/", "format_version", np.True_), ("format version True", "bool",
                                             "expected an integer")),
    # 8: wrong types that were accepted
    (_set("/", "complete", "False"), ("complete = 'False'", "expected True")),
    (_set("metrics", "test_acc", "0.9"), ("/metrics attribute test_acc", "'0.9'",
                                          "expected a real number")),
    (_replace_metrics, ("/metrics is a dataset", "expected a group")),
    (_set("/", "dataset", np.arange(4)), ("root attribute dataset", "expected text")),
    (_set("/", "preset", "turbo"), ("root attribute preset = 'turbo'", "quick, full")),
    (_set("/", "format_version", 3.0), ("format version 3.0", "expected an integer")),
    (_set("metrics", "test_acc", 1 + 2j), ("/metrics attribute test_acc", "complex",
                                           "expected a real number")),
    (_set("/", "created", 12345), ("root attribute created", "expected text")),
])
def test_a_field_of_the_wrong_type_or_form_is_one_line_naming_it(tmp_path, toy_gpu_path,
                                                                  edit, words):
    path = _edit(_run(tmp_path, toy_gpu_path), edit)
    _refused(path, *words)


@pytest.mark.parametrize("config", ["[1, 2]", "null"])
def test_report_html_of_a_config_that_is_not_an_object_is_one_line(tmp_path, toy_gpu_path,
                                                                  capsys, config):
    path = _edit(_run(tmp_path, toy_gpu_path), _set("config", "json", config))
    rc, html, err = _report_html(path, tmp_path, capsys)
    assert rc == 2 and not html.exists() and err.count("\n") == 1 and "/config" in err


# -- 5. traces of the wrong dtype ---------------------------------------------------------------
def _trace(name, data, kind, columns="[]", **kw):
    def edit(f):
        ds = f["traces"].create_dataset(name, data=data, **kw)
        ds.attrs.update({"kind": kind, "unit": "", "columns": columns})
    return edit


_TEXT = {"dtype": h5py.string_dtype()}


@pytest.mark.parametrize("edit", [
    _trace("cv", np.array(["1", "x"], dtype=object), "curve", **_TEXT),
    _trace("pc", np.array(["a", "b"], dtype=object), "per_core", **_TEXT),
    _trace("im", np.array([[["a"]]], dtype=object), "images", **_TEXT),
    _trace("sc", np.array([["a", "b", "c"]], dtype=object), "scatter", **_TEXT),
    _trace("bd", np.array([[["a"]]], dtype=object), "bands", columns='["s"]', **_TEXT),
    _trace("cp", np.zeros(3, dtype=[("a", "f8"), ("b", "i4")]), "curve"),
    _trace("cx", np.array([1 + 1j, 2j]), "curve"),
    _trace("tc", np.array([[1 + 1j, 2j]]), "table", columns='["a", "b"]'),
])
def test_a_trace_of_text_complex_or_compound_dtype_is_one_line(tmp_path, toy_gpu_path,
                                                               capsys, edit):
    path = _edit(_run(tmp_path, toy_gpu_path), edit)
    _refused(path, "trace '", "dtype", "expected real numbers")
    rc, html, err = _report_html(path, tmp_path, capsys)
    assert rc == 2 and not html.exists() and err.count("\n") == 1 and "dtype" in err


def test_a_text_table_still_reads(tmp_path, toy_gpu_path):
    run = runfile.read_run(_run(tmp_path, toy_gpu_path))
    assert run.traces["tbl"].data.tolist() == [["a", "1"]]


# -- 9. many traces: the first ones drawn, the count said ------------------------------------------
def test_a_report_draws_the_first_traces_and_says_how_many_there_are(tmp_path, toy_gpu_path,
                                                                     capsys, monkeypatch):
    import deploy.report
    monkeypatch.setattr(deploy.report, "MAX_TRACES_DRAWN", 3)
    path = _run(tmp_path, toy_gpu_path, traces={f"t{i}": curve([1.0, 2.0]) for i in range(5)})
    rc, html, _ = _report_html(path, tmp_path, capsys)
    text = html.read_text()
    assert rc == 0 and "5 traces, the first 3 drawn" in text
    assert 'alt="t2"' in text and 'alt="t3"' not in text


# -- 10. non-finite cells, per-core values, huge figures -------------------------------------------
def test_a_non_finite_table_cell_is_a_dash_in_the_html_and_the_csv(tmp_path, toy_gpu_path,
                                                                   capsys):
    import base64
    import re

    from deploy.formatting import NOT_AVAILABLE
    path = _run(tmp_path, toy_gpu_path, traces={
        "tab": Trace("table", np.array([[1.0, np.nan], [np.inf, 2.0]]), "", ("a", "b"))})
    rc, html, _ = _report_html(path, tmp_path, capsys)
    text = html.read_text()
    assert rc == 0 and f"<td class=n>{NOT_AVAILABLE}</td>" in text
    assert ">nan<" not in text and ">inf<" not in text
    data = re.search(r'download="trace-tab.csv" href="data:text/csv;charset=utf-8;base64,'
                     r'([^"]+)"', text)[1]
    csv = base64.b64decode(data).decode()
    assert "nan" not in csv and "inf" not in csv and NOT_AVAILABLE in csv


def test_a_non_finite_per_core_value_is_one_line(tmp_path, toy_gpu_path):
    path = _edit(_run(tmp_path, toy_gpu_path),
                 _trace("core_i", np.array([np.inf, 1.0]), "per_core"))
    _refused(path, "trace 'core_i'", "finite")


def test_energies_share_one_number_format():
    from deploy.formatting import format_energy, format_seconds
    assert format_energy(3.51e13) == "3.51e+13 J"
    assert format_energy(6.19e16) == "6.19e+16 J"
    assert format_seconds(2.54e14) == "2.54e+14 s"
    assert format_energy(12.3) == "12.3 J" and format_energy(999_000.0) == "999000 J"
