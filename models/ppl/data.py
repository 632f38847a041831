"""Procedural articulated stick figures over textured backgrounds (the digest's small-scale
stand-in for Human3.6M / Taichi).

A figure is a kinematic tree of ``K = 11`` joints (head, neck, pelvis, two elbows, two hands,
two knees, two feet) with ``K - 1 = 10`` limbs. Four pose families (stand, arms-up, T-pose,
stride) set the limb angles; each figure draws its angles with +-15 degree jitter, a scale,
a translation and a rotation. Limbs are anti-aliased capsules, one colour per limb (the
colours are the figure's appearance), over a seeded texture of gratings and smooth noise.
The reference image of a sample shows the same appearance and background in another pose
of the same family (the paper's other-video-frame reference, Sec. 3.2). Ground-truth joints
and the family id are kept for evaluation only: training never reads them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim import seeds
from sim.errors import ModelError

JOINTS = ("head", "neck", "pelvis", "l_elbow", "l_hand", "r_elbow", "r_hand",
          "l_knee", "l_foot", "r_knee", "r_foot")
EDGES = ((1, 0), (1, 2), (1, 3), (3, 4), (1, 5), (5, 6), (2, 7), (7, 8), (2, 9), (9, 10))
"""(parent, child) per limb; the tree the link weights should recover (check c)."""
LENGTHS = np.array([0.20, 0.50, 0.30, 0.28, 0.30, 0.28, 0.38, 0.36, 0.38, 0.36])
"""Limb lengths per edge, before the figure's scale (the figure is ~1.44 units tall)."""
FAMILIES = ("stand", "arms_up", "t_pose", "stride")
# limb direction angles per edge (0: straight down in image coordinates, +pi/2: to the right)
_ANGLES = {
    "stand":   [np.pi, 0.0, -0.3, -0.2, 0.3, 0.2, -0.15, -0.1, 0.15, 0.1],
    "arms_up": [np.pi, 0.0, -2.6, -2.8, 2.6, 2.8, -0.15, -0.1, 0.15, 0.1],
    "t_pose":  [np.pi, 0.0, -1.57, -1.57, 1.57, 1.57, -0.15, -0.1, 0.15, 0.1],
    "stride":  [np.pi, 0.0, -0.5, -0.2, 0.5, 0.8, -0.5, -0.2, 0.5, 0.3],
}
DATASETS = ("procedural-figures",)


@dataclass
class Figures:
    """Images (n, 3, H, W) in [0, 1], references of the same shape, GT joints (n, K, 2) in
    [-1, 1] (x, y), family ids (n,)."""

    images: np.ndarray
    refs: np.ndarray
    joints: np.ndarray
    family: np.ndarray


@dataclass
class FigureData:
    """The train and test splits; ``source`` says where they came from."""

    train: Figures
    test: Figures
    source: str


def poses(family: np.ndarray, rng: np.random.Generator, jitter_deg: float = 15.0,
          scale=(0.6, 0.9), shift: float = 0.15, rot_deg: float = 10.0) -> np.ndarray:
    """Joint positions (n, K, 2) in [-1, 1] for the given family ids, with random jitter."""
    n = len(family)
    base = np.array([_ANGLES[f] for f in FAMILIES])[family]              # (n, 10)
    ang = base + np.deg2rad(rng.uniform(-jitter_deg, jitter_deg, base.shape))
    ang[:, 1] = np.deg2rad(rng.uniform(-5, 5, n))                         # torso near upright
    ang = ang + np.deg2rad(rng.uniform(-rot_deg, rot_deg, (n, 1)))        # whole-body rotation
    s = rng.uniform(*scale, (n, 1)) * 1.2
    vec = np.stack([np.sin(ang), np.cos(ang)], -1) * (LENGTHS * s)[..., None]   # (n, 10, 2)
    j = np.zeros((n, len(JOINTS), 2))
    for e, (p, c) in enumerate(EDGES):                                    # tree order
        j[:, c] = j[:, p] + vec[:, e]
    centre = 0.5 * (j.max(1) + j.min(1))                                 # bounding-box centre
    return j - centre[:, None] + rng.uniform(-shift, shift, (n, 1, 2))


