"""One Screener run: train f and g by dense SSL, fit the densities, score the test volumes.

The method's parts (UNet, DenseVICReg, the densities) are in ``model.py``; this module is
the run that puts them together, top to bottom (Goncharov et al., ICLR 2026, Sec. 3-5).

Variants scored (the paper's Tab. 3/4 rows at small scale): ``gauss_none`` (marginal
Gaussian), ``gauss_sincos`` (sin-cos position condition), ``gauss_mask`` (masking-invariant
condition g: Screener with a Gaussian), ``flow_none`` and ``flow_mask`` (conditional flow),
``gauss_mask_randf`` (the same density on a random-init descriptor: the "no SSL" control).
"""
from __future__ import annotations

import contextlib

import numpy as np
import torch

from models.screener import model as M
from models.shared.training import seeded
from sim import seeds

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


def run(cfg, dev, data, progress=None) -> dict:
    """Everything one card run measures; ``data`` = (train Volumes, test Volumes).

    Counted (``cfg.count_steps`` first steps of each loop; the rest runs uncounted, since
    the dispatch-mode counting costs ~20x a step and every step costs the same ops): f's and
    g's SSL steps, f and g on one batch of training volumes and on every test volume, the
    deployed variant's (``cfg.deployed``) density steps and its scoring of the test volumes.
    The other variants (the paper's ablations) and the invariance probe run uncounted.
    ``progress(done, total, {loop: loss})`` every 10 training steps over all the loops.
    """
    train, test = data
    total = 2 * cfg.ssl_steps + len(cfg.variants) * cfg.density_steps
    done = [0]

    def ticker(loop: str):
        def on_step(loss: float):
            done[0] += 1
            if progress is not None and (done[0] % 10 == 0 or done[0] == total):
                progress(done[0], total, {loop: loss})
        return on_step
    xt = dev.tensor(train.x[:, None])
    xs = dev.tensor(test.x[:, None])
    d = cfg.d
    with seeded(seeds.child(cfg.seed, "init")):
        f, g = M.UNet3d(1, d, cfg.width), M.UNet3d(2, d, cfg.width)
        f_rand = M.UNet3d(1, d, cfg.width)
        hf, hg = M.expander(d, cfg.expander), M.expander(d, cfg.expander)
    f, g, f_rand = dev.compile(f), dev.compile(g), dev.compile(f_rand)
    hf, hg = hf.to(dev.torch_device), hg.to(dev.torch_device)
    loss_f = M.train_ssl(f, hf, xt, cfg, dev, masked=False,
                         seed=seeds.child(cfg.seed, "ssl", "descriptor"),
                         scope="train/descriptor", on_step=ticker("descriptor"))
    loss_g = M.train_ssl(g, hg, xt, cfg, dev, masked=True,
                         seed=seeds.child(cfg.seed, "ssl", "condition"),
                         scope="train/condition", on_step=ticker("condition"))
    for net in (f, g, f_rand):
        net.eval().requires_grad_(False)
    nomask_t = torch.zeros_like(xt)
    nomask_s = torch.zeros_like(xs)
    b = min(cfg.batch, len(xt))
    with dev.count("features/train", samples=b):   # one batch counted; the rest the same
        y0 = M.features(f, xt[:b])
        c0 = M.features(g, M.masked_input(xt[:b], nomask_t[:b]))
    rest = len(xt) > b   # a training set of one batch or less has no uncounted rest
    ys_t = {"ssl": M.pool(torch.cat([y0, M.features(f, xt[b:])]) if rest else y0),
            "rand": M.pool(M.features(f_rand, xt))}
    cs_t = {"mask": M.pool(torch.cat([c0, M.features(g, M.masked_input(
        xt[b:], nomask_t[b:]))]) if rest else c0)}
    with dev.count("infer/features", samples=len(xs)):
        ys_s = {"ssl": M.pool(M.features(f, xs))}
        cs_s = {"mask": M.pool(M.features(g, M.masked_input(xs, nomask_s)))}
    ys_s["rand"] = M.pool(M.features(f_rand, xs))
    pos = M.pool(M.sincos(train.x.shape[1:]).to(dev.torch_device))
    cs_t["sincos"] = pos.expand(len(xt), -1, -1, -1, -1)
    cs_s["sincos"] = pos.expand(len(xs), -1, -1, -1, -1)
    # standardise descriptors and conditions on the training set (fixed per channel)
    for src_t, src_s, key in [(ys_t, ys_s, k) for k in ys_t] + [(cs_t, cs_s, "mask")]:
        mu = src_t[key].mean((0, 2, 3, 4), keepdim=True)
        sd = src_t[key].std((0, 2, 3, 4), keepdim=True) + 1e-6
        src_t[key], src_s[key] = (src_t[key] - mu) / sd, (src_s[key] - mu) / sd
    # every variant sees the same noise and batches (a paired comparison of densities)
    density_order = seeds.child(cfg.seed, "density", "train")
    out = {"losses": {"descriptor": loss_f, "condition": loss_g}, "metrics": {}, "maps": {}}
    for name in cfg.variants:
        kind, cond, desc = VARIANTS[name]
        deployed = name == cfg.deployed
        dc = 0 if cond == "none" else cs_t[cond].shape[1]
        # the same init whichever variants run with it: the stream is named by the variant
        with seeded(seeds.child(cfg.seed, "init", "density", name)):
            dens = M.make_density(kind, d, dc)
        dens = dev.compile(dens) if deployed else dens.to(dev.torch_device)
        ct = None if cond == "none" else cs_t[cond]
        cs = None if cond == "none" else cs_s[cond]
        out["losses"][name] = M.train_density(dens, ys_t[desc], ct, cfg, density_order, dev,
                                              scope=f"train/density/{name}",
                                              counted=cfg.count_steps if deployed else 0,
                                              on_step=ticker(name))
        ctx = dev.count(f"infer/density/{name}", samples=len(xs)) if deployed \
            else contextlib.nullcontext()
        with ctx:
            maps = M.score_maps(dens, ys_s[desc], cs)
        if deployed:   # NeuroBench's model: the deployed variant's descriptor, condition
            # and density, not the random-init control nor the SSL expanders
            for net in ({"ssl": f, "rand": f_rand}[desc], *([g] if cond == "mask" else []),
                        dens):
                dev.deploy(net)
        maps = maps.cpu().numpy()
        # over body voxels only (the paper's crop to > -500 HU): air is no negative
        out["metrics"][f"auroc_{name}"] = M.auroc(maps, test.lesion, test.body)
        out["metrics"][f"pauroc30_{name}"] = M.auroc(maps, test.lesion, test.body,
                                                      max_fpr=0.3)
        out["maps"][name] = maps
    r, dc_, dy_ = invariance_ratio(f, g, dev.tensor(test.clean[:, None]), xs, test.lesion)
    out["metrics"].update(invariance_ratio=r, delta_condition=dc_, delta_descriptor=dy_)
    return out
