"""One Screener run: train f and g by dense SSL, fit the densities, score the test volumes.

Variants scored (the paper's Tab. 3/4 rows at small scale): ``gauss_none`` (marginal
Gaussian), ``gauss_sincos`` (sin-cos position condition), ``gauss_mask`` (masking-invariant
condition g: Screener with a Gaussian), ``flow_none`` and ``flow_mask`` (conditional flow),
``gauss_mask_randf`` (the same density on a random-init descriptor: the "no SSL" control).
"""
from __future__ import annotations

import numpy as np
import torch

from models.screener import model as M
from models.shared.training import seeded

VARIANTS = {"gauss_none": ("gaussian", "none", "ssl"),
            "gauss_sincos": ("gaussian", "sincos", "ssl"),
            "gauss_mask": ("gaussian", "mask", "ssl"), "flow_none": ("flow", "none", "ssl"),
            "flow_mask": ("flow", "mask", "ssl"), "gauss_mask_randf": ("gaussian", "mask", "rand")}
"""name -> (density, condition, descriptor)."""


def invariance_ratio(f, g, clean: torch.Tensor, lesioned: torch.Tensor, lesion: np.ndarray):
    """Over lesion voxels: mean |c(lesioned) - c(clean)| / mean |y(lesioned) - y(clean)|, each
    feature map standardised per channel first so the two nets' scales compare."""
    def std_diff(net, a, b):
        fa, fb = M.features(net, a), M.features(net, b)
        s = fa.std(dim=(0, 2, 3, 4), keepdim=True) + 1e-6
        return ((fb - fa) / s).norm(dim=1)
    m = torch.as_tensor(lesion)
    zero = torch.zeros_like(clean)
    dy = std_diff(f, clean, lesioned)[m].mean()
    dc = std_diff(g, M.masked_input(clean, zero), M.masked_input(lesioned, zero))[m].mean()
    return float(dc / dy), float(dc), float(dy)


def run(cfg, dev, data) -> dict:
    """Everything one card run measures; ``data`` = (train Volumes, test Volumes)."""
    train, test = data
    xt = dev.tensor(train.x[:, None])
    xs = dev.tensor(test.x[:, None])
    d = cfg.d
    with seeded(cfg.seed):
        f, g = M.UNet3d(1, d, cfg.width), M.UNet3d(2, d, cfg.width)
        f_rand = M.UNet3d(1, d, cfg.width)
        hf, hg = M.expander(d, cfg.expander), M.expander(d, cfg.expander)
    f, g, f_rand = dev.compile(f), dev.compile(g), dev.compile(f_rand)
    hf, hg = hf.to(dev.torch_device), hg.to(dev.torch_device)
    with dev.count("train/descriptor", samples=cfg.ssl_steps * cfg.batch * 2):
        loss_f = M.train_ssl(f, hf, xt, cfg, dev, masked=False, seed=cfg.seed + 1)
    with dev.count("train/condition", samples=cfg.ssl_steps * cfg.batch * 2):
        loss_g = M.train_ssl(g, hg, xt, cfg, dev, masked=True, seed=cfg.seed + 2)
    for net in (f, g, f_rand):
        net.eval().requires_grad_(False)
    nomask_t = torch.zeros_like(xt)
    nomask_s = torch.zeros_like(xs)
    with dev.count("features/train", samples=len(xt)):
        ys_t = {"ssl": M.pool(M.features(f, xt)), "rand": M.pool(M.features(f_rand, xt))}
        cs_t = {"mask": M.pool(M.features(g, M.masked_input(xt, nomask_t)))}
    with dev.count("infer/features", samples=len(xs)):
        ys_s = {"ssl": M.pool(M.features(f, xs)), "rand": M.pool(M.features(f_rand, xs))}
        cs_s = {"mask": M.pool(M.features(g, M.masked_input(xs, nomask_s)))}
    pos = M.pool(M.sincos(train.x.shape[1:]).to(dev.torch_device))
    cs_t["sincos"] = pos.expand(len(xt), -1, -1, -1, -1)
    cs_s["sincos"] = pos.expand(len(xs), -1, -1, -1, -1)
    # standardise descriptors and conditions on the training set (fixed per channel)
    for src_t, src_s, key in [(ys_t, ys_s, k) for k in ys_t] + [(cs_t, cs_s, "mask")]:
        mu = src_t[key].mean((0, 2, 3, 4), keepdim=True)
        sd = src_t[key].std((0, 2, 3, 4), keepdim=True) + 1e-6
        src_t[key], src_s[key] = (src_t[key] - mu) / sd, (src_s[key] - mu) / sd
    out = {"losses": {"descriptor": loss_f, "condition": loss_g}, "metrics": {}, "maps": {}}
    for i, name in enumerate(cfg.variants):
        kind, cond, desc = VARIANTS[name]
        dc = 0 if cond == "none" else cs_t[cond].shape[1]
        with seeded(cfg.seed + 10 + i):
            dens = dev.compile(M.make_density(kind, d, dc))
        ct = None if cond == "none" else cs_t[cond]
        cs = None if cond == "none" else cs_s[cond]
        with dev.count(f"train/density/{name}", samples=cfg.density_steps * cfg.batch):
            out["losses"][name] = M.train_density(dens, ys_t[desc], ct, cfg, cfg.seed + 3, dev)
        with dev.count(f"infer/density/{name}", samples=len(xs)):
            maps = M.score_maps(dens, ys_s[desc], cs).cpu().numpy()
        out["metrics"][f"auroc_{name}"] = M.auroc(maps, test.lesion)
        out["metrics"][f"pauroc30_{name}"] = M.auroc(maps, test.lesion, max_fpr=0.3)
        out["maps"][name] = maps
    with dev.count("infer/invariance", samples=2 * len(xs)):
        r, dc_, dy_ = invariance_ratio(f, g, dev.tensor(test.clean[:, None]), xs, test.lesion)
    out["metrics"].update(invariance_ratio=r, delta_condition=dc_, delta_descriptor=dy_)
    return out


def picture(test, maps: dict, n: int = 2) -> np.ndarray:
    """(rows, H, W): per test volume, the middle slice through its largest lesion: image,
    ground truth, then each variant's score map scaled to [0, 1] on that slice."""
    rows = []
    for v in range(min(n, len(test.x))):
        z = int(test.lesion[v].sum((1, 2)).argmax())
        rows += [test.x[v, z], test.lesion[v, z].astype(np.float32)]
        for m in maps.values():
            s = m[v, z]
            rows.append((s - s.min()) / max(float(s.max() - s.min()), 1e-8))
    return np.stack(rows).astype(np.float32)


