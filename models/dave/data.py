"""Procedural document/web pages rendered with PIL, their parse targets, and the
Fashion-MNIST "figures" pasted on them (the small-scale plan of DAVE, Huang et al. 2026,
Sec. 3: doc/web pages for MAE (Stage 1) and labelled parses for Stage 2).

Each page is a white ``side x side`` grey image with up to ``MAX_ELEMENTS`` elements:
a nav bar, a title bar, text lines, a button and one figure (a Fashion-MNIST item). The
target sequence is ``BOS, [cls, x0, y0, x1, y1] per element, FIG, fashion class, EOS``,
coordinates quantised to ``BINS`` bins; the reading order is top-to-bottom (``order="reading"``)
or by class (``order="class"``, the third decoder's different output order).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from models.shared import datasets
from sim import seeds
from sim.errors import ModelError

CLASSES = ("background", "nav", "title", "text", "button", "figure")
BINS = 32
PAD, BOS, EOS, FIG = 0, 1, 2, 3
CLS0 = 4                                   # element class c -> token CLS0 + c - 1
COORD0 = CLS0 + len(CLASSES) - 1           # coordinate bin b -> token COORD0 + b
FASH0 = COORD0 + BINS                      # fashion class k -> token FASH0 + k
VOCAB = FASH0 + 10
MAX_ELEMENTS = 6
SEQ_LEN = 1 + 5 * MAX_ELEMENTS + 3         # BOS, boxes, FIG, class, EOS
WORDS = ("page", "home", "menu", "data", "table", "chart", "login", "price", "news",
         "about", "help", "cart", "item", "view", "next", "open", "save", "edit")
ORDERS = ("reading", "class")


def render_page(rng: np.random.Generator, figure: np.ndarray, side: int = 64):
    """One page: (image (side, side) float32 in [0, 1], per-pixel class map (side, side)
    int64, elements [(cls, x0, y0, x1, y1)] in pixels, x1/y1 exclusive)."""
    img = Image.new("L", (side, side), 255)
    cmap = np.zeros((side, side), np.int64)
    draw = ImageDraw.Draw(img)
    elems = []
    y = 0
    s = side / 64.0

    def put(cls, x0, y0, x1, y1):
        elems.append((cls, x0, y0, x1, y1))
        cmap[y0:y1, x0:x1] = cls

    if rng.random() < 0.6:                         # web-style nav bar (a dark band)
        h = int(6 * s)
        draw.rectangle([0, 0, side - 1, h - 1], fill=int(rng.integers(40, 120)))
        put(1, 0, 0, side, h)
        y = h + int(2 * s)
    h = int(8 * s)                                 # title bar: a grey band with a word
    w = int(rng.integers(side // 2, side - 4))
    x0 = int(rng.integers(0, side - w))
    draw.rectangle([x0, y, x0 + w - 1, y + h - 1], fill=int(rng.integers(150, 210)))
    draw.text((x0 + 1, y - 2), str(rng.choice(WORDS)).upper(), fill=0)
    put(2, x0, y, x0 + w, y + h)
    y += h + int(2 * s)
    fig_side = int(24 * s)                         # figure on the left or the right
    fig_x = 0 if rng.random() < 0.5 else side - fig_side
    fig_y = y
    fig = Image.fromarray((255 - figure * 255).astype(np.uint8)).resize((fig_side, fig_side))
    img.paste(fig, (fig_x, fig_y))
    put(5, fig_x, fig_y, fig_x + fig_side, fig_y + fig_side)
    tx0 = fig_side + 2 if fig_x == 0 else 1        # text column beside the figure
    tx1 = side - 1 if fig_x == 0 else side - fig_side - 2
    ty = y
    for _ in range(int(rng.integers(1, 3))):       # text lines of random words
        lh = int(7 * s)
        draw.text((tx0, ty - 2), " ".join(rng.choice(WORDS, 2)), fill=0)
        put(3, tx0, ty, tx1, ty + lh)
        ty += lh + int(2 * s)
    by = fig_y + fig_side + int(3 * s)             # a button below
    bw, bh = int(rng.integers(16, 28) * s), int(8 * s)
    if by + bh <= side:
        bx = int(rng.integers(0, side - bw))
        draw.rectangle([bx, by, bx + bw - 1, by + bh - 1], outline=0,
                       fill=int(rng.integers(200, 240)))
        put(4, bx, by, bx + bw, by + bh)
    arr = np.asarray(img, np.float32) / 255.0
    arr = np.clip(arr + rng.normal(0, 0.002, arr.shape).astype(np.float32), 0, 1)
    return arr, cmap, elems


def quantise(v: int, side: int) -> int:
    """Pixel coordinate 0..side -> bin 0..BINS-1."""
    return min(BINS - 1, int(v * BINS // (side + 1)))


def encode(elems, fashion_class: int, side: int, order: str = "reading") -> np.ndarray:
    """The token sequence (SEQ_LEN,) of one page, PAD after EOS."""
    if order not in ORDERS:
        raise ModelError(f"encode order = {order!r}: must be one of {ORDERS}")
    key = (lambda e: (e[2], e[1])) if order == "reading" else (lambda e: (e[0], e[2], e[1]))
    seq = [BOS]
    for c, x0, y0, x1, y1 in sorted(elems, key=key):
        seq += [CLS0 + c - 1] + [COORD0 + quantise(v, side) for v in (x0, y0, x1, y1)]
    seq += [FIG, FASH0 + int(fashion_class), EOS]
    out = np.full(SEQ_LEN, PAD, np.int64)
    out[:len(seq)] = seq
    return out


def decode(seq) -> tuple[list[tuple[int, int, int, int, int]], int]:
    """Tokens -> ([(cls, bx0, by0, bx1, by1)] in bins, fashion class or -1); malformed
    groups are dropped (a greedy decoder may emit them)."""
    boxes, fcls, i, seq = [], -1, 1 if len(seq) and seq[0] == BOS else 0, list(seq)
    while i < len(seq):
        t = seq[i]
        if t == EOS or t == PAD:
            break
        if t == FIG and i + 1 < len(seq) and FASH0 <= seq[i + 1] < VOCAB:
            fcls = seq[i + 1] - FASH0
            i += 2
            continue
        g = seq[i + 1:i + 5]
        if CLS0 <= t < COORD0 and len(g) == 4 and all(COORD0 <= v < FASH0 for v in g):
            boxes.append((t - CLS0 + 1, *(v - COORD0 for v in g)))
            i += 5
            continue
        i += 1
    return boxes, fcls


def iou(a, b) -> float:
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def box_f1(pred, true, thr: float = 0.5) -> tuple[int, int, int]:
    """(true positives, predictions, ground truths): greedy one-to-one matching of same-class
    boxes at IoU >= thr (boxes as (cls, x0, y0, x1, y1))."""
    used, tp = set(), 0
    for p in pred:
        best, bj = thr, -1
        for j, t in enumerate(true):
            if j not in used and t[0] == p[0]:
                v = iou(p[1:], t[1:])
                if v >= best:
                    best, bj = v, j
        if bj >= 0:
            used.add(bj)
            tp += 1
    return tp, len(pred), len(true)


@dataclass(frozen=True)
class Pages:
    images: np.ndarray      # (N, side, side) float32
    classmap: np.ndarray    # (N, side, side) int64
    seqs: dict              # order -> (N, SEQ_LEN) int64
    boxes: list             # per page [(cls, bins...)] (reading order)
    fashion: np.ndarray     # (N,) figure class


def make_pages(n: int, seed: int, fashion_x: np.ndarray, fashion_y: np.ndarray,
               side: int = 64) -> Pages:
    """``n`` seeded pages, each with a figure drawn from ``fashion_x`` (N, 28, 28)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(fashion_x), n)
    imgs = np.empty((n, side, side), np.float32)
    cmaps = np.empty((n, side, side), np.int64)
    seqs = {o: np.empty((n, SEQ_LEN), np.int64) for o in ORDERS}
    boxes = []
    for i in range(n):
        imgs[i], cmaps[i], el = render_page(rng, fashion_x[idx[i]], side)
        for o in ORDERS:
            seqs[o][i] = encode(el, fashion_y[idx[i]], side, o)
        boxes.append(decode(seqs["reading"][i])[0])
    return Pages(imgs, cmaps, seqs, boxes, fashion_y[idx].astype(np.int64))


