"""BEP against the binary local rule and QAT on Random Prototypes: the card's claim.

The local rule (Colombo et al. 2025, the precursor of BEP) trains every layer against its
own fixed random +/-1 head and propagates nothing; BEP propagates binary desired
activations top-down (arXiv:2512.04189, Sec. 3). The paper reports BEP above the local rule
on Random Prototypes for every width it tried (up to +6.89 points for MLPs) and above QAT
without batch norm (STE + Adam on float latent weights). Here all three run on the same
1000-64-64-10 binary MLP, same data, same seeds, same epochs (``quick``: 5 epochs, 3 seeds;
``full``: 30 epochs, 5 seeds): BEP and the local rule through the runner (each a full run
with its ledger), QAT (``models/baselines/qat``, not a registered method) on x86-avx2 at
each learning rate of :data:`QAT_LRS` (Adam's default 1e-3, and 1e-2, which the bench found
better).

Pass rule (k of n seeds, never a mean's sign alone): BEP beats an anchor when it is ahead
on at least ``ceil(2n/3)`` of the n seeds (2 of 3, 4 of 5) and its mean lead exceeds
:data:`MARGIN_PTS` (0.5 points: 10 of the 2000 test samples). BEP beats QAT only when it
beats QAT at every learning rate tried. The claim is met when BEP beats both anchors. This
is not the equal-tuning comparison: QAT's two rates are the bench's, not a search, and BEP
runs its defaults. ``bench/bep_tuning.py`` (issue 33, item 1) gives both the same tuning
budget on a validation split of the training set; there QAT wins at K = 32 and BEP at
K = 64 (``bench/out/bep_tuning.json``).
"""
from __future__ import annotations

import math

import numpy as np

from models.registry import Study

DATASET = "random-prototypes"
SEEDS = {"quick": 3, "full": 5}
QAT_LRS = (1e-3, 1e-2)
MARGIN_PTS = 0.5


def beats(bep, other) -> dict:
    """BEP's accuracies against an anchor's, seed by seed: the pass rule of the module."""
    d = 100 * (np.asarray(bep, float) - np.asarray(other, float))
    ahead, need = int((d > 0).sum()), math.ceil(2 * d.size / 3)
    return {"minus_pts": float(d.mean()), "ahead_seeds": ahead, "needed": need,
            "holds": bool(ahead >= need and d.mean() > MARGIN_PTS)}


def qat_accuracy(data, cfg, lr: float) -> float:
    """QAT without batch norm on the card's network and data at Adam step ``lr``."""
    import sim
    from models.baselines.qat.model import QAT, QATConfig
    from models.bep.data import bits_per_step
    qcfg = QATConfig(hidden=cfg.hidden, epochs=cfg.epochs, lr=lr, seed=cfg.seed)
    model = QAT(bits_per_step(data), data.n_classes, qcfg, sim.device("x86-avx2"))
    model.fit(data.x_train, data.y_train, count=False)   # accuracy only: no ledger
    return float(model.evaluate(data.x_test, data.y_test)["accuracy"])


def study(preset: str, seed: int, profiles, progress=None) -> Study:
    from models import runner
    from models.bep.card import load_data
    profile = (profiles or {}).get("bitwise")
    seeds = range(seed, seed + SEEDS[preset])
    runs, acc = {}, {"bep": [], "local": [], **{f"qat_lr{lr:g}": [] for lr in QAT_LRS}}
    total, done, data = (2 + len(QAT_LRS)) * len(seeds), 0, None
    for s in seeds:
        for rule, over in (("bep", None), ("local", {"local": True})):
            run = runner.run("bep", profile=profile, dataset=DATASET, preset=preset, seed=s,
                             overrides=over)
            runs[f"{rule}-seed{s}"] = run
            acc[rule].append(run.metrics["test_accuracy"])
            done += 1
            if progress:
                progress(done, total, {f"{rule}_accuracy": run.metrics["test_accuracy"]})
        cfg = runner.make_config("bep", preset, DATASET, s)
        data = data or load_data(DATASET, cfg)   # the same set for every seed
        for lr in QAT_LRS:
            acc[f"qat_lr{lr:g}"].append(qat_accuracy(data, cfg, lr))
            done += 1
            if progress:
                progress(done, total, {f"qat_lr{lr:g}_accuracy": acc[f"qat_lr{lr:g}"][-1]})
    vs = {name: beats(acc["bep"], a) for name, a in acc.items() if name != "bep"}
    qat_holds = all(vs[f"qat_lr{lr:g}"]["holds"] for lr in QAT_LRS)
    summary = {"dataset": DATASET, "preset": preset, "seeds": len(seeds),
               "accuracy": {k: float(np.mean(v)) for k, v in acc.items()},
               "per_seed": acc, "vs": vs, "margin_pts": MARGIN_PTS,
               "bep_accuracy": float(np.mean(acc["bep"])),
               "local_accuracy": float(np.mean(acc["local"])),
               "bep_minus_local_pts": vs["local"]["minus_pts"],
               "bep_ahead_seeds": vs["local"]["ahead_seeds"],
               "beats_local": vs["local"]["holds"], "beats_qat": qat_holds,
               "claim": "BEP's test accuracy is above the local rule's and QAT's (no batch "
                        f"norm; Adam lr {', '.join(f'{lr:g}' for lr in QAT_LRS)}, each) on "
                        f"Random Prototypes: ahead on >= ceil(2n/3) of n seeds and by > "
                        f"{MARGIN_PTS} points in the mean (paper: up to +6.89 over the local "
                        "rule)",
               "claim_met": bool(vs["local"]["holds"] and qat_holds)}
    return Study(runs, summary)
