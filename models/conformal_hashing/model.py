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
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np
import torch
from numba import njit
from torch import nn
from torch.nn import functional as F  # noqa: N812

from models.shared.training import seeded
from sim.errors import ModelError


# --- split conformal prediction --------------------------------------------------------------
def conformal_threshold(scores: torch.Tensor, alpha: float) -> float:
    """The split-conformal threshold: the ``ceil((n+1)(1-alpha))``-th smallest score.

    ``inf`` when that rank exceeds ``n`` (too few calibration scores for ``alpha``): every
    label is then in every set, which keeps the coverage guarantee.
    """
    n = int(scores.numel())
    if n == 0 or not 0.0 < alpha < 1.0:
        raise ModelError(f"conformal_threshold: n = {n} scores, alpha = {alpha}; need n >= 1 "
                         "and 0 < alpha < 1")
    k = math.ceil((n + 1) * (1.0 - alpha))
    if k > n:
        return math.inf
    return float(torch.sort(scores.flatten()).values[k - 1])


def prediction_sets(probs: torch.Tensor, qhat: float) -> torch.Tensor:
    """``C(x) = {y : 1 - p(y|x) <= qhat}`` as a boolean (N, C) mask."""
    return (1.0 - probs) <= qhat


def set_weights(sets: torch.Tensor) -> torch.Tensor:
    """``w_sem = 1/|C(x)|``, 0 for an empty set."""
    size = sets.sum(1).to(torch.float32)
    return torch.where(size > 0, 1.0 / size.clamp(min=1.0), torch.zeros_like(size))


def soft_labels(probs: torch.Tensor, sets: torch.Tensor) -> torch.Tensor:
    """Probabilities renormalised over the prediction set (zeros for an empty set)."""
    masked = probs * sets
    return masked / masked.sum(1, keepdim=True).clamp(min=1e-12)


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
    gen = np.random.default_rng(cfg.seed)
    perm = gen.permutation(n)
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
    with seeded(cfg.seed):
        net = HashNet(pair.side, cfg.bits, pair.n_classes, cfg.width, cfg.feat)
    net = dev.compile(net)
    params = [p for name, p in net.named_parameters()
              if variant.representation or not name.startswith("bit_head")]
    opt = torch.optim.Adam(params, lr=cfg.lr, foreach=True)
    tgen = torch.Generator().manual_seed(cfg.seed + 7)
    ngen = torch.Generator().manual_seed(cfg.seed + 11)   # feature noise: never the global RNG
    ema, history = None, []
    steps = math.ceil(len(tr) / cfg.batch_size)
    for epoch in range(cfg.epochs):
        with _ctx(dev, "train/calibrate", 0, cfg.count), torch.no_grad():
            net.eval()
            fh, _, lh = _chunks(net, xh)
            ft, _, lt = _chunks(net, xt)
            acc = float((lh.argmax(1) == yh).float().mean())
            ema = acc if ema is None else cfg.ema * ema + (1 - cfg.ema) * acc
            alpha = min(max(1.0 - ema, 0.05), 0.5)
            dist = (fh - ft.mean(0)).pow(2).sum(1)
            n_cal = max(2, int(round(cfg.r_cal * len(hold))))
            cal = torch.argsort(dist)[:n_cal]
            scores = 1.0 - lh[cal].softmax(1).gather(1, yh[cal, None])[:, 0]
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
    return {"net": net, "history": history, "qhat": qhat, "alpha": alpha,
            "hold": hold, "train_idx": tr}


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


# --- retrieval -------------------------------------------------------------------------------
def average_precision(order_labels: torch.Tensor, query_labels: torch.Tensor) -> torch.Tensor:
    """Per query: AP over the full ranking (``order_labels``: database labels in rank order)."""
    rel = (order_labels == query_labels[:, None]).to(torch.float32)
    ranks = torch.arange(1, rel.shape[1] + 1, device=rel.device, dtype=torch.float32)
    prec = rel.cumsum(1) / ranks
    return (prec * rel).sum(1) / rel.sum(1).clamp(min=1.0)


def rank_map(dist: torch.Tensor, db_labels: torch.Tensor, q_labels: torch.Tensor) -> float:
    """MAP@all of a distance matrix (queries x database), stable ascending ranking."""
    order = torch.sort(dist, dim=1, stable=True).indices
    return float(average_precision(db_labels[order], q_labels).mean())


def uwhd(w_q: torch.Tensor, b_q: torch.Tensor, b_db: torch.Tensor) -> torch.Tensor:
    """``sum_k w_qk (1 - b_qk b_xk) / 2`` for every query/database pair, one matmul."""
    return 0.5 * (w_q.sum(1, keepdim=True) - (w_q * b_q) @ b_db.T)


