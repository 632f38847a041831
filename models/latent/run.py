"""LatEnt's run: Algorithm 1's reward-free pre-training, the downstream fine-tune, and the
card's run over seeds (:func:`run_seeds`), counted on a ``TorchDevice``.

The method itself (the latent model, the actor-critic, the k-NN reward, rollouts, PPO and
the oracle evaluation) is in ``model.py``; this module runs it: :func:`warm_up` pre-trains
the latent model on random data, :func:`pretrain` runs ``cfg.iterations`` of rollout /
reward / PPO for one reward space, :func:`finetune` the downstream sparse task, and
:func:`run_seeds` every method of the config over its seeds. :class:`Replay` keeps the
counting affordable.

Randomness: every stream is a named child of the seed's run seed (``sim.seeds``): "env"
(the environments' noise and initial states), "init" (the networks' weights), "actions"
(the policy's action noise and PPO's minibatch order), "warmup" / "heldout" / "rollout"
(the environments' reset seed of each warm-up, held-out and pre-training rollout, the same
for every method of a seed: the paired comparison) and "finetune" (a sub-seed from which
fine-tuning draws the same names).
"""
from __future__ import annotations

import copy
import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from models.latent import envs
from models.latent.model import (
    METHODS,
    ActorCritic,
    Batch,
    LatentModel,
    evaluate,
    knn_reward,
    model_update,
    next_obs_mse,
    ppo_update,
    rollout,
)
from models.registry import Outcome, Progress
from models.shared.energy import counted_training
from models.shared.training import seeded
from sim import phases, seeds
from sim.errors import ModelError
from sim.ledger import Ledger
from sim.traces import Trace, bands, curve


# -- counting ----------------------------------------------------------------------------------
class Replay:
    """Count a block once, replay its counts for each identical repeat.

    A rollout, a PPO update, a latent-model update and a k-NN reward run the same torch ops
    on the same shapes every iteration (N, T and the networks never change), so their
    counts do not depend on the data. ``TorchDevice.count`` intercepts every op in Python
    (about 80 times the op's own time on these small tensors), so counting every iteration
    would spend the quick preset's minutes on the counter. The first block of a ``key``
    is counted into a ledger of its own; that ledger is merged into the device's ledger
    under the open scope now and at every later block of the same key, which then runs
    uncounted. ``tests/models/latent`` checks that the replayed ledger equals counting
    every block. ``exact=True`` counts every block (the check's reference).
    """

    def __init__(self, dev, exact: bool = False):
        self.dev, self.exact = dev, exact
        self.recorded: dict[str, Ledger] = {}

    @contextmanager
    def count(self, scope: str, key: str, samples: int = 0):
        """Run the block under ``scope`` (relative to the open scope); ``key`` names what
        fixes its ops (the block's kind and shapes)."""
        dev = self.dev
        if self.exact:
            with dev.count(scope, samples):
                yield
            return
        full = f"{scope}|{key}"
        if full not in self.recorded:
            real = dev.ledger
            dev.ledger = Ledger()
            try:
                with dev.count(scope, samples):
                    yield
            finally:
                self.recorded[full], dev.ledger = dev.ledger, real
        else:
            yield
        dev.ledger.merge(self.recorded[full])


@dataclass
class PretrainResult:
    """One reward-free pre-training run: per-iteration curves and the final evaluation."""

    method: str
    curves: dict[str, list[float]]
    final: dict[str, float]
    model: LatentModel
    ac: ActorCritic | None
    last: Batch | None = None
    extra: dict = field(default_factory=dict)


def _rewards(method: str, env, batch: Batch, cfg) -> torch.Tensor:
    t, n = batch.act.shape[:2]
    if method in ("latent", "latent_noreg"):
        z = batch.latent[1:].reshape(t * n, -1)
    elif method == "observation":
        z = batch.obs[1:].reshape(t * n, -1)
    else:   # state-entropy oracle
        z = torch.as_tensor(env.oracle(batch.states[1:].reshape(t * n, -1)),
                            dtype=torch.float32, device=batch.obs.device)
    return knn_reward(z, cfg.knn_k, cfg.knn_c).reshape(t, n)


def build(env, cfg, dev, seed: int):
    """A latent model and actor-critic initialised from ``seed`` (the run's "init" stream),
    compiled on ``dev``, with their optimisers."""
    with seeded(seed):
        model = LatentModel(env.obs_dim, env.act_dim, cfg.latent_dim, cfg.hidden)
        ac = ActorCritic(cfg.latent_dim + env.obs_dim, env.act_dim, cfg.hidden, cfg.log_std)
    model, ac = dev.compile(model), dev.compile(ac)
    return (model, torch.optim.Adam(model.parameters(), lr=cfg.model_lr), ac,
            torch.optim.Adam(ac.parameters(), lr=cfg.policy_lr))


