"""The Device contract shared by every engine, each engine's typed protocol, and the registry.

Interface apart from behaviour (as Lava's Process/ProcessModel and Brian2's Device): this
module states what every engine offers -- ``profile``, ``ledger``, ``compile(model)``,
``run(...)``, ``count(scope, samples)``, ``report()`` -- and each engine module registers its
class for the profile kinds it serves. The registry is a plain dict filled by the
implementing modules; registering a kind twice is an error. :func:`sim.engines.device`
(``sim.device(profile)``) imports the engines and picks one by the profile's kind.

``compile`` and ``run`` take different arguments in each engine (a spiking ``Network`` and a
number of steps; packed layers and packed inputs; a torch module and a tensor), so the
abstract class leaves them open and one :class:`typing.Protocol` per engine states its exact
typed signature: :class:`NeuromorphicEngine`, :class:`BitwiseEngine`, :class:`TorchEngine`.
Code written for one engine annotates its device with that engine's protocol; the tests
check that each engine's methods have exactly its protocol's signature.

Counting blocks follow one rule in every engine: ``with dev.count("train"):`` records what
runs inside under ``train`` (below whatever ``Ledger.scope`` is open); blocks nest, an inner
``count("a")`` recording under ``train/a``; ``samples`` (if > 0) are added to the block's own
full scope when the block ends without an error.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hw_profiles import load
from hw_profiles.errors import NeuroedgeError
from hw_profiles.profile import KINDS, HardwareProfile
from sim.energy_report import EnergyReport
from sim.errors import HardwareLimitError, ModelError
from sim.ledger import Ledger

if TYPE_CHECKING:
    # Types named by the engine protocols, for type checkers only: at run time they would
    # import every engine (numba kernels, torch) into the module the engines import.
    import numpy as np
    import torch

    from sim.bitwise.network import Layer, NetworkOutput
    from sim.neuromorphic.compiler import Compiled
    from sim.neuromorphic.engine import SimResult
    from sim.neuromorphic.network import Network

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
        """Place ``model`` on the hardware, checking every limit; return the placed model.

        Each engine's typed signature: :class:`NeuromorphicEngine`, :class:`BitwiseEngine`,
        :class:`TorchEngine`."""

    @abstractmethod
    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Execute on the simulated hardware, recording counts into ``self.ledger``.

        Each engine's typed signature: :class:`NeuromorphicEngine`, :class:`BitwiseEngine`,
        :class:`TorchEngine`."""

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

    def report(self) -> EnergyReport:
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


# -- each engine's typed contract --------------------------------------------------------------
@runtime_checkable
class Engine(Protocol):
    """What every engine offers beside ``compile`` and ``run`` (the :class:`Device` contract)."""

    profile: HardwareProfile
    ledger: Ledger

    def count(self, scope: str, samples: int = 0) -> AbstractContextManager[None]: ...

    def report(self) -> EnergyReport: ...

    def reset(self) -> None: ...


@runtime_checkable
class NeuromorphicEngine(Engine, Protocol):
    """:class:`~sim.neuromorphic.NeuromorphicDevice`: a spiking network, run step by step."""

    def compile(self, net: Network, *, quantize: bool = True,
                weight_lsb: float | None = None) -> Compiled:
        """Quantise, place and route ``net`` on the cores; allocate fresh state."""
        ...

    def run(self, n_steps: int, scope: str | None = "run", *,
            loop: str = "compiled") -> SimResult:
        """Advance ``n_steps`` time steps, counting into ``ledger[scope]``."""
        ...


@runtime_checkable
class BitwiseEngine(Engine, Protocol):
    """:class:`~sim.bitwise.BitwiseDevice`: packed +/-1 layers on packed input words."""

    def compile(self, layers: Sequence[Layer]) -> list[Layer]:
        """Check the packed layers chain and fit the device; return them as a list."""
        ...

    def run(self, layers: Sequence[Layer], x_words: np.ndarray,
            scope: str = "infer") -> NetworkOutput:
        """Inference of the packed network on packed inputs ``x_words`` (N, W)."""
        ...


@runtime_checkable
class TorchEngine(Engine, Protocol):
    """:class:`~sim.torch_engine.TorchDevice`: a torch module under the op counter."""

    def compile(self, module: torch.nn.Module, stored_bytes: int | None = None) -> torch.nn.Module:
        """Check the module's parameters fit device memory (at ``stored_bytes`` when the
        target stores them at another precision, e.g. int8); move it to the device."""
        ...

    def run(self, module: torch.nn.Module, x: torch.Tensor, scope: str = "infer") -> Any:
        """Inference ``module(x)`` without gradients, counted under ``scope``."""
        ...
