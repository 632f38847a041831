"""Shared fixtures: paths of the test profiles, and the Fashion-MNIST files (or a skip)."""
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


@pytest.fixture(scope="session")
def fashion_mnist() -> None:
    """Skip, saying how to install them, when the Fashion-MNIST files are absent (``make test``
    installs the Debian package when run as root and prints the apt-get line otherwise)."""
    from hw_profiles.errors import DatasetError
    from models.shared import datasets
    try:
        datasets.check_available("fashion-mnist")
    except DatasetError as exc:
        pytest.skip(f"needs Fashion-MNIST: {exc}")
