"""Every ``--help`` ends with real examples (issue 35 item 4), and every example parses: an
example naming an option, choice, model or profile that does not exist fails here."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

import hw_profiles
import models
from deploy.cli import build_parser, main
from deploy.cli_examples import EXAMPLES, command_parsers

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = sorted(command_parsers(build_parser()))


def test_every_command_has_two_to_four_examples():
    assert sorted(EXAMPLES) == COMMANDS   # no command without, no examples of a gone command
    for command, examples in EXAMPLES.items():
        assert 2 <= len(examples) <= 4, command
        for line, _ in examples:
            assert shlex.split(line)[:2] == ["neuroedge", command], line


def _cases():
    return [pytest.param(command, line, id=f"{command}-{i}")
            for command, examples in EXAMPLES.items() for i, (line, _) in enumerate(examples)]


@pytest.mark.parametrize("command, line", _cases())
def test_an_example_parses_and_names_what_exists(command, line):
    argv = shlex.split(line)[1:]
    if ">" in argv:                       # a shell redirection is not the command's
        argv = argv[:argv.index(">")]
    args = build_parser().parse_args(argv)    # argparse exits (SystemExit 2) on a bad option
    assert args.command == command
    shipped = set(hw_profiles.available())
    for dest in ("profile", "profiles", "compare", "name"):
        for name in (getattr(args, dest, None) or "").split(","):
            if name:
                assert name in shipped, f"{line}: no profile {name!r}"
    model = getattr(args, "model", None)
    if model and ".py:" not in model and command not in ("estimate", "measure"):
        assert model in models.REGISTRY, f"{line}: no model {model!r}"
    if command == "sweep":
        assert (ROOT / args.spec).is_file(), f"{line}: {args.spec} is not in the repository"


def test_help_ends_with_the_examples_unfolded(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")   # narrower than the longest example
    with pytest.raises(SystemExit):
        main(["estimate", "--help"])
    out = capsys.readouterr().out
    tail = out[out.index("examples:"):].splitlines()
    # each example is one line, as typed, however narrow the help is wrapped
    assert tail[1] == "  " + EXAMPLES["estimate"][0][0]
    assert tail[2] == "      # " + EXAMPLES["estimate"][0][1]
    # the description is still wrapped (argparse fills to COLUMNS - 2 = 58)
    description = out[out.index("Count a model"):out.index("positional arguments")]
    assert len(description.splitlines()) >= 3
    assert max(len(ln) for ln in description.splitlines()) <= 58
