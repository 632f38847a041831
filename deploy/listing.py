"""Listings of ``neuroedge profiles`` and ``models``: a table where it fits, lines where not.

A rich table narrower than its cells wraps every column, and at 80 columns a description
reads one word per line. So a listing is a table only when every short column fits
unwrapped and its one free-text column (a description, a title) still gets
:data:`TEXT_MIN` characters; otherwise each row is printed as a short block of lines
wrapped at word boundaries to the width, which reads the same at any width.
"""
from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

TEXT_MIN = 40   # narrower, a description of 60-90 characters runs to three lines or more


def table_fits(header: Sequence[str], rows: Sequence[Sequence[str]], text_col: int,
               width: int) -> bool:
    """Whether the table fits ``width`` with every column but ``text_col`` unwrapped and
    ``text_col`` at least :data:`TEXT_MIN` wide (or its longest cell, when shorter)."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    widths[text_col] = min(widths[text_col], TEXT_MIN)
    # rich's box: one bar at each edge and between columns, one space of padding each side
    return sum(widths) + 3 * len(header) + 1 <= width


def print_listing(con, title: str, header: Sequence[str], rows: Sequence[Sequence[str]], *,
                  text_col: int, record: Callable[[Sequence[str]], list[str]]) -> None:
    """``rows`` on the rich console ``con``: a table titled ``title`` when it fits
    (:func:`table_fits`), else ``title`` and, per row, the lines ``record(row)`` gives,
    the first flush left and the rest indented, each wrapped to the width at word
    boundaries."""
    from rich.table import Table
    from rich.text import Text
    width = con.width
    if table_fits(header, rows, text_col, width):
        table = Table(title=title)
        for i, col in enumerate(header):
            if i == text_col:
                table.add_column(col, overflow="fold", min_width=min(
                    TEXT_MIN, max([len(col), *(len(r[i]) for r in rows)])))
            else:
                table.add_column(col, no_wrap=True)
        for row in rows:
            table.add_row(*(Text(c) for c in row))   # cells are text, never markup
        con.print(table)
        return
    con.print(textwrap.fill(title, width), markup=False, highlight=False, soft_wrap=True)
    for row in rows:
        first, *rest = record(row)
        lines = textwrap.wrap(first, width, subsequent_indent="    ", break_on_hyphens=False)
        for text in rest:
            lines += textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="    ",
                                   break_on_hyphens=False)
        con.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)
