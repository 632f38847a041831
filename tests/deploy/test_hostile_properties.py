"""Property-based hostile input (issue 32, class 6): hypothesis mutates run files (HDF5
attributes, datasets, links, raw bytes), sweep specs (TOML), hardware profiles (TOML) and
NIR files, runs the CLI in-process on each, and asserts what every command promises:

- it ends with status 0 and a valid result, or status 2 and one ``neuroedge: error:`` line
  (warning lines before it are allowed), never a traceback;
- no file outside the command's output folder is touched (the inputs included);
- no temporary is left in the output folder (and nothing at all after an error).

Bounded and reproducible for the default run (``derandomize=True``: the same examples on
every machine, about 30 per target); the ``slow``-marked twins run ten times as many.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import string
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from deploy.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
FAST = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
SLOW = settings(FAST, max_examples=300)


# -- the checks every example ends with ---------------------------------------------------------
def _snapshot(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under ``root``: (size, mtime_ns, first bytes), to tell what was touched."""
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            st_ = p.stat()
            with open(p, "rb") as f:
                out[str(p.relative_to(root))] = (st_.st_size, st_.st_mtime_ns, f.read(4096))
    return out


def _run_cli(root: Path, out: Path, argv: list[str]) -> tuple[int, str, str]:
    """Run ``neuroedge argv`` in-process in ``root``; check the promises; return the result."""
    before = {k: v for k, v in _snapshot(root).items()
              if not (root / k).is_relative_to(out)}
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = main(argv)    # any exception but SystemExit is a failed example: a traceback
    err = stderr.getvalue()
    after = {k: v for k, v in _snapshot(root).items() if not (root / k).is_relative_to(out)}
    assert after == before, "a file outside the output folder was touched"
    assert rc in (0, 2), (rc, err)
    lines = err.splitlines()
    errors = [ln for ln in lines if ln.startswith("neuroedge: error: ")]
    if rc == 2:
        assert len(errors) == 1 and lines[-1] == errors[0], err
    else:
        assert not errors, err
    for c in ("\x1b", "\r", "\u202e"):                       # a file's text is escaped
        assert c not in stdout.getvalue() + err, repr(c)
    if out.exists():
        left = [p.name for p in out.rglob("*") if p.name.endswith((".tmp", ".new", ".old"))]
        assert not left, f"temporaries left: {left}"
        if rc == 2:
            assert not [p for p in out.rglob("*") if p.is_file()], "an error left a file"
    return rc, stdout.getvalue(), err


# -- strategies shared by the targets ----------------------------------------------------------
HOSTILE_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "\x1b[2J", "a\nb", "../../x", "/etc/passwd", "$\\frac{$", "[/]",
                     "\u202eevil", "x" * 5000, "nan", "-1", "1e999", "{}", "[]", "null",
                     '{"a": 1}', "[1000000, 1000000]", '"x"', "\x00", '["a", "b"]',
                     # trace kinds, so a changed kind is read (and drawn) rather than refused
                     "curve", "raster", "table", "images", "pictures", "per_core",
                     "scatter", "bands"]))
SCALAR = st.one_of(HOSTILE_TEXT, st.integers(-2**63, 2**63 - 1), st.booleans(),
                   st.floats(allow_nan=True, allow_infinity=True), st.binary(max_size=16))
ARRAY = hnp.arrays(dtype=st.sampled_from([np.float64, np.int64, np.uint8, np.bool_,
                                          np.float32, np.int32]),
                   shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6),
                   elements=None)


# -- run files --------------------------------------------------------------------------------
def _base_run(path: Path) -> None:
    """A valid run file with every part a reader checks: config, facts, a ledger with
    infer and train scopes, metrics with units, a curve, a raster and a table trace, and a
    trained mlp state (sizes [2, 3])."""
    import deploy.runfile as runfile
    from hw_profiles import load
    from models.registry import RunResult, Trained
    from sim.ledger import Ledger
    from sim.traces import Trace, curve
    led = Ledger()
    with led.scope("infer"):
        led.add("mac_fp32", 100)
        led.add_bytes("offchip", read=400, write=40)
        led.add_samples(2)
    with led.scope("train"):
        led.add("mac_fp32", 300)
        led.add_samples(2)
    trained = Trained({"param/0.weight": np.ones((3, 2), np.float32),
                       "param/0.bias": np.zeros(3, np.float32),
                       "example_x": np.ones((4, 2), np.float32)}, {"sizes": [2, 3]})
    result = RunResult(model="mlp", profile=load(DATA / "toy-gpu.toml"), dataset="digits",
                       config={"epochs": 2, "n": 4, "duration": 0.01}, metrics={"acc": 0.5},
                       ledger=led, units={"acc": "1"}, main_metric="acc", facts={"x": 1},
                       traces={"loss": curve([1.0, 0.5]),
                               "spike_raster": Trace("raster", np.array([[0.001, 0],
                                                                         [0.002, 3]]), "s"),
                               "tbl": Trace("table", np.array([[1.0, 2.0]]), "",
                                            ("a", "b"))},
                       trained=trained)
    runfile.write_run(path, result)


