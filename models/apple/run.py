"""One APPLE simulate run: every policy of the config over its seeds, the summary metrics,
learning curves as seed bands, glance curves and glimpse trajectories drawn over images."""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import torch

from models.apple.env import GlimpseTask
from models.registry import Outcome
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


def simulate(cfg, dev, data, progress=None) -> Outcome:
    """Train and test every policy of ``cfg.policy_list`` for seeds ``cfg.seed ..``."""
    with one_thread():
        return _simulate(cfg, dev, data, progress)


def _simulate(cfg, dev, data, progress=None) -> Outcome:
    from models.apple.model import train
    task, test_task = tasks(cfg, data, dev)
    seeds = [cfg.seed + k for k in range(cfg.seeds)]
    results = {p: [] for p in cfg.policy_list}
    total, done = len(seeds) * len(cfg.policy_list) * cfg.iterations, 0
    for s in seeds:
        # the ledger prices one seed's run of each policy (the first): counting every op
        # costs ~4x the run's time, and the other seeds repeat the same op counts
        run_cfg = cfg if s == cfg.seed else dataclasses.replace(cfg, count=False)
        for p in cfg.policy_list:
            def prog(it, _n, rec, base=done):
                if progress:
                    progress(base + it, total, rec)
            results[p].append(train(task, test_task, p, run_cfg, s, dev, prog))
            done += cfg.iterations
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
    m["env_steps"] = cfg.iterations * cfg.n_envs * cfg.steps
    m["seeds"] = len(seeds)
    facts = {"torch_device": str(dev.torch_device), "data_source": data.source,
             "counted_seed": cfg.seed if cfg.count else None,
             "task": data.task, "eval_env_steps": [h["env_steps"] for h in
                                                   next(iter(results.values()))[0]["history"]],
             "per_seed_final": {p: [r["eval"]["final"] for r in runs]
                                for p, runs in results.items()}}
    return Outcome(m, traces, None, facts)
