"""Geometry on the unit sphere: uniform sampling, lon/lat <-> unit vectors, real spherical
harmonics (torch, so the spherical-harmonic encoder's features are counted on the device).

Conventions: longitude ``lon`` in [-pi, pi), latitude ``lat`` in [-pi/2, pi/2] (radians);
unit vector ``(cos lat cos lon, cos lat sin lon, sin lat)``. Uniform sampling on the sphere is
the paper's sampler (Rao et al. 2026, arXiv:2511.02101): ``lon ~ U(-pi, pi)``,
``lat = asin(U(-1, 1))``.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import torch

from sim.errors import ModelError


def uniform_lonlat(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform on the sphere as (n, 2) ``(lon, lat)`` radians."""
    lon = rng.uniform(-math.pi, math.pi, n)
    lat = np.arcsin(rng.uniform(-1.0, 1.0, n))
    return np.stack([lon, lat], 1)


def cap_lonlat(n: int, rng: np.random.Generator, centre: tuple[float, float],
               radius: float) -> np.ndarray:
    """``n`` points uniform in the spherical cap of angular ``radius`` (rad) around
    ``centre = (lon, lat)``: uniform ``cos(theta)`` in [cos r, 1] about the centre, rotated."""
    cos_t = rng.uniform(math.cos(radius), 1.0, n)
    sin_t = np.sqrt(1 - cos_t ** 2)
    phi = rng.uniform(0, 2 * math.pi, n)
    local = np.stack([sin_t * np.cos(phi), sin_t * np.sin(phi), cos_t], 1)  # about +z
    c = to_xyz(np.array([centre]))[0]
    # rotation taking +z to c: Rodrigues about z x c
    axis = np.cross([0.0, 0.0, 1.0], c)
    s, cz = np.linalg.norm(axis), c[2]
    if s < 1e-12:
        xyz = local if cz > 0 else local * np.array([1, -1, -1])
    else:
        k = axis / s
        kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
        rot = np.eye(3) + s * kx + (1 - cz) * kx @ kx
        xyz = local @ rot.T
    return to_lonlat(xyz)


def to_xyz(lonlat: np.ndarray) -> np.ndarray:
    """(n, 2) lon/lat radians -> (n, 3) unit vectors."""
    lon, lat = lonlat[:, 0], lonlat[:, 1]
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], 1)


def to_lonlat(xyz: np.ndarray) -> np.ndarray:
    """(n, 3) unit vectors -> (n, 2) lon/lat radians."""
    return np.stack([np.arctan2(xyz[:, 1], xyz[:, 0]),
                     np.arcsin(np.clip(xyz[:, 2], -1.0, 1.0))], 1)


def angular_distance(lonlat: np.ndarray, centre: tuple[float, float]) -> np.ndarray:
    """Great-circle angle (rad) from each point to ``centre``."""
    c = to_xyz(np.array([centre]))[0]
    return np.arccos(np.clip(to_xyz(lonlat) @ c, -1.0, 1.0))


def n_harmonics(degree: int) -> int:
    """Number of real spherical harmonics of degree 0..``degree``: (L + 1)^2."""
    return (degree + 1) ** 2


