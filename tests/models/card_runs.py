"""What the contract and same-seed tests share about running every registered card: which
cards' quick runs are slow, and the toy profile a card's quick run uses.

``SLOW``: cards whose quick run takes more than ~10 s here; those run only under ``-m
slow``. A card not listed is not slow. Seconds: one quick run through ``runner.run`` on
the toy profile of the card's default kind, wall time on the shared 2-core machine (its
load average in brackets).
"""
from pathlib import Path

import pytest

SLOW = {
    "chunk_sparse_attention": 16,   # 150 steps x 16 at 256 tokens (load ~2; 7 s quiet,
                                    # 222 s at load 9)
    "filter_heads": 49,             # 300 steps, two mask searches, patching (load ~2)
}

DATA = Path(__file__).resolve().parents[1] / "data"
KIND_PROFILE = {"gpu": str(DATA / "toy-gpu.toml"), "cpu": "x86-avx2",
                "neuromorphic": str(DATA / "toy-neuro.toml"), "bitwise": "cortex-m4"}
"""A toy (or small shipped) profile per kind; x86-avx2 and cortex-m4 are shipped."""


def param(name: str):
    """``name`` as a pytest parameter, marked slow when its quick run is."""
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name


def toy_profile(card) -> str:
    """The toy profile of the kind of ``card``'s default profile."""
    from hw_profiles import load
    return KIND_PROFILE[load(card.default_profile).kind]


def missing_data(card) -> str | None:
    """Why the card's default dataset cannot be loaded here (None: it can)."""
    from models.errors import DatasetError
    from models.shared import datasets
    try:
        datasets.check_available(card.default_dataset)
    except DatasetError as exc:
        return f"needs {card.default_dataset}: {exc}"
    return None
