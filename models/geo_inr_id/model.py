"""Intrinsic dimension of small geographic INRs (location encoders), top to bottom.

Rao et al., "Measuring the intrinsic dimension of Earth representations", ICLR 2026,
arXiv:2511.02101. The paper measures frozen location encoders ``f: (lon, lat) -> R^D`` by the
intrinsic dimension (ID) of their embedding manifold: global MLE, TwoNN and FisherS
IDs of the embeddings of uniform land points, pointwise MLE maps (k = 100), and
relates the ID to encoder resolution, to linear/MLP probe performance
("representativeness") and the ID of the probe's penultimate activations to its
performance ("task alignment"). Without the paper's pretrained weights this room
builds its own small encoders and pre-trains them on procedural fields (``data.py``):

* ``sh``: real spherical harmonics up to degree ``L`` (SatCLIP's positional encoding, its
  resolution ``L``) -> MLP;
* ``rff``: random Fourier features ``[cos 2pi B u, sin 2pi B u]`` of the unit vector ``u``,
  ``B ~ N(0, sigma^2)`` (GeoCLIP's RFF, resolution ``sigma``) -> MLP;
* ``grid``: "grid-cell" ``sin/cos(b s lon), sin/cos(b s lat)`` for ``s = 1..S`` (CSP's
  Space2Vec-style encoding at integer frequencies, base frequency ``b``, resolution ``S``) ->
  MLP; for ``b > 1`` every feature repeats ``b`` times around a parallel (the stripes the paper
  sees in CSP's local ID map);
* ``siren``: a SIREN on ``u`` (Sitzmann et al. 2020, Sec. 3.2 initialisation), first-layer
  frequency ``omega_0`` = resolution (SINR/SatCLIP's SIREN, without the harmonics).

Each MLP is ``Linear(F, 256) - act - Linear(256, 256)``; the 256-d output is the embedding
(ReLU for sh/rff/grid, sine for siren); a linear head on it regresses the 24 pre-training
fields (Adam, MSE). Readings where the paper is silent, fixed here: embeddings are taken
in fp32 and cast to fp64 for the estimators; probes see the embeddings standardised with the
probe-training half's statistics; the ridge penalty is ``ridge * n_train`` on standardised
features; the MLP probe is ``Linear(256, hidden) - ReLU - Linear(hidden, 8)`` (the paper's head
with one hidden layer), trained full-batch with Adam; its "penultimate activations" are the
ReLU outputs on the test half; the TwoNN of those drops rows with a zero nearest-neighbour
distance (dead-ReLU duplicates), as scikit-dimension does with a warning.

Ledger scopes (TorchDevice): ``train/pretrain/features`` (the positional features of every
pre-training point, once), ``train/pretrain`` (MLP and head forward, backward, Adam; under
``train`` so the report prices it as the training: energy per pre-training sample, the
cached features included), ``pretrain/fit`` (the fitted head's R^2 on the pre-training set),
``embed`` (the frozen encoder on the evaluation points), ``id/knn`` (the chunked distance
GEMM and top-k), ``id/mle_twonn``, ``id/fishers/{pca,eigh,separability}``, ``id/local``
(pointwise MLE at k = 100), ``probe/ridge`` (+ ``probe/ridge/solve``, the counted LU solve),
``probe/mlp`` (training and test), ``probe/activations_id``.
"""
from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from models.geo_inr_id import estimators as est
from models.geo_inr_id.sphere import angular_distance, n_harmonics, real_sph_harm
from models.shared.training import seeded
from sim import seeds
from sim.errors import ModelError
from sim.traces import Trace, curve

if TYPE_CHECKING:
    from sim.torch_engine.engine import TorchDevice

FAMILIES = ("sh", "rff", "grid", "siren")


class Uncounted:
    """A TorchDevice stand-in that runs on the same torch device and counts nothing (the
    study's repeated runs with ``count=False``: counting costs a Python call per aten op);
    its ledger is a fresh one that is thrown away."""

    def __init__(self, dev):
        from sim.ledger import Ledger
        self.dev, self.ledger, self.torch_device = dev, Ledger(), dev.torch_device

    def count(self, scope: str, samples: int = 0):
        return contextlib.nullcontext()

    def compile(self, module):
        return module.to(self.torch_device)

    def tensor(self, x, dtype=torch.float32):
        return self.dev.tensor(x, dtype)

    def run(self, module, x, scope: str = "infer"):
        with torch.no_grad():
            return module(x)


