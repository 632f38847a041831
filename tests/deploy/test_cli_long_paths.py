"""A path argument the system cannot look up (a name over 255 bytes: ENAMETOOLONG) is one
line naming the argument, not a traceback from Path.is_dir."""
import pytest

from deploy.cli import main

LONG = "y" * 300


@pytest.mark.parametrize("argv, want", [
    (["report", LONG + ".h5"], "run file 'yyy"),
    (["compare", LONG + ".h5", "--profiles", "a100"], "run file 'yyy"),
])
def test_an_overlong_path_is_one_line(argv, want, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and want in err[0] and "give a shorter path" in err[0]


def test_an_overlong_profile_in_a_list_is_one_line(tmp_path, capsys):
    f = tmp_path / "m.py"
    f.write_text("import torch\n\n\ndef make():\n    return torch.nn.Linear(2, 2)\n")
    assert main(["estimate", f"{f}:make", "--input-shape", "1,2", "--profiles",
                 f"a100,{LONG}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'yyy" in err[0] and "too long" in err[0], err
