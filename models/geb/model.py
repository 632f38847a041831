"""GEB in an online iterative f-DPO loop on a toy RLHF task, counted on a TorchDevice.

Li et al., *General Exploratory Bonus for Optimistic Exploration in RLHF*, ICLR 2026,
arXiv:2510.03269. The loop is the paper's iteration (Section 2, "iterative online RLHF"):
at iteration t the current policy pi_t samples K = 2 responses per prompt (``pairs`` times),
a Bradley-Terry oracle on the hidden reward labels each pair, the pairs join the data set
D_t, and the policy is trained on all of D_t with the f-DPO loss plus ``kappa`` times the
bonus on the rejected response (``losses.pair_loss``), the reference being the previous
iterate (the authors' script; ``ref="fixed"``: the pretrained policy throughout).

Readings chosen where the paper leaves it open:

- the policy is a small autoregressive MLP over (prompt, prefix, position) one-hots; the
  reference pi_ref is the same network trained by NLL on samples of the task's reference
  distribution (``data.sample_reference``), so pi_ref(y*) is tiny (toy: ~4e-7);
- ``pi`` inside the bonus is the full-sequence probability (the trainer's
  ``exp(log pi_theta(y_l))``) on the enumerable toy; ``bonus_logp="per_token"`` uses the
  length-normalised ``exp(log pi / L)`` instead, which the long character task needs (the
  sequence probability underflows there and the bonus' gradient vanishes);
- exploration is read from the sampled responses' log pi_ref under the *pretrained* policy
  (Fig. 2's quantity), whatever the loop's reference is.

The card's run is :func:`run_comparison` at the bottom: for each seed the three arms from the
same pretrained reference on the same task (:func:`compare`); its metrics are seed means, the
paired differences GEB minus each other arm, and two-sided Wilcoxon signed-rank p-values of
those differences over seeds (scipy; with 5 seeds the smallest possible p is 2/32 = 0.0625,
so a claim at p < 0.05 needs >= 6 seeds: the bench runs 8).

Randomness: every stream is a named child of the seed's run seed (``sim.seeds``): "init"
(the policy's weights), "reference_data" (pi_ref's SFT samples), "eval" (sampled
evaluation), "sampling" (the loop's responses, the same stream in every arm) and "oracle"
(the Bradley-Terry coins).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models.geb import losses
from models.geb.data import Task, all_responses, sample_reference
from models.registry import Outcome, Progress
from models.shared.training import seeded
from sim import seeds
from sim.errors import ModelError
from sim.traces import Trace, bands


class Policy(nn.Module):
    """pi(y | x) = prod_t softmax(MLP(h_t))[y_t] with h_t = E_x[x] + e_t + sum_{s<t} E[s, y_s].

    ``h_t`` is a linear layer on the one-hot of (prompt, prefix, position), written as
    embedding rows summed by the causal mask (the one-hot matmul would be ~90 % zeros).
    """

    def __init__(self, prompts: int, vocab: int, length: int, hidden: int = 32):
        super().__init__()
        self.prompts, self.vocab, self.length = prompts, vocab, length
        self.tok = nn.Embedding(length * vocab, hidden)      # token v at position s
        self.ctx = nn.Embedding(prompts, hidden)
        self.pos = nn.Parameter(torch.zeros(length, hidden))
        self.head = nn.Sequential(nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                  nn.Linear(hidden, vocab))
        # position t sees tokens s < t only (the autoregressive mask)
        self.register_buffer("causal", torch.tril(torch.ones(length, length), -1))
        self.register_buffer("offset", torch.arange(length) * vocab)

    def logits(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Next-token logits at every position, (N, L, V)."""
        e = self.tok(y + self.offset)                                        # (N, L, H)
        h = self.causal @ e + self.ctx(x)[:, None] + self.pos                # (N, L, H)
        return self.head(h)

    def token_logp(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log pi(y_t | x, y_<t), (N, L)."""
        return torch.log_softmax(self.logits(x, y), -1).gather(-1, y[..., None])[..., 0]

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Sequence log-probability log pi(y | x), (N,)."""
        return self.token_logp(x, y).sum(-1)

    @torch.no_grad()
    def sample(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """Ancestral samples y ~ pi(. | x), (N, L) (the mask hides the later tokens)."""
        y = torch.zeros(len(x), self.length, dtype=torch.int64, device=x.device)
        for t in range(self.length):
            logits = self.logits(x, y)[:, t]                                   # (N, V)
            y[:, t] = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)[:, 0]
        return y


class PrefixTree:
    """log pi of every response of an enumerable task from one pass over its prefixes:
    sum_t V^t rows per prompt (toy: 259) instead of V^L x L (5,184)."""

    def __init__(self, prompts: int, vocab: int, length: int, device):
        rows, self.index = [], []
        start = 0
        ys = np.indices((vocab,) * length).reshape(length, -1).T              # (Y, L)
        for t in range(length):
            pre = np.zeros((vocab ** t, length), np.int64)                    # prefixes y_<t
            if t:
                pre[:, :t] = np.indices((vocab,) * t).reshape(t, -1).T
            rows.append(pre)
            code = ys[:, :t] @ (vocab ** np.arange(t - 1, -1, -1)) if t else np.zeros(len(ys))
            self.index.append(start + code.astype(np.int64))                # row of y_<t
            start += vocab ** t
        pre = np.concatenate(rows)                                            # (R, L)
        pos = np.concatenate([np.full(vocab ** t, t) for t in range(length)])
        p, r = prompts, len(pre)
        self.x = torch.as_tensor(np.repeat(np.arange(p), r), device=device)
        self.y = torch.as_tensor(np.tile(pre, (p, 1)), device=device)
        self.pos = torch.as_tensor(np.tile(pos, p), device=device)
        self.rows, self.prompts = r, p
        self.idx = torch.as_tensor(np.stack(self.index, 1), device=device)   # (Y, L)
        self.ys = torch.as_tensor(ys, device=device)                          # (Y, L)

    def logp_all(self, pol: Policy) -> torch.Tensor:
        """log pi(y | x), (P, Y)."""
        lg = pol.logits(self.x, self.y)                                       # (P R, L, V)
        lg = lg[torch.arange(len(self.pos), device=lg.device), self.pos]      # (P R, V)
        lsm = torch.log_softmax(lg, -1).reshape(self.prompts, self.rows, -1)  # (P, R, V)
        tok = lsm[:, self.idx, self.ys]                                       # (P, Y, L)
        return tok.sum(-1)


def _ctx(dev, scope: str, count: bool, samples: int = 0):
    return dev.count(scope, samples=samples) if count else contextlib.nullcontext()


def pretrain_reference(task: Task, cfg, dev, count: bool = True) -> Policy:
    """pi_ref: the policy trained by NLL on ``cfg.sft_samples`` reference samples (SFT)."""
    x, y = sample_reference(task, cfg.sft_samples,
                            seeds.child(cfg.seed, "reference_data"))
    x, y = dev.tensor(x, torch.int64), dev.tensor(y, torch.int64)
    with seeded(seeds.child(cfg.seed, "init")):
        pol = Policy(task.prompts, task.vocab, task.length, cfg.hidden)
    pol = dev.compile(pol.to(DTYPE[cfg.dtype]))
    opt = torch.optim.Adam(pol.parameters(), lr=cfg.sft_lr)
    with _ctx(dev, "train/pretrain", count, samples=cfg.sft_steps * len(x)):
        for _ in range(cfg.sft_steps):
            opt.zero_grad(set_to_none=True)
            loss = -pol(x, y).mean()
            loss.backward()
            opt.step()
    for p in pol.parameters():
        p.requires_grad_(False)
    return pol


DTYPE = {"float32": torch.float32, "float64": torch.float64}


class Evaluator:
    """True reward, optimum probability and log pi_ref of a policy: exact sums over all
    responses on an enumerable task, means over ``cfg.eval_samples`` samples otherwise."""

    def __init__(self, task: Task, ref0: Policy, cfg, dev):
        self.task, self.ref0, self.cfg, self.dev = task, ref0, cfg, dev
        self.gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "eval"))
        if task.enumerable:
            ys = all_responses(task)                                          # (Y, L)
            p, t = task.prompts, task
            self.xa = np.repeat(np.arange(p), len(ys))                         # (P*Y,)
            self.ya = np.tile(ys, (p, 1))                                      # (P*Y, L)
            self.r_all = task.reward(self.xa, self.ya).reshape(p, len(ys))     # (P, Y)
            self.tree = PrefixTree(p, t.vocab, t.length, dev.torch_device)
            self.ref_all = self.logp_all(ref0).cpu().numpy()                   # (P, Y)
            self.best = self.r_all.argmax(1)                                   # y* per prompt

    @torch.no_grad()
    def logp_all(self, pol: Policy) -> torch.Tensor:
        """log pi(y | x) of every response, (P, Y)."""
        return self.tree.logp_all(pol)

    @torch.no_grad()
    def measure(self, pol: Policy) -> dict:
        """E_pi r*, P(y*), E_pi log pi_ref and the policy's entropy (per prompt mean)."""
        t = self.task
        if t.enumerable:
            lp = self.logp_all(pol).double().cpu().numpy()
            pi = np.exp(lp)
            pi /= pi.sum(1, keepdims=True)   # guards float32 rounding only
            p_opt = pi[np.arange(t.prompts), self.best]
            return {"reward": float((pi * self.r_all).sum(1).mean()),
                    "p_optimum": float(p_opt.mean()),
                    "expected_logp_ref": float((pi * self.ref_all).sum(1).mean()),
                    "entropy": float(-(pi * lp).sum(1).mean())}
        n = self.cfg.eval_samples
        x = torch.arange(n, device=self.dev.torch_device) % t.prompts
        y = pol.sample(x, self.gen)
        lp, lref = pol(x, y), self.ref0(x, y)
        yn = y.cpu().numpy()
        hit = (yn == t.target[x.cpu().numpy()]).all(1)
        return {"reward": float(t.reward(x.cpu().numpy(), yn).mean()),
                "p_optimum": float(hit.mean()),
                "expected_logp_ref": float(lref.mean()), "entropy": float(-lp.mean())}


