"""Hostile profile text and absurd quantities (issue 32): one ProfileError line naming the
entry, never a hang or a profile that later overflows."""
import pytest

from hw_profiles import loads
from hw_profiles.errors import ProfileError


@pytest.mark.parametrize("old, new, words", [
    ('capacity_bytes = { value = 1e9,', 'capacity_bytes = { value = 0,',
     ["capacity_bytes", "must be > 0"]),
    ('capacity_bytes = { value = 1e9,', 'capacity_bytes = { value = 0.5,',
     ["capacity_bytes", "below the bound 1 B"]),
    ('mac_fp32 = { value = 1e12, unit = "1/s"', 'mac_fp32 = { value = 1e-300, unit = "1/s"',
     ["[throughput] mac_fp32", "below the bound 1 1/s"]),
    ('bandwidth_bytes_per_s = { value = 1e11,', 'bandwidth_bytes_per_s = { value = 1e-300,',
     ["bandwidth_bytes_per_s", "below the bound 1 B/s"]),
    ('name = "toy-gpu"', 'name = "' + "n" * 100_000 + '"', ["name", "100000 characters"]),
    ('description = "fictional', 'description = "' + "d" * 2_000_000 + '',
     ["description", "at most 4000"]),
    ('name = "toy-gpu"', 'name = "toy\\u001b[2J"', ["name", "control character"]),
    ('description = "fictional', 'description = "line\\nbreak', ["control character"]),
    ('derivation = "chosen: 2 pJ"', 'derivation = "\\u001b[31mred"',
     ["mac_fp32.derivation", "control character"]),
    # a list or table where a name belongs was a TypeError traceback (unhashable)
    ('flop_fp32 = { value = 1.0, unit = "pJ", provenance = "specified", source = "toy" }',
     'flop_fp32 = { value = 1.0, unit = "pJ", provenance = "specified", source = ["toy"] }',
     ["[energy_pj] flop_fp32", "is not defined in [sources]"]),
    ('schema_version = 1', 'schema_version = 1\ndefault_stack = ["eager"]',
     ["default_stack", "expected the name of a [stacks] table"]),
    # a number or list where text belongs was accepted
    ('source = "toy" }\nmac_fp64', 'source = "toy", derivation = 5 }\nmac_fp64',
     ["flop_fp32.derivation", "expected text"]),
    ('source = "toy", derivation = "chosen: 2 pJ"',
     'source = "toy", derivation = "chosen: 2 pJ", note = [1, 2]',
     ["mac_fp32.note", "expected text"]),
    ('schema_version = 1', 'schema_version = 1.0', ["schema_version", "reads schema_version 1"]),
    # a kernel launch priced from [energy_pj] was accepted and never used
    ('flop_fp32 = { value = 1.0, unit = "pJ", provenance = "specified", source = "toy" }',
     'flop_fp32 = { value = 1.0, unit = "pJ", provenance = "specified", source = "toy" }\n'
     'kernel_launch = { value = 1e9, unit = "pJ", provenance = "specified", source = "toy" }',
     ["[energy_pj] kernel_launch", "priced from [execution] launch_s"]),
])
def test_hostile_profile_is_one_line_naming_the_entry(toy_gpu_text, old, new, words):
    assert old in toy_gpu_text
    with pytest.raises(ProfileError) as info:
        loads(toy_gpu_text.replace(old, new, 1), origin="hostile.toml")
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("hostile.toml") and len(msg) < 400
    for word in words:
        assert word in msg, msg


def test_the_toy_profile_still_loads(toy_gpu_text):
    assert loads(toy_gpu_text).name == "toy-gpu"


def test_a_byte_order_mark_is_named(toy_gpu_text):
    # was "TOML syntax error: Invalid statement (at line 1, column 1)"
    with pytest.raises(ProfileError, match="starts with a byte-order mark"):
        loads("\ufeff" + toy_gpu_text, origin="bom.toml")


@pytest.mark.parametrize("name, words", [
    ("peak", ["'peak' is a stack of the bitwise execution model"]),   # replaced it silently
    ("", ["a stack name is 1-64 letters"]),
    ("tflm 2,3=1", ["a stack name is 1-64 letters"]),   # --stack could never select it
    ("x" * 65, ["a stack name is 1-64 letters"]),
])
def test_a_stack_table_name_is_selectable_and_not_the_models_own(name, words):
    from hw_profiles.loader import DATA_DIR
    text = (DATA_DIR / "stm32l4r5.toml").read_text()
    assert '[stacks."tflm-2.3.1"]' in text
    with pytest.raises(ProfileError) as info:
        loads(text.replace('[stacks."tflm-2.3.1"]', f'[stacks."{name}"]', 1),
              origin="stk.toml")
    for word in words:
        assert word in str(info.value), str(info.value)


def test_a_file_named_like_a_shipped_profile_does_not_replace_it(tmp_path, monkeypatch):
    """``--profiles a100`` with a file called ``a100`` in the working directory read that
    file (a notes file: a TOML syntax error; a profile: priced as a100). A bare shipped
    name is the shipped profile; the file is ``./a100``."""
    from hw_profiles import load
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a100").write_text("notes\n")
    assert load("a100").path.endswith("hw_profiles/data/a100.toml")
    with pytest.raises(ProfileError, match="TOML syntax error"):
        load("./a100")
