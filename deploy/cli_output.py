"""Where a command's words and files go: stdout, stderr, a progress bar, checked outputs.

The report and the closing lines go to stdout, status lines and the progress bar to stderr
(so the report starts with its headline); with ``--json -`` stdout holds the JSON alone and
the report goes to stderr; with ``--quiet`` only errors are printed. Files are written
through :mod:`deploy.outputs`, every output of a command checked before any work. Shared by
``deploy.cli`` and the commands in their own modules (``deploy.estimate_cli``). While a
command runs, stdout is a :class:`CheckedStdout`, so a write that stdout refuses (a full
disk) is told apart from the command's other errors.
"""
from __future__ import annotations

import contextlib
import errno
import io
import json
import math
import os
import shutil
import sys

from deploy.cli_args import MIN_WIDTH
from deploy.formatting import printable

STDOUT = "-"               # --json -: the JSON on stdout, every other word on stderr


class StdoutError(Exception):
    """stdout refused a write (a full disk, an I/O error): one line from ``main``. Not a
    NeuroedgeError, so no command's own handler takes it for a failure of its work."""


@contextlib.contextmanager
def _stdout_refusals():
    try:
        yield
    except BrokenPipeError:
        raise   # the reader left (`| head -1`): main's quiet exit, not an error
    except OSError as exc:
        fix = "free some space, or send stdout elsewhere" \
            if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "send stdout elsewhere"
        raise StdoutError(f"stdout could not be written ({exc.strerror or exc}); what was "
                          f"printed there is incomplete: {fix}") from None


class CheckedStdout:
    """``sys.stdout`` while a command runs (``deploy.cli.main``): writes and flushes go to
    ``stream``, and one it refuses raises :class:`StdoutError`. Everything else is the
    stream's (rich asks it ``isatty``, ``encoding``, ``fileno``)."""

    def __init__(self, stream):
        self.stream = stream
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            "─…".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            # an ASCII or Latin-1 stdout (LANG=C, PYTHONIOENCODING=ascii): a table's rule or
            # ellipsis would end the command in a UnicodeEncodeError traceback; written as
            # '?' instead
            with contextlib.suppress(AttributeError, ValueError):
                stream.reconfigure(errors="replace")
        buffer = getattr(stream, "buffer", None)
        # under PYTHONUNBUFFERED the text layer writes straight to the file and drops what a
        # short write left over (a disk that fills partway) without an error; such bytes are
        # written here until all are out or the file refuses them
        self._raw = buffer if isinstance(buffer, io.RawIOBase) else None

    def write(self, text: str) -> int:
        with _stdout_refusals():
            if self.stream is None:   # Python found stdout closed (`>&-`)
                raise OSError(errno.EBADF, os.strerror(errno.EBADF))
            if self._raw is None:
                return self.stream.write(text)
            self.stream.flush()
            # POSIX stdout translates no newlines, so the text's bytes are what it writes
            data = memoryview(text.encode(self.stream.encoding, self.stream.errors))
            while data:
                n = self._raw.write(data)
                if n is None:   # a non-blocking stdout that is full, as the text layer says
                    raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
                data = data[n:]
            return len(text)

    def flush(self) -> None:
        with _stdout_refusals():
            if self.stream is not None:
                self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def check_outputs(outputs: dict, *, force: bool, inputs) -> None:
    """Every output of a command checked together, before any work (deploy.outputs rules);
    ``--json -`` is stdout, not a file, and no other output goes to stdout."""
    from deploy.errors import OutputError
    from deploy.outputs import check_distinct, check_output
    outputs = {k: v for k, v in outputs.items() if not (k == "--json" and v == STDOUT)}
    for option, path in outputs.items():
        if path is not None and str(path) == STDOUT:
            raise OutputError(f"{option} {STDOUT!r}: only --json writes to stdout; give "
                              f"{option} a file path (./- for a file named '-')")
        if path is not None:
            check_output(path, force=force, inputs=inputs, option=option)
    check_distinct(outputs)


class CommandOutput:
    """Where a command's words go. The report and the closing lines go to stdout, status
    lines and the progress bar to stderr (so the report starts with its headline); with
    ``--json -`` stdout holds the JSON alone and the report goes to stderr; with ``--quiet``
    only errors are printed (files are still written, the JSON still goes to stdout)."""

    def __init__(self, args):
        self.quiet = bool(getattr(args, "quiet", False))
        self.json_stdout = getattr(args, "json", None) == STDOUT
        self.width = getattr(args, "width", None) or shutil.get_terminal_size((100, 24)).columns
        self.width = max(self.width, MIN_WIDTH)
        self._status = None

    def report(self, text: str) -> None:
        """The report (or a closing line): stdout, or stderr when stdout holds the JSON."""
        if not self.quiet:
            stream = sys.stderr if self.json_stdout else sys.stdout
            # fields from files were escaped where they were put in; this pass catches any other
            text = printable(text, lines=True)
            stream.write(text if text.endswith("\n") else text + "\n")

    @property
    def status(self):
        """A rich console on stderr for status lines and the progress bar (None: quiet)."""
        if self.quiet:
            return None
        if self._status is None:
            from rich.console import Console
            self._status = Console(stderr=True)
        return self._status

    def say(self, text: str, **kw) -> None:
        if self.status is not None:
            self.status.print(text, soft_wrap=True, highlight=False, **kw)

    def json(self, path, doc, *, force: bool, inputs) -> None:
        """``doc`` as strict JSON on stdout (``-``) or into ``path`` (deploy.outputs rules)."""
        text = json.dumps(doc, indent=1, allow_nan=False)
        if path == STDOUT:
            sys.stdout.write(text + "\n")
            return
        from deploy.outputs import write_text
        write_text(path, text, force=force, inputs=inputs, parents=True, option="--json")


def print_report(out: CommandOutput, args, run, reports) -> None:
    """The terminal report of ``run`` priced as ``reports`` (the first is the reference), as
    ``--width``, ``--all`` and ``--sources`` ask; nothing with ``--quiet``."""
    from deploy import report as rep
    if out.quiet:
        return
    out.report(rep.terminal_report(run, reports[0], out.width, compared=reports[1:],
                                   full=args.full_report, sources=args.sources))


def console(width: int | None = None):
    """A rich console on stdout (tables of ``neuroedge profiles`` and ``models``), ``width``
    characters wide (default: the terminal's, or $COLUMNS)."""
    from rich.console import Console
    return Console(width=width)


def progress_bar(con, name: str):
    """A rich progress bar and the ``progress(step, total, metrics)`` callback that draws it.

    The bar is cleared when done (``transient``): on a terminal the report that follows
    starts with its headline. ``con`` None (``--quiet``) or not a terminal (a log file):
    no bar, no callback."""
    if con is None or not con.is_terminal:
        return contextlib.nullcontext(), None
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    bar = Progress(TextColumn("{task.description}"), BarColumn(),
                   TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=con,
                   transient=True)
    task = bar.add_task(name, total=None, info="")

    def progress(step, total, metrics):
        info = "  ".join(f"{k} {v:.4g}" for k, v in metrics.items() if isinstance(v, float))
        bar.update(task, completed=step, total=total, info=info)
    return bar, progress


def finite(obj):
    """``obj`` with NaN and infinities as null (and dict keys as strings), so the JSON
    printed from it is strict."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj
