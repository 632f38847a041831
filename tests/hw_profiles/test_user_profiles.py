"""A user's own profile file: its label, duplicates in a list, and the per-unit bounds.

Issue 11 items 3 and 5: a user file is shown as ``NAME (file: PATH)`` whatever its name, so
one that reuses a shipped name never reads as the shipped profile; a list naming one profile
twice is refused; a value above its unit's bound is refused with the bound.
"""
import pytest

from hw_profiles import ProfileError, label_for, load, load_many, loads
from hw_profiles.loader import DATA_DIR, MAX_BY_UNIT


def _copy(tmp_path, src_text, filename, name=None):
    """Write ``src_text`` to ``tmp_path/filename``, optionally renaming the profile."""
    text = src_text
    if name is not None:
        first = text.split('name = "', 1)[1].split('"', 1)[0]
        text = text.replace(f'name = "{first}"', f'name = "{name}"', 1)
    path = tmp_path / filename
    path.write_text(text)
    return path


# -- labels ------------------------------------------------------------------------------
def test_shipped_profile_label_is_its_name():
    assert load("a100").label == "a100"
    # the shipped file given by path is still the shipped profile
    assert load(DATA_DIR / "a100.toml").label == "a100"
    assert label_for("a100") == "a100"


def test_user_file_label_names_the_file_whatever_its_name(tmp_path, toy_gpu_text):
    own = load(_copy(tmp_path, toy_gpu_text, "my-gpu.toml", name="my-gpu"))
    assert own.name == "my-gpu"
    assert own.label == f"my-gpu (file: {tmp_path.resolve() / 'my-gpu.toml'})"
    reused = load(_copy(tmp_path, toy_gpu_text, "a100.toml", name="a100"))
    assert reused.name == "a100"
    assert reused.label == f"a100 (file: {tmp_path.resolve() / 'a100.toml'})"
    # the user's numbers, not the shipped ones: toy mac_fp32 is 2.0 pJ
    assert reused.energy_pj["mac_fp32"].value == 2.0
    assert load("a100").energy_pj["mac_fp32"].value != 2.0


def test_relative_path_label_is_absolute(tmp_path, toy_gpu_text, monkeypatch):
    _copy(tmp_path, toy_gpu_text, "mine.toml")
    monkeypatch.chdir(tmp_path)
    assert load("./mine.toml").label == f"toy-gpu (file: {tmp_path.resolve() / 'mine.toml'})"


def test_profile_from_text_is_labelled_by_name(toy_gpu_text):
    assert loads(toy_gpu_text).label == "toy-gpu"
    assert loads(toy_gpu_text, path="/x/y.toml").label == "toy-gpu (file: /x/y.toml)"


# -- load_many ---------------------------------------------------------------------------
def test_load_many_keeps_order_and_objects(toy_gpu_path):
    h100 = load("h100")
    got = load_many(["a100", h100, toy_gpu_path])
    assert [p.label for p in got] == ["a100", "h100", f"toy-gpu (file: {toy_gpu_path.resolve()})"]
    assert got[1] is h100
    assert load_many([]) == []


def test_load_many_refuses_a_shipped_name_twice():
    with pytest.raises(ProfileError, match=r"^profile 'a100' is listed twice \(entries 1 and 3: "
                                           r"'a100', 'a100'\); list each profile once$"):
        load_many(["a100", "h100", "a100"])


def test_load_many_refuses_one_file_spelt_two_ways(tmp_path, toy_gpu_text, monkeypatch):
    path = _copy(tmp_path, toy_gpu_text, "mine.toml")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProfileError, match=r"^profile 'toy-gpu \(file: .*mine.toml\)' is listed "
                                           r"twice \(entries 1 and 2: '.*mine.toml', "
                                           r"'mine.toml'\)"):
        load_many([str(path), "mine.toml"])


def test_load_many_shipped_and_user_file_of_one_name_are_distinct(tmp_path, toy_gpu_text):
    path = _copy(tmp_path, toy_gpu_text, "a100.toml", name="a100")
    shipped, user = load_many(["a100", path])
    assert (shipped.name, user.name) == ("a100", "a100")
    assert shipped.label == "a100"
    assert user.label == f"a100 (file: {path.resolve()})"


def test_load_many_refuses_an_object_equal_to_a_name():
    with pytest.raises(ProfileError, match=r"^profile 'a100' is listed twice \(entries 1 and 2"):
        load_many([load("a100"), "a100"])


def test_load_many_passes_load_errors_through():
    with pytest.raises(ProfileError, match=r"^unknown hardware profile 'nope'"):
        load_many(["a100", "nope"])


