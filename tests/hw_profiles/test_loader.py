"""Profile loading and strict validation: every malformed input is a clear ProfileError."""
import math
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hw_profiles
from hw_profiles import ProfileError, from_dict, load, loads

SHIPPED = ["loihi", "loihi2", "truenorth", "spinnaker2", "cortex-m4", "cortex-m7", "fpga-bnn",
           "x86-avx2", "a100", "h100", "jetson-orin"]


def test_every_required_profile_ships_and_validates():
    assert set(SHIPPED) <= set(hw_profiles.available())
    for name in SHIPPED:
        p = load(name)
        assert p.name == name
        assert p.energy_pj, name
        for key, q in p.entries():
            assert q.source in p.sources, (name, key)
            if q.provenance == "derived":
                assert q.derivation.strip(), (name, key)


@pytest.mark.parametrize("name,ops", [
    ("loihi", {"synop", "neuron_update_active", "neuron_update_idle", "spike", "hop"}),
    ("truenorth", {"synop"}),
    ("cortex-m4", {"xnor_word", "popcount_word", "int_add", "int_cmp"}),
    ("fpga-bnn", {"xnor_word", "popcount_word"}),
    ("x86-avx2", {"mac_fp32", "flop_fp32", "int_add", "int_cmp", "popcount_word"}),
    ("a100", {"mac_fp32", "flop_fp32", "mac_fp64", "int_add", "int_cmp"}),
])
def test_profiles_price_the_ops_their_engine_counts(name, ops):
    assert ops <= set(load(name).energy_pj)


def test_kinds_and_limits_of_shipped_profiles():
    assert load("loihi").kind == "neuromorphic"
    assert load("loihi").limit("cores") == 128          # Davies et al. 2018
    assert load("loihi").limit("neurons_per_core") == 1024
    assert load("cortex-m4").limit("word_bits") == 32
    assert load("fpga-bnn").limit("word_bits") == 64
    assert load("a100").kind == "gpu" and load("x86-avx2").kind == "cpu"
    assert load("loihi").energy_pj["synop"].value == pytest.approx(23.6)


def test_toy_profile_loads_from_path(toy_gpu_path):
    p = load(toy_gpu_path)
    assert p.name == "toy-gpu"
    assert p.energy_pj["mac_fp32"].value == 2.0
    assert p.memory["offchip"].read_pj_per_byte.value == 10.0
    assert load(p) is p


def test_unknown_name_suggests_the_closest_or_lists_available():
    # difflib ratio 2*M/T: 'loihi9' vs 'loihi' = 2*5/11 = 0.91 beats 'loihi2' = 2*5/12 = 0.83
    with pytest.raises(ProfileError, match=r"^unknown hardware profile 'loihi9': did you mean "
                                           r"'loihi'\? \(neuroedge profiles lists them\)$"):
        load("loihi9")
    # nothing is close to 'zzzz': every shipped profile is listed
    with pytest.raises(ProfileError, match="unknown hardware profile 'zzzz'.*a100"):
        load("zzzz")


def test_missing_path():
    with pytest.raises(ProfileError, match="does not exist"):
        load("/nonexistent/dir/mine.toml")


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def test_malformed_toml_names_file_and_position(toy_gpu_text):
    bad = _edit(toy_gpu_text, 'kind = "gpu"', 'kind = "gpu')
    with pytest.raises(ProfileError, match=r"mine.toml: TOML syntax error.*line 4"):
        loads(bad, origin="mine.toml")


def test_unknown_top_level_key(toy_gpu_text):
    with pytest.raises(ProfileError, match=r"mine.toml.*vendor.*unknown key"):
        loads('vendor = "x"\n' + toy_gpu_text, origin="mine.toml")


_FLOP_LINE = 'flop_fp32 = { value = 1.0, unit = "pJ", provenance = "specified", source = "toy" }'


