"""Pricing arithmetic against hand-computed values on the toy profile (round numbers)."""
import pytest

from sim.energy_report import EnergyReport
from sim.errors import PricingError
from sim.ledger import Ledger
from sim.pricing import price


def _ledger() -> Ledger:
    led = Ledger()
    led.add("mac_fp32", 1000, scope="infer")
    led.add("flop_fp32", 100, scope="infer")
    led.add_bytes("offchip", read=4000, write=400, scope="infer")
    led.add_samples(10, scope="infer")
    led.add("mac_fp32", 10**9, scope="train/fc1")   # compute-bound scope
    led.add_samples(100, scope="train")
    return led


def test_hand_computed_energy(toy_gpu_path):
    rep = price(_ledger(), toy_gpu_path)
    # infer: 1000 x 2 pJ + 100 x 1 pJ = 2.1 nJ compute; 4000 x 10 pJ + 400 x 20 pJ = 48 nJ memory
    # latency: compute 1100 / 1e12 = 1.1 ns, memory 4400 B / 1e11 B/s = 44 ns -> 44 ns
    # static: 1 W x 44 ns = 44 nJ
    assert rep.latency_s["infer"] == pytest.approx(44e-9)
    assert rep.energy_within("infer") == pytest.approx(2.1e-9 + 48e-9 + 44e-9)
    assert rep.per_sample_j()["infer"] == pytest.approx((2.1e-9 + 48e-9 + 44e-9) / 10)
    # train/fc1: 1e9 x 2 pJ = 2 mJ; latency 1e9 / 1e12 = 1 ms; static 1 W x 1 ms = 1 mJ
    assert rep.latency_s["train/fc1"] == pytest.approx(1e-3)
    assert rep.energy_within("train") == pytest.approx(3e-3)
    assert rep.per_sample_j()["train"] == pytest.approx(3e-5)
    cats = rep.by_category()
    assert cats["memory"] == pytest.approx(48e-9)
    assert cats["static"] == pytest.approx(44e-9 + 1e-3)
    assert cats["compute"] == pytest.approx(2.1e-9 + 2e-3)
    assert rep.total_j == pytest.approx(sum(cats.values()))
    assert rep.total_latency_s == pytest.approx(1e-3 + 44e-9)
    assert rep.bytes_moved() == {"offchip:read": 4000, "offchip:write": 400}
    assert rep.by_scope(depth=1)["train"] == pytest.approx(3e-3)


def test_report_cites_every_entry_used(toy_gpu_path):
    rep = price(_ledger(), toy_gpu_path)
    assert set(rep.entries) >= {"energy_pj.mac_fp32", "energy_pj.flop_fp32",
                                "memory.offchip.read_pj_per_byte", "static.power_w"}
    assert "derived" in rep.entries["energy_pj.mac_fp32"]
    assert "https://example.org/toy-gpu" in rep.entries["energy_pj.mac_fp32"]


def test_missing_op_names_op_and_profile(toy_gpu_path):
    led = Ledger()
    led.add("synop", 5)
    # a user's file is named by its label (name and path), not its bare name
    with pytest.raises(PricingError, match=r"profile 'toy-gpu \(file: .*toy-gpu\.toml\)' has "
                                           r"no energy for op\(s\) synop"):
        price(led, toy_gpu_path)


def test_missing_memory_level(toy_gpu_path):
    led = Ledger()
    led.add_bytes("local", read=8)
    with pytest.raises(PricingError, match="no memory level local"):
        price(led, toy_gpu_path)


def test_report_dict_round_trip(toy_gpu_path):
    rep = price(_ledger(), toy_gpu_path)
    back = EnergyReport.from_dict(rep.to_dict())
    assert back == rep


def test_same_ledger_two_profiles_scale_with_numbers(tmp_path, toy_gpu_text, toy_gpu_path):
    text = toy_gpu_text.replace("mac_fp32 = { value = 2.0", "mac_fp32 = { value = 6.0")
    text = text.replace('name = "toy-gpu"', 'name = "toy-gpu-3x"')
    path = tmp_path / "toy3.toml"
    path.write_text(text)
    led = Ledger()
    led.add("mac_fp32", 10**6, scope="x")
    a, b = price(led, path), price(led, toy_gpu_path)
    # compute energy triples with the per-MAC energy; static is unchanged (same latency)
    assert a.by_category()["compute"] == pytest.approx(3 * b.by_category()["compute"])
    assert a.static_j == pytest.approx(b.static_j)


