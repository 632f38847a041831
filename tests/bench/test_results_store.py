"""bench/_results.py: a stored RESULT is written whole or not at all."""
import json

import pytest

from bench._results import store


def test_store_writes_indented_json_and_leaves_no_part(tmp_path):
    path = store(tmp_path / "out" / "r.json", {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert path.read_text().endswith("}\n")
    assert sorted(p.name for p in path.parent.iterdir()) == ["r.json"]


def test_a_failed_write_keeps_the_old_file_and_no_part(tmp_path):
    path = store(tmp_path / "r.json", {"a": 1})
    with pytest.raises(TypeError):
        store(path, {"b": object()})          # not JSON: fails before anything is renamed
    assert json.loads(path.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
