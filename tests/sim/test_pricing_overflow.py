"""Pricing never returns a non-finite figure: an overflow is a PricingError naming op, scope
and the profile entry that made it overflow, by its section and key (issue 32, class 5).

Loaded profiles are bounded (tests/hw_profiles/test_user_profiles.py), so these profiles are
built in memory past the bounds, as a sweep or a test could.
"""
import dataclasses
from types import MappingProxyType

import pytest

from hw_profiles import load, loads
from sim.errors import PricingError
from sim.ledger import Ledger
from sim.pricing import price


def _with_energy(profile, op, pj):
    q = dataclasses.replace(profile.energy_pj[op], value=pj)
    return dataclasses.replace(profile, energy_pj=MappingProxyType({**profile.energy_pj, op: q}))


def _with_rate(profile, op, per_s):
    q = dataclasses.replace(profile.throughput[op], value=per_s)
    return dataclasses.replace(profile, throughput=MappingProxyType({**profile.throughput,
                                                                      op: q}))


def test_one_charge_overflowing_names_op_scope_and_entry(toy_gpu_path):
    prof = _with_energy(load(toy_gpu_path), "mac_fp32", 1e308)
    led = Ledger()
    led.add("mac_fp32", 10**13, scope="train/fc1")
    # 1e13 x 1e308 pJ x 1e-12 J/pJ = 1e309 J > float max 1.8e308 -> inf
    with pytest.raises(PricingError, match=r"^pricing on profile 'toy-gpu \(file: .*toy-gpu.toml\)"
                                           r"' overflows: 1e\+13 x mac_fp32 at \[energy_pj\] "
                                           r"mac_fp32 = 1e\+308 pJ in scope 'train/fc1' is inf "
                                           r"J; figures must be finite \(lower that entry or the "
                                           r"count\)$"):
        price(led, prof)


def test_total_overflowing_names_the_scope_where_it_passed_float_max(toy_gpu_path):
    toy = load(toy_gpu_path)
    prof = dataclasses.replace(toy, static_power_w=dataclasses.replace(toy.static_power_w,
                                                                       value=1e300))
    led = Ledger()
    # each scope: 1.5e20 MAC / 1e12 per s = 1.5e8 s; static 1e300 W x 1.5e8 s = 1.5e308 J
    # (finite, float max is 1.8e308); the two scopes together pass it
    led.add("mac_fp32", 15 * 10**19, scope="a")
    led.add("mac_fp32", 15 * 10**19, scope="b")
    with pytest.raises(PricingError, match=r"overflows: the total energy passes 1.79769e\+308 J "
                                           r"when adding static in scope 'b' \(1.5e\+308 J at "
                                           r"\[static\] power_w = 1e\+300 W\); figures must be "
                                           r"finite"):
        price(led, prof)


def test_latency_overflowing_is_refused(toy_gpu_path):
    prof = _with_rate(load(toy_gpu_path), "int_add", 1e-300)
    led = Ledger()
    led.add("int_add", 10**9, scope="infer")
    # 1e9 / 1e-300 per s = 1e309 s -> inf; int_add costs 0.5 pJ so the energy is finite:
    # the throughput is named, not the price (nor the static power the time multiplies)
    with pytest.raises(PricingError, match=r"1e\+09 x int_add in scope 'infer' at "
                                           r"\[throughput\] int_add = 1e-300 1/s takes inf s"):
        price(led, prof)


def test_static_energy_overflowing_names_the_static_power(toy_gpu_path):
    toy = load(toy_gpu_path)
    prof = dataclasses.replace(toy, static_power_w=dataclasses.replace(toy.static_power_w,
                                                                       value=1e300))
    led = Ledger()
    # 1e22 MAC / 1e12 per s = 1e10 s (finite); 1e300 W x 1e10 s = 1e310 J -> inf
    led.add("mac_fp32", 10**22, scope="infer")
    with pytest.raises(PricingError, match=r"overflows: static power \[static\] power_w = "
                                           r"1e\+300 W over 1e\+10 s in scope 'infer' is inf J"):
        price(led, prof)


def test_a_memory_price_is_named_by_its_level(toy_gpu_path):
    toy = load(toy_gpu_path)
    off = toy.memory["offchip"]
    mem = dataclasses.replace(off, read_pj_per_byte=dataclasses.replace(off.read_pj_per_byte,
                                                                        value=1e300))
    prof = dataclasses.replace(toy, memory=MappingProxyType({**toy.memory, "offchip": mem}))
    led = Ledger()
    led.add_bytes("offchip", read=10**30, scope="infer")
    # 1e30 B x 1e300 pJ/B x 1e-12 J/pJ = 1e318 J > float max 1.8e308 -> inf
    with pytest.raises(PricingError, match=r"1e\+30 x offchip:read at \[\[memory\]\] level "
                                           r"'offchip' read_pj_per_byte = 1e\+300 pJ/B"):
        price(led, prof)


def test_count_beyond_a_float_is_refused(toy_gpu_path):
    led = Ledger()
    led.add_bytes("offchip", read=10**400, scope="infer")
    with pytest.raises(PricingError, match=r"^pricing on profile 'toy-gpu \(file: .*\)': count of "
                                           r"offchip:read in scope 'infer' has 401 digits, "
                                           r"beyond a float"):
        price(led, toy_gpu_path)


def test_largest_loadable_numbers_price_finitely(toy_gpu_text):
    # the bounds keep every figure finite: 1e9 pJ (the bound) x int64 max counts
    prof = loads(toy_gpu_text.replace('mac_fp32 = { value = 2.0,', 'mac_fp32 = { value = 1e9,'))
    led = Ledger()
    led.add("mac_fp32", 2**63 - 1, scope="train")
    rep = price(led, prof)
    # 9.223372036854776e18 x 1e9 pJ x 1e-12 = 9.223372036854776e15 J, plus static 1 W x
    # 9.22e18 / 1e12 per s = 9.22e6 s -> 9.22e6 J
    assert rep.total_j == pytest.approx(9.223372036854776e15 + 9.223372036854776e6, rel=1e-12)


def test_report_carries_the_label(toy_gpu_path):
    led = Ledger()
    led.add("mac_fp32", 1, scope="infer")
    assert price(led, "a100").profile == "a100"
    assert price(led, toy_gpu_path).profile == f"toy-gpu (file: {toy_gpu_path.resolve()})"
