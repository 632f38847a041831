"""The standard GPU backend (torch; CUDA when present, CPU otherwise)."""
from sim.torch_engine.engine import TorchDevice

__all__ = ["TorchDevice"]
