"""The command line helps a user who mistypes (issue 35 item 4): the closest name in one
line, examples in every ``--help``, a shell completion script, tables that fit 80 columns,
scaled units and no "nan" in what people read."""
from __future__ import annotations

import pytest

from deploy.cli import main
from hw_profiles.errors import did_you_mean, suggestion


def _error(capsys, argv) -> str:
    """The one error line of ``neuroedge ARGV`` (argparse's errors exit; the rest return)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err   # one line
    return err.strip()


def test_did_you_mean_picks_the_closest_or_nothing():
    # difflib ratio 2*M/T: 'a10' vs 'a100' = 2*3/7 = 0.86; vs 'h100' = 2*2/7 = 0.57
    assert did_you_mean("a10", ["h100", "a100", "loihi2"]) == "a100"
    assert did_you_mean("A100", ["a100"]) == "a100"          # case is ignored
    assert did_you_mean("zzzz", ["a100", "h100"]) is None   # nothing shares a letter
    assert suggestion("quik", ["quick", "full"]) == "did you mean 'quick'?"
    assert suggestion("quik", ["quick"], "neuroedge models") == \
        "did you mean 'quick'? (neuroedge models lists them)"


@pytest.mark.parametrize("argv, line", [
    (["simulate", "mlpp"],
     "neuroedge: error: unknown model 'mlpp': did you mean 'mlp'? (neuroedge models lists them)"),
    (["simulate", "mlp", "--profile", "a10"],
     "neuroedge: error: unknown hardware profile 'a10': did you mean 'a100'? (neuroedge "
     "profiles lists them)"),
    (["profiles", "show", "a10"],
     "neuroedge: error: unknown hardware profile 'a10': did you mean 'a100'? (neuroedge "
     "profiles lists them)"),
    (["simulate", "mlp", "--dataset", "digitz"],
     "neuroedge: error: model 'mlp' takes datasets digits, fashion-mnist; got 'digitz': did "
     "you mean 'digits'?"),
    (["simulate", "mlp", "--set", "epoch=3"],
     "neuroedge: error: --set epoch: mlp has no setting 'epoch'; did you mean 'epochs'? "
     "(neuroedge models lists them)"),
    (["simulate", "mlp", "--preset", "quik"],
     "neuroedge: error: --preset: invalid choice 'quik'; did you mean 'quick'? (see "
     "'neuroedge simulate --help')"),
    (["export", "mlp", "--target", "onx"],
     "neuroedge: error: --target: invalid choice 'onx'; did you mean 'onnx'? (see "
     "'neuroedge export --help')"),
    (["simulat"],
     "neuroedge: error: command: invalid choice 'simulat'; did you mean 'simulate'? (see "
     "'neuroedge --help')"),
])
def test_a_mistyped_name_gets_the_closest_in_one_line(tmp_path, monkeypatch, capsys, argv,
                                                       line):
    monkeypatch.chdir(tmp_path)
    assert _error(capsys, argv) == line


def test_a_mistyped_stack_gets_the_closest():
    import hw_profiles
    from hw_profiles.errors import NeuroedgeError
    from sim.execution import resolve_stack
    with pytest.raises(NeuroedgeError, match=r"stack 'eger' is not a software stack of profile "
                                             r"'a100' \(gpu\); did you mean 'eager'\?$"):
        resolve_stack(hw_profiles.load("a100"), "eger")


def test_nothing_close_still_lists_every_choice(capsys):
    err = _error(capsys, ["simulate", "mlp", "--preset", "zzz"])
    assert err.startswith("neuroedge: error: --preset: invalid choice 'zzz'; choose from "
                          "'quick', 'full'")