def sample_pairs(pol: Policy, task: Task, ev: Evaluator, cfg, gen: torch.Generator):
    """``cfg.pairs`` pairs per prompt from pi: x (N,), y1, y2 (N, L)."""
    x = torch.arange(task.prompts, device=ev.dev.torch_device).repeat(cfg.pairs)   # (N,)
    if task.enumerable:   # exact: draw response indices from the enumerated pi
        probs = torch.exp(ev.logp_all(pol).double())                        # (P, Y)
        idx = torch.multinomial(probs[x.cpu()].cpu(), 2, replacement=True, generator=gen)
        ys = torch.as_tensor(all_responses(task), device=x.device)
        return x, ys[idx[:, 0]], ys[idx[:, 1]]
    xx = torch.cat([x, x])
    y = pol.sample(xx, gen)
    return x, y[:len(x)], y[len(x):]


def run_loop(task: Task, ref0: Policy, cfg, dev, bonus: str, kappa: float, count: bool = True,
             exact_bonus: bool = False, progress=None) -> dict:
    """The online loop of one arm (``bonus`` in ``losses.BONUSES``) from ``ref0``.

    ``exact_bonus``: the prior-form bonus as the exact expectation over every response
    under the loop's reference (enumerable tasks; Lemma 3.1's check) instead of the trainer's
    single rejected sample. Returns the per-iteration history and the final policy.
    """
    ev = Evaluator(task, ref0, cfg, dev)
    pol = copy.deepcopy(ref0)
    for p in pol.parameters():
        p.requires_grad_(True)
    gen = torch.Generator().manual_seed(seeds.child(cfg.seed, "sampling"))   # same in every arm
    lgen = seeds.rng(cfg.seed, "oracle")                   # the preference oracle's coins
    xs, yws, yls, hist = [], [], [], []
    ref = ref0
    for it in range(cfg.iterations):
        # the responses drawn for the preference pairs: a cost of online training, not
        # training samples (no samples recorded: the DPO step below records them)
        with _ctx(dev, "sample", count), torch.no_grad():
            try:
                x, y1, y2 = sample_pairs(pol, task, ev, cfg, gen)
            except RuntimeError as e:   # torch.multinomial on the nan of a diverged policy
                if "multinomial" not in str(e) and "probability" not in str(e):
                    raise
                _diverged(cfg, bonus, f"nan probabilities at iteration {it + 1}", e)
            lref = torch.stack([ref0(x, y1), ref0(x, y2)])                   # (2, N)
        xn, y1n, y2n = x.cpu().numpy(), y1.cpu().numpy(), y2.cpu().numpy()
        margin = cfg.bt_scale * (task.reward(xn, y1n) - task.reward(xn, y2n))
        first = lgen.random(len(xn)) < 1.0 / (1.0 + np.exp(-margin))        # Bradley-Terry
        w = torch.as_tensor(first, device=x.device)[:, None]
        xs.append(x)
        yws.append(torch.where(w, y1, y2))
        yls.append(torch.where(w, y2, y1))
        row = {"iteration": it, **ev.measure(pol),
               "sampled_logp_ref": float(lref.mean()),
               "sampled_reward": float((task.reward(xn, y1n) + task.reward(xn, y2n)).mean() / 2)}
        if cfg.ref == "previous" and it > 0:
            ref = copy.deepcopy(pol)
            for p in ref.parameters():
                p.requires_grad_(False)
        X, YW, YL = torch.cat(xs), torch.cat(yws), torch.cat(yls)
        with _ctx(dev, "train", count, samples=cfg.steps * len(X)):
            row.update(_train(pol, ref, ev, X, YW, YL, cfg, bonus, kappa, exact_bonus))
        hist.append(row)
        if progress:
            progress(it + 1, cfg.iterations, row)
    final = ev.measure(pol)
    if not all(np.isfinite(v) for v in final.values()):
        _diverged(cfg, bonus, "nan in its final measures")
    return {"history": hist, "final": final, "policy": pol}


