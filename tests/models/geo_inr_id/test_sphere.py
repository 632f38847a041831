"""Sphere geometry and the real spherical harmonics: exact orthonormality by quadrature,
agreement with scipy, cap sampling, lon/lat round trips."""
import math

import numpy as np
import pytest
import torch

from models.geo_inr_id import sphere as S
from sim.errors import ModelError


def test_harmonics_are_orthonormal_by_exact_quadrature():
    # products of degree <= 2 x 8 = 16 are integrated exactly by 9 Gauss-Legendre nodes in
    # sin(lat) and 17 equispaced longitudes (trigonometric degree <= 16)
    deg = 8
    u, wu = np.polynomial.legendre.leggauss(deg + 1)
    lon = np.arange(2 * deg + 1) * 2 * math.pi / (2 * deg + 1)
    lat = np.arcsin(u)
    grid = np.array([(a, b) for b in lat for a in lon])
    w = np.repeat(wu, len(lon)) * 2 * math.pi / len(lon)            # sums to 4 pi
    y = S.real_sph_harm(torch.as_tensor(grid), deg).numpy()
    assert y.shape == (len(grid), S.n_harmonics(deg)) == (153, 81)
    np.testing.assert_allclose((y * w[:, None]).T @ y, np.eye(81), atol=1e-12)


def test_harmonics_match_scipy():
    from scipy.special import sph_harm_y
    ll = S.uniform_lonlat(50, np.random.default_rng(0))
    y = S.real_sph_harm(torch.as_tensor(ll), 5).numpy()
    theta, phi = math.pi / 2 - ll[:, 1], ll[:, 0]
    for ell in range(6):
        for m in range(-ell, ell + 1):
            c = sph_harm_y(ell, abs(m), theta, phi)
            # real form from the complex one; both carry the Condon-Shortley (-1)^m
            ref = c.real if m == 0 else math.sqrt(2) * (c.real if m > 0 else c.imag)
            np.testing.assert_allclose(y[:, ell * ell + ell + m], ref, atol=1e-12)


def test_cap_sampling_stays_inside_and_round_trips():
    rng = np.random.default_rng(1)
    for centre in ((1.0, 0.5), (0.0, math.pi / 2), (2.0, -math.pi / 2)):
        pts = S.cap_lonlat(500, rng, centre, 0.3)
        ang = S.angular_distance(pts, centre)
        assert ang.max() <= 0.3 + 1e-9 and ang.max() > 0.28
    ll = S.uniform_lonlat(100, rng)
    np.testing.assert_allclose(S.to_lonlat(S.to_xyz(ll)), ll, atol=1e-12)


def test_degree_must_be_non_negative():
    with pytest.raises(ModelError, match="real_sph_harm: degree = -1; expected >= 0"):
        S.real_sph_harm(torch.zeros(3, 2), -1)
