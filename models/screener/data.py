"""Procedural "CT" volumes with anatomy and inserted context-dependent lesions.

The digest's small-scale stand-in for the paper's CT (Goncharov et al., ICLR 2026, Sec. 5:
NLST/AMOS/AbdomenAtlas train, LIDC/MIDRC/KiTS/LiTS test): a body ellipsoid (0.5), two lungs
(0.1, upper half) with thin bright vessels, a liver (0.6, lower right), a spine (0.9), each
"patient" scaled, shifted and rotated (so absolute coordinates do not tell anatomy) with a
global intensity offset and smoothed noise. A lesion is a blob whose intensity is normal
*somewhere else* but wrong where it sits (a 0.55 nodule in lung, a 0.1 cyst in liver, a 0.9
focus in soft tissue): only context tells it apart, which is what the conditions are for.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from sim.errors import ModelError

ORGANS = ("background", "body", "lung", "liver", "spine", "vessel")
LESIONS = {"nodule": ("lung", 0.55), "cyst": ("liver", 0.1), "focus": ("body", 0.9)}
"""Lesion kind -> (the organ it sits in, its intensity)."""


@dataclass
class Volumes:
    """``x`` (N, D, H, W) in [0, 1]; ``organ`` (N, D, H, W) index into ORGANS; ``lesion``
    (N, D, H, W) bool; ``clean`` the same volumes before the lesions went in."""

    x: np.ndarray
    organ: np.ndarray
    lesion: np.ndarray
    clean: np.ndarray

    @property
    def body(self) -> np.ndarray:
        """(N, D, H, W) bool: the voxels inside the body ellipsoid (``organ > 0``), the
        stand-in for the paper's crop to voxels > -500 HU (intensity 0 here is air, -1000 HU
        under the paper's [-1000, 300] HU -> [0, 1] clip). The lungs count as body: in real CT
        they lie below -500 HU, but inside the patient and inside the paper's crop box."""
        return self.organ > 0


def _anatomy(rng: np.random.Generator, shape: tuple[int, int, int]):
    """One patient's (intensity, organ labels) without lesions."""
    d, h, w = shape
    zz, yy, xx = np.meshgrid(np.linspace(-1, 1, d), np.linspace(-1, 1, h),
                             np.linspace(-1, 1, w), indexing="ij")
    s = rng.uniform(0.85, 1.15)                       # scale +-15 %
    sh = rng.uniform(-4, 4, 2) * 2 / np.array([h, w])  # shift +-4 voxels in-plane
    a = rng.uniform(-0.2, 0.2)                         # small in-plane rotation (rad)
    y0, x0 = (yy - sh[0]) / s, (xx - sh[1]) / s
    y = np.cos(a) * y0 - np.sin(a) * x0
    x = np.sin(a) * y0 + np.cos(a) * x0
    z = zz / s
    organ = np.zeros(shape, np.int8)
    body = (x / 0.9) ** 2 + (y / 0.75) ** 2 < 1
    organ[body] = 1
    for side in (-1, 1):                              # lungs in the upper half (z < 0.1)
        lung = (((x - side * 0.4) / 0.3) ** 2 + ((y + 0.05) / 0.45) ** 2
                + ((z + 0.45) / 0.6) ** 2 < 1)
        organ[lung & body] = 2
    liver = ((x + 0.35) / 0.35) ** 2 + ((y - 0.1) / 0.35) ** 2 + ((z - 0.55) / 0.45) ** 2 < 1
    organ[liver & body] = 3
    spine = ((x / 0.13) ** 2 + ((y - 0.55) / 0.13) ** 2 < 1) & body
    organ[spine] = 4
    # vessels: thin tubes along z inside the lungs
    for _ in range(4):
        cx, cy = rng.uniform(-0.6, 0.6), rng.uniform(-0.3, 0.2)
        tube = ((x - cx) ** 2 + (y - cy) ** 2 < 0.035 ** 2 * 4) & (organ == 2)
        organ[tube] = 5
    level = np.array([0.0, 0.5, 0.1, 0.6, 0.9, 0.45], np.float32)
    vol = level[organ] + rng.uniform(-0.05, 0.05) * (organ > 0)   # an age-like global offset
    return vol.astype(np.float32), organ


def _insert(rng, vol, organ, kinds, n_lesions):
    """Blobs of radius 2-5 voxels in their organ; returns (volume, lesion mask)."""
    shape = vol.shape
    mask = np.zeros(shape, bool)
    grid = np.indices(shape)
    vol = vol.copy()
    for _ in range(n_lesions):
        kind = kinds[rng.integers(len(kinds))]
        host, value = LESIONS[kind]
        where = np.argwhere(organ == ORGANS.index(host))
        if len(where) == 0:
            continue
        c = where[rng.integers(len(where))]
        r = rng.uniform(2, 5)
        blob = ((grid - c[:, None, None, None]) ** 2).sum(0) < r * r
        blob &= organ == ORGANS.index(host)
        vol[blob] = value
        mask |= blob
    return vol, mask


def make_volumes(n: int, shape=(24, 32, 32), contamination: float = 0.15,
                 lesions_per_volume=(1, 3), kinds=tuple(LESIONS), seed: int = 0,
                 noise: float = 0.03) -> Volumes:
    """``n`` seeded volumes; a volume holds lesions with probability ``contamination``
    (train: 0.15, rare but not absent, as in the paper's unlabeled CT; test: 1.0), between
    ``lesions_per_volume`` of them. ``clean`` is the same volume (same noise) without them:
    the paired views of acceptance check c."""
    if n < 1 or any(s < 8 or s % 4 for s in shape):
        raise ModelError(f"make_volumes: n = {n}, shape = {shape}; need n >= 1 and every side "
                         ">= 8 and a multiple of 4 (the UNet halves it twice)")
    if not 0 <= contamination <= 1:
        raise ModelError(f"make_volumes: contamination = {contamination}; must be in [0, 1]")
    bad = [k for k in kinds if k not in LESIONS]
    if bad or not kinds:
        raise ModelError(f"make_volumes: kinds = {kinds}; each must be one of {tuple(LESIONS)}")
    # anatomy and noise from one generator, lesions from their own: the same seed at any
    # contamination gives the same patients (check d compares 15 % with 0 % on them)
    rng = np.random.default_rng(seed)
    lrng = np.random.default_rng([seed, 1])
    xs, organs, masks, cleans = [], [], [], []
    for _ in range(n):
        vol, organ = _anatomy(rng, shape)
        hit, k = lrng.random() < contamination, lrng.integers(lesions_per_volume[0],
                                                              lesions_per_volume[1] + 1)
        les, mask = _insert(lrng, vol, organ, kinds, int(k) if hit else 0)
        nz = ndimage.gaussian_filter(rng.normal(0, 1, shape), 1.0).astype(np.float32)
        nz *= noise / max(float(nz.std()), 1e-8)
        cleans.append(np.clip(vol + nz, 0, 1))
        xs.append(np.clip(les + nz, 0, 1))
        organs.append(organ)
        masks.append(mask)
    return Volumes(np.stack(xs), np.stack(organs), np.stack(masks), np.stack(cleans))
