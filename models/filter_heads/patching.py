"""Query-state patching, the causality metric, the sparse head-mask search, ablation, flags.

Paper (Sharma et al., "LLMs Process Lists With General Filter Heads", ICLR 2026,
arXiv:2510.26784), Sec. 3-4 and the official code (github.com/arnab-api/filter,
``src/selection/optimization.py``):

- **Query patching**: cache each head's pre-RoPE query at the last token of the source
  prompt; run the destination prompt with ``q <- q_src`` for the chosen heads.
- **Causality** = mean over pairs of 1[argmax over the destination options of the patched
  logits = c_targ], the option the *source* predicate selects in the destination list.
  ``delta_logit`` = patched minus clean logit of c_targ (the soft score).
- **Mask search**: m in [0,1]^{L x H}, init 1; ``q' = q_dest + m * (q_src - q_dest)`` for
  all heads at once; loss = -logit(c_targ) + mean logit of the other destination options
  + lambda * ||m||_1; AdamW; before each step clamp m to [0, 1] and add 1e-3 to every
  entry > 0 (the official code's guard that keeps gradients alive; the paper's text gives 1e-4),
  after it clamp again; heads = {m > 0.5} (the code's ``mask.round()``). The distractor
  set follows the official code (the destination options other than c_targ); the paper's
  text also lists the source answer, which that code version does not use.
- **Ablation**: the paper does not say which ablation it uses; we mean-ablate the
  head's output ``z`` at the last token (its mean over a reference batch of the same
  prompt shape), the usual choice for necessity tests.
- **Eager flags** (question-before prompts): replace the residual stream of one option
  (c_targ) entering block ``layer`` by its latent from the same prompt asking for c_targ's
  category; if the model wrote an "is-match" flag there, the answer moves to c_targ.
"""
from __future__ import annotations

import numpy as np
import torch

from models.filter_heads import data
from models.filter_heads.card import MaskSearchConfig
from models.filter_heads.model import HEAD_SITES, Hook, TrainedLM
from sim import seeds
from sim.errors import ModelError

Heads = list[tuple[int, int]]


def _n_lh(tr: TrainedLM) -> tuple[int, int]:
    return tr.model.cfg.n_layer, tr.model.cfg.n_head


def head_mask(tr: TrainedLM, heads: Heads) -> torch.Tensor:
    """(L, H) 0/1 mask of ``heads`` = [(layer, head), ...]."""
    n_l, n_h = _n_lh(tr)
    m = torch.zeros(n_l, n_h, device=tr.device.torch_device)
    for lh in heads:
        if len(lh) != 2 or not (0 <= lh[0] < n_l and 0 <= lh[1] < n_h):
            raise ModelError(f"head {lh}: expected (layer, head) with layer in 0..{n_l - 1} "
                             f"and head in 0..{n_h - 1}")
        m[lh[0], lh[1]] = 1.0
    return m


@torch.no_grad()
def cache_states(tr: TrainedLM, batch: data.Batch, site: str = "q",
                 positions=(-1,)) -> list[torch.Tensor]:
    """Per layer, the heads' ``site`` states at ``positions``: (B, H, P, d_head) each."""
    if site not in HEAD_SITES:
        raise ModelError(f"patch site {site!r}: expected one of {', '.join(HEAD_SITES)}")
    hook = Hook(positions, cache=(site,))
    tr.logits(batch, hook)
    return [hook.cached[(site, layer)] for layer in range(_n_lh(tr)[0])]


def patched_logits(tr: TrainedLM, dest: data.Batch, donor: list[torch.Tensor],
                   mask: torch.Tensor, site: str = "q", positions=(-1,)) -> torch.Tensor:
    """Destination logits (B, V) with ``site`` interpolated towards ``donor`` by ``mask``."""
    n_l, n_h = _n_lh(tr)
    if tuple(mask.shape) != (n_l, n_h):
        raise ModelError(f"head mask has shape {tuple(mask.shape)}, expected ({n_l}, {n_h})")
    if len(donor) != n_l:
        raise ModelError(f"donor states cover {len(donor)} layers, expected {n_l}")
    b = len(dest.tokens)
    for layer, d in enumerate(donor):
        if d.shape[0] not in (1, b) or d.shape[1] != n_h:
            raise ModelError(f"donor states of layer {layer} have shape {tuple(d.shape)}, "
                             f"expected ({b} or 1, {n_h}, P, d_head)")
    return tr.logits(dest, Hook(positions, patch={site: (donor, mask)}))


