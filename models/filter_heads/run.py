"""Filter heads' run: train the tiny transformer, locate the filter heads, test them.

The steps, each a claim of the paper (Sec. 3-5), in :func:`measure`:

1. train the tiny transformer on SelectOne prompts (three list formats, question after and
   before the list) and check it solves them (``model.train``);
2. locate filter heads with the sparse mask search on question-after comma-format pairs
   (``patching.search_mask``);
3. **existence**: held-out causality of the located set vs random sets of the same size
   drawn from the other heads;
4. **portability**: causality when the source and destination lists use different formats;
5. **necessity**: accuracy with the located heads mean-ablated vs random heads;
6. **mechanism**: attention of the located heads from the last token onto the match;
7. **eager strategy**: on question-before prompts query patching (with the located heads,
   with all heads, and with a mask searched on question-before pairs) vs the residual
   "is-match flag" patch of one option, layer by layer; question-after prompts serve as
   the control where no flag can exist (the options precede the question).

:func:`run` is the card's run: the measurements as an ``Outcome``. The held-out prompts and
pairs draw the named seed stream "heldout" of the run seed (``sim.seeds``).
"""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from models.filter_heads import data, patching
from models.filter_heads.card import FilterHeadsConfig, ListPrompts, MaskSearchConfig
from models.filter_heads.model import TrainedLM, accuracy, train
from models.registry import Outcome, Progress
from sim import seeds
from sim.torch_engine import TorchDevice
from sim.traces import Trace, curve


def _task_accuracy(tr: TrainedLM, rng, cfg: FilterHeadsConfig) -> dict[str, float]:
    out = {}
    for task in cfg.model.task_kinds:
        for order in cfg.model.orders:
            for fmt in cfg.model.formats:
                accs = [accuracy(tr, data.select_one(rng, cfg.n_eval, n, fmt, order, task))
                        for n in (data.MIN_OPTIONS, 5, data.MAX_OPTIONS)]
                out[f"accuracy_{task}_{order}_{fmt}"] = float(np.mean(accs))
    return out


def _ablation(tr: TrainedLM, rng, heads, random_sets, cfg: FilterHeadsConfig,
              task: str) -> dict[str, float]:
    base, abl, rnd = [], [], []
    for fmt in cfg.model.formats:
        for n in (data.MIN_OPTIONS, 5, data.MAX_OPTIONS):
            batch = data.select_one(rng, cfg.n_eval, n, fmt, "after", task)
            ref = data.select_one(rng, cfg.n_eval, n, fmt, "after", task)
            base.append(accuracy(tr, batch))
            abl.append(patching.ablated_accuracy(tr, batch, ref, heads))
            rnd.append(np.mean([patching.ablated_accuracy(tr, batch, ref, r)
                                for r in random_sets]))
    return {"accuracy_clean": float(np.mean(base)), "accuracy_heads_ablated": float(np.mean(abl)),
            "accuracy_random_ablated": float(np.mean(rnd))}


