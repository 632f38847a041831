"""The shipped validation table loads, and every malformed entry is refused by name."""
import tomllib

import pytest

from hw_profiles.errors import ProfileError
from hw_profiles.validation import TABLE_PATH, from_dict, load_table


def _doc():
    return tomllib.loads(TABLE_PATH.read_text())


def test_shipped_table_has_8_rows_over_4_kinds():
    rows = load_table()
    assert len(rows) == 12   # + spinnaker-microcircuit-sharp2012 (issue 29 item 5)
    assert {r.kind for r in rows} == {"neuromorphic", "gpu", "cpu", "bitwise"}
    assert len({r.id for r in rows}) == len(rows)
    # the one row a profile number was derived from is marked as such
    assert [r.id for r in rows if r.group == "calibration"] == ["truenorth-rate-20hz"]


def test_blouw_figures_as_published():
    rows = {r.id: r for r in load_table()}
    # Table 1: 0.081 W / 296 inf/s = 0.27 mJ; 11.47 W / 1813.63 inf/s = 6.3 mJ
    assert rows["loihi-kws-blouw2019"].measured_j == 0.00027
    assert rows["cpu-kws-blouw2019"].measured_j == 0.0063
    assert rows["loihi-kws-blouw2019"].measured_latency_s == pytest.approx(1 / 296, rel=1e-4)
    assert rows["loihi-kws-blouw2019"].missing  # activity on the chip is not published


@pytest.mark.parametrize("key,value,match", [
    ("kind", "fpga", "kind = 'fpga'"),
    ("profile", "loihi3", "not a shipped profile"),
    ("kind", "gpu", "is of kind 'neuromorphic'"),
    ("part", "similar", "part = 'similar'"),
    ("group", "train", "group = 'train'"),
    ("measured_j", 0.0, "measured_j = 0.0"),
    ("measured_j", -1e-3, "finite number > 0"),
    ("source_url", "doi:10.1126/science.1254642", "http"),
    ("colour", "red", "unknown key 'colour'"),
])
def test_bad_entry_is_refused(key, value, match):
    doc = _doc()
    doc["entry"][0][key] = value
    with pytest.raises(ProfileError, match=match):
        from_dict(doc, "validation.toml")


def test_missing_key_and_duplicate_id_and_unexplained_gap():
    doc = _doc()
    del doc["entry"][0]["conditions"]
    with pytest.raises(ProfileError, match="missing required key 'conditions'"):
        from_dict(doc)
    doc = _doc()
    doc["entry"][1]["id"] = doc["entry"][0]["id"]
    with pytest.raises(ProfileError, match="used twice"):
        from_dict(doc)
    doc = _doc()
    doc["entry"][1].pop("missing")     # the Loihi KWS row has no workload
    with pytest.raises(ProfileError, match="needs a 'missing'"):
        from_dict(doc)
    doc = _doc()
    doc["schema_version"] = 2
    with pytest.raises(ProfileError, match="schema_version"):
        from_dict(doc)
