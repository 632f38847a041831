"""COLA: conformalized hierarchical calibration for uncertainty-aware domain-adaptive hashing.

The paper (ICLR 2026, OpenReview fBmRLVAw4T; no code released) trains a hashing network on a
labelled source and an unlabelled target domain with two calibration levels:

* semantic (SC, its Sec. 3.2): split-conformal prediction sets ``C(x_t) = {y : 1 - p(y|x_t)
  <= q}`` for target samples, ``q`` the finite-sample ``ceil((n+1)(1-alpha_t))/n`` quantile of
  the non-conformity scores ``1 - p(y_i|x_i)`` of a calibration set of source samples closest
  to the target feature centroid; ``w_sem = 1/|C|`` weights the pseudo-label loss (soft labels
  spread over the set) and the MMD alignment of source and target features;
* representation (RC, Sec. 3.3): a bit head predicts per bit whether the code's sign survives
  Gaussian feature noise; its output weights the quantisation loss and, at query time, the
  Hamming distance (UWHD: ``d(q, x) = sum_k w_qk (1 - b_qk b_xk) / 2``, query-side weights);
* self-regulation (SR): the loss weights are the batch means of ``w_sem`` and ``w_bit``.

Readings where the public description is silent (R in the digest), fixed here:

1. Network: 2 conv + FC -> f (128-d), hash layer ``h = tanh(W f + c)``, classifier and bit head
   (sigmoid) on ``f``; the bit head sees ``f`` detached (it predicts stability, it does not
   shape the features).
2. Calibration: the source is split once into a training part and a held-out part
   (``holdout`` fraction, never trained on: scores of training samples would be optimistic
   and break exchangeability); each epoch ``D_cal`` is the ``r_cal`` fraction of the held-out
   part closest (L2, feature space) to the target centroid; uniform weights in the quantile.
   That epoch's ``q`` (from the network before its updates) serves its training; after the
   last epoch the final network is calibrated once more (same rule, the last ``alpha_t``),
   and the evaluation's sets use that ``q``: split-conformal sets need calibration scores
   of the model that builds them.
3. Dynamic ``alpha_t = clip(1 - EMA(acc), 0.05, 0.5)``, acc the held-out source accuracy at
   the start of each epoch, EMA momentum 0.5; so the first epoch (acc ~ 0.1) has alpha 0.5.
4. Empty set: ``w_sem = 0`` (the sample is skipped). MMD: Gaussian kernels at 0.5, 1, 2 times
   the mean pairwise squared distance of the batch (biased estimator).
5. Perturbation ``sigma = sigma_rel * std(f)`` (batch std, ``sigma_rel`` = 0.1).
6. ``L = L_source + L_pair + L_bit + lam_t L_target + lam_a L_align + lam_q L_quant``:
   ``L_source`` cross-entropy, ``L_pair = mean((h_i . h_j / L - s_ij)^2)`` over source pairs
   (``s = +-1`` same / other class; the common UDAH code-similarity loss), quantisation on
   source and target codes. SR on: ``lam_t = lam_a = mean(w_sem)``, ``lam_q = mean(w_bit)``;
   off: all 1.
7. Ablations: SC off = hard argmax pseudo-labels, ``w_sem = 1``; RC off = no bit head,
   quantisation weights 1, plain Hamming retrieval.
8. Retrieval protocol (UDAH's): target queries against the source training database, MAP over
   the full ranking (ties kept in database order: a stable sort).
9. UWHD by lookup tables (``uwhd_kernel="lut"``; the paper gives no UWHD runtime, reviewers
   asked for one): per query and code byte a 256-entry table of the weighted mismatches of
   that byte, then one lookup and add per database byte on the packed codes plain Hamming
   reads; equal to the matmul form up to float rounding.
10. "Before alignment" for Thm 3.1's coverage bound: the ``source_only`` variant (source
    cross-entropy, pair and quantisation losses only; the same calibration), and each
    epoch's coverage and TV-hat measured before that epoch's updates (epoch 1: the untrained
    network). TV-hat compares the scores of the whole source hold-out with the target's
    (the hold-out, not the 20 % nearest ``D_cal``: 20 bins need more than its ~60-100 scores).

Ledger scopes (TorchDevice): ``train`` (every forward, backward and Adam op),
``train/calibrate`` (features of the held-out and target sets, the quantile),
``encode`` (codes and bit weights of database and queries), ``retrieve/uwhd`` (weighted
distances and ranking), ``retrieve/hamming_rank`` (ranking of the Hamming distances);
the Hamming distances themselves run on packed codes on a ``BitwiseDevice``
(``sim.bitwise``: XOR + popcount per word), whose ledger the metrics report.

Modules: the conformal sets are in ``conformal.py``, UWHD, Hamming and MAP in
``retrieval.py``; this module holds the network, training, evaluation and the card's run
(:func:`run`). Randomness: named seed streams of the run seed (``sim.seeds``): "holdout",
"init", "order", "noise" and "eval_noise".
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from models.conformal_hashing.conformal import (
    conformal_threshold,
    prediction_sets,
    set_weights,
    soft_labels,
)
from models.conformal_hashing.retrieval import (
    code_bytes,
    hamming_bitwise,
    rank_map,
    signs,
    uwhd,
    uwhd_lut,
    uwhd_tables,
)
from models.registry import Outcome, Progress
from models.shared.training import seeded
from sim import seeds
from sim.bitwise import BitwiseDevice
from sim.errors import ModelError
from sim.torch_engine.engine import TorchDevice
from sim.traces import curve


# --- alignment --------------------------------------------------------------------------------
def mmd2(x: torch.Tensor, y: torch.Tensor, scales=(0.5, 1.0, 2.0)) -> torch.Tensor:
    """Biased multi-bandwidth Gaussian MMD^2 of two batches (bandwidths x mean squared
    distance; the mean, not the median, because the median's sort is not a counted op)."""
    z = torch.cat([x, y])
    sq = z.pow(2).sum(1)
    d2 = (sq[:, None] + sq[None, :] - 2 * z @ z.T).clamp(min=0)
    med = d2.detach().mean().clamp(min=1e-6)
    k = sum(torch.exp(-d2 / (s * med)) for s in scales)
    n = len(x)
    return k[:n, :n].mean() + k[n:, n:].mean() - 2 * k[:n, n:].mean()


# --- network ---------------------------------------------------------------------------------
class HashNet(nn.Module):
    """2 conv + FC feature extractor, tanh hash layer, classifier and bit head on ``f``."""

    def __init__(self, side: int, bits: int, classes: int, width: int, feat: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(2 * width * (side // 4) ** 2, feat), nn.ReLU())
        self.hash = nn.Linear(feat, bits)
        self.classifier = nn.Linear(feat, classes)
        self.bit_head = nn.Linear(feat, bits)

    def forward(self, x):
        f = self.features(x)
        return f, torch.tanh(self.hash(f)), self.classifier(f)


@dataclass
class Variant:
    """Which of the paper's three components are on (the ablation)."""

    semantic: bool = True
    representation: bool = True
    self_regulation: bool = True
    adapt: bool = True           # False: no target term in the loss (the source-only model)


VARIANTS = {"full": Variant(), "no_sc": Variant(semantic=False),
            "no_rc": Variant(representation=False), "no_sr": Variant(self_regulation=False),
            "none": Variant(False, False, False),
            "source_only": Variant(False, False, False, adapt=False)}
"""The ablation of the paper's Table (Office-Home): each component removed, and all; and
the source-only model (no alignment, no target loss), the "before alignment" reference of
the coverage bound (Thm 3.1)."""


def _ctx(dev, scope: str, samples: int, count: bool):
    return dev.count(scope, samples=samples) if count else contextlib.nullcontext()


@torch.no_grad()
def _chunks(fn, x, chunk=1024):
    outs = [fn(x[i:i + chunk]) for i in range(0, len(x), chunk)]
    return [torch.cat(parts) for parts in zip(*outs, strict=True)]


def pair_loss(h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    s = (y[:, None] == y[None, :]).to(h.dtype) * 2 - 1
    return ((h @ h.T) / h.shape[1] - s).pow(2).mean()


def train(pair, cfg, dev, variant: Variant, progress=None) -> dict:
    """Train COLA (or an ablation) on ``pair``; returns the net, splits and history."""
    n = len(pair.x_source)
    perm = seeds.rng(cfg.seed, "holdout").permutation(n)   # the calibration hold-out
    n_hold = max(10, int(round(cfg.holdout * n)))
    if n_hold >= n:   # no image left to train on (and an empty retrieval database)
        raise ModelError(f"conformal_hashing: {n} source images (n_source = {cfg.n_source}) "
                         f"leave none to train on after the calibration hold-out of {n_hold} "
                         f"(holdout = {cfg.holdout}, at least 10); use more images or a "
                         "smaller holdout")
    hold, tr = perm[:n_hold], perm[n_hold:]
    xs_all = dev.tensor(pair.x_source)
    ys_all = dev.tensor(pair.y_source, dtype=torch.int64)
    xs, ys = xs_all[tr], ys_all[tr]
    xh, yh = xs_all[hold], ys_all[hold]
    xt = dev.tensor(pair.x_target)
    with seeded(seeds.child(cfg.seed, "init")):
        net = HashNet(pair.side, cfg.bits, pair.n_classes, cfg.width, cfg.feat)
    net = dev.compile(net)
    params = [p for name, p in net.named_parameters()
              if variant.representation or not name.startswith("bit_head")]
    opt = torch.optim.Adam(params, lr=cfg.lr, foreach=True)
    tgen = torch.Generator().manual_seed(seeds.child(cfg.seed, "order"))   # batch order
    ngen = torch.Generator().manual_seed(seeds.child(cfg.seed, "noise"))   # feature noise
    ema, history = None, []
    steps = math.ceil(len(tr) / cfg.batch_size)
    for epoch in range(cfg.epochs):
        with _ctx(dev, "train/calibrate", 0, cfg.count), torch.no_grad():
            net.eval()
            scores, lh, lt = calibration_scores(net, xh, yh, xt, cfg.r_cal)
            acc = float((lh.argmax(1) == yh).float().mean())
            ema = acc if ema is None else cfg.ema * ema + (1 - cfg.ema) * acc
            alpha = min(max(1.0 - ema, 0.05), 0.5)
            qhat = conformal_threshold(scores, alpha)
            net.train()
        diag = _shift_diagnostics(lh, yh, lt, pair.y_target, qhat)   # outside the ledger
        s_order = torch.randperm(len(tr), generator=tgen).to(dev.torch_device)
        t_order = torch.randint(0, len(xt), (steps * cfg.batch_size,), generator=tgen)
        t_order = t_order.to(dev.torch_device)
        rec = {"epoch": epoch + 1, "alpha": alpha, "qhat": qhat, "source_holdout_acc": acc,
               **diag, "loss": 0.0, "w_sem": 0.0, "w_bit": 0.0, "set_size": 0.0}
        with _ctx(dev, "train", len(tr), cfg.count):
            for step in range(steps):
                si = s_order[step * cfg.batch_size:(step + 1) * cfg.batch_size]
                ti = t_order[step * cfg.batch_size:step * cfg.batch_size + len(si)]
                loss, parts = batch_loss(net, xs[si], ys[si], xt[ti], qhat, cfg, variant,
                                         ngen)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                for k in ("loss", "w_sem", "w_bit", "set_size"):
                    rec[k] += parts[k] / steps
        history.append(rec)
        if progress:
            progress(epoch + 1, cfg.epochs, rec)
    net.eval()
    # split-conformal sets need calibration scores of the network that builds them: the
    # last epoch's qhat was calibrated before that epoch's updates (it served training), so
    # the final network is calibrated again, same rule and the last epoch's alpha_t
    with _ctx(dev, "train/calibrate", 0, cfg.count), torch.no_grad():
        qhat_final = conformal_threshold(calibration_scores(net, xh, yh, xt, cfg.r_cal)[0],
                                         alpha)
    return {"net": net, "history": history, "qhat": qhat_final, "qhat_last_epoch": qhat,
            "alpha": alpha, "hold": hold, "train_idx": tr}


@torch.no_grad()
def calibration_scores(net, xh, yh, xt, r_cal: float):
    """Non-conformity scores ``1 - p(y|x)`` of ``D_cal``, the ``r_cal`` fraction of the
    hold-out ``xh`` (N, 1, S, S) nearest (L2, features) the centroid of the target ``xt``
    (reading 2); also the hold-out's and the target's logits, (N, C) and (M, C)."""
    fh, _, lh = _chunks(net, xh)
    ft, _, lt = _chunks(net, xt)
    dist = (fh - ft.mean(0)).pow(2).sum(1)                              # (N,)
    cal = torch.argsort(dist)[:max(2, int(round(r_cal * len(xh))))]
    return 1.0 - lh[cal].softmax(1).gather(1, yh[cal, None])[:, 0], lh, lt


@torch.no_grad()
def _shift_diagnostics(lh, yh, lt, y_target, qhat) -> dict:
    """Target coverage and mean size of this epoch's conformal sets on the whole target set
    (whichever variant: without SC training uses argmax labels, but the sets exist), and
    TV-hat of the source hold-out and target score distributions (Thm 3.1's terms).
    Evaluation only: the target labels never reach the loss, and this runs outside any
    counting scope."""
    yt = torch.as_tensor(y_target, dtype=torch.int64, device=lt.device)
    pt = lt.softmax(1)
    sets = prediction_sets(pt, qhat)
    s_src = 1.0 - lh.softmax(1).gather(1, yh[:, None])[:, 0]
    s_tgt = 1.0 - pt.gather(1, yt[:, None])[:, 0]
    return {"target_coverage": float(sets.gather(1, yt[:, None]).float().mean()),
            "conformal_set_size": float(sets.sum(1).float().mean()),
            "tv_hat": tv_hat(s_src.cpu().numpy(), s_tgt.cpu().numpy())}


def batch_loss(net, xs, ys, xt, qhat, cfg, variant: Variant, gen: torch.Generator):
    """The COLA objective on one source and one target batch (readings 4-7)."""
    fs, hs, ls = net(xs)
    if variant.adapt:
        ft, ht, lt = net(xt)
    else:   # source-only: the target batch is only looked at (set sizes of the trace)
        with torch.no_grad():
            ft, ht, lt = net(xt)
    loss = F.cross_entropy(ls, ys) + pair_loss(hs, ys)
    pt = lt.softmax(1)
    with torch.no_grad():
        if variant.semantic:
            sets = prediction_sets(pt, qhat)
            w_sem = set_weights(sets)
            target = soft_labels(pt, sets)
        else:
            sets = F.one_hot(pt.argmax(1), pt.shape[1]).bool()
            w_sem = torch.ones(len(pt), device=pt.device)
            target = sets.to(pt.dtype)
    if variant.adapt:
        ce_t = -(target * F.log_softmax(lt, 1)).sum(1)
        l_target = (w_sem * ce_t).mean()
        l_align = w_sem.mean() * mmd2(fs, ft)
        h = torch.cat([hs, ht])
    else:
        l_target = l_align = 0.0
        h = hs
    margin = F.relu(1.0 - h.abs())
    if variant.representation:
        f = torch.cat([fs, ft])
        sigma = cfg.sigma_rel * f.detach().std()
        with torch.no_grad():
            noise = torch.randn(f.shape, generator=gen).to(f.device)
            hp = torch.tanh(net.hash(f + sigma * noise))
            stable = (torch.sign(h) == torch.sign(hp)).to(h.dtype)
        # BCE written out: the fused BCE and log-sigmoid kernels are not among the counted ops
        w_bit = torch.sigmoid(net.bit_head(f.detach()))
        loss = loss - (stable * torch.log(w_bit.clamp(min=1e-6))
                       + (1 - stable) * torch.log((1 - w_bit).clamp(min=1e-6))).mean()
        w_q = w_bit.detach()
    else:
        w_q = torch.ones_like(h)
    l_quant = (w_q * margin).mean()
    if variant.self_regulation:
        lam_t, lam_q = w_sem.mean(), w_q.mean()
    else:
        lam_t, lam_q = 1.0, 1.0
    loss = loss + cfg.lam * (lam_t * l_target + lam_t * l_align + lam_q * l_quant)
    parts = {"loss": float(loss.detach()), "w_sem": float(w_sem.mean()),
             "w_bit": float(w_q.mean()), "set_size": float(sets.sum(1).float().mean())}
    return loss, parts


# --- diagnostics and evaluation ------------------------------------------------------------
def auroc(score: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of ``score`` for ``positive`` (NaN when one class is absent)."""
    from sklearn.metrics import roc_auc_score
    positive = np.asarray(positive, bool)
    if positive.all() or not positive.any():
        return float("nan")
    return float(roc_auc_score(positive, score))


def tv_hat(a: np.ndarray, b: np.ndarray, bins: int = 20) -> float:
    """Histogram estimate (``bins`` on [0, 1]) of the total variation of two score samples."""
    ha = np.histogram(a, bins=bins, range=(0, 1))[0] / max(len(a), 1)
    hb = np.histogram(b, bins=bins, range=(0, 1))[0] / max(len(b), 1)
    return float(0.5 * np.abs(ha - hb).sum())


def evaluate(res: dict, pair, cfg, dev, bdev, variant: Variant) -> dict:
    """Codes, conformal diagnostics on the labelled target, and both retrievals' MAP."""
    net = res["net"]
    tr = res["train_idx"][:cfg.n_database]
    xdb = dev.tensor(pair.x_source[tr])
    ydb = dev.tensor(pair.y_source[tr], dtype=torch.int64)
    xq = dev.tensor(pair.x_target[:cfg.n_query])
    yq = dev.tensor(pair.y_target[:cfg.n_query], dtype=torch.int64)
    with _ctx(dev, "encode", len(xdb) + len(xq), cfg.count), torch.no_grad():
        fdb, hdb, _ = _chunks(net, xdb)
        fq, hq, lq = _chunks(net, xq)
        bdb, bq = signs(hdb), signs(hq)
        wq = torch.sigmoid(net.bit_head(fq)) if variant.representation else torch.ones_like(hq)
    # outside the count block (no ledger change): NaN weights give NaN codes, whose sign is
    # -1 everywhere, and a MAP of identical codes that looks like a result
    if not all(bool(torch.isfinite(t).all()) for t in (hdb, hq, lq, wq)):
        raise ModelError(f"conformal_hashing: the trained network's codes or class scores "
                         f"are not finite: training diverged (lr = {cfg.lr}); lower lr")
    m = {}
    # conformal diagnostics (target labels used only here)
    pt = lq.softmax(1)
    sets = prediction_sets(pt, res["qhat"])
    m["target_coverage"] = float(sets.gather(1, yq[:, None]).float().mean())
    m["target_set_size"] = float(sets.sum(1).float().mean())
    w_sem = set_weights(sets).cpu().numpy()
    correct = (pt.argmax(1) == yq).cpu().numpy()
    m["target_accuracy"] = float(correct.mean())
    m["auroc_w_sem"] = auroc(w_sem, correct)
    m["alpha_final"] = res["alpha"]
    xh = dev.tensor(pair.x_source[res["hold"]])
    yh = pair.y_source[res["hold"]]
    with torch.no_grad():
        _, _, lh = _chunks(net, xh)
    s_src = 1.0 - lh.softmax(1).cpu().numpy()[np.arange(len(yh)), yh]
    s_tgt = 1.0 - pt.cpu().numpy()[np.arange(len(yq)), yq.cpu().numpy()]
    m["tv_hat"] = tv_hat(s_src, s_tgt)
    if variant.representation:   # fresh perturbations: does w_bit predict which bits hold?
        with torch.no_grad():
            sigma = cfg.sigma_rel * fq.std()
            g = torch.Generator().manual_seed(seeds.child(cfg.seed, "eval_noise"))
            noise = torch.randn(fq.shape, generator=g).to(fq.device)
            hp = torch.tanh(net.hash(fq + sigma * noise))
        stable = (signs(hp) == bq).cpu().numpy().ravel()
        m["auroc_w_bit"] = auroc(wq.cpu().numpy().ravel(), stable)
        m["bit_flip_rate"] = float(1.0 - stable.mean())
    with _ctx(dev, "retrieve/uwhd", len(xq), cfg.count), torch.no_grad():
        if cfg.uwhd_kernel == "lut":   # the database as stored for plain Hamming: packed bytes
            db_bytes = dev.tensor(code_bytes(bdb.cpu().numpy()), dtype=torch.uint8)
            dist = uwhd_lut(uwhd_tables(wq, bq), db_bytes)
        else:
            dist = uwhd(wq, bq, bdb)
        m["map_uwhd"] = rank_map(dist, ydb, yq)
    ham = hamming_bitwise(bdev, bq.cpu().numpy(), bdb.cpu().numpy())
    with _ctx(dev, "retrieve/hamming_rank", len(xq), cfg.count), torch.no_grad():
        m["map_hamming"] = rank_map(dev.tensor(ham), ydb, yq)
    m["map"] = m["map_uwhd"] if variant.representation else m["map_hamming"]
    ops = bdev.ledger.total_ops()
    m["hamming_word_ops"] = float(sum(ops.values()))
    m["hamming_popcount_words"] = float(ops.get("popcount_word", 0))
    q, nd, bits = len(xq), len(xdb), cfg.bits
    if cfg.uwhd_kernel == "lut":   # the tables' matmul; then one lookup and add per byte
        m["uwhd_macs"] = float(q * -(-bits // 8) * 256 * 8)
        m["uwhd_lookups"] = float(q * nd * -(-bits // 8))
    else:
        m["uwhd_macs"] = float(q * nd * bits)   # the (w * b_q) @ b_db.T product
    return m


# --- the card's run -----------------------------------------------------------------------------
def run(cfg, device: TorchDevice, data, progress: Progress | None = None) -> Outcome:
    """The card's run: train the variant on source + unlabelled target (:func:`train`), then
    retrieve target queries from the source database with UWHD (counted on ``device``) and
    plain Hamming on packed codes (a ``BitwiseDevice`` of ``cfg.hamming_profile``; its counts
    are in the metrics) (:func:`evaluate`)."""
    variant = VARIANTS[cfg.variant]
    bdev = BitwiseDevice(cfg.hamming_profile)
    res = train(data, cfg, device, variant, progress)
    m = evaluate(res, data, cfg, device, bdev, variant)
    h = res["history"]
    m["final_train_loss"] = h[-1]["loss"]
    m["first_epoch_set_size"] = h[0]["set_size"]
    m["last_epoch_set_size"] = h[-1]["set_size"]
    # Thm 3.1: target coverage >= 1 - alpha - TV; the gap and the bound's slack, final model
    m["coverage_gap"] = 1.0 - m["alpha_final"] - m["target_coverage"]
    m["coverage_bound_margin"] = m["target_coverage"] - (1.0 - m["alpha_final"] - m["tv_hat"])
    traces = {"train_loss": curve([r["loss"] for r in h]),
              "alpha_t": curve([r["alpha"] for r in h]),
              "mean_set_size": curve([r["set_size"] for r in h]),
              # each epoch's sets on the whole target set before that epoch's updates
              "target_coverage": curve([r["target_coverage"] for r in h]),
              "coverage_gap": curve([1.0 - r["alpha"] - r["target_coverage"] for r in h]),
              "tv_hat": curve([r["tv_hat"] for r in h]),
              "conformal_set_size": curve([r["conformal_set_size"] for r in h]),
              "mean_w_sem": curve([r["w_sem"] for r in h]),
              "mean_w_bit": curve([r["w_bit"] for r in h])}
    facts = {"torch_device": str(device.torch_device), "data_source": data.source,
             "hamming_profile": cfg.hamming_profile,
             "hamming_ledger_ops": {k: int(v) for k, v in bdev.ledger.total_ops().items()}}
    return Outcome(m, traces, None, facts)
