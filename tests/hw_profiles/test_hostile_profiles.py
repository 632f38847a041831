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
