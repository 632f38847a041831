"""Which registered cards' quick runs are slow (more than ~10 s here), for the contract and
same-seed tests: those run only under ``-m slow``. A card not listed is not slow.

Seconds: one quick run through ``runner.run`` on the toy profile of the card's default
kind, measured on the shared 2-core machine (wall time, load average in brackets).
"""
import pytest

SLOW = {
    "chunk_sparse_attention": 47,   # 150 steps x 16 at 256 tokens; 222 s at load 9
    "filter_heads": 45,             # 300 steps, mask searches, patching (load 1.5)
}


def param(name: str):
    """``name`` as a pytest parameter, marked slow when its quick run is."""
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
