"""Hostile paths (issue 32, new classes): an input that is a FIFO or a device is refused
before it is opened (a read would block forever, or never end), naming what it is; a
profile file is size-checked before it is read; an output that is a symbolic link is
refused without --force and, with it, the link is replaced, never written through."""
import contextlib
import os
import signal

import pytest

from deploy.cli import main


@contextlib.contextmanager
def _no_hang(seconds=20):
    """Fail (not hang) if the command blocks on a FIFO."""
    def fail(*_):
        raise AssertionError(f"blocked for {seconds} s")
    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("name, argv", [
    ("run.h5", ["report", "{}"]),
    ("p.toml", ["profiles", "show", "{}"]),
    ("net.nir", ["estimate", "{}", "--stimulus", "poisson:rate=1", "--steps", "5",
                 "--profiles", "loihi"]),
    ("net.py", ["estimate", "{}:make", "--input-shape", "1,4", "--profiles", "a100"]),
])
def test_a_fifo_input_is_refused_before_it_is_opened(tmp_path, capsys, name, argv):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    with _no_hang():
        assert main([a.replace("{}", str(fifo)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a FIFO (named pipe), not a regular file" in err


def test_a_fifo_stimulus_is_refused(tmp_path, capsys):
    import nir
    import numpy as np
    graph = nir.NIRGraph(nodes={"in": nir.Input({"input": np.array([2])}),
                                "w": nir.Linear(weight=np.eye(2)),
                                "lif": nir.LIF(tau=np.full(2, 0.01), r=np.ones(2),
                                               v_leak=np.zeros(2), v_threshold=np.ones(2),
                                               v_reset=np.zeros(2)),
                                "out": nir.Output({"output": np.array([2])})},
                         edges=[("in", "w"), ("w", "lif"), ("lif", "out")])
    nir.write(tmp_path / "net.nir", graph)
    os.mkfifo(tmp_path / "s.npy")
    with _no_hang():
        assert main(["estimate", str(tmp_path / "net.nir"), "--stimulus",
                     str(tmp_path / "s.npy"), "--steps", "5", "--dt", "1e-3",
                     "--profiles", "loihi", "--reset", "value"]) == 2
    assert "stimulus file" in capsys.readouterr().err


def test_a_device_as_profile_is_named(capsys):
    with _no_hang():
        assert main(["profiles", "show", "/dev/zero"]) == 2
    assert "'/dev/zero' is a character device, not a regular file" in capsys.readouterr().err


def test_a_huge_profile_is_refused_by_its_size_before_it_is_read(tmp_path, capsys):
    # a 10 MB name; the limit is 1 MiB = 1,048,576 bytes (shipped profiles: under 20 kB)
    path = tmp_path / "big.toml"
    path.write_text('name = "' + "x" * 10_000_000 + '"\n')
    assert main(["profiles", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert "is 10,000,010 bytes; a profile is at most 1,048,576" in err


def test_a_symlinked_output_is_replaced_never_written_through(tmp_path, capsys,
                                                             toy_gpu_path):
    import deploy.runfile as runfile
    from hw_profiles import load
    from models.registry import RunResult
    from sim.ledger import Ledger
    run = tmp_path / "run.h5"
    runfile.write_run(run, RunResult(model="mlp", profile=load(toy_gpu_path),
                                     dataset="digits", config={}, metrics={"a": 1.0},
                                     ledger=Ledger()))
    target = tmp_path / "precious.txt"
    target.write_text("precious")
    link = tmp_path / "r.json"
    link.symlink_to(target.name)
    assert main(["report", str(run), "--json", str(link), "--quiet"]) == 2
    assert "already exists: pass --force" in capsys.readouterr().err
    assert main(["report", str(run), "--json", str(link), "--quiet", "--force"]) == 0
    assert target.read_text() == "precious"          # the link's target is untouched
    assert not link.is_symlink() and link.read_text().startswith("{")