@st.composite
def run_mutations(draw):
    """1-3 edits of the base run file: an attribute set, a dataset replaced or deleted, a
    group or link added, raw bytes flipped or the file cut short."""
    # weighted towards edits a reader may accept, so the report's drawing is exercised too
    kinds = st.sampled_from(["attr"] * 3 + ["trace"] * 4 + ["dataset", "delete", "link",
                                                            "bytes", "truncate"])
    return [(k, draw(st.integers(0, 10**6)), draw(SCALAR), draw(ARRAY), draw(st.booleans()))
            for k in draw(st.lists(kinds, min_size=0, max_size=2))]


_ATTRS = {"/": ["format", "format_version", "created", "model", "profile", "dataset",
                "preset", "neurobench", "complete"],
          "/config": ["json"], "/facts": ["json"], "/profile": ["json", "label", "digest"],
          "/metrics": ["acc", "other"], "/metric_units": ["json", "main_metric"],
          "/traces/loss": ["kind", "unit", "columns"],
          "/traces/spike_raster": ["kind", "unit"], "/traces/tbl": ["kind", "columns"],
          "/trained": ["meta"]}


def _dataset_names(f) -> list[str]:
    names = []
    f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    return names


def _apply(path: Path, mutations) -> None:
    for kind, pick, value, array, flag in mutations:
        if kind in ("bytes", "truncate"):
            data = bytearray(path.read_bytes())
            at = pick % len(data)
            if kind == "truncate":
                del data[at:]
            else:
                data[at:at + 8] = (bytes(value) if isinstance(value, bytes) else
                                   str(value).encode("utf-8", "replace"))[:8].ljust(8, b"\xff")
            path.write_bytes(bytes(data))
            continue
        with contextlib.suppress(Exception), h5py.File(path, "a") as f:
            datasets = _dataset_names(f)
            if kind == "attr":
                where = sorted(_ATTRS)[pick % len(_ATTRS)]
                names = _ATTRS[where]
                f[where].attrs[names[(pick // 7) % len(names)]] = value
            elif kind in ("dataset", "trace"):   # "trace": one the report draws
                names = sorted(n for n in datasets if kind == "dataset"
                               or n.startswith("traces/"))
                name = names[pick % len(names)]
                old = f[name]
                attrs = dict(old.attrs)
                del f[name]
                ds = f.create_dataset(name, data=array,
                                      compression="gzip" if flag and array.ndim else None)
                ds.attrs.update(attrs)
            elif kind == "delete":
                del f[sorted(datasets + list(_ATTRS))[pick % (len(datasets) + len(_ATTRS))]
                      .lstrip("/") or "config"]
            else:
                f["traces"]["extra"] = (h5py.SoftLink("/traces/extra") if flag
                                        else h5py.ExternalLink("/etc/hostname", "/"))


def _check_run_file(mutations):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        run = root / "run.h5"
        _base_run(run)
        _apply(run, mutations)
        out = root / "out"
        rc, stdout, _ = _run_cli(root, out, ["report", str(run), "--json", str(out / "r.json"),
                                             "--html", str(out / "r.html"), "--width", "100"])
        if rc == 0:
            assert json.loads((out / "r.json").read_text())["run_file"] == str(run)
            assert (out / "r.html").read_text().startswith("<!DOCTYPE html>")
            assert stdout.startswith("neuroedge report: ")


@FAST
@given(run_mutations())
def test_mutated_run_files_are_reported_or_refused_in_one_line(mutations):
    _check_run_file(mutations)


@pytest.mark.slow
@SLOW
@given(run_mutations())
def test_mutated_run_files_many(mutations):
    _check_run_file(mutations)


@st.composite
def trained_mutations(draw):
    """The /trained meta as any JSON, and stored arrays of any shape, dtype and values."""
    json_value = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-10**7, 10**7),
                                        st.floats(allow_nan=False), st.text(max_size=5)),
                              lambda inner: st.lists(inner, max_size=4)
                              | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                              max_leaves=8)
    meta = draw(st.one_of(st.just({"sizes": [2, 3]}), json_value, st.fixed_dictionaries(
        {"sizes": st.lists(st.integers(-3, 10**7), max_size=4)})))
    names = ["param/0.weight", "param/0.bias", "example_x"]
    arrays = {n: draw(ARRAY) for n in draw(st.lists(st.sampled_from(names), unique=True,
                                                    max_size=3))}
    return meta, arrays