def textures(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Seeded clutter (n, 3, H, W): three tinted gratings plus upsampled noise, mid contrast."""
    u = np.linspace(-1, 1, size)
    yy, xx = np.meshgrid(u, u, indexing="ij")
    freq = rng.uniform(2, 8, (n, 3, 1, 1))
    theta = rng.uniform(0, np.pi, (n, 3, 1, 1))
    phase = rng.uniform(0, 2 * np.pi, (n, 3, 1, 1))
    g = np.sin(freq * np.pi * (np.cos(theta) * xx + np.sin(theta) * yy) + phase).mean(1)
    coarse = rng.uniform(-1, 1, (n, 4, 4))
    noise = np.kron(coarse, np.ones((size // 4, size // 4)))[:, :size, :size]
    lum = 0.5 + 0.15 * g + 0.1 * noise                                     # (n, H, W)
    tint = rng.uniform(0.6, 1.0, (n, 3, 1, 1))
    return np.clip(lum[:, None] * tint, 0, 1)


def render(joints: np.ndarray, colours: np.ndarray, background: np.ndarray,
           width_px: float) -> np.ndarray:
    """Draw each limb as an anti-aliased capsule of ``width_px`` over ``background``.

    Coverage is ``clip(r + 0.5 - d, 0, 1)`` for pixel distance ``d`` to the segment (one
    pixel of soft edge); later limbs paint over earlier ones; the head is a wider disc.
    """
    n, _, size, _ = background.shape
    c = (np.arange(size) + 0.5) / size * 2 - 1
    yy, xx = np.meshgrid(c, c, indexing="ij")
    grid = np.stack([xx, yy], -1).reshape(1, -1, 2)                        # (1, HW, 2)
    img = background.copy()
    px = size / 2.0                                                        # pixels per unit
    for e, (p, q) in enumerate(EDGES):
        a, b = joints[:, p][:, None], joints[:, q][:, None]                # (n, 1, 2)
        ab = b - a
        t = np.clip(((grid - a) * ab).sum(-1) / np.maximum((ab ** 2).sum(-1), 1e-9), 0, 1)
        d = np.linalg.norm(grid - a - t[..., None] * ab, axis=-1) * px     # (n, HW) pixels
        r = width_px * (1.6 if e == 0 else 1.0) / 2
        cov = np.clip(r + 0.5 - d, 0, 1).reshape(n, 1, size, size)
        img = img * (1 - cov) + colours[:, e, :, None, None] * cov
    return img.astype(np.float32)


def make(n: int, size: int, seed: int, width_px: float | None = None,
         ref_family: str = "same") -> Figures:
    """``n`` figures of ``size`` x ``size`` pixels, all from ``seed``. The reference shows
    the same look in a pose of the same family (``ref_family="same"``) or of any family
    (``"any"``: the reference's figure then sits far from the target's more often, so
    copying it reconstructs less and the keypoints must carry the pose)."""
    if n < 1 or size < 16 or size % 4:
        raise ModelError(f"figures: n = {n}, size = {size}; need n >= 1 and size >= 16, a "
                         "multiple of 4")
    rng = np.random.default_rng([seed, 20])
    family = rng.integers(0, len(FAMILIES), n)
    joints = poses(family, rng)
    other = rng.integers(0, len(FAMILIES), n)
    ref_joints = poses(family if ref_family == "same" else other, rng)
    colours = rng.uniform(0.0, 1.0, (n, len(EDGES), 3))
    colours[:, 0] = colours[:, 1]                                          # head = torso colour
    bg = textures(n, size, rng)
    w = width_px if width_px is not None else max(1.5, size / 16)
    return Figures(render(joints, colours, bg, w), render(ref_joints, colours, bg, w),
                   joints.astype(np.float32), family)


def load(dataset: str, cfg) -> FigureData:
    """``cfg.train`` / ``cfg.test`` figures at ``cfg.size`` pixels, from the named streams
    ``("data", "train")`` and ``("data", "test")`` of ``cfg.seed`` (so no test figure
    repeats a training one)."""
    if dataset not in DATASETS:
        raise ModelError(f"ppl: dataset {dataset!r}: only {DATASETS} is supported")
    w, rf = getattr(cfg, "limb_px", 0.0) or None, getattr(cfg, "ref_family", "same")
    tr = make(cfg.train, cfg.size, seeds.child(cfg.seed, "data", "train"), w, rf)
    te = make(cfg.test, cfg.size, seeds.child(cfg.seed, "data", "test"), w, rf)
    return FigureData(tr, te, f"procedural: figures(size={cfg.size}, seed={cfg.seed})")
