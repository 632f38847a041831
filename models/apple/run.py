"""APPLE's run: training and evaluation of one policy for one seed (:func:`train`,
:func:`evaluate`), and the card's run (:func:`run_policies`): every policy of the config over
its seeds, the summary metrics, learning curves as seed bands, glance curves and glimpse
trajectories drawn over images.

The method (the agent, its losses, acting, the replay) is in ``model.py``; with the run in
it, it would be ~500 lines, so the run sits here beside it.

Randomness: every stream is a named child of the seed's run seed (``sim.seeds``): "init"
(the agent's weights), "train" (rollouts, replay sampling and the actor's noise) and "eval"
(the test episodes, the same for every policy of a seed: the paired comparison).
"""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import torch

from models.apple.env import GlimpseTask
from models.apple.model import (
    H_TARGET,
    Agent,
    Replay,
    actor_loss,
    critic_loss,
    grad_norm,
    rollout,
)
from models.registry import Outcome, Progress
from models.shared.training import seeded
from sim import seeds
from sim.errors import ModelError
from sim.torch_engine.engine import TorchDevice
from sim.traces import Trace, bands, curve


def tasks(cfg, data, dev) -> tuple[GlimpseTask, GlimpseTask]:
    """The training and the test task of ``data`` on ``dev``."""
    def make(x, y):
        return GlimpseTask(dev.tensor(x), dev.tensor(y, torch.int64), data.task, cfg.canvas,
                           cfg.glimpse, cfg.steps, cfg.max_step, data.n_classes)
    return make(data.x_train, data.y_train), make(data.x_test, data.y_test)


def canvas_images(task: GlimpseTask, index, offset) -> np.ndarray:
    """The scenes (n, C, C) of test episodes: each image at its offset on the canvas."""
    imgs = task.images[torch.as_tensor(index)].cpu().numpy()
    h, w = task.obj
    out = np.zeros((len(imgs), task.canvas, task.canvas), np.float32)
    for k, (img, (r, c)) in enumerate(zip(imgs, offset, strict=True)):   # a few pictures
        out[k, r:r + h, c:c + w] = img
    return out


