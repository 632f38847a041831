"""Example invocations at the end of every ``neuroedge COMMAND --help`` (issue 35 item 4).

One table, :data:`EXAMPLES`, holds two to four real command lines per command with what each
does; :func:`add_examples` puts them in each sub-parser's epilog after the parser is built, so
the command modules (``deploy.cli``, ``deploy.estimate_cli``, ...) stay as they are.
``tests/deploy/test_cli_examples.py`` parses every example with the real parser, so an example
can never name an option, choice, model or profile that does not exist.
"""
from __future__ import annotations

import argparse
import textwrap

# command -> (command line, what it does); file names are the user's (run.h5, my_net.py) or
# files this repository ships (examples/sweep-diffpc.toml)
EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "profiles": (
        ("neuroedge profiles", "every shipped profile, one row each"),
        ("neuroedge profiles show loihi2", "every number of one profile with its source"),
        ("neuroedge profiles --width 80", "the listing laid out for 80 columns"),
    ),
    "models": (
        ("neuroedge models", "registered methods, their datasets and settings"),
        ("neuroedge models --width 80", "the listing laid out for 80 columns"),
    ),
    "simulate": (
        ("neuroedge simulate", "DiffPC on digits on loihi2 (the default)"),
        ("neuroedge simulate mlp --profile a100 --out run.h5", "train, count, price on an A100"),
        ("neuroedge simulate mlp --seed 1 --set epochs=3", "one setting changed"),
        ("neuroedge simulate snn_cuba --profile loihi --compare truenorth,loihi2",
         "re-placed and re-run on two more chips"),
    ),
    "export": (
        ("neuroedge export bep --target c", "C99 project in exports/bep-c/"),
        ("neuroedge export --target onnx --from run.h5", "from a run file: no training"),
        ("neuroedge export --target c-int8 my_net.py:make_net --input-shape 1,784 "
         "--calibration digits", "your own model as int8 C"),
    ),
    "experiment": (
        ("neuroedge experiment diffpc", "DiffPC's own study at the quick preset, as JSON"),
        ("neuroedge experiment bep --preset full --seed 3", "the paper's scale, seed 3"),
    ),
    "report": (
        ("neuroedge report run.h5", "the run's report in the terminal"),
        ("neuroedge report run.h5 --profile h100 --html h100.html", "priced on another chip"),
        ("neuroedge report run.h5 --json -", "headline figures as JSON on stdout"),
    ),
    "compare": (
        ("neuroedge compare run.h5 --profiles a100,h100,jetson-orin", "ratios to the first"),
        ("neuroedge compare run.h5 --profiles a100,x86-avx2 --html cmp.html",
         "also as an HTML page"),
    ),
    "validate": (
        ("neuroedge validate", "predicted against every published measurement"),
        ("neuroedge validate --only truenorth-rate-20hz", "one row"),
        ("neuroedge validate --json rows.json", "the rows and summary as JSON too"),
    ),
    "estimate": (
        ("neuroedge estimate my_net.py:make_net --input-shape 1,784 "
         "--profiles jetson-orin,cortex-m7,a100", "your torch model on three chips"),
        ("neuroedge estimate my_net.py:make_net --input-shape 1,784 --profiles a100 --train "
         "--dtype int8", "with one training step, int8"),
        ("neuroedge estimate net.nir --stimulus poisson:rate=50 --steps 1000 "
         "--profiles loihi,loihi2", "a NIR spiking network on neuromorphic chips"),
    ),
    "measure": (
        ("neuroedge measure my_net.py:make_net --profile x86-avx2 --input-shape 1,784",
         "run it here beside its price"),
        ("neuroedge measure --calibrate --profile x86-avx2 --out mine.toml",
         "fit a profile of this machine"),
    ),
    "sweep": (
        ("neuroedge sweep examples/sweep-diffpc.toml --dry-run", "list the runs"),
        ("neuroedge sweep examples/sweep-diffpc.toml --workers 2 --out sweeps/diffpc",
         "run them on a local Dask cluster"),
        ("neuroedge sweep examples/sweep-diffpc.toml --out sweeps/diffpc --resume",
         "run only what is missing"),
    ),
    "completion": (
        ("neuroedge completion bash > ~/.local/share/bash-completion/completions/neuroedge",
         "bash: completion in every new shell"),
        ("neuroedge completion zsh > ~/.zfunc/_neuroedge", "zsh (~/.zfunc on $fpath)"),
        ("neuroedge completion fish > ~/.config/fish/completions/neuroedge.fish", "fish"),
    ),
}


class ExampleHelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that an indented line (an example) is kept as written:
    descriptions still wrap to the terminal, examples are never folded mid-command."""

    def _fill_text(self, text, width, indent):
        out = []
        for paragraph in text.split("\n\n"):
            if any(line.startswith("  ") for line in paragraph.splitlines()):
                out.append("\n".join(indent + line for line in paragraph.splitlines()))
            else:
                out.append(textwrap.fill(" ".join(paragraph.split()), width,
                                         initial_indent=indent, subsequent_indent=indent))
        return "\n\n".join(out)


def epilog(command: str) -> str:
    """The ``examples:`` block of one command: each command line, then what it does."""
    lines = ["examples:"]
    for line, what in EXAMPLES[command]:
        lines += [f"  {line}", f"      # {what}"]
    return "\n".join(lines)


def command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-parsers of ``parser`` by command name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def add_examples(parser: argparse.ArgumentParser) -> None:
    """Give every command of ``parser`` its examples (``tests/deploy/test_cli_examples.py``
    fails for a command that has none)."""
    for name, sub in command_parsers(parser).items():
        if name in EXAMPLES:
            sub.epilog = epilog(name)
        sub.formatter_class = ExampleHelpFormatter