class Sine(nn.Module):
    """``sin(omega * x)``: SIREN's activation."""

    def __init__(self, omega: float):
        super().__init__()
        self.omega = float(omega)

    def forward(self, x):
        return torch.sin(self.omega * x)


class LocationEncoder(nn.Module):
    """Positional features of one family -> 2-layer MLP -> 256-d embedding."""

    def __init__(self, family: str, resolution: float, base: int = 1, width: int = 256,
                 embed: int = 256, n_rff: int = 128):
        super().__init__()
        if family not in FAMILIES:
            raise ModelError(f"LocationEncoder family = {family!r}; expected one of "
                             f"{', '.join(FAMILIES)}")
        self.family, self.resolution, self.base = family, float(resolution), int(base)
        if family == "sh":
            if resolution < 1 or resolution != int(resolution):
                raise ModelError(f"sh encoder: degree L = {resolution}; expected an integer "
                                 ">= 1")
            n_in = n_harmonics(int(resolution))
        elif family == "rff":
            self.register_buffer("freqs", torch.randn(3, n_rff) * resolution)   # (3, R)
            n_in = 2 * n_rff
        elif family == "grid":
            if resolution < 1 or resolution != int(resolution) or base < 1:
                raise ModelError(f"grid encoder: S = {resolution}, base = {base}; expected "
                                 "integers >= 1")
            self.register_buffer("freqs", base * torch.arange(1, int(resolution) + 1,
                                                              dtype=torch.float32))
            n_in = 4 * int(resolution)
        else:
            n_in = 3
        if family == "siren":
            first, hidden = nn.Linear(3, width), nn.Linear(width, embed)
            with torch.no_grad():   # Sitzmann et al. Sec. 3.2: U(-1/n, 1/n), then sqrt(6/n)/30
                first.weight.uniform_(-1 / 3, 1 / 3)
                hidden.weight.uniform_(-math.sqrt(6 / width) / 30, math.sqrt(6 / width) / 30)
            self.mlp = nn.Sequential(first, Sine(resolution), hidden, Sine(30.0))
        else:
            self.mlp = nn.Sequential(nn.Linear(n_in, width), nn.ReLU(), nn.Linear(width, embed))

    def features(self, lonlat: torch.Tensor) -> torch.Tensor:
        """(N, 2) lon/lat radians -> (N, F) positional features of the family."""
        lon, lat = lonlat[:, 0], lonlat[:, 1]
        if self.family == "sh":
            return real_sph_harm(lonlat, int(self.resolution)) * math.sqrt(4 * math.pi)
        u = torch.stack([torch.cos(lat) * torch.cos(lon), torch.cos(lat) * torch.sin(lon),
                         torch.sin(lat)], 1)                          # (N, 3)
        if self.family == "rff":
            proj = 2 * math.pi * (u @ self.freqs)                      # (N, R)
            return torch.cat([torch.cos(proj), torch.sin(proj)], 1)
        if self.family == "grid":
            a, b = lon[:, None] * self.freqs, lat[:, None] * self.freqs   # (N, S)
            return torch.cat([torch.sin(a), torch.cos(a), torch.sin(b), torch.cos(b)], 1)
        return u

    def forward(self, lonlat):
        return self.mlp(self.features(lonlat))                         # (N, 256)


def build_encoder(cfg) -> LocationEncoder:
    """The encoder of ``cfg`` with weights (and RFF frequencies) drawn from the ``"init"``
    stream of ``cfg.seed``."""
    with seeded(seeds.child(cfg.seed, "init")):
        return LocationEncoder(cfg.family, cfg.resolution, cfg.grid_base, cfg.width,
                               cfg.embed)


