"""deploy.formatting: the "what these figures are" rows say whose held-out rows a report's
validation error is over."""
from dataclasses import replace

from deploy.formatting import _nature_rows
from sim.ledger import Ledger
from sim.pricing import price


def _validation_row(report) -> tuple[str, str]:
    return next(r for r in _nature_rows(report) if r[0].startswith("validation error"))


def _led(*ops: str) -> Ledger:
    led = Ledger()
    for op in ops:
        led.add(op, 1000, scope="infer")
    led.add_samples(1, scope="infer")
    return led


def test_validation_error_label_names_the_device_kind_of_its_rows():
    """Before, an fpga-bnn report read "validation error of this device kind: 20%" over the
    STM32 boards' rows (no row measures an FPGA) and an a100 one over edge GPUs and a VPU;
    now the label names the rows' device kinds and the value their profiles, and that none
    ran on the report's profile."""
    label, value = _validation_row(price(_led("xnor_word", "popcount_word"), "fpga-bnn"))
    assert label == "validation error of mcu rows"
    assert value.endswith("% (median |predicted / measured - 1| over held-out published "
                          "measurements: mcu rows on stm32h7a3, stm32l4r5; none on fpga-bnn)")
    label, value = _validation_row(price(_led("mac_fp32"), "a100"))
    assert label == "validation error of edge-gpu, gpu, vpu rows"
    assert value.endswith("edge-gpu, gpu, vpu rows on jetson-orin, jetson-tx1, movidius-ncs, "
                          "quadro-k4000; none on a100)")
    # a profile a row prices: its own device kind's rows, none missing
    label, value = _validation_row(price(_led("mac_fp32"), "jetson-orin"))
    assert label == "validation error of edge-gpu rows"
    assert value.endswith("edge-gpu rows on jetson-orin, jetson-tx1)")
    assert not any("device kind" in k for k, _ in
                   _nature_rows(price(_led("mac_fp32"), "a100")))


def test_validation_error_label_of_a_profile_and_of_none():
    """A neuromorphic report is over its own profile's rows; Loihi has none (not
    validated); a report whose figure carries no rows' names (built elsewhere) says it is
    its profile kind's rows."""
    label, _ = _validation_row(price(_led("synop"), "truenorth"))
    assert label == "validation error of this profile"
    label, value = _validation_row(price(_led("synop"), "loihi"))
    assert (label, value) == ("validation error", "not validated (no held-out measurement of "
                              "this profile can be rebuilt yet; see neuroedge validate)")
    bare = replace(price(_led("mac_fp32"), "a100"), validation=None)
    assert _validation_row(bare)[0] == "validation error of gpu-profile rows"
