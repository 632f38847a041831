"""README and docs run as written: every fenced ``bash`` and ``python`` block, and what it prints.

Covered: the top ``README.md``, every page ``docs/*.md`` (the CLI guide, the engine
tutorials, ... moved there from the README) and every room's ``models/**/README.md`` (each
room's commands and figures live there). Every block runs from the repository root,
whichever file it is in. The README also stays a front door (at most 12 KB), and every
relative link of the README and of the docs points to a file that exists.

How a block is run (``docs/doc-tests.md`` says the same):

- Blocks fenced as `````bash`` or `````python`` run; other fences (```````text``, plain) do not.
  Indented code blocks are refused (``test_readme_has_no_indented_code_blocks``): they
  would escape this test.
- Each block runs in its own fresh copy of the repository (the source tree without
  ``.git``, ``.venv`` or outputs), as a user's checkout after ``make demo``: ``.venv``
  links to the venv running the tests, entry by entry, its install stamp is newer
  than ``pyproject.toml`` (so ``make`` installs nothing), ``PATH`` starts with
  ``.venv/bin`` as ``. .venv/bin/activate`` does, and ``PYTHONPATH`` is the copy, as the
  checkout's editable install would be. Nothing in the block is filled in or rewritten,
  except one thing: ``make test`` lines are not run, since running the test suite from
  inside the test suite would recurse.
- ``bash`` blocks run under ``bash -e -o pipefail`` (every command must succeed);
  ``python`` blocks under ``.venv/bin/python -c``.
- ``<!-- readme-test: slow -->`` on a line before a block (with only blank lines
  between) runs it only under ``-m slow`` (``make test-slow``): quick runs that train for
  a minute and the benchmarks.
- A `````text`` block right after a runnable block (only blank lines between) is what the
  block prints (stdout and stderr together), compared as a doctest compares: ``...``
  matches anything, runs of whitespace are equal.

The copies share one path (recreated per block) and one numba cache directory, so numba's
``cache=True`` kernels compile once per session, not once per block.
"""
from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
READMES = [README, *DOCS, *sorted((ROOT / "models").rglob("README.md"))]
README_MAX_BYTES = 12 * 1024     # a front door: what it is, two commands, a tour, links
RUNNABLE = ("bash", "python")
SLOW_MARK = "<!-- readme-test: slow -->"
MAKE_TEST = re.compile(r"^\s*make\s+test(-slow)?\b")
# what a fresh checkout does not have: version control, the environments (the project's and
# the benches' own, e.g. bench/.venv-neurobench, 1.4 GB), outputs
COPY_IGNORE = shutil.ignore_patterns(".git", ".venv*", "__pycache__", ".pytest_cache",
                                     ".hypothesis", "build", "*.egg-info", "runs", "exports",
                                     "*.h5", "*.html", "*.onnx", "*.nir")
DEFAULT_TIMEOUT_S = 600
SLOW_TIMEOUT_S = 4 * 3600


@dataclass(frozen=True)
class Block:
    line: int           # 1-based line of the opening fence
    lang: str
    code: str
    slow: bool
    expected: str | None
    source: str = "README.md"   # the file's path from the repository root

    @property
    def id(self) -> str:
        """``L19-bash`` in README.md, ``models/diffpc-L11-bash``, ``docs/cli-L12-bash``."""
        if self.source == "README.md":
            where = ""
        elif self.source.endswith("/README.md"):
            where = self.source.removesuffix("/README.md") + "-"
        else:
            where = self.source.removesuffix(".md") + "-"
        return f"{where}L{self.line}-{self.lang}"


