"""PPL's pictures as RGB arrays (N, H, W, 3) in [0, 1], for ``Trace("pictures", ...)`` and
the bench's PNG files: poses over test images (ground truth against the prediction), raw
detections with the strongest learned links, the learned template with its top links, and
an occluded image with its one-pass and iterated poses.

Drawn with PIL's ImageDraw on images upscaled ``scale`` times (32-px figures are too small
to see lines on). Coordinates are in the [-1, 1] frame of the figures (x right, y down).
"""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

GT = (60, 230, 60)          # green: ground-truth joints and tree
PRED = (240, 50, 50)        # red: prediction (detections through the regression map)
DET = (255, 220, 0)         # yellow: raw detected keypoints
LINK = (0, 220, 255)        # cyan: learned links
ITER = (255, 90, 255)       # magenta: pose after iterative inference


def _canvas(img: np.ndarray | None, scale: int, size: int = 32, dim: float = 0.75):
    """A PIL image: ``img`` (3, H, W) in [0, 1] upscaled (darkened so lines stand out), or
    white when ``img`` is None."""
    if img is None:
        return Image.new("RGB", (size * scale, size * scale), (255, 255, 255))
    arr = (np.clip(img.transpose(1, 2, 0) * dim, 0, 1) * 255).astype(np.uint8)
    return Image.fromarray(arr).resize((arr.shape[1] * scale, arr.shape[0] * scale),
                                       Image.NEAREST)


def _px(pts: np.ndarray, side: int) -> np.ndarray:
    return (np.asarray(pts, float) + 1) / 2 * side


def _skeleton(draw, pts, edges, colour, side, width=2, dot=3):
    p = _px(pts, side)
    for a, b in edges:
        draw.line([tuple(p[a]), tuple(p[b])], fill=colour, width=width)
    for x, y in p:
        draw.ellipse([x - dot, y - dot, x + dot, y + dot], fill=colour)


def _array(images) -> np.ndarray:
    return np.stack([np.asarray(im, np.float32) / 255 for im in images])


def top_links(w: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The ``k`` strongest links (i < j) of the symmetric weight matrix ``w``."""
    i, j = np.triu_indices(len(w), 1)
    order = np.argsort(-w[i, j], kind="stable")[:k]
    return [(int(i[t]), int(j[t])) for t in order]


def poses_over_images(images, gt, pred, edges, scale: int = 4) -> np.ndarray:
    """GT skeleton (green) and predicted skeleton (red) over each image (n, 3, H, W)."""
    out = []
    for img, g, p in zip(images, gt, pred, strict=True):
        c = _canvas(img, scale)
        d = ImageDraw.Draw(c)
        _skeleton(d, g, edges, GT, c.size[0])
        _skeleton(d, p, edges, PRED, c.size[0], width=1, dot=2)
        out.append(c)
    return _array(out)


def detections_with_links(images, det, w, k: int, scale: int = 4) -> np.ndarray:
    """Raw detected keypoints (yellow) joined by the ``k`` strongest learned links (cyan)."""
    links = top_links(w, k)
    out = []
    for img, p in zip(images, det, strict=True):
        c = _canvas(img, scale)
        d = ImageDraw.Draw(c)
        q = _px(p, c.size[0])
        for a, b in links:
            d.line([tuple(q[a]), tuple(q[b])], fill=LINK, width=2)
        for x, y in q:
            d.ellipse([x - 3, y - 3, x + 3, y + 3], fill=DET)
        out.append(c)
    return _array(out)


def template_with_links(templates, w, k: int, side: int = 128) -> np.ndarray:
    """Each template (N, 2) on white, its ``k`` strongest links drawn with width by weight
    (the strongest 4 px), points numbered."""
    links = top_links(w, k)
    wmax = max(float(w.max()), 1e-12)
    out = []
    for tpl in templates:
        c = Image.new("RGB", (side, side), (255, 255, 255))
        d = ImageDraw.Draw(c)
        # the template can leave [-1, 1]: fit its bounding box into the picture
        t = np.asarray(tpl, float)
        lo, hi = t.min(0), t.max(0)
        q = (t - (lo + hi) / 2) / max(float((hi - lo).max()), 1e-6) * 0.8 * side + side / 2
        for a, b in links:
            d.line([tuple(q[a]), tuple(q[b])], fill=(0, 120, 200),
                   width=max(1, round(4 * w[a, b] / wmax)))
        for n, (x, y) in enumerate(q):
            d.ellipse([x - 3, y - 3, x + 3, y + 3], fill=(200, 30, 30))
            d.text((x + 4, y - 4), str(n), fill=(0, 0, 0))
        out.append(c)
    return _array(out)


def occlusion_iterations(images, gt, one_pass, iterated, edges, scale: int = 4):
    """Occluded images with GT (green), the one-pass pose (red) and the pose after the
    iterations (magenta), all as joint skeletons."""
    out = []
    for img, g, p, q in zip(images, gt, one_pass, iterated, strict=True):
        c = _canvas(img, scale)
        d = ImageDraw.Draw(c)
        _skeleton(d, g, edges, GT, c.size[0])
        _skeleton(d, p, edges, PRED, c.size[0], width=1, dot=2)
        _skeleton(d, q, edges, ITER, c.size[0], width=1, dot=2)
        out.append(c)
    return _array(out)
