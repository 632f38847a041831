"""Every command's options with bad values (issue 35 item 4): negative counts, missing files,
bad choices, empty lists -- each one line, ``neuroedge: error: ...`` naming the option, exit
2, before any work (none of these trains, counts or writes anything)."""
from __future__ import annotations

import pytest

from deploy.cli import main


@pytest.fixture
def files(tmp_path):
    (tmp_path / "bad.toml").write_text("x = [\n")
    (tmp_path / "bad.h5").write_text("not hdf5\n")
    (tmp_path / "net.py").write_text("import torch.nn as nn\n\n\ndef make():\n"
                                     "    return nn.Linear(4, 2)\n")
    (tmp_path / "adir").mkdir()
    return tmp_path


CASES = [
    ("profiles --width -5", "argument --width: -5 is too narrow; give at least 40"),
    ("profiles show {d}/adir", "is a directory; pass a shipped profile name"),
    ("profiles show {d}/missing.toml", "profile file '{d}/missing.toml' does not exist"),
    ("models --width abc", "argument --width: 'abc' is not an integer width"),
    ("simulate mlp --seed -1", "argument --seed: -1 is out of range"),
    ("simulate mlp --set epochs=-3", "MLPConfig.epochs = -3: must be >= 1"),
    ("simulate mlp --set epochs", "--set 'epochs': expected KEY=VALUE"),
    ("simulate mlp --profile {d}/bad.toml", "bad.toml: TOML syntax error"),
    ("simulate mlp --compare ,,,", "--compare ',,,': expected a comma-separated list"),
    ("simulate mlp --out {d}/adir", "--out '{d}/adir' is a directory"),
    ("simulate mlp --preset fast", "--preset: invalid choice 'fast'"),
    ("export --target onnx --from {d}/missing.h5", "run file '{d}/missing.h5' does not exist"),
    ("export --target onnx --from {d}/bad.h5", "is not a readable HDF5 file"),
    ("export --target c-int8 {d}/net.py:make --input-shape 1,4 --calibration "
     "{d}/missing.npy --out {d}/o", "--calibration '{d}/missing.npy': no such file"),
    # '-1,4' is the option's (bad) value, not an unknown option
    ("export --target c-int8 {d}/net.py:make --input-shape -1,4 --calibration digits "
     "--out {d}/o", "--input-shape '-1,4': expected comma-separated integers >= 1"),
    ("experiment mlp --seed 99999999999", "argument --seed: 99999999999 is out of range"),
    ("report {d}/adir", "run file '{d}/adir' is a directory"),
    ("compare {d}/missing.h5 --profiles a100", "run file '{d}/missing.h5' does not exist"),
    ("validate --only ,", "--only ',': expected comma-separated row ids"),
    ("validate --only truenorth-rate-20h", "did you mean 'truenorth-rate-20hz'?"),
    ("validate --json {d}/adir", "--json '{d}/adir' is a directory"),
    ("estimate {d}/net.py:make --profiles a100 --input-shape -1,4",
     "--input-shape '-1,4': expected comma-separated integers >= 1"),
    ("estimate {d}/net.py:make --profiles a100 --input-shape 1,4 --batch -2",
     "argument --batch: -2 must be >= 1"),
    ("estimate {d}/net.py:make --profiles a100 --input-shape 1,4 --depth 0",
     "argument --depth: 0 must be >= 1"),
    ("estimate {d}/missing.nir --profiles loihi", "NIR file '{d}/missing.nir' does not exist"),
    ("estimate {d}/missing.nir --profiles loihi --steps -3", "argument --steps: -3 must be"),
    ("estimate {d}/missing.nir --profiles loihi --dt -1e-3",
     "argument --dt: -1e-3 must be a finite number of seconds > 0"),
    ("estimate {d}/missing.nir --profiles loihi --reset zero", "--reset: invalid choice"),
    ("measure {d}/net.py:make --profile x86-avx2 --input-shape 1,4 --repeats 0",
     "argument --repeats: 0 must be >= 1"),
    ("measure --calibrate --profile x86-avx2", "--calibrate: give --out PATH.toml"),
    ("sweep {d}/missing.toml --dry-run", "sweep spec {d}/missing.toml: no such file"),
    ("sweep {d}/bad.toml --dry-run", "not valid TOML"),
    ("sweep examples/sweep-diffpc.toml --workers -1 --dry-run",
     "argument --workers: -1 must be >= 1"),
    ("completion tcsh", "shell: invalid choice 'tcsh'; choose from 'bash', 'zsh', 'fish'"),
]


@pytest.mark.parametrize("argv, fragment", CASES, ids=[c[0].split()[0] + str(i)
                                                       for i, c in enumerate(CASES)])
def test_a_bad_value_is_one_error_line(files, capsys, argv, fragment):
    try:
        code = main(argv.format(d=files).split())
    except SystemExit as exc:
        code = exc.code
    err = "\n".join(ln for ln in capsys.readouterr().err.splitlines()
                    if not ln.startswith("neuroedge: warning:"))
    assert code == 2
    assert err.startswith("neuroedge: error: ") and "\n" not in err, err
    assert fragment.format(d=files) in err
    assert sorted(p.name for p in files.iterdir()) == ["adir", "bad.h5", "bad.toml", "net.py"]


@pytest.mark.parametrize("argv", [["simulate", "mlp", "--out", ""],
                                  ["simulate", "mlp", "--html", ""],
                                  ["export", "tsetlin", "--target", "c", "--out", ""],
                                  ["sweep", "examples/sweep-diffpc.toml", "--out", ""]])
def test_an_empty_output_path_is_refused_not_taken_as_the_default(argv, tmp_path,
                                                                  monkeypatch, capsys):
    """``--out ""`` (an unset shell variable) wrote into the default place (exports/...,
    sweeps/..., runs/...) and exited 0."""
    from pathlib import Path
    spec = Path(__file__).resolve().parents[2] / "examples" / "sweep-diffpc.toml"
    argv = [str(spec) if a == "examples/sweep-diffpc.toml" else a for a in argv]
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    option = argv[argv.index("") - 1]
    assert f"{option}: empty path" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []          # nothing trained or written