@dataclass(frozen=True)
class DaveData:
    unlabeled: Pages
    labeled: Pages
    test: Pages
    fashion_x: np.ndarray   # generalist training images (N, 28, 28)
    fashion_y: np.ndarray
    source: str


def unlabeled_seed(seed: int) -> int:
    """The seed of run ``seed``'s unlabeled pages (also the pages of check a's diagnosis)."""
    return seeds.child(seed, "data", "unlabeled")


def load(cfg) -> DaveData:
    """Fashion-MNIST train images for the figures (and the generalist), test images for
    the test pages' figures, so no test figure was seen in training. Each split's pages
    come from its own named stream of ``cfg.seed`` (``("data", <split>)``)."""
    fm = datasets.fashion_mnist(limit_train=cfg.n_generalist + 2000, flatten=False)
    xtr, ytr = fm.x_train.reshape(-1, 28, 28), fm.y_train
    xte, yte = fm.x_test.reshape(-1, 28, 28), fm.y_test
    # pages of the config's side (the model is built for it: they were always 64 px)
    side = cfg.side
    return DaveData(make_pages(cfg.n_unlabeled, unlabeled_seed(cfg.seed), xtr, ytr, side),
                    make_pages(cfg.n_labeled, seeds.child(cfg.seed, "data", "labeled"),
                               xtr, ytr, side),
                    make_pages(cfg.n_test, seeds.child(cfg.seed, "data", "test"), xte, yte,
                               side),
                    xtr[:cfg.n_generalist], ytr[:cfg.n_generalist], fm.source)


def patch_std(images: np.ndarray, patch: int) -> np.ndarray:
    """Per-patch pixel std (N, n_patches): the low-variance diagnosis of Sec. 3.1 / Fig. 3."""
    n, h, w = images.shape
    p = images.reshape(n, h // patch, patch, w // patch, patch).transpose(0, 1, 3, 2, 4)
    return p.reshape(n, -1, patch * patch).std(-1)
