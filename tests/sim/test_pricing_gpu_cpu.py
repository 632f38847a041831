"""The GPU/CPU execution model (sim/execution/gpu_cpu.py), by hand on a toy profile."""
import math
import tomllib

import pytest

import hw_profiles
from hw_profiles import loads
from hw_profiles.errors import ProfileError
from sim.energy_report import EnergyReport
from sim.errors import PricingError
from sim.ledger import Ledger
from sim.pricing import price

L2 = '''
[[memory]]
name = "L2"
level = "shared"
capacity_bytes = { value = 1000, unit = "B", provenance = "specified", source = "toy" }
read_pj_per_byte = { value = 1.0, unit = "pJ/B", provenance = "specified", source = "toy" }
write_pj_per_byte = { value = 2.0, unit = "pJ/B", provenance = "specified", source = "toy" }
bandwidth_bytes_per_s = { value = 1e12, unit = "B/s", provenance = "specified", source = "toy" }
'''


@pytest.fixture
def toy_l2(toy_gpu_text):
    # toy-gpu: mac_fp32 2 pJ at 1e12/s; DRAM 10/20 pJ/B at 1e11 B/s; idle 1 W;
    # [execution] launch_s 1 us, half_perf_ops 1000; plus a 1000 B L2 at 1/2 pJ/B, 1e12 B/s
    return loads(toy_gpu_text.replace("[execution]", L2 + "\n[execution]"), origin="toy-l2")


def _ledger(writable: int, read_only: int) -> Ledger:
    led = Ledger()
    led.add("mac_fp32", 1000, scope="train/fc")
    led.add("kernel_launch", 2, scope="train/fc")
    led.add_bytes("offchip", read=4000, write=400, scope="train/fc")
    for _ in range(2):   # two count blocks (epochs) with this footprint
        led.add_footprint(writable, read_only, scope="train")
    return led


def test_cached_block_by_hand(toy_l2):
    rep = price(_ledger(300, 500), toy_l2)
    # footprint 300 + 500 = 800 B <= 1000 B L2: traffic at L2
    # compute: 1000 / 1e12 = 1 ns peak; Hockney mean kernel 1000 / 2 = 500 ops:
    #   x (1 + 1000 x 2 / 1000) = 3 ns;  memory 4400 B / 1e12 = 4.4 ns -> busy 4.4 ns
    # launches 2 x 1 us -> latency 2.0044 us
    assert rep.latency_s["train/fc"] == pytest.approx(2.0044e-6, rel=1e-12)
    ops = rep.by_op()
    assert ops["mac_fp32"] == pytest.approx(2e-9)                      # 1000 x 2 pJ
    assert ops["shared:read"] == pytest.approx(4e-9)                   # 4000 B x 1 pJ
    assert ops["shared:write"] == pytest.approx(0.8e-9)                # 400 B x 2 pJ
    assert ops["kernel_launch"] == pytest.approx(2e-6)                 # 1 W x 2 us
    # compulsory DRAM per block: read 800 B x 2 blocks x 10 pJ = 16 nJ,
    # write back 300 B x 2 x 20 pJ = 12 nJ; time 2200 B / 1e11 = 22 ns on scope "train"
    assert ops["offchip:read"] == pytest.approx(16e-9)
    assert ops["offchip:write"] == pytest.approx(12e-9)
    assert rep.latency_s["train"] == pytest.approx(22e-9)
    # static: 1 W x (4.4 ns busy + 22 ns load)
    assert ops["static"] == pytest.approx(26.4e-9)
    assert rep.total_j == pytest.approx((2 + 4 + 0.8 + 2000 + 16 + 12 + 26.4) * 1e-9)
    assert rep.by_category()["overhead"] == pytest.approx(2e-6)
    assert rep.bound == "estimate" and "Hockney" in rep.execution_model
    assert any("fits the 1,000 B L2" in n for n in rep.notes)


