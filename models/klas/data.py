"""KLAS's data: a Fashion-MNIST slice (training images, then the held-out D_v) and test images."""
from __future__ import annotations

from models.shared import datasets
from sim.errors import ModelError


def load(dataset: str, cfg) -> datasets.Dataset:
    """The first ``cfg.n_train + cfg.n_val`` training images (the last ``n_val`` are D_v,
    for the probes' KL, CKA and the least-squares init) and the first ``cfg.n_test`` test
    images, 28x28 flattened for the ViT patch grid."""
    if dataset.lower().replace("_", "-") != "fashion-mnist":
        raise ModelError(f"klas: dataset {dataset!r} is not supported; KLAS runs on "
                         "'fashion-mnist' (28x28 images for the ViT patch grid)")
    return datasets.fashion_mnist(limit_train=cfg.n_train + cfg.n_val, limit_test=cfg.n_test)
