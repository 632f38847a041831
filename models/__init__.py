"""The methods, one module each, and ``REGISTRY`` of the ones that work.

Importing this package imports every method module, which registers its card.
"""
from models.registry import REGISTRY, ModelCard, RunResult, get, register

from models import mlp  # noqa: E402,F401  (registers "mlp")

__all__ = ["REGISTRY", "ModelCard", "RunResult", "get", "register"]