def parse_blocks(text: str, source: str = "README.md") -> list[Block]:
    """Every fenced block of ``text`` with its marker and expected output."""
    lines = text.splitlines()
    fences = []     # (line, lang, code, slow, end line)
    i, slow_pending = 0, False
    while i < len(lines):
        stripped = lines[i].strip()
        m = re.fullmatch(r"```(\w*)", stripped)
        if m:
            start, lang = i, m.group(1)
            i += 1
            body = []
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise AssertionError(f"{source}:{start + 1}: fence ```{lang} is never closed")
            fences.append((start + 1, lang, "\n".join(body) + "\n", slow_pending, i + 1))
            slow_pending = False
        elif stripped == SLOW_MARK:
            slow_pending = True
        elif stripped:
            slow_pending = False        # the marker belongs to the block right below it
        i += 1
    blocks = []
    for k, (line, lang, code, slow, end) in enumerate(fences):
        if lang not in RUNNABLE:
            continue
        expected = None
        if k + 1 < len(fences) and fences[k + 1][1] == "text":
            between = lines[end:fences[k + 1][0] - 1]
            if not any(s.strip() for s in between):
                expected = fences[k + 1][2]
        blocks.append(Block(line, lang, code, slow, expected, source))
    return blocks


BLOCKS = [b for path in READMES
          for b in parse_blocks(path.read_text(), str(path.relative_to(ROOT)))]


def _fresh_checkout(base: Path) -> Path:
    """A copy of the repository at ``base/repo`` with ``.venv`` standing for an installed one."""
    repo = base / "repo"
    if repo.exists():
        shutil.rmtree(repo)
    shutil.copytree(ROOT, repo, ignore=COPY_IGNORE)   # copy2 keeps mtimes: numba's cache holds
    venv = repo / ".venv"
    venv.mkdir()
    # the running venv's entries (bin, lib, pyvenv.cfg), linked one by one so the stamp
    # below is the copy's own: the real venv is never written to
    for entry in Path(sys.prefix).iterdir():
        if entry.name != ".installed":
            (venv / entry.name).symlink_to(entry)
    (venv / ".installed").touch()   # newer than the copied pyproject.toml: make installs nothing
    return repo


@pytest.fixture(scope="session")
def readme_base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("readme")


def _run(block: Block, base: Path) -> str:
    if sys.prefix == sys.base_prefix or not (Path(sys.prefix) / "bin" / "neuroedge").exists():
        pytest.skip(f"{sys.executable} is not a venv with neuroedge installed: the README "
                    "assumes the project's .venv (make demo)")
    repo = _fresh_checkout(base)
    env = {**os.environ,
           "PATH": f"{repo / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(repo), "NUMBA_CACHE_DIR": str(base / "numba-cache"),
           "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}
    if block.lang == "bash":
        # not run: `make test` inside the test suite would run this test again
        code = "\n".join(": not run here" if MAKE_TEST.match(line) else line
                         for line in block.code.splitlines()) + "\n"
        cmd = ["bash", "-e", "-o", "pipefail", "-c", code]
    else:
        cmd = [str(repo / ".venv" / "bin" / "python"), "-c", block.code]
    timeout = SLOW_TIMEOUT_S if block.slow else DEFAULT_TIMEOUT_S
    proc = subprocess.run(cmd, check=False, cwd=repo, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"{block.source}:{block.line} ({block.lang}) exited {proc.returncode}; "
                    f"output:\n{proc.stdout[-6000:]}")
    return proc.stdout


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id,
                                                marks=[pytest.mark.slow] if b.slow else [])
                                   for b in BLOCKS])
def test_readme_block_runs_and_prints_what_it_shows(block, readme_base):
    out = _run(block, readme_base)
    print(out)      # shown with -s, or -rP: what to paste into a ```text block
    if block.expected is not None:
        checker = doctest.OutputChecker()
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        if not checker.check_output(block.expected, out, flags):
            pytest.fail(f"{block.source}:{block.line}: the output differs from the ```text block "
                        f"below it.\n--- README shows:\n{block.expected}\n--- the block "
                        f"printed:\n{out[-6000:]}")


def test_readme_has_runnable_blocks_in_the_default_run():
    """The parser found the README's blocks, and not all of them are slow."""
    assert len(BLOCKS) >= 10
    assert sum(not b.slow for b in BLOCKS) >= 4


def test_block_ids_are_unique():
    """Two blocks with one id would hide each other in ``-k`` selections and reports."""
    ids = [b.id for b in BLOCKS]
    assert sorted({i for i in ids if ids.count(i) > 1}) == []


