"""Uncounted is never silent: an op with no cost formula marks the estimate a lower bound in
its first line, ``strict`` refuses it, and a model with nothing counted is never priced 0 J.

The uncounted op is a custom op registered here (``neuroedge_test::twice``) that computes in
numpy: the engine sees no torch op of its work (a Python custom op computing with torch ops
is counted by them), so no engine can know its cost, whatever formulas it gains later.
"""
import pytest
import torch
import torch.nn as nn

from deploy.cli import main
from deploy.estimate import estimate
from deploy.estimate_cli import table
from sim.errors import ModelError


@torch.library.custom_op("neuroedge_test::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(x.detach().numpy() * 2)


class Twice(nn.Module):
    def forward(self, x):
        return twice(x)


def partly_counted() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 3), Twice(), Twice())


def test_uncounted_op_marks_the_estimate_a_lower_bound():
    est = estimate(partly_counted(), (2, 4), profiles=["a100", "cortex-m7"])
    # two Twice modules, one call each on the batch of 2: 2 calls
    assert est.uncounted == {"neuroedge_test.twice": 2} and est.lower_bound
    # the Linear is still counted: 2 samples x 4 x 3 = 24 MACs, so a positive lower bound
    assert est.ledgers["a100"].total_ops()["mac_fp32"] == 24
    assert est.reports["a100"].total_j > 0
    first = table(est).splitlines()[0]
    assert first.startswith("LOWER BOUND: 1 op(s) ran uncounted (2 call(s): "
                            "neuroedge_test.twice x2)")


def test_strict_refuses_uncounted_ops_in_one_line():
    with pytest.raises(ModelError) as e:
        estimate(partly_counted(), (2, 4), profiles=["a100"], strict=True)
    assert "neuroedge_test.twice (2 call(s))" in str(e.value) and "\n" not in str(e.value)


def test_a_model_with_nothing_counted_is_refused_not_priced_at_zero():
    with pytest.raises(ModelError, match="no op of Twice could be counted; uncounted: "
                                         "neuroedge_test.twice "):
        estimate(Twice(), (2, 4), profiles=["a100"])


def test_a_model_that_runs_no_op_is_a_lower_bound_saying_why(tmp_path, capsys):
    """nn.Identity runs no op: nothing to count, not an op that could not be counted, so it
    is priced (0 J, 0 s) as pricing marks it, a lower bound with its note. Before, the rows
    said "lower bound" while ``lower_bound`` (and the JSON's) was False, and no note said
    why."""
    import json
    est = estimate(nn.Identity(), (1, 8), profiles=["a100", "cortex-m7"])
    assert est.uncounted == {} and est.lower_bound
    assert [r["bound"] for r in est.rows()] == ["lower bound", "lower bound"]
    assert [r["total_j"] for r in est.rows()] == [0.0, 0.0]
    # sim.pricing's own words, once though both profiles' reports carry them
    nothing = ("nothing was counted (a run with counting turned off, or an empty ledger): "
               "every figure is 0 and a lower bound")
    assert est.notes.count(nothing) == 1
    assert table(est).splitlines()[0].startswith("Identity (torch): 1 inference sample(s)")
    assert f"note: {nothing}" in table(est)
    path = tmp_path / "m.py"
    path.write_text("import torch.nn as nn\n\n\ndef make():\n    return nn.Identity()\n")
    assert main(["estimate", f"{path}:make", "--input-shape", "1,8", "--profiles", "a100",
                 "--json", "-", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["lower_bound"] is True and doc["rows"][0]["bound"] == "lower bound"
    assert nothing in doc["notes"]


def test_fully_counted_model_is_not_a_lower_bound():
    est = estimate(nn.Linear(4, 3), (2, 4), profiles=["a100"], strict=True)
    assert est.uncounted == {} and not est.lower_bound
    assert not table(est).startswith("LOWER BOUND")


MODEL = '''
import torch
import torch.nn as nn


@torch.library.custom_op("neuroedge_cli_test::thrice", mutates_args=())
def thrice(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(x.detach().numpy() * 3)


class Thrice(nn.Module):
    def forward(self, x):
        return thrice(x)


def make():
    return nn.Sequential(nn.Linear(4, 3), Thrice())
'''


def test_cli_headline_and_strict(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(MODEL)
    assert main(["estimate", f"{path}:make", "--input-shape", "2,4", "--profiles", "a100"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("LOWER BOUND: 1 op(s) ran uncounted (1 call(s): "
                                          "neuroedge_cli_test.thrice x1)")
    code = main(["estimate", f"{path}:make", "--input-shape", "2,4", "--profiles", "a100",
                 "--strict"])
    err = capsys.readouterr().err
    assert code != 0 and "thrice (1 call(s))" in err



def test_a_training_step_through_sgn_is_estimated():
    """sgn's backward makes an efficient zero tensor (no storage): the training step's
    memory trace read its data pointer and the estimate failed as "training step failed
    ... check the loss and target"; the zero tensor is free (no data), not uncounted."""
    import neuroedge

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(16, 16), nn.Linear(16, 4)

        def forward(self, x):
            h = self.a(x)
            return self.b(h + torch.sgn(h))

    est = neuroedge.estimate(Net(), (8, 16), profiles=["a100"], loss="auto")
    assert "_efficientzerotensor" not in est.uncounted
    # forward 8 x (16 x 16 + 16 x 4) = 2,560 MACs; the training step at least twice that
    assert est.ledgers["a100"].total_ops("train")["mac_fp32"] >= 2 * 2560
