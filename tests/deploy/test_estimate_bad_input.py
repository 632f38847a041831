"""Bad input to ``neuroedge estimate`` gets one line: a factory that raises or exits, a file
that exits at import, a factory returning a non-module, a drawn input over the size limit."""
import pytest
import torch

from deploy.cli import main
from deploy.estimate import MAX_DRAWN_INPUT_BYTES, estimate
from deploy.estimate_cli import load_model
from sim.errors import ModelError

FILE = '''
import sys

import torch.nn as nn


def raises():
    raise RuntimeError("no weights here")


def exits():
    sys.exit(3)


def not_a_module():
    return {"weights": 1}


def fine():
    return nn.Linear(4, 3)
'''


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "user.py"
    path.write_text(FILE)
    return path


@pytest.mark.parametrize("name, message", [
    ("raises", "raises() failed (RuntimeError: no weights here, line 8)"),
    ("exits", "exits() called sys.exit(3) (SystemExit: 3, line 12)"),
    ("not_a_module", "not_a_module() returned a dict; it must return a torch.nn.Module"),
])
def test_factory_errors_are_one_line(user_file, name, message):
    with pytest.raises(ModelError) as e:
        load_model(f"{user_file}:{name}")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_file_that_exits_at_import_is_one_line_and_no_exit(tmp_path, capsys):
    path = tmp_path / "script.py"
    path.write_text("import sys\nsys.exit('usage: script.py DATA')\n")
    code = main(["estimate", f"{path}:make", "--input-shape", "1,4", "--profiles", "a100"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1
    assert "called sys.exit('usage: script.py DATA')" in err and "__main__" in err


def test_drawn_input_over_the_limit_is_refused_before_allocating():
    # 1 x 1024 x 1024 x 257 float32 = 4 x 269,484,032 = 1,077,936,128 bytes > 2**30
    shape = (1, 1024, 1024, 257)
    with pytest.raises(ModelError) as e:
        estimate(torch.nn.Identity(), shape, profiles=["a100"])
    assert (f"would take 1,077,936,128 bytes in float32, over the "
            f"{MAX_DRAWN_INPUT_BYTES:,}-byte limit") in str(e.value)
