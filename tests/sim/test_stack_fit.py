"""The fitted numbers of the microcontroller profiles are exactly what bench/calibrate.py
computes from the validation table's calibration rows, and nothing is fitted on a held-out
row (issue 29 items 2-3)."""
import tomllib

import pytest

from hw_profiles.errors import NeuroedgeError
from hw_profiles.loader import load
from hw_profiles.validation import TABLE_PATH
from sim.stack_fit import ENERGY_ROWS, fit_all, round4, shipped_value


@pytest.fixture(scope="module")
def fits():
    return fit_all()


def test_shipped_profiles_hold_the_fitted_values(fits):
    # one energy per cycle per part; per calibrated stack (9 + 5) a dense_cycles and a
    # mac_int8_cycles
    assert len(fits) == 2 + 2 * 14
    for f in fits:
        assert shipped_value(f) == f.value, (f.profile, f.key, f.derivation)
        if f.key.startswith("stacks."):
            stack, key = f.key.removeprefix("stacks.").rsplit(".", 1)
            q = load(f.profile).stacks[stack][key]
            assert q.provenance == "fitted" and f.row in q.derivation
            # each entry is fitted on the row of its workload: dense on the autoencoder
            assert ("-ad-" in f.row) == (key == "dense_cycles"), (f.row, key)


def test_dense_is_fitted_first_and_prices_the_keyword_spotters_dense_layer(fits):
    by = {(f.profile, f.key): f for f in fits}
    dense = by[("stm32l4r5", "stacks.tflm-2.3.1.dense_cycles")]
    conv = by[("stm32l4r5", "stacks.tflm-2.3.1.mac_int8_cycles")]
    # the keyword spotter's 2,656,768 int8 MACs: 768 in its dense layer (64 x 12), priced
    # at the dense_cycles fitted before; the rest (convolutions) get the fit
    assert "2,656,000 MACs" in conv.derivation
    assert f"dense_cycles = {dense.value:g}" in conv.derivation
    # TFLM 2.3.1's reference kernels: a dense MAC costs about half a convolution's
    # (4.272 against 7.955 cycles, MLPerf Tiny v0.5 AD and KWS rows)
    assert dense.value < 0.6 * conv.value


def test_every_op_energy_is_its_cycles_times_the_fitted_energy_per_cycle(fits):
    for f in fits:
        if f.key != "energy_per_cycle_pj":
            continue
        prof = load(f.profile)
        clock = prof.limit("clock_hz")
        for op, q in prof.energy_pj.items():
            cycles = clock / prof.throughput[op].value
            # e.g. stm32l4r5 mac_int8: 0.5 cycle x 374.3 pJ = 187.15 pJ
            assert q.value == pytest.approx(cycles * f.value, rel=1e-6), (f.profile, op)
            assert q.provenance == "fitted" and f.row in q.derivation


def test_energy_per_cycle_arithmetic(fits):
    by = {f.profile: f for f in fits if f.key == "energy_per_cycle_pj"}
    # MLPerf Tiny v1.0 L4R5 KWS, X-CUBE-AI 7.3: 3371.738 uJ in 1 / 13.323 s at 120 MHz:
    # 3.371738e-3 x 13.323 / 120e6 = 374.35 pJ -> 374.3 (4 digits)
    assert by["stm32l4r5"].value == 374.3
    assert by["stm32l4r5"].value == round4(3.371738e-3 / 0.0750582 / 120e6 * 1e12)
    # H7A3: 2721.781 uJ in 1 / 59.667 s at 280 MHz = 580.0 pJ
    assert by["stm32h7a3"].value == round4(2.721781e-3 / 0.0167597 / 280e6 * 1e12)
    assert set(by) == set(ENERGY_ROWS)


def test_a_library_is_slower_than_the_manual_peak(fits):
    cycles = {(f.profile, f.key): f.value for f in fits}
    # every fitted library spends more than the SMLAD peak of 0.5 cycle per MAC, and the
    # reference kernels more than the vendor library on the same board
    assert all(v > 0.5 for k, v in cycles.items() if k[1].startswith("stacks."))
    assert cycles[("stm32l4r5", "stacks.tflm-2.3.1.mac_int8_cycles")] > \
        cycles[("stm32l4r5", "stacks.xcube-ai-9.0.mac_int8_cycles")] * 2


def test_fitting_on_a_held_out_row_is_refused(tmp_path):
    doc = TABLE_PATH.read_text()
    row = 'id = "l4r5-kws-xcube-ai-7.3-v1.0"'
    assert row in doc
    # turn the energy calibration row into a held-out one: the fit refuses to read it
    head, tail = doc.split(row, 1)
    tail = tail.replace('group = "calibration"', 'group = "held-out"', 1)
    bad = tmp_path / "t.toml"
    bad.write_text(head + row + tail)
    assert tomllib.loads(bad.read_text())
    with pytest.raises(NeuroedgeError, match="only rows of the calibration group"):
        fit_all(bad)


def test_calibrate_script_reports_no_mismatch(capsys):
    from bench.calibrate import main
    assert main(["--check"]) == 0
    assert '"mismatches": 0' in capsys.readouterr().out
