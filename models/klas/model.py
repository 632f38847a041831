"""KLAS on a family of three tiny ViTs: anchors, probes, scores, stitches, selection, supernet.

Pipeline (KLAS, ICLR 2026: probes, block similarity, anchor and stitch selection; at CPU scale):
1. train three anchors (widths ``cfg.widths``) on a Fashion-MNIST subset; D_v = held-out
   training images;
2. train the probes of every anchor (ProbeNet), compute Theta, the last-block KL, Gamma,
   and the CKA baseline on D_v;
3. exhaustively build every stitch of every anchor pair: least-squares init on D_v, test
   accuracy, FLOPs per sample read from the ledger, then a short fine-tune of T and g_{>j}
   (f frozen) and test accuracy again (the ground truth the scores are ranked against);
4. select stitches with KLAS (anchor chain + per-bucket Gamma) and with SN-Net's heuristic,
   fine-tune one supernet per selection (SN-Net recipe: every step trains one configuration
   drawn uniformly from the anchors and the selected stitches; same steps for both), and
   compare their accuracy-FLOPs frontiers.
Every torch op runs on a TorchDevice and is counted under train/ (anchors, and as
train/probe/, train/finetune/, train/supernet/ every other training step, so the report's
energy per training sample covers all of them), score/ and infer/ scopes.
"""
from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats

from models.klas import scores as sc
from models.klas.card import KLASConfig
from models.klas.stitch import StitchedViT, StitchLayer
from models.klas.vit import TinyViT, cls_token
from models.registry import Trained
from models.shared.training import seeded
from sim import seeds
from sim.artifacts import TorchArtifact
from sim.errors import ModelError
from sim.torch_engine import TorchDevice
from sim.traces import Trace

# -- small helpers -------------------------------------------------------------------------

