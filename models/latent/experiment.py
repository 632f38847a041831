"""The PROBE comparison over seeds: LatEnt, observation entropy, a random policy (and the
state-entropy oracle and the no-regulariser ablation where asked), then the downstream
sparse task from LatEnt pre-training against scratch.

Reinforcement learning is noisy, so every claim is a paired comparison over seeds (seed
``s`` of LatEnt against seed ``s`` of the baseline: the same environment noise streams and
initial states), tested with the one-sided Wilcoxon signed-rank test
(``scipy.stats.wilcoxon(a, b, alternative="greater")``); with 5 seeds its smallest p-value
is 1/32 = 0.031, reached only when all five differences are positive, so a claim at
p < 0.05 needs every seed to agree. The sign test (``scipy.stats.binomtest``) is reported
beside it. Spreads are the standard deviation and min..max over seeds.

The measured outcome is in the room's README.
"""
from __future__ import annotations

import math

import numpy as np

from models.registry import Progress, Study

PLANS = {"quick": {"seeds": 5, "iterations": 20},
         "full": {"seeds": 5, "iterations": 60}}
"""``experiment`` per preset: seeds (>= 5: every claim is over five seeds or more) and
pre-training iterations on each environment."""


def paired(a, b) -> dict:
    """One-sided paired tests that ``a`` > ``b`` over seeds: Wilcoxon signed-rank p, sign
    test p, wins, mean difference and its min..max."""
    from scipy.stats import binomtest, wilcoxon
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = a - b
    wins, ties = int((d > 0).sum()), int((d == 0).sum())
    nonzero = d[d != 0]
    p_w = float(wilcoxon(nonzero, alternative="greater").pvalue) if nonzero.size else 1.0
    p_s = float(binomtest(wins, d.size - ties, 0.5, alternative="greater").pvalue) \
        if d.size > ties else 1.0
    return {"mean_diff": float(d.mean()), "min_diff": float(d.min()),
            "max_diff": float(d.max()), "wins": wins, "n": int(d.size),
            "wilcoxon_p": p_w, "sign_p": p_s, "holds": bool(p_w < 0.05)}


def experiment(preset: str, seed: int, profiles, progress: Progress | None = None) -> Study:
    """Each environment with LatEnt, observation entropy and random over the plan's seeds,
    the no-regulariser ablation on the noisy puck and the masked pendulum, and the four-rooms
    downstream task; a paired test per claim."""
    from models import runner
    plan = PLANS[preset]
    base = {"seeds": plan["seeds"], "iterations": plan["iterations"]}
    specs = {
        "masked-pendulum": {"methods": ("latent", "observation", "random", "latent_noreg")},
        "noisy-puck": {"methods": ("latent", "observation", "random", "latent_noreg")},
        "four-rooms": {"methods": ("latent", "observation", "random"),
                       "finetune_iterations": plan["iterations"]},
    }
    runs = {env: runner.run("latent", profile=profiles.get("gpu"), dataset=env, preset=preset,
                            seed=seed, overrides={**base, **spec}, progress=progress)
            for env, spec in specs.items()}
    summary = summarise(runs)
    return Study(runs, summary)


def _per_seed(run, method: str, key: str = "state_entropy") -> np.ndarray:
    tr = run.traces[f"final_{key}_per_seed"]
    return tr.data[:, list(tr.columns).index(method)]