_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float32)
"""(256, 8): bit i of byte value v, LSB first (the packed layout of ``sim.bitwise.packing``)."""


def code_bytes(b: np.ndarray) -> np.ndarray:
    """+-1 codes (N, L) as bytes (N, ceil(L/8)) uint8: bit i of byte j is element ``8j + i``,
    bit 1 = +1, zero padding; the first bytes of ``sim.bitwise.packing.pack_signs``'s
    little-endian words, i.e. the same stored database as plain Hamming reads."""
    return np.packbits(np.asarray(b) > 0, axis=1, bitorder="little")


def uwhd_tables(w_q: torch.Tensor, b_q: torch.Tensor) -> torch.Tensor:
    """UWHD as table lookups, step 1: per query and code byte ``j`` the 256-entry table
    ``T[q, j, v] = sum_i w_q,8j+i [bit i of v != bit 8j+i of q]`` (Q, ceil(L/8), 256).

    With ``b`` in +-1 and ``p_i`` bit i of ``v``, a bit differs iff ``p_i != (1 + b_i)/2``,
    so ``T = sum_i w_i (1 + b_i)/2 - sum_i p_i w_i b_i``: one (Q ceil(L/8), 8) x (8, 256)
    matmul, Q ceil(L/8) 256 8 MACs, independent of the database size. Padding bits of a
    last partial byte get weight 0 (they never count).
    """
    q, bits = w_q.shape
    nb = -(-bits // 8)
    pad = nb * 8 - bits
    w = F.pad(w_q, (0, pad)) if pad else w_q
    b = F.pad(b_q, (0, pad), value=1.0) if pad else b_q
    wb = w * b
    base = (0.5 * (w + wb)).reshape(q, nb, 8).sum(2, keepdim=True)
    p = torch.as_tensor(_BYTE_BITS, dtype=w.dtype, device=w.device)
    return base - wb.reshape(q, nb, 8) @ p.T


def uwhd_lut(tables: torch.Tensor, db_bytes: torch.Tensor) -> torch.Tensor:
    """UWHD as table lookups, step 2: ``d[q, n] = sum_j T[q, j, byte_j(x_n)]``, Q N ceil(L/8)
    lookups (a gather: bytes, no arithmetic) and adds (the sum), on the packed database.
    Equal to :func:`uwhd` up to float rounding (tests/models/conformal_hashing)."""
    q, nb, _ = tables.shape
    idx = db_bytes.to(torch.int64) + 256 * torch.arange(nb, device=db_bytes.device)
    return tables.reshape(q, nb * 256)[:, idx].sum(2)


@njit(cache=True, nogil=True)
def uwhd_lut_kernel(tables, db_bytes, out):
    """:func:`uwhd_lut` on the host CPU: ``out[q, n] = sum_j tables[q, j, db_bytes[n, j]]``.

    tables (Q, nb, 256) float32, db_bytes (N, nb) uint8, out (Q, N) float32. The bytes are
    first laid out byte-major (nb, N), as the bitwise kernel re-lays its database rows per
    call, so the inner loop runs over database rows (one table of 1 KB, in L1, per pass)
    and LLVM can vectorise it (gathers); the sum over j runs in byte order.
    """
    q, nb, _ = tables.shape
    n = db_bytes.shape[0]
    dbt = np.empty((nb, n), np.uint8)
    for i in range(n):
        for j in range(nb):
            dbt[j, i] = db_bytes[i, j]
    for a in range(q):
        t0 = tables[a, 0]
        c0 = dbt[0]
        for i in range(n):
            out[a, i] = t0[c0[i]]
        for j in range(1, nb):
            t = tables[a, j]
            c = dbt[j]
            for i in range(n):
                out[a, i] += t[c[i]]


def hamming_bitwise(bdev, b_q: np.ndarray, b_db: np.ndarray) -> np.ndarray:
    """Plain Hamming distances of +-1 codes on packed words: ``(L - <b_q, b_x>) / 2``, the
    inner product by XOR + popcount (``BitwiseDevice.sign_matmul``)."""
    from sim.bitwise.packing import pack_signs
    bits = b_q.shape[1]
    qw = pack_signs(b_q.astype(np.int8), bdev.word_bits)
    dw = pack_signs(b_db.astype(np.int8), bdev.word_bits)
    dot = bdev.sign_matmul(qw, dw, bits)
    return (bits - dot) // 2


def signs(h: torch.Tensor) -> torch.Tensor:
    """``sign(h)`` with 0 -> +1 (a bit is always one of two values)."""
    return torch.where(h >= 0, 1.0, -1.0)


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
            g = torch.Generator().manual_seed(cfg.seed + 99)
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