def r2_per_column(pred: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Coefficient of determination per target column: ``1 - SSE / SST``."""
    sse = ((pred - y) ** 2).sum(0)
    sst = ((y - y.mean(0, keepdim=True)) ** 2).sum(0)
    return 1 - sse / sst


class Pretraining:
    """Pre-training that can be resumed: :meth:`advance` runs more Adam steps on the same
    optimizer, head and batch stream, so ``advance(a)`` then ``advance(b)`` gives the network
    one ``advance(a + b)`` gives (what ``bench/geo_inr_settle.py`` needs to train an encoder
    until its probe generalises).

    Regresses the 24 pre-training fields from the embedding (Adam, MSE, mini-batches of
    ``cfg.batch_size`` drawn from the stream ``("pretrain", "order")``).
    """

    def __init__(self, enc: LocationEncoder, data, cfg, dev):
        with seeded(seeds.child(cfg.seed, "init", "head")):
            self.head = dev.compile(nn.Linear(cfg.embed, data.pretrain_y.shape[1]))
        self.enc, self.cfg, self.dev = dev.compile(enc), cfg, dev
        self.x, self.y = dev.tensor(data.pretrain_lonlat), dev.tensor(data.pretrain_y)
        params = list(self.enc.parameters()) + list(self.head.parameters())
        self.opt = torch.optim.Adam(params, lr=cfg.lr, foreach=True)   # list ops: few per step
        self.gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "pretrain", "order"))
        self.losses: list[float] = []
        n = len(self.x)
        self.batch = min(cfg.batch_size, n)
        # the positional features are fixed functions of the location: computed once per
        # point (as a data loader would cache them), not once per step
        with torch.no_grad(), dev.count("train/pretrain/features", samples=n):
            self.feats = self.enc.features(self.x)                          # (n, F)

    def advance(self, steps: int, progress=None) -> None:
        """``steps`` more Adam steps (counted under ``train/pretrain``)."""
        n, b, x, y = len(self.x), self.batch, self.x, self.y
        with self.dev.count("train/pretrain", samples=steps * b):
            for step in range(steps):
                idx = torch.randint(0, n, (b,), generator=self.gen).to(x.device)
                loss = ((self.head(self.enc.mlp(self.feats[idx])) - y[idx]) ** 2).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                self.losses.append(float(loss.detach()))
                if progress and (step + 1) % max(1, steps // 10) == 0:
                    progress(step + 1, steps, {"pretrain_mse": self.losses[-1]})

    def fit_r2(self) -> float:
        """Mean R^2 of the head on the pre-training set (counted under ``pretrain/fit``)."""
        with torch.no_grad(), self.dev.count("pretrain/fit", samples=len(self.x)):
            return float(r2_per_column(self.head(self.enc.mlp(self.feats)), self.y).mean())


def pretrain(enc: LocationEncoder, data, cfg, dev, progress=None) -> dict:
    """Regress the 24 pre-training fields from the embedding for ``cfg.steps`` Adam steps
    (:class:`Pretraining`)."""
    run_ = Pretraining(enc, data, cfg, dev)
    run_.advance(cfg.steps, progress)
    return {"losses": run_.losses, "pretrain_r2": run_.fit_r2(), "head": run_.head}


def embed(enc: LocationEncoder, lonlat: np.ndarray, dev) -> torch.Tensor:
    """Frozen embeddings (N, 256) of the points, fp32 on the device."""
    with torch.no_grad():
        return dev.run(enc, dev.tensor(lonlat), scope="embed")


def _standardise(z_train, z):
    mu, sd = z_train.mean(0, keepdim=True), z_train.std(0, keepdim=True).clamp_min(1e-8)
    return (z_train - mu) / sd, (z - mu) / sd


def ridge_probe(z: torch.Tensor, y: torch.Tensor, train: torch.Tensor, test: torch.Tensor,
                ridge: float, dev) -> float:
    """Mean test R^2 of ridge regression of the held-out fields on standardised features."""
    with dev.count("probe/ridge"):
        zt, zs = _standardise(z[train], z[test])
        ym = y[train].mean(0, keepdim=True)
        zt1 = torch.cat([zt, torch.ones_like(zt[:, :1])], 1)         # (n, D + 1), bias column
        a = zt1.T @ zt1                                               # (D+1, D+1)
        a = a + ridge * len(zt) * torch.eye(a.shape[0], dtype=a.dtype, device=a.device)
        rhs = zt1.T @ (y[train] - ym)                                 # (D+1, K)
    w = torch.linalg.solve(a, rhs)
    d, k = a.shape[0], rhs.shape[1]
    # LU with partial pivoting 2/3 d^3, two triangular solves 2 d^2 per right-hand side
    dev.ledger.add("flop_fp32", (2 * d ** 3) // 3 + 2 * d * d * k, scope="probe/ridge/solve")
    with dev.count("probe/ridge"):
        zs1 = torch.cat([zs, torch.ones_like(zs[:, :1])], 1)
        return float(r2_per_column(zs1 @ w + ym, y[test]).mean())


def mlp_probe(z: torch.Tensor, y: torch.Tensor, train: torch.Tensor, test: torch.Tensor,
              cfg, dev) -> dict:
    """Train the MLP probe on the held-out fields; test R^2 and the TwoNN ID of its
    penultimate (hidden ReLU) activations on the test half."""
    with seeded(seeds.child(cfg.seed, "probe", "init")):
        net = dev.compile(nn.Sequential(nn.Linear(z.shape[1], cfg.probe_hidden), nn.ReLU(),
                                        nn.Linear(cfg.probe_hidden, y.shape[1])))
    zt, zs = _standardise(z[train], z[test])
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, foreach=True)
    with dev.count("probe/mlp", samples=cfg.probe_steps * len(zt)):
        for _ in range(cfg.probe_steps):
            loss = ((net(zt) - y[train]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad(), dev.count("probe/mlp/test", samples=len(zs)):
        hidden = net[1](net[0](zs))                                    # (n_test, hidden)
        r2 = float(r2_per_column(net[2](hidden), y[test]).mean())
    with dev.count("probe/activations_id"):
        h = hidden.double()
        dists, _ = est.knn(h, 2, cfg.chunk)
        keep = dists[:, 0] > 0
        act_id = float(est.twonn(dists[keep])) if int(keep.sum()) > 10 else float("nan")
    return {"r2": r2, "activation_twonn": act_id, "dead_duplicates": int((~keep).sum())}


def map_raster(lonlat: np.ndarray, values: np.ndarray, h: int, w: int) -> np.ndarray:
    """Equirectangular (h, w) raster of ``values`` averaged per cell (north up, lon -180 at
    the left); cells with no point are nan (ocean or unsampled)."""
    col = np.clip(((lonlat[:, 0] + math.pi) / (2 * math.pi) * w).astype(int), 0, w - 1)
    row = np.clip(((math.pi / 2 - lonlat[:, 1]) / math.pi * h).astype(int), 0, h - 1)
    flat = row * w + col
    tot = np.bincount(flat, values, h * w)
    cnt = np.bincount(flat, minlength=h * w)
    out = np.full(h * w, np.nan)
    out[cnt > 0] = tot[cnt > 0] / cnt[cnt > 0]
    return out.reshape(h, w)


def lon_spectrum_peak(lonlat: np.ndarray, values: np.ndarray, bins: int = 72) -> tuple[int,
                                                                                     np.ndarray]:
    """Longitude power spectrum of ``values`` (mean per longitude bin over all latitudes,
    empty bins at the overall mean, mean removed) and its peak frequency (cycles per
    circle, >= 1)."""
    col = np.clip(((lonlat[:, 0] + math.pi) / (2 * math.pi) * bins).astype(int), 0, bins - 1)
    cnt = np.bincount(col, minlength=bins)
    prof = np.full(bins, values.mean())
    prof[cnt > 0] = np.bincount(col, values, bins)[cnt > 0] / cnt[cnt > 0]
    power = np.abs(np.fft.rfft(prof - prof.mean())) ** 2
    return int(np.argmax(power[1:]) + 1), power


def run(cfg, device: TorchDevice, data, progress=None) -> dict:
    """One run: pre-train the encoder, embed the evaluation points, measure the global IDs
    (MLE k = 10/20/``k_local``, TwoNN, FisherS) and the local MLE map, probe the held-out
    fields (ridge, MLP). Returns ``{"metrics", "traces", "facts"}``."""
    if not cfg.count:
        device = Uncounted(device)
    enc = build_encoder(cfg)
    pre = pretrain(enc, data, cfg, device, progress)
    if not all(map(math.isfinite, pre["losses"])):
        bad = next(i for i, v in enumerate(pre["losses"]) if not math.isfinite(v))
        raise ModelError(f"GeoIdConfig.lr = {cfg.lr}: pre-training diverged (mse "
                         f"{pre['losses'][bad]} at step {bad + 1}); use a smaller lr "
                         "(default 1e-3)")
    z = embed(enc, data.eval_lonlat, device)                 # (N, 256) fp32
    if cfg.count:   # NeuroBench's model: the encoder, not its pre-training head or probe
        device.deploy(enc)
    with device.count("id/cast"):
        zd = z.double()
    try:
        ids, dists = est.global_ids(zd, ks=(10, 20, cfg.k_local), dev=device, chunk=cfg.chunk)
    except est.DuplicatePoints as e:
        # a narrow ReLU encoder maps every point where its units are dead onto one embedding
        raise ModelError(f"GeoIdConfig: the {cfg.family} encoder (width {cfg.width}, embed "
                         f"{cfg.embed}, {cfg.steps} steps) gives {e.count} of {len(zd)} "
                         "evaluation points the same embedding as another; the IDs need "
                         "distinct embeddings: use a larger width (default 256) or resolution "
                         "(default 10)") from e
    with device.count("id/local"):
        local = est.mle_pointwise(dists[:, :cfg.k_local]).cpu().numpy()   # (N,)
    n = len(z)
    perm = torch.as_tensor(seeds.rng(cfg.seed, "probe", "split").permutation(n),
                           device=z.device)
    train, test = perm[: n // 2], perm[n // 2:]
    y = device.tensor(data.eval_y)
    ridge_r2 = ridge_probe(z, y, train, test, cfg.ridge, device)
    mlp = mlp_probe(z, y, train, test, cfg, device)
    inside = angular_distance(data.eval_lonlat, data.cap_centre) <= cfg.cap_radius
    peak, power = lon_spectrum_peak(data.eval_lonlat, local)
    # share of the longitude power at multiples of the grid base frequency (an encoder that
    # repeats every 2 pi / b puts all of it there; white noise 1/b of it)
    at_base = float(power[cfg.grid_base::cfg.grid_base].sum() / max(power[1:].sum(), 1e-300))
    m = {"mle_k10": ids["mle_k10"], "mle_k20": ids["mle_k20"],
         f"mle_k{cfg.k_local}": ids[f"mle_k{cfg.k_local}"], "twonn": ids["twonn"],
         "fishers": ids["fishers"], "local_id_mean": float(local.mean()),
         "local_id_std": float(local.std()),
         "local_id_in_cap": float(local[inside].mean()) if inside.any() else float("nan"),
         "local_id_out_cap": float(local[~inside].mean()) if not inside.all() else
                             float("nan"),
         "local_id_lon_peak": peak, "local_id_lon_power_at_base": at_base,
         "pretrain_r2": pre["pretrain_r2"],
         "final_pretrain_mse": pre["losses"][-1], "ridge_r2": ridge_r2, "mlp_r2": mlp["r2"],
         "probe_activation_twonn": mlp["activation_twonn"],
         "probe_dead_duplicates": mlp["dead_duplicates"]}
    if not inside.any():
        m.pop("local_id_in_cap")
    if inside.all():                  # a cap over every evaluation point leaves no outside
        m.pop("local_id_out_cap")
    if not math.isfinite(m["probe_activation_twonn"]):
        # at most 10 distinct probe activations (a narrow probe's dead ReLUs): no TwoNN
        m.pop("probe_activation_twonn")
    globe = map_raster(data.eval_lonlat, local, cfg.map_height, cfg.map_width)
    traces = {"pretrain_mse": curve(pre["losses"], "a.u. (squared error, unit-variance "
                                                   "fields)"),
              "local_id_map": Trace("images", globe[None], "local MLE ID, k = "
                                                           f"{cfg.k_local}; lon -180..180, "
                                                           "north up")}
    facts = {"torch_device": str(device.torch_device), "data_source": data.source,
             "encoder": f"{cfg.family} resolution {cfg.resolution:g}"
                        + (f" base {cfg.grid_base}" if cfg.family == "grid" else ""),
             "eval_points_in_cap": int(inside.sum()),
             "cap_centre_lonlat_rad": [float(c) for c in data.cap_centre]}
    return {"metrics": m, "traces": traces, "facts": facts}
