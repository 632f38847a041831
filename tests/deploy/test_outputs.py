"""deploy.outputs: no writer destroys anything; every refusal is one OutputError line."""
import json
import os

import pytest

from deploy.errors import OutputError
from deploy.outputs import (
    MANIFEST,
    all_or_nothing,
    atomic_output,
    check_distinct,
    check_output,
    own_export,
    write_directory,
    write_file,
    write_text,
)
from hw_profiles.errors import NeuroedgeError


def _tree(root):
    """Every file under ``root`` with its bytes: what 'byte-identical afterwards' compares."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _user_dir(tmp_path):
    (tmp_path / "notes.txt").write_text("my notes")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.csv").write_text("1,2,3\n")
    return _tree(tmp_path)


def test_output_error_is_a_neuroedge_error():
    assert issubclass(OutputError, NeuroedgeError)


def test_new_file_is_written_and_nothing_else_is_left(tmp_path):
    out = write_text(tmp_path / "a.json", "{}")
    assert out.read_text() == "{}"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_existing_file_is_refused_without_force_and_replaced_with_it(tmp_path):
    out = tmp_path / "a.json"
    out.write_text("old")
    with pytest.raises(OutputError, match=r"already exists: pass force=True to replace it"):
        write_text(out, "new")
    assert out.read_text() == "old"
    write_text(out, "new", force=True)
    assert out.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_directory_is_never_a_file_output_even_with_force(tmp_path):
    before = _user_dir(tmp_path)
    for force in (False, True):
        with pytest.raises(OutputError, match="is a directory; give the path of the file"):
            write_text(tmp_path / "sub", "x", force=force)
        with pytest.raises(OutputError, match="is a directory"):
            check_output(tmp_path, force=force, option="--out")
    assert _tree(tmp_path) == before


def test_output_equal_to_an_input_is_refused_even_with_force(tmp_path):
    run = tmp_path / "run.h5"
    run.write_bytes(b"run")
    link = tmp_path / "alias.h5"
    os.link(run, link)                       # a hard link is the same file too
    for path in (run, tmp_path / "." / "run.h5", link):
        with pytest.raises(OutputError, match="is the same file as the input"):
            check_output(path, force=True, inputs=[run], option="--html")
    assert run.read_bytes() == b"run"


def test_two_outputs_naming_one_file_are_refused(tmp_path):
    a = tmp_path / "x.h5"
    with pytest.raises(OutputError, match="--html .* and --out .* are the same file"):
        check_distinct({"--out": a, "--html": tmp_path / "sub" / ".." / "x.h5"})
    check_distinct({"--out": a, "--html": None, "--json": tmp_path / "x.json"})


def test_a_parent_that_is_a_file_is_refused_before_any_work(tmp_path):
    (tmp_path / "f").write_text("keep")
    with pytest.raises(OutputError, match=r"'.*f' is a file, not a directory"):
        check_output(tmp_path / "f" / "deeper" / "run.h5")
    assert (tmp_path / "f").read_text() == "keep"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a mode-555 directory anyway; "
                    "the parent-is-a-file test covers the unwritable case")
def test_a_read_only_directory_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="cannot write in directory"):
            check_output(ro / "run.h5")
    finally:
        ro.chmod(0o755)


def test_a_failed_writer_leaves_nothing_and_the_old_file_as_it_was(tmp_path):
    out = tmp_path / "r.html"
    out.write_text("old")
    with pytest.raises(RuntimeError), write_file(out, force=True) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer crashed")
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"] and out.read_text() == "old"


def test_a_file_that_appears_during_the_work_is_kept(tmp_path):
    out = tmp_path / "run.h5"
    with pytest.raises(OutputError, match="appeared while writing"), write_file(out) as tmp:
        tmp.write_text("new")
        out.write_text("someone else's")     # e.g. a second run finished first
    assert out.read_text() == "someone else's"
    assert [p.name for p in tmp_path.iterdir()] == ["run.h5"]


def test_directory_export_into_new_or_empty_directory(tmp_path):
    for dest in (tmp_path / "new" / "c", tmp_path / "empty"):
        if dest.name == "empty":
            dest.mkdir()
        with write_directory(dest) as tmp:
            (tmp / "model.c").write_text("int x;\n")
        assert sorted(p.name for p in dest.iterdir()) == [MANIFEST, "model.c"]
        doc = json.loads((dest / MANIFEST).read_text())
        # sha256("int x;\n"), as hashlib gives it
        assert list(doc["files"]) == ["model.c"] and len(doc["files"]["model.c"]) == 64
        assert own_export(dest) is None
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_an_empty_user_directory_keeps_its_permissions(tmp_path):
    # an export into the user's empty 0750 directory came back 0755 (mkdir's mode under
    # the umask): the directory was replaced by the temporary one
    dest = tmp_path / "mine"
    dest.mkdir()
    dest.chmod(0o750)
    with write_directory(dest) as tmp:
        (tmp / "model.c").write_text("int x;\n")
    assert dest.stat().st_mode & 0o777 == 0o750
    assert (dest / "model.c").exists()


def test_non_empty_user_directory_is_never_replaced_even_with_force(tmp_path):
    before = _user_dir(tmp_path)
    for force, hint in ((False, "not empty"), (True, "has no .neuroedge-manifest.json")):
        with pytest.raises(OutputError, match=hint), \
                write_directory(tmp_path, force=force, option="--out") as tmp:
            (tmp / "model.c").write_text("x")
    assert _tree(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "sub"]


def test_a_file_where_a_directory_export_goes_is_refused_even_with_force(tmp_path):
    f = tmp_path / "out"
    f.write_text("mine")
    for force in (False, True):
        with pytest.raises(OutputError, match="is a file; this export writes a directory"):
            check_output(f, force=force, directory=True)
    assert f.read_text() == "mine"


def test_force_replaces_only_an_untouched_neuroedge_export(tmp_path):
    dest = tmp_path / "c"
    with write_directory(dest, disposable=["test_host"]) as tmp:
        (tmp / "model.c").write_text("v1")
    (dest / "test_host").write_text("binary")          # what `make host` builds: disposable
    with write_directory(dest, force=True) as tmp:
        (tmp / "model.c").write_text("v2")
    assert sorted(p.name for p in dest.iterdir()) == [MANIFEST, "model.c"]
    assert (dest / "model.c").read_text() == "v2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]   # the old copy is gone
    # an edited file or a foreign file makes it the user's: refused even with force
    (dest / "model.c").write_text("my edit")
    with pytest.raises(OutputError, match="model.c was changed after neuroedge wrote it"):
        check_output(dest, force=True, directory=True)
    (dest / "model.c").write_text("v2")
    (dest / "mine.txt").write_text("keep")
    with pytest.raises(OutputError, match="mine.txt was not written by neuroedge"):
        check_output(dest, force=True, directory=True)
    assert (dest / "mine.txt").read_text() == "keep"


def test_empty_path_is_refused():
    with pytest.raises(OutputError, match="--json: empty path"):
        check_output("", option="--json")


# -- atomic_output: the exporters' entry point -----------------------------------------------
def test_atomic_output_leaves_nothing_when_the_writer_fails(tmp_path):
    out = tmp_path / "model.bin"
    with pytest.raises(RuntimeError):
        with atomic_output(out) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("writer crashed")
    assert list(tmp_path.iterdir()) == []


def test_atomic_output_replaces_only_its_own_directory_export(tmp_path):
    out = tmp_path / "c"
    out.mkdir()
    (out / "old.h").write_text("old")        # the user's: refused even with force
    with pytest.raises(OutputError, match="has no .neuroedge-manifest.json"), \
            atomic_output(out, directory=True, force=True) as tmp:
        (tmp / "new.h").write_text("new")
    assert [p.name for p in out.iterdir()] == ["old.h"]
    (out / "old.h").unlink()                 # empty: an export may go there
    with atomic_output(out, directory=True) as tmp:
        (tmp / "v1.h").write_text("v1")
    with atomic_output(out, directory=True, force=True) as tmp:   # its own: replaced
        (tmp / "v2.h").write_text("v2")
    assert sorted(p.name for p in out.iterdir()) == [".neuroedge-manifest.json", "v2.h"]
    assert [p.name for p in tmp_path.iterdir()] == ["c"]


def test_dotdot_after_missing_folders_makes_no_folder_it_steps_out_of(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert write_text("o3/a/../r.html", "x", parents=True) is not None
    # o3/a was made for the path only, then left empty behind
    assert sorted(str(p) for p in tmp_path.rglob("*")) == [str(tmp_path / "o3"),
                                                           str(tmp_path / "o3" / "r.html")]
    # x.json/.. named a folder x.json, which then stood where the next output goes
    write_text("o2/x.json/../y.html", "y", parents=True)
    write_text("o2/x.json", "{}", parents=True)
    assert _tree(tmp_path / "o2") == {"x.json": b"{}", "y.html": b"y"}
    with write_directory("o4/c/../export") as tmp:
        (tmp / "m.c").write_text("int x;")
    assert sorted(p.name for p in (tmp_path / "o4").iterdir()) == ["export"]


def test_dotdot_after_an_existing_folder_is_the_file_systems(tmp_path):
    # a '..' after a symbolic link is its target's parent, not the link's folder
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "deep")
    write_text(tmp_path / "link" / ".." / "new" / "r.txt", "x", parents=True)
    assert (tmp_path / "real" / "new" / "r.txt").read_text() == "x"
    assert not (tmp_path / "new").exists()


def test_all_or_nothing_removes_what_a_failed_command_wrote_before(tmp_path):
    (tmp_path / "old.json").write_text("old")
    with pytest.raises(OutputError) as info, all_or_nothing():
        write_text(tmp_path / "a" / "b" / "r.html", "<html>", parents=True)
        write_text(tmp_path / "old.json", "new", force=True)
        write_text(tmp_path / "old.json", "again")       # refused: exists, no force
    # r.html and the folders made for it are gone; old.json cannot be given back: named
    assert _tree(tmp_path) == {"old.json": b"new"} and not (tmp_path / "a").exists()
    assert str(info.value).endswith(f"; before that, this command replaced "
                                    f"{str(tmp_path / 'old.json')!r}: the old content is "
                                    f"gone, the new one stays")
    with all_or_nothing():                               # no failure: everything stays
        write_text(tmp_path / "r.html", "<html>")
    write_text(tmp_path / "outside.txt", "x")            # outside: nothing recorded
    assert sorted(_tree(tmp_path)) == ["old.json", "outside.txt", "r.html"]


def test_all_or_nothing_leaves_a_file_someone_put_there_since(tmp_path):
    dest = tmp_path / "r.html"
    with pytest.raises(OutputError), all_or_nothing():
        write_text(dest, "ours")
        dest.unlink()
        dest.write_text("the user's")                    # another file under that name now
        raise OutputError("a later output failed")
    assert dest.read_text() == "the user's"


@pytest.mark.parametrize("foreign, why", [
    # fnmatch's "*" crossed the "/": a user's object file or board image in a folder of the
    # export counted as the Makefile's build product, and --force deleted it
    ("src/driver.o", "src/driver.o was not written by neuroedge"),
    ("test_boards/board.elf", "test_boards/ is a folder neuroedge did not make"),
    # an empty folder the user made was removed with the export
    ("my_notes/", "my_notes/ is a folder neuroedge did not make"),
])
def test_force_deletes_nothing_the_user_put_in_an_export(tmp_path, foreign, why):
    dest = tmp_path / "export"
    with write_directory(dest, disposable=["*.o", "test_*.elf"]) as tmp:
        (tmp / "model.c").write_text("int x;")
        (tmp / "src").mkdir()
        (tmp / "src" / "kernels.c").write_text("int y;")
    (dest / "model.o").write_text("built")           # the Makefile's: disposable
    target = dest / foreign
    if foreign.endswith("/"):
        target.mkdir()
    else:
        target.parent.mkdir(exist_ok=True)
        target.write_text("the user's")
    with pytest.raises(OutputError) as err:
        with write_directory(dest, force=True, disposable=["*.o"]) as tmp:
            (tmp / "model.c").write_text("int z;")
    assert why in str(err.value)
    assert target.exists() and (dest / "model.c").read_text() == "int x;"
    # without it, the export and its top-level build product are replaced
    if foreign.endswith("/"):
        target.rmdir()
    else:
        target.unlink()
        if target.parent.name == "test_boards":   # the folder the test made for it
            target.parent.rmdir()
    with write_directory(dest, force=True, disposable=["*.o"]) as tmp:
        (tmp / "model.c").write_text("int z;")
    assert sorted(p.name for p in dest.iterdir()) == [MANIFEST, "model.c"]


def test_a_mount_point_is_refused_before_any_work(tmp_path, monkeypatch):
    """An export is renamed into place and nothing can be renamed onto a mount point: an
    empty mounted folder as --out failed after training with "changed while exporting
    (Device or resource busy)". Now refused by the check made before any work."""
    mounted = tmp_path / "usb"
    mounted.mkdir()
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: str(p) == str(mounted) or real(p))
    with pytest.raises(OutputError, match=r"--out '.*usb' is a mount point, which an export "
                                          r"cannot replace: give a folder inside it"):
        check_output(mounted, directory=True, option="--out")
    assert check_output(mounted / "export", directory=True, option="--out")