@pytest.mark.parametrize("old,new,match", [
    ("int_cmp = { value = 0.5", "int_cmpp = { value = 0.5",
     r"\[energy_pj\] int_cmpp: unknown op"),
    ('mac_fp32 = { value = 2.0, unit = "pJ",',
     'mac_fp32 = { value = 2.0, unit = "pJ", colour = "red",',
     r"colour: unknown key"),
    ("mac_fp32 = { value = 2.0", "mac_fp32 = { value = -1.0",
     r"toy.toml \[energy_pj\] mac_fp32 = -1.0: energies must be >= 0 pJ"),
    ('mac_fp32 = { value = 2.0, unit = "pJ"', 'mac_fp32 = { value = 2.0, unit = "nJ"',
     r"mac_fp32 = '2.0 nJ': unit must be 'pJ'"),
    (_FLOP_LINE, _FLOP_LINE.replace(', source = "toy"', ""),
     r"toy.toml \[energy_pj.flop_fp32\] source: missing required key"),
    (_FLOP_LINE, _FLOP_LINE.replace('"toy"', '"nowhere"'),
     r"source 'nowhere' is not defined"),
    (', derivation = "chosen: 2 pJ"', "", "provenance = 'derived' needs a 'derivation'"),
])
def test_one_bad_line_is_a_clear_error(toy_gpu_text, old, new, match):
    """Each edit breaks one rule; the error names the file, section and key."""
    with pytest.raises(ProfileError, match=match):
        loads(_edit(toy_gpu_text, old, new), origin="toy.toml")


def test_energy_and_throughput_must_match(toy_gpu_text):
    doc = tomllib.loads(toy_gpu_text)
    del doc["throughput"]["int_cmp"]
    with pytest.raises(ProfileError, match=r"missing from \[throughput\]: \['int_cmp'\]"):
        from_dict(doc)


def test_gpu_needs_offchip_memory(toy_gpu_text):
    doc = tomllib.loads(toy_gpu_text)
    doc["memory"][0]["level"] = "shared"
    with pytest.raises(ProfileError, match="needs an 'offchip' memory level"):
        from_dict(doc)


def test_neuromorphic_needs_limits(toy_gpu_text):
    doc = tomllib.loads(toy_gpu_text)
    doc["kind"] = "neuromorphic"
    doc["interconnect"] = {}
    with pytest.raises(ProfileError, match=r"\[limits\] cores.*required for kind"):
        from_dict(doc)


def test_unused_source_is_an_error(toy_gpu_text):
    extra = '\n[sources.orphan]\ntitle = "x"\nurl = "https://example.org"\nkind = "web"\n'
    with pytest.raises(ProfileError, match="orphan.*cited by no number"):
        loads(toy_gpu_text + extra)


def test_shipped_name_must_match_stem(tmp_path, monkeypatch, toy_gpu_text):
    monkeypatch.setattr(hw_profiles.loader, "DATA_DIR", tmp_path)
    (tmp_path / "other.toml").write_text(toy_gpu_text)
    with pytest.raises(ProfileError, match="must equal the file stem"):
        load("other")


def test_non_number_value(toy_gpu_text):
    bad = _edit(toy_gpu_text, "mac_fp32 = { value = 2.0", 'mac_fp32 = { value = "2.0"')
    with pytest.raises(ProfileError, match="finite number"):
        loads(bad)
    bad = _edit(toy_gpu_text, "mac_fp32 = { value = 2.0", "mac_fp32 = { value = nan")
    with pytest.raises(ProfileError, match="finite number"):
        loads(bad)


# -- fuzzing: whatever the loader is fed, it returns a profile or raises ProfileError ------
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6))


def _mutations():
    keys = st.sampled_from(["schema_version", "name", "kind", "description", "energy_pj",
                            "throughput", "memory", "limits", "static", "sources",
                            "technology_node_nm", "bogus"])
    return st.lists(st.tuples(keys, st.one_of(_scalars, st.just({}), st.just([]),
                                              st.just("<delete>"))), max_size=3)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations=_mutations())
def test_fuzz_top_level_mutations(mutations):
    doc = tomllib.loads((__import__("conftest").TOY_GPU).read_text())
    for key, value in mutations:
        if value == "<delete>":
            doc.pop(key, None)
        else:
            doc[key] = value
    try:
        p = from_dict(doc)
    except ProfileError as exc:
        assert str(exc)  # a message, never an empty error
    else:
        assert all(math.isfinite(q.value) for _, q in p.entries())


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=300))
def test_fuzz_arbitrary_text(text):
    try:
        loads(text)
    except ProfileError:
        pass


@settings(max_examples=100, deadline=None)
@given(field=st.sampled_from(["value", "unit", "provenance", "source", "derivation"]),
       value=_scalars)
def test_fuzz_quantity_fields(field, value):
    doc = tomllib.loads((__import__("conftest").TOY_GPU).read_text())
    doc["energy_pj"]["mac_fp32"][field] = value
    try:
        p = from_dict(doc)
    except ProfileError:
        return
    q = p.energy_pj["mac_fp32"]
    assert q.value >= 0 and q.unit == "pJ" and q.source in p.sources
