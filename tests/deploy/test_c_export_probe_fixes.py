"""Defects a probe of the bitwise C export found, each with its smallest failing input:

- a forced re-export over an earlier export that cannot be removed (a read-only folder for
  a user without root's override) landed, then raised a PermissionError traceback and left a
  half-deleted ``.NAME.XXXX.old`` folder behind;
- ``export --from RUN.h5`` of a run simulated on a user's profile file re-read that file
  (by the relative path the run kept): it failed from another working directory, or once
  the file was edited or deleted; the run file's own profile snapshot is what it exports;
- the exported Cortex-M platform file was not clean under ``-pedantic`` (an object pointer
  cast to a function pointer in the vector table), and the Makefile's ARM_CFLAGS left
  ``-pedantic`` out;
- an immutable empty directory (``chattr +i``) was reported as "changed while exporting".

The tests run as root, which may delete anything: the permission problems are simulated
by making the system calls fail as they fail for a normal user.
"""
import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from deploy.c_export import TEMPLATES, missing_tools
from deploy.cli import main
from deploy.errors import OutputError
from deploy.outputs import check_output, write_directory

CORTEX_M4 = Path(__file__).resolve().parents[2] / "hw_profiles" / "data" / "cortex-m4.toml"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _old_export(tmp_path: Path) -> Path:
    """An earlier export of neuroedge's (its manifest lists a file and a folder's file)."""
    out = tmp_path / "exp"
    with write_directory(out) as d:
        (d / "model.c").write_text("/* old */\n")
        (d / "sub").mkdir()
        (d / "sub" / "model.h").write_text("/* old */\n")
    return out


def _write_new(out: Path, force: bool = True) -> None:
    with write_directory(out, force=force) as d:
        (d / "model.c").write_text("/* new */\n")