def summarise(runs) -> dict:
    """The claims of the digest's acceptance checks as paired tests over seeds."""
    out = {"test": "one-sided Wilcoxon signed-rank over paired seeds (scipy.stats.wilcoxon, "
                   "alternative='greater'); sign test beside it"}
    for env, run in runs.items():
        out[f"{env}/latent_gt_observation"] = paired(_per_seed(run, "latent"),
                                                     _per_seed(run, "observation"))
        out[f"{env}/observation_gt_random"] = paired(_per_seed(run, "observation"),
                                                     _per_seed(run, "random"))
        cols = run.traces["final_state_entropy_per_seed"].columns
        if "latent_noreg" in cols:
            out[f"{env}/latent_gt_noreg"] = paired(_per_seed(run, "latent"),
                                                   _per_seed(run, "latent_noreg"))
        if "final_puck_distance_per_seed" in run.traces and "observation" in cols:
            # the trap: more observed-puck entropy, less true-state entropy, farther away
            out[f"{env}/observation_gt_latent_observed_puck_entropy"] = paired(
                _per_seed(run, "observation", "observed_puck_entropy"),
                _per_seed(run, "latent", "observed_puck_entropy"))
            out[f"{env}/observation_gt_latent_puck_distance"] = paired(
                _per_seed(run, "observation", "puck_distance"),
                _per_seed(run, "latent", "puck_distance"))
        ft = run.traces.get("finetune_success_per_seed")
        if ft is not None:
            out[f"{env}/finetune_pretrained_gt_scratch"] = paired(ft.data[:, 1], ft.data[:, 2])
    return out


# -- the settling study (issue 33 item 2; bench/latent_settle.py) ------------------------------
SETTLE_METHODS = ("latent", "observation", "state", "random", "latent_noreg")
"""LatEnt, the paper's baselines the room has (observation entropy, the state-entropy
oracle: an upper reference, never a rival) with a random policy, and the paper's ablation
without the predictability terms."""

SETTLE_CLAIMS = (("latent", "observation"), ("latent", "random"), ("observation", "random"),
                 ("latent", "latent_noreg"), ("state", "latent"))
"""The paired comparisons ``a > b`` of true-state entropy the settling study judges."""


def k_of_n(n: int) -> int:
    """Seeds a claim must win to hold: 4 of 5 (ceil(0.8 n)). Fixed before the runs."""
    return math.ceil(0.8 * n)


def verdict(test: dict, ready: bool) -> str:
    """``holds`` when ``a`` beats ``b`` on at least :func:`k_of_n` seeds with a positive mean
    difference, ``reversed`` when ``b`` does, ``not separated`` otherwise; ``void`` when the
    latent model was not ready (it did not predict better than copying the last
    observation on k of n seeds), since then the latent reward measures nothing."""
    if not ready:
        return "void"
    n, k = test["n"], k_of_n(test["n"])
    losses = n - test["wins"] - test.get("ties", 0)
    if test["wins"] >= k and test["mean_diff"] > 0:
        return "holds"
    if losses >= k and test["mean_diff"] < 0:
        return "reversed"
    return "not separated"


def settle_summary(run) -> dict:
    """One environment's settling result from a card run over seeds: per-seed finals, the
    model's readiness (held-out next-observation error below copying on k of n seeds, after
    the warm-up and at the end of pre-training), the paired tests with their verdicts, the
    downstream task and the energy per training sample."""
    cols = list(run.traces["final_state_entropy_per_seed"].columns)
    methods = [m for m in cols[1:]]
    out: dict = {"methods": methods, "seeds": [int(s) for s in
                                               run.traces["final_state_entropy_per_seed"]
                                               .data[:, 0]]}
    for key in ("state_entropy", "coverage", "warmup_mse_ratio", "end_mse_ratio"):
        out[key] = {}
        for m in methods:
            v = _per_seed(run, m, key)
            if np.isnan(v).all():
                continue
            out[key][m] = {"per_seed": v.tolist(), "mean": float(v.mean()),
                           "std": float(v.std())}
    n = len(out["seeds"])
    ratios = np.array(out["end_mse_ratio"]["latent"]["per_seed"])
    below = int((ratios < 1.0).sum())
    out["ready"] = {"latent_end_ratio_below_1": below, "n": n, "k": k_of_n(n),
                    "ready": below >= k_of_n(n)}
    out["tests"] = {}
    for a, b in SETTLE_CLAIMS:
        if a in methods and b in methods:
            t = paired(_per_seed(run, a), _per_seed(run, b))
            t["ties"] = int(np.sum(_per_seed(run, a) == _per_seed(run, b)))
            # the oracle sees the state: its comparison needs no latent model
            t["verdict"] = verdict(t, True if a == "state" or "latent" not in (a, b)
                                   else out["ready"]["ready"])
            out["tests"][f"{a}_gt_{b}"] = t
    ft = run.traces.get("finetune_success_per_seed")
    if ft is not None:
        t = paired(ft.data[:, 1], ft.data[:, 2])
        t["ties"] = int(np.sum(ft.data[:, 1] == ft.data[:, 2]))
        t["verdict"] = verdict(t, out["ready"]["ready"])
        out["finetune"] = {"pretrained": ft.data[:, 1].tolist(),
                           "scratch": ft.data[:, 2].tolist(), "test": t}
    out["energy_per_train_sample_j"] = run.metrics["energy_per_train_sample_j"]
    out["train_steps"] = run.metrics["train_steps"]
    return out


