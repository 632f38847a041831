"""Simulation layer: the Ledger of counts, pricing on profiles, and the device engines.

``sim.device("a100")`` returns the engine for a profile's kind; engines import lazily so
that ``import sim`` stays light (torch is loaded only when a TorchDevice is asked for).
"""
from sim.device import ENGINES, Device, register_engine
from sim.energy_report import Charge, EnergyReport
from sim.engines import device
from sim.ledger import Ledger
from sim.pricing import price, price_many

__all__ = ["Ledger", "EnergyReport", "Charge", "price", "price_many", "Device", "device",
           "register_engine", "ENGINES"]


def __getattr__(name):
    if name == "TorchDevice":
        from sim.torch_engine import TorchDevice
        return TorchDevice
    raise AttributeError(f"module 'sim' has no attribute {name!r}")