def real_sph_harm(lonlat: torch.Tensor, degree: int) -> torch.Tensor:
    """Orthonormal real spherical harmonics ``Y_lm`` (l <= ``degree``) at (N, 2) lon/lat.

    Fully normalised associated Legendre functions by the standard stable recurrences
    (``P_mm`` from ``P_{m-1,m-1}``, ``P_{m+1,m}``, then ``P_lm = a_lm (x P_{l-1,m} -
    P_{l-2,m} / a_{l-1,m})``, ``a_lm = sqrt((4 l^2 - 1)/(l^2 - m^2))``), times
    ``sqrt(2) cos(m lon)`` / ``sqrt(2) sin(|m| lon)``; orthonormal: ``int Y_lm Y_l'm' dOmega =
    delta``, so their mean over uniform points tends to ``delta / (4 pi)``. Columns are
    ordered ``l = 0..L``, ``m = -l..l``.

    Returns (N, (L + 1)^2) in the dtype of ``lonlat``.
    """
    if degree < 0:
        raise ModelError(f"real_sph_harm: degree = {degree}; expected >= 0")
    big_l, dt, dv = degree, lonlat.dtype, lonlat.device
    lon, lat = lonlat[:, 0], lonlat[:, 1]
    x, y = torch.sin(lat)[:, None], torch.cos(lat)[:, None]   # cos, sin of the colatitude
    a_lm, binv, pmm_c = _legendre_tables(big_l)
    ms = torch.arange(big_l + 1, dtype=dt, device=dv)              # (M,)
    # P_mm = P_00 prod_{i<=m} (-sqrt((2i+1)/(2i)) sin theta): constants times (-y)^m
    pmm = torch.as_tensor(pmm_c, dtype=dt, device=dv) * torch.pow(-y, ms)   # (N, M)
    eye = torch.eye(big_l + 1, dtype=dt, device=dv)
    # one recurrence step per degree for all orders at once (rows l, columns m <= l)
    prev2 = torch.zeros_like(pmm)
    prev1 = pmm * eye[0]                                            # row l = 0: P_00 only
    rows = [prev1]
    for ell in range(1, big_l + 1):
        a = torch.as_tensor(a_lm[ell], dtype=dt, device=dv)
        b = torch.as_tensor(binv[ell], dtype=dt, device=dv)
        new = a * (x * prev1 - b * prev2) + pmm * eye[ell]          # (N, M)
        rows.append(new)
        prev2, prev1 = prev1, new
    p = torch.stack(rows, 1)                                        # (N, L+1, M)
    cos_m, sin_m = torch.cos(lon[:, None] * ms), torch.sin(lon[:, None] * ms)   # (N, M)
    both = torch.cat([(p * cos_m[:, None, :]).flatten(1), (p * sin_m[:, None, :]).flatten(1)],
                     1)                                             # (N, 2 (L+1) M)
    idx, w = _harmonic_index(big_l)
    return both[:, torch.as_tensor(idx, device=dv)] * torch.as_tensor(w, dtype=dt, device=dv)


@functools.cache
def _legendre_tables(big_l: int):
    """Recurrence constants: ``a_lm`` (0 where m >= l), ``1 / a_{l-1,m}`` (0 where
    m >= l - 1: the ``P_{l-2,m}`` term is absent there) and ``P_mm``'s constant factors."""
    a_lm = np.zeros((big_l + 1, big_l + 1))
    binv = np.zeros((big_l + 1, big_l + 1))
    for ell in range(1, big_l + 1):
        for m in range(ell):
            a_lm[ell, m] = math.sqrt((4 * ell * ell - 1) / (ell * ell - m * m))
            if m < ell - 1:
                binv[ell, m] = math.sqrt(((ell - 1) ** 2 - m * m) / (4 * (ell - 1) ** 2 - 1))
    c = np.ones(big_l + 1) / math.sqrt(4 * math.pi)
    for m in range(1, big_l + 1):
        c[m] = c[m - 1] * math.sqrt((2 * m + 1) / (2 * m))
    return a_lm, binv, c


@functools.cache
def _harmonic_index(big_l: int):
    """Where column ``(l, m)`` sits in the stacked [P cos(m lon) | P sin(m lon)] table, and
    its factor (sqrt 2 for m != 0)."""
    m_count = big_l + 1
    half = (big_l + 1) * m_count
    idx, w = [], []
    for ell in range(big_l + 1):
        for m in range(-ell, ell + 1):
            idx.append(half + ell * m_count - m if m < 0 else ell * m_count + m)
            w.append(1.0 if m == 0 else math.sqrt(2))
    return np.array(idx), np.array(w)
