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

Measured (``bench/latent.py``, 5 seeds, 12 iterations of 16 x 100 steps, 2 shared cores):
on the noisy puck the observation-entropy agent falls into the trap (more observed-puck
entropy, farther from the puck, less true-state entropy than LatEnt: 5/5 seeds each,
p = 0.031); on the masked pendulum both beat random (5/5) but LatEnt and observation
entropy are not separated (-0.63 vs -1.10 nats, 4/5 seeds, p = 0.16 at 12 iterations;
-0.48 vs -0.29, 2/5 at 20); on four rooms a uniform random walk covers more than either learned
policy and LatEnt pre-training does not help the sparse far-corner task (0.00 vs 0.03
success); the no-regulariser ablation is not worse (2/5). The README has the table.
"""
from __future__ import annotations

import numpy as np

from models.registry import Outcome, Progress, Study
from sim.traces import Trace, bands, curve

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


def run_seeds(cfg, device, env_name: str, progress: Progress | None = None) -> Outcome:
    """Every method of ``cfg.methods`` for ``cfg.seeds`` seeds on ``env_name`` (and the
    downstream fine-tune when ``cfg.finetune_iterations > 0``); the card's ``simulate``."""
    from models.latent import envs
    from models.latent.model import Replay, finetune, pretrain
    rep = Replay(device)
    seeds = list(range(cfg.seed, cfg.seed + cfg.seeds))
    total = len(seeds) * (len(cfg.methods) * cfg.iterations + 2 * cfg.finetune_iterations)
    done = [0]

    def tick():
        done[0] += 1
        if progress is not None:
            progress(done[0], total, {})

    per: dict[str, list[dict]] = {m: [] for m in cfg.methods}
    curves: dict[str, list[list[float]]] = {m: [] for m in cfg.methods}
    success: dict[str, list[list[float]]] = {"pretrained": [], "scratch": []}
    for s in seeds:
        env = envs.make(env_name, cfg.num_envs, cfg.horizon, seed=s)
        with device.ledger.scope(f"seed{s}"):
            results, warm = {}, {}
            for m in cfg.methods:
                res = pretrain(env, m, cfg, rep, s, tick, warm)
                results[m] = res
                per[m].append(res.final)
                curves[m].append(res.curves["state_entropy"])
            if cfg.finetune_iterations:
                init = results.get("latent")
                if init is None:
                    init = pretrain(env, "latent", cfg, rep, s, warm=warm)
                success["pretrained"].append(finetune(env, cfg, rep, s, init, tick))
                success["scratch"].append(finetune(env, cfg, rep, s, None, tick))

    metrics: dict[str, float] = {"seeds": float(len(seeds)),
                                 "env_steps": float(cfg.num_envs * cfg.horizon
                                                    * cfg.iterations)}
    for m, finals in per.items():
        for key in finals[0]:
            if key in ("model_mse", "copy_last_mse"):
                continue
            vals = np.array([f[key] for f in finals])
            metrics[f"{m}_{key}"] = float(vals.mean())
            if key in ("state_entropy", "coverage"):
                metrics[f"{m}_{key}_std"] = float(vals.std())
    learned = [f for m in cfg.methods if m != "random" for f in per[m]]
    if learned and "model_mse" in learned[0]:
        metrics["model_mse"] = float(np.mean([f["model_mse"] for f in learned]))
        metrics["copy_last_mse"] = float(np.mean([f["copy_last_mse"] for f in learned]))
        metrics["model_mse_ratio"] = metrics["model_mse"] / max(metrics["copy_last_mse"], 1e-12)
    if "latent" in per and "observation" in per:
        metrics["entropy_gain_vs_observation"] = (metrics["latent_state_entropy"]
                                                  - metrics["observation_state_entropy"])
    for tag, rows in success.items():
        if rows:
            # the last third of fine-tuning: where the policy has had time to learn
            tail = max(1, len(rows[0]) // 3)
            metrics[f"finetune_success_{tag}"] = float(np.mean([r[-tail:] for r in rows]))

    traces: dict[str, Trace] = {}
    for m, rows in curves.items():
        traces[f"{m}_state_entropy"] = curve(np.mean(rows, 0), "nats")
    # learning curves over seeds: the report draws the mean and a +-1 std band per method
    traces["state_entropy_over_seeds"] = bands({m: np.array(r) for m, r in curves.items()},
                                               "nats")
    if success["pretrained"]:
        traces["finetune_success_over_seeds"] = bands(
            {tag: np.array(rows) for tag, rows in success.items()}, "1")
    # per-seed finals, one table per figure: the rows the paired tests compare
    for key in per[cfg.methods[0]][0]:
        if key in ("model_mse", "copy_last_mse"):
            continue
        rows = [[s] + [per[m][i].get(key, np.nan) for m in cfg.methods]
                for i, s in enumerate(seeds)]
        unit = "nats" if "entropy" in key else "1" if key == "coverage" else ""
        traces[f"final_{key}_per_seed"] = Trace("table", np.array(rows, float), unit,
                                                ("seed", *cfg.methods))
    if success["pretrained"]:
        tail = max(1, cfg.finetune_iterations // 3)
        rows = [[s, np.mean(success["pretrained"][i][-tail:]),
                 np.mean(success["scratch"][i][-tail:])] for i, s in enumerate(seeds)]
        traces["finetune_success_per_seed"] = Trace("table", np.array(rows, float), "1",
                                                    ("seed", "pretrained", "scratch"))
    facts = {"environment": env_name, "seeds": seeds, "torch_device": str(device.torch_device),
             "counting": "each block kind counted once, replayed for identical repeats "
                         "(models/latent/model.py Replay)"}
    return Outcome(metrics, traces, None, facts)


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