def option_logits(logits: torch.Tensor, options: np.ndarray) -> torch.Tensor:
    """Logits of each prompt's options: (B, n)."""
    options = np.asarray(options)
    if logits.dim() != 2 or options.ndim != 2 or options.shape[0] != logits.shape[0]:
        raise ModelError(f"option_logits: logits {tuple(logits.shape)} and options "
                         f"{options.shape} must be (B, V) and (B, n) with the same B")
    if options.size and (options.min() < 0 or options.max() >= logits.shape[1]):
        raise ModelError(f"option_logits: option tokens span {options.min()}..{options.max()}, "
                         f"expected 0..{logits.shape[1] - 1}")
    idx = torch.as_tensor(options, dtype=torch.int64, device=logits.device)
    return logits.gather(1, idx)


def causality(logits: torch.Tensor, options: np.ndarray, target: np.ndarray) -> float:
    """Mean of 1[argmax over the options of ``logits`` is ``target``] (paper's causality)."""
    options, target = np.asarray(options), np.asarray(target)
    if target.shape != (options.shape[0],):
        raise ModelError(f"causality: target has shape {target.shape}, expected "
                         f"({options.shape[0]},)")
    present = options == target[:, None]
    if not np.all(present.sum(1) == 1):
        raise ModelError("causality: every target must be exactly one of its row's options "
                         f"(rows {np.flatnonzero(present.sum(1) != 1)[:5].tolist()} are not)")
    pick = option_logits(logits, options).argmax(1).cpu().numpy()
    return float(np.mean(pick == np.argmax(present, axis=1)))


def delta_logit(patched: torch.Tensor, clean: torch.Tensor, target: np.ndarray) -> float:
    """Mean (patched - clean) logit of ``target``."""
    t = torch.as_tensor(np.asarray(target)[:, None], dtype=torch.int64, device=patched.device)
    return float((patched.gather(1, t) - clean.gather(1, t)).mean())


@torch.no_grad()
def evaluate_heads(tr: TrainedLM, pairs: data.Pairs, heads: Heads | torch.Tensor,
                   site: str = "q") -> dict[str, float]:
    """Causality and delta-logit of patching ``heads`` from source into destination."""
    mask = heads if isinstance(heads, torch.Tensor) else head_mask(tr, heads)
    donor = cache_states(tr, pairs.src, site)
    patched = patched_logits(tr, pairs.dest, donor, mask, site)
    clean = tr.logits(pairs.dest)
    opts = pairs.dest.options
    return {"causality": causality(patched, opts, pairs.target),
            "delta_logit": delta_logit(patched, clean, pairs.target),
            # how often the patch leaves the destination's own answer on top
            "kept_dest_answer": causality(patched, opts, pairs.dest.answer)}


def sample_pairs(rng: np.random.Generator, b: int, fmt_src: str = "comma",
                 fmt_dest: str = "comma", order: str = "after", task_src: str = "item",
                 task_dest: str = "item", per_item: int = 1,
                 pred_last: bool = False) -> data.Pairs:
    """Counterfactual pairs with one random option count per side (3-7)."""
    n_src, n_dest = rng.integers(data.MIN_OPTIONS, data.MAX_OPTIONS + 1, 2)
    return data.counterfactual_pairs(rng, b, int(n_src), int(n_dest), fmt_src, fmt_dest,
                                      order, task_src, task_dest, per_item, pred_last)


