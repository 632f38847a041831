"""The procedural Earth: unit-variance fields, 30 % land, the denser cap, same seed twice."""
import math

import numpy as np
import pytest

from models.geo_inr_id import data as D
from models.geo_inr_id.sphere import angular_distance, uniform_lonlat
from sim.errors import ModelError


def test_fields_have_unit_variance_and_no_mean():
    e = D.make_earth(0)
    assert e.coeffs.shape == (31 ** 2, 32)
    # sum c^2 = 4 pi makes the variance over the sphere (sum c^2 / 4 pi) exactly 1
    np.testing.assert_allclose((e.coeffs ** 2).sum(0), 4 * math.pi, rtol=1e-12)
    assert np.all(e.coeffs[0] == 0)
    vals = D.field_values(e, uniform_lonlat(20000, np.random.default_rng(5)))
    assert np.all(np.abs(vals.var(0) - 1) < 0.25) and np.all(np.abs(vals.mean(0)) < 0.15)
    # even fields smooth (beta 2.5-4), odd ones rough (beta 0-1): both in each split
    assert np.all(e.betas[0::2] >= 2.5) and np.all(e.betas[1::2] <= 1.0)


def test_land_is_thirty_percent_and_samples_are_land():
    e = D.make_earth(1)
    fresh = uniform_lonlat(20000, np.random.default_rng(9))
    # the threshold is the 70th percentile on 20k other points: 30 % +- 1.5 points here
    assert abs(D.is_land(e, fresh).mean() - 0.30) < 0.015
    pts = D.sample_land(e, 500, np.random.default_rng(2))
    assert pts.shape == (500, 2) and D.is_land(e, pts).all()


def test_cap_is_boost_times_denser():
    rng = np.random.default_rng(3)
    pts = D.sample_pretrain(20000, rng, 10.0, (0.5, 0.2), 0.5)
    a = (1 - math.cos(0.5)) / 2                                       # 0.0612 of the area
    want = 10 * a / (10 * a + 1 - a)                                  # 0.3946 of the points
    assert (angular_distance(pts, (0.5, 0.2)) <= 0.5).mean() == pytest.approx(want, abs=1e-4)
    with pytest.raises(ModelError, match=r"cap_boost = 0.5; expected >= 1"):
        D.sample_pretrain(10, rng, 0.5, (0, 0), 0.5)


def test_same_seed_same_data():
    a, b = D.load(200, 300, 4), D.load(200, 300, 4)
    for k in ("pretrain_lonlat", "pretrain_y", "eval_lonlat", "eval_y"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    assert a.pretrain_y.shape == (200, 24) and a.eval_y.shape == (300, 8)
    assert a.cap_centre == D.make_earth(4).inland
    assert not np.array_equal(D.load(200, 300, 5).eval_y, a.eval_y)
