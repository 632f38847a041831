"""Screener's pictures: per test volume, the axial slice through its largest lesion with
each variant's score map as heat over it and the ground-truth outline (the card's
``anomaly_maps`` traces and the bench's PNG)."""
from __future__ import annotations

import numpy as np


def _outline(mask: np.ndarray) -> np.ndarray:
    """The boundary pixels of a 2-D bool mask (mask minus its 4-neighbour erosion)."""
    inner = mask.copy()
    inner[1:] &= mask[:-1]
    inner[:-1] &= mask[1:]
    inner[:, 1:] &= mask[:, :-1]
    inner[:, :-1] &= mask[:, 1:]
    return mask & ~inner


def heat_panel(img: np.ndarray, heat: np.ndarray | None, lesion: np.ndarray,
               zoom: int = 4) -> np.ndarray:
    """(H*zoom, W*zoom, 3): the grey slice, ``heat`` in [0, 1] blended over it in the
    inferno colours (alpha grows with the heat, so cold voxels show the plain anatomy), and the
    ground-truth lesion outline in cyan (drawn at the zoomed resolution, one pixel wide)."""
    from matplotlib import colormaps
    up = np.ones((zoom, zoom))
    grey = np.kron(np.clip(img, 0, 1), up)[..., None].repeat(3, axis=2)
    rgb = grey
    if heat is not None:
        h = np.kron(np.clip(heat, 0, 1), up)
        a = (0.85 * h)[..., None]
        rgb = (1 - a) * grey + a * colormaps["inferno"](h)[..., :3]
    rgb = rgb.copy()
    rgb[_outline(np.kron(lesion, up).astype(bool))] = (0.0, 1.0, 1.0)
    return np.clip(rgb, 0, 1)


def pictures(test, maps: dict, n: int = 4, zoom: int = 4, cols: int = 4) -> np.ndarray:
    """(n, rows * (H*zoom + 2), cols * (W*zoom + 2), 3): one picture per test volume, the
    axial slice through its largest lesion, as a grid of panels (``cols`` a row, read left
    to right, top to bottom): the image with the lesion outline, then each variant's score
    map (in ``maps`` order) as heat over that slice with the same outline; empty slots
    white. Each map is scaled to [0, 1] between its 1st and 99.5th percentile over the whole
    volume, so a panel shows how far the lesion stands out of that volume's normal tissue."""
    out = []
    for v in range(min(n, len(test.x))):
        z = int(test.lesion[v].sum((1, 2)).argmax())
        panels = [heat_panel(test.x[v, z], None, test.lesion[v, z], zoom)]
        for m in maps.values():
            lo, hi = np.percentile(m[v], [1, 99.5])
            panels.append(heat_panel(test.x[v, z], (m[v, z] - lo) / max(hi - lo, 1e-8),
                                     test.lesion[v, z], zoom))
        h, w = panels[0].shape[:2]
        rows = -(-len(panels) // cols)
        grid = np.ones((rows * (h + 2), cols * (w + 2), 3))
        for k, p in enumerate(panels):
            r, c = divmod(k, cols)
            grid[r * (h + 2):r * (h + 2) + h, c * (w + 2):c * (w + 2) + w] = p
        out.append(grid)
    return np.stack(out).astype(np.float32)
