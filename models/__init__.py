"""The methods, one room (package) each, and ``REGISTRY`` of the ones that work.

Importing this package imports every room's ``card.py``, which registers the method; the
cards are light (no torch), so ``neuroedge models`` is quick. One line per room, so each
method's line can be added or removed on its own.
"""
from models.baselines.mlp import card as _mlp  # noqa: E402,F401
from models.chunk_sparse_attention import card as _chunk_sparse_attention  # noqa: E402,F401
from models.filter_heads import card as _filter_heads  # noqa: E402,F401
from models.registry import (
           REGISTRY,
           Card,
           Method,
           Outcome,
           RunResult,
           Study,
           Trained,
           get,
           register,
)

__all__ = ["REGISTRY", "Card", "Method", "Outcome", "RunResult", "Study", "Trained", "get",
           "register"]
