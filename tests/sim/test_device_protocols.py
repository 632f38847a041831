"""Each engine's compile/run has exactly the typed signature its protocol in sim/device.py states.

``runtime_checkable`` protocols check only that the names exist, so the signatures are compared
with inspect (names, kinds, defaults, annotations) and the annotations resolved to the same
types on both sides.
"""
from __future__ import annotations

import inspect
import typing
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch

from sim.bitwise import BitwiseDevice
from sim.bitwise.network import Layer, NetworkOutput
from sim.device import ENGINES, BitwiseEngine, Device, Engine, NeuromorphicEngine, TorchEngine
from sim.engines import device
from sim.neuromorphic import NeuromorphicDevice
from sim.neuromorphic.compiler import Compiled
from sim.neuromorphic.engine import SimResult
from sim.neuromorphic.network import Network
from sim.torch_engine import TorchDevice

PROTOCOLS = {NeuromorphicDevice: NeuromorphicEngine, BitwiseDevice: BitwiseEngine,
             TorchDevice: TorchEngine}
# the names sim/device.py imports for type checkers only (its `if TYPE_CHECKING:` block)
TYPE_NAMES = {"np": np, "torch": torch, "Layer": Layer, "NetworkOutput": NetworkOutput,
              "Compiled": Compiled, "SimResult": SimResult, "Network": Network,
              "Sequence": Sequence}


@pytest.mark.parametrize("cls", list(PROTOCOLS), ids=lambda c: c.__name__)
@pytest.mark.parametrize("method", ["compile", "run"])
def test_engine_method_has_its_protocols_signature(cls, method):
    proto = PROTOCOLS[cls]
    got, want = getattr(cls, method), getattr(proto, method)
    assert inspect.signature(got) == inspect.signature(want), (
        f"{cls.__name__}.{method}{inspect.signature(got)} != "
        f"{proto.__name__}.{method}{inspect.signature(want)}")
    # the annotations name the same types, not only the same strings
    assert typing.get_type_hints(got) == typing.get_type_hints(want, localns=TYPE_NAMES)


@pytest.mark.parametrize("cls", list(PROTOCOLS), ids=lambda c: c.__name__)
def test_engine_is_an_instance_of_its_protocol(cls):
    dev = cls({NeuromorphicDevice: "loihi2", BitwiseDevice: "cortex-m4",
               TorchDevice: "a100"}[cls])
    assert isinstance(dev, PROTOCOLS[cls]) and isinstance(dev, Engine)
    assert isinstance(dev, Device)


def test_every_registered_engine_has_a_protocol():
    device("a100")      # imports the engines, which register themselves
    assert set(ENGINES.values()) == set(PROTOCOLS)


def test_the_check_catches_a_drifted_signature():
    # the same names and annotations, another default: not the protocol's signature
    class Drifted(TorchDevice):
        def run(self, module: torch.nn.Module, x: torch.Tensor, scope: str = "train") -> Any:
            return super().run(module, x, scope)

    assert str(inspect.signature(Drifted.run)).replace("train", "infer") == \
        str(inspect.signature(TorchEngine.run))
    assert inspect.signature(Drifted.run) != inspect.signature(TorchEngine.run)
