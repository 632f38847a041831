"""Parsed pages drawn for a reader: each picture is a test page with its ground-truth
boxes (left) next to the boxes a decoder parsed from it (right), class-coloured and
lettered, with the figure's Fashion class written above each half. RGB float arrays in
[0, 1] for a ``pictures`` trace (the HTML report) and for the bench's PNG files.
"""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from models.dave import data as D

FASHION = ("T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Boot")
COLOURS = {1: (230, 120, 0), 2: (200, 0, 200), 3: (0, 110, 230), 4: (0, 170, 60),
           5: (220, 0, 0)}                     # nav, title, text, button, figure
LETTER = {1: "N", 2: "T", 3: "x", 4: "B", 5: "F"}
SCALE = 3                                       # 64 px pages drawn at 192 px
CAPTION = 12                                    # px of caption strip above each half


def _half(page: np.ndarray, boxes, fcls: int, title: str, side: int) -> Image.Image:
    """One page with ``boxes`` (cls, bin x0, y0, x1, y1) drawn over it, under a caption."""
    big = side * SCALE
    im = Image.new("RGB", (big, big + CAPTION), (255, 255, 255))
    g = (np.clip(page, 0, 1) * 255).astype(np.uint8)
    im.paste(Image.fromarray(g).convert("RGB").resize((big, big), Image.NEAREST),
             (0, CAPTION))
    dr = ImageDraw.Draw(im)
    px = big / D.BINS                           # bin b spans [b, b + 1) * side / BINS px
    for c, x0, y0, x1, y1 in boxes:
        col = COLOURS.get(c, (0, 0, 0))
        r = [x0 * px, CAPTION + y0 * px, max(x0 + 1, x1) * px - 1,
             CAPTION + max(y0 + 1, y1) * px - 1]
        dr.rectangle(r, outline=col, width=2)
        dr.text((r[0] + 3, r[1] + 1), LETTER.get(c, "?"), fill=col)
    name = FASHION[fcls] if 0 <= fcls < len(FASHION) else "none"
    dr.text((2, 0), f"{title}: {name}", fill=(0, 0, 0))
    return im


def parsed_pages(images: np.ndarray, true_boxes, true_fashion, pred_seqs,
                 n: int = 6) -> np.ndarray:
    """(n, H, W, 3) floats in [0, 1]: ground truth | prediction for the first ``n`` pages;
    ``pred_seqs`` are the decoder's token sequences (``data.decode`` reads them)."""
    side = images.shape[-1]
    out = []
    for i in range(min(n, len(images))):
        boxes, fcls = D.decode(pred_seqs[i])
        left = _half(images[i], true_boxes[i], int(true_fashion[i]), "truth", side)
        right = _half(images[i], boxes, fcls, "parsed", side)
        both = Image.new("RGB", (left.width * 2 + 4, left.height), (128, 128, 128))
        both.paste(left, (0, 0))
        both.paste(right, (left.width + 4, 0))
        out.append(np.asarray(both, np.float32) / 255.0)
    return np.stack(out)