def _diverged(cfg, bonus: str, what: str, cause=None):
    """A policy whose training diverged (nan weights): a one-line error naming the step
    size, not torch's multinomial error or nan metrics."""
    arm = "passive" if bonus == "none" else bonus
    raise ModelError(f"GebConfig: the {arm} arm's policy diverged ({what}) at lr = "
                     f"{cfg.lr}, beta = {cfg.beta}, f_div = {cfg.f_div}; use a smaller lr "
                     "(default 1e-3) or beta (default 0.1)") from cause


def _train(pol, ref, ev, X, YW, YL, cfg, bonus, kappa, exact_bonus) -> dict:
    """``cfg.steps`` full-batch Adam steps of f-DPO + kappa bonus on all pairs so far."""
    with torch.no_grad():
        ref_w, ref_l = ref(X, YW), ref(X, YL)
        ref_all = ev.logp_all(ref) if exact_bonus else None
    opt = torch.optim.Adam(pol.parameters(), lr=cfg.lr)
    norm = ev.task.length if cfg.bonus_logp == "per_token" else 1
    for _ in range(cfg.steps):
        opt.zero_grad(set_to_none=True)
        lw, ll = pol(X, YW), pol(X, YL)
        fdpo = -F.logsigmoid(cfg.beta * losses.fdpo_logits(cfg.f_div, lw - ref_w, ll - ref_l))
        bon = losses.geb_bonus("none" if exact_bonus else bonus, cfg.f_div, ll / norm, kappa,
                               ref_l / norm)
        if exact_bonus:   # the prior form over every response, kappa L_bonus per prompt
            lp_all = ev.tree.logp_all(pol)                                    # (P, Y)
            loss = fdpo.mean() - kappa * losses.exact_prior_bonus(cfg.f_div, lp_all,
                                                                  ref_all).mean()
        else:
            loss = (fdpo + bon).mean()
        loss.backward()
        opt.step()
    return {"fdpo_loss": float(fdpo.detach().mean()), "bonus_term": float(bon.detach().mean()),
            "pairs": int(len(X))}


