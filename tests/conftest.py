"""Shared fixtures: the test profiles, the Fashion-MNIST files (or a skip), and torch's
global state restored after every test (so no test leans on another's threads or RNG)."""
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
TOY_GPU = DATA / "toy-gpu.toml"
"""A tiny GPU profile with round numbers (2 pJ per fp32 MAC ...): hand arithmetic in tests."""
TOY_NEURO = DATA / "toy-neuro.toml"


@pytest.fixture
def toy_gpu_path() -> Path:
    return TOY_GPU


@pytest.fixture
def toy_gpu_text() -> str:
    return TOY_GPU.read_text()


@pytest.fixture
def toy_gpu():
    """The toy GPU profile, loaded."""
    from hw_profiles import load
    return load(TOY_GPU)


@pytest.fixture
def toy_neuro_path() -> Path:
    return TOY_NEURO


@pytest.fixture(autouse=True)
def _restore_torch_state():
    """Put torch's thread count and global RNG back as they were before the test."""
    import sys
    torch = sys.modules.get("torch")   # only when torch is already loaded: keeps light tests light
    if torch is None:
        yield
        return
    threads, rng = torch.get_num_threads(), torch.random.get_rng_state()
    yield
    torch.set_num_threads(threads)
    torch.random.set_rng_state(rng)


@pytest.fixture
def one_torch_thread():
    """One torch thread for tests of tiny tensors: on the shared 2-core machine OpenMP's
    spin-waits cost more than the work (``_restore_torch_state`` puts the count back)."""
    import torch
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def fashion_mnist() -> None:
    """Skip, saying how to install them, when the Fashion-MNIST files are absent (``make test``
    installs the Debian package when run as root and prints the apt-get line otherwise)."""
    from models.errors import DatasetError
    from models.shared import datasets
    try:
        datasets.check_available("fashion-mnist")
    except DatasetError as exc:
        pytest.skip(f"needs Fashion-MNIST: {exc}")
