"""Execution models register by kind, as engines do: one model per kind, a second one refused."""
import pytest

from hw_profiles.errors import NeuroedgeError
from hw_profiles.profile import KINDS
from sim import pricing
from sim.execution import EXECUTION_MODELS, gpu_cpu, mcu, neuromorphic, register_execution_model


def test_every_kind_has_its_model():
    assert pricing.EXECUTION_MODELS is EXECUTION_MODELS
    assert EXECUTION_MODELS == {"gpu": gpu_cpu.price, "cpu": gpu_cpu.price,
                                "bitwise": mcu.price, "neuromorphic": neuromorphic.price}
    assert set(EXECUTION_MODELS) == set(KINDS)


def test_registering_a_kind_twice_is_refused():
    with pytest.raises(NeuroedgeError, match=r"kind 'gpu' already has model "
                                             r"sim.execution.gpu_cpu.price; refusing "):
        register_execution_model("gpu", mcu.price)
    assert EXECUTION_MODELS["gpu"] is gpu_cpu.price


def test_registering_an_unknown_kind_is_refused():
    with pytest.raises(NeuroedgeError, match=r"unknown kind 'tpu'"):
        register_execution_model("tpu", gpu_cpu.price)
    assert "tpu" not in EXECUTION_MODELS
