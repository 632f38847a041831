"""The loader's answers to the CLI probe's hostile profiles (each was a traceback, a silent
acceptance or an unbounded line): deep nesting, a name too long for a file, more cores than
the mesh holds, a huge offending value, and ``-0.0``."""
import math
import tomllib

import pytest
import tomli_w

from hw_profiles import ProfileError, from_dict, load, loads
from hw_profiles.loader import DATA_DIR


def _doc(name: str) -> dict:
    return tomllib.loads((DATA_DIR / f"{name}.toml").read_text())


def _one_line(exc_info, limit: int = 400) -> str:
    msg = str(exc_info.value)
    assert "\n" not in msg and len(msg) < limit, msg
    return msg


# -- item 1: nesting deeper than the TOML reader's recursion --------------------------------------
@pytest.mark.parametrize("depth", [500, 1000])
def test_deeply_nested_toml_is_one_line_naming_the_file(tmp_path, depth):
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * depth + "]" * depth + "\n")   # ~1 KB at 500 levels
    with pytest.raises(ProfileError, match="nested too deeply") as exc:
        load(path)
    assert _one_line(exc).startswith("deep.toml: ")
    with pytest.raises(ProfileError, match="^<string>: nested too deeply"):
        loads("x = " + "{a = " * depth + "1" + "}" * depth)


# -- item 2: a profile argument no file can be named ----------------------------------------------
@pytest.mark.parametrize("spec", ["y" * 300, "dir/" + "y" * 300 + ".toml", "y" * 300 + ".toml",
                                  "/".join(["y" * 200] * 30)])
def test_a_name_too_long_for_a_file_is_one_line(spec):
    with pytest.raises(ProfileError, match="too long") as exc:
        load(spec)
    msg = _one_line(exc)
    assert "y" * 61 not in msg and "..." in msg   # the name shown, not all of it
    assert "a100" in msg                           # what would be right


def test_a_nul_character_in_a_profile_argument_is_one_line():
    with pytest.raises(ProfileError, match="NUL") as exc:
        load("loihi\0.toml")
    _one_line(exc)


# -- item 4: limits.cores against the mesh ---------------------------------------------------------
def _with_cores(name: str, cores: int) -> str:
    doc = _doc(name)
    doc["limits"]["cores"]["value"] = cores
    return tomli_w.dumps(doc)


def test_more_cores_than_the_mesh_holds_is_refused():
    # loihi: one 8 x 4 mesh, 4 cores per router = 128 cores; 2000 made 15 invisible chips
    with pytest.raises(ProfileError, match=r"\[limits\] cores = 2000") as exc:
        loads(_with_cores("loihi", 2000), origin="over.toml")
    msg = _one_line(exc)
    for part in ("mesh_x", "mesh_y", "cores_per_router", "8 x 4 x 4", "= 128"):
        assert part in msg, msg


def test_a_multi_chip_mesh_holds_every_chip_s_cores():
    # loihi-pohoiki-beach: 8 x 8 chips of 8 x 4 routers x 4 cores = 8192 cores
    assert loads(_with_cores("loihi-pohoiki-beach", 8192)).limits["cores"].value == 8192
    with pytest.raises(ProfileError, match="chips_x x chips_y") as exc:
        loads(_with_cores("loihi-pohoiki-beach", 8193))
    assert "= 8192" in _one_line(exc)


def test_fewer_cores_than_the_mesh_has_places_is_accepted():
    # spinnaker2: 152 cores on 8 x 5 routers x 4 (160 places); a chip need not fill its mesh
    p = load("spinnaker2")
    assert p.limits["cores"].value == 152
    assert loads(_with_cores("loihi", 1)).limits["cores"].value == 1


# -- item 7: the offending value is shown, not all of it ------------------------------------------
def test_a_huge_offending_value_is_capped():
    doc = _doc("a100")
    doc["schema_version"] = [1] * 300_000   # the probe's 900,090-character line
    with pytest.raises(ProfileError, match="schema_version") as exc:
        from_dict(doc, origin="big.toml")
    assert "..." in _one_line(exc, limit=300)


def test_a_huge_unknown_key_and_undefined_source_are_capped():
    doc = _doc("a100")
    doc["energy_pj"]["mac_fp32"]["source"] = "s" * 100_000
    with pytest.raises(ProfileError, match="not defined") as exc:
        from_dict(doc, origin="big.toml")
    _one_line(exc, limit=600)
    doc = _doc("a100")
    doc["k" * 100_000] = 1
    with pytest.raises(ProfileError, match="unknown key") as exc:
        from_dict(doc, origin="big.toml")
    _one_line(exc, limit=600)


# -- item 12: -0.0 ---------------------------------------------------------------------------
def test_negative_zero_energy_is_stored_as_zero():
    doc = _doc("a100")
    doc["energy_pj"]["mac_fp32"]["value"] = -0.0
    q = loads(tomli_w.dumps(doc)).energy_pj["mac_fp32"]
    assert q.value == 0.0 and math.copysign(1.0, q.value) == 1.0
    assert f"{q.value:g}" == "0"
