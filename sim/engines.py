"""Which engine runs a profile: ``device(profile)`` (``sim.device``) picks it by the profile's kind.

The engines register themselves in :data:`sim.device.ENGINES` when their package is imported;
this module sits above them and imports them on first use (torch and the numba kernels are
heavy, so ``import sim`` stays light).
"""
from __future__ import annotations

from hw_profiles import load
from hw_profiles.errors import NeuroedgeError, ProfileError
from hw_profiles.profile import HardwareProfile
from sim.device import ENGINES, Device


def device(profile: str | HardwareProfile, engine: str | None = None, **kwargs) -> Device:
    """Return the engine for the profile's kind, e.g. ``device("a100")`` -> TorchDevice.

    ``engine="torch"`` asks for the TorchDevice on any gpu, cpu or bitwise profile: a torch
    module run on a microcontroller profile (``device("cortex-m7", engine="torch")``) is
    counted by torch and priced with the microcontroller's memories (sim/execution/mcu.py).
    """
    prof = load(profile)
    _import_engines()
    if engine is not None:
        from sim.torch_engine import TorchDevice
        if engine != "torch":
            raise NeuroedgeError(f"device: engine {engine!r} is not known; give engine='torch' "
                                 "or leave it out to use the engine of the profile's kind")
        return TorchDevice(prof, **kwargs)   # refuses kinds it does not model
    cls = ENGINES.get(prof.kind)
    if cls is None:
        raise ProfileError(
            f"profile {prof.label!r} is of kind {prof.kind!r}, which no engine serves; "
            f"engines available now serve kinds {', '.join(sorted(ENGINES))}")
    return cls(prof, **kwargs)


def _import_engines() -> None:
    """Import the engine packages so they register themselves (on first use: torch and the
    numba kernels are heavy)."""
    import sim.bitwise  # noqa: F401
    import sim.neuromorphic  # noqa: F401
    import sim.torch_engine  # noqa: F401