LABELS = {"latent": "LatEnt", "observation": "observation entropy", "state":
          "state-entropy oracle", "random": "random policy", "latent_noreg":
          "LatEnt, alpha = beta = 0"}


def settle_rows(env: str, s: dict) -> list[str]:
    """The README / RESULTS rows of one environment's settling result (``settle_summary``):
    one row per method (true-state entropy and coverage, mean +- std over seeds), one per
    paired claim, the downstream task; the text the docs show, so a test can find it."""
    w, r, ready = s["warmup_mse_ratio"]["latent"], s["end_mse_ratio"]["latent"], s["ready"]
    rows = [f"| {env} | latent model ready: held-out next-observation error / copying the "
            f"last one < 1 | after warm-up {w['mean']:.2f} +- {w['std']:.2f}, end of "
            f"pre-training {r['mean']:.2f} +- {r['std']:.2f} | {ready['latent_end_ratio_below_1']}"
            f"/{ready['n']} (need {ready['k']}): {'ready' if ready['ready'] else 'not ready'} |"]
    for m in s["methods"]:
        e, c = s["state_entropy"][m], s["coverage"][m]
        rows.append(f"| {env} | {LABELS[m]} | {e['mean']:.2f} +- {e['std']:.2f} | "
                    f"{c['mean']:.2f} +- {c['std']:.2f} |")
    for name, t in s["tests"].items():
        a, b = name.split("_gt_")
        rows.append(f"| {env} | {LABELS[a]} > {LABELS[b]} | {t['mean_diff']:+.2f} "
                    f"[{t['min_diff']:+.2f}, {t['max_diff']:+.2f}] | {t['wins']}/{t['n']} "
                    f"(Wilcoxon p {t['wilcoxon_p']:.3f}): {t['verdict']} |")
    if "finetune" in s:
        f, t = s["finetune"], s["finetune"]["test"]
        rows.append(f"| {env} | downstream success, LatEnt pre-trained > scratch | "
                    f"{np.mean(f['pretrained']):.3f} vs {np.mean(f['scratch']):.3f} | "
                    f"{t['wins']}/{t['n']} ({t['ties']} ties): {t['verdict']} |")
    rows.append(f"| {env} | energy per training sample ({s.get('profile', '?')} profile) | "
                f"{s['energy_per_train_sample_j'] * 1e3:.2f} mJ per environment step | "
                f"{s['train_steps']:,.0f} training steps, every one counted |")
    return rows


def warmup_rows(res: dict) -> list[str]:
    """The README rows of ``bench/latent_warmup.py``'s results: per environment and weights,
    the held-out ratio's min..max over seeds at each checkpoint of the warm-up."""
    rows = []
    for env, by_weights in res["envs"].items():
        for name, r in by_weights.items():
            cells = " | ".join(f"{lo:.2f}-{hi:.2f}" for lo, hi in zip(r["min"], r["max"],
                                                                      strict=True))
            rows.append(f"| {env} | {name} | {cells} |")
    return rows
