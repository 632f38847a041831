"""GEB against passive f-DPO and the prior-form bonus: exploration and true reward, over seeds.

Paper: Li et al., General Exploratory Bonus for Optimistic Exploration in RLHF, ICLR 2026
(arXiv:2510.03269). Two parts, each a paired comparison over seeds (every arm of a seed starts
from the same reference on the same task, with the same sampling stream and oracle coins):

1. ``toy``: the enumerable response space (1,296 responses per prompt, 16 prompts) whose
   optimum has pi_ref ~ 1e-6: per divergence (reverse KL, forward KL, Hellinger) passive
   f-DPO, the prior-form bonus and the three GEB forms at kappa in {0.01, 0.1, 1}. Read:
   mean log pi_ref (pretrained reference) of the responses sampled in iterations 3-10
   (digest check 3) and the exact E_pi r* after 10 iterations (check 4). The primary arm,
   fixed before the run, is the card's default (geb_p, kappa 0.1); "best" is the best form
   and kappa per divergence on the same seeds (selected on the test seeds: optimistic).
2. ``chars``: a character-level policy (8 characters over 12 letters, 4 prompts, never
   enumerated; per-token bonus probabilities) on the same kind of procedural reward:
   passive against the prior form and GEB (geb_p and geb_tanh, kappa 0.1), sample means.

Tests: two-sided Wilcoxon signed-rank (scipy) on the per-seed differences, and the exact sign
test beside it; a claim holds only where the paired test gives p < 0.05 in its direction.

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python bench/geb.py [--seeds 8] [--parts toy,chars]
        [--plot bench/geb.png]

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

# run from a checkout without installing: this checkout, not an installed copy, is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import sim  # noqa: E402
from models.geb.card import GebConfig  # noqa: E402
from models.geb.data import make_task  # noqa: E402
from models.geb.model import pretrain_reference, run_loop, sign_p, wilcoxon_p  # noqa: E402

PRIMARY = "geb_p k0.1"


def arms_of(forms, kappas):
    return ([("passive", "none", 0.0)] + [(f"prior k{k}", "prior", k) for k in kappas]
            + [(f"{b} k{k}", b, k) for b in forms for k in kappas])


def run_part(task_name, seeds, f_divs, arms, overrides, progress=True):
    """{f_div: {arm: [per-seed dict]}}: final reward, P(y*), exploration and curves."""
    dev = sim.device("a100")
    base = dataclasses.replace(GebConfig(count=False), **overrides)
    out = {f: {label: [] for label, _, _ in arms} for f in f_divs}
    for s in seeds:
        t0 = time.time()
        task = make_task(task_name, s, base.common_mass, credit=base.credit)
        cfg = dataclasses.replace(base, seed=s)
        ref = pretrain_reference(task, cfg, dev, count=False)
        for f in f_divs:
            c = dataclasses.replace(cfg, f_div=f)
            for label, bonus, kappa in arms:
                res = run_loop(task, ref, c, dev, bonus, kappa, count=False)
                h = res["history"]
                out[f][label].append({
                    "reward": res["final"]["reward"], "p_optimum": res["final"]["p_optimum"],
                    "entropy": res["final"]["entropy"],
                    "explore": float(np.mean([r["sampled_logp_ref"] for r in h[2:]])),
                    "reward_curve": [r["reward"] for r in h] + [res["final"]["reward"]],
                    "explore_curve": [r["sampled_logp_ref"] for r in h]})
        if progress:
            print(f"  seed {s}: {time.time() - t0:.0f} s", flush=True)
    return out


def ms(values):
    a = np.asarray(values, float)
    return float(a.mean()), float(a.std())


def paired(a, b, key):
    """a - b over seeds: mean, wins/losses, Wilcoxon and sign-test p."""
    d = np.array([x[key] - y[key] for x, y in zip(a, b, strict=True)])
    return {"mean": float(d.mean()), "std": float(d.std()), "wins": int((d > 0).sum()),
            "losses": int((d < 0).sum()), "wilcoxon_p": wilcoxon_p(d), "sign_p": sign_p(d)}


def report(part, out, n):
    """Print the table of one part; return its summary."""
    summary = {}
    for f, arms in out.items():
        print(f"\n-- {part} / {f}: mean +- std over {n} seeds; differences paired by seed --")
        print(f"{'arm':16s} {'E r* final':>14s} {'logpref(samp)':>15s} {'P(y*)':>8s} "
              f"{'dR vs passive: higher (W p, sign p)':>36s} "
              f"{'dlogpref: lower (W p, sign p)':>30s}")
        base = arms["passive"]
        rows = {}
        for label, runs in arms.items():
            r, e = ms([x["reward"] for x in runs]), ms([x["explore"] for x in runs])
            row = {"reward": r, "explore": e,
                   "p_optimum": ms([x["p_optimum"] for x in runs])[0]}
            txt = ""
            if label != "passive":
                dr, de = paired(runs, base, "reward"), paired(runs, base, "explore")
                row.update(d_reward=dr, d_explore=de)
                txt = (f"{dr['mean']:+.3f} {dr['wins']}/{n} ({dr['wilcoxon_p']:.3f}, "
                       f"{dr['sign_p']:.3f})  {de['mean']:+.2f} {de['losses']}/{n} "
                       f"({de['wilcoxon_p']:.3f}, {de['sign_p']:.3f})")
            rows[label] = row
            print(f"{label:16s} {r[0]:7.3f}+-{r[1]:.3f} {e[0]:8.2f}+-{e[1]:.2f} "
                  f"{row['p_optimum']:8.4f}  {txt}")
        geb = {k: v for k, v in rows.items() if k.startswith("geb")}
        best = max(geb, key=lambda k: geb[k]["reward"][0])
        prior_best = max((k for k in rows if k.startswith("prior")),
                         key=lambda k: rows[k]["reward"][0])
        primary = PRIMARY if PRIMARY in rows else next(iter(geb))
        # check 3: GEB's samples lower in log pi_ref than passive's, Wilcoxon p < 0.05
        explores = {k: v["d_explore"]["mean"] < 0 and v["d_explore"]["wilcoxon_p"] < 0.05
                    for k, v in geb.items()}
        rng = 1.0   # reward range of r* (0 .. 1)
        summary[f] = {
            "rows": rows, "best": best, "primary": primary,
            "check3_primary_explores": explores[primary],
            "check3_arms_exploring": sorted(k for k, v in explores.items() if v),
            "check4_best_gain_vs_passive": rows[best]["d_reward"]["mean"],
            "check4_best_gain_p": rows[best]["d_reward"]["wilcoxon_p"],
            "check4_best_met": bool(rows[best]["d_reward"]["mean"] >= 0.05 * rng
                                    and rows[best]["d_reward"]["wilcoxon_p"] < 0.05
                                    and rows[best]["reward"][0] >= rows[prior_best]["reward"][0]),
            "check4_primary_gain_vs_passive": rows[primary]["d_reward"]["mean"],
            "check4_primary_gain_p": rows[primary]["d_reward"]["wilcoxon_p"]}
        s = summary[f]
        print(f"check 3 ({primary} samples lower log pi_ref than passive, W p<0.05): "
              f"{s['check3_primary_explores']}; arms that do: {s['check3_arms_exploring']}")
        print(f"check 4 (best GEB arm {best}: reward >= passive + 0.05, W p<0.05, >= best prior "
              f"{prior_best}): {s['check4_best_met']} "
              f"(gain {s['check4_best_gain_vs_passive']:+.3f}, p {s['check4_best_gain_p']:.3f})")
    return summary


def plot(out_toy, out_chars, path):
    from matplotlib.figure import Figure
    panels = [(out_toy, "rkl", "reward_curve", "toy, reverse KL: E_pi r*"),
              (out_toy, "rkl", "explore_curve", "toy, reverse KL: sampled log pi_ref"),
              (out_chars, "rkl", "reward_curve", "chars, reverse KL: mean r*")]
    panels = [p for p in panels if p[0]]
    fig = Figure(figsize=(5.0 * len(panels), 3.4), layout="constrained")
    for ax, (out, f, key, title) in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels,
                                        strict=True):
        arms = out[f]
        show = ["passive", next(k for k in arms if k.startswith("prior")), PRIMARY
                if PRIMARY in arms else next(k for k in arms if k.startswith("geb"))]
        for label in dict.fromkeys(show):
            c = np.array([x[key] for x in arms[label]])
            x = np.arange(1, c.shape[1] + 1)
            (line,) = ax.plot(x, c.mean(0), marker="o", markersize=3, label=label)
            ax.fill_between(x, c.mean(0) - c.std(0), c.mean(0) + c.std(0), alpha=0.2,
                            color=line.get_color(), linewidth=0)
        ax.set_title(f"{title} ({len(arms['passive'])} seeds, +-1 std)", fontsize=9)
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--parts", default="toy,chars")
    ap.add_argument("--f-divs", default="rkl,fkl,hel")
    ap.add_argument("--kappas", default="0.01,0.1,1")
    ap.add_argument("--plot", default=str(Path(__file__).with_name("geb.png")))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    seeds = list(range(args.seeds))
    parts = args.parts.split(",")
    f_divs = args.f_divs.split(",")
    kappas = [float(k) for k in args.kappas.split(",")]
    result, t0 = {"seeds": args.seeds, "test": "two-sided Wilcoxon signed-rank over seeds"}, \
        time.time()
    out_toy = out_chars = None
    if "toy" in parts:
        print(f"== 1. toy: 16 prompts x 1,296 responses, {args.seeds} seeds, 10 iterations ==")
        out_toy = run_part("toy", seeds, f_divs, arms_of(("geb_p", "geb_f", "geb_tanh"), kappas),
                           {})
        result["toy"] = report("toy", out_toy, args.seeds)
    if "chars" in parts:
        print(f"== 2. chars: 8 characters over 12 letters, 4 prompts, {args.seeds} seeds ==")
        out_chars = run_part("chars", seeds, ["rkl"], arms_of(("geb_p", "geb_tanh"), [0.1]),
                             {"bonus_logp": "per_token", "pairs": 16})
        result["chars"] = report("chars", out_chars, args.seeds)
    if args.plot and (out_toy or out_chars):
        plot(out_toy, out_chars, args.plot)
        print(f"plot: {args.plot}")
    result["seconds"] = round(time.time() - t0, 1)

    def slim(x):   # the RESULT line: numbers and verdicts, no per-seed rows
        if isinstance(x, dict):
            return {k: slim(v) for k, v in x.items()}
        return x
    print("RESULT " + json.dumps(slim(result)))


if __name__ == "__main__":
    main()
