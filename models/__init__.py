"""The methods, one module each, and ``REGISTRY`` of the ones that work.

Importing this package imports every method module, which registers its card.
One import line per method, so each method's line can be added or removed on its own.
"""
from models.registry import REGISTRY, ModelCard, RunResult, get, register

from models import mlp  # noqa: E402,F401
from models import fs_kan  # noqa: E402,F401
from models import bep_card  # noqa: E402,F401
from models import tversky  # noqa: E402,F401
from models import klas  # noqa: E402,F401
from models import snn_cuba  # noqa: E402,F401
from models import chunk_sparse_attention  # noqa: E402,F401
from models import filter_heads  # noqa: E402,F401
from models import tsetlin_card  # noqa: E402,F401
from models import pc  # noqa: E402,F401
from models import diffpc  # noqa: E402,F401

__all__ = ["REGISTRY", "ModelCard", "RunResult", "get", "register"]