def _finite(value: float, what: str, cfg, field: str, default: str) -> None:
    """Refuse a run whose training diverged (a nan would reach every metric) with the
    learning rate behind it."""
    if not math.isfinite(value):
        raise ModelError(f"LatEntConfig.{field} = {getattr(cfg, field)}: {what} diverged "
                         f"({value}); use a smaller {field} (default {default})")


def _phase(dev, phase: str, where: str):
    """The ledger scope ``<phase>/<where>``. ``phase`` is ``train`` for every block that
    trains (warm-up, rollouts that collect training data, rewards, PPO, latent-model
    updates) and ``evaluate`` for those that only measure (held-out rollouts, the oracle
    evaluation, the random policy's rollouts): the report's energy per training sample is
    the energy under ``train`` over its samples, and only the training rollouts record
    samples there (one per environment step collected), so the figure is joules per
    environment step of training with every update's cost included."""
    return dev.ledger.scope(f"{phase}/{where}" if where else phase)


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _fresh(opt) -> str:
    """Part of a block's key: an optimiser's first step creates its state (more ops)."""
    return "fresh" if not opt.state else "warm"


def _shape_key(env, cfg) -> str:
    return (f"{type(env).__name__}:n{env.num_envs}:T{env.horizon}:d{cfg.latent_dim}"
            f":h{cfg.hidden}")


def warm_up(env, model, mopt, cfg, rep: Replay, gen, seed: int,
            where: str = "") -> tuple[list[Batch], dict]:
    """Random-policy data pre-trains the latent model (Algorithm 1's warm-up); the held-out
    next-observation MSE of the model against copying the last observation. Ledger scopes
    ``train/<where>/warmup/{rollout,model}`` and ``evaluate/<where>/warmup``."""
    dev, key, steps = rep.dev, _shape_key(env, cfg), env.num_envs * env.horizon
    data = []
    with _phase(dev, "train", _join(where, "warmup")):
        for i in range(cfg.warmup_batches):
            with rep.count("rollout", f"random:{key}", samples=steps):
                data.append(rollout(env, model, None, dev, gen,
                                    seeds.child(seed, "warmup", i)))
        data = data[-cfg.model_buffer:]
        for _ in range(cfg.warmup_steps):
            with rep.count("model", f"{len(data)}:{_fresh(mopt)}:{key}"):
                loss, _ = model_update(model, mopt, data, 1, cfg.alpha, cfg.beta)
            _finite(loss, "the latent model's warm-up loss", cfg, "model_lr", "3e-3")
    with _phase(dev, "evaluate", where), rep.count("warmup", f"mse:{key}", samples=steps):
        held = rollout(env, model, None, dev, gen, seeds.child(seed, "heldout"))
        mse, copy = next_obs_mse(model, held)
    return data, {"model_mse": mse, "copy_last_mse": copy,
                  "warmup_mse_ratio": mse / max(copy, 1e-12)}


