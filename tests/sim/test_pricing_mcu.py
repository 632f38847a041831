"""The bitwise/MCU execution model (sim/execution/mcu.py): serial time, placement, capacity."""
import pytest
import torch

import sim
from hw_profiles import load, loads
from sim.bitwise import BitwiseDevice
from sim.errors import HardwareLimitError
from sim.ledger import Ledger
from sim.pricing import price

TOY_MCU = '''
schema_version = 1
name = "toy-mcu"
kind = "bitwise"
description = "fictional microcontroller with round numbers"
[energy_pj]
int_add = { value = 1.0, unit = "pJ", provenance = "specified", source = "toy" }
mac_fp32 = { value = 2.0, unit = "pJ", provenance = "specified", source = "toy" }
flop_fp32 = { value = 2.0, unit = "pJ", provenance = "specified", source = "toy" }
[throughput]
int_add = { value = 1e8, unit = "1/s", provenance = "specified", source = "toy" }
mac_fp32 = { value = 1e8, unit = "1/s", provenance = "specified", source = "toy" }
flop_fp32 = { value = 1e8, unit = "1/s", provenance = "specified", source = "toy" }
[[memory]]
name = "SRAM"
level = "local"
capacity_bytes = { value = 1000, unit = "B", provenance = "specified", source = "toy" }
read_pj_per_byte = { value = 3.0, unit = "pJ/B", provenance = "specified", source = "toy" }
write_pj_per_byte = { value = 4.0, unit = "pJ/B", provenance = "specified", source = "toy" }
bandwidth_bytes_per_s = { value = 1e9, unit = "B/s", provenance = "specified", source = "toy" }
[[memory]]
name = "Flash"
level = "nonvolatile"
capacity_bytes = { value = 2000, unit = "B", provenance = "specified", source = "toy" }
read_pj_per_byte = { value = 5.0, unit = "pJ/B", provenance = "specified", source = "toy" }
write_pj_per_byte = { value = 100.0, unit = "pJ/B", provenance = "specified", source = "toy" }
bandwidth_bytes_per_s = { value = 5e8, unit = "B/s", provenance = "specified", source = "toy" }
[limits]
word_bits = { value = 32, unit = "bit", provenance = "specified", source = "toy" }
[static]
power_w = { value = 0.0, unit = "W", provenance = "specified", source = "toy" }
[sources.toy]
title = "Test fixture"
url = "https://example.org/toy-mcu"
kind = "web"
'''


@pytest.fixture
def mcu():
    return loads(TOY_MCU, origin="toy-mcu.toml")


def test_serial_core_adds_compute_and_memory_time(mcu):
    led = Ledger()
    led.add("int_add", 100, scope="infer")
    led.add_bytes("local", read=1000, scope="infer")
    rep = price(led, mcu)
    # 100 / 1e8 = 1 us of adds + 1000 B / 1e9 = 1 us of loads: in series, 2 us
    assert rep.latency_s["infer"] == pytest.approx(2e-6)
    assert rep.total_j == pytest.approx((100 * 1 + 1000 * 3) * 1e-12)
    assert rep.bound == "estimate" and "serial" in rep.execution_model


def test_torch_bytes_follow_the_placement(mcu):
    led = Ledger()
    led.add("mac_fp32", 10, scope="train/fc")
    led.add("kernel_launch", 3, scope="train/fc")
    led.add_bytes("offchip", read=1000, write=100, scope="train/fc")
    led.add_footprint(writable=400, read_only=1000, scope="train")
    rep = price(led, mcu)
    # placement: 400 B writable in SRAM; read-only 600 B fill SRAM, 400 B go to flash.
    # reads split by state: SRAM 1000 / 1400 of 1000 B = 714 (+1 remainder) = 715, flash 285;
    # writes all to SRAM (all writable state is there)
    moved = rep.bytes_moved()
    assert moved == {"local:read": 715, "nonvolatile:read": 285, "local:write": 100}
    assert rep.total_j == pytest.approx((10 * 2 + 715 * 3 + 285 * 5 + 100 * 4) * 1e-12)
    # 10 / 1e8 + 715 / 1e9 + 285 / 5e8 + 100 / 1e9 = 100 + 715 + 570 + 100 ns
    assert rep.latency_s["train/fc"] == pytest.approx(1485e-9)
    assert "kernel_launch" not in rep.by_op()          # not priced on this kind, and said so
    assert any("3 kernel launches counted, not priced" in n for n in rep.notes)
    assert any("Flash: 0 B writable + 400 B read-only" in n for n in rep.notes)


def test_writable_state_larger_than_sram_is_an_error(mcu):
    led = Ledger()
    led.add("int_add", 1, scope="train")
    led.add_footprint(writable=1200, scope="train")
    with pytest.raises(HardwareLimitError,
                       match=r"needs 1,200 B of writable memory.*has 1,000 B \(SRAM 1,000 B\)"):
        price(led, mcu)


def test_read_only_state_beyond_sram_and_flash_is_an_error(mcu):
    led = Ledger()
    led.add_footprint(writable=500, read_only=2600, scope="infer")
    # 500 B of SRAM and 2000 B of flash are left: 2500 < 2600
    with pytest.raises(HardwareLimitError, match=r"needs 2,600 B of read-only.*only 2,500 B"):
        price(led, mcu)


