"""``limits.synapse_crossbar``: the loader's checks of a crossbar's size and exclusions."""
import re

import pytest

from hw_profiles import ProfileError, loads
from hw_profiles.loader import DATA_DIR

TRUENORTH = (DATA_DIR / "truenorth.toml").read_text()
LINE = 'synapse_crossbar = { value = 1,'
SYN = 'synapse_bytes_per_core = { value = 8192,'


def _edit(old: str, new: str) -> str:
    assert old in TRUENORTH
    return TRUENORTH.replace(old, new, 1)


def test_truenorth_states_a_crossbar_that_fits_its_synapse_memory():
    p = loads(TRUENORTH)
    # 256 axons x 256 neurons = 65,536 bits = 8,192 B, exactly the stated memory
    assert p.limit("synapse_crossbar") == 1
    assert p.limit("fan_in_per_core") * p.limit("neurons_per_core") / 8 == \
        p.limit("synapse_bytes_per_core") == 8192


def test_crossbar_larger_than_the_synapse_memory_is_refused():
    # 256 x 256 bits need 8,192 B; 4,096 B cannot hold them
    text = _edit(SYN, 'synapse_bytes_per_core = { value = 4096,')
    with pytest.raises(ProfileError, match=re.escape(
            "<string> [limits] synapse_bytes_per_core = 4096: the synapse_crossbar of "
            "fan_in_per_core x neurons_per_core = 256 x 256 bits needs 8192 B; give "
            "synapse_bytes_per_core >= 8192")):
        loads(text)


def test_crossbar_is_a_flag():
    with pytest.raises(ProfileError, match=re.escape(
            "<string> [limits] synapse_crossbar = 2: expected 1 (the chip's synapses are a "
            "binary crossbar), or leave the key out")):
        loads(_edit(LINE, 'synapse_crossbar = { value = 2,'))


def test_crossbar_and_weight_sharing_exclude_each_other():
    text = _edit(LINE, 'weight_sharing = { value = 1, unit = "1", provenance = "specified", '
                       'source = "merolla2014" }\n' + LINE)
    with pytest.raises(ProfileError, match=re.escape(
            "<string> [limits] weight_sharing = 1: a synapse_crossbar stores one bit per axon "
            "and neuron, not shared kernels; state one of the two")):
        loads(text)


def test_without_the_key_the_profile_loads_as_per_synapse_storage():
    text = "\n".join(line for line in TRUENORTH.splitlines() if not line.startswith(LINE))
    assert loads(text).limit("synapse_crossbar") is None