def _train(dev: TorchDevice, params, loss_fn, x, y, scope: str, steps: int, batch: int,
           lr: float, seed: int, cosine: bool = False) -> list[float]:
    """Adam on ``loss_fn(step, xb, yb)`` for ``steps`` random mini-batches, counted under scope.

    ``cosine``: 10% linear warm-up then cosine decay to 0 (the DeiT recipe's schedule; a
    ViT trained from scratch for a few hundred steps needs it).
    """
    params = [p for p in params if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr, foreach=True)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: min((t + 1) / warm, 0.5 * (
        1 + np.cos(np.pi * min(t, steps) / steps)))) if cosine else None
    gen = torch.Generator().manual_seed(seed)
    losses = []
    with dev.count(scope, samples=steps * batch):
        for step in range(steps):
            idx = torch.randint(len(x), (batch,), generator=gen).to(dev.torch_device)
            loss = loss_fn(step, x[idx], y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            losses.append(float(loss.detach()))
    return losses


def ledger_flops(dev: TorchDevice, scope: str, samples: int) -> float:
    """FLOPs per sample recorded under ``scope``: 2 per MAC plus every counted pointwise op."""
    ops = dev.ledger.total_ops(scope)
    total = sum(2 * n if op.startswith("mac_") else n for op, n in ops.items()
                if op.startswith(("mac_", "flop_")))
    return total / samples


def evaluate(dev: TorchDevice, model: torch.nn.Module, x, y, scope: str,
             batch: int = 500) -> tuple[float, float]:
    """(test accuracy, FLOPs per sample from the ledger) of ``model``, counted under ``scope``."""
    model.eval()
    with torch.no_grad(), dev.count(scope, samples=len(x)):
        logits = torch.cat([model(x[s:s + batch]) for s in range(0, len(x), batch)])
    acc = float((logits.argmax(1) == y).float().mean())
    return acc, ledger_flops(dev, scope, len(x))


def _seeded(seed: int, build):
    """``build()`` with torch's RNG seeded, the global state restored afterwards."""
    with seeded(seed):
        return build()


def rank_corr(score: np.ndarray, acc: np.ndarray) -> dict[str, float]:
    """Spearman rho and Kendall tau of a score (higher = predicted better) with accuracy."""
    return {"spearman": float(stats.spearmanr(score, acc).statistic),
            "kendall": float(stats.kendalltau(score, acc).statistic)}


def check_rankable(col: dict[str, np.ndarray], cfg: KLASConfig) -> None:
    """Refuse a score or accuracy column that is the same for every stitch: it has no
    ranking, and Spearman's rho and Kendall's tau of it are NaN (e.g. ``n_test = 1``, where
    every stitch scored 0 or 1 on the one image)."""
    for c in ("gamma", "omega", "cka", "acc_ls", "acc_ft"):
        if not np.isfinite(col[c]).all():
            raise ModelError(f"klas: the stitches' {c} is not finite: training diverged (lr = "
                             f"{cfg.lr}, probe_lr = {cfg.probe_lr}); lower them")
        if np.ptp(col[c]) == 0:
            raise ModelError(f"klas: all {len(col[c])} stitches have the same {c} "
                             f"({col[c][0]:.4g}; n_test = {cfg.n_test}, n_val = {cfg.n_val}): "
                             "no ranking to correlate; raise n_test and the training budget")


# -- the pipeline --------------------------------------------------------------------------

def train_anchors(cfg: KLASConfig, dev: TorchDevice, x, y, progress=None) -> list[TinyViT]:
    anchors = []
    steps = max(1, cfg.anchor_epochs * len(x) // cfg.batch_size)
    for a, (w, h) in enumerate(zip(cfg.widths, cfg.heads, strict=True)):
        m = _seeded(seeds.child(cfg.seed, "anchor", a, "init"),
                    lambda w=w, h=h: TinyViT(w, cfg.depth, h, cfg.patch))
        m = dev.compile(m).train()
        _train(dev, m.parameters(), lambda s, xb, yb, m=m: F.cross_entropy(m(xb), yb), x, y,
               f"train/anchor{a}", steps, cfg.batch_size, cfg.lr,
               seeds.child(cfg.seed, "anchor", a, "batches"), cosine=True)
        # outside the count block: a diverged anchor gave NaN log-probabilities, refused
        # later by theta_matrix with a message naming no setting
        if not all(bool(torch.isfinite(p).all()) for p in m.parameters()):
            raise ModelError(f"klas: anchor {a} (width {w}) has non-finite weights after "
                             f"training: it diverged (lr = {cfg.lr}); lower lr")
        m.eval().requires_grad_(False)
        anchors.append(m)
        if progress:
            progress(a + 1, len(cfg.widths), {"stage": "anchors"})
    return anchors


def train_probes(cfg: KLASConfig, dev: TorchDevice, anchor: TinyViT, x, y, scope: str,
                 seed: int) -> sc.ProbeSet:
    """ProbeNet: all probes of a frozen anchor in one run, one random probe per step.

    The anchor is frozen and there is no augmentation, so its CLS features at blocks
    1..n-1 are computed once (counted under ``scope/features``) and every step trains one
    randomly drawn probe on them; the paper re-runs the frozen backbone each step.
    ``seed`` is the probe set's own seed; its init, probe draws and batches are named
    streams of it.
    """
    probes = dev.compile(_seeded(seeds.child(seed, "init"),
                                 lambda: sc.ProbeSet(anchor.dim, anchor.depth, 10)))
    with torch.no_grad(), dev.count(f"{scope}/features", samples=len(x)):
        feats = torch.stack([cls_token(h) for h in anchor.block_outputs(x)[:-1]], 1)  # (N, n-1, D)
    pick = seeds.rng(seed, "pick").integers(1, anchor.depth, size=10 ** 6)
    steps = max(1, cfg.probe_epochs * len(x) // cfg.batch_size)
    _train(dev, probes.parameters(),
           lambda st, fb, yb: F.cross_entropy(probes(int(pick[st]), fb[:, pick[st] - 1]), yb),
           feats, y, f"{scope}/fit", steps, cfg.batch_size, cfg.probe_lr,
           seeds.child(seed, "batches"))
    return probes.eval()


def probe_logp(dev: TorchDevice, anchor: TinyViT, probes: sc.ProbeSet, x, scope: str):
    """Log-softmax of every probe on ``x``: (n, N, C), the last row from the anchor's head."""
    with torch.no_grad(), dev.count(scope, samples=len(x)):
        outs = anchor.block_outputs(x)
        rows = [probes(k, cls_token(outs[k - 1])) for k in range(1, anchor.depth)]
        rows.append(anchor.classify(outs[-1]))
        return torch.log_softmax(torch.stack(rows), dim=-1)


def run(cfg: KLASConfig, dev: TorchDevice, data, progress=None) -> dict:
    """The whole pipeline on ``dev`` (the runner's engine) and ``data`` (``data.load``: the
    first ``n_train`` training images train, the next ``n_val`` are D_v); returns tables,
    metrics, the device (ledger) and the models."""
    x_all, y_all = dev.tensor(data.x_train), dev.tensor(data.y_train, dtype=torch.int64)
    x, y = x_all[: cfg.n_train], y_all[: cfg.n_train]
    x_val = x_all[cfg.n_train:]
    x_te, y_te = dev.tensor(data.x_test), dev.tensor(data.y_test, dtype=torch.int64)
    k = len(cfg.widths)

    anchors = train_anchors(cfg, dev, x, y, progress)
    anchor_acc, anchor_flops = zip(*[evaluate(dev, m, x_te, y_te, f"infer/anchor{a}")
                                     for a, m in enumerate(anchors)], strict=True)

    # ProbeNet and KL similarities on D_v
    logp = []
    for a, m in enumerate(anchors):
        probes = train_probes(cfg, dev, m, x, y, f"train/probe/anchor{a}",
                              seeds.child(cfg.seed, "probe", a))
        logp.append(probe_logp(dev, m, probes, x_val, f"score/anchor{a}"))
    probe_acc = [[float((lp.argmax(-1).cpu() == torch.as_tensor(data.y_train[cfg.n_train:]))
                         .float().mean()) for lp in lps] for lps in logp]
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    theta = {(a, b): sc.theta_matrix(logp[a], logp[b]) for a in range(k) for b in range(k)}
    last_kl = {(a, b): float(theta[a, b][-1, -1]) for a, b in pairs}
    with torch.no_grad(), dev.count("score/features", samples=k * cfg.ls_samples):
        feats = [m.block_outputs(x_val[: cfg.ls_samples]) for m in anchors]  # LS init + CKA

    stitches = sc.all_stitches([cfg.depth] * k, pairs)
    table = {}
    for n, s in enumerate(stitches):
        src, dst = feats[s.front][s.i - 1], feats[s.back][s.j - 1]
        gamma = sc.stitch_scores(theta[s.front, s.back], theta[s.back, s.back])[s.i - 1, s.j - 1]
        layer = dev.compile(StitchLayer(cfg.widths[s.front], cfg.widths[s.back])).ls_init(src, dst)
        model = StitchedViT(anchors[s.front], anchors[s.back], s.i, s.j, layer)
        acc_ls, flops = evaluate(dev, model, x_te, y_te, f"infer/ls/{s.name}")
        ft = copy.deepcopy(model).train()        # f_{<=i} frozen; T and g_{>j} learn
        for part, learns in ((ft.embed, False), (ft.front, False), (ft.stitch, True),
                             (ft.back, True), (ft.norm, True), (ft.head, True)):
            part.requires_grad_(learns)
        _train(dev, ft.parameters(), lambda st, xb, yb, ft=ft: F.cross_entropy(ft(xb), yb), x, y,
               f"train/finetune/{s.name}", cfg.stitch_steps, cfg.batch_size // 2, cfg.stitch_lr,
               seeds.child(cfg.seed, "finetune", n))
        acc_ft, _ = evaluate(dev, ft, x_te, y_te, f"infer/ft/{s.name}")
        table[s] = {"gamma": float(gamma), "omega": float(theta[s.front, s.back][s.i - 1, s.j - 1]),
                    "cka": sc.linear_cka(src, dst),  # the baseline's own cost is not counted
                    "flops": flops, "acc_ls": acc_ls, "acc_ft": acc_ft,
                    "ls_weight": {k_: v.clone() for k_, v in layer.state_dict().items()}}
        if progress:
            progress(n + 1, len(stitches), {"stage": "stitches", "stitch": s.name,
                                            "acc_ft": acc_ft})

    # correlations of each score with stitched accuracy, over every stitch
    col = {c: np.array([table[s][c] for s in stitches]) for c in
           ("gamma", "omega", "cka", "acc_ls", "acc_ft", "flops")}
    check_rankable(col, cfg)
    corr = {target: {"klas_gamma": rank_corr(-col["gamma"], col[target]),
                     "kl_omega": rank_corr(-col["omega"], col[target]),
                     "cka": rank_corr(col["cka"], col[target])}
            for target in ("acc_ft", "acc_ls")}

    # selections
    lo, hi = anchor_flops[0], anchor_flops[-1]
    edges = sc.bucket_edges(lo, hi, cfg.n_buckets)
    klas_pairs = sc.select_anchor_pairs(last_kl, k)
    cands = [s for s in stitches if (s.front, s.back) in klas_pairs]
    flops_of = {s: table[s]["flops"] for s in stitches}
    sel = {"klas": sc.select_klas(cands, {s: table[s]["gamma"] for s in cands}, flops_of,
                                  edges, cfg.tau),
           "snnet": sc.snnet_stitches([cfg.depth] * k)}
    anchor_pts = list(zip(anchor_flops, anchor_acc, strict=True))
    oracle = {}
    for name, chosen in [*sel.items(), ("all", stitches)]:
        pts = anchor_pts + [(table[s]["flops"], table[s]["acc_ft"]) for s in chosen]
        oracle[name] = {"auc": sc.frontier_auc(pts, lo, hi), "n": len(chosen),
                        "recovery": _recovery(chosen, stitches, table, edges)}

    # supernet fine-tuning of each selection, same steps and seed
    supernets = {}
    for n, (name, chosen) in enumerate(sel.items()):
        supernets[name] = supernet(cfg, dev, anchors, chosen, table, x, y, x_te, y_te, name)
        supernets[name]["auc"] = sc.frontier_auc(supernets[name]["points"], lo, hi)
        if progress:
            progress(n + 1, len(sel), {"stage": "supernets", "stitch": name,
                                       "auc": supernets[name]["auc"]})
    res = {"config": cfg, "device": dev, "anchors": anchors, "anchor_acc": list(anchor_acc),
           "anchor_flops": list(anchor_flops), "probe_acc": probe_acc, "last_kl": last_kl,
           "klas_pairs": klas_pairs, "stitches": stitches, "table": table, "corr": corr,
           "edges": edges, "selected": sel, "oracle": oracle, "supernets": supernets}
    # NeuroBench's model: the exported stitch, not the anchors, probes and fine-tune copies
    dev.deploy(supernets["klas"]["nets"][export_choice(res).name])
    return res


def _recovery(chosen, stitches, table, edges, tol: float = 0.01) -> float:
    """Share of FLOPs buckets whose best chosen stitch is within ``tol`` of the bucket's best."""
    hits = total = 0
    for b in range(len(edges) - 1):
        members = [s for s in stitches if sc.bucket_of(table[s]["flops"], edges) == b]
        if not members:
            continue
        total += 1
        best = max(table[s]["acc_ft"] for s in members)
        mine = [table[s]["acc_ft"] for s in members if s in chosen]
        hits += bool(mine) and max(mine) >= best - tol
    return hits / max(total, 1)


def supernet(cfg: KLASConfig, dev: TorchDevice, anchors, chosen, table, x, y, x_te, y_te,
             name: str) -> dict:
    """SN-Net supernet fine-tuning over anchors + ``chosen`` (fresh copies of the anchors)."""
    copies = [copy.deepcopy(m).requires_grad_(True).train() for m in anchors]
    nets = list(copies)
    for s in chosen:
        layer = StitchLayer(cfg.widths[s.front], cfg.widths[s.back]).to(dev.torch_device)
        layer.load_state_dict(table[s]["ls_weight"])   # the LS initialisation
        nets.append(StitchedViT(copies[s.front], copies[s.back], s.i, s.j, layer).train())
    params = {id(p): p for net in nets for p in net.parameters()}
    # the same draws and batches for every selection (same steps and seed, SN-Net's recipe)
    draw = seeds.rng(cfg.seed, "supernet", "draw").integers(0, len(nets),
                                                             size=cfg.supernet_steps)
    _train(dev, params.values(), lambda st, xb, yb: F.cross_entropy(nets[draw[st]](xb), yb),
           x, y, f"train/supernet/{name}", cfg.supernet_steps, cfg.batch_size // 2, cfg.supernet_lr,
           seeds.child(cfg.seed, "supernet", "batches"))
    points, accs = [], {}
    for n, net in enumerate(nets):
        label = f"anchor{n}" if n < len(anchors) else chosen[n - len(anchors)].name
        acc, flops = evaluate(dev, net, x_te, y_te, f"infer/supernet_{name}/{label}")
        points.append((flops, acc))
        accs[label] = acc
    return {"points": points, "acc": accs, "nets": dict(zip(accs, nets, strict=True))}


# -- what a run records, and the exported stitch -------------------------------------------
STITCH_COLUMNS = ("front", "back", "i", "j", "flops", "gamma", "omega", "cka", "acc_ls",
                  "acc_ft")


def summarise(res: dict) -> tuple[dict, dict, dict]:
    """(metrics, facts, traces) of a :func:`run` result, plain values for a run file."""
    cfg, corr = res["config"], res["corr"]
    m: dict[str, float] = {}
    for a, (acc, fl) in enumerate(zip(res["anchor_acc"], res["anchor_flops"], strict=True)):
        m[f"anchor{a}_accuracy"], m[f"anchor{a}_flops"] = acc, fl
    for target, by_score in corr.items():
        for score, cc in by_score.items():
            for stat, v in cc.items():
                m[f"{stat}_{score}_vs_{target}"] = v
    for name, o in res["oracle"].items():
        m[f"oracle_auc_{name}"], m[f"recovery_{name}"] = o["auc"], o["recovery"]
        m[f"n_selected_{name}"] = float(o["n"])
    for name, sn in res["supernets"].items():
        m[f"supernet_auc_{name}"] = sn["auc"]
    m["klas_direct_stitching"] = float(len(res["klas_pairs"]) == 1)
    facts = {"klas_pairs": [list(p) for p in res["klas_pairs"]],
             "last_block_kl": {f"{a}-{b}": v for (a, b), v in res["last_kl"].items()},
             "selected": {k: [s.name for s in v] for k, v in res["selected"].items()},
             "export_stitch": export_choice(res).name, "n_anchors": len(cfg.widths),
             "probe_accuracy": res["probe_acc"],
             "supernet_accuracy": {k: sn["acc"] for k, sn in res["supernets"].items()},
             "torch_device": str(res["device"].torch_device)}
    st, tab = res["stitches"], res["table"]
    rows = [[s.front, s.back, s.i, s.j, *(tab[s][c] for c in STITCH_COLUMNS[4:])] for s in st]
    traces = {"stitches": Trace("table", np.array(rows, dtype=np.float64),
                                columns=STITCH_COLUMNS)}
    return m, facts, traces


def export_choice(res: dict):
    """The KLAS-selected stitch closest to the middle of the family's FLOPs range."""
    mid = 0.5 * (res["anchor_flops"][0] + res["anchor_flops"][-1])
    return min(res["selected"]["klas"], key=lambda s: abs(res["table"][s]["flops"] - mid))


def trained(res: dict, example_x) -> Trained:
    """The exported stitch after the KLAS supernet's fine-tuning: weights and architecture."""
    cfg, s = res["config"], export_choice(res)
    net = res["supernets"]["klas"]["nets"][s.name]
    arrays = {f"param/{k}": v.detach().cpu().numpy() for k, v in net.state_dict().items()}
    arrays["example_x"] = np.asarray(example_x, dtype=np.float32)
    meta = {"stitch": s.name, "i": s.i, "j": s.j, "depth": cfg.depth, "patch": cfg.patch,
            "front": {"width": cfg.widths[s.front], "heads": cfg.heads[s.front]},
            "back": {"width": cfg.widths[s.back], "heads": cfg.heads[s.back]}}
    return Trained(arrays, meta)


def rebuild(trained_: Trained) -> StitchedViT:
    """The stitched network from its arrays, eval mode, CPU (no training).

    The anchors' unused blocks (f's after i, g's first j) are built but not part of the
    stitched module, so its state covers exactly what runs.
    """
    meta = trained_.meta
    f, g = meta["front"], meta["back"]
    with seeded(0):       # the init is overwritten by the state below; keep the global RNG
        front = TinyViT(f["width"], meta["depth"], f["heads"], meta["patch"])
        back = TinyViT(g["width"], meta["depth"], g["heads"], meta["patch"])
        net = StitchedViT(front, back, int(meta["i"]), int(meta["j"]),
                          StitchLayer(f["width"], g["width"]))
    net.load_state_dict({k.removeprefix("param/"): torch.as_tensor(v)
                         for k, v in trained_.arrays.items() if k.startswith("param/")})
    return net.eval()


def torch_artifact(trained_: Trained) -> TorchArtifact:
    """The stitched ViT for the ONNX exporter: pixels (N, 784) in [0, 1] -> logits (N, 10)."""
    x = torch.as_tensor(trained_.arrays["example_x"])
    return TorchArtifact(rebuild(trained_), x[:2], input_names=("pixels",),
                         output_names=("logits",), check_inputs=x)
