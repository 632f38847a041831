"""A procedural "Earth": seeded scalar fields on the sphere, a land mask, and the point sets.

The paper's encoders are pre-trained on satellite images, photos and species records, and
probed on air temperature, elevation and population (Rao et al. 2026); none of that
ships offline. Its digest's plan replaces them with ``K = 32`` random fields
``f_k = sum_{l <= 30, m} c_lm Y_lm``, ``c_lm ~ N(0, (1 + l)^-beta / (2 l + 1))`` (the degree
power falls as ``(1 + l)^-beta``), scaled so each field has unit variance over the sphere
(``sum c^2 = 4 pi``, the mean of ``Y_lm^2`` being ``1 / 4 pi``), no constant term. Fields
alternate between smooth (``beta`` in [2.5, 4]) and rough (``beta`` in [0, 1]) spectra;
fields 0..23 pre-train the encoders, 24..31 are the held-out probe targets (each set has
both kinds). The land mask is a smooth field (``l <= 8``, ``beta = 2``) thresholded at its
70th percentile, so 30 % of the sphere is land.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from models.geo_inr_id.sphere import (
    angular_distance,
    cap_lonlat,
    real_sph_harm,
    uniform_lonlat,
)
from sim import seeds
from sim.errors import ModelError

FIELD_DEGREE = 30       # the plan's band limit
MASK_DEGREE = 8
LAND_FRACTION = 0.30
N_FIELDS = 32
N_PRETRAIN_FIELDS = 24  # the rest are the probes' held-out targets


@dataclass
class Earth:
    """The fields' and the mask's harmonic coefficients, and the mask threshold."""

    coeffs: np.ndarray      # (961, 32) field coefficients, column k = field k
    betas: np.ndarray       # (32,) spectral slopes
    mask_coeffs: np.ndarray  # (81,)
    mask_threshold: float
    inland: tuple[float, float]   # (lon, lat) of the mask's maximum: the most inland point


def _random_field(rng, degree: int, beta: float) -> np.ndarray:
    ell = np.concatenate([np.full(2 * d + 1, d) for d in range(degree + 1)])
    c = rng.standard_normal(ell.size) * np.sqrt((1.0 + ell) ** -beta / (2 * ell + 1))
    c[0] = 0.0                                   # no constant term: zero-mean fields
    return c * math.sqrt(4 * math.pi / (c @ c))  # unit variance over the sphere


def make_earth(seed: int) -> Earth:
    """The procedural Earth of run seed ``seed`` (fields, slopes and mask drawn from its
    stream ``("data", "earth")``)."""
    rng = seeds.rng(seed, "data", "earth")
    betas = np.where(np.arange(N_FIELDS) % 2 == 0, rng.uniform(2.5, 4.0, N_FIELDS),
                     rng.uniform(0.0, 1.0, N_FIELDS))
    coeffs = np.stack([_random_field(rng, FIELD_DEGREE, b) for b in betas], 1)
    mask = _random_field(rng, MASK_DEGREE, 2.0)
    probe = uniform_lonlat(20000, rng)
    vals = real_sph_harm(torch.as_tensor(probe), MASK_DEGREE).numpy() @ mask
    top = probe[int(np.argmax(vals))]
    return Earth(coeffs, betas, mask, float(np.quantile(vals, 1 - LAND_FRACTION)),
                 (float(top[0]), float(top[1])))


def field_values(earth: Earth, lonlat: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """(N, 32) values of every field at (N, 2) lon/lat (chunked: 961 harmonics per point)."""
    out = [real_sph_harm(torch.as_tensor(lonlat[s:s + chunk]), FIELD_DEGREE).numpy()
           @ earth.coeffs for s in range(0, len(lonlat), chunk)]
    return np.concatenate(out) if out else np.zeros((0, earth.coeffs.shape[1]))


def is_land(earth: Earth, lonlat: np.ndarray) -> np.ndarray:
    """Boolean (N,) mask: the smooth mask field above its threshold."""
    vals = real_sph_harm(torch.as_tensor(lonlat), MASK_DEGREE).numpy() @ earth.mask_coeffs
    return vals > earth.mask_threshold


def sample_land(earth: Earth, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform on the sphere, kept only on land (the paper's rejection sampler
    with the procedural mask in place of Natural Earth's land polygon)."""
    got, have = [], 0
    while have < n:
        cand = uniform_lonlat(max(4 * (n - have), 256), rng)
        keep = cand[is_land(earth, cand)]
        got.append(keep)
        have += len(keep)
    return np.concatenate(got)[:n]