def test_bitwise_word_ops_price_only_on_a_profile_of_their_width(tmp_path):
    """A 32-bit run's word ops (a 192-bit row is 6 words; 3 on a 64-bit device) were priced
    at fpga-bnn's 64-bit word energy: a BEP inference came out 1.89x a real fpga-bnn run's."""
    import numpy as np

    from sim.bitwise import BitwiseDevice, pack_signs
    dev = BitwiseDevice("cortex-m4")
    rng = np.random.default_rng(0)
    a = pack_signs(rng.choice([-1, 1], size=(4, 192)).astype(np.int8), 32)
    dev.sign_matmul(a, a, 192)
    led = dev.ledger
    assert led.word_bits == 32
    assert led.total_ops()["xor_word"] == 4 * 4 * 6        # 16 row pairs x 6 words
    price(led, "cortex-m4")                                # its own width: priced
    price(led, "stm32l4r5")                                # another 32-bit part too
    with pytest.raises(PricingError, match="counted in 32-bit words, and 'fpga-bnn' "
                                           "computes 64-bit words"):
        price(led, "fpga-bnn")
    # the width survives the run file's forms, and a ledger holds one width
    again = Ledger.from_json(led.to_json())
    assert again.word_bits == 32 and again == led
    import h5py
    with h5py.File(tmp_path / "l.h5", "w") as f:
        led.to_hdf5(f.create_group("ledger"))
    with h5py.File(tmp_path / "l.h5") as f:
        assert Ledger.from_hdf5(f["ledger"]).word_bits == 32
    from sim.errors import LedgerError
    with pytest.raises(LedgerError, match="counted in 64-bit words, not 32-bit"):
        BitwiseDevice("fpga-bnn").ledger.merge(led)
    assert Ledger().is_empty() and BitwiseDevice("cortex-m4").ledger.is_empty()


def test_a_ledger_that_counted_nothing_is_priced_as_a_lower_bound(toy_gpu_path):
    # a run with counting turned off (fs_kan --set count=false) reported "0 J, estimate"
    rep = price(Ledger(), toy_gpu_path)
    assert rep.total_j == 0 and rep.bound == "lower bound"
    assert any("nothing was counted" in n for n in rep.notes)
    led = Ledger()
    led.add("mac_fp32", 10, scope="infer")
    assert price(led, toy_gpu_path).bound == "estimate"


def test_another_chips_comparison_row_says_lower_bound():
    from deploy.terminal import _comparison_rows
    from sim.neuromorphic import Network, NeuromorphicDevice
    net = Network(dt=1e-3)
    net.population("A", 2, "lif", tau_mem=0.02, v_threshold=0.5)
    net.spikes("s", 1, steps=[0, 3], index=[0, 0])
    net.connect("s", "A", weight=[[1.0], [1.0]])
    dev = NeuromorphicDevice("loihi")
    dev.compile(net, quantize=False)
    dev.run(10)
    # on truenorth the steps are not re-placed: a lower bound, 10 steps x its 1 ms tick
    own, other = dev.ledger.price("loihi"), dev.ledger.price("truenorth")
    assert other.total_latency_s == pytest.approx(10 * 1e-3)
    rows = _comparison_rows([own, other])
    assert rows[0][-1] == "estimate" and rows[1][-1] == "lower bound"