def test_docs_blocks_are_collected():
    """The pages moved out of the README still run: each one's blocks are in BLOCKS."""
    sources = {b.source for b in BLOCKS}
    for page in ("docs/cli.md", "docs/estimate.md", "docs/sweeps.md", "docs/neuromorphic.md",
                 "docs/bitwise.md", "docs/methods.md"):
        assert page in sources, f"{page}: no runnable block found"


def test_readme_is_a_front_door():
    """README.md stays at most 12 KB; the details live in docs/."""
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, (
        f"README.md is {size} bytes, over {README_MAX_BYTES}: move the details to docs/")


# [text](target) and ![alt](target), the target up to a closing parenthesis or a title
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _without_fences(text: str) -> str:
    return re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.S | re.M)


def _without_code(text: str) -> str:
    return re.sub(r"`[^`\n]*`", "", _without_fences(text))      # and inline code


def relative_links(text: str) -> list[tuple[str, str]]:
    """``(file, anchor)`` of each link in ``text`` that stays in the repository.

    ``file`` is ``""`` for an anchor in the same page, ``anchor`` is ``""`` when there is none;
    URLs (``https:``, ``mailto:``) and links inside code are left out.
    """
    links = []
    for target in LINK.findall(_without_code(text)):
        if not re.match(r"[a-z][a-z0-9+.-]*:", target):
            file, _, anchor = target.partition("#")
            links.append((file, anchor))
    return links


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of ``text``: lower case, punctuation dropped,
    spaces -> ``-`` (``## The `simulate` run (quick)`` -> ``the-simulate-run-quick``)."""
    return {re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", _without_fences(text),
                                 flags=re.M)}


@pytest.mark.parametrize("path", [README, *DOCS, ROOT / "CONTRIBUTING.md"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_files_that_exist(path):
    """A page moved into docs/ keeps its links working (``docs/x.md`` -> ``../bench/...``),
    and a link to a section of a Markdown page names a heading that page has."""
    broken = []
    for file, anchor in relative_links(path.read_text()):
        target = (path.parent / file).resolve() if file else path
        if not target.exists():
            broken.append(f"{file}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in heading_anchors(
                target.read_text()):
            broken.append(f"{file}#{anchor}: no such heading")
    assert broken == [], f"{path.relative_to(ROOT)}: broken links {broken}"


def test_relative_links_reads_markdown_links():
    text = ("[a](docs/cli.md) ![img](x.png) [web](https://example.org) [here](#top)\n"
            "[sec](../bench/RESULTS.md#figures) `[not](code.md)`\n```text\n[no](block.md)\n```\n")
    assert relative_links(text) == [("docs/cli.md", ""), ("x.png", ""), ("", "top"),
                                    ("../bench/RESULTS.md", "figures")]
    assert heading_anchors("# A `b` (c), d_e\n```\n# not a heading\n```\n## Two\n") == {
        "a-b-c-d_e", "two"}


@pytest.mark.parametrize("path", READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_readme_has_no_indented_code_blocks(path):
    """An indented code block would not be run by this test: fence it instead."""
    lines, inside, prev_blank, list_item = path.read_text().splitlines(), False, True, False
    offenders = []
    for n, line in enumerate(lines, 1):
        if line.strip().startswith("```"):
            inside = not inside
        elif not inside:
            if re.match(r"\s*([-*]|\d+\.)\s", line):
                list_item = True
            elif not line.strip():
                pass
            elif not line.startswith(" "):
                list_item = False
            if line.startswith("    ") and prev_blank and not list_item:
                offenders.append(n)
        prev_blank = not line.strip()
    assert offenders == [], f"{path} lines {offenders}: indented code; fence it (```bash)"


def test_parser_reads_markers_and_expected_output():
    text = ("intro\n\n<!-- readme-test: slow -->\n```bash\necho 1 s\n```\n\n```text\n1 s\n```\n"
            "```python\nprint(2)\n```\nprose\n```text\nnot its output\n```\n```\nplain\n```\n")
    blocks = parse_blocks(text)
    assert [(b.line, b.lang, b.slow) for b in blocks] == [(4, "bash", True), (11, "python", False)]
    assert blocks[0].code == "echo 1 s\n" and blocks[0].expected == "1 s\n"
    assert blocks[1].expected is None          # prose between: not the block's output