def pretrain(env, method: str, cfg, rep: Replay, seed: int, tick=None,
             warm: dict | None = None, tag: str = "") -> PretrainResult:
    """Reward-free pre-training of ``method`` (one of :data:`METHODS`) on ``env``: warm-up,
    then ``cfg.iterations`` of rollout / reward / PPO, the latent model every
    ``cfg.model_every`` iterations (``cfg.model_steps`` Adam steps on the last
    ``cfg.model_buffer`` batches). Ledger scopes ``train/<tag>/pretrain/<method>/{warmup/
    rollout,warmup/model,rollout,reward,policy,model}`` and ``evaluate/<tag>/pretrain/
    <method>/{warmup,final,model}`` (the random policy's rollouts under ``evaluate``: it
    trains nothing). ``final["end_mse_ratio"]``: the latent model's held-out next-observation
    error over copying the last observation at the end, on the final policy's rollout.

    ``warm``: a dict shared by the methods of one seed. The warm-up (random data, the
    model's pre-training) does not depend on the method, so the first method's warm-up is
    kept there and the others start from a copy of it (the same latent model, optimiser
    state and data), which pairs the methods' seeds more tightly and saves its cost.
    """
    if method not in METHODS:
        raise ModelError(f"method {method!r}: methods are {', '.join(METHODS)}")
    dev, key = rep.dev, _shape_key(env, cfg)
    gen = torch.Generator().manual_seed(seeds.child(seed, "actions"))
    model, mopt, ac, popt = build(env, cfg, dev, seeds.child(seed, "init"))
    alpha, beta = (0.0, 0.0) if method == "latent_noreg" else (cfg.alpha, cfg.beta)
    curves: dict[str, list[float]] = {"state_entropy": [], "coverage": [], "model_loss": []}
    steps = env.num_envs * env.horizon
    zdim = {"observation": env.obs_dim, "state": env.oracle(env.state).shape[1]}.get(
        method, cfg.latent_dim)
    where = _join(tag, "pretrain", method)
    # the random policy learns nothing: its rollouts only measure (the evaluate phase)
    collect = "evaluate" if method == "random" else "train"
    extra, buffer = {}, []
    if method != "random":
        if warm is not None and "model" in warm:
            model.load_state_dict(warm["model"])
            mopt.load_state_dict(warm["opt"])
            buffer, extra = list(warm["buffer"]), dict(warm["extra"])
            gen.set_state(warm["gen"])
        else:
            buffer, extra = warm_up(env, model, mopt, cfg, rep, gen, seed, where)
            if warm is not None:
                warm.update(model=copy.deepcopy(model.state_dict()),
                            opt=copy.deepcopy(mopt.state_dict()), buffer=list(buffer),
                            extra=dict(extra), gen=gen.get_state())
    batch = None
    for it in range(cfg.iterations):
        policy = None if method == "random" else ac
        with _phase(dev, collect, where), rep.count(
                "rollout", f"{'random' if policy is None else 'policy'}:{key}", samples=steps):
            batch = rollout(env, model, policy, dev, gen, seeds.child(seed, "rollout", it))
        ev = evaluate(env, batch)
        # nan states come from nan actions: the policy (its log std) diverged
        _finite(ev["state_entropy"], f"{method}'s policy (state entropy)", cfg, "policy_lr",
                "1e-3")
        loss = math.nan
        if method != "random":
            # the rollout's samples are the steps these blocks train on: none of their own
            with _phase(dev, "train", where):
                with rep.count("reward", f"z{zdim}:{key}"):
                    reward = _rewards(method, env, batch, cfg)
                with rep.count("policy", f"ppo:{_fresh(popt)}:{key}"):
                    ppo_update(ac, popt, batch, reward, cfg, gen)
                buffer = (buffer + [batch])[-cfg.model_buffer:]
                if (it + 1) % cfg.model_every == 0 and method != "state":
                    for _ in range(cfg.model_steps):
                        with rep.count("model", f"{len(buffer)}:{_fresh(mopt)}:{key}"):
                            loss, _ = model_update(model, mopt, buffer, 1, alpha, beta)
                        _finite(loss, "the latent model's loss", cfg, "model_lr", "3e-3")
        for name in ("state_entropy", "coverage"):
            curves[name].append(ev[name])
        curves["model_loss"].append(loss)
        if tick is not None:
            tick()
    with _phase(dev, "evaluate", where):
        with rep.count("final", f"eval:{key}", samples=steps):
            final = evaluate(env, batch, dev)
        if method != "random":
            # the model the rewards came from, on a held-out rollout of the final policy:
            # does it still predict better than copying the last observation?
            with rep.count("model", f"mse:{key}", samples=steps):
                held = rollout(env, model, ac, dev, gen, seeds.child(seed, "heldout", "end"))
                mse, copy_last = next_obs_mse(model, held)
            # no movement to copy (copy-last error ~0): the ratio says nothing (it read
            # 2.6e12 through a 1e-12 floor); NaN reads as "not available" in reports
            final["end_mse_ratio"] = mse / copy_last if copy_last > 1e-12 else float("nan")
    final.update(extra)
    return PretrainResult(method, curves, final, model, None if method == "random" else ac,
                          batch, extra)


def finetune(env, cfg, rep: Replay, seed: int, init: PretrainResult | None,
             tick=None, tag: str = "") -> list[float]:
    """Downstream PPO on the environment's sparse reward for ``cfg.finetune_iterations``:
    from a pre-trained actor with a fresh critic (``init``), or from scratch (a fresh
    actor-critic, its latent model warmed up on random data as in pre-training). The latent
    model is frozen. Returns the per-iteration success rate (fraction of the N episodes
    that reach the reward at least once). Ledger scopes ``train/<tag>/finetune/{pretrained,
    scratch}/...`` (scratch's warm-up there too: it is that run's training)."""
    dev, key = rep.dev, _shape_key(env, cfg)
    seed = seeds.child(seed, "finetune")   # fine-tuning draws its own streams below this one
    gen = torch.Generator().manual_seed(seeds.child(seed, "actions"))
    where = _join(tag, "finetune", "pretrained" if init is not None else "scratch")
    if init is None:
        model, mopt, ac, _ = build(env, cfg, dev, seeds.child(seed, "init"))
        warm_up(env, model, mopt, cfg, rep, gen, seed, where)
    else:
        model = init.model
        ac = ActorCritic(cfg.latent_dim + env.obs_dim, env.act_dim, cfg.hidden)
        ac.load_state_dict(init.ac.state_dict())
        ac = dev.compile(ac)
        ac.reset_critic(seeds.child(seed, "critic"))
    popt = torch.optim.Adam(ac.parameters(), lr=cfg.policy_lr)
    steps = env.num_envs * env.horizon
    success = []
    with _phase(dev, "train", where):
        for it in range(cfg.finetune_iterations):
            with rep.count("rollout", f"policy:{key}", samples=steps):
                batch = rollout(env, model, ac, dev, gen, seeds.child(seed, "rollout", it))
            success.append(float((batch.extrinsic.max(0) > 0).mean()))
            reward = dev.tensor(batch.extrinsic)
            with rep.count("policy", f"ppo-sparse:{_fresh(popt)}:{key}"):
                stats = ppo_update(ac, popt, batch, reward, cfg, gen)
            _finite(stats["policy_loss"] + stats["value_loss"], "fine-tuning's PPO loss", cfg,
                    "policy_lr", "1e-3")
            if tick is not None:
                tick()
    return success