def measure(cfg: FilterHeadsConfig, device: TorchDevice, progress: Progress | None = None):
    """Run every step; returns (metrics dict, details dict with heads, masks, histories,
    the trained model)."""
    tr = train(cfg.model, device, progress=progress, scope="train")
    rng = seeds.rng(cfg.seed, "heldout")                  # held-out prompts and pairs
    m: dict[str, float] = {}
    with device.count("evaluate"):
        m.update(_task_accuracy(tr, rng, cfg))
    heads, mask, hist = patching.search_mask(tr, cfg.search, scope="locate")
    n_l, n_h = cfg.model.n_layer, cfg.model.n_head
    all_heads = [(layer, h) for layer in range(n_l) for h in range(n_h)]
    k = max(1, len(heads))
    # random sets of the same size from the other heads of layers >= 1 (a layer-0 query
    # at the last token reads only that token's embedding, the same word in source and
    # destination, so layer-0 heads would make the baseline trivially 0); when too few
    # are left (a large located set), from all heads (then they overlap the located set)
    others = heads + [(0, h) for h in range(n_h) if (0, h) not in heads]
    pool_excl = others if len(all_heads) - len(others) >= k else []
    rsets = patching.random_head_sets(rng, tr, k, pool_excl, cfg.n_random) \
        if len(heads) < len(all_heads) else []
    m_random_from = ("others" if pool_excl else "all") if rsets else "none"
    det = {"heads": heads, "mask": mask, "mask_loss": np.array(hist),
           "random_from": m_random_from}
    task, fmt0 = cfg.search.task, cfg.search.fmt
    with device.count("patch"):
        pairs = patching.sample_pairs(rng, cfg.n_eval, fmt0, fmt0, "after", task, task)
        r = patching.evaluate_heads(tr, pairs, heads)
        m.update({"n_heads": float(len(heads)), "head_fraction": len(heads) / len(all_heads),
                  "causality": r["causality"], "delta_logit": r["delta_logit"],
                  "causality_all_heads":
                      patching.evaluate_heads(tr, pairs, all_heads)["causality"]})
        rc = [patching.evaluate_heads(tr, pairs, s)["causality"] for s in rsets]
        if rc:   # no random set when every head is located: no baseline, not a NaN metric
            m["causality_random_mean"] = float(np.mean(rc))
            m["causality_random_max"] = float(np.max(rc))
        single = np.array([[patching.evaluate_heads(tr, pairs, [(layer, h)])["causality"]
                            for h in range(n_h)] for layer in range(n_l)])
        det["single_head_causality"] = single
        m["causality_best_single_head"] = float(single.max())
        # portability: heads found on comma->comma, tested across every format pair
        transfer = np.array([[patching.evaluate_heads(
            tr, patching.sample_pairs(rng, cfg.n_eval, fs, fd, "after", task, task),
            heads)["causality"] for fd in cfg.model.formats] for fs in cfg.model.formats])
        det["format_transfer"] = transfer
        off = ~np.eye(len(cfg.model.formats), dtype=bool)
        if off.any():
            m["causality_cross_format_mean"] = float(transfer[off].mean())
            m["causality_cross_format_min"] = float(transfer[off].min())
        # portability across tasks: source asks for a label, destination for the item
        other = [t for t in cfg.model.task_kinds if t != task]
        if other:
            m[f"causality_to_{other[0]}_task"] = patching.evaluate_heads(
                tr, patching.sample_pairs(rng, cfg.n_eval, fmt0, fmt0, "after", task,
                                          other[0]), heads)["causality"]
        m["attention_on_match"] = patching.attention_on_match(
            tr, data.select_one(rng, cfg.n_eval, 5, fmt0, "after", task), heads)
    with device.count("ablate"):
        m.update(_ablation(tr, rng, heads, rsets[:5] or [heads], cfg, task))
    if "before" in cfg.model.orders:
        with device.count("patch_before"):
            pb = patching.sample_pairs(rng, cfg.n_eval, fmt0, fmt0, "before", task, task)
            m["before_causality_heads"] = patching.evaluate_heads(tr, pb, heads)["causality"]
            m["before_causality_all_heads"] = patching.evaluate_heads(tr, pb, all_heads)[
                "causality"]
            flags_b = patching.flag_patch_rates(tr, pb)
            flags_a = patching.flag_patch_rates(tr, pairs)
        det["flag_rates_before"], det["flag_rates_after"] = np.array(flags_b), np.array(flags_a)
        m["before_flag_patch_best"] = float(max(flags_b))
        m["after_flag_patch_best"] = float(max(flags_a))
        sb = MaskSearchConfig(**{**asdict(cfg.search), "order": "before"})
        hb, mask_b, _ = patching.search_mask(tr, sb, scope="locate_before")
        det["heads_before"], det["mask_before"] = hb, mask_b
        with device.count("patch_before"):
            m["before_causality_searched"] = patching.evaluate_heads(tr, pb, hb)["causality"]
        m["before_n_heads_searched"] = float(len(hb))
    return m, det, tr


def _table(values, columns) -> Trace:
    return Trace("table", values, columns=tuple(columns))


def run(cfg: FilterHeadsConfig, device: TorchDevice, data_: ListPrompts,
        progress: Progress | None = None) -> Outcome:
    """The card's run: :func:`measure`, with the model's size, the training curve, the masks
    and the per-head causality as traces."""
    metrics, det, tr = measure(cfg, device, progress=progress)
    n_params = sum(p.numel() for p in tr.model.parameters())
    metrics = {**metrics, "parameters": n_params, "footprint_bytes": device.footprint_bytes,
               "train_loss": tr.history[-1]["loss"]}
    heads = [f"head{h}" for h in range(cfg.n_head)]          # table rows: layers
    traces = {"train_loss": curve([h["loss"] for h in tr.history]),
              "mask_loss": curve(det["mask_loss"]),
              "mask": _table(det["mask"], heads),
              "single_head_causality": _table(det["single_head_causality"], heads),
              "format_transfer": _table(det["format_transfer"], cfg.formats)}
    for key in ("flag_rates_before", "flag_rates_after"):
        if key in det:
            traces[key] = curve(det[key])
    if "mask_before" in det:
        traces["mask_before"] = _table(np.asarray(det["mask_before"]), heads)
    facts = {"heads": [list(h) for h in det["heads"]], "random_heads_from": det["random_from"],
             "heads_before": [list(h) for h in det.get("heads_before", [])],
             "torch_device": str(device.torch_device), "data_source": data_.source}
    return Outcome(metrics, traces, tr.trained(), facts)
