"""``neuroedge completion bash|zsh|fish``: a shell completion script generated from the
command line's own argparse parser by shtab (https://github.com/iterative/shtab).

shtab walks the parser for commands, options and ``choices``; this module tells it what the
free-text arguments hold, by their ``dest``: model names from ``models.REGISTRY``, profile
names from ``hw_profiles.available()`` (a profile may also be a TOML path, so files are
offered too), datasets from the model cards, files for run files, specs and outputs. The
names are written into the script when it is generated, so pressing TAB runs no Python; a
model or profile added later appears after ``neuroedge completion SHELL`` is run again.
``--profiles a100,h1<TAB>`` completes the last name of the comma-separated list.
"""
from __future__ import annotations

import argparse
import shlex
from textwrap import dedent

SHELLS = ("bash", "zsh", "fish")
PREFIX = "_neuroedge"

# dest -> what the argument holds; every other free-text argument completes nothing
_FILE_DESTS = {"run", "spec", "out", "html", "json", "run_from", "calibration"}
_PROFILE_DESTS = {"profile", "name"}       # 'profiles show NAME'
_PROFILE_LIST_DESTS = {"profiles", "compare"}
_OWN_MODEL_COMMANDS = {"estimate", "measure"}   # FILE.py:factory or FILE.nir, not a name


def _names(kind: str, words: list[str], files: bool) -> dict:
    """shtab's ``.complete`` for a fixed list of names (plus files when ``files``)."""
    fn = f"{PREFIX}_{kind}"
    listed = " ".join(words)
    bash_files = '\n  compgen -f -- "$1"' if files else ""
    # zsh: a function, as _arguments passes an action its own options (which _alternative
    # written inline would take for its own)
    zsh_files = " 'files:file:_files'" if files else ""
    # fish: the names, then the paths that complete the word (what shtab.FILE gives fish);
    # shtab writes the value inside -xka "...", which fish expands on TAB
    fish_files = " (__fish_complete_path (commandline -ct))" if files else ""
    return {
        "bash": fn,
        "zsh": fn,
        "fish": listed + fish_files,
        "preamble": {"bash": f'{fn}() {{\n  compgen -W {shlex.quote(listed)} -- "$1"'
                             f'{bash_files}\n}}\n',
                     "zsh": f"{fn}() {{\n  _alternative 'names:{kind}:({listed})'"
                            f"{zsh_files}\n}}\n"},
    }


def _name_list(kind: str, words: list[str]) -> dict:
    """shtab's ``.complete`` for a comma-separated list of names: the word after the last
    comma is completed, what is before it kept."""
    fn = f"{PREFIX}_{kind}_list"
    listed = " ".join(words)
    bash = dedent(f"""\
        {fn}() {{
          local cur="$1" head=""
          if [[ "$cur" == *,* ]]; then head="${{cur%,*}},"; cur="${{cur##*,}}"; fi
          compgen -P "$head" -W {shlex.quote(listed)} -- "$cur"
        }}
        """)
    fish = f"function {fn}\n  printf '%s\\n' {listed}\nend\n"
    zsh = f"{fn}() {{\n  _values -s , {kind} {listed}\n}}\n"
    return {"bash": fn, "zsh": fn,
            "fish": f"(__fish_complete_list , {fn})",   # fish's own helper for a,b,c lists
            "preamble": {"bash": bash, "zsh": zsh, "fish": fish}}


def annotate(parser: argparse.ArgumentParser) -> None:
    """Set shtab's ``.complete`` on every argument of every command whose values are names
    or files (see the module docstring)."""
    import shtab

    import hw_profiles
    import models
    from deploy.cli_examples import command_parsers

    profiles = hw_profiles.available()
    model_names = sorted(models.REGISTRY)
    datasets = sorted({d for m in models.REGISTRY.values() for d in m.card.datasets})
    profile = _names("profiles", profiles, files=True)
    profile_list = _name_list("profiles", profiles)
    for command, sub in command_parsers(parser).items():
        for action in sub._actions:
            if action.choices is not None or action.nargs == 0:
                continue   # shtab completes choices itself; a flag takes no value
            dest = action.dest
            if dest == "model":
                action.complete = shtab.FILE if command in _OWN_MODEL_COMMANDS else \
                    _names("models", model_names, files=False)
            elif dest == "dataset":
                action.complete = _names("datasets", datasets, files=False)
            elif dest in _PROFILE_DESTS:
                action.complete = profile
            elif dest in _PROFILE_LIST_DESTS:
                action.complete = profile_list
            elif dest in _FILE_DESTS:
                action.complete = shtab.FILE


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (one of :data:`SHELLS`)."""
    import shtab
    annotate(parser)
    return shtab.complete(parser, shell=shell, root_prefix="neuroedge")


def add_completion_parser(subparsers, root: argparse.ArgumentParser) -> None:
    """Add the ``completion`` command; ``root`` is the parser whose script it prints."""
    p = subparsers.add_parser(
        "completion", help="print a shell completion script (bash, zsh or fish)",
        description="Print a completion script for neuroedge's commands, options, choices, "
                    "model and profile names. The names are those installed now: run it "
                    "again after adding a profile.")
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")

    def cmd_completion(args) -> int:
        print(script(root, args.shell))
        return 0

    p.set_defaults(func=cmd_completion)
