"""Execution models register by kind, as engines do: one model per kind, a second one refused."""
import inspect

import pytest

from hw_profiles.errors import NeuroedgeError
from hw_profiles.profile import KINDS
from sim import pricing
from sim.execution import (
    EXECUTION_MODELS,
    LedgerCounts,
    gpu_cpu,
    mcu,
    neuromorphic,
    register_execution_model,
)
from sim.ledger import Ledger


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


def test_the_ledger_offers_what_execution_models_read():
    # LedgerCounts is the models' typed view of a ledger: Ledger has each method, same signature
    names = [n for n in vars(LedgerCounts) if not n.startswith("_")]
    assert sorted(names) == ["bytes", "footprints", "layers", "ops", "samples", "scopes",
                             "timing", "total_bytes", "total_ops", "uncounted"]
    for name in names:
        assert inspect.signature(getattr(Ledger, name)) == \
            inspect.signature(getattr(LedgerCounts, name)), name
