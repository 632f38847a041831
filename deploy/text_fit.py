"""Plain-text output that fits a terminal (issue 35 item 4: ``neuroedge estimate`` at 80
columns): a table is printed aligned when it fits and as one record line per row when it
does not; a long line is folded at spaces with its continuation indented, never inside a
word, so the terminal never wraps a cell mid-word.

The width is the terminal's when stdout is one, ``$COLUMNS`` when that is set; output piped
to a file or another program without ``$COLUMNS`` is not folded (one line per fact, for
grep), and ``print(estimate)`` in Python is not folded either.
"""
from __future__ import annotations

import os
import shutil
import sys
import textwrap

from deploy.cli_args import MIN_WIDTH


def output_width() -> int | None:
    """Characters per line of stdout: ``$COLUMNS``, else the terminal's, else None (a pipe
    or file: no limit)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        return max(MIN_WIDTH, int(columns))
    if sys.stdout.isatty():
        return max(MIN_WIDTH, shutil.get_terminal_size().columns)
    return None


def fold(lines: list[str], width: int | None) -> list[str]:
    """Every line longer than ``width`` folded at spaces, each continuation indented two
    more spaces than the line; a single word longer than the width stays whole (a path or
    URL must stay copyable)."""
    if width is None:
        return list(lines)
    out = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip(" "))]
        out += textwrap.wrap(line.strip(), width, initial_indent=indent,
                             subsequent_indent=indent + "  ", break_long_words=False,
                             break_on_hyphens=False) or [line]
    return out


def aligned(head: list[str], body: list[list[str]], left: int = 2) -> list[str]:
    """``head`` and ``body`` as columns two spaces apart: the first ``left`` columns flush
    left (names), the others flush right (figures)."""
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    return ["  ".join(c.ljust(w) if i < left else c.rjust(w)
                      for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
            for row in [head, *body]]


def records(head: list[str], body: list[list[str]]) -> list[str]:
    """One line per row, ``FIRST: column value, column value, ...`` (the columns named, so
    nothing depends on alignment); :func:`fold` folds the long ones."""
    return [f"{row[0].rstrip()}: " + ", ".join(f"{h} {c.strip()}" for h, c in
                                               zip(head[1:], row[1:], strict=True))
            for row in body]


def table(head: list[str], body: list[list[str]], width: int | None,
          left: int = 2) -> list[str]:
    """:func:`aligned` when every line fits ``width`` (or there is no limit), else
    :func:`records` folded to ``width``."""
    lines = aligned(head, body, left)
    if width is None or max(len(ln) for ln in lines) <= width:
        return lines
    return fold(records(head, body), width)