def test_bep_fashion_state_does_not_fit_cortex_m4():
    # a BEP-sized training state (784-256-256 on Fashion-MNIST: 18 bits per weight before
    # word padding, 599,040 B; the room reserves 599,552 B with its rows padded); the
    # STM32F407 has 192 KB = 196,608 B of SRAM
    dev = BitwiseDevice("cortex-m4")
    with pytest.raises(HardwareLimitError, match=r"\[BitwiseDevice.reserve\] cortex-m4: state "
                       r"of scope 'train' needs 599,040 B of writable memory.*196,608 B"):
        dev.reserve((784 * 256 + 256 * 256) * 18 // 8, scope="train")
    dev.reserve(153_216, scope="train")   # the quick Random-Prototypes state fits
    assert dev.ledger.footprints() == {"train": {"writable": 153_216, "read_only": 0,
                                                 "blocks": 1}}


def test_torch_module_priced_on_cortex_m7():
    dev = sim.device("cortex-m7", engine="torch")
    lin = dev.compile(torch.nn.Linear(4, 3))
    x = torch.ones(2, 4)
    out = dev.run(lin, x)
    rep = dev.report()
    assert rep.kind == "bitwise" and out.shape == (2, 3)
    # 2 x 4 x 3 = 24 MACs; the bytes the engine counts at device memory land in SRAM
    assert dev.ledger.total_ops()["mac_fp32"] == 24
    # all 116 B of state fit the SRAM, so every byte is priced there: read the weight
    # 3 x 4 x 4 B = 48, the bias 12 and the input 2 x 4 x 4 B = 32 (92 B); write the
    # output 2 x 3 x 4 B = 24
    assert rep.bytes_moved() == {"local:read": 92, "local:write": 24}
    # energy by hand from the profile: 24 MACs x mac_fp32 pJ + 92 B x SRAM read pJ/B +
    # 24 B x SRAM write pJ/B (the one kernel launch is not priced on this kind; static
    # power 0 W); cortex-m7: 24 x 785.4 + 92 x 196.35 + 24 x 196.35 = 41,626.2 pJ
    prof = load("cortex-m7")
    sram = prof.memory["local"]
    assert prof.static_power_w.value == 0
    hand_pj = (24 * prof.energy_pj["mac_fp32"].value + 92 * sram.read_pj_per_byte.value
               + 24 * sram.write_pj_per_byte.value)
    assert rep.total_j == pytest.approx(hand_pj * 1e-12, rel=1e-12)
    assert hand_pj == pytest.approx(41_626.2)


def test_kernel_library_stack_scales_mac_cycles():
    """A [stacks.NAME] mac_int8_cycles replaces the manual's 0.5 cycles per int8 MAC: at 2.0
    cycles the MACs cost 2.0 / 0.5 = 4x the peak's time and energy (same energy per cycle)."""
    import copy

    from hw_profiles import load
    from hw_profiles.loader import from_dict
    from sim.ledger import Ledger
    from sim.pricing import price as price_any
    doc = copy.deepcopy(dict(load("cortex-m4").raw))
    doc["stacks"] = {"lib": {"mac_int8_cycles": {
        "value": 2.0, "unit": "1", "provenance": "fitted", "source": "arm_m4_trm",
        "derivation": "test value"}}}
    doc["default_stack"] = "lib"
    prof = from_dict(doc, "test")
    ledger = Ledger()
    ledger.add("mac_int8", 1_000_000, scope="infer")
    peak = price_any(ledger, prof, stack="peak")
    lib = price_any(ledger, prof)            # the profile's default_stack
    assert lib.stack == "lib"
    # peak: 1e6 MAC / 3.36e8 MAC/s = 2.976 ms and 1e6 x 392.7 pJ = 0.3927 mJ; lib: 4x both
    assert peak.total_latency_s == pytest.approx(1e6 / 3.36e8, rel=1e-9)
    assert lib.total_latency_s == pytest.approx(4 * peak.total_latency_s, rel=1e-9)
    assert lib.total_j == pytest.approx(4 * 1e6 * 392.7e-12, rel=1e-9)


def test_a_stack_that_sets_none_of_the_ops_is_priced_as_peak():
    """A BEP run's XNOR and popcount words on stm32l4r5 under a kernel library (tflm-2.3.1
    sets int8 MAC cycles): the figures were peak's, the report said tflm-2.3.1 and carried
    that library's held-out error (2 int8 CNN rows) instead of peak's."""
    from sim.ledger import Ledger
    from sim.pricing import price as price_any
    ledger = Ledger()
    ledger.add("xor_word", 10_000, scope="infer")
    ledger.add("popcount_word", 10_000, scope="infer")
    peak = price_any(ledger, "stm32l4r5", stack="peak")
    lib = price_any(ledger, "stm32l4r5", stack="tflm-2.3.1")
    assert lib.total_j == peak.total_j and lib.total_latency_s == peak.total_latency_s
    assert lib.stack == "peak" and lib.validation == peak.validation
    assert any("stack tflm-2.3.1: its kernel library sets the cycles of none" in n
               for n in lib.notes)
    # int8 MACs it does price keep the library's name
    macs = Ledger()
    macs.add("mac_int8", 10_000, scope="infer")
    assert price_any(macs, "stm32l4r5", stack="tflm-2.3.1").stack == "tflm-2.3.1"
