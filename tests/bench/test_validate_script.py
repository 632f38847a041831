"""bench/validate.py: every refusal comes before the rows are computed (a full run takes a
minute), in one line, and --json is written whole or not at all."""
import json

import pytest

from bench import validate as bv


@pytest.fixture
def no_rows(monkeypatch):
    """validate() replaced by one that records it ran and returns no row: a refusal must
    come before it, and a run that writes needs no minute of pricing."""
    calls = []

    def fake(only=None, table=None):
        calls.append(only)
        return []
    monkeypatch.setattr("sim.validation.validate", fake)
    return calls


def test_unknown_row_id_is_a_one_line_error_naming_the_known_ids(no_rows):
    """--only bogus-row ran no row and exited 0: now exit 1, naming the id and the known
    ids (sim.validation.check_ids, the check validate() makes too), before any row runs."""
    with pytest.raises(SystemExit) as exc:
        bv.main(["--only", "bogus-row,truenorth-rate-20hz"])
    msg = str(exc.value.code)
    assert msg.startswith("validate.py: validation row id(s) 'bogus-row': no such row in the "
                          "validation table; rows are cpu-kws-blouw2019, ")
    assert "truenorth-rate-20hz" in msg and "\n" not in msg
    assert no_rows == []


def test_json_into_a_path_that_cannot_be_written_is_refused_before_the_rows(no_rows,
                                                                           tmp_path):
    """--json under a file (or a missing folder that cannot be made) was a FileNotFoundError
    traceback after every row was computed: now one line, before any row runs."""
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(SystemExit) as exc:
        bv.main(["--json", str(blocker / "x.json")])
    assert str(exc.value.code) == (f"validate.py: --json {str(blocker / 'x.json')!r}: "
                                   f"{str(blocker)!r} is a file, not a directory: choose "
                                   "another --json")
    with pytest.raises(SystemExit, match="is a directory"):
        bv.main(["--json", str(tmp_path)])
    with pytest.raises(SystemExit, match=r"^--write-summary needs every row"):
        bv.main(["--write-summary", "--only", "truenorth-rate-20hz"])
    assert no_rows == []


def test_json_is_written_whole_into_a_new_folder(no_rows, tmp_path, capsys):
    """The JSON goes through bench._results.store: its folder made, written to a .part
    sibling and renamed, so no half-written file is left; an existing one is replaced."""
    out = tmp_path / "new" / "dir" / "v.json"
    assert bv.main(["--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["rows"] == [] and doc["summary"]["rows"] == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["v.json"]
    out.write_text("old")
    assert bv.main(["--json", str(out)]) == 0
    assert json.loads(out.read_text())["rows"] == []
    assert no_rows == [None, None]
