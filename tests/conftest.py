"""Shared fixtures: paths of the test profiles and a fresh temporary directory per test."""
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
TOY_GPU = DATA / "toy-gpu.toml"


@pytest.fixture
def toy_gpu_path() -> Path:
    return TOY_GPU


@pytest.fixture
def toy_gpu_text() -> str:
    return TOY_GPU.read_text()