# -- bounds per unit ---------------------------------------------------------------------
_MAC = 'mac_fp32 = { value = 2.0, unit = "pJ"'


@pytest.mark.parametrize("old,new,match", [
    (_MAC, 'mac_fp32 = { value = 1e308, unit = "pJ"',
     r"^toy.toml \[energy_pj\] mac_fp32 = 1e\+308: above the bound 1e\+09 pJ for a quantity in "
     r"pJ \(hw_profiles/SCHEMA.md, Bounds\); check the exponent$"),
    ('mac_fp32 = { value = 1e12, unit = "1/s"', 'mac_fp32 = { value = 1e19, unit = "1/s"',
     r"^toy.toml \[throughput\] mac_fp32 = 1e\+19: above the bound 1e\+18 1/s"),
    ('read_pj_per_byte = { value = 10.0,', 'read_pj_per_byte = { value = 2e9,',
     r"^toy.toml \[memory.0\] read_pj_per_byte = 2000000000.0: above the bound 1e\+09 pJ/B"),
    ('bandwidth_bytes_per_s = { value = 1e11,', 'bandwidth_bytes_per_s = { value = 1e18,',
     r"^toy.toml \[memory.0\] bandwidth_bytes_per_s = 1e\+18: above the bound 1e\+17 B/s"),
    ('capacity_bytes = { value = 1e9,', 'capacity_bytes = { value = 1e16,',
     r"^toy.toml \[memory.0\] capacity_bytes = 1e\+16: above the bound 1e\+15 B"),
    ('power_w = { value = 1.0,', 'power_w = { value = 1e6,',
     r"^toy.toml \[static\] power_w = 1000000.0: above the bound 100000 W"),
    ('technology_node_nm = { value = 7,', 'technology_node_nm = { value = 20000,',
     r"^toy.toml technology_node_nm = 20000: above the bound 10000 nm"),
    ("[limits]\n", '[limits]\nword_bits = { value = 65537, unit = "bit", provenance = '
     '"specified", source = "toy" }\n', r"^toy.toml \[limits\] word_bits = 65537: above the "
     r"bound 65536 bit"),
    ("[limits]\n", '[limits]\nclock_hz = { value = 2e11, unit = "Hz", provenance = '
     '"specified", source = "toy" }\n', r"^toy.toml \[limits\] clock_hz = 200000000000.0: above "
     r"the bound 1e\+11 Hz"),
])
def test_value_above_its_unit_bound_is_refused(toy_gpu_text, old, new, match):
    assert old in toy_gpu_text
    with pytest.raises(ProfileError, match=match):
        loads(toy_gpu_text.replace(old, new, 1), origin="toy.toml")


def test_count_bound_on_a_neuromorphic_limit():
    text = (DATA_DIR / "loihi.toml").read_text()
    old = 'cores = { value = 128,'
    assert old in text
    with pytest.raises(ProfileError, match=r"^loihi.toml \[limits\] cores = 2000000000: above "
                                           r"the bound 1e\+09 1 "):
        loads(text.replace(old, 'cores = { value = 2000000000,'), origin="loihi.toml")


def test_value_at_the_bound_is_accepted(toy_gpu_text):
    # 1e9 pJ is the bound itself: allowed (the check is value > bound)
    p = loads(toy_gpu_text.replace(_MAC, 'mac_fp32 = { value = 1e9, unit = "pJ"', 1))
    assert p.energy_pj["mac_fp32"].value == 1e9


def test_integer_beyond_64_bits_is_refused(toy_gpu_text):
    with pytest.raises(ProfileError, match=r"^toy.toml \[energy_pj\] mac_fp32 = '\(401-digit "
                                           r"integer\)': TOML integers must fit in 64 bits; "
                                           r"write a float$"):
        loads(toy_gpu_text.replace(_MAC, 'mac_fp32 = { value = 1' + "0" * 400 + ', unit = "pJ"'),
              origin="toy.toml")


def test_every_unit_of_the_shipped_profiles_has_a_bound():
    """A new unit (a new profile field) must get its bound in MAX_BY_UNIT and SCHEMA.md."""
    import hw_profiles
    units = {q.unit for n in hw_profiles.available() for _, q in load(n).entries()}
    assert units - set(MAX_BY_UNIT) == set()
    schema = (DATA_DIR.parent / "SCHEMA.md").read_text()
    for unit, bound in MAX_BY_UNIT.items():
        assert f"| `{unit}` | {bound:g} |" in schema, unit


def test_shipped_profiles_are_within_their_bounds():
    import hw_profiles
    for name in hw_profiles.available():
        for key, q in load(name).entries():
            assert q.value <= MAX_BY_UNIT[q.unit], (name, key)