def search_mask(tr: TrainedLM, cfg: MaskSearchConfig, scope: str = "locate"):
    """Learn the sparse head mask; returns (heads, final mask (L, H) numpy, loss history).

    Ops are counted under ``scope``.
    """
    n_l, n_h = _n_lh(tr)
    dev = tr.device
    mask = torch.ones(n_l, n_h, device=dev.torch_device, requires_grad=True)
    opt = torch.optim.AdamW([mask], lr=cfg.lr)
    # its own named stream: the same seed's training data draws default_rng(cfg.seed)
    rng = seeds.rng(cfg.seed, "search_pairs")
    steps = -(-cfg.n_pairs // cfg.batch_size)
    # a fixed training set of pairs, re-used every epoch as in the paper
    train_pairs = [sample_pairs(rng, cfg.batch_size, cfg.fmt, cfg.fmt, cfg.order, cfg.task,
                                cfg.task, cfg.per_item, cfg.pred_last) for _ in range(steps)]
    for p in tr.model.parameters():
        p.requires_grad_(False)
    history = []
    try:
        with dev.count(scope, samples=cfg.epochs * steps * cfg.batch_size):
            for _ in range(cfg.epochs):
                total = 0.0
                for pairs in train_pairs:
                    with torch.no_grad():
                        mask.clamp_(0, 1)
                        mask[mask > 0] += cfg.eps
                    donor = cache_states(tr, pairs.src, "q")
                    logits = patched_logits(tr, pairs.dest, donor, mask, "q")
                    opts = option_logits(logits, pairs.dest.options)           # (B, n)
                    is_t = torch.as_tensor(pairs.dest.options == pairs.target[:, None],
                                           device=logits.device)
                    target = opts[is_t].mean()
                    distract = (opts.masked_fill(is_t, 0).sum(1) / (opts.shape[1] - 1)).mean()
                    loss = -target + distract + cfg.lam * mask.abs().sum()
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    with torch.no_grad():
                        mask.clamp_(0, 1)
                    total += float(loss.detach())
                history.append(total / len(train_pairs))
    finally:
        for p in tr.model.parameters():
            p.requires_grad_(True)
    final = mask.detach().cpu().numpy()
    heads = [(int(layer), int(h)) for layer, h in zip(*np.nonzero(final > 0.5), strict=True)]
    return heads, final, history


def random_head_sets(rng: np.random.Generator, tr: TrainedLM, k: int, exclude: Heads,
                     n_sets: int) -> list[Heads]:
    """``n_sets`` random sets of ``k`` heads drawn from the heads not in ``exclude``."""
    n_l, n_h = _n_lh(tr)
    pool = [(layer, h) for layer in range(n_l) for h in range(n_h)
            if (layer, h) not in set(exclude)]
    if k > len(pool):
        raise ModelError(f"random heads: {k} requested but only {len(pool)} heads are left "
                         "outside the excluded set")
    return [[pool[i] for i in rng.choice(len(pool), k, replace=False)] for _ in range(n_sets)]


@torch.no_grad()
def ablated_accuracy(tr: TrainedLM, batch: data.Batch, reference: data.Batch,
                     heads: Heads) -> float:
    """Accuracy on ``batch`` with ``heads``' last-token output mean-ablated (mean over
    ``reference``, a batch of the same prompt shape)."""
    if reference.tokens.shape[1] != batch.tokens.shape[1]:
        raise ModelError("ablated_accuracy: reference prompts must have the same length as "
                         "the evaluated ones")
    mean = [s.mean(0, keepdim=True) for s in cache_states(tr, reference, "z")]
    logits = patched_logits(tr, batch, mean, head_mask(tr, heads), "z")
    return float(np.mean(logits.argmax(1).cpu().numpy() == batch.answer))


@torch.no_grad()
def attention_on_match(tr: TrainedLM, batch: data.Batch, heads: Heads) -> float:
    """Mean attention weight that ``heads`` put, from the last token, on the matching item."""
    hook = Hook((-1,), cache=("attn",))
    tr.logits(batch, hook)
    pos = torch.as_tensor(batch.template.item_pos[batch.answer_slot], device=tr.device.torch_device)
    vals = [hook.cached[("attn", layer)][:, h, 0].gather(1, pos[:, None]).mean()
            for layer, h in heads]
    return float(torch.stack(vals).mean()) if vals else float("nan")


@torch.no_grad()
def flag_patch_rates(tr: TrainedLM, pairs: data.Pairs) -> list[float]:
    """Per layer l: how often replacing c_targ's residual entering block l by its latent
    from the destination prompt asking for c_targ's category makes the model pick c_targ.

    Same prompt length by construction (only the predicate token differs)."""
    flag_ctx = data.with_predicate(pairs.dest, pairs.src.predicate)
    hook = Hook(None, cache=("resid",))
    tr.logits(flag_ctx, hook)
    where = np.zeros(pairs.dest.tokens.shape, bool)
    where[np.arange(len(where)), pairs.dest.template.item_pos[pairs.target_slot]] = True
    where_t = torch.as_tensor(where, device=tr.device.torch_device)
    rates = []
    for layer in range(_n_lh(tr)[0]):
        donor = hook.cached[("resid", layer)]
        logits = tr.logits(pairs.dest, Hook(cache=(), resid_patch=(layer, donor, where_t)))
        rates.append(causality(logits, pairs.dest.options, pairs.target))
    return rates
