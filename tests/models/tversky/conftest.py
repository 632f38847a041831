"""One small Tversky run shared by the model and card tests (a few seconds on the toy GPU)."""
import pytest
from conftest import TOY_GPU

SMALL = {"train": 2000, "test": 500, "epochs": 4, "width": 8, "lr": 1e-2}
"""2000 images, 4 epochs, width 8 (features d = 8 * 8 = 64); visualise stays on."""


@pytest.fixture
def small() -> dict:
    return dict(SMALL)


@pytest.fixture(scope="session")
def small_run(fashion_mnist):
    from models import runner
    return runner.run("tversky", profile=TOY_GPU, overrides=SMALL)
