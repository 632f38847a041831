"""neuroedge's base exception, and the profile layer's own.

Each layer keeps its exceptions in its own ``errors.py`` (``hw_profiles`` <- ``sim`` <-
``models`` <- ``deploy``), all derived from :class:`NeuroedgeError`, which stays here in the
lowest layer so every package can catch it. Messages name the input, what is wrong and what
would be right.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable


class NeuroedgeError(Exception):
    """Base class of every error neuroedge raises on purpose.

    The CLI prints these as one line and exits non-zero; anything else is a bug
    and keeps its traceback.
    """


class ProfileError(NeuroedgeError):
    """A hardware profile is malformed, unknown or inconsistent."""


def first_line(exc: BaseException) -> str:
    """``exc`` as one line for a message: its type and the first line of its text
    (``"RuntimeError: mat1 and mat2 shapes cannot be multiplied"``)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def not_a_file(path) -> str:
    """What is wrong with ``path`` when it is not a regular file, as the end of a message
    (``f"run file {p!r} {not_a_file(p)}"``): "does not exist", "is a directory", or "is a
    FIFO (named pipe), not a regular file" -- a FIFO or ``/dev/zero`` would block or never
    end a read, so every input file is checked to be regular before it is opened."""
    import os
    import stat
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "does not exist"
    kinds = ((stat.S_ISDIR, "is a directory"), (stat.S_ISFIFO, "is a FIFO (named pipe)"),
             (stat.S_ISCHR, "is a character device"), (stat.S_ISBLK, "is a block device"),
             (stat.S_ISSOCK, "is a socket"))
    what = next((w for test, w in kinds if test(mode)), "is not a regular file")
    return what if what == "is a directory" else f"{what}, not a regular file"


def did_you_mean(name: str, choices: Iterable[str]) -> str | None:
    """The choice closest to a mistyped ``name`` (difflib's ratio >= 0.6, case ignored), or
    None when nothing is that close: the error then lists every choice instead."""
    by_lower = {str(c).lower(): str(c) for c in choices}
    typed = str(name).lower()
    matches = difflib.get_close_matches(typed, list(by_lower), n=3, cutoff=0.6)
    # swapped letters first: 'mpl' is 'mlp' typed out of order, though 'ppl' scores as high
    same_letters = [m for m in matches if sorted(m) == sorted(typed)]
    match = (same_letters or matches)[:1]
    return by_lower[match[0]] if match else None


def suggestion(name: str, choices: Iterable[str], lister: str | None = None) -> str | None:
    """``did you mean 'a100'? (neuroedge profiles lists them)`` for a mistyped ``name``, or
    None when no choice is close; the caller then lists every choice, as before."""
    guess = did_you_mean(name, choices)
    if guess is None:
        return None
    return f"did you mean {guess!r}?" + (f" ({lister} lists them)" if lister else "")


def first_names(names) -> str:
    """The first three of ``names`` for a one-line message, and how many more."""
    names = [str(n) for n in names]
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return f"{', '.join(names[:3])}{more}"
