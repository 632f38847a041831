"""The embedding study's encoders: NT-Xent on a hand-computed case, the augmentation, the
supervised split disjoint from the run's images, the 1-NN reference accuracy, and a short
contrastive training that lowers its own loss."""
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from models.trainref import encoders as E
from sim import seeds
from sim.errors import ModelError


@pytest.fixture
def dev():
    from sim.torch_engine.engine import TorchDevice
    return TorchDevice("tests/data/toy-gpu.toml")


def test_nt_xent_of_a_known_case(dev):
    # B = 2, both views equal: the 4 views are (e1, e2, e1, e2); each view's partner has
    # cosine 1 and its two other views cosine 0, so every row's loss is
    # -log(e^{1/T} / (e^{1/T} + 2 e^0)) = log(1 + 2 e^{-1/T}); T = 0.5: log(1 + 2 e^-2)
    z = dev.tensor(np.eye(2, 4), dtype=torch.float32)
    got = float(E.nt_xent(z, z.clone(), 0.5))
    assert got == pytest.approx(math.log(1 + 2 * math.exp(-2.0)), rel=1e-6)
    # swapping the partners' order breaks the pairing: view 0's partner becomes e2 (cos 0)
    worse = float(E.nt_xent(z, z.flip(0), 0.5))
    assert worse > got + 1.0


def test_augment_keeps_shape_and_range_and_differs_per_draw(dev):
    x = dev.tensor(np.random.default_rng(0).random((8, 784)), dtype=torch.float32)
    gen = torch.Generator().manual_seed(1)
    a, b = E.augment(x, gen), E.augment(x, gen)
    assert a.shape == (8, 784) and float(a.min()) >= 0.0 and float(a.max()) <= 1.0
    assert not torch.equal(a, b)


def test_supervised_split_is_disjoint_from_the_run_images():
    # row i holds the value i: the split's rows are the images after the run's first 100
    x = np.arange(300, dtype=np.float32)[:, None].repeat(784, 1)
    y = np.arange(300) % 10
    xs, ys = E.disjoint_split(x, y, used=100, size=150)
    assert xs[:, 0].min() == 100 and xs[:, 0].max() == 249 and len(ys) == 150
    assert not set(xs[:, 0].tolist()) & set(range(100))
    with pytest.raises(ModelError, match="images 100..300 asked, the training set has 300"):
        E.disjoint_split(x, y, used=100, size=201)


def test_nearest_reference_accuracy_of_a_known_case(dev):
    # rows (1,0), (-1,0), (0,1), (0,-1) (mean 0, so centring leaves them); references
    # (1, 0.1) class 0 and (-0.1, 1) class 1. Cosines row -> (ref0, ref1): (1,0) -> (0.995,
    # -0.0995): 0; (-1,0) -> (-0.995, 0.0995): 1; (0,1) -> (0.0995, 0.995): 1; (0,-1) ->
    # (-0.0995, -0.995): 0. True labels (0, 0, 1, 1): rows 0 and 2 right, 2 of 4
    h_ref = dev.tensor([[1.0, 0.1], [-0.1, 1.0]])
    y_ref = dev.tensor([0, 1], dtype=torch.int64)
    h = dev.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    y = dev.tensor([0, 0, 1, 1], dtype=torch.int64)
    assert E.nearest_reference_accuracy(h_ref, y_ref, h, y) == pytest.approx(0.5)
    # shifted by (5, 5) the rows' cosines to the raw references would all be positive and
    # similar; centring on the rows' mean (5, 5) moves the references too: the same answer
    shift = dev.tensor([5.0, 5.0])
    assert E.nearest_reference_accuracy(h_ref + shift, y_ref, h + shift, y) == \
        pytest.approx(0.5)


def test_contrastive_training_starts_at_chance_and_moves_the_encoder(dev):
    # 32 distinct random images, batch 16: at initialisation every projection is nearly the
    # same vector, so NT-Xent starts at chance, log(2B - 1) = log(31) = 3.43 (a loss wired
    # to the wrong partner or without the self-mask would start elsewhere: log(32) = 3.47
    # with self-similarity in, and far above with e^{1/T} on the diagonal); two epochs of
    # Adam move every encoder weight tensor. (That it learns: the bench's 1-NN accuracy.)
    x = dev.tensor((np.random.default_rng(0).random((32, 784)) > 0.7).astype(np.float32))
    start = [p.detach().clone() for p in E.cnn(seeds.child(0, "init", "contrastive"),
                                                16).parameters()]
    enc, history = E.contrastive(x, SimpleNamespace(seed=0, dim=16), dev, epochs=2,
                                 batch_size=16)
    assert enc(x[:2]).shape == (2, 16)
    assert abs(history[0]["train_loss"] - math.log(31)) < 0.02
    for before, after in zip(start, enc.parameters(), strict=True):
        assert not torch.equal(before.to(after.device), after.detach())
