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


class Sized(nn.Module):
    def __init__(self, n, *, bias):
        super().__init__()
        self.fc = nn.Linear(n, 3, bias=bias)
'''


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "user.py"
    path.write_text(FILE)
    return path


@pytest.mark.parametrize("name, message", [
    # a factory without parameters is told to run, not to give its parameters defaults
    ("raises", "raises() failed (RuntimeError: no weights here, line 8); it is called with no "
               "arguments and must build the model: fix it so raises() runs"),
    ("Sized", "Sized() failed (TypeError: Sized.__init__() missing 1 required positional "
              "argument: 'n'); it is called with no arguments: give defaults to its "
              "parameters (n, bias)"),
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


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 2)

    def forward(self, x, feats, *, scale=1.0):
        return self.fc(torch.cat([x, feats], -1)) * scale


@pytest.mark.parametrize("model, example, fix", [
    # was "give an input of the shape TwoInputs.forward expects" for an input it lacked
    (TwoInputs(), (1, 2), "TwoInputs.forward also takes feats: give --input-shape once per "
                          "input, in its order"),
    (torch.nn.ModuleList([torch.nn.Linear(4, 4)]), (1, 4),
     "ModuleList has no forward of its own (a container such as ModuleList or ModuleDict)"),
    (torch.nn.Linear(4, 2).double(), torch.zeros(1, 4),
     "Linear's parameters are float64 and the input is float32: give an input of the "
     "model's dtype"),
    (torch.nn.Linear(4, 2), (1, 5), "give an input of the shape Linear.forward expects"),
])
def test_a_failed_forward_names_what_to_change(model, example, fix):
    with pytest.raises(ModelError) as e:
        estimate(model, example, profiles=["a100"])
    assert fix in str(e.value) and "\n" not in str(e.value)


def test_values_that_are_not_numbers_are_noted():
    """A NaN weight makes output 0 of each of the 2 samples NaN: 2 of 2 x 3 values; the
    cross-entropy over them is NaN too. Priced as before, with a note for each; a finite
    model gets neither note. (Before, such a model was priced without a word.)"""
    lin = torch.nn.Linear(4, 3)
    with torch.no_grad():
        lin.weight[0, 0] = float("nan")
    est = estimate(lin, (2, 4), profiles=["a100"], loss="cross_entropy")
    assert est.reports   # still priced
    text = " ".join(est.notes)
    assert "the forward's output holds 2 NaN or infinite value(s) of 6" in text
    assert "the training step's loss holds 1 NaN or infinite value(s) of 1" in text
    est = estimate(torch.nn.Linear(4, 3), (2, 4), profiles=["a100"], loss="cross_entropy")
    assert "NaN" not in " ".join(est.notes)


@pytest.mark.parametrize("fails_at, train", [(1, False), (2, True)])
def test_a_failure_of_neuroedges_own_bookkeeping_is_not_blamed_on_the_input(
        monkeypatch, fails_at, train):
    """Only the model's own forward (and training step) is the user's: a failure of the
    ledger flush when the counted block ends is neuroedge's. Before, the whole block was in
    the input's wrap, and a bug there read "estimate: Linear forward failed on example_input
    of shape (1, 4) (bookkeeping broke); give an input of the shape Linear.forward expects"
    (the training step's: "... training step failed on example_input ...; check the loss
    and target")."""
    from sim.torch_engine import TorchDevice
    calls = []
    record = TorchDevice._record_layers

    def broken(self, recorder):   # block 1: inference; block 2: the training step
        calls.append(1)
        if len(calls) == fails_at:
            raise RuntimeError("bookkeeping broke")
        return record(self, recorder)

    monkeypatch.setattr(TorchDevice, "_record_layers", broken)
    with pytest.raises(RuntimeError, match="^bookkeeping broke$") as e:
        estimate(torch.nn.Linear(4, 2), (1, 4), profiles=["a100"],
                 loss="mse" if train else None)
    assert not isinstance(e.value, ModelError)