def test_spike_payloads_price_only_on_a_chip_that_carries_them(tmp_path):
    """A run whose spikes carried -3..5 (a graded code) priced on a chip of binary spikes
    (loihi, no spike_payload_bits) was priced as if that chip ran it."""
    led = Ledger()
    led.add("synop", 100, scope="run")
    led.add("spike", 10, scope="run")
    led.record_payloads(1, 5)
    led.record_payloads(-3, 2)              # widens: -3..5
    assert led.payloads == (-3, 5)
    with pytest.raises(PricingError, match=r"carried payloads -3\.\.5, and 'loihi' carries "
                                           r"binary spikes only"):
        price(led, "loihi")
    price(led, "loihi2")                    # 32-bit signed payloads: carried
    binary = Ledger()
    binary.add("synop", 100, scope="run")
    binary.record_payloads(1, 1)
    price(binary, "loihi")                  # binary spikes on a binary chip
    # the range survives the run file's forms and merges
    again = Ledger.from_json(led.to_json())
    assert again.payloads == (-3, 5) and again == led
    import h5py
    with h5py.File(tmp_path / "l.h5", "w") as f:
        led.to_hdf5(f.create_group("ledger"))
    with h5py.File(tmp_path / "l.h5") as f:
        assert Ledger.from_hdf5(f["ledger"]).payloads == (-3, 5)
    assert (binary + led).payloads == (-3, 5)
    from sim.errors import LedgerError
    with pytest.raises(LedgerError, match="lowest payload 2 > highest 1"):
        Ledger().record_payloads(2, 1)
    with pytest.raises(LedgerError, match="lowest payload 1.5 is not an integer"):
        Ledger().record_payloads(1.5, 2)


def test_missing_ops_name_the_shipped_profiles_that_price_them():
    # the Xeon E5-2630 profile (Blouw's TF1 host) prices fp32 and 32-bit integer ops, no
    # packed-word logic: a run's word ops were refused with "a profile of a kind that executes
    # these ops", though the kind (cpu) is right; the shipped cpu profile that prices both is
    # x86-avx2
    led = Ledger()
    led.add("mac_fp32", 5)
    led.add("xor_word", 3)
    with pytest.raises(PricingError, match=r"no energy for op\(s\) xor_word .*Price the run on "
                                           r"one that does \(x86-avx2\), or add them"):
        price(led, "xeon-e5-2630")


def test_validation_error_says_whose_rows_it_is():
    """A report's held-out error is over rows of a named device kind: an fpga-bnn report
    (no row measures an FPGA) carries the STM32 boards' mcu rows and says none ran on
    fpga-bnn; a jetson-orin report its own device kind's (edge-gpu: Orin and TX1) rows, not
    all gpu-profile rows (which add the K4000 and the Movidius VPU)."""
    import json

    from hw_profiles.validation import SUMMARY_PATH
    from sim.pricing import describe_error
    doc = json.loads(SUMMARY_PATH.read_text())
    led = Ledger()
    led.add("xnor_word", 1000, scope="infer")
    led.add("popcount_word", 1000, scope="infer")
    led.add_samples(1, scope="infer")
    fpga = price(led, "fpga-bnn")
    mcu = doc["device_kinds"]["mcu"]
    assert fpga.validation["error_rows"] == {
        "device_kinds": ["mcu"], "profiles": ["stm32h7a3", "stm32l4r5"], "rows": mcu["rows"],
        "median_rel_error": mcu["median_rel_error"], "min_ratio": mcu["min_ratio"],
        "max_ratio": mcu["max_ratio"], "measured": False}
    assert fpga.validation_error == mcu["median_rel_error"]
    assert describe_error(fpga.validation).startswith(
        f"held-out error for mcu rows/all stacks ({mcu['rows']} rows on stm32h7a3, stm32l4r5; "
        "none on fpga-bnn): energy x")
    assert "these are the kind's rows on other profiles and stacks" in \
        describe_error(fpga.validation)
    gpu = Ledger()
    gpu.add("mac_fp32", 1000, scope="infer")
    orin = price(gpu, "jetson-orin")
    edge = doc["device_kinds"]["edge-gpu"]
    # the Orin x1.12 and the TX1 x0.0211 (47x too cheap): median |r - 1| of 0.122 and 0.979
    # = 0.55; all four gpu-profile rows give 0.97, which is no edge GPU's figure
    assert edge["profiles"] == ["jetson-orin", "jetson-tx1"] and edge["rows"] == 2
    assert orin.validation_error == edge["median_rel_error"] == pytest.approx(0.5505, abs=1e-3)
    assert doc["kinds"]["gpu"]["median_rel_error"] == pytest.approx(0.970, abs=1e-3)
    assert orin.validation["error_rows"]["measured"] is True
    assert describe_error(orin.validation).startswith(
        "held-out error for edge-gpu rows/all stacks (2 rows on jetson-orin, jetson-tx1): ")
