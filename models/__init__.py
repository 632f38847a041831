"""The methods, one room (package) each, and ``REGISTRY`` of the ones that work.

Importing this package imports every room's ``card.py``, which registers the method; the
cards are light (no torch), so ``neuroedge models`` is quick. One line per room (sorted
by ruff's isort), so each method's line can be added or removed on its own.
"""
from models.apple import card as _apple  # noqa: E402,F401
from models.baselines.mlp import card as _mlp  # noqa: E402,F401
from models.baselines.pc import card as _pc  # noqa: E402,F401
from models.bep import card as _bep  # noqa: E402,F401
from models.chunk_sparse_attention import card as _chunk_sparse_attention  # noqa: E402,F401
from models.conformal_hashing import card as _conformal_hashing  # noqa: E402,F401
from models.dave import card as _dave  # noqa: E402,F401
from models.decoupled_prototypes import card as _decoupled_prototypes  # noqa: E402,F401
from models.diffpc import card as _diffpc  # noqa: E402,F401
from models.disco import card as _disco  # noqa: E402,F401
from models.filter_heads import card as _filter_heads  # noqa: E402,F401
from models.fs_kan import card as _fs_kan  # noqa: E402,F401
from models.geb import card as _geb  # noqa: E402,F401
from models.geo_inr_id import card as _geo_inr_id  # noqa: E402,F401
from models.klas import card as _klas  # noqa: E402,F401
from models.latent import card as _latent  # noqa: E402,F401
from models.ppl import card as _ppl  # noqa: E402,F401
from models.registry import (
    REGISTRY,
    Card,
    Method,
    Outcome,
    RunFile,
    RunResult,
    Study,
    Trained,
    get,
    register,
)
from models.screener import card as _screener  # noqa: E402,F401
from models.snn_cuba import card as _snn_cuba  # noqa: E402,F401
from models.trainref import card as _trainref  # noqa: E402,F401
from models.tsetlin import card as _tsetlin  # noqa: E402,F401
from models.tversky import card as _tversky  # noqa: E402,F401

__all__ = ["REGISTRY", "Card", "Method", "Outcome", "RunFile", "RunResult", "Study", "Trained",
           "get", "register"]