def _check_export_from(meta_arrays):
    meta, arrays = meta_arrays
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        run = root / "run.h5"
        _base_run(run)
        with h5py.File(run, "a") as f:
            f["trained"].attrs["meta"] = json.dumps(meta)
            for name, arr in arrays.items():
                del f["trained/arrays"][name]
                f["trained/arrays"].create_dataset(name, data=arr)
        out = root / "out"
        rc, _, _ = _run_cli(root, out, ["export", "--from", str(run), "--target", "onnx",
                                        "--out", str(out / "m.onnx")])
        if rc == 0:
            import onnx
            onnx.checker.check_model(onnx.load(str(out / "m.onnx")))


@settings(FAST, max_examples=15)
@given(trained_mutations())
def test_export_from_a_mutated_trained_state_exports_or_refuses_in_one_line(meta_arrays):
    _check_export_from(meta_arrays)


@pytest.mark.slow
@settings(SLOW, max_examples=150)
@given(trained_mutations())
def test_export_from_a_mutated_trained_state_many(meta_arrays):
    _check_export_from(meta_arrays)


# -- sweep specs ------------------------------------------------------------------------------
SPEC = {"name": "tiny", "models": ["mlp"], "seeds": [0, 1], "profiles": ["a100"],
        "grid": {"epochs": [1], "mlp": {"hidden": [[8]]}}}
_TOML_VALUE = st.recursive(
    st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=True),
              st.booleans(), HOSTILE_TEXT),
    lambda inner: st.lists(inner, max_size=4), max_leaves=6)


def _toml(value) -> str:
    """``value`` in TOML (a strict subset: inline tables, lists, basic strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(str(value), repr(value))
    if isinstance(value, str):
        return json.dumps(value)    # a JSON string is a TOML basic string (\\uXXXX escapes)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"


@st.composite
def spec_texts(draw):
    spec = json.loads(json.dumps(SPEC))
    keys = ["name", "models", "seeds", "profiles", "datasets", "presets", "grid",
            "simulate_profile", "bogus"]
    for key in draw(st.lists(st.sampled_from(keys), max_size=3)):
        if key == "grid":
            spec["grid"] = {draw(st.sampled_from(["epochs", "hidden", "mlp", "lr", "x"])):
                            draw(_TOML_VALUE)}
        else:
            spec[key] = draw(_TOML_VALUE)
    text = "\n".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in spec.items())
    if draw(st.booleans()):   # raw damage: a cut, or characters TOML or the spec refuse
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.text(alphabet=string.printable + "[]{}=\"'\x00",
                                         max_size=20)) + text[cut:]
    return text


def _check_spec(text):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        spec = root / "spec.toml"
        spec.write_text(text, encoding="utf-8")
        out = root / "out"
        rc, stdout, _ = _run_cli(root, out, ["sweep", str(spec), "--dry-run", "--out",
                                             str(out)])
        if rc == 0:
            assert stdout.strip(), "a valid spec lists its runs"
        assert not out.exists() or not any(out.rglob("*")), "--dry-run wrote"


@FAST
@given(spec_texts())
def test_mutated_sweep_specs_list_their_runs_or_are_refused_in_one_line(text):
    _check_spec(text)


@pytest.mark.slow
@SLOW
@given(spec_texts())
def test_mutated_sweep_specs_many(text):
    _check_spec(text)


# -- hardware profiles ------------------------------------------------------------------------
TOY = (DATA / "toy-gpu.toml").read_text()
_PROFILE_LINES = TOY.splitlines()


@st.composite
def profile_texts(draw):
    """toy-gpu.toml with 1-3 lines changed: a value, a unit, a whole line, or a new key."""
    lines = list(_PROFILE_LINES)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        what = draw(st.sampled_from(["value", "unit", "line", "key", "delete"]))
        if what == "value" and "value = " in lines[i]:
            head, _, tail = lines[i].partition("value = ")
            lines[i] = f"{head}value = {_toml(draw(_TOML_VALUE))}, " + tail.partition(", ")[2]
        elif what == "unit" and 'unit = "' in lines[i]:
            head, _, tail = lines[i].partition('unit = "')
            lines[i] = f'{head}unit = {_toml(draw(HOSTILE_TEXT))}' + tail[tail.index('"') + 1:]
        elif what == "line" and " = " in lines[i] and not lines[i].startswith("["):
            key = lines[i].split(" = ")[0]
            lines[i] = f"{key} = {_toml(draw(_TOML_VALUE))}"
        elif what == "key":
            lines.insert(i, f"{draw(st.sampled_from(['bogus', 'name', 'mac_int8']))} = "
                            f"{_toml(draw(_TOML_VALUE))}")
        elif what == "delete":
            del lines[i]
    return "\n".join(lines) + "\n"


def _check_profile(text):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        prof = root / "p.toml"
        prof.write_text(text, encoding="utf-8")
        out = root / "out"
        rc, stdout, _ = _run_cli(root, out, ["profiles", "show", str(prof)])
        if rc == 0:
            assert "sources" in stdout


@FAST
@given(profile_texts())
def test_mutated_profiles_are_shown_or_refused_in_one_line(text):
    _check_profile(text)


@pytest.mark.slow
@SLOW
@given(profile_texts())
def test_mutated_profiles_many(text):
    _check_profile(text)


# -- NIR files --------------------------------------------------------------------------------
def _nir_graph(edit):
    import nir
    nodes = {"in": nir.Input({"input": np.array([2])}),
             "w": nir.Linear(weight=np.eye(2) * 2.0),
             "lif": nir.LIF(tau=np.full(2, 0.01), r=np.ones(2), v_leak=np.zeros(2),
                            v_threshold=np.ones(2), v_reset=np.zeros(2)),
             "out": nir.Output({"output": np.array([2])})}
    edges = [("in", "w"), ("w", "lif"), ("lif", "out")]
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata={"dt": 1e-3}, type_check=False)


@st.composite
def nir_mutations(draw):
    """Edits of the written .nir (HDF5): a parameter array of any shape and values, an
    edge to a node that is not there, a node's type renamed, the dt changed or removed."""
    kinds = st.sampled_from(["param", "edge", "type", "dt", "delete"])
    return [(k, draw(st.integers(0, 10**6)), draw(ARRAY), draw(HOSTILE_TEXT),
             draw(st.floats(allow_nan=True, allow_infinity=True)))
            for k in draw(st.lists(kinds, min_size=0, max_size=3))]


def _apply_nir(path: Path, mutations) -> None:
    for kind, pick, array, text, number in mutations:
        with contextlib.suppress(Exception), h5py.File(path, "a") as f:
            g = f["node"]
            nodes = sorted(k for k in g["nodes"])
            node = g["nodes"][nodes[pick % len(nodes)]]
            if kind == "param":
                params = sorted(k for k in node if isinstance(node[k], h5py.Dataset)
                                and k != "type")
                if params:
                    name = params[pick % len(params)]
                    del node[name]
                    node.create_dataset(name, data=array)
            elif kind == "edge":
                edges = g["edges"]
                data = edges[()].astype(object)
                data[pick % len(data)][1] = text.encode()
                del g["edges"]
                g.create_dataset("edges", data=data.astype(bytes))
            elif kind == "type":
                del node["type"]
                node.create_dataset("type", data=text.encode())
            elif kind == "dt":
                g["metadata"]["dt"][...] = number
            else:
                del g["nodes"][nodes[pick % len(nodes)]]


def _check_nir(mutations):
    import nir
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        path = root / "net.nir"
        nir.write(path, _nir_graph(None))
        _apply_nir(path, mutations)
        out = root / "out"
        rc, stdout, _ = _run_cli(root, out, ["estimate", str(path), "--stimulus",
                                             "poisson:rate=100", "--steps", "5",
                                             "--profiles", "loihi", "--reset", "value",
                                             "--json", str(out / "e.json")])
        if rc == 0:
            doc = json.loads((out / "e.json").read_text())
            assert doc and "loihi" in stdout


@FAST
@given(nir_mutations())
def test_mutated_nir_files_are_estimated_or_refused_in_one_line(mutations):
    _check_nir(mutations)


@pytest.mark.slow
@SLOW
@given(nir_mutations())
def test_mutated_nir_files_many(mutations):
    _check_nir(mutations)


def test_the_suite_is_bounded():
    # the default run's budget: about 30 examples per target, no deadline flakes
    assert FAST.max_examples == 30 and FAST.deadline is None and FAST.derandomize
    assert os.environ.get("HYPOTHESIS_PROFILE") in (None, "", "default")