def sample_pretrain(n: int, rng: np.random.Generator, cap_boost: float,
                    centre: tuple[float, float], radius: float) -> np.ndarray:
    """Pre-training locations over the whole sphere, ``cap_boost`` times denser inside the
    cap (centre, radius) than outside (1: uniform). The cap holds area fraction
    ``a = (1 - cos r) / 2``, so a fraction ``boost a / (boost a + 1 - a)`` of the points."""
    if cap_boost < 1:
        raise ModelError(f"cap_boost = {cap_boost}; expected >= 1 (1: uniform coverage)")
    if cap_boost == 1:
        return uniform_lonlat(n, rng)
    a = (1 - math.cos(radius)) / 2
    n_in = int(round(n * cap_boost * a / (cap_boost * a + 1 - a)))
    inside = cap_lonlat(n_in, rng, centre, radius)
    outside = []
    have = 0
    while have < n - n_in:
        cand = uniform_lonlat(2 * (n - n_in - have) + 64, rng)
        cand = cand[angular_distance(cand, centre) > radius]
        outside.append(cand)
        have += len(cand)
    pts = np.concatenate([inside, np.concatenate(outside)[:n - n_in]])
    return pts[rng.permutation(len(pts))]


@dataclass
class GeoData:
    """Everything one run needs: the Earth, pre-training and evaluation points and targets."""

    earth: Earth
    pretrain_lonlat: np.ndarray   # (n_pretrain, 2)
    pretrain_y: np.ndarray        # (n_pretrain, 24)
    eval_lonlat: np.ndarray       # (n_eval, 2) land points: ID, local map, probes
    eval_y: np.ndarray            # (n_eval, 8) held-out fields
    cap_centre: tuple[float, float]   # (lon, lat) of the densely covered cap
    source: str = "procedural"


def load(n_pretrain: int, n_eval: int, seed: int, cap_boost: float = 1.0,
         cap_centre: tuple[float, float] | None = None, cap_radius: float = 0.5,
         eval_region: str = "land") -> GeoData:
    """The Earth of ``seed`` with its point sets; the points come from their own named streams
    (``("data", "pretrain")``, ``("data", "eval")``) so a
    change of one size leaves the other set as it was. ``cap_centre`` None: the Earth's most
    inland point, so the cap holds land (evaluation points) whatever the seed.
    ``eval_region``: ``land`` (the paper's land-only sampler) or ``sphere`` (uniform over the
    whole sphere: every longitude sees the same latitudes, which a longitude spectrum needs)."""
    if eval_region not in ("land", "sphere"):
        raise ModelError(f"geo_inr_id data: eval_region = {eval_region!r}; expected 'land' or "
                         "'sphere'")
    for name, v in (("n_pretrain", n_pretrain), ("n_eval", n_eval)):
        if v < 10:
            raise ModelError(f"geo_inr_id data: {name} = {v}; expected >= 10 points")
    earth = make_earth(seed)
    cap_centre = earth.inland if cap_centre is None else tuple(cap_centre)
    pre = sample_pretrain(n_pretrain, seeds.rng(seed, "data", "pretrain"), cap_boost,
                          cap_centre, cap_radius)
    ev_rng = seeds.rng(seed, "data", "eval")
    ev = (sample_land(earth, n_eval, ev_rng) if eval_region == "land"
          else uniform_lonlat(n_eval, ev_rng))
    return GeoData(earth, pre, field_values(earth, pre)[:, :N_PRETRAIN_FIELDS], ev,
                   field_values(earth, ev)[:, N_PRETRAIN_FIELDS:], cap_centre,
                   source=f"procedural earth seed {seed}: {N_FIELDS} fields l <= "
                          f"{FIELD_DEGREE}, land {LAND_FRACTION:.0%}")
