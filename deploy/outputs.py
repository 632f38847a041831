"""Every file neuroedge writes goes through here, so no output ever destroys a user's data.

One helper for run files, HTML/JSON reports and the C/NIR/ONNX exports. Its rules:

- An existing directory is never a file output; a directory export goes only into a new
  or an empty directory.
- An existing file is replaced only with ``force=True`` (``--force`` on the CLI).
- An output that is the same file as an input of the same command is refused, whatever
  ``force`` says (``report RUN.h5 --html RUN.h5`` would overwrite the run it reports).
- Content is written into a temporary sibling and renamed onto the destination only when
  the writer finished, so a crash or Ctrl-C leaves the destination as it was.
- Nothing is deleted that this module did not create.
- The outputs of one command are written all or none (:func:`all_or_nothing`): when one
  fails, those written before it in the same command that did not exist before are
  removed again, so "nothing was written" is true of the whole command.

Directory exports and ``force``: a directory is replaced only if neuroedge wrote it. Each
directory export carries a manifest (:data:`MANIFEST`) listing every file it wrote with its
SHA-256, plus the glob patterns of the build products its own Makefile makes (``make
clean``'s list). ``force=True`` replaces a directory whose every entry is listed with an
unchanged digest or matches those patterns; a directory without a manifest, with a file
neuroedge did not write, or with an edited file is refused even with ``force``: neuroedge
never runs ``rmtree`` on a user's directory. The old export is moved aside, the new one
renamed into place, and then the old one is removed file by file, as its manifest lists.
An old export this user could not remove (a folder of it read-only for them, an entry
``chattr +i``) is refused up front; a removal that fails all the same before any file went
puts the old export back (one OutputError, nothing left over).

:func:`check_output` applies the same rules without writing anything, so a command checks
all its outputs before any training; the writers check again at write time.
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import fnmatch
import hashlib
import json
import os
import shutil
import stat
import struct
import sys
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from deploy.errors import DiskFullError, OutputError

MANIFEST = ".neuroedge-manifest.json"
"""The file a directory export carries: what neuroedge wrote there (see the module doc)."""
MANIFEST_FORMAT = "neuroedge.export-manifest"
MANIFEST_VERSION = 1

PathLike = str | os.PathLike


def _label(path: Path, option: str | None) -> str:
    return f"{option} {str(path)!r}" if option else f"output {str(path)!r}"


def _other(option: str | None) -> str:
    return f"another {option}" if option else "another path"


def _force_hint(option: str | None) -> str:
    return "--force" if option else "force=True"


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same inode when both exist (hard links,
    symlinks, ``./x`` vs ``x``), else the same resolved path."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _disposable(rel: str, patterns: Iterable[str]) -> bool:
    """``rel`` (a path inside an export, '/'-separated) is a build product a pattern names,
    segment by segment: ``*.o`` is an object file in the export's top folder, not
    ``vendor/driver.o`` (fnmatch's ``*`` alone would cross the '/')."""
    parts = rel.split("/")
    for pattern in patterns:
        pat = pattern.split("/")
        if len(pat) == len(parts) and all(fnmatch.fnmatchcase(a, b)
                                           for a, b in zip(parts, pat, strict=True)):
            return True
    return False


def _own_folders(files: Iterable[str]) -> set[str]:
    """The folders an export made: those holding the files its manifest lists."""
    out = set()
    for rel in files:
        parts = rel.split("/")[:-1]
        out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out


# Linux inode flags (``lsattr``; ``chattr +i`` / ``+a``): an immutable or append-only entry
# cannot be renamed over or unlinked, not even by root. FS_IOC_GETFLAGS is _IOR('f', 1, long)
# (the kernel reads and writes an int through it)
_FS_IOC_GETFLAGS = 0x80086601 if struct.calcsize("l") == 8 else 0x80046601
_FS_IMMUTABLE_FL, _FS_APPEND_FL = 0x10, 0x20


def _fixed_attribute(path: Path) -> str | None:
    """``"immutable (chattr +i)"`` or ``"append-only (chattr +a)"`` when Linux's inode flags
    of ``path`` forbid removing or replacing it, else None (also where they cannot be read:
    another OS, a file system without them, an unreadable entry)."""
    if not sys.platform.startswith("linux"):
        return None
    import fcntl
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        flags = struct.unpack_from("i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(8)))[0]
    except OSError:
        return None
    finally:
        os.close(fd)
    if flags & _FS_IMMUTABLE_FL:
        return "immutable (chattr +i)"
    if flags & _FS_APPEND_FL:
        return "append-only (chattr +a)"
    return None


def _not_removable(directory: Path) -> str | None:
    """Why the files of the export in ``directory`` (one :func:`own_export` accepted) could
    not be removed by this user, or None: a folder of it that this user cannot write in
    (``chmod 555``, checked with access(2), which also says no for an immutable folder or a
    read-only mount), or an entry with an immutable or append-only flag. Removing an entry
    needs write permission on its folder only, not on the entry itself."""
    for root, dirs, names in os.walk(directory):
        folder = Path(root)
        if not os.access(folder, os.W_OK | os.X_OK):
            return f"{str(folder)!r} is not writable for this user"
        for name in dirs + names:
            attr = _fixed_attribute(folder / name)
            if attr:
                return f"{str(folder / name)!r} is {attr}"
    return None


def own_export(directory: PathLike) -> str | None:
    """``None`` when ``directory`` holds exactly a neuroedge export (see the module doc),
    else the reason it is not one (the first foreign, edited or unreadable entry)."""
    d = Path(directory)
    try:
        doc = json.loads((d / MANIFEST).read_text())
        files, disposable = dict(doc["files"]), list(doc.get("disposable", []))
        if doc.get("format") != MANIFEST_FORMAT:
            return f"its {MANIFEST} is not a neuroedge export manifest"
    except FileNotFoundError:
        return f"it has no {MANIFEST}, so neuroedge did not write it"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"its {MANIFEST} is unreadable ({type(exc).__name__})"
    folders = _own_folders(files)
    for root, dirs, names in os.walk(d):
        for name in dirs + names:
            full = Path(root) / name
            rel = full.relative_to(d).as_posix()
            if full.is_symlink():
                return f"{rel} is a symbolic link neuroedge did not write"
            if full.is_dir():
                if rel not in folders:
                    return f"{rel}/ is a folder neuroedge did not make"
                continue
            if rel == MANIFEST:
                continue
            if rel in files:
                if _sha256(full) != files[rel]:
                    return f"{rel} was changed after neuroedge wrote it"
            elif not _disposable(rel, disposable):
                return f"{rel} was not written by neuroedge"
    return None


def _writable_ancestor(path: Path, option: str | None) -> None:
    """Refuse a destination whose directory cannot take a new entry: a parent that is a
    file, or a directory where creating a file fails (read-only, no permission). The
    probe creates and removes its own file, which also catches read-only mounts (where
    ``os.access`` says yes to root)."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        if parent.is_symlink():
            raise OutputError(f"{_label(path, option)}: {str(parent)!r} is a dangling "
                              f"symbolic link: choose {_other(option)}")
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"{_label(path, option)}: {str(parent)!r} is a file, not a "
                          f"directory: choose {_other(option)}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".neuroedge-probe-", dir=parent)
    except OSError as exc:
        raise OutputError(f"{_label(path, option)}: cannot write in directory "
                          f"{str(parent)!r} ({exc.strerror or exc}): choose "
                          f"{_other(option)}") from None
    os.close(fd)
    os.unlink(probe)


def given_path(value, default, option: str) -> Path:
    """The path an option names, or ``default`` when the option was not given (None). An
    empty value (``--out ""``: an unset shell variable) is refused rather than taken as
    not given, which wrote into the default place."""
    if value is None:
        return Path(default)
    if not str(value).strip():
        raise OutputError(f"{option}: empty path: name a file to write, or leave {option} "
                          "out for the default")
    return Path(value)


def check_output(path: PathLike, *, force: bool = False, inputs: Iterable[PathLike] = (),
                 directory: bool = False, option: str | None = None) -> Path:
    """Check that ``path`` can be written under the module's rules; write nothing.

    Parameters
    ----------
    path : the destination (a file, or with ``directory=True`` a directory export)
    force : allow replacing an existing file, or a directory export neuroedge wrote
    inputs : files the same command reads; the output may be none of them
    directory : the output is a directory export
    option : the CLI option that named ``path`` (``"--out"``), used in the message

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    OutputError
        One line naming the path, what is wrong and what to do instead.
    """
    p = Path(path)
    if not str(path):
        raise OutputError(f"{option or 'output'}: empty path: name a file to write")
    for src in inputs:
        if src and _same_file(p, Path(src)):
            raise OutputError(f"{_label(p, option)} is the same file as the input "
                              f"{str(src)!r} of this command; writing it would destroy the "
                              f"input: choose {_other(option)}")
    if p.is_symlink() and directory:
        raise OutputError(f"{_label(p, option)} is a symbolic link; a directory export "
                          f"writes a new directory: choose {_other(option)}")
    if p.is_dir():
        if not directory:
            raise OutputError(f"{_label(p, option)} is a directory; give the path of the "
                              f"file to write (e.g. {str(p / 'NAME')!r}) or "
                              f"{_other(option)}")
        if os.path.ismount(p):
            # the export is written beside it and renamed into place, and nothing can be
            # renamed onto a mount point (EBUSY, after the work was done)
            raise OutputError(f"{_label(p, option)} is a mount point, which an export cannot "
                              f"replace: give a folder inside it (e.g. "
                              f"{str(p / 'export')!r})")
        attr = _fixed_attribute(p)
        if attr:
            # the export is renamed onto it, which its flag forbids (EPERM, even to root)
            raise OutputError(f"{_label(p, option)} cannot be replaced: it is {attr}, so no "
                              f"export can take its place: choose {_other(option)} (or "
                              f"remove the attribute: chattr -i / -a)")
        if any(p.iterdir()):
            if not force:
                raise OutputError(f"{_label(p, option)} is a directory that is not empty; "
                                  f"an export goes into a new or empty directory: choose "
                                  f"{_other(option)} (or {_force_hint(option)} to replace "
                                  f"an earlier neuroedge export there)")
            why = own_export(p)
            if why is not None:
                raise OutputError(f"{_label(p, option)} is a directory that is not empty and "
                                  f"{why}; neuroedge never deletes a directory it did not "
                                  f"write, even with {_force_hint(option)}: choose "
                                  f"{_other(option)}")
            why = _not_removable(p)
            if why is not None:
                # found now, not after the new export landed with the old one half deleted
                raise OutputError(f"{_label(p, option)} cannot be replaced: this user cannot "
                                  f"remove the files of the earlier export there ({why}): "
                                  f"make it writable (chmod -R u+w) or choose "
                                  f"{_other(option)}")
    elif p.exists() or p.is_symlink():
        if p.exists() and not p.is_file():
            raise OutputError(f"{_label(p, option)} exists and is not a regular file: "
                              f"choose {_other(option)}")
        if directory:
            raise OutputError(f"{_label(p, option)} is a file; this export writes a "
                              f"directory: choose {_other(option)}")
        if not force:
            raise OutputError(f"{_label(p, option)} already exists: pass "
                              f"{_force_hint(option)} to replace it, or choose "
                              f"{_other(option)}")
    _writable_ancestor(p, option)
    return p


def check_distinct(outputs: Mapping[str, PathLike | None]) -> None:
    """Refuse two outputs of one command that name the same file (``--out X --html X``).

    ``outputs`` maps the option (``"--out"``) to its path; ``None`` entries are skipped."""
    seen: list[tuple[str, Path]] = []
    for option, path in outputs.items():
        if path is None:
            continue
        p = Path(path)
        for other, q in seen:
            if _same_file(p, q):
                raise OutputError(f"{option} {str(p)!r} and {other} {str(q)!r} are the same "
                                  f"file; one would overwrite the other: give them "
                                  f"different paths")
        seen.append((option, p))


def _os_error(path: Path, option: str | None, exc: OSError) -> OutputError:
    """An unexpected OS failure while writing (disk full, permissions changed), as one line."""
    return OutputError(f"{_label(path, option)} could not be written ({exc.strerror or exc}); "
                       f"nothing was changed there: choose {_other(option)} or fix the cause")


DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})
"""Errors of the disk rather than of the path: full, over quota, failing, file too big."""


def is_disk_error(exc: BaseException) -> bool:
    """True for a disk-full/IO OSError, also when h5py or another library wrapped it and
    kept only the text (h5py's 'file write failed: ... errno = 28')."""
    if not isinstance(exc, OSError):
        return False
    if exc.errno in DISK_ERRNOS:
        return True
    text = str(exc)
    return any(os.strerror(e) in text or f"errno = {e}," in text for e in DISK_ERRNOS)


def disk_error(dst: Path, exc: OSError, needed: int | None, option: str | None = None
               ) -> DiskFullError:
    """One line for a write that the disk refused: the output, the cause, the space it
    needed (or, when the writer could not know it, at least what was written before the
    disk refused) and the space free on that file system."""
    cause = os.strerror(exc.errno) if exc.errno in DISK_ERRNOS else "No space left on device"
    free = "unknown"
    with contextlib.suppress(OSError):
        anc = dst.parent
        while not anc.exists() and anc != anc.parent:
            anc = anc.parent
        free = f"{shutil.disk_usage(anc).free:,} bytes"
    need = f"{needed:,} bytes" if needed else "more than was free"
    return DiskFullError(f"{_label(dst, option)} could not be written: {cause} (it needs "
                       f"{need}; {free} free there); nothing was written: free some space "
                       f"or choose {_other(option)}")


TEMPORARY_MARKER = ".neuroedge-temporary"
"""An empty file in every temporary directory :func:`write_file` makes (``.NAME.XXXX.tmp``):
what a writer killed before its rename leaves can be told from a directory of the user's."""


def is_our_temporary(path: Path) -> bool:
    """Whether ``path`` is a temporary directory :func:`write_file` made (and was killed in):
    a real directory (not a link) holding :data:`TEMPORARY_MARKER`."""
    return (not path.is_symlink() and path.is_dir()
            and (path / TEMPORARY_MARKER).is_file())


def _mkdtemp(dst: Path, suffix: str, option: str | None) -> Path:
    try:
        return Path(tempfile.mkdtemp(prefix=f".{dst.name}.", suffix=suffix, dir=dst.parent))
    except OSError as exc:
        raise _os_error(dst, option, exc) from None


def _without_dotdot(dst: Path) -> Path:
    """``dst`` with the missing folders of its parent spelt without ``..``: ``o/a/../r.html``
    is ``o/r.html`` when ``o/a`` does not exist, so no folder ``o/a`` is made only to step
    out of it. The folders that exist are kept as spelt (a ``..`` after a symbolic link is
    its target's parent, which only the file system knows)."""
    anc = dst.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if anc == dst.parent:
        return dst
    return anc / os.path.normpath(dst.parent.relative_to(anc)) / dst.name


def _make_parents(dst: Path, option: str | None) -> list[Path]:
    """Create the missing folders ``dst`` goes in; returns those it made, deepest first,
    so a failed write removes them again (:func:`_remove_made`)."""
    made = []
    anc = dst.parent
    while not anc.exists() and anc != anc.parent:
        made.append(anc)
        anc = anc.parent
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_made(made)
        if is_disk_error(exc):
            raise disk_error(dst, exc, None, option) from None
        raise _os_error(dst, option, exc) from None
    return made


def _remove_made(made: list[Path]) -> None:
    """Remove the folders :func:`_make_parents` made, deepest first, while they are empty
    (nothing of anyone else's is removed: a folder that gained a file stays)."""
    for d in made:
        try:
            d.rmdir()
        except OSError:
            return


def _commit_file(src: Path, dst: Path, force: bool, option: str | None) -> None:
    """Move the finished ``src`` onto ``dst``. Without ``force`` this is a hard link, which
    fails instead of replacing a file that appeared while the work ran."""
    if force:
        try:
            os.replace(src, dst)
        except IsADirectoryError:
            raise OutputError(f"{_label(dst, option)} became a directory while writing; "
                              f"the output was not written: choose {_other(option)}") from None
        except OSError as exc:
            raise _os_error(dst, option, exc) from None
        return
    try:
        os.link(src, dst)
    except FileExistsError:
        raise OutputError(f"{_label(dst, option)} appeared while writing and was left as "
                          f"it is: pass {_force_hint(option)} to replace it, or choose "
                          f"{_other(option)}") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise _os_error(dst, option, exc) from None
        # no hard links on this file system: a checked rename, with a small race window
        if dst.exists() or dst.is_symlink():
            raise OutputError(f"{_label(dst, option)} appeared while writing and was left "
                              f"as it is: pass {_force_hint(option)} to replace it") from None
        os.replace(src, dst)


_WRITTEN: contextvars.ContextVar[list | None] = contextvars.ContextVar("neuroedge_written",
                                                                      default=None)
"""The files :func:`write_file` wrote inside the innermost :func:`all_or_nothing`: (path,
its (st_dev, st_ino), the folders made for it, whether it replaced a file)."""


@contextlib.contextmanager
def all_or_nothing() -> Iterator[None]:
    """The outputs one command writes inside: all or none. When a write fails (OutputError:
    a full disk, a path that changed meanwhile), the files written before it that did not
    exist before are removed again, with the folders made for them, so the error's "nothing
    was written" holds for the whole command. A file that was replaced (``force``) cannot be
    given back: the error then names it."""
    written: list[tuple[Path, tuple[int, int], list[Path], bool]] = []
    token = _WRITTEN.set(written)
    try:
        yield
    except OutputError as exc:
        for path, inode, made, replaced in reversed(written):
            with contextlib.suppress(OSError):
                st = path.lstat()
                if not replaced and (st.st_dev, st.st_ino) == inode:  # still the file we wrote
                    path.unlink()
            _remove_made(made)
        kept = [repr(str(path)) for path, _, _, replaced in written if replaced]
        if kept:
            raise type(exc)(f"{exc}; before that, this command replaced {', '.join(kept)}: "
                            "the old content is gone, the new one stays") from None
        raise
    finally:
        _WRITTEN.reset(token)


@contextlib.contextmanager
def write_file(path: PathLike, *, force: bool = False, inputs: Iterable[PathLike] = (),
               parents: bool = False, option: str | None = None,
               size: int | None = None) -> Iterator[Path]:
    """Yield a temporary path (same name, in a temporary sibling directory) to write
    ``path``'s content to; on success it is renamed onto ``path``, on failure removed.
    A full disk (:data:`DISK_ERRNOS`) is one OutputError naming ``path`` and ``size`` (the
    bytes the content needs, when the writer knows them).

    ``parents=True`` creates missing parent directories first. Raises OutputError as
    :func:`check_output`, before and after the writer ran.
    """
    dst = _without_dotdot(check_output(path, force=force, inputs=inputs, option=option))
    made = _make_parents(dst, option) if parents else []
    try:
        tmp_dir = _mkdtemp(dst, ".tmp", option)
    except BaseException:
        _remove_made(made)
        raise
    target = tmp_dir / dst.name
    try:   # marks the directory as ours: a sweep's --resume removes only marked temporaries
        (tmp_dir / TEMPORARY_MARKER).touch()
    except OSError as exc:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        _remove_made(made)
        raise (disk_error(dst, exc, size, option) if is_disk_error(exc)
               else _os_error(dst, option, exc)) from None
    full, committed = None, False
    try:
        try:
            yield target
        except OSError as exc:
            if not is_disk_error(exc):
                raise
            full = exc    # reported below, once the partial file is gone (free space true)
        if full is None:
            if not target.is_file():
                raise OutputError(f"{_label(dst, option)}: the writer produced no file; "
                                  "nothing was written")
            replaced = dst.exists() or dst.is_symlink()   # only with force
            _commit_file(target, dst, force, option)
            committed = True
            written = _WRITTEN.get()
            if written is not None:
                st = dst.lstat()
                written.append((dst, (st.st_dev, st.st_ino), made, replaced))
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)  # the temporary directory made above
        if not committed:
            _remove_made(made)                      # and the folders made for it
    if full is not None:
        raise disk_error(dst, full, size, option)


def write_text(path: PathLike, text: str, *, force: bool = False,
               inputs: Iterable[PathLike] = (), parents: bool = False,
               option: str | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`write_file`; return ``path``."""
    return write_bytes(path, text.encode("utf-8"), force=force, inputs=inputs,
                       parents=parents, option=option)


def write_bytes(path: PathLike, data: bytes, *, force: bool = False,
                inputs: Iterable[PathLike] = (), parents: bool = False,
                option: str | None = None) -> Path:
    """Write ``data`` to ``path`` through :func:`write_file`; return ``path``. The whole
    content is in memory, so a full disk is reported with the exact size it needed."""
    with write_file(path, force=force, inputs=inputs, parents=parents, option=option,
                    size=len(data)) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())   # a full disk shows here, not after the rename
    return Path(path)


def _write_manifest(directory: Path, disposable: Iterable[str]) -> None:
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            full = Path(root) / name
            files[full.relative_to(directory).as_posix()] = _sha256(full)
    doc = {"format": MANIFEST_FORMAT, "format_version": MANIFEST_VERSION,
           "files": dict(sorted(files.items())), "disposable": sorted(disposable)}
    (directory / MANIFEST).write_text(json.dumps(doc, indent=1) + "\n")


def _remove_own_export(old: Path, removed: list[Path]) -> None:
    """Delete a directory export that :func:`own_export` accepted, entry by entry: the
    files its manifest lists, the build products its patterns name, then the empty
    directories. Anything else stays (the directory then stays too, with a warning).
    Each file removed is appended to ``removed``, so a caller whose removal failed (an
    OSError) knows whether the old export is still whole."""
    doc = json.loads((old / MANIFEST).read_text())
    listed, patterns = set(doc["files"]), list(doc.get("disposable", []))
    folders = _own_folders(listed)
    for root, dirs, names in os.walk(old, topdown=False):
        for name in names:
            full = Path(root) / name
            rel = full.relative_to(old).as_posix()
            if rel == MANIFEST or rel in listed or _disposable(rel, patterns):
                full.unlink()
                removed.append(full)
        for name in dirs:
            if (Path(root) / name).relative_to(old).as_posix() in folders:
                with contextlib.suppress(OSError):
                    (Path(root) / name).rmdir()
    try:
        old.rmdir()
    except OSError:
        warnings.warn(f"the replaced export was kept at {str(old)!r}: it held files "
                      "neuroedge did not write", stacklevel=3)


def _swap_back(new: Path, dst: Path, old: Path) -> bool:
    """Undo :func:`_swap_in`'s renames: the new export back to ``new``, the old one from
    ``old`` back to ``dst``. False (the new export left at ``dst``) when that cannot be done."""
    try:
        os.rename(dst, new)
    except OSError:
        return False
    try:
        os.rename(old, dst)
    except OSError:
        os.rename(new, dst)   # keep the new export in its place rather than none
        return False
    return True


def _swap_in(new: Path, dst: Path, option: str | None) -> None:
    """Put the finished export ``new`` in the place of the earlier export ``dst`` (checked
    by :func:`check_output`): move the old one aside, rename the new one in, remove the old
    one file by file. When a step fails, the old export is put back as it was, whenever
    nothing of it was removed yet: one OutputError, nothing left over. Only a removal that
    fails halfway (the up-front check passed, then a file could not be unlinked) leaves the
    new export in place and names the folder holding the rest of the old one."""
    label = _label(dst, option)
    old = _mkdtemp(dst, ".old", option)
    try:
        os.rename(dst, old)  # replaces the empty directory just made
    except OSError as exc:
        with contextlib.suppress(OSError):
            old.rmdir()
        raise OutputError(f"{label} cannot be replaced ({exc.strerror}) and was left as it "
                          f"is: choose {_other(option)}") from None
    try:
        os.rename(new, dst)
    except OSError as exc:
        os.rename(old, dst)
        raise OutputError(f"{label} cannot be replaced ({exc.strerror}) and was left as it "
                          f"is: choose {_other(option)}") from None
    removed: list[Path] = []
    try:
        _remove_own_export(old, removed)
    except OSError as exc:
        if not removed and _swap_back(new, dst, old):   # the old export was whole
            raise OutputError(f"{label} cannot be replaced: the files of the earlier "
                              f"export cannot be removed ({exc.strerror}); it was left as "
                              f"it is: make it writable (chmod -R u+w) or choose "
                              f"{_other(option)}") from None
        raise OutputError(f"{label}: the new export is in place, but the earlier one could "
                          f"not be removed completely ({exc.strerror}): what is left of it is "
                          f"in {str(old)!r}; remove it by hand") from None


@contextlib.contextmanager
def write_directory(path: PathLike, *, force: bool = False, inputs: Iterable[PathLike] = (),
                    disposable: Iterable[str] = (), parents: bool = True,
                    option: str | None = None) -> Iterator[Path]:
    """Yield an empty temporary directory beside ``path`` for a directory export; on
    success add the manifest and move it into place (see the module doc for ``force``).

    ``disposable`` are glob patterns of files the export's own tooling makes inside it
    later (``make host`` -> ``test_host``); a later forced export may remove them.
    """
    dst = _without_dotdot(check_output(path, force=force, inputs=inputs, directory=True,
                                       option=option))
    disposable = list(disposable)
    made = _make_parents(dst, option) if parents else []
    try:
        tmp = _mkdtemp(dst, ".new", option)
    except BaseException:
        _remove_made(made)
        raise
    committed = False
    try:
        # mkdtemp makes it 0700; the export gets the mode mkdir would give it
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        try:
            yield tmp
        except OSError as exc:
            if is_disk_error(exc):
                raise disk_error(dst, exc, None, option) from None
            raise
        if not any(tmp.iterdir()):
            raise OutputError(f"{_label(dst, option)}: the writer produced nothing; "
                              "nothing was written")
        try:
            _write_manifest(tmp, disposable)
        except OSError as exc:
            if is_disk_error(exc):
                raise disk_error(dst, exc, None, option) from None
            raise
        replace_old = dst.is_dir() and any(dst.iterdir())
        if not replace_old:
            was_empty_dir = dst.is_dir() and not dst.is_symlink()
            try:
                if dst.is_dir():   # the user's empty directory keeps its permissions
                    tmp.chmod(stat.S_IMODE(dst.stat().st_mode))
                os.rename(tmp, dst)  # onto nothing or an empty directory; never onto content
            except OSError as exc:
                if was_empty_dir and dst.is_dir() and not any(dst.iterdir()):
                    # still the empty directory it was: it is the rename that was refused
                    attr = _fixed_attribute(dst)
                    raise OutputError(f"{_label(dst, option)} cannot be replaced by the export "
                                      f"({exc.strerror}{f': it is {attr}' if attr else ''}) "
                                      f"and was left as it is: choose {_other(option)}"
                                      ) from None
                raise OutputError(f"{_label(dst, option)} changed while exporting "
                                  f"({exc.strerror}) and was left as it is: choose "
                                  f"{_other(option)}") from None
            committed = True
            return
        check_output(dst, force=force, directory=True, option=option)  # still ours?
        _swap_in(tmp, dst, option)
        committed = True
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)  # the temporary directory made above
        if not committed:
            _remove_made(made)                      # and the folders made for it


@contextlib.contextmanager
def atomic_output(path: PathLike, *, directory: bool = False, force: bool = False,
                  inputs: Iterable[PathLike] = (), disposable: Iterable[str] = (),
                  option: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it onto ``path`` only on success.

    The one entry point of the exporters (C, NIR, ONNX): :func:`write_file`, or with
    ``directory=True`` :func:`write_directory`, whose temporary path is an empty directory
    the export may fill with several files (the C target writes a header, sources and a
    Makefile). So a failed export leaves nothing half-written, an existing file is replaced
    only with ``force``, an existing directory only when it is empty or (with ``force``) an
    earlier neuroedge export, and an input of the command is never an output.
    """
    if directory:
        with write_directory(path, force=force, inputs=inputs, disposable=disposable,
                             option=option) as tmp:
            yield tmp
    else:
        with write_file(path, force=force, inputs=inputs, parents=True,
                        option=option) as tmp:
            yield tmp
