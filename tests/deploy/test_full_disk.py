"""A full disk (issue 32): every writer ends in one OutputError line naming the output and
the space needed, leaves no temporary, and the interpreter survives (HDF5 is built in
memory, so h5py never sees the failing write). A command's outputs are written all or
none, and stdout on a full disk is one line naming stdout."""
import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

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


def _no_leftovers(root):
    """Nothing under ``root`` but what the test put there: no temporary, no folder made."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_folders_made_for_an_output_are_removed_when_the_disk_is_full(tmp_path, monkeypatch):
    monkeypatch.setattr(outputs.os, "fsync", _full)
    dest = tmp_path / "a" / "b" / "x.json"
    with pytest.raises(OutputError) as info:
        outputs.write_text(dest, "{}", parents=True, option="--json")
    _one_line(info, dest, "it needs 2 bytes")
    assert _no_leftovers(tmp_path) == []


def _hand_nir(path):
    import nir
    import numpy as np
    graph = nir.NIRGraph(
        nodes={"in": nir.Input({"input": np.array([2])}),
               "w": nir.Linear(weight=np.eye(2) * 2.0),
               "lif": nir.LIF(tau=np.full(2, 0.01), r=np.ones(2), v_leak=np.zeros(2),
                              v_threshold=np.ones(2), v_reset=np.zeros(2)),
               "out": nir.Output({"output": np.array([2])})},
        edges=[("in", "w"), ("w", "lif"), ("lif", "out")])
    nir.write(path, graph)
    return path


def test_estimate_json_on_a_full_disk(tmp_path, monkeypatch, capsys):
    from deploy.cli import main
    src = _hand_nir(tmp_path / "net.nir")
    monkeypatch.setattr(outputs.os, "fsync", _full)
    dest = tmp_path / "sub" / "e.json"
    assert main(["estimate", str(src), "--stimulus", "poisson:rate=100", "--steps", "5",
                 "--dt", "1e-3", "--profiles", "loihi", "--reset", "value",
                 "--json", str(dest)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device (it needs " in err
    assert repr(str(dest)) in err
    assert _no_leftovers(tmp_path) == ["net.nir"]   # no sub/, no temporary


def test_nir_export_on_a_full_disk_is_one_line_not_an_h5py_traceback(tmp_path, monkeypatch):
    # nir.write to the disk failed inside HDF5 (a RuntimeError traceback from h5py's close);
    # the graph is now built in memory and written as plain bytes
    from deploy.nir_export import export_nir
    from deploy.nir_import import read_nir
    net = read_nir(_hand_nir(tmp_path / "net.nir"), dt=1e-3, reset="value")
    monkeypatch.setattr(outputs.os, "fsync", _full)
    dest = tmp_path / "out" / "x.nir"
    with pytest.raises(OutputError) as info:
        export_nir(net, dest)
    _one_line(info, dest, "it needs")
    assert _no_leftovers(tmp_path) == ["net.nir"]


def test_html_report_on_a_full_disk_says_how_many_bytes_it_needed(tmp_path, toy_gpu_path,
                                                                  monkeypatch):
    from deploy import report as rep
    run = _result(toy_gpu_path)
    energy = run.ledger.price(run.profile)
    # the same report written for real: its size is what the full disk needed
    size = rep.html_report(run, [energy], tmp_path / "probe.html").stat().st_size
    monkeypatch.setattr(outputs.os, "fsync", _full)
    dest = tmp_path / "d" / "r.html"
    with pytest.raises(OutputError) as info:
        rep.html_report(run, [energy], dest, parents=True)
    _one_line(info, dest, f"it needs {size:,} bytes")
    assert _no_leftovers(tmp_path) == ["probe.html"]


def test_serial_sweep_stops_at_the_first_run_the_disk_refuses(tmp_path, monkeypatch, capsys):
    from deploy.cli import main
    spec = tmp_path / "s.toml"
    # mlp on digits, one epoch, 8 hidden units: about a second a run
    spec.write_text('name = "tiny"\nmodels = ["mlp"]\nseeds = [0, 1]\nprofiles = ["a100"]\n'
                    '[grid]\nepochs = [1]\n[grid.mlp]\nhidden = [[8]]\n')
    attempts = []

    def full(*_args, **_kw):
        attempts.append(1)
        _full()
    monkeypatch.setattr(outputs.os, "fsync", full)
    out = tmp_path / "sw"
    assert main(["sweep", str(spec), "--serial", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err
    assert "the sweep stopped there with 0 run file(s) complete" in err and "--resume" in err
    assert len(attempts) == 1      # the second run was never simulated
    # no run file, no temporary; and the folder, runs folder and lock the sweep made, empty
    # when it stopped, are removed with it (nothing there to resume)
    assert not out.exists() and _no_leftovers(tmp_path) == ["s.toml"]


# -- stdout on a full disk: one line naming stdout, exit 2, for every command ----------------
STDOUT_FULL = "neuroedge: error: stdout could not be written (No space left on device)"


def _neuroedge(args, stdout, **kw):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2]),
           "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(kw.pop("env", {}))
    return subprocess.run([sys.executable, "-m", "deploy.cli", *map(str, args)],
                          stdout=stdout, stderr=subprocess.PIPE, text=True, env=env,
                          timeout=300, check=False, **kw)


@pytest.fixture
def stored_run(tmp_path, toy_gpu_path):
    return runfile.write_run(tmp_path / "run.h5", _result(toy_gpu_path))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("command", [
    ["report", "RUN"], ["report", "RUN", "--json", "-", "--quiet"],
    ["compare", "RUN", "--profiles", "a100,h100"], ["profiles"], ["profiles", "show", "a100"],
    ["validate", "--only", "truenorth-rate-20hz"],
    ["estimate", "MODEL:make", "--profiles", "a100", "--input-shape", "1,8"],
])
def test_every_command_says_when_stdout_is_a_full_disk(command, stored_run, tmp_path):
    model = tmp_path / "tiny.py"
    model.write_text("import torch.nn as nn\n\n\ndef make():\n    return nn.Linear(8, 4)\n")
    args = [str(stored_run) if a == "RUN" else a.replace("MODEL", str(model))
            for a in command]
    with open("/dev/full", "w") as full:
        proc = _neuroedge(args, full)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(STDOUT_FULL) and proc.stderr.count("\n") == 1, proc.stderr


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_stdout_that_fills_partway_is_an_error_not_a_truncated_file(stored_run, tmp_path,
                                                                    unbuffered):
    # a file-size limit is a disk that takes the first 2,000 bytes and refuses the rest
    # (EFBIG); under PYTHONUNBUFFERED Python's text layer dropped the refused rest without
    # a word, and the command exited 0 with the JSON cut off
    dest = tmp_path / "r.json"
    with open(dest, "w") as out:
        proc = _neuroedge(["report", stored_run, "--json", "-", "--quiet"], out,
                          env={"PYTHONUNBUFFERED": unbuffered},
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                                (2000, 2000)))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == ("neuroedge: error: stdout could not be written (File too large); "
                           "what was printed there is incomplete: send stdout elsewhere\n")
    assert dest.stat().st_size == 2000


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_stdout_that_cannot_encode_the_tables_still_gets_the_report(stored_run, tmp_path,
                                                                      encoding):
    # LANG=C or PYTHONIOENCODING=ascii: a table's rule ended the report in a
    # UnicodeEncodeError traceback (status 1); the characters stdout cannot hold become '?'
    dest = tmp_path / "r.txt"
    with open(dest, "w") as out:
        proc = _neuroedge(["report", stored_run, "--width", "80"], out,
                          env={"PYTHONIOENCODING": encoding})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert dest.read_bytes().decode(encoding).startswith("neuroedge report: ")


def test_a_closed_stdout_is_one_line_too(tmp_path):
    # `neuroedge profiles >&-`: Python starts with sys.stdout None; the listing's first line
    # ended in an AttributeError traceback
    proc = _neuroedge(["profiles"], subprocess.DEVNULL,
                      preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == ("neuroedge: error: stdout could not be written (Bad file "
                           "descriptor); what was printed there is incomplete: send stdout "
                           "elsewhere\n")


class _FullStdout:
    """A stdout on a full disk: its writes (or only its flushes) are refused."""

    def __init__(self, refuse_write: bool):
        self.refuse_write, self.written = refuse_write, []

    def write(self, text):
        if self.refuse_write:
            _full()
        self.written.append(text)
        return len(text)

    def flush(self):
        _full()

    def isatty(self):
        return False


@pytest.mark.parametrize("refuse_write", [True, False])
def test_stdout_refused_in_process_is_one_line(stored_run, capsys, monkeypatch, refuse_write):
    from deploy.cli import main
    capsys.readouterr()
    full = _FullStdout(refuse_write)
    monkeypatch.setattr("sys.stdout", full)
    assert main(["report", str(stored_run)]) == 2
    assert capsys.readouterr().err == STDOUT_FULL + (
        "; what was printed there is incomplete: free some space, or send stdout elsewhere\n")
    assert sys.stdout is full     # main gave the stream it found back


# -- a command's outputs on a full disk: all or none ------------------------------------------
def _full_for(name):
    """os.fsync refusing the temporary of the output named ``name`` only."""
    real = os.fsync

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(f"/{name}"):
            _full()
        return real(fd)
    return fsync


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_report_whose_json_the_disk_refuses_leaves_no_html(command, stored_run, tmp_path,
                                                               monkeypatch, capsys):
    from deploy.cli import main
    monkeypatch.setattr(outputs.os, "fsync", _full_for("x.json"))
    html, js = tmp_path / "o4" / "r.html", tmp_path / "full" / "x.json"
    extra = ["--profiles", "a100"] if command == "compare" else []
    capsys.readouterr()
    assert main([command, str(stored_run), *extra, "--html", str(html), "--json", str(js),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--json {str(js)!r} could not be written" in err
    assert "nothing was written" in err and "replaced" not in err
    assert _no_leftovers(tmp_path) == ["run.h5"]      # no r.html, no o4/, no full/


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_simulate_whose_html_the_disk_refuses_keeps_the_run_file_and_says_so(
        tmp_path, monkeypatch, capsys):
    """The run file holds the training paid for: kept, and the error says so (it said
    "nothing was written" of the HTML while the run file stayed, unnamed)."""
    from deploy.cli import main
    spec_run = tmp_path / "sub" / "r.h5"
    monkeypatch.setattr(outputs.os, "fsync", _full_for("r.html"))
    # mlp on digits with 8 hidden units and one epoch: about a second
    assert main(["simulate", "mlp", "--set", "epochs=1", "--set", "hidden=8", "--out",
                 str(spec_run), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "r.html' could not be written" in err
    assert f"the run file {str(spec_run)!r} is written and kept" in err
    assert _no_leftovers(tmp_path) == ["sub", "sub/r.h5"]


def test_html_to_stdout_is_refused_before_any_work(stored_run, tmp_path, monkeypatch, capsys):
    from deploy.cli import main
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(stored_run), "--html", "-", "--quiet"]) == 2
    assert capsys.readouterr().err == ("neuroedge: error: --html '-': only --json writes to "
                                       "stdout; give --html a file path (./- for a file "
                                       "named '-')\n")
    assert _no_leftovers(tmp_path) == ["run.h5"]      # no file named '-'
    assert main(["report", str(stored_run), "--html", "./-", "--quiet"]) == 0
    assert (tmp_path / "-").read_text().startswith("<!DOCTYPE html>")