# -- the card's run ---------------------------------------------------------------------------
def run_seeds(cfg, device, env_name: str, progress: Progress | None = None) -> Outcome:
    """Every method of ``cfg.methods`` for ``cfg.seeds`` seeds on ``env_name`` (and the
    downstream fine-tune when ``cfg.finetune_iterations > 0``); the card's ``simulate``."""
    rep = Replay(device)
    seed_list = list(range(cfg.seed, cfg.seed + cfg.seeds))   # each one a run seed
    total = len(seed_list) * (len(cfg.methods) * cfg.iterations + 2 * cfg.finetune_iterations)
    done = [0]

    def tick():
        done[0] += 1
        if progress is not None:
            progress(done[0], total, {})

    per: dict[str, list[dict]] = {m: [] for m in cfg.methods}
    curves: dict[str, list[list[float]]] = {m: [] for m in cfg.methods}
    success: dict[str, list[list[float]]] = {"pretrained": [], "scratch": []}
    for s in seed_list:
        env = envs.make(env_name, cfg.num_envs, cfg.horizon, seed=seeds.child(s, "env"))
        tag, results, warm = f"seed{s}", {}, {}
        for m in cfg.methods:
            res = pretrain(env, m, cfg, rep, s, tick, warm, tag)
            results[m] = res
            per[m].append(res.final)
            curves[m].append(res.curves["state_entropy"])
        if cfg.finetune_iterations:
            init = results.get("latent")
            if init is None:
                init = pretrain(env, "latent", cfg, rep, s, warm=warm, tag=tag)
            success["pretrained"].append(finetune(env, cfg, rep, s, init, tick, tag))
            success["scratch"].append(finetune(env, cfg, rep, s, None, tick, tag))
        if s == cfg.seed and "latent" in results:   # NeuroBench's model: LatEnt's agent
            device.deploy(results["latent"].model)
            device.deploy(results["latent"].ac)

    metrics: dict[str, float] = {"seeds": float(len(seed_list)),
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
    # every training block is counted (Replay replays the counts of each repeat), so the
    # energy per training sample covers all of training: joules per environment step
    # collected for training, its rewards, PPO and latent-model updates included
    n_train = phases.scope_samples(device.ledger.samples(), "train")
    metrics.update(counted_training(device, "train", n_train, n_train))
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
    keys = dict.fromkeys(k for m in cfg.methods for k in per[m][0])   # the random policy
    for key in keys:                                                  # has no model ratios
        if key in ("model_mse", "copy_last_mse"):
            continue
        rows = [[s] + [per[m][i].get(key, np.nan) for m in cfg.methods]
                for i, s in enumerate(seed_list)]
        unit = "nats" if "entropy" in key else "1" if key == "coverage" or "ratio" in key \
            else ""
        traces[f"final_{key}_per_seed"] = Trace("table", np.array(rows, float), unit,
                                                ("seed", *cfg.methods))
    if success["pretrained"]:
        tail = max(1, cfg.finetune_iterations // 3)
        rows = [[s, np.mean(success["pretrained"][i][-tail:]),
                 np.mean(success["scratch"][i][-tail:])] for i, s in enumerate(seed_list)]
        traces["finetune_success_per_seed"] = Trace("table", np.array(rows, float), "1",
                                                    ("seed", "pretrained", "scratch"))
    facts = {"environment": env_name, "seeds": seed_list, "torch_device": str(device.torch_device),
             "counting": "each block kind counted once, replayed for identical repeats "
                         "(models/latent/run.py Replay)"}
    return Outcome(metrics, traces, None, facts)
