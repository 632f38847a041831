"""Agreement with the scikit-dimension package (the paper's estimators, 0.5.0 here; the paper
pins 0.3.4) on the same data: MLE (k = 20), TwoNN, FisherS and the pointwise MLE at k = 100."""
import numpy as np
import pytest
import torch

from models.geo_inr_id import estimators as est


def sphere2_in_256(n, seed):
    """The test_estimators recipe with more noise (std 1e-2): a 2-sphere, a random N(0, 1)
    map into R^256."""
    rng = np.random.default_rng([seed, 2, 256])
    p = rng.standard_normal((n, 3))
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    return p @ rng.standard_normal((3, 256)) + 1e-2 * rng.standard_normal((n, 256))


def test_agrees_with_scikit_dimension_to_1e6():
    skdim = pytest.importorskip("skdim")
    x = sphere2_in_256(1000, 0)   # 1000 points: skdim's MLE loops per point
    ids, dists = est.global_ids(torch.as_tensor(x), ks=(20, 100))
    want_mle = skdim.id.MLE().fit(x, n_neighbors=20).dimension_
    want_pw = skdim.id.MLE().fit(x, n_neighbors=100).dimension_pw_
    with _quiet():
        want_two = skdim.id.TwoNN().fit(x).dimension_
        want_fs = float(np.ravel(skdim.id.FisherS().fit(x).dimension_)[0])
    assert ids["mle_k20"] == pytest.approx(want_mle, abs=1e-6)
    assert ids["twonn"] == pytest.approx(want_two, abs=1e-6)
    assert ids["fishers"] == pytest.approx(want_fs, abs=1e-6)
    pw = est.mle_pointwise(dists[:, :100]).numpy()
    np.testing.assert_allclose(pw, want_pw, atol=1e-6)


def _quiet():
    """skdim's FisherS silences every warning module-wide; TwoNN warns on duplicates."""
    import contextlib
    import warnings
    ctx = contextlib.ExitStack()
    ctx.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    return ctx
