"""The neuromorphic engine: spiking networks placed on cores and run event by event."""
from sim.neuromorphic.engine import NeuromorphicDevice, SimResult
from sim.neuromorphic.network import Network, NeuronKernel

__all__ = ["NeuromorphicDevice", "Network", "NeuronKernel", "SimResult"]