def test_block_too_big_for_cache_goes_to_dram(toy_l2):
    rep = price(_ledger(700, 500), toy_l2)
    # 1200 B > 1000 B: bytes at DRAM, 4000 x 10 + 400 x 20 = 48 nJ; 4400 / 1e11 = 44 ns
    # busy max(3 ns, 44 ns) = 44 ns; no compulsory lines
    assert rep.by_op()["offchip:read"] == pytest.approx(40e-9)
    assert rep.by_op()["offchip:write"] == pytest.approx(8e-9)
    assert "shared:read" not in rep.by_op() and "train" not in rep.latency_s
    assert rep.latency_s["train/fc"] == pytest.approx(44e-9 + 2e-6)
    assert any("exceeds the 1,000 B L2" in n for n in rep.notes)


def test_no_footprint_means_dram_and_says_so(toy_l2):
    led = Ledger()
    led.add_bytes("offchip", read=100, scope="x")
    rep = price(led, toy_l2)
    assert rep.by_op()["offchip:read"] == pytest.approx(1e-9)         # 100 B x 10 pJ
    assert any("without a recorded footprint" in n for n in rep.notes)


def test_report_round_trip_and_version_1_upgrade(toy_l2):
    rep = price(_ledger(300, 500), toy_l2)
    assert EnergyReport.from_dict(rep.to_dict()) == rep
    old = rep.to_dict()
    old["version"] = 1
    for key in ("execution_model", "bound", "excluded", "notes", "validation_error"):
        del old[key]
    back = EnergyReport.from_dict(old)
    assert back.bound == "estimate" and back.validation_error is None
    assert "version-1" in back.execution_model


def test_gpu_pricing_needs_execution_section(toy_gpu_text):
    # the loader accepts it (run files from before [execution] must still load) ...
    doc = tomllib.loads(toy_gpu_text)
    del doc["execution"]["launch_s"]
    prof = hw_profiles.from_dict(doc)
    led = Ledger()
    led.add("mac_fp32", 1)
    # ... and pricing on the gpu model refuses, naming the key; a profile that is not shipped
    # is told to add it (it was told to use `--profile toy-gpu`, which does not exist), a
    # shipped one's old snapshot to use the shipped profile
    with pytest.raises(PricingError, match=r"no \[execution\] launch_s.*Add them to the "
                                           r"profile's \[execution\] table"):
        price(led, prof)
    a100 = tomllib.loads((hw_profiles.loader.DATA_DIR / "a100.toml").read_text())
    del a100["execution"]["launch_s"], a100["sources"]["pytorch_dispatch_lesson"]   # its only use
    with pytest.raises(PricingError, match=r"no \[execution\] launch_s.*report RUN --profile "
                                           r"a100\)"):
        price(led, hw_profiles.from_dict(a100))
    doc["execution"]["launch_s"] = {"value": -1.0, "unit": "s", "provenance": "specified",
                                    "source": "toy"}
    with pytest.raises(ProfileError, match=r"\[execution\] launch_s = -1.0: must be > 0 s"):
        hw_profiles.from_dict(doc)


def test_movidius_ops_draw_the_envelope_less_idle():
    """movidius-ncs splits its 1 W envelope into idle + compute only (its cited DRAM energy at
    peak bandwidth, 160 pJ/B x 7.464 GB/s = 1.19 W, exceeds the envelope: see its header), so
    every op at its peak draws 1 - 0.21 = 0.79 W."""
    p = hw_profiles.load("movidius-ncs")
    for op, e in p.energy_pj.items():
        assert e.value * 1e-12 * p.throughput[op].value == pytest.approx(0.79, rel=1e-6), op
    dram = p.memory["offchip"]
    assert dram.read_pj_per_byte.value * 1e-12 * dram.bandwidth_bytes_per_s.value > 1.0


@pytest.mark.parametrize("name", ["a100", "h100", "jetson-orin", "x86-avx2", "xeon-e5-2630",
                                  "quadro-k4000", "jetson-tx1"])