# -- item 1: an old export that cannot be removed ----------------------------------------------
def test_forced_export_over_one_that_cannot_be_removed_is_refused_up_front(tmp_path,
                                                                           monkeypatch):
    """A read-only earlier export (``chmod 555 exp`` as a normal user): its files cannot be
    unlinked, so replacing it is refused before any work, and nothing changes."""
    out = _old_export(tmp_path)
    before = _tree(tmp_path)
    real = os.access

    def access(path, mode, *args, **kwargs):   # what a normal user's access(2) says there
        if Path(path) == out and mode & os.W_OK:
            return False
        return real(path, mode, *args, **kwargs)
    monkeypatch.setattr(os, "access", access)
    with pytest.raises(OutputError, match=r"output '.*exp' cannot be replaced: .*cannot "
                                          r"remove the files of the earlier export"):
        check_output(out, force=True, directory=True)
    with pytest.raises(OutputError, match="cannot be replaced"):
        _write_new(out)
    assert _tree(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp"]    # no .exp.XXXX.new/.old


def test_a_removal_that_fails_late_puts_the_old_export_back(tmp_path, monkeypatch):
    """The up-front check passed, but unlinking the old export's first file fails (the
    probe's PermissionError at ``full.unlink()``): one OutputError, the old export back in
    place, the new one gone, no ``.exp.XXXX.old`` left over."""
    out = _old_export(tmp_path)
    before = _tree(tmp_path)
    real = Path.unlink

    def unlink(self, *args, **kwargs):
        if any(part.endswith(".old") for part in self.parts):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.raises(OutputError, match=r"output '.*exp' cannot be replaced: the files of "
                                          r"the earlier export cannot be removed \(Permission "
                                          r"denied\); it was left as it is"):
        _write_new(out)
    assert _tree(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp"]


def test_a_removal_that_fails_halfway_names_what_is_left(tmp_path, monkeypatch):
    """Unlinking fails after a first file went: the old export cannot be given back, so the
    new one stays in place and the one line names the folder holding the rest."""
    out = _old_export(tmp_path)
    real = Path.unlink
    seen = []

    def unlink(self, *args, **kwargs):
        if any(part.endswith(".old") for part in self.parts):
            seen.append(self)
            if len(seen) > 1:
                raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.raises(OutputError, match=r"the new export is in place, but the earlier one "
                                          r"could not be removed completely \(Permission "
                                          r"denied\): what is left of it is in '.*\.old'"):
        _write_new(out)
    assert (out / "model.c").read_text() == "/* new */\n"


def test_cli_forced_export_over_a_protected_one_is_one_error_line(run_file, tmp_path,
                                                                  monkeypatch, capsys):
    out = tmp_path / "exp"
    assert main(["export", "--target", "c", "--from", str(run_file), "--out", str(out)]) == 0
    before = _tree(tmp_path)
    real = Path.unlink

    def unlink(self, *args, **kwargs):
        if any(part.endswith(".old") for part in self.parts):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Path, "unlink", unlink)
    capsys.readouterr()
    assert main(["export", "--target", "c", "--from", str(run_file), "--out", str(out),
                 "--force"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("neuroedge: error:") and err.count("\n") == 1, err
    assert _tree(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp"]


# -- item 7: an immutable directory --------------------------------------------------------------
def test_an_empty_directory_that_cannot_be_replaced_says_so(tmp_path, monkeypatch):
    """The rename onto the user's empty directory fails (EPERM: ``chattr +i``): the message
    says the directory cannot be replaced and why, not that it changed."""
    out = tmp_path / "imm"
    out.mkdir()
    real = os.rename

    def rename(src, dst, *args, **kwargs):
        if Path(dst) == out:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return real(src, dst, *args, **kwargs)
    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(OutputError) as info:
        _write_new(out, force=False)
    msg = str(info.value)
    assert "output" in msg and "cannot be replaced" in msg and "Operation not permitted" in msg
    assert "changed" not in msg
    assert sorted(tmp_path.iterdir()) == [out] and not any(out.iterdir())


@pytest.fixture
def immutable_dir(tmp_path):
    out = tmp_path / "imm"
    out.mkdir()
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(out)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (no e2fsprogs or no CAP_LINUX_IMMUTABLE)")
    try:
        yield out
    finally:
        subprocess.run(["chattr", "-i", str(out)], check=True)


def test_an_immutable_directory_is_refused_before_the_work(immutable_dir, run_file, capsys):
    with pytest.raises(OutputError, match=r"output '.*imm' cannot be replaced: it is immutable"):
        check_output(immutable_dir, directory=True)
    assert main(["export", "--target", "c", "--from", str(run_file), "--out",
                 str(immutable_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be replaced" in err and "changed" not in err
    assert sorted(immutable_dir.parent.iterdir()) == [immutable_dir]


# -- item 2: the profile of a run file is its snapshot -------------------------------------------
@pytest.fixture(scope="module")
def profile_run(tmp_path_factory):
    """A tsetlin run on Noisy XOR simulated on a user's profile file named by a relative
    path (``--profile mine.toml``), as the probe's ``relprof.sh`` does."""
    root = tmp_path_factory.mktemp("relprof")
    text = CORTEX_M4.read_text().replace('name = "cortex-m4"', 'name = "mine"', 1)
    (root / "mine.toml").write_text(text)
    here = os.getcwd()
    os.chdir(root)
    try:
        assert main(["simulate", "tsetlin", "--dataset", "noisy-xor", "--profile",
                     "mine.toml", "--set", "epochs=1", "--out", "mine.h5", "--quiet"]) == 0
    finally:
        os.chdir(here)
    return root


@pytest.fixture(scope="module")
def run_file(profile_run):
    return profile_run / "mine.h5"


@pytest.mark.parametrize("change", ["another_directory", "edited", "deleted"])
def test_export_from_a_run_on_a_profile_file_uses_the_runs_snapshot(change, profile_run,
                                                                    tmp_path, monkeypatch,
                                                                    capsys):
    work = tmp_path / "work"
    shutil.copytree(profile_run, work)
    run = work / "mine.h5"
    sub = work / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)                    # another working directory: mine.toml is not here
    if change == "edited":
        (work / "mine.toml").write_text("name = 'mine'\n[limits]\nword_bits = 16\n")
    elif change == "deleted":
        (work / "mine.toml").unlink()
    assert main(["export", "--target", "c", "--from", str(run), "--out", "there"]) == 0, \
        capsys.readouterr().err
    # the snapshot's 32-bit words, whatever the file says now
    assert "#define NE_WORD_BITS 32" in (sub / "there" / "ne_config.h").read_text()


def test_the_export_reads_no_profile_file(profile_run, tmp_path, monkeypatch):
    """A run file must never make the program read another file: the export asks the
    profile loader for nothing (the snapshot is a profile already)."""
    import hw_profiles.loader

    def refuse(*args, **kwargs):
        raise AssertionError("the export read a profile file")
    monkeypatch.setattr(hw_profiles.loader, "loads", refuse)
    assert main(["export", "--target", "c", "--from", str(profile_run / "mine.h5"), "--out",
                 str(tmp_path / "c")]) == 0


# -- item 6: -pedantic on the Cortex-M build -------------------------------------------------------
def test_the_cortex_m_build_is_pedantic():
    make = (TEMPLATES / "Makefile").read_text()
    arm = make.split("ARM_CFLAGS ?=", 1)[1].split("\nSRC", 1)[0]
    assert "-pedantic" in arm and "-Werror" in arm


@pytest.mark.skipif(missing_tools("cortex-m4") is not None, reason="no arm-none-eabi-gcc")
def test_the_cortex_m_platform_compiles_under_pedantic_errors(tmp_path):
    """ne_platform_cm.c:78 cast ``&_estack`` to a function pointer (ISO C forbids it)."""
    proc = subprocess.run(["arm-none-eabi-gcc", "-std=c99", "-O2", "-Wall", "-Wextra",
                           "-Werror", "-pedantic", "-mcpu=cortex-m4", "-mthumb",
                           "-ffreestanding", "-c", str(TEMPLATES / "ne_platform_cm.c"),
                           "-I", str(TEMPLATES), "-o", str(tmp_path / "p.o")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_run_file_naming_a_profile_file_of_its_own_is_refused(tmp_path, capsys):
    # a run file edited so that its trained state names a profile file: the NIR export
    # loaded that path (a run file made neuroedge read another file, /etc/passwd in the probe)
    import json

    import h5py

    from deploy.cli import main
    run = tmp_path / "snn.h5"
    assert main(["simulate", "snn_cuba", "--set", "n=200", "--set", "duration=0.01",
                 "--out", str(run), "--quiet"]) == 0
    secret = tmp_path / "secret.toml"
    secret.write_text("not = 'a profile'\n")
    with h5py.File(run, "r+") as f:
        meta = json.loads(f["trained"].attrs["meta"])
        meta["profile"] = str(secret)
        f["trained"].attrs["meta"] = json.dumps(meta)
    capsys.readouterr()
    assert main(["export", "--target", "nir", "--from", str(run),
                 "--out", str(tmp_path / "x.nir")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"names the profile {str(secret)!r}" in err[0]
    assert "never makes neuroedge read another file" in err[0]
    assert not (tmp_path / "x.nir").exists()