def draw_trajectories(task: GlimpseTask, scenes, pos, zoom: int = 4) -> np.ndarray:
    """Scenes (n, C, C) zoomed ``zoom`` x, dimmed to [0, 0.6], with each step's glimpse
    outline burnt in, brightness rising from 0.7 (first) to 1.0 (last glimpse): (n, zC, zC)."""
    n, c = len(scenes), task.canvas
    big = np.kron(scenes, np.ones((zoom, zoom), np.float32)) * 0.6
    half = task.glimpse // 2
    centre = np.round((pos + 1) / 2 * (c - 1)).astype(int)          # (n, T, 2) x, y
    steps = pos.shape[1]
    for k in range(n):
        for t in range(steps):
            x, y = centre[k, t]
            v = 0.7 + 0.3 * t / max(steps - 1, 1)
            r0, r1 = max((y - half) * zoom, 0), min((y + half + 1) * zoom - 1, zoom * c - 1)
            c0, c1 = max((x - half) * zoom, 0), min((x + half + 1) * zoom - 1, zoom * c - 1)
            big[k, r0, c0:c1 + 1] = big[k, r1, c0:c1 + 1] = v
            big[k, r0:r1 + 1, c0] = big[k, r0:r1 + 1, c1] = v
            big[k, y * zoom + zoom // 2 - 1:y * zoom + zoom // 2 + 1,
                x * zoom + zoom // 2 - 1:x * zoom + zoom // 2 + 1] = 1.0
    return big


@contextlib.contextmanager
def one_thread():
    """Run the block on one torch thread: batches of a few hundred 64-wide rows gain nothing
    from a second thread, and on a loaded machine two threads per process thrash (10
    rollouts took 49 s on 2 threads, 3.4 s on one, load ~8)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


# --- one policy, one seed: training and evaluation ---------------------------------------
@torch.no_grad()
def evaluate(agent, task: GlimpseTask, policy: str, n: int, seed: int, hit_px: float,
             dev=None, count=False) -> dict:
    """Deterministic episodes on the task's images: per-step score (the glance curve),
    final-step score and, for ``locate``, the final-step error in pixels."""
    gen = torch.Generator().manual_seed(seed)
    ctx = dev.count("eval", samples=n) if count else contextlib.nullcontext()
    with ctx:
        agent.eval()
        eps = rollout(agent, task, policy, n, gen, deterministic=True)
        pred = agent.predictor(agent.backbone(eps["obs"]))            # (n, T, P)
        agent.train()
    y = eps["y"][:, None].expand(-1, task.steps, *eps["y"].shape[1:])
    per_step = task.correct(pred, y, hit_px).mean(0)                 # (T,)
    out = {"per_step": per_step.cpu().numpy(), "final": float(per_step[-1]),
           "final_loss": float(task.loss(pred[:, -1], eps["y"]).mean()),
           "pos": eps["pos"].cpu().numpy(), "index": eps["index"].cpu().numpy(),
           "offset": eps["offset"].cpu().numpy()}
    if task.task == "locate":
        out["final_error_px"] = float(task.error_px(pred[:, -1], eps["y"]).mean())
    return out


def train(task: GlimpseTask, test_task: GlimpseTask, policy: str, cfg, seed: int, dev,
          progress=None) -> dict:
    """Train ``policy`` (APPLE or a baseline's predictor) for ``cfg.iterations`` rollouts
    of ``cfg.n_envs`` episodes; evaluation on ``test_task`` every ``cfg.eval_every``."""
    with seeded(seeds.child(seed, "init")):
        agent = dev.compile(Agent(task, cfg))
    learn_policy = policy == "apple"
    a_coef = cfg.a_coef if learn_policy else 0.0
    heads = list(agent.actor.parameters()) + list(agent.predictor.parameters())
    actor_opt = torch.optim.Adam(list(agent.backbone.parameters()) + heads, lr=cfg.lr_actor)
    # the critic's Adam steps the shared backbone at critic_backbone_lr x its own rate (a
    # learning rate, not a gradient scale: model.py's docstring); 0 leaves it out
    critic_groups = [{"params": list(agent.critic.parameters())}]
    critic_to_backbone = cfg.critic_backbone_lr > 0
    if critic_to_backbone:
        critic_groups.append({"params": list(agent.backbone.parameters()),
                              "lr": cfg.lr_critic * cfg.critic_backbone_lr})
    critic_opt = torch.optim.Adam(critic_groups, lr=cfg.lr_critic)
    alpha_opt = torch.optim.Adam([agent.log_alpha], lr=cfg.lr_alpha)
    gen = torch.Generator().manual_seed(seeds.child(seed, "train"))   # rollouts, replay, noise
    replay = Replay(cfg.replay_episodes)
    history, losses = [], []
    norms = {"critic": [], "sac": [], "predictor": []}   # gradient norms at the features

    def scope(name, samples=0):
        return dev.count(name, samples=samples) if cfg.count else contextlib.nullcontext()

    for it in range(cfg.iterations):
        agent.eval()
        # the rollouts collect the training data: a cost of training, under train/ so the
        # report's energy per training sample holds them; the update steps record the samples
        with scope("train/rollout"):
            replay.add(rollout(agent, task, policy, cfg.n_envs, gen))
        agent.train()
        if replay.size >= cfg.batch:
            for u in range(cfg.updates_per_rollout):
                batch = replay.sample(cfg.batch, gen)
                if learn_policy:
                    with scope("train/critic", samples=cfg.batch * task.steps):
                        eps_next = torch.randn(cfg.batch, task.steps - 1, 2,
                                               generator=gen).to(dev.torch_device)
                        lq, _, f_q = critic_loss(agent, task, batch, eps_next, cfg.gamma,
                                                 critic_to_backbone)
                        critic_opt.zero_grad(set_to_none=True)
                        lq.backward()
                        critic_opt.step()
                    losses.append(float(lq.detach()))
                    norms["critic"].append(grad_norm(f_q))
                if learn_policy and (u + 1) % cfg.policy_interval:
                    continue
                for _ in range(cfg.policy_steps if learn_policy else 1):
                    with scope("train/actor", samples=cfg.batch * task.steps):
                        eps = torch.randn(cfg.batch, task.steps, 2,
                                          generator=gen).to(dev.torch_device)
                        lp, logp, branch = actor_loss(agent, task, batch, eps, a_coef,
                                                      cfg.p_coef, cfg.sac_backbone_grad)
                        actor_opt.zero_grad(set_to_none=True)
                        lp.backward()
                        actor_opt.step()
                    for k in ("sac", "predictor"):
                        norms[k].append(grad_norm(branch[k]))
                    if logp is not None:
                        # one temperature step per actor step (SAC; the digest's update)
                        la = -(agent.log_alpha * (logp.detach() + H_TARGET)).mean()
                        alpha_opt.zero_grad(set_to_none=True)
                        la.backward()
                        alpha_opt.step()
        if (it + 1) % cfg.eval_every == 0 or it + 1 == cfg.iterations:
            ev = evaluate(agent, test_task, policy, cfg.eval_episodes, seeds.child(seed, "eval"),
                          cfg.hit_px,
                          dev, cfg.count)
            history.append({"iteration": it + 1, "env_steps": (it + 1) * cfg.n_envs *
                            task.steps, "final": ev["final"], "final_loss": ev["final_loss"],
                            "alpha": float(agent.log_alpha.detach().exp()),
                            "critic_loss": float(np.mean(losses[-50:])) if losses else 0.0,
                            # each loss's gradient norm at the backbone's output, mean over
                            # the updates since the last evaluation (0: the loss did not run)
                            **{f"grad_norm_{k}": float(np.mean(v)) if v else 0.0
                               for k, v in norms.items()}})
            norms = {k: [] for k in norms}
            if not all(np.isfinite([history[-1]["final_loss"], history[-1]["alpha"]])):
                # cross-entropy / squared error of finite predictions is finite: nan or inf
                # means the networks (or log alpha) diverged
                raise ModelError(
                    f"AppleConfig: the {policy} agent's training diverged (test loss "
                    f"{history[-1]['final_loss']}, alpha {history[-1]['alpha']} at rollout "
                    f"{it + 1}) at lr_actor = {cfg.lr_actor}, lr_critic = {cfg.lr_critic}, "
                    f"lr_alpha = {cfg.lr_alpha}; use smaller learning rates (defaults 1e-3, "
                    "3e-4, 3e-4)")
            if progress:
                progress(it + 1, cfg.iterations, history[-1])
    out = {"agent": agent, "history": history, "eval": ev}
    if learn_policy:
        # the learned predictor on the random-glimpse test episodes (the same episodes and
        # moves as APPLE-RND's evaluation: same "eval" stream, the random policy never
        # draws from the agent): has the predictor reached the random-glimpse level?
        out["predictor_on_random"] = evaluate(agent, test_task, "random", cfg.eval_episodes,
                                              seeds.child(seed, "eval"), cfg.hit_px)["final"]
    return out


# --- the card's run ---------------------------------------------------------------------------
def run_policies(cfg, dev: TorchDevice, data, progress: Progress | None = None) -> Outcome:
    """The card's run: train and test every policy of ``cfg.policy_list`` for the run seeds
    ``cfg.seed, cfg.seed + 1, ...``."""
    with one_thread():
        return _run_policies(cfg, dev, data, progress)


def _run_policies(cfg, dev, data, progress=None) -> Outcome:
    task, test_task = tasks(cfg, data, dev)
    run_seeds = [cfg.seed + k for k in range(cfg.seeds)]
    results = {p: [] for p in cfg.policy_list}
    total, done = len(run_seeds) * len(cfg.policy_list) * cfg.iterations, 0
    for s in run_seeds:
        # the ledger prices one seed's run of each policy (the first): counting every op
        # costs ~4x the run's time, and the other seeds repeat the same op counts
        run_cfg = cfg if s == cfg.seed else dataclasses.replace(cfg, count=False)
        for p in cfg.policy_list:
            def prog(it, _n, rec, base=done):
                if progress:
                    progress(base + it, total, rec)
            results[p].append(train(task, test_task, p, run_cfg, s, dev, prog))
            done += cfg.iterations
    if cfg.count:   # NeuroBench's model: the counted seed's APPLE agent, not every agent
        dev.deploy(results["apple" if "apple" in results else cfg.policy_list[0]][0]["agent"])
    m, traces = {}, {}
    for p, runs in results.items():
        finals = np.array([r["eval"]["final"] for r in runs])
        m[f"final_accuracy_{p}"] = finals.mean()
        m[f"final_accuracy_std_{p}"] = finals.std()
        m[f"final_loss_{p}"] = np.mean([r["eval"]["final_loss"] for r in runs])
        if data.task == "locate":
            m[f"final_error_px_{p}"] = np.mean([r["eval"]["final_error_px"] for r in runs])
        traces[f"learning_curve_{p}"] = bands(
            {"final-step accuracy": [[h["final"] for h in r["history"]] for r in runs]})
        traces[f"glance_{p}"] = curve(np.mean([r["eval"]["per_step"] for r in runs], 0))
        ev = runs[0]["eval"]
        k = min(cfg.trajectories, len(ev["index"]))
        scenes = canvas_images(test_task, ev["index"][:k], ev["offset"][:k])
        traces[f"trajectories_{p}"] = Trace("images", draw_trajectories(
            test_task, scenes, ev["pos"][:k]))
    if "apple" in results:
        apple = np.array([r["eval"]["final"] for r in results["apple"]])
        for p in results:
            if p != "apple":
                base = np.array([r["eval"]["final"] for r in results[p]])
                m[f"gain_vs_{p}"] = (apple - base).mean()
                m[f"wins_vs_{p}"] = int((apple > base).sum())
        m["alpha_final"] = np.mean([r["history"][-1]["alpha"] for r in results["apple"]])
        traces["critic_loss_apple"] = curve([h["critic_loss"] for h in
                                             results["apple"][0]["history"]])
        # how hard each loss pulls on the shared backbone (norm of its gradient at the
        # backbone's output), per evaluation, one row per seed
        traces["grad_norms_apple"] = bands(
            {k: [[h[f"grad_norm_{k}"] for h in r["history"]] for r in results["apple"]]
             for k in ("critic", "sac", "predictor")})
        for k in ("critic", "sac", "predictor"):
            m[f"grad_norm_{k}_apple"] = np.mean([r["history"][-1][f"grad_norm_{k}"]
                                                 for r in results["apple"]])
        on_random = [r["predictor_on_random"] for r in results["apple"]]
        m["predictor_on_random_apple"] = np.mean(on_random)
    m["env_steps"] = cfg.iterations * cfg.n_envs * cfg.steps
    m["seeds"] = len(run_seeds)
    facts = {"torch_device": str(dev.torch_device), "data_source": data.source,
             "counted_seed": cfg.seed if cfg.count else None,
             "task": data.task, "eval_env_steps": [h["env_steps"] for h in
                                                   next(iter(results.values()))[0]["history"]],
             "per_seed_final": {p: [r["eval"]["final"] for r in runs]
                                for p, runs in results.items()},
             "per_seed_predictor_on_random": [r["predictor_on_random"]
                                              for r in results.get("apple", [])]}
    return Outcome(m, traces, None, facts)
