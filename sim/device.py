"""The Device contract shared by every engine, and ``device(profile)`` that picks the engine.

Interface apart from behaviour (as Lava's Process/ProcessModel and Brian2's Device): this
module states what every engine offers -- ``profile``, ``ledger``, ``compile(model)``,
``run(...)``, ``count(scope, samples)``, ``report()`` -- and each engine module registers its
class for the profile kinds it serves. The registry is a plain dict filled by the
implementing modules; registering a kind twice is an error.

Counting blocks follow one rule in every engine: ``with dev.count("train"):`` records what
runs inside under ``train`` (below whatever ``Ledger.scope`` is open); blocks nest, an inner
``count("a")`` recording under ``train/a``; ``samples`` (if > 0) are added to the block's own
full scope when the block ends without an error.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hw_profiles import load
from hw_profiles.errors import NeuroedgeError, ProfileError
from hw_profiles.profile import KINDS, HardwareProfile
from sim.errors import HardwareLimitError, ModelError
from sim.ledger import Ledger

ENGINES: dict[str, type[Device]] = {}
"""profile kind -> engine class"""

def register_engine(kind: str, cls: type[Device]) -> None:
    if kind not in KINDS:
        raise NeuroedgeError(f"register_engine: unknown kind {kind!r}; kinds are {KINDS}")
    if kind not in cls.kinds:
        raise NeuroedgeError(f"register_engine: {cls.__name__}.kinds = {cls.kinds} does not "
                             f"include {kind!r}; the engine would refuse its own profiles")
    if kind in ENGINES:
        raise NeuroedgeError(f"register_engine: kind {kind!r} already has engine "
                             f"{ENGINES[kind].__name__}; refusing {cls.__name__}")
    ENGINES[kind] = cls


class Device(ABC):
    """A simulated hardware target: a profile, a ledger of what ran, and an engine.

    Parameters
    ----------
    profile : str, path or HardwareProfile
        Shipped profile name (``"a100"``), a TOML path, or a loaded profile.

    Raises
    ------
    ModelError
        The profile's kind is not one of the engine's ``kinds``: it has no number for what
        the engine counts (a torch engine on a neuromorphic profile has no off-chip memory).
    """

    kinds: tuple[str, ...] = ()
    """Profile kinds the engine models; every engine class sets it."""

    def __init__(self, profile: str | HardwareProfile):
        prof = load(profile)
        if prof.kind not in self.kinds:
            raise ModelError(
                f"[{type(self).__name__}] profile {prof.label!r} is of kind {prof.kind!r}; "
                f"{type(self).__name__} models {' and '.join(self.kinds) or 'no'} profiles "
                f"(sim.device(profile) picks the engine for a profile's kind)")
        self.profile: HardwareProfile = prof
        self.ledger = Ledger()

    @abstractmethod
    def compile(self, model: Any) -> Any:
        """Place ``model`` on the hardware, checking every limit; return the placed model."""

    @abstractmethod
    def run(self, *args, **kwargs) -> Any:
        """Execute on the simulated hardware, recording counts into ``self.ledger``."""

    @contextmanager
    def count(self, scope: str, samples: int = 0) -> Iterator[None]:
        """Record everything run inside the block under ``scope``; blocks nest.

        The block's full scope is ``scope`` below the open ``Ledger.scope`` blocks (an inner
        ``count("a")`` inside ``count("train")`` records under ``train/a``). ``samples`` (if
        > 0) are added to that full scope when the block ends, for per-sample energy. Engines
        that record through ``self.ledger`` inherit this as it is; an engine that counts by
        other means (TorchDevice's dispatch mode) overrides it with the same rule.
        """
        with self.ledger.scope(scope):
            yield
            if samples:
                self.ledger.add_samples(samples)

    def report(self):
        """Price everything recorded so far on this device's profile (an EnergyReport)."""
        return self.ledger.price(self.profile)

    def reset(self) -> None:
        """Start a fresh ledger (keeps the compiled model)."""
        self.ledger = Ledger()

    def _limit_error(self, what: str, value, limit_key: str, limit, hint: str):
        """Raise the standard 'does not fit' error, prefixed with the engine name."""
        raise HardwareLimitError(f"[{type(self).__name__}.compile] {what} = {value} exceeds "
                                 f"{self.profile.name} {limit_key} = {limit}; {hint}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(profile={self.profile.name!r})"


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
    """Import engine modules so they register themselves (lazily: torch is heavy)."""
    import sim.bitwise  # noqa: F401
    import sim.neuromorphic  # noqa: F401
    import sim.torch_engine  # noqa: F401
