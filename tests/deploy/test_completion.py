"""``neuroedge completion SHELL`` (issue 35 item 4): the script shtab generates from the real
parser, sourced in a real bash and asked to complete, as bash does on TAB."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import hw_profiles
from deploy.cli import build_parser, main
from deploy.completion import SHELLS, script

BASH = shutil.which("bash")


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory):
    path = tmp_path_factory.mktemp("completion") / "neuroedge.bash"
    path.write_text(script(build_parser(), "bash"))
    return path


def _complete(bash_script, words: list[str], cwd=None) -> list[str]:
    """What bash offers for the last of ``words``: COMP_WORDS/COMP_CWORD set as readline
    sets them, then the function the script registered with ``complete -F`` is called."""
    registered = 'complete -p neuroedge | sed -E "s/.* -F ([^ ]+) .*/\\1/"'
    quoted = " ".join(f"'{w}'" for w in words)
    program = (f"source '{bash_script}'\n"
               f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
               f'COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}}\n'
               f"fn=$({registered})\n"
               f'"$fn" neuroedge "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"\n'
               'printf "%s\\n" "${COMPREPLY[@]}"\n')
    out = subprocess.run([BASH, "--norc", "--noprofile", "-c", program], capture_output=True,
                         text=True, check=True, cwd=cwd)
    return out.stdout.split()


@pytest.mark.skipif(BASH is None, reason="no bash on this machine")
@pytest.mark.parametrize("words, offered", [
    (["neuroedge", "sim"], ["simulate"]),                         # a command
    (["neuroedge", "e"], ["estimate", "experiment", "export"]),
    (["neuroedge", "simulate", "mlp", "--profile", "loihi"],      # a profile name
     ["loihi", "loihi-pohoiki-beach", "loihi2"]),
    (["neuroedge", "profiles", "show", "a1"], ["a100"]),
    (["neuroedge", "compare", "run.h5", "--profiles", "a100,jetson-t"],   # the list's last
     ["a100,jetson-tx1"]),
    (["neuroedge", "simulate", "ml"], ["mlp"]),                   # a model name
    (["neuroedge", "simulate", "--pre"], ["--preset"]),           # an option
    (["neuroedge", "simulate", "--preset", ""], ["full", "quick"]),   # its choices
    (["neuroedge", "export", "--target", "c"], ["c", "c-int8"]),
    (["neuroedge", "completion", ""], list(SHELLS)),
])
def test_bash_completes_from_the_parser(bash_script, words, offered):
    assert sorted(_complete(bash_script, words)) == sorted(offered)


@pytest.mark.skipif(BASH is None, reason="no bash on this machine")
def test_every_shipped_profile_and_a_profile_file_is_offered(bash_script, tmp_path):
    (tmp_path / "mine.toml").write_text("")   # a profile may be a TOML path
    offered = _complete(bash_script, ["neuroedge", "report", "run.h5", "--profile", ""],
                        cwd=tmp_path)
    assert offered == sorted(hw_profiles.available()) + ["mine.toml"]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_command_prints_a_script_naming_every_command(capsys, shell):
    assert main(["completion", shell]) == 0
    out = capsys.readouterr().out
    for command in ("simulate", "estimate", "sweep", "completion"):
        assert command in out
    assert "loihi2" in out and "mlp" in out   # names written in, no Python on TAB
    checker = {"bash": ["bash", "-n"], "zsh": ["zsh", "-n"], "fish": ["fish", "--no-execute"]}
    if shutil.which(shell):   # the shell's own syntax check, where it is installed
        subprocess.run([*checker[shell], "-c", out], check=True)


FISH = shutil.which("fish")


@pytest.mark.skipif(FISH is None, reason="no fish on this machine")
@pytest.mark.parametrize("line, offered", [
    ("neuroedge sim", ["simulate"]),
    ("neuroedge profiles show loi", ["loihi", "loihi-pohoiki-beach", "loihi2"]),
    ("neuroedge compare run.h5 --profiles a100,jetson-t", ["a100,jetson-tx1"]),
    ("neuroedge simulate --preset ", ["full", "quick"]),
])
def test_fish_completes_from_the_parser(tmp_path, line, offered):
    path = tmp_path / "neuroedge.fish"
    path.write_text(script(build_parser(), "fish"))
    # 'complete -C LINE': what fish offers for LINE, each 'candidate<TAB>description'
    out = subprocess.run([FISH, "--no-config", "-c", f"source {path}; complete -C '{line}'"],
                         capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert sorted(ln.split("\t")[0] for ln in out.splitlines()) == offered


ZSH = shutil.which("zsh")
# an interactive zsh on a pseudo-terminal (zsh/zpty), the script as _neuroedge on $fpath,
# compinit, the line typed with a TAB and a newline; with no PATH the line then fails as
# "command not found" (nothing runs), and the pty's output up to there holds what TAB put on
# the line, among terminal escape sequences
ZSH_DRIVER = r"""
zmodload zsh/zpty
zpty z "$3" -f -i
zpty -w z "PATH=; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "$2"$'\t'
zpty -r -m z out "*command not found*" && print -r -- "$out"
"""
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.mark.skipif(ZSH is None, reason="no zsh on this machine")
@pytest.mark.parametrize("line, completed", [
    ("neuroedge sim", "neuroedge simulate "),
    ("neuroedge simulate --profile a1", "--profile a100 "),
    ("neuroedge profiles show loihi-p", "show loihi-pohoiki-beach "),
    ("neuroedge compare run.h5 --profiles a100,jetson-t", "--profiles a100,jetson-tx1"),
    ("neuroedge simulate --preset q", "--preset quick "),
])
def test_zsh_completes_from_the_parser(tmp_path, line, completed):
    (tmp_path / "_neuroedge").write_text(script(build_parser(), "zsh"))
    driver = tmp_path / "driver.zsh"
    driver.write_text(ZSH_DRIVER)
    out = subprocess.run([ZSH, "-f", str(driver), str(tmp_path), line, ZSH],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert completed in ESCAPE.sub("", out.stdout), out.stdout + out.stderr