def test_no_op_class_implies_another_board_power(name):
    """Every op at its peak draws board - idle - DRAM-at-peak-bandwidth watts, no more."""
    p = hw_profiles.load(name)
    dram = p.memory["offchip"]
    compute_w = (p.execution["board_power_w"].value - p.static_power_w.value
                 - dram.read_pj_per_byte.value * 1e-12 * dram.bandwidth_bytes_per_s.value)
    assert compute_w > 0
    for op, e in p.energy_pj.items():
        # TOML values carry 6 significant digits
        assert e.value * 1e-12 * p.throughput[op].value == pytest.approx(compute_w, rel=1e-5), op
    assert p.static_power_w.value > 0   # idle power is charged over the whole run
    assert math.isfinite(p.execution["launch_s"].value)



def test_streamed_data_costs_dram_for_what_was_gathered(toy_l2):
    """Of data a block only gathers from, DRAM supplies the bytes gathered, not all of it
    per block (before: 5,000 x 2 blocks)."""
    led = Ledger()
    led.add("mac_fp32", 1000, scope="train/fc")
    led.add_bytes("offchip", read=4000, write=400, scope="train/fc")
    for _ in range(2):   # reused 300 + 500 B fits the 1000 B L2; 64 B gathered per block
        led.add_footprint(300, 5_500, scope="train", streamed=5_000, streamed_read=64)
    ops = price(led, toy_l2).by_op()
    # (800 B reused x 2 blocks + 128 B gathered) x 10 pJ = 17.28 nJ
    assert ops["offchip:read"] == pytest.approx(17.28e-9)


def test_the_execution_model_named_is_the_stacks(toy_gpu_text):
    prof = loads(toy_gpu_text, origin="toy")
    led = _ledger(300, 500)
    eager, graph = price(led, prof, stack="eager"), price(led, prof, stack="graph")
    assert eager.execution_model.startswith("gpu/cpu eager:")
    assert "kernel launches x launch_s" in eager.execution_model
    # before: graph's report said "gpu/cpu eager ... + kernel launches x launch_s"
    assert graph.execution_model.startswith("gpu/cpu graph:")
    assert "launch_s" not in graph.execution_model
    assert "no per-op host dispatch" in graph.execution_model
    assert not any("dispatching kernels" in e for e in graph.excluded)
    assert any("dispatching kernels" in e for e in eager.excluded)


@pytest.mark.parametrize("name,int_add_pj,int_cmp_pj", [
    # CUDA guide cc 3.x: 160 add / 160 compare results per clock per SMX, 4 SMX at 810.5 MHz;
    # 43.59 W compute / 5.1872e11 /s = 84.03 pJ each
    ("quadro-k4000", 84.0338, 84.0338),
    # cc 5.x: 128 add, 64 compare per clock per SMM, 2 SMM at 1 GHz; 8.264 W / 2.56e11 and / 1.28e11
    ("jetson-tx1", 32.2812, 64.5625),
    # LLVM's Sandy Bridge model: PADDD / PCMPGTD xmm 2 per cycle x 4 lanes x 12 cores x 2.3 GHz
    # = 2.208e11 /s; 152.223 W compute / 2.208e11 = 689.4 pJ each
    ("xeon-e5-2630", 689.413, 689.413),
])
def test_blouw_parts_price_the_integer_ops_torch_runs_emit(name, int_add_pj, int_cmp_pj):
    """argmax, indices and accuracy emit int_add / int_cmp: a torch room on these GPUs was
    refused after training (the profiles priced fp ops only)."""
    led = Ledger()
    led.add("int_add", 1000, scope="infer/argmax")
    led.add("int_cmp", 500, scope="infer/argmax")
    ops = price(led, hw_profiles.load(name)).by_op()
    # 1000 x int_add_pj + 500 x int_cmp_pj, in joules
    assert ops["int_add"] == pytest.approx(1000 * int_add_pj * 1e-12, rel=1e-6)
    assert ops["int_cmp"] == pytest.approx(500 * int_cmp_pj * 1e-12, rel=1e-6)