ARM_NAMES = ("passive", "prior", "geb")
"""The three arms of one comparison: no bonus, the prior-form bonus, the config's GEB u."""


def compare(task: Task, cfg, dev, count: bool = True, progress=None, step0: int = 0,
            total: int | None = None) -> dict:
    """One seed: pretrain pi_ref, then run the loop of every arm from it (the same task,
    reference, sampling stream and oracle coins: the arms differ only in the bonus).
    Returns ``{arm: run_loop result}`` and ``"reference"``: pi_ref's own measures."""
    ref0 = pretrain_reference(task, cfg, dev, count)
    out = {"reference": Evaluator(task, ref0, cfg, dev).measure(ref0)}
    with torch.no_grad():   # how rare the optimum is under pi_ref (toy: ~ln 4e-7)
        x = torch.arange(task.prompts, device=dev.torch_device)
        y_best = dev.tensor(task.target, torch.int64)
        out["reference"]["logp_ref_optimum"] = float(ref0(x, y_best).mean())
    arms = {"passive": ("none", 0.0), "prior": ("prior", cfg.kappa),
            "geb": (cfg.bonus, cfg.kappa)}
    for k, (name, (bonus, kappa)) in enumerate(arms.items()):
        with _ctx(dev, f"train/{name}", count):   # all of it is training (see run_comparison)
            out[name] = run_loop(task, ref0, cfg, dev, bonus, kappa, count)
        if progress:
            progress(step0 + k + 1, total or len(arms), {"arm": name, **out[name]["final"]})
    return out


