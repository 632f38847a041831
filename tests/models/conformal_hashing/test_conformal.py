"""COLA's semantic calibration: split-conformal thresholds and sets, coverage on held-out
source data, the set weights and soft labels."""
import math

import pytest
import torch

from models.conformal_hashing.conformal import (
    conformal_threshold,
    prediction_sets,
    set_weights,
    soft_labels,
)
from sim.errors import ModelError


def test_threshold_is_the_finite_sample_rank():
    scores = torch.arange(1, 101, dtype=torch.float64) / 100       # 0.01 .. 1.00, shuffled
    scores = scores[torch.randperm(100, generator=torch.Generator().manual_seed(0))]
    # alpha 0.1: k = ceil(101 * 0.9) = ceil(90.9) = 91 -> the 91st smallest = 0.91
    assert conformal_threshold(scores, 0.1) == pytest.approx(0.91)
    # alpha 0.2: k = ceil(101 * 0.8) = ceil(80.8) = 81 -> 0.81
    assert conformal_threshold(scores, 0.2) == pytest.approx(0.81)
    # alpha 0.005: k = ceil(101 * 0.995) = ceil(100.495) = 101 > 100 -> every label in every set
    assert conformal_threshold(scores, 0.005) == math.inf
    with pytest.raises(ModelError, match="alpha = 1.5"):
        conformal_threshold(scores, 1.5)


def test_sets_weights_and_soft_labels():
    probs = torch.tensor([[0.7, 0.2, 0.1], [0.4, 0.35, 0.25], [0.5, 0.3, 0.2]])
    sets = prediction_sets(probs, qhat=0.68)   # keep p >= 1 - 0.68 = 0.32
    assert sets.tolist() == [[True, False, False], [True, True, False], [True, False, False]]
    assert set_weights(sets).tolist() == pytest.approx([1.0, 0.5, 1.0])
    # row 2: 0.4 / 0.75 and 0.35 / 0.75 over the set {0, 1}
    assert soft_labels(probs, sets)[1].tolist() == pytest.approx([0.4 / 0.75, 0.35 / 0.75, 0])
    empty = prediction_sets(probs, qhat=0.2)   # p >= 0.8: no label -> weight 0
    assert set_weights(empty).tolist() == [0.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def heldout_probs(fashion_mnist):
    """A nearest-class-mean classifier of 5000 Fashion-MNIST training images, ``p(y|x) =
    softmax(-|x - mu_y|^2 / 10)`` (no training: conformal coverage holds for any model);
    probabilities and labels of the 10000 held-out test images, from which calibration and
    test sets are both drawn (exchangeable)."""
    from models.shared import datasets
    d = datasets.fashion_mnist(limit_train=5000)
    x, y = torch.as_tensor(d.x_train), torch.as_tensor(d.y_train)
    means = torch.stack([x[y == c].mean(0) for c in range(10)])
    xt = torch.as_tensor(d.x_test)
    return (-torch.cdist(xt, means).pow(2) / 10).softmax(1), torch.as_tensor(d.y_test)


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_coverage_on_heldout_source_for_most_splits(heldout_probs, alpha):
    """The acceptance check: coverage in [1 - alpha - 0.02, 1 - alpha + 0.03] on held-out
    data, for at least 9 of 10 random 5000/5000 calibration/test splits (never one lucky
    split). The std of one split's coverage is about sqrt(2 alpha (1 - alpha) / 5000), i.e.
    0.004-0.008, so the band is > 2.5 std wide on each side."""
    probs, y = heldout_probs
    inside, covs = 0, []
    for seed in range(10):
        perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
        cal, test = perm[:5000], perm[5000:]
        scores = 1.0 - probs[cal].gather(1, y[cal, None])[:, 0]
        sets = prediction_sets(probs[test], conformal_threshold(scores, alpha))
        cov = float(sets.gather(1, y[test, None]).float().mean())
        covs.append(cov)
        inside += 1 - alpha - 0.02 <= cov <= 1 - alpha + 0.03
    assert inside >= 9, (alpha, covs)
    # and not trivially: the sets are smaller than all 10 labels
    assert float(sets.sum(1).float().mean()) < 9