def summary_row(res: dict, first: int = 2) -> dict:
    """Per-arm scalars of one seed: final E_pi r*, P(y*), E_pi log pi_ref and entropy, and
    the mean log pi_ref of the responses sampled from iteration ``first + 1`` on (the
    digest's check 3: iterations 3-10)."""
    row = {}
    for arm in ARM_NAMES:
        h, fin = res[arm]["history"], res[arm]["final"]
        first = min(first, len(h) - 1)   # a run shorter than the window: its last iteration
        row[arm] = {**fin, "explore_logp_ref": float(np.mean([r["sampled_logp_ref"]
                                                               for r in h[first:]]))}
    return row


def curves(res: dict, key: str) -> dict:
    """Per arm: ``key`` at every iteration (measured before that iteration's training)
    and after the last, (T + 1,)."""
    return {arm: [r[key] for r in res[arm]["history"]] + [res[arm]["final"].get(key, np.nan)]
            for arm in ARM_NAMES}


CURVES = {"reward": ("true_reward", "1"), "sampled_logp_ref": ("sampled_logp_ref", "nats"),
          "p_optimum": ("p_optimum", "1"), "entropy": ("policy_entropy", "nats")}
"""History key -> (trace name, unit) of the learning curves drawn with seed bands."""


def wilcoxon_p(diff) -> float:
    """Two-sided Wilcoxon signed-rank p of paired differences (1.0 when all are zero)."""
    from scipy.stats import wilcoxon
    d = np.asarray(diff, float)
    if not np.any(d != 0):
        return 1.0
    return float(wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)


def sign_p(diff) -> float:
    """Two-sided exact sign test p of paired differences (ties dropped; scipy binomtest)."""
    from scipy.stats import binomtest
    d = np.asarray(diff, float)
    d = d[d != 0]
    if not d.size:
        return 1.0
    return float(binomtest(int((d > 0).sum()), d.size, 0.5).pvalue)


def paired(rows: list[dict], metric: str, a: str, b: str) -> dict:
    """Seed-paired ``a - b`` of ``metric``: mean, std, wins, Wilcoxon and sign-test p."""
    d = np.array([r[a][metric] - r[b][metric] for r in rows])
    return {"mean": float(d.mean()), "std": float(d.std()), "wins": int((d > 0).sum()),
            "losses": int((d < 0).sum()), "n": int(d.size), "wilcoxon_p": wilcoxon_p(d),
            "sign_p": sign_p(d)}


def run_comparison(cfg, dev, tasks, progress: Progress | None = None) -> Outcome:
    """The card's run: :func:`compare` per seed (run seeds ``cfg.seed``, ``cfg.seed + 1``, ...),
    seed means, paired tests over seeds, seed bands."""
    rows, refs, hist = [], [], {k: {a: [] for a in ARM_NAMES} for k in CURVES}
    for k, task in enumerate(tasks):
        c = dataclasses.replace(cfg, seed=cfg.seed + k)
        res = compare(task, c, dev, cfg.count, progress, 3 * k, 3 * len(tasks))
        rows.append(summary_row(res))
        refs.append(res["reference"])
        for key in CURVES:
            for arm, values in curves(res, key).items():
                hist[key][arm].append(values)
    if cfg.count:   # NeuroBench's model: one policy (the last seed's GEB arm), not its copies
        dev.deploy(res["geb"]["policy"])
    m = {f"{key}_{arm}": float(np.mean([r[arm][key] for r in rows]))
         for arm in ARM_NAMES for key in ("reward", "p_optimum", "expected_logp_ref",
                                          "explore_logp_ref", "entropy")}
    gains = {"reward_gain_geb_vs_passive": paired(rows, "reward", "geb", "passive"),
             "reward_gain_geb_vs_prior": paired(rows, "reward", "geb", "prior"),
             "explore_gain_geb_vs_passive": paired(rows, "explore_logp_ref", "passive", "geb")}
    m.update({k: v["mean"] for k, v in gains.items()})
    m["wilcoxon_p_explore"] = gains["explore_gain_geb_vs_passive"]["wilcoxon_p"]
    m["wilcoxon_p_reward"] = gains["reward_gain_geb_vs_passive"]["wilcoxon_p"]
    m["reference_reward"] = float(np.mean([r["reward"] for r in refs]))
    m["reference_logp_ref_optimum"] = float(np.mean([r["logp_ref_optimum"] for r in refs]))
    m["seeds"] = len(tasks)
    traces: dict[str, Trace] = {
        name: bands({a: np.array(hist[key][a]) for a in ARM_NAMES}, unit)
        for key, (name, unit) in CURVES.items()}
    cols = ("seed", *(f"{k}_{a}" for a in ARM_NAMES for k in ("reward", "explore_logp_ref")))
    traces["per_seed"] = Trace("table", np.array(
        [[cfg.seed + i, *(r[a][k] for a in ARM_NAMES for k in ("reward", "explore_logp_ref"))]
         for i, r in enumerate(rows)]), columns=cols)
    facts = {"torch_device": str(dev.torch_device), "data_source": tasks[0].source,
             "paired_tests": gains,
             "per_seed": [{a: r[a] for a in ARM_NAMES} for r in rows],
             "arms": {"passive": "f-DPO, no bonus", "prior": f"prior form, kappa {cfg.kappa}",
                      "geb": f"{cfg.bonus}, kappa {cfg.kappa}"}}
    return Outcome(m, traces, None, facts)
